"""EVALSHA of a 3-call script (GET, INCR, PEXPIRE) against Sluice and redis-server, same run.

Both servers are started once and measured in interleaved rounds (the order alternates), so
a neighbour's burst on this shared machine hits both alike; each round gives one ratio per
measure, and the report is the median ratio with its spread (min-max) over the rounds.

* Pipelined: requests/s with pipelines of ``--depth`` requests on one connection (target:
  at least 0.25x Redis's rate), and the server's CPU time per request in that phase. The
  rate moves with the neighbours (the client competes for the same two cores); the CPU
  time much less, and the rate ratio is about the inverse of the CPU ratio while the server
  is the bottleneck, so both are printed.
* Unpipelined: one request at a time; the server's CPU time per call (target: at most 3x
  Redis's), since the client and the kernel bound the rate.

CPU time is read from ``/proc/<pid>/task/*/schedstat`` (nanoseconds on CPU, every thread of
the server), not from ``/proc/<pid>/stat``'s clock ticks, which are 10 ms coarse. Run by
hand, with ``PYTHONPATH`` the absolute path of the tree to measure (the servers start in
temporary directories): ``python benchmarks/evalsha_bench.py [--rounds 9]``.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import hiredis  # noqa: E402

from tests.support import ProcessServer  # noqa: E402

SCRIPT = (b"local v = redis.call('GET', KEYS[1]) "
          b"local n = redis.call('INCR', KEYS[2]) "
          b"redis.call('PEXPIRE', KEYS[2], 60000) return n")


def _cmd(*args: bytes) -> bytes:
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


def cpu_ns(pid: int) -> int:
    """Nanoseconds the process's threads have run on a CPU (schedstat's first field)."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            pass  # a thread that ended meanwhile
    return total


def _replies(sock: socket.socket, reader: hiredis.Reader, n: int) -> object:
    got = 0
    reply: object = None
    while got < n:
        reply = reader.gets()
        if reply is False:
            reader.feed(sock.recv(1 << 20))
            continue
        if isinstance(reply, hiredis.ReplyError):
            raise RuntimeError(reply)
        got += 1
    return reply


class Target:
    """One server and a connection to it with the script loaded."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.server = ProcessServer(kind, []).start()
        assert self.server.proc is not None
        self.pid = self.server.proc.pid
        self.sock = socket.create_connection(("127.0.0.1", self.server.port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.reader = hiredis.Reader()
        self.sock.sendall(_cmd(b"SCRIPT", b"LOAD", SCRIPT))
        sha = _replies(self.sock, self.reader, 1)
        if not isinstance(sha, bytes):
            raise RuntimeError(f"SCRIPT LOAD: {sha!r}")
        self.call = _cmd(b"EVALSHA", sha, b"2", b"k:get", b"k:counter")

    def pipelined(self, requests: int, depth: int) -> tuple[float, float]:
        """(requests/s, server CPU µs per request)."""
        batch = self.call * depth
        rounds = requests // depth
        cpu0 = cpu_ns(self.pid)
        start = time.perf_counter()
        for _ in range(rounds):
            self.sock.sendall(batch)
            _replies(self.sock, self.reader, depth)
        elapsed = time.perf_counter() - start
        done = rounds * depth
        return done / elapsed, (cpu_ns(self.pid) - cpu0) / done / 1000

    def unpipelined(self, requests: int) -> float:
        """Server CPU µs per request, one request at a time."""
        cpu0 = cpu_ns(self.pid)
        for _ in range(requests):
            self.sock.sendall(self.call)
            _replies(self.sock, self.reader, 1)
        return (cpu_ns(self.pid) - cpu0) / requests / 1000

    def close(self) -> None:
        self.sock.close()
        self.server.stop()


def _spread(values: list[float]) -> str:
    return (f"median {statistics.median(values):.2f}x "
            f"(min {min(values):.2f}, max {max(values):.2f})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--requests", type=int, default=50_000, help="pipelined, per round")
    ap.add_argument("--unpipelined", type=int, default=5_000, help="per round")
    ap.add_argument("--depth", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=9)
    args = ap.parse_args()
    targets = {kind: Target(kind) for kind in ("sluice", "redis")}
    rate_x, pcpu_x, ucpu_x = [], [], []
    try:
        for t in targets.values():  # warm-up: caches, the allocator, Python's specialisation
            t.pipelined(args.requests // 5, args.depth)
            t.unpipelined(args.unpipelined // 5)
        for rnd in range(args.rounds):
            order = ("sluice", "redis") if rnd % 2 == 0 else ("redis", "sluice")
            res: dict[str, tuple[float, float, float]] = {}
            for kind in order:
                t = targets[kind]
                rate, pcpu = t.pipelined(args.requests, args.depth)
                res[kind] = (rate, pcpu, t.unpipelined(args.unpipelined))
            s, r = res["sluice"], res["redis"]
            rate_x.append(s[0] / r[0])
            pcpu_x.append(r[1] / s[1])
            ucpu_x.append(s[2] / r[2])
            print(f"round {rnd + 1}: pipelined sluice {s[0]:,.0f}/s redis {r[0]:,.0f}/s "
                  f"({rate_x[-1]:.2f}x), CPU/call sluice {s[1]:.1f} us redis {r[1]:.2f} us "
                  f"({pcpu_x[-1]:.2f}x); unpipelined CPU/call sluice {s[2]:.1f} us "
                  f"redis {r[2]:.1f} us ({ucpu_x[-1]:.2f}x)", flush=True)
    finally:
        for t in targets.values():
            t.close()
    print(f"pipelined rate, Sluice/Redis:              {_spread(rate_x)}  (target >= 0.25x)")
    print(f"pipelined CPU per call, Redis/Sluice:      {_spread(pcpu_x)}")
    print(f"unpipelined CPU per call, Sluice/Redis:    {_spread(ucpu_x)}  (target <= 3x)")


if __name__ == "__main__":
    main()
