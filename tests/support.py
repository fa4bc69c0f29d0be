"""Test support: Sluice in a thread or a subprocess, a reference redis-server, waiting on state.

No fixed ports: a socket bound to port 0 is handed to the in-process server; subprocesses get
a port picked the same way. Every process started here is stopped by its fixture.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import redis

from sluice.server.app import Server
from sluice.server.config import Config


def _reference_server() -> str:
    """The reference redis-server: ``SLUICE_REFERENCE_REDIS``, else the one ``make test``
    builds (tests/build_reference_redis.py). Not Debian's packaged 7.0.15: where Redis
    changed since, Sluice follows the newest release, and so do the differential tests."""
    from tests.build_reference_redis import newest_cached

    env = os.environ.get("SLUICE_REFERENCE_REDIS")
    if env:
        return shutil.which(env) or ""
    cached = newest_cached()
    return str(cached) if cached else ""


REDIS_SERVER = _reference_server()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def answers(port: int, timeout: float = 5.0) -> bool:
    """True when a server on ``port`` answers an inline PING (``+PONG``, or an error such as
    ``-NOAUTH``: it is up either way). One raw attempt: redis-py's default retries with
    backoff would turn each refused probe of a polling loop into seconds of waiting."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(64)[:1] in (b"+", b"-")
    except OSError:
        return False


def wait_until(predicate: Callable[[], Any], timeout: float = 10.0, what: str = "condition") -> Any:
    """Poll server state until ``predicate()`` is truthy (state, not time, is what we wait on)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(0.002)


def wait_blocked(r: redis.Redis, n: int, timeout: float = 10.0) -> None:
    """Wait until INFO clients reports ``blocked_clients == n``."""
    wait_until(lambda: r.info("clients")["blocked_clients"] == n, timeout, f"{n} blocked clients")


class ThreadedServer:
    """A Sluice server running its own event loop in a daemon thread."""

    def __init__(self, config_lines: list[str] | None = None, clock: Any = None) -> None:
        self.config = Config()
        # A private dir: never load (or save) a dump.rdb lying in the working directory.
        self._tmpdir = tempfile.mkdtemp(prefix="sluice-test-")
        self.config.load_text(["save \"\"", f"dir {self._tmpdir}", *(config_lines or [])])
        self.server: Server | None = None
        self.clock = clock
        self.port = 0
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="sluice-test-server", daemon=True)

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as e:  # noqa: BLE001
            self._error = e
            self._ready.set()

    async def _main(self) -> None:
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        self.server = Server(self.config, self.clock)
        await self.server.start(sock=sock)
        self.port = self.server.port
        self._ready.set()
        try:
            await self.server.serve_forever()
        finally:
            await self.server.shutdown()

    def start(self) -> ThreadedServer:
        self._thread.start()
        self._ready.wait(10)
        if self._error is not None:
            raise self._error
        return self

    def call(self, fn: Callable[[], Any]) -> Any:
        """Run ``fn`` on the server's loop thread and return its result (safe inspection)."""
        assert self.server is not None
        fut: Any = asyncio.run_coroutine_threadsafe(_as_coro(fn), self.server.loop)
        return fut.result(10)

    def stop(self) -> None:
        if self.server is not None and self.server.loop is not None:
            with contextlib.suppress(RuntimeError):
                self.server.loop.call_soon_threadsafe(self.server.request_shutdown)
        self._thread.join(10)
        shutil.rmtree(self._tmpdir, ignore_errors=True)

    def client(self, **kw: Any) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.port, **kw)


async def _as_coro(fn: Callable[[], Any]) -> Any:
    return fn()


class ProcessServer:
    """A server in a subprocess: ``kind`` is ``sluice`` or ``redis`` (the reference)."""

    def __init__(self, kind: str = "sluice", args: list[str] | None = None,
                 cwd: str | None = None, config_file: str | None = None) -> None:
        self.kind = kind
        self.port = free_port()
        self.args = args or []
        self.config_file = config_file  # given first, as redis-server takes it
        self.cwd = cwd
        self._tmpdir = ""
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 15.0) -> ProcessServer:
        first = [self.config_file] if self.config_file else []
        if self.kind == "redis":
            cmd = [REDIS_SERVER, *first, "--port", str(self.port), "--bind", "127.0.0.1",
                   "--save", "", "--appendonly", "no", *self.args]
        else:
            cmd = [sys.executable, "-m", "sluice.server", *first, "--port", str(self.port),
                   "--bind", "127.0.0.1", "--save", "", *self.args]
        if self.cwd is None:  # never load a dump.rdb lying in the caller's directory
            self.cwd = self._tmpdir = tempfile.mkdtemp(prefix=f"{self.kind}-test-")
        self.proc = subprocess.Popen(cmd, cwd=self.cwd, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE)
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                err = self.proc.stderr.read().decode() if self.proc.stderr else ""
                raise RuntimeError(f"{self.kind} server exited at start: {err}")
            if answers(self.port, timeout=1):
                return self
            if time.monotonic() > deadline:
                self.stop()
                raise TimeoutError(f"{self.kind} server did not start")
            time.sleep(0.02)

    def client(self, **kw: Any) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.port, **kw)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        if self.proc is not None and self.proc.stderr is not None:
            self.proc.stderr.close()
        if self._tmpdir:
            shutil.rmtree(self._tmpdir, ignore_errors=True)


@contextlib.contextmanager
def running(server: ThreadedServer | ProcessServer) -> Iterator[Any]:
    server.start()
    try:
        yield server
    finally:
        server.stop()


def require_redis_server() -> str:
    """Path of the reference redis-server: a failure under CI, a skip elsewhere."""
    import pytest

    if REDIS_SERVER:
        return REDIS_SERVER
    if os.environ.get("CI") == "true":
        pytest.fail("the reference redis-server is required under CI (make test builds it)")
    pytest.skip("no reference redis-server (make test builds it)")
    return ""


def resp_frame_end(buf: bytes | bytearray, pos: int) -> int | None:
    """Where the RESP2/RESP3 frame starting at ``pos`` ends, or None if it is incomplete."""
    line_end = buf.find(b"\r\n", pos)
    if line_end < 0:
        return None
    kind, head = buf[pos : pos + 1], buf[pos + 1 : line_end]
    pos = line_end + 2
    if kind in (b"$", b"=", b"!"):
        size = int(head)
        if size < 0:
            return pos
        return pos + size + 2 if len(buf) >= pos + size + 2 else None
    if kind in (b"*", b">", b"~", b"%", b"|"):
        count = int(head) * (2 if kind in (b"%", b"|") else 1)
        for _ in range(max(count, 0)):
            end = resp_frame_end(buf, pos)
            if end is None:
                return None
            pos = end
        return pos
    return pos  # + - : _ , # ( are one line


_HELLO_MODULES = b"$7\r\nmodules\r\n"


def without_modules(data: bytes) -> bytes:
    """``data`` with the ``modules`` list of each HELLO reply in it emptied.

    redis-server 8.x lists its built-in vectorset module there; Sluice has no modules, so its
    list is empty. Everything else in HELLO's reply is compared as is."""
    out, pos = bytearray(), 0
    while (at := data.find(_HELLO_MODULES, pos)) >= 0:
        start = at + len(_HELLO_MODULES)
        end = resp_frame_end(data, start)
        if end is None:
            break
        out += data[pos:start] + b"*0\r\n"
        pos = end
    return bytes(out + data[pos:])


class RawClient:
    """A byte-level client: sends one command, returns the reply's exact bytes.

    Differential tests compare these bytes between Sluice and redis-server, so reply types
    (simple vs bulk string, null bulk vs null array, RESP3 maps) are checked, not just values.
    """

    def __init__(self, port: int, protocol: int = 2) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=20)
        self._pending = bytearray()  # bytes read past the replies returned so far
        if protocol == 3:
            self.call("HELLO", "3")

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read_reply(self) -> bytes:
        """The next reply's exact bytes (what arrived, if the server closes before it ends)."""
        try:
            return self.read_replies(1)[0]
        except ConnectionError:
            rest = bytes(self._pending)
            self._pending.clear()
            return rest

    def read_replies(self, n: int) -> list[bytes]:
        """Exactly ``n`` replies (or pushes), each as its own bytes, whatever the chunking."""
        out: list[bytes] = []
        buf = self._pending
        while len(out) < n:
            end = resp_frame_end(buf, 0)
            if end is None:
                chunk = self.sock.recv(65536)
                if not chunk:
                    raise ConnectionError(f"closed after {len(out)} of {n} replies: {buf!r}")
                buf += chunk
                continue
            out.append(bytes(buf[:end]))
            del buf[:end]
        return out

    def has_reply(self) -> bool:
        """Has (part of) a reply arrived that was not read yet? Does not wait."""
        return bool(self._pending) or bool(select.select([self.sock], [], [], 0)[0])

    def send(self, *args: Any) -> None:
        parts = [a if isinstance(a, bytes) else str(a).encode() for a in args]
        req = b"*%d\r\n" % len(parts) + b"".join(b"$%d\r\n%s\r\n" % (len(p), p) for p in parts)
        self.sock.sendall(req)

    def call(self, *args: Any) -> bytes:
        self.send(*args)
        return self.read_reply()

    def close(self) -> None:
        self.sock.close()


def replay_same(pair: tuple[RawClient, RawClient], commands: Any) -> None:
    """Empty both servers, then run ``commands`` on each: every reply, byte for byte, the
    same (a failure names the command)."""
    ours, theirs = pair
    ours.call("FLUSHALL")
    theirs.call("FLUSHALL")
    for command in commands:
        assert ours.call(*command) == theirs.call(*command), command


def command_counts(port: int) -> dict[str, str]:
    """INFO commandstats without the timings: calls, rejected and failed per command."""
    admin = RawClient(port)
    try:
        info = admin.call("INFO", "commandstats").decode()
    finally:
        admin.close()
    return {m[1]: re.sub(r"usec(_per_call)?=[0-9.]+,", "", m[2])
            for m in re.finditer(r"cmdstat_([^:]+):(.*)\r", info)}


class RecordingAof:
    """Stands in for the AOF hook (``server.aof``): records what dispatch would append, with
    ``[b"MULTI"]`` / ``[b"EXEC"]`` around a transaction's effects, and never has anything
    for the end-of-iteration commit to write."""

    buf = b""

    def __init__(self) -> None:
        self.logged: list[list[bytes]] = []

    def feed(self, db: int, argvs: list[list[bytes]]) -> None:
        self.logged.extend(list(a) for a in argvs)

    def begin_multi(self, db: int) -> None:
        self.logged.append([b"MULTI"])

    def end_multi(self) -> None:
        self.logged.append([b"EXEC"])

    def commit(self) -> bool:
        return True

    def cron(self) -> None:
        pass

    def reset_stats(self) -> None:
        pass

    def shutdown(self) -> None:
        pass
