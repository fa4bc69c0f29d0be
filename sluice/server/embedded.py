"""A Sluice server inside another program: ``serve_in_background()`` (also ``from sluice
import serve_in_background``) starts one on its own event loop in a daemon thread and hands
back its URL; ``stop()`` shuts it down as SIGTERM would and joins the thread.

    from sluice import serve_in_background
    with serve_in_background() as server:          # 127.0.0.1, a free port
        r = redis.Redis.from_url(server.url)

Invariants:
- The listening socket is bound before ``start()`` returns, so the URL is usable at once; a
  port of 0 (the default) is a free port chosen by the kernel, never a fixed one.
- By default nothing is read from or written to the caller's directory: the server gets a
  private temporary ``dir`` (removed at ``stop()``) and no save points. Pass ``dir=`` to keep
  the files, and ``save=`` / ``appendonly="yes"`` to persist.
- ``stop()`` runs the server's orderly shutdown (final save or AOF fsync when configured),
  closes every client and listener, and returns only when the thread and its event loop are
  gone: ``asyncio.run`` awaits the shutdown and cancels anything still pending.
- ``flushall()`` runs FLUSHALL through the server's own dispatch (``dispatch.call``) on the
  loop thread, whatever the ACL users allow (the pytest plugin empties the server between
  tests with it).

The tests' ``ThreadedServer`` (tests/support.py) works the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import socket
import tempfile
import threading
from collections.abc import Callable
from types import TracebackType
from typing import Any
from urllib.parse import quote

from .app import Server
from .client import Client
from .config import Config
from .dispatch import call


def _directive(name: str, value: object) -> str:
    """``appendonly="yes"`` -> ``appendonly "yes"``; a list gives several words."""
    words = value if isinstance(value, (list, tuple)) else [value]
    quoted = ['"' + str(w).replace("\\", "\\\\").replace('"', '\\"') + '"' for w in words]
    return " ".join([name.replace("_", "-"), *quoted])


class BackgroundServer:
    """A Sluice server running on its own event loop in a daemon thread."""

    def __init__(self, *config_lines: str, host: str = "127.0.0.1", port: int = 0,
                 dir: str | None = None, username: str | None = None,
                 password: str | None = None, **settings: Any) -> None:
        self.host = host
        self.username, self.password = username, password
        self._own_dir = dir is None
        self.dir = tempfile.mkdtemp(prefix="sluice-") if dir is None else dir
        self.config = Config()
        lines = ['save ""', f'dir "{self.dir}"', *config_lines]
        lines += [_directive(name, value) for name, value in settings.items()]
        try:
            self.config.load_text(lines)
        except BaseException:
            self._remove_dir()
            raise
        self._requested_port = port
        self.port = 0
        self.server: Server | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None

    # -- life cycle ---------------------------------------------------------------------------

    def start(self, timeout: float = 30.0) -> BackgroundServer:
        sock = socket.socket(socket.AF_INET6 if ":" in self.host else socket.AF_INET)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self.host, self._requested_port))
        except OSError:
            sock.close()
            self._remove_dir()
            raise
        self._thread = threading.Thread(target=self._run, args=(sock,), daemon=True,
                                        name=f"sluice-server-{sock.getsockname()[1]}")
        self._thread.start()
        if not self._ready.wait(timeout):
            self.stop()
            raise TimeoutError(f"Sluice did not start within {timeout} s")
        if self._error is not None:
            self._thread.join(timeout)
            self._remove_dir()
            raise self._error
        return self

    def _run(self, sock: socket.socket) -> None:
        try:
            asyncio.run(self._main(sock))
        except BaseException as e:  # noqa: BLE001 - handed to start() or kept for stop()
            self._error = e
        finally:
            sock.close()
            self._ready.set()

    async def _main(self, sock: socket.socket) -> None:
        self.server = Server(self.config)
        await self.server.start(sock=sock)
        self.port = self.server.port
        self._ready.set()
        try:
            await self.server.serve_forever()
        finally:
            await self.server.shutdown()

    def stop(self, timeout: float = 30.0) -> None:
        """Shut the server down (as SIGTERM does) and wait for its thread to end."""
        server, thread = self.server, self._thread
        if server is not None and server.loop is not None and thread is not None \
                and thread.is_alive():
            with contextlib.suppress(RuntimeError):  # the loop has already closed
                server.loop.call_soon_threadsafe(server.request_shutdown)
        if thread is not None:
            thread.join(timeout)
            if thread.is_alive():
                raise TimeoutError(f"Sluice did not stop within {timeout} s")
        self._remove_dir()

    def _remove_dir(self) -> None:
        if self._own_dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive() and self._error is None

    def __enter__(self) -> BackgroundServer:
        return self if self.running else self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    # -- using it -------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """``redis://[user:password@]host:port/0`` for redis-py, ioredis, redis-cli -u ...
        (the credentials given to the constructor, else ``requirepass``'s)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        password = self.password if self.password is not None else self.config.requirepass
        auth = ""
        if password:
            auth = f"{quote(self.username or '', safe='')}:{quote(password, safe='')}@"
        return f"redis://{auth}{host}:{self.port}/0"

    def call(self, fn: Callable[[Server], Any], timeout: float = 30.0) -> Any:
        """Run ``fn(server)`` on the server's loop thread; returns its result."""
        server = self.server
        if server is None or not self.running:
            raise RuntimeError("the server is not running")

        async def run() -> Any:
            return fn(server)

        return asyncio.run_coroutine_threadsafe(run(), server.loop).result(timeout)

    def flushall(self) -> None:
        """FLUSHALL through the server's dispatch, as a client with every permission."""
        self.call(_flushall)


def _flushall(server: Server) -> None:
    client = Client(server, 0, None)  # not registered: no CLIENT LIST entry, no ACL user
    call(server, client, server.table[b"flushall"], [b"FLUSHALL"])
    server.before_return()


def serve_in_background(*config_lines: str, host: str = "127.0.0.1", port: int = 0,
                        dir: str | None = None, username: str | None = None,
                        password: str | None = None, **settings: Any) -> BackgroundServer:
    """Start Sluice in a background thread; returns the running server (``.url``, ``.port``,
    ``.stop()``; a context manager). ``config_lines`` are redis.conf lines, ``settings``
    directives by keyword (``appendonly="yes"``, ``maxclients=100``); ``username`` and
    ``password`` are the credentials ``.url`` carries (an ACL user the lines define)."""
    return BackgroundServer(*config_lines, host=host, port=port, dir=dir, username=username,
                            password=password, **settings).start()
