"""The Lua debugger (SCRIPT DEBUG, redis-cli --ldb) against redis-server 8.6.3: the same
sessions driven over raw sockets, every reply compared byte for byte.

A session is: SCRIPT DEBUG YES|SYNC, EVAL, then debugger commands. Each command is answered
with one array of log lines; when the script ends the array closes with ``<endsession>``, the
EVAL reply follows and the server closes the connection. The sessions cover every debugger
command, breakpoints (``b``, ``redis.breakpoint()``), ``redis.debug``, logged calls and replies
in RESP2 and RESP3, maxlen trimming, abort, the busy-timeout stop of a looping script, the
forked mode (YES: the child's writes are not kept) against the synchronous one (SYNC: they
are), and the Tcl suite's parsing cases (a NUL in the command, a 100-argument ``redis``)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import hiredis
import pytest

from tests.support import ProcessServer, require_redis_server

pytestmark = [pytest.mark.differential, pytest.mark.timeout(120)]

SCRIPT = ("local a = 1\nlocal t = {1,2,'x', {y = true}}\nredis.call('set', KEYS[1], ARGV[1])\n"
          "redis.debug('hi', a, t)\nlocal b = redis.call('get', KEYS[1])\n"
          "redis.breakpoint()\nreturn b\n")

SESSIONS: list[list[tuple[Any, ...]]] = [
    [("SCRIPT", "DEBUG", "SYNC"), ("EVAL", SCRIPT, 1, "k", "v"), ("help",), ("whole",),
     ("b", "5"), ("b",), ("c",), ("print",), ("p", "t"), ("p", "KEYS"), ("p", "ARGV"),
     ("p", "nope"), ("trace",), ("eval", "1+1"), ("e", "error('x')"), ("e", "local x = "),
     ("e", "return redis.call('nosuch')"), ("e", "return {a=1}"), ("r", "get", "k"),
     ("r", "nosuch"), ("maxlen", "1"), ("m",), ("list",), ("l", "2", "1"), ("s",), ("s",),
     ("b", "-5"), ("b", "-5"), ("b", "0"), ("b", "x"), ("b", "99"), ("zzz",), ("c",)],
    [("SCRIPT", "DEBUG", "YES"), ("EVAL", "redis.call('set','forked','1')\nreturn 5", 0),
     ("s",), ("s",)],
    [("SCRIPT", "DEBUG", "SYNC"),
     ("EVAL", "redis.call('set','kept','1')\nredis.call('set','kept2','1')\nreturn 5", 0),
     ("s",), ("abort",)],
    [("SCRIPT", "DEBUG", "SYNC"), ("EVAL", "return 'hello'", 0), (b"'hello\0world'",),
     (b"\0hello",), (b"h\0x",), ("redis", *["test"] * 100), ("c",)],
    [("SCRIPT", "DEBUG", "SYNC"), ("EVALSHA", "a" * 40, 0), ("EVALSHA_RO", "a" * 40, 0),
     ("EVAL", "return 1 +", 0)],
    [("SCRIPT", "DEBUG", "SYNC"), ("EVAL", "redis.setresp(3)\nlocal x = "
     "redis.call('hgetall','nohash')\nlocal y = redis.call('incr','n')\n"
     "local z = redis.call('hset','h','f','v')\nlocal w = redis.call('hgetall','h')\n"
     "local e = redis.pcall('incr','h')\nreturn w", 0),
     ("s",), ("s",), ("s",), ("s",), ("s",), ("s",), ("s",)],
    [("SCRIPT", "DEBUG", "maybe"), ("SCRIPT", "DEBUG", "NO"), ("EVAL", "return 1", 0)],
    [("SCRIPT", "DEBUG", "SYNC"), ("EVAL", "local s = string.rep('x', 300)\nreturn s", 0),
     ("s",), ("p", "s"), ("p", "s"), ("maxlen", "0"), ("p", "s"), ("c",)],
    [("SCRIPT", "DEBUG", "SYNC"), ("EVAL", "local i = 0\nwhile true do i = i + 1 end", 0),
     ("c",), ("abort",)],
    [("SCRIPT", "DEBUG", "SYNC"), ("EVAL", "local function f(x)\n  return x + 1\nend\n"
     "local r = f(1)\nreturn r", 0), ("s",), ("s",), ("trace",), ("print",), ("c",)],
]


class Session:
    """One connection; reads whole replies, and notices when the server closed it."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=20)
        self.reader = hiredis.Reader(notEnoughData=None, errors="replace")
        self.raw = b""

    def send(self, argv: tuple[Any, ...]) -> None:
        parts = [a if isinstance(a, bytes) else str(a).encode() for a in argv]
        self.sock.sendall(b"*%d\r\n" % len(parts)
                          + b"".join(b"$%d\r\n%s\r\n" % (len(p), p) for p in parts))

    def reply(self) -> Any:
        while True:
            got = self.reader.gets()
            if got is not None:
                return got
            data = self.sock.recv(65536)
            if not data:
                return "<closed>"
            self.raw += data
            self.reader.feed(data)

    def step(self, argv: tuple[Any, ...]) -> list[Any]:
        """The replies one command brings: one, or at a session's end the log, the EVAL
        reply and the close."""
        self.send(argv)
        first = self.reply()
        out = [first]
        if isinstance(first, list) and first and first[-1] == b"<endsession>":
            out.append(self.reply())
            out.append(self.reply())
        return out

    def close(self) -> None:
        self.sock.close()


def _run(port: int, steps: list[tuple[Any, ...]]) -> list[Any]:
    session = Session(port)
    seen = []
    try:
        for argv in steps:
            got = session.step(argv)
            seen.append((argv[0], _masked(got)))
            if got[-1] == "<closed>":
                break
        return seen
    finally:
        session.close()


def _masked(replies: list[Any]) -> list[Any]:
    """Comparable replies: errors as their text; pointers (function@0x...) differ between
    processes, nothing else may."""
    out: list[Any] = []
    for r in replies:
        if isinstance(r, hiredis.ReplyError):
            out.append(("error", str(r)))
        elif isinstance(r, list):
            out.append([b"@0x*" if isinstance(x, bytes) and b"@0x" in x else x for x in r])
        else:
            out.append(r)
    return out


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[ProcessServer, ProcessServer]]:
    require_redis_server()
    args = ["--busy-reply-threshold", "200"]  # the looping script stops after 200 ms
    ours, theirs = ProcessServer("sluice", args).start(), ProcessServer("redis", args).start()
    yield ours, theirs
    ours.stop()
    theirs.stop()


@pytest.mark.parametrize("steps", SESSIONS, ids=range(len(SESSIONS)))
def test_sessions_as_redis(servers: tuple[ProcessServer, ProcessServer],
                           steps: list[tuple[Any, ...]]) -> None:
    ours, theirs = (_run(s.port, steps) for s in servers)
    assert ours == theirs


def test_forked_writes_are_dropped_sync_ones_kept(servers: tuple[ProcessServer, ProcessServer]
                                                   ) -> None:
    for server in servers:
        r = server.client()
        r.delete("forked", "kept", "kept2")
        _run(server.port, SESSIONS[1])
        _run(server.port, SESSIONS[2])
        assert r.mget("forked", "kept", "kept2") == [None, b"1", None]
        r.close()
