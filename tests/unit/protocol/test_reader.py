"""The request reader: both parsers, split at every byte boundary, hostile input."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sluice.protocol import (
    ProtocolError,
    PureRequestParser,
    RequestReader,
    split_inline_args,
    string2ll,
)
from sluice.protocol.reader import batch_encoded_len, encoded_len

READERS = [PureRequestParser, RequestReader]


def encode(*args: bytes) -> bytes:
    return b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)


def drain(reader: PureRequestParser | RequestReader) -> list[list[bytes]]:
    """Every complete request: one at a time from the pure parser, in batches from the
    connection's reader (which hands out everything it has)."""
    out = []
    if isinstance(reader, RequestReader):
        while batch := reader.take():
            out.extend(batch)
    else:
        while (req := reader.get()) is not None:
            out.append(req)
    return out


@pytest.mark.parametrize("cls", READERS)
def test_pipeline_of_mixed_requests(cls: type) -> None:
    reader = cls()
    data = encode(b"SET", b"k", b"v") + b"PING\r\n" + encode(b"GET", b"k") + b'echo "a b"\n'
    reader.feed(data)
    assert drain(reader) == [[b"SET", b"k", b"v"], [b"PING"], [b"GET", b"k"], [b"echo", b"a b"]]


@pytest.mark.parametrize("cls", READERS)
def test_every_split_point_gives_the_same_requests(cls: type) -> None:
    data = encode(b"XADD", b"s", b"*", b"f", b"v" * 300) + b"PING\r\n" + encode(b"", b"\r\n")
    expected = [[b"XADD", b"s", b"*", b"f", b"v" * 300], [b"PING"], [b"", b"\r\n"]]
    for cut in range(len(data) + 1):
        reader = cls()
        got = []
        for part in (data[:cut], data[cut:]):
            if part:
                reader.feed(part)
                got.extend(drain(reader))
        assert got == expected, cut


@pytest.mark.parametrize("cls", READERS)
def test_byte_at_a_time(cls: type) -> None:
    data = encode(b"SET", b"key", b"value") * 3
    reader = cls()
    got = []
    for i in range(len(data)):
        reader.feed(data[i : i + 1])
        got.extend(drain(reader))
    assert got == [[b"SET", b"key", b"value"]] * 3


@pytest.mark.parametrize("cls", READERS)
@pytest.mark.parametrize("header", [b"*0\r\n", b"*-1\r\n", b"*-10\r\n"])
def test_empty_multibulk_headers_are_ignored(cls: type, header: bytes) -> None:
    reader = cls()
    reader.feed(header + encode(b"PING"))
    assert drain(reader) == [[b"PING"]]


@pytest.mark.parametrize("cls", READERS)
@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"*1_0\r\n", "Protocol error: invalid multibulk length"),
        (b"* 1\r\n", "Protocol error: invalid multibulk length"),
        (b"*+1\r\n", "Protocol error: invalid multibulk length"),
        (b"*3000000000\r\n" + b"$1\r\na\r\n" * 10000, "Protocol error: invalid multibulk length"),
        (b"*1\r\n$04\r\nPING\r\n", "Protocol error: invalid bulk length"),
        (b"*1\r\n$-1\r\n", "Protocol error: invalid bulk length"),
        (b"*1\r\n$600000000\r\n" + b"x" * 70000, "Protocol error: invalid bulk length"),
        (b"*1\r\n:5\r\n", "Protocol error: expected '$', got ':'"),
        (b"*1\r\n*1\r\n$1\r\na\r\n", "Protocol error: expected '$', got '*'"),
        (b'set "a\r\n', "Protocol error: unbalanced quotes in request"),
        (b"x" * 70000, "Protocol error: too big inline request"),
        (b"*" + b"1" * 70000, "Protocol error: too big mbulk count string"),
        (b"*1\r\n$" + b"1" * 70000, "Protocol error: too big bulk count string"),
    ],
)
def test_protocol_errors_are_worded_as_redis(cls: type, data: bytes, message: str) -> None:
    reader = cls()
    reader.feed(data)
    with pytest.raises(ProtocolError) as exc:
        drain(reader)
    assert str(exc.value) == message


@pytest.mark.parametrize("cls", READERS)
def test_requests_before_an_error_are_returned_first(cls: type) -> None:
    reader = cls()
    reader.feed(encode(b"PING") + encode(b"ECHO", b"x") + b"*1\r\n$x\r\n")
    take = reader.take if isinstance(reader, RequestReader) else lambda: [reader.get()]
    got = []
    with pytest.raises(ProtocolError):
        while True:
            got.extend(take())
    assert got == [[b"PING"], [b"ECHO", b"x"]]


def test_requests_put_back_come_first_and_count_as_pending() -> None:
    reader = RequestReader()
    first = encode(b"SET", b"k", b"v") + encode(b"GET", b"k") + encode(b"DEL", b"k")
    reader.feed(first)
    batch = reader.take()
    assert len(batch) == 3 and reader.pending() == 0
    reader.put_back(batch[1:])  # the client blocked after the SET
    assert reader.pending() == len(encode(b"GET", b"k") + encode(b"DEL", b"k"))
    reader.feed(encode(b"PING"))
    assert reader.take() == [[b"GET", b"k"], [b"DEL", b"k"]]
    assert reader.pending() == len(encode(b"PING"))
    assert reader.take() == [[b"PING"]]
    assert reader.take() == [] and reader.pending() == 0


@pytest.mark.parametrize("cls", READERS)
def test_unauthenticated_limits(cls: type) -> None:
    reader = cls(auth_required=True)
    reader.feed(encode(*[b"a"] * 11))
    with pytest.raises(ProtocolError, match="unauthenticated multibulk length"):
        drain(reader)
    reader = cls(auth_required=True)
    reader.feed(b"*2\r\n$4\r\nAUTH\r\n$16385\r\n")
    with pytest.raises(ProtocolError, match="unauthenticated bulk length"):
        drain(reader)


def test_large_pending_bulk_is_checked_against_the_limit_early() -> None:
    # hiredis would wait for the whole 2 MB; the shadow check refuses the header at once.
    reader = RequestReader(max_bulk_len=1024 * 1024)
    reader.feed(b"*2\r\n$3\r\nSET\r\n$2000000\r\n" + b"x" * 70000)
    with pytest.raises(ProtocolError, match="invalid bulk length"):
        reader.take()


@pytest.mark.parametrize("cls", READERS)
@pytest.mark.parametrize("split", [None, 14, 17, 20])
def test_bulk_length_over_the_limit_is_refused_with_no_data(cls: type, split: int | None) -> None:
    # Redis's protocol unit, "Out of range multibulk payload length": the header alone, no
    # data ever comes. Redis refuses it at once; the fast path used to wait for 2 GB.
    data = b"*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$2000000000\r\n"
    reader = cls()
    with pytest.raises(ProtocolError, match="^Protocol error: invalid bulk length$"):
        for part in ([data] if split is None else [data[:split], data[split:]]):
            reader.feed(part)
            drain(reader)


@pytest.mark.parametrize("cls", READERS)
def test_bulk_length_at_the_limit_waits_for_its_data(cls: type) -> None:
    reader = cls(max_bulk_len=1024 * 1024)
    reader.feed(b"*2\r\n$4\r\nECHO\r\n$1048576\r\n")
    assert drain(reader) == []
    reader.feed(b"x" * 1048576 + b"\r\n" + encode(b"PING"))
    assert drain(reader) == [[b"ECHO", b"x" * 1048576], [b"PING"]]


@pytest.mark.parametrize("digits", [19, 5000, 200_000])
def test_a_bulk_length_of_many_digits_is_refused_in_16k_reads(digits: int) -> None:
    # The partial-request check looks for long bulk headers; a header of more digits than
    # int() converts (4,300 by default) once raised ValueError there and dropped the
    # connection with no reply. It is refused as Redis refuses it, whatever its length.
    data = b"*1\r\n$" + b"9" * digits + b"\r\n"
    reader = RequestReader()
    with pytest.raises(ProtocolError, match="^Protocol error: (invalid bulk length|too big bulk count string)$"):
        for i in range(0, len(data), 16384):
            reader.feed(data[i : i + 16384])
            drain(reader)


def test_a_value_that_looks_like_a_bulk_header_is_not_refused() -> None:
    reader = RequestReader()
    reqs = [[b"SET", b"k", b"$99999999999"], [b"ECHO", b"*12345678"], [b"PING"]]
    reader.feed(b"".join(encode(*r) for r in reqs))
    assert drain(reader) == reqs


def test_large_valid_bulk_arrives_in_pieces() -> None:
    value = bytes(range(256)) * 4096  # 1 MB
    data = encode(b"SET", b"k", value) + encode(b"PING")
    reader = RequestReader()
    got = []
    for i in range(0, len(data), 65536):
        reader.feed(data[i : i + 65536])
        got.extend(drain(reader))
    assert got == [[b"SET", b"k", value], [b"PING"]]


@pytest.mark.parametrize(
    ("line", "args"),
    [
        (b"set a b", [b"set", b"a", b"b"]),
        (b'  set "a b"  c ', [b"set", b"a b", b"c"]),
        (b'echo "\\x41\\n\\t"', [b"echo", b"A\n\t"]),
        (b"echo 'it\\'s'", [b"echo", b"it's"]),
        (b'echo ""', [b"echo", b""]),
        (b"", []),
    ],
)
def test_inline_splitting(line: bytes, args: list[bytes]) -> None:
    assert split_inline_args(line) == args


@pytest.mark.parametrize("line", [b'echo "abc', b"echo 'abc", b'echo "a"b', b"echo 'a'b"])
def test_inline_unbalanced(line: bytes) -> None:
    assert split_inline_args(line) is None


@pytest.mark.parametrize(
    ("text", "value"),
    [(b"0", 0), (b"12", 12), (b"-5", -5), (b"9223372036854775807", 2**63 - 1),
     (b"-9223372036854775808", -(2**63)), (b"01", None), (b"+1", None), (b" 1", None),
     (b"1_0", None), (b"-0", None), (b"", None), (b"9223372036854775808", None), (b"1.0", None)],
)
def test_string2ll_matches_redis(text: bytes, value: int | None) -> None:
    assert string2ll(text) == value


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.binary(max_size=40), min_size=1, max_size=6), max_size=8),
       st.lists(st.integers(min_value=1, max_value=50), max_size=10))
def test_both_readers_agree_on_any_chunking(reqs: list[list[bytes]], cuts: list[int]) -> None:
    data = b"".join(encode(*r) for r in reqs)
    for cls in READERS:
        reader = cls()
        got, pos = [], 0
        for c in [*cuts, len(data)]:
            if pos >= len(data):
                break
            reader.feed(data[pos : pos + c])
            pos += c
            got.extend(drain(reader))
        if pos < len(data):
            reader.feed(data[pos:])
            got.extend(drain(reader))
        assert got == reqs


def test_continuous_pipeline_stays_on_the_fast_path_with_bounded_buffering() -> None:
    # A bulk load (redis-cli --pipe, a Spark sink) never ends a read on a request boundary.
    reqs = [[b"XADD", b"s", b"*", b"f", b"%d" % i] for i in range(5000)]
    data = b"".join(encode(*r) for r in reqs)
    reader = RequestReader()
    got, slow_reads, most_pending = [], 0, 0
    for i in range(0, len(data), 1000):
        reader.feed(data[i : i + 1000])
        got.extend(drain(reader))
        slow_reads += reader._pure is not None
        most_pending = max(most_pending, reader.pending())
    assert got == reqs
    assert slow_reads == 0
    assert most_pending < 1000  # only the partial request is kept, never the whole stream


def test_error_after_a_long_split_pipeline_is_found_without_reparsing_it() -> None:
    reqs = [[b"SET", b"k%d" % i, b"v"] for i in range(3000)]
    data = b"".join(encode(*r) for r in reqs) + b"*1\r\n$x\r\n"
    reader = RequestReader()
    got = []
    with pytest.raises(ProtocolError, match="invalid bulk length"):
        for i in range(0, len(data), 777):
            reader.feed(data[i : i + 777])
            while batch := reader.take():
                got.extend(batch)
    assert got == reqs


def test_inline_then_partial_multibulk_hands_back_to_hiredis() -> None:
    reader = RequestReader()
    reader.feed(b"PING\r\n" + encode(b"ECHO", b"abc")[:9])
    assert drain(reader) == [[b"PING"]]
    assert reader._pure is None  # the partial ECHO went back to the fast path
    reader.feed(encode(b"ECHO", b"abc")[9:])
    assert drain(reader) == [[b"ECHO", b"abc"]]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.binary(max_size=300), min_size=1, max_size=12), max_size=20))
def test_encoded_lengths_match_the_encoding(reqs: list[list[bytes]]) -> None:
    # The reader finds where a partial request starts from these; batches of every size take
    # both of batch_encoded_len's routes, and arguments of 256 bytes or more its fallback.
    assert batch_encoded_len(reqs) == len(b"".join(encode(*r) for r in reqs))
    for r in reqs:
        assert encoded_len(r) == len(encode(*r))


def test_inline_pipeline_is_one_batch_and_its_error_comes_after_it() -> None:
    reader = RequestReader()
    reader.feed(b"PING\r\nECHO x\r\nset \"a\r\nPING\r\n")
    assert reader.take() == [[b"PING"], [b"ECHO", b"x"]]
    with pytest.raises(ProtocolError, match="unbalanced quotes"):
        reader.take()


def test_unauthenticated_requests_come_one_at_a_time() -> None:
    # AUTH changes the limits for the request after it, so nothing is parsed ahead of it.
    reader = RequestReader(auth_required=True)
    reader.feed(encode(b"AUTH", b"pw") + encode(b"SET", b"k", b"v" * 20000))
    assert reader.take() == [[b"AUTH", b"pw"]]
    reader.set_limits(auth_required=False)
    assert reader.take() == [[b"SET", b"k", b"v" * 20000]]
