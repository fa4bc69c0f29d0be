"""``sluice-healthcheck [--host H] [--port P | --unixsocket PATH] [--timeout S]``: is the server
answering? Exit status 0 if it is, 1 if not (the Docker image's HEALTHCHECK, a k8s probe).

It sends ``PING`` and counts as alive any reply that shows the server is up and serving:
``+PONG``, and also ``-NOAUTH`` / ``-WRONGPASS`` / ``-NOPERM``, which a server with
``requirepass`` or ACL users gives a client that has not logged in. So the check keeps working
when a password is set, without the password. ``-LOADING`` (still reading its data) and
anything else count as not ready. With ``SLUICE_PASSWORD`` (and ``SLUICE_USER``) set it logs in
first and wants ``+PONG``.

Where to knock: the options, else the server that is PID 1 (a container: ``port``, ``bind``
and ``unixsocket`` are read from its command line as sluice-server reads them, config file
included, so ``--port 7000`` or a config file with ``port 7000`` is followed), else
127.0.0.1:6379. A client tool: it imports nothing of the server (the import contracts).
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
from collections.abc import Sequence

from sluice.protocol import split_inline_args

ALIVE = (b"+PONG", b"-NOAUTH", b"-WRONGPASS", b"-NOPERM")


def _resp(*args: str) -> bytes:
    parts = [a.encode() for a in args]
    return b"*%d\r\n" % len(parts) + b"".join(b"$%d\r\n%s\r\n" % (len(p), p) for p in parts)


def server_address(cmdline_path: str = "/proc/1/cmdline") -> tuple[str, int, str]:
    """(host, port, unix socket) of the sluice-server that is PID 1, if it is one."""
    try:
        with open(cmdline_path, "rb") as f:
            argv = [a.decode(errors="surrogateescape") for a in f.read().split(b"\0") if a]
    except OSError:
        return "127.0.0.1", 6379, ""
    at = next((i for i, a in enumerate(argv)
               if os.path.basename(a) == "sluice-server" or a == "sluice.server"), None)
    if at is None:
        return "127.0.0.1", 6379, ""
    found = listening_directives(argv[at + 1:])
    try:
        port = int(found.get("port", ["6379"])[0])
    except ValueError:
        port = 6379
    unixsocket = found.get("unixsocket", [""])[0]
    return _local_host(found.get("bind", ["127.0.0.1"])), port, unixsocket


WANTED = ("port", "bind", "unixsocket")


def listening_directives(args: list[str]) -> dict[str, list[str]]:
    """``port``, ``bind`` and ``unixsocket`` as a sluice-server command line sets them: the
    config file's lines (if the first argument names one), then the ``--name value``
    options; the last word wins. A tool does not import the server: this reads only what
    the check needs, with the server's line syntax (``split_inline_args``)."""
    found: dict[str, list[str]] = {}

    def take(words: list[bytes]) -> None:
        if words and words[0].decode(errors="replace").lower() in WANTED:
            name = words[0].decode().lower()
            found[name] = [w.decode(errors="surrogateescape") for w in words[1:]]

    if args and not args[0].startswith("-"):
        try:
            with open(args[0], "rb") as f:
                for line in f.read().splitlines():
                    take(split_inline_args(line.strip()) or [])
        except OSError:
            pass
        args = args[1:]
    directives: list[list[str]] = []
    awaiting = False  # the last --name has no value yet: the next argument is its value
    for arg in args:
        if not awaiting and arg.startswith("--") and len(arg) > 2:
            directives.append(arg[2:].split())
            awaiting = len(directives[-1]) == 1
        elif directives:
            directives[-1].append(arg)
            awaiting = False
    for words in directives:
        name = words[0].lower()
        if name in WANTED:
            found[name] = [v for w in words[1:] for v in (w.split() if name == "bind" else [w])]
    return found


def _local_host(binds: list[str]) -> str:
    """An address the server listens on, from ``bind`` (``*`` -> 127.0.0.1)."""
    for word in binds:
        host = word.lstrip("-")
        if host in ("*", "0.0.0.0"):
            return "127.0.0.1"
        if host in ("::*", "::"):
            return "::1"
        if host:
            return host
    return "127.0.0.1"


def check(host: str, port: int, unixsocket: str = "", timeout: float = 2.0,
          user: str | None = None, password: str | None = None) -> tuple[bool, str]:
    """(alive, what the server said or why not)."""
    try:
        if port == 0 and unixsocket:
            sock = socket.socket(socket.AF_UNIX)
            sock.settimeout(timeout)
            sock.connect(unixsocket)
        else:
            sock = socket.create_connection((host, port), timeout)
    except OSError as e:
        return False, f"cannot connect: {e}"
    with sock:
        request = b""
        if password:
            request += _resp("AUTH", *([user] if user else []), password)
        request += _resp("PING")
        try:
            sock.sendall(request)
            data = b""
            want = 2 if password else 1
            while data.count(b"\r\n") < want:
                chunk = sock.recv(4096)
                if not chunk:
                    break
                data += chunk
        except OSError as e:
            return False, f"no answer: {e}"
    lines = data.split(b"\r\n")
    if password:
        if lines[0] != b"+OK":
            return False, lines[0].decode(errors="replace")
        return lines[1:2] == [b"+PONG"], (lines[1] if len(lines) > 1 else b"").decode()
    reply = lines[0]
    return reply.startswith(ALIVE), reply.decode(errors="replace")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sluice-healthcheck",
                                     description="Exit 0 if the Sluice server answers PING.")
    parser.add_argument("--host")
    parser.add_argument("--port", type=int)
    parser.add_argument("--unixsocket")
    parser.add_argument("--timeout", type=float, default=2.0)
    parser.add_argument("-q", "--quiet", action="store_true")
    args = parser.parse_args(argv)
    host, port, unixsocket = server_address()
    if args.port is not None or args.unixsocket:
        port, unixsocket = (args.port or 0), (args.unixsocket or "")
    alive, said = check(args.host or host, port, unixsocket, args.timeout,
                        os.environ.get("SLUICE_USER"), os.environ.get("SLUICE_PASSWORD"))
    if not args.quiet:
        print(("alive: " if alive else "not ready: ") + said)
    return 0 if alive else 1


if __name__ == "__main__":
    sys.exit(main())
