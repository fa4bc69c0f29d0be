"""redis-cli 7.0 against Sluice: typing hints (built from COMMAND DOCS), HELP, plain commands.

redis-cli is driven non-interactively where it can be (``redis-cli -p N help client pause``
fetches COMMAND DOCS and prints the hint line) and through a pseudo-terminal for the live
hints shown while typing. The hint lines and the ``arguments`` shape of COMMAND DOCS are also
compared with a real redis-server (differential tests).
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import shutil
import signal
import struct
import subprocess
import termios
import time
from typing import Any

import hiredis
import pytest

from tests.support import RawClient, ThreadedServer

REDIS_CLI = shutil.which("redis-cli") or ""
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


@pytest.fixture(scope="module", autouse=True)
def _need_redis_cli() -> None:
    if not REDIS_CLI:
        if os.environ.get("CI") == "true":
            pytest.fail("redis-cli is required (make test installs redis-tools)")
        pytest.skip("redis-cli not installed")


def cli(port: int, *args: str, protocol: int = 2) -> str:
    argv = [REDIS_CLI, "-p", str(port)] + (["-3"] if protocol == 3 else []) + list(args)
    done = subprocess.run(argv, capture_output=True, timeout=20, check=True,
                          env={**os.environ, "HOME": "/nonexistent"})
    return done.stdout.decode()


def hint_line(port: int, command: str) -> str:
    """The hint redis-cli prints for ``command`` in ``help``: the argument summary."""
    out = _ANSI.sub("", cli(port, "help", *command.split()))
    for line in out.splitlines():
        if line.strip().upper().startswith(command.upper()):
            return line.strip()[len(command):].strip()
    raise AssertionError(f"no help line for {command!r} in {out!r}")


@pytest.mark.parametrize(("command", "hint"), [
    ("client pause", "timeout [WRITE|ALL]"),
    ("client list", "[TYPE NORMAL|MASTER|REPLICA|PUBSUB] [ID client-id [client-id ...]]"),
    ("command list", "[FILTERBY MODULE module-name|ACLCAT category|PATTERN pattern]"),
    ("shutdown", "[NOSAVE|SAVE] [NOW] [FORCE] [ABORT]"),
])
def test_help_hint_from_command_docs(sluice: ThreadedServer, command: str, hint: str) -> None:
    assert hint_line(sluice.port, command) == hint


class Terminal:
    """redis-cli in a pseudo-terminal, as a person typing would see it."""

    def __init__(self, port: int) -> None:
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: becomes redis-cli
            os.environ.update(TERM="xterm", HOME="/nonexistent")
            os.execv(REDIS_CLI, [REDIS_CLI, "-p", str(port)])
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 200, 0, 0))
        self.seen = b""

    def type(self, text: str) -> None:
        os.write(self.fd, text.encode())

    def wait_for(self, needle: bytes, timeout: float = 10.0) -> bytes:
        deadline = time.monotonic() + timeout
        while needle not in self.seen:
            left = deadline - time.monotonic()
            assert left > 0, f"{needle!r} never shown; screen so far: {self.seen[-500:]!r}"
            ready, _, _ = select.select([self.fd], [], [], left)
            if ready:
                chunk = os.read(self.fd, 4096)
                if b"\x1b[6n" in chunk:  # linenoise asks where the cursor is
                    os.write(self.fd, b"\x1b[1;1R")
                self.seen += chunk
        return self.seen

    def close(self) -> None:
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        os.close(self.fd)


def test_hints_while_typing(sluice: ThreadedServer) -> None:
    term = Terminal(sluice.port)
    try:
        term.wait_for(b"> ")
        term.type("client pause ")
        # Grey text after the cursor: the arguments still to type.
        term.wait_for(b"\x1b[0;90;49mtimeout [WRITE|ALL]\x1b[0m")
        term.type("100 ")
        term.wait_for(b"\x1b[0;90;49m[WRITE|ALL]\x1b[0m")
    finally:
        term.close()


@pytest.mark.parametrize("protocol", [2, 3])
def test_command_docs_through_redis_cli(sluice: ThreadedServer, protocol: int) -> None:
    out = cli(sluice.port, "COMMAND", "DOCS", "client|reply", protocol=protocol)
    assert "ON|OFF|SKIP" not in out  # the raw structure, not a hint
    for word in ("summary", "arguments", "pure-token", "SKIP"):
        assert word in out


def test_plain_commands(sluice: ThreadedServer) -> None:
    assert cli(sluice.port, "CLIENT", "REPLY", "ON").strip() == "OK"
    assert re.search(r"^redis_version:\d+\.\d+\.\d+\r?$", cli(sluice.port, "INFO", "server"),
                     re.M)
    assert cli(sluice.port, "CONFIG", "GET", "maxclients").split() == ["maxclients", "10000"]


# -- compared with redis-server ----------------------------------------------------------------

SAME_HINTS = ["client list", "client pause", "client setname", "client unblock", "client reply",
              "client tracking", "client no-evict", "client caching", "command docs",
              "command info", "command list", "config get", "config set", "slowlog get",
              "latency reset", "latency history", "shutdown", "eval", "evalsha_ro", "fcall",
              "script flush", "script exists", "script debug", "function flush",
              "function list", "function load", "function restore", "info", "monitor"]


@pytest.mark.differential
def test_hints_match_redis(sluice: ThreadedServer, reference: Any) -> None:
    ours = {c: hint_line(sluice.port, c) for c in SAME_HINTS}
    theirs = {c: hint_line(reference.port, c) for c in SAME_HINTS}
    assert ours == theirs


def _shape(args: Any) -> Any:
    """An argument list without the names of groups (ours are derived, Redis's hand-picked).

    A block that only gives a token to one value (Redis's ``ID client-id [client-id ...]`` in
    CLIENT LIST) is the same to a client as that value with the token: both are folded so.
    """
    out = []
    for arg in args:
        fields = dict(zip(arg[::2], arg[1::2], strict=True))
        kind, token = fields[b"type"], fields.get(b"token")
        flags = set(fields.get(b"flags", []))
        inner = fields.get(b"arguments", [])
        if kind == b"block" and token and len(inner) == 1:
            only = dict(zip(inner[0][::2], inner[0][1::2], strict=True))
            if b"token" not in only and only[b"type"] not in (b"oneof", b"block"):
                kind, inner = only[b"type"], []
                flags |= set(only.get(b"flags", []))
                fields = {**only, b"token": token}
        out.append((kind, token, fields[b"name"] if kind not in (b"oneof", b"block") else None,
                    sorted(flags), _shape(inner)))
    return out


@pytest.mark.differential
@pytest.mark.parametrize("command", ["client|pause", "client|list", "client|reply",
                                     "client|unblock", "config|set", "shutdown", "slowlog|get",
                                     "script|flush", "command|list"])
def test_docs_arguments_shape_matches_redis(sluice: ThreadedServer, reference: Any,
                                            command: str) -> None:
    shapes = []
    for port in (sluice.port, reference.port):
        client = RawClient(port)
        reader = hiredis.Reader()
        reader.feed(client.call("COMMAND", "DOCS", command))
        client.close()
        name, docs = reader.gets()
        fields = dict(zip(docs[::2], docs[1::2], strict=True))
        shapes.append(_shape(fields[b"arguments"]))
    assert shapes[0] == shapes[1]
