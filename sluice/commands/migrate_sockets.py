"""MIGRATE's connections to its target servers, kept for reuse: Redis's migrate socket cache.

MIGRATE talks to the target synchronously, as Redis does: the server's event loop waits while
the keys travel (Redis blocks its own loop in ``migrateCommand`` the same way, with the same
per-operation timeout). Plain blocking sockets with a timeout are therefore the faithful
choice, and the simplest; no asyncio here, and nothing else runs meanwhile.

Invariants, as Redis's ``migrateGetSocket`` / ``migrateCloseSocket`` /
``migrateCloseTimedoutSockets`` (cluster.c):

* one connection per ``host:port`` as the client spelled them (``b"localhost:6379"`` and
  ``b"127.0.0.1:6379"`` are two entries), at most ``CACHE_ITEMS``; a new one past that
  closes one chosen at random;
* a connection unused for more than 10 s is closed by the cron (``close_timed_out``), on
  the server's clock (virtual in tests); INFO's ``migrate_cached_sockets`` is ``len()``;
* ``last_dbid`` is the database the target's connection has selected (-1: unknown, so the
  next MIGRATE sends SELECT); any error resets it by closing the connection or by the caller;
* a connect that fails at once (no such host, a port the resolver refuses) is
  ``ConnectError``; one still in progress is waited for up to the timeout and then used
  anyway, as Redis's ``connSocketBlockingConnect`` does, so that a refused or timed-out
  connect shows up as a write error, with Redis's wording;
* replies are read as ``syncReadLine`` reads them: a line of at most 1023 bytes (a longer
  one is cut there), ``\\r\\n`` stripped; an empty line (a bare ``\\n``) counts as a
  failed read.
"""

from __future__ import annotations

import errno
import random
import select
import socket

CACHE_ITEMS = 64  # MIGRATE_SOCKET_CACHE_ITEMS
CACHE_TTL_MS = 10_000  # MIGRATE_SOCKET_CACHE_TTL (10 s): unused this long, the cron closes it
WRITE_CHUNK = 64 * 1024  # the query goes out in chunks this big, each with the full timeout
LINE_MAX = 1023  # syncReadLine's buffer (1024 with its NUL)
_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1


class ConnectError(OSError):
    """The target could not be connected to at all (Redis: ``connBlockingConnect`` failed)."""


class MigrateSocket:
    """One cached connection to a target (Redis's ``migrateCachedSocket``)."""

    __slots__ = ("sock", "last_dbid", "last_use", "_buf")

    def __init__(self, sock: socket.socket, now_ms: int) -> None:
        self.sock = sock  # connected (or still connecting: see the module docstring)
        self.last_dbid = -1  # the target's selected database; -1: unknown, SELECT first
        self.last_use = now_ms  # server clock (unix ms) of the last MIGRATE that used it
        self._buf = bytearray()  # read but not yet consumed

    def write(self, data: bytes, timeout_ms: int) -> None:
        """Send ``data``; ``TimeoutError`` or another ``OSError`` when it cannot."""
        sock = self.sock
        sock.settimeout(timeout_ms / 1000)
        view = memoryview(data)
        for pos in range(0, len(data), WRITE_CHUNK):
            sock.sendall(view[pos:pos + WRITE_CHUNK])

    def read_line(self, timeout_ms: int) -> bytes:
        """The next reply line, as ``syncReadLine``; ``TimeoutError`` on timeout, another
        ``OSError`` when the connection fails, is closed, or sends an empty line."""
        buf = self._buf
        self.sock.settimeout(timeout_ms / 1000)
        while True:
            nl = buf.find(b"\n", 0, LINE_MAX)
            if nl >= 0:
                if nl == 0:  # nothing before the newline: syncReadLine returns 0, a failure
                    del buf[:1]
                    raise OSError(errno.EPROTO, "empty reply line")
                line = bytes(buf[:nl])
                del buf[:nl + 1]
                return line[:-1] if line.endswith(b"\r") else line
            if len(buf) >= LINE_MAX:
                line = bytes(buf[:LINE_MAX])
                del buf[:LINE_MAX]
                return line
            chunk = self.sock.recv(65536)
            if not chunk:
                raise OSError(errno.ECONNRESET, "connection closed by the target")
            buf += chunk

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


def _atoi(raw: bytes) -> int:
    """C's ``atoi`` as glibc does it (``strtol`` then cut to an int): what Redis makes of
    MIGRATE's port argument (``"badport"`` is 0, ``"-1"`` stays -1)."""
    s = raw.lstrip(b" \t\n\v\f\r")
    sign = 1
    if s[:1] in (b"+", b"-"):
        sign = -1 if s[:1] == b"-" else 1
        s = s[1:]
    digits = len(s) - len(s.lstrip(b"0123456789"))
    n = sign * int(s[:digits]) if digits else 0
    n = min(max(n, _LONG_MIN), _LONG_MAX)
    n &= 0xFFFFFFFF
    return n - 2**32 if n > _INT_MAX else n


def connect(host: bytes, port: bytes, timeout_ms: int) -> socket.socket:
    """``connBlockingConnect``: resolve, start a non-blocking connect on the first address
    that accepts one, wait up to ``timeout_ms`` for it to complete, and return the socket
    even if it has not (Redis goes on and fails on the first write). ``ConnectError`` when
    no address could even start connecting."""
    number = _atoi(port)
    if number < 0:  # getaddrinfo refuses "-1" as a service: Redis fails to connect
        raise ConnectError(errno.EINVAL, "bad port")
    try:
        name = host.decode()
        # The service is given as the decimal text Redis builds, which the resolver cuts to
        # 16 bits (port 70000 is 4464 there too).
        infos = socket.getaddrinfo(name, number & 0xFFFF, socket.AF_UNSPEC, socket.SOCK_STREAM)
    except (OSError, UnicodeError, ValueError) as e:
        raise ConnectError(errno.EINVAL, str(e)) from None
    for family, kind, proto, _canon, addr in infos:
        try:
            sock = socket.socket(family, kind, proto)
        except OSError:
            continue
        sock.setblocking(False)
        code = sock.connect_ex(addr)
        if code in (0, errno.EINPROGRESS):
            if code:  # Redis's aeWait, whose result it does not look at
                poller = select.poll()
                poller.register(sock, select.POLLOUT)
                poller.poll(min(timeout_ms, _INT_MAX))
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass
            return sock
        sock.close()
    raise ConnectError(errno.ECONNREFUSED, "could not connect")


class MigrateSockets:
    """The cache: ``host:port`` -> ``MigrateSocket`` (Redis's ``server.migrate_cached_sockets``)."""

    __slots__ = ("_cached",)

    def __init__(self) -> None:
        self._cached: dict[bytes, MigrateSocket] = {}

    def __len__(self) -> int:
        return len(self._cached)

    def get(self, host: bytes, port: bytes, timeout_ms: int, now_ms: int) -> MigrateSocket:
        """The cached connection to ``host:port``, or a new one (``ConnectError``)."""
        name = host + b":" + port
        cs = self._cached.get(name)
        if cs is not None:
            cs.last_use = now_ms
            return cs
        if len(self._cached) >= CACHE_ITEMS:  # too many: drop one at random, as Redis
            victim = random.choice(list(self._cached))
            self._cached.pop(victim).close()
        cs = MigrateSocket(connect(host, port, timeout_ms), now_ms)
        self._cached[name] = cs
        return cs

    def close(self, host: bytes, port: bytes) -> None:
        """Forget the connection to ``host:port`` (after an error: the next one starts over)."""
        cs = self._cached.pop(host + b":" + port, None)
        if cs is not None:
            cs.close()

    def close_timed_out(self, now_ms: int) -> None:
        """The cron's sweep: close what no MIGRATE used for more than 10 s."""
        if not self._cached:
            return
        for name, cs in list(self._cached.items()):
            if now_ms - cs.last_use > CACHE_TTL_MS:
                del self._cached[name]
                cs.close()

    def close_all(self) -> None:
        for cs in self._cached.values():
            cs.close()
        self._cached.clear()
