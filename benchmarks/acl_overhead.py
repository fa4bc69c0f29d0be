"""What the ACL check costs per command, in process (no sockets): dispatch of ``GET k`` with

* no restricted user (``server.acl`` is None: the check is skipped),
* a restricted user defined, the client's own user unrestricted (one set lookup),
* a client whose user may run everything on ``k*`` (the key pattern is matched),
* a client whose user may run only GET, on every key (the command set is consulted),
* a client with two selectors, the first one failing (a key search per selector).

Usage: ``python benchmarks/acl_overhead.py [iterations]``. Prints microseconds per command
and the difference from the first line.
"""

from __future__ import annotations

import sys
import time

from sluice.server.app import Server
from sluice.server.client import Client
from sluice.server.dispatch import process_command


def run(server: Server, client: Client, n: int) -> float:
    """The best of several timed runs (the machine is shared: minimum, not mean)."""
    argv = [b"GET", b"k1"]
    best = float("inf")
    for _ in range(15):
        start = time.perf_counter()
        for _ in range(n):
            process_command(server, client, argv)
            if len(client.out) > 1 << 16:
                client.out.clear()
                server.pending_writes.clear()
        best = min(best, (time.perf_counter() - start) / n * 1e6)
    client.out.clear()
    server.pending_writes.clear()
    return best


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    server = Server()
    client = Client(server, 1, None)
    server.clients[1] = client
    run(server, client, n)  # warm-up
    results = [("no restricted user (acl hook off)", run(server, client, n))]
    mgr = server.acl_manager
    mgr.setuser(b"keys", [b"on", b"nopass", b"+@all", b"~k*"])
    mgr.setuser(b"cmds", [b"on", b"nopass", b"-@all", b"+get", b"~*"])
    mgr.setuser(b"sels", [b"on", b"nopass", b"-@all", b"+get", b"~x*", b"(+get ~k*)"])
    results.append(("restricted users exist, client unrestricted", run(server, client, n)))
    for name, label in ((b"keys", "user +@all ~k* (key pattern)"),
                        (b"cmds", "user -@all +get ~* (command set)"),
                        (b"sels", "two selectors, the second allows")):
        assert mgr.auth_client(client, name, b"")
        results.append((label, run(server, client, n)))
    base = results[0][1]
    for label, us in results:
        print(f"{label:46s} {us:6.3f} us/cmd  (+{us - base:5.3f})")


if __name__ == "__main__":
    main()
