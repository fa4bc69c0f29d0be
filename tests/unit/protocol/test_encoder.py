"""Reply encoding, byte-exact, RESP2 and RESP3."""

from __future__ import annotations

import pytest

from sluice.protocol import (
    NULL_ARRAY,
    OK,
    BigNumber,
    Bool,
    Double,
    ErrorReply,
    Map,
    Push,
    Replies,
    Set,
    Verbatim,
    encode,
)
from sluice.protocol.encoder import multibulk_size

CASES = [
    (b"abc", b"$3\r\nabc\r\n", b"$3\r\nabc\r\n"),
    (b"", b"$0\r\n\r\n", b"$0\r\n\r\n"),
    (42, b":42\r\n", b":42\r\n"),
    (-7, b":-7\r\n", b":-7\r\n"),
    (2**63 - 1, b":9223372036854775807\r\n", b":9223372036854775807\r\n"),
    (None, b"$-1\r\n", b"_\r\n"),
    (NULL_ARRAY, b"*-1\r\n", b"_\r\n"),
    (OK, b"+OK\r\n", b"+OK\r\n"),
    (ErrorReply(b"ERR bad\r\nthing"), b"-ERR bad  thing\r\n", b"-ERR bad  thing\r\n"),
    ([b"a", 1, None], b"*3\r\n$1\r\na\r\n:1\r\n$-1\r\n", b"*3\r\n$1\r\na\r\n:1\r\n_\r\n"),
    ([], b"*0\r\n", b"*0\r\n"),
    (Map({b"k": 1}), b"*2\r\n$1\r\nk\r\n:1\r\n", b"%1\r\n$1\r\nk\r\n:1\r\n"),
    (Set([b"x"]), b"*1\r\n$1\r\nx\r\n", b"~1\r\n$1\r\nx\r\n"),
    (Push([b"message"]), b"*1\r\n$7\r\nmessage\r\n", b">1\r\n$7\r\nmessage\r\n"),
    # Several replies back to back; inside an array they still count as one element.
    (Replies([Push([b"s", 1]), Push([b"t", 2])]), b"*2\r\n$1\r\ns\r\n:1\r\n*2\r\n$1\r\nt\r\n:2\r\n",
     b">2\r\n$1\r\ns\r\n:1\r\n>2\r\n$1\r\nt\r\n:2\r\n"),
    ([Replies([1, 2]), 3], b"*2\r\n:1\r\n:2\r\n:3\r\n", b"*2\r\n:1\r\n:2\r\n:3\r\n"),
    (Double(1.5), b"$3\r\n1.5\r\n", b",1.5\r\n"),
    (Double(3.0), b"$1\r\n3\r\n", b",3\r\n"),
    (Double(float("inf")), b"$3\r\ninf\r\n", b",inf\r\n"),
    (Double(float("-inf")), b"$4\r\n-inf\r\n", b",-inf\r\n"),
    (Bool(1), b":1\r\n", b"#t\r\n"),
    (Bool(0), b":0\r\n", b"#f\r\n"),
    (Verbatim(b"hi"), b"$2\r\nhi\r\n", b"=6\r\ntxt:hi\r\n"),
    (BigNumber(b"123456789012345678901234567890"), b"$30\r\n123456789012345678901234567890\r\n",
     b"(123456789012345678901234567890\r\n"),
    ([[b"a", [1]], Map({b"m": [None]})],
     b"*2\r\n*2\r\n$1\r\na\r\n*1\r\n:1\r\n*2\r\n$1\r\nm\r\n*1\r\n$-1\r\n",
     b"*2\r\n*2\r\n$1\r\na\r\n*1\r\n:1\r\n%1\r\n$1\r\nm\r\n*1\r\n_\r\n"),
]


@pytest.mark.parametrize(("reply", "resp2", "resp3"), CASES, ids=[repr(c[0])[:30] for c in CASES])
def test_encoding(reply: object, resp2: bytes, resp3: bytes) -> None:
    assert encode(reply, False) == resp2
    assert encode(reply, True) == resp3


def test_large_bulk_and_array_headers() -> None:
    assert encode(b"x" * 5000).startswith(b"$5000\r\n")
    assert encode([1] * 2000).startswith(b"*2000\r\n")


def test_str_is_not_a_reply() -> None:
    with pytest.raises(TypeError):
        encode("text")


@pytest.mark.parametrize("sizes", [[], [0], [3, 4, 6], [9, 10, 99, 100, 12345], [1] * 11])
def test_multibulk_size(sizes: list[int]) -> None:
    """What a request takes on the wire, as Redis counts a command's input bytes."""
    argv = [b"x" * n for n in sizes]
    wire = b"*%d\r\n" % len(argv) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in argv)
    assert multibulk_size(argv) == len(wire)
