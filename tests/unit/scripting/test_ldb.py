"""The Lua debugger's pure parts (scripting/ldb.py): its command parser, the human form of
replies, quoting, and the source listing with breakpoints. The forms are redis-server
8.6.3's (tests/differential/test_ldb_diff.py compares whole sessions)."""

from __future__ import annotations

import pytest

from sluice.scripting.ldb import LdbSession, catrepr, parse_command, reply_to_human


class _NoIO:
    def __init__(self) -> None:
        self.sent: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.sent.append(data)

    def read(self) -> bytes:
        return b""


@pytest.mark.parametrize("buf, parsed", [
    (b"", None),
    (b"*1\r\n$4\r\nstep\r\n", [b"step"]),
    (b"junk*2\r\n$1\r\np\r\n$1\r\nx\r\n", [b"p", b"x"]),  # text before the * is skipped
    (b"*2\r\n$1\r\np\r\n", None),  # more to read
    (b"*1\r\n$4\r\nst", None),
    (b"step\r\n", b"protocol error"),  # inline commands are not taken
    (b"*0\r\n", b"protocol error"),
    (b"*1\r\n$0\r\n\r\n", b"protocol error"),
    (b"*1\r\n$2000\r\n", b"protocol error"),
    (b"*1\r\n:1\r\n", b"protocol error"),
    (b"*1\r\n$1\r\nsXX", b"protocol error"),
])
def test_parse_command(buf: bytes, parsed: object) -> None:
    assert parse_command(buf) == parsed


@pytest.mark.parametrize("resp, human", [
    (b":12\r\n", b"12"),
    (b"$3\r\na\nb\r\n", b'"a\\nb"'),
    (b"$-1\r\n", b"NULL"),
    (b"+OK\r\n", b'"+OK"'),
    (b"-ERR x\r\n", b'"-ERR x"'),
    (b"*2\r\n:1\r\n$1\r\nx\r\n", b'[1,"x"]'),
    (b"*-1\r\n", b"NULL"),
    (b"~1\r\n:1\r\n", b"~(1)"),
    (b"%1\r\n$1\r\nk\r\n:2\r\n", b'{"k" => 2}'),
    (b"_\r\n", b"(null)"),
    (b"#t\r\n", b"#true"),
    (b",1.5\r\n", b"(double) 1.5"),
])
def test_reply_to_human(resp: bytes, human: bytes) -> None:
    assert reply_to_human(resp) == human


def test_catrepr() -> None:
    assert catrepr(b'a"\\\x00\x7f\t') == b'"a\\"\\\\\\x00\\x7f\\t"'


def test_listing_marks_the_current_line_and_breakpoints() -> None:
    io = _NoIO()
    s = LdbSession(io, b"a\nb\nc\n\n", forked=False, busy_ms=0)  # type: ignore[arg-type]
    assert s.lines == [b"a", b"b", b"c"]
    s.currentline = 2
    s.breakpoints([b"b", b"2", b"3", b"9", b"-4"])
    s.list_source(0, 0)
    s.send_logs()
    assert io.sent[-1].split(b"\r\n")[:-1] == [
        b"*10",
        b"+   1   a", b"+->#2   b", b"+   3   c",  # b 2: the line and one around it
        b"+->#2   b", b"+  #3   c",  # b 3 (there is no line 4)
        b"+Wrong line number.", b"+No breakpoint in the specified line.",
        b"+   1   a", b"+->#2   b", b"+  #3   c",  # the whole source
    ]


def test_maxlen_trims_and_hints_once() -> None:
    s = LdbSession(_NoIO(), b"x", forked=False, busy_ms=0)  # type: ignore[arg-type]
    s.set_maxlen([b"maxlen", b"5"])  # below 60: 60
    s.log_maxlen(b"y" * 70)
    s.log_maxlen(b"z" * 70)
    assert s.logs[0] == b"<value> replies are truncated at 60 bytes."
    assert s.logs[1] == b"y" * 60 + b" ..."
    assert s.logs[2] == b"z" * 60 + b" ..."  # no hint: maxlen was used, the user knows
