"""Sets and sorted sets: Sluice vs redis-server in the same run.

Three measurements, each on both servers (fresh processes, started together):

1. redis-benchmark, interleaved test by test: SADD, SISMEMBER, ZADD, ZRANGE 0 9, unpipelined
   and with ``-P 16``, members drawn from 100,000 (``-r``). Unpipelined runs are compared by
   the server's CPU microseconds per request (/proc/PID/stat), pipelined ones by requests/s.
2. Scaling: a sorted set is filled to 10k, 100k and 1M members; at each size, ZADDs giving
   random members new scores (a removal and an insertion each) and ZRANKs of random members
   are sent pipelined and timed by the server's CPU per operation (its main thread's
   /proc/PID/schedstat). O(log N) shows as a slowly rising cost, O(N) as a tenfold one.
3. Memory: RSS growth per member of a 1M-member set (``member:N``, a hash table) and a
   1M-member sorted set (the same members, fractional scores: a skiplist), each in fresh
   server processes.

    python benchmarks/set_benchmark.py [--requests 200000] [--clients 50] [--skip-scaling]
        [--skip-memory] [--members 1000000]

Not part of the test suite; the numbers go to the README and issue notes. Targets: pipelined
at least 0.3x Redis's rate, unpipelined at most 2x its CPU per request, at most 4x its
memory per member.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from redis_benchmark import cpu_seconds  # noqa: E402
from stream_memory import rss_bytes  # noqa: E402

from tests.support import ProcessServer  # noqa: E402

TESTS: list[tuple[str, list[str]]] = [
    ("SADD", ["SADD", "myset", "element:__rand_int__"]),
    ("SISMEMBER", ["SISMEMBER", "myset", "element:__rand_int__"]),
    ("ZADD", ["ZADD", "myzset", "__rand_int__", "element:__rand_int__"]),
    ("ZRANGE 0 9", ["ZRANGE", "myzset", "0", "9"]),
]


def encode(*args: bytes) -> bytes:
    return b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)


def send(port: int, commands: list[bytes], batch: int = 500) -> None:
    """Send pre-encoded commands in pipelined batches; read one reply line-head per command
    (every reply here is an integer, a bulk or a double: one ``\\r\\n``-ended head each,
    bulk bodies counted by their own line)."""
    sock = socket.create_connection(("127.0.0.1", port))
    reader = _Replies(sock)
    for i in range(0, len(commands), batch):
        chunk = commands[i:i + batch]
        sock.sendall(b"".join(chunk))
        reader.skip(len(chunk))
    sock.close()


class _Replies:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = b""

    def _line(self) -> bytes:
        while b"\r\n" not in self.buf:
            data = self.sock.recv(1 << 20)
            if not data:
                raise ConnectionError("closed")
            self.buf += data
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def skip(self, n: int) -> None:
        for _ in range(n):
            head = self._line()
            if head[:1] == b"-":
                raise RuntimeError(head.decode())
            if head[:1] == b"$" and head != b"$-1":
                self._line()


def redis_benchmark(servers: list[tuple[str, ProcessServer]], requests: int, clients: int
                    ) -> None:
    import subprocess

    print(f"{'test':<12}{'P':>3}  {'server':<8}{'req/s':>12}{'CPU us/req':>12}"
          f"{'rps ratio':>11}{'CPU ratio':>11}")
    for name, argv in TESTS:
        for pipeline in (1, 16):
            base: tuple[float, float] | None = None
            for label, s in servers:
                assert s.proc is not None
                cmd = ["redis-benchmark", "-p", str(s.port), "-n", str(requests), "-c",
                       str(clients), "-P", str(pipeline), "-r", "100000", "--csv", *argv]
                before = cpu_seconds(s.proc.pid)
                out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
                used = cpu_seconds(s.proc.pid) - before
                rps = float(out.strip().splitlines()[-1].split(",")[1].strip('"'))
                cpu = used * 1e6 / requests
                if base is None:
                    base = (rps, cpu)
                print(f"{name:<12}{pipeline:>3}  {label:<8}{rps:>12,.0f}{cpu:>12.2f}"
                      f"{rps / base[0]:>11.2f}{cpu / base[1] if base[1] else 0:>11.2f}")
                time.sleep(0.2)


def cpu_ns(pid: int) -> int:
    """CPU time of the process's main thread, in ns (/proc/PID/schedstat): fine enough for
    batches that take Redis a few milliseconds, where clock ticks are not."""
    with open(f"/proc/{pid}/schedstat") as f:
        return int(f.read().split()[0])


def scaling(servers: list[tuple[str, ProcessServer]], sizes: list[int], ops: int) -> None:
    rng = random.Random(7)
    print(f"\n{'size':>10}  {'server':<8}{'ZADD us/op':>12}{'ZRANK us/op':>13}")
    filled = {label: 0 for label, _ in servers}
    for size in sizes:
        for label, s in servers:
            assert s.proc is not None
            fill = [encode(b"ZADD", b"big", b"%d" % i, b"member:%d" % i)
                    for i in range(filled[label], size)]
            send(s.port, fill)
            filled[label] = size
            # ZADD moves a random member to a new score (remove + insert: the size stays)
            adds = [encode(b"ZADD", b"big", b"%d" % rng.randrange(10 * size),
                           b"member:%d" % rng.randrange(size)) for _ in range(ops)]
            ranks = [encode(b"ZRANK", b"big", b"member:%d" % rng.randrange(size))
                     for _ in range(ops)]
            before = cpu_ns(s.proc.pid)
            send(s.port, adds)
            mid = cpu_ns(s.proc.pid)
            send(s.port, ranks)
            after = cpu_ns(s.proc.pid)
            print(f"{size:>10,}  {label:<8}{(mid - before) / 1e3 / ops:>12.2f}"
                  f"{(after - mid) / 1e3 / ops:>13.2f}")


def memory(members: int) -> None:
    """RSS growth per member, each value type in fresh server processes."""
    sadds = [encode(b"SADD", b"mset", *[b"member:%d" % i for i in range(j, j + 100)])
             for j in range(0, members, 100)]
    zadds = [encode(b"ZADD", b"mzset", *[x for i in range(j, j + 100)
                                         for x in (b"%.3f" % (i / 7), b"member:%d" % i)])
             for j in range(0, members, 100)]
    print(f"\n{'value':<8}{'server':<8}{'bytes/member':>14}{'ratio':>8}")
    for name, work in (("set", sadds), ("zset", zadds)):
        base = None
        for kind in ("redis", "sluice"):
            s = ProcessServer(kind).start()
            try:
                assert s.proc is not None
                s.client().ping()
                time.sleep(0.5)
                before = rss_bytes(s.proc.pid)
                send(s.port, work, batch=50)
                time.sleep(0.5)
                after = rss_bytes(s.proc.pid)
            finally:
                s.stop()
            per = (after - before) / members
            base = base or per
            print(f"{name:<8}{kind:<8}{per:>14.1f}{per / base:>8.2f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", type=int, default=200_000)
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--members", type=int, default=1_000_000)
    ap.add_argument("--ops", type=int, default=50_000)
    ap.add_argument("--skip-benchmark", action="store_true")
    ap.add_argument("--skip-scaling", action="store_true")
    ap.add_argument("--skip-memory", action="store_true")
    args = ap.parse_args()
    if not args.skip_benchmark and not shutil.which("redis-benchmark"):
        print("redis-benchmark not found (apt-get install redis-tools)", file=sys.stderr)
        return 1
    if not args.skip_benchmark or not args.skip_scaling:
        servers = [("redis", ProcessServer("redis").start()),
                   ("sluice", ProcessServer("sluice").start())]
        try:
            if not args.skip_benchmark:
                redis_benchmark(servers, args.requests, args.clients)
            if not args.skip_scaling:
                scaling(servers, [10_000, 100_000, 1_000_000], args.ops)
        finally:
            for _, s in servers:
                s.stop()
    if not args.skip_memory:
        memory(args.members)
    return 0


if __name__ == "__main__":
    sys.exit(main())
