"""Framing, inline commands and protocol errors: the same bytes back as redis-server.

Each case sends raw bytes on a fresh connection and reads until the server closes it (or a
short idle timeout for cases where the connection stays open), then compares everything.
"""

from __future__ import annotations

import socket

import pytest

from tests.support import ProcessServer, ThreadedServer

CASES = {
    "inline": b"PING\r\necho hello\r\nECHO \"a b\" \r\n",
    "inline-lf-only": b"PING\nPING\n",
    "inline-quotes": b"echo \"\\x41\\tB\"\r\necho 'it\\'s'\r\n",
    "empty-lines": b"\r\n\r\nPING\r\n",
    "ignored-headers": b"*0\r\n*-1\r\n*-10\r\n*1\r\n$4\r\nPING\r\n",
    "pipeline": b"*1\r\n$4\r\nPING\r\n" * 5,
    "bad-mbulk": b"*1\r\n$4\r\nPING\r\n*1_0\r\n",
    "bad-mbulk-space": b"* 1\r\n",
    "bad-mbulk-plus": b"*+1\r\n",
    "bad-bulk-zero": b"*1\r\n$04\r\nPING\r\n",
    "bad-bulk-negative": b"*1\r\n$-1\r\n",
    "not-dollar": b"*1\r\n:5\r\n",
    "nested": b"*1\r\n*1\r\n$1\r\na\r\n",
    "unbalanced": b"PING\r\nset \"a\r\n",
    "unbalanced-single": b"echo 'abc\r\n",
    "too-big-inline": b"a" * 70000,
    "too-big-mbulk-count": b"*" + b"1" * 70000,
    "bulk-over-proto-max": b"*1\r\n$600000000\r\n" + b"x" * 70000,
    "unknown-inline": b"FOO bar baz\r\n",
    "arity": b"*1\r\n$4\r\nECHO\r\n",
}


def exchange(port: int, data: bytes, idle: float = 0.3) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(data)
        s.settimeout(idle)
        out = b""
        while True:
            try:
                chunk = s.recv(65536)
            except (TimeoutError, ConnectionResetError):
                break
            if not chunk:
                break
            out += chunk
        return out


@pytest.mark.differential
@pytest.mark.parametrize("name", sorted(CASES))
def test_same_bytes_back(name: str, sluice: ThreadedServer, reference: ProcessServer) -> None:
    data = CASES[name]
    assert exchange(sluice.port, data) == exchange(reference.port, data)
