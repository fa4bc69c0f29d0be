"""Memory per stream entry: RSS growth of Sluice and redis-server for the same XADDs.

Starts both servers (fresh processes, same run), reads each one's resident set size from
/proc/PID/status, appends N entries of three fields (a sensor reading: sensor-id,
temperature, ts) with ``XADD s * ...`` in pipelined batches, reads RSS again, and prints the
growth per entry and the ratio. Values vary per entry, as real readings do; IDs are
auto-generated, so consecutive entries share a millisecond and delta-encode as in Redis.

    python benchmarks/stream_memory.py [--entries 1000000] [--batch 200]

Not part of the test suite: the numbers go to the README and issue notes. The target is
Sluice <= 4x redis-server's bytes per entry.
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


def batches(entries: int, batch: int) -> list[tuple[bytes, int]]:
    """Pre-encoded pipelines of XADDs (built once, sent to both servers)."""
    out = []
    for start in range(0, entries, batch):
        n = min(batch, entries - start)
        out.append((b"".join(
            encode(b"XADD", b"s", b"*", b"sensor-id", b"%d" % (i % 1000),
                   b"temperature", b"%.1f" % (15 + (i % 200) / 10), b"ts",
                   b"%d" % (1_700_000_000_000 + i))
            for i in range(start, start + n)), n))
    return out


def send(port: int, work: list[tuple[bytes, int]]) -> float:
    """Send every batch and read all replies; returns the seconds it took."""
    sock = socket.create_connection(("127.0.0.1", port))
    t0 = time.monotonic()
    for data, n in work:
        sock.sendall(data)
        got = 0
        while got < n:  # one "$<len>\r\n<id>\r\n" reply per XADD: count the "$"
            chunk = sock.recv(1 << 20)
            if not chunk or b"-ERR" in chunk or b"-WRONGTYPE" in chunk:
                raise RuntimeError(f"error reply or closed: {chunk[:200]!r}")
            got += chunk.count(b"$")
    sock.close()
    return time.monotonic() - t0


def measure(label: str, server: ProcessServer, work: list[tuple[bytes, int]],
            entries: int) -> float:
    assert server.proc is not None
    c = server.client()
    c.ping()
    time.sleep(0.5)
    before = rss_bytes(server.proc.pid)
    seconds = send(server.port, work)
    assert c.xlen("s") == entries, c.xlen("s")
    time.sleep(0.5)
    after = rss_bytes(server.proc.pid)
    per = (after - before) / entries
    print(f"{label:<8} RSS {before / 2**20:7.1f} MiB -> {after / 2**20:7.1f} MiB: "
          f"{per:6.1f} bytes/entry  ({entries / seconds:,.0f} XADD/s pipelined)")
    return per


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--entries", type=int, default=1_000_000)
    ap.add_argument("--batch", type=int, default=200)
    args = ap.parse_args()
    work = batches(args.entries, args.batch)
    results = {}
    for kind in ("redis", "sluice"):
        server = ProcessServer(kind).start()
        try:
            results[kind] = measure(kind, server, work, args.entries)
        finally:
            server.stop()
    print(f"ratio sluice/redis: {results['sluice'] / results['redis']:.2f}x (target <= 4x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
