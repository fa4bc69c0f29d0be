"""Replies leave once per loop iteration (``Server.write_replies``), after every readable
client has run, with the AOF's commit first: Redis's ``beforeSleep``.

The loop is a fake whose ``call_soon`` queue the test drains by hand, so "the end of the
iteration" is a step the test takes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sluice.server.app import Server
from sluice.server.connection import ClientProtocol
from tests.support import RecordingAof


class QueueLoop:
    def __init__(self) -> None:
        self.ready: list[Callable[[], Any]] = []

    def call_soon(self, callback: Callable[..., Any], *args: Any) -> None:
        self.ready.append(lambda: callback(*args))

    def run_ready(self) -> None:
        ready, self.ready = self.ready, []
        for callback in ready:
            callback()


class Transport:
    def __init__(self, log: list[str], name: str) -> None:
        self.log, self.name = log, name
        self.writes: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.writes.append(bytes(data))
        self.log.append(f"write {self.name}")

    def get_extra_info(self, key: str, default: Any = None) -> Any:
        return ("127.0.0.1", 1234) if key in ("peername", "sockname") else default

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        pass

    def get_write_buffer_size(self) -> int:
        return 0

    def close(self) -> None:
        pass

    def is_closing(self) -> bool:
        return False


class CommitOrderAof(RecordingAof):
    """Notes in the shared log when the commit runs, and how many commands it wrote."""

    def __init__(self, log: list[str]) -> None:
        super().__init__()
        self.log = log

    def commit(self) -> bool:
        self.log.append(f"commit {len(self.logged)}")
        self.logged.clear()
        return True


def deliver(protocol: ClientProtocol, data: bytes) -> None:
    """One read, as the event loop makes it: into the protocol's buffer, then reported."""
    buf = protocol.get_buffer(-1)
    buf[: len(data)] = data
    protocol.buffer_updated(len(data))


def connect(server: Server, log: list[str], name: str) -> tuple[ClientProtocol, Transport]:
    protocol, transport = ClientProtocol(server), Transport(log, name)
    protocol.connection_made(transport)  # type: ignore[arg-type]
    return protocol, transport


def test_replies_wait_for_the_end_of_the_iteration_then_go_out_once_each() -> None:
    server = Server()
    loop = QueueLoop()
    server.loop = loop  # type: ignore[assignment]
    log: list[str] = []
    a, ta = connect(server, log, "a")
    b, tb = connect(server, log, "b")
    deliver(a, b"*1\r\n$4\r\nPING\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n")
    deliver(b, b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n")
    assert log == []  # both clients ran; nothing written yet
    assert len(loop.ready) == 1  # one write_replies for the whole iteration
    loop.run_ready()
    assert ta.writes == [b"+PONG\r\n+OK\r\n"] and tb.writes == [b"$1\r\nv\r\n"]
    assert sorted(log) == ["write a", "write b"]


def test_the_aof_commit_comes_before_any_reply() -> None:
    server = Server()
    loop = QueueLoop()
    server.loop = loop  # type: ignore[assignment]
    log: list[str] = []
    server.aof = CommitOrderAof(log)
    a, _ = connect(server, log, "a")
    b, _ = connect(server, log, "b")
    deliver(a, b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n")
    deliver(b, b"*2\r\n$4\r\nINCR\r\n$1\r\nn\r\n")
    loop.run_ready()
    assert log[0] == "commit 2" and sorted(log[1:]) == ["write a", "write b"]
