"""Memory per hash field: RSS growth of Sluice and redis-server for the same HSETs.

Starts both servers (fresh processes, same run), reads each one's resident set size from
/proc/PID/status, writes the same fields with pipelined HSETs, reads RSS again, and prints the
growth per field and the ratio, for two shapes:

* ``big``: one hash of N fields (``field:<i>`` -> ``value:<i>``), a hashtable in both servers:
  the cost of a field;
* ``small``: N/5 hashes of five fields each (a user record: name, email, age, city, score), a
  listpack in Redis: a field's share of a small hash, the key's own cost included.

    python benchmarks/hash_memory.py [--fields 1000000] [--batch 500] [--shapes big,small]

Not part of the test suite: the numbers go to the README and issue notes. The target is
Sluice <= 4x redis-server's bytes per field.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tests.support import ProcessServer  # noqa: E402


def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def encode(*args: bytes) -> bytes:
    return b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)


def commands(shape: str, fields: int) -> list[bytes]:
    if shape == "big":
        return [encode(b"HSET", b"h", b"field:%d" % i, b"value:%d" % i) for i in range(fields)]
    return [encode(b"HSET", b"user:%d" % i, b"name", b"alice%d" % i, b"email",
                   b"a%d@example.io" % i, b"age", b"%d" % (i % 90), b"city", b"Paris",
                   b"score", b"%d" % i) for i in range(fields // 5)]


def send(port: int, work: list[bytes], batch: int) -> float:
    """Send every command in pipelined batches, reading all replies (integers)."""
    sock = socket.create_connection(("127.0.0.1", port))
    t0 = time.monotonic()
    for start in range(0, len(work), batch):
        chunk = work[start : start + batch]
        sock.sendall(b"".join(chunk))
        got = 0
        while got < len(chunk):
            data = sock.recv(1 << 20)
            if not data or b"-" in data:
                raise RuntimeError(f"error reply or closed: {data[:200]!r}")
            got += data.count(b":")
    sock.close()
    return time.monotonic() - t0


def measure(kind: str, shape: str, work: list[bytes], fields: int, batch: int) -> float:
    server = ProcessServer(kind).start()
    try:
        assert server.proc is not None
        c = server.client()
        c.ping()
        time.sleep(0.5)
        before = rss_bytes(server.proc.pid)
        seconds = send(server.port, work, batch)
        time.sleep(0.5)
        after = rss_bytes(server.proc.pid)
        enc = c.object("encoding", "h" if shape == "big" else "user:0")
        per = (after - before) / fields
        print(f"{shape:<6}{kind:<8} RSS {before / 2**20:7.1f} MiB -> {after / 2**20:7.1f} MiB: "
              f"{per:6.1f} bytes/field ({enc.decode()}, {len(work) / seconds:,.0f} HSET/s "
              f"pipelined)")
        return per
    finally:
        server.stop()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fields", type=int, default=1_000_000)
    ap.add_argument("--batch", type=int, default=500)
    ap.add_argument("--shapes", default="big,small")
    args = ap.parse_args()
    for shape in args.shapes.split(","):
        work = commands(shape, args.fields)
        results = {kind: measure(kind, shape, work, args.fields, args.batch)
                   for kind in ("redis", "sluice")}
        print(f"{shape:<6}ratio sluice/redis: {results['sluice'] / results['redis']:.2f}x "
              f"(target <= 4x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
