"""Sets, sorted sets and hashes: Sluice vs redis-server in the same run.

Three measurements, each on both servers (fresh processes, started together):

1. redis-benchmark, test by test, each test ``--runs`` times on both servers interleaved
   run by run (the order reversed every other run): GET (the request path every command
   shares, for comparison), SADD, SISMEMBER, ZADD, ZRANGE 0 9 (with and without
   WITHSCORES), HSET, HGET, unpipelined and with ``-P 16``. The reads read a 100k-member
   set, sorted set (fractional scores: a skiplist) and hash loaded once, half of the
   members asked for present; each write run starts from an emptied key and draws from
   1M members. Every run reads the server's CPU time (all its threads' schedstat, in ns)
   before and after: CPU microseconds per request, and requests/s. Printed: the medians,
   and the median and range of the per-run ratios Sluice / Redis (each run's Sluice to the
   same run's Redis). On a small shared machine the pipelined rates are largely the
   benchmark client's and the load's: the CPU ratio is the steadier measure of the
   server's own work, the rate ratio what the targets name. ``--before DIR`` adds the
   Sluice of another checkout, interleaved too: a change measured in one run.
2. Scaling: a sorted set is filled to 10k, 100k and 1M members; at each size, ZADDs giving
   random members new scores (a removal and an insertion each) and ZRANKs of random members
   are sent pipelined and timed by the server's CPU per operation (its main thread's
   /proc/PID/schedstat). O(log N) shows as a slowly rising cost, O(N) as a tenfold one.
3. Memory: RSS growth per member of a 1M-member set (``member:N``, a hash table) and a
   1M-member sorted set (the same members, fractional scores: a skiplist), each in fresh
   server processes. (Hashes: ``hash_memory.py``.)

    python benchmarks/set_benchmark.py [--runs 5] [--requests 100000] [--clients 50]
        [--tests GET,ZADD,...] [--before DIR] [--skip-benchmark] [--skip-scaling]
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
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from stream_memory import rss_bytes  # noqa: E402

from tests.support import ProcessServer  # noqa: E402

# One row per test: the name, the command (redis-benchmark's ``__rand_int__`` is a 12-digit
# zero-padded number below ``-r``), the ``-r`` range, and the key the test writes (deleted
# before every run, so each run starts from the same state) or None for a read of a key
# loaded once by ``load_data``. GET is the shared request path's cost, for comparison.
TESTS: list[tuple[str, list[str], int, str | None]] = [
    ("GET", ["GET", "str"], 0, None),
    ("SADD", ["SADD", "set:w", "element:__rand_int__"], 1_000_000, "set:w"),
    ("SISMEMBER", ["SISMEMBER", "set", "element:__rand_int__"], 200_000, None),
    ("ZADD", ["ZADD", "zset:w", "__rand_int__", "element:__rand_int__"], 1_000_000, "zset:w"),
    ("ZRANGE 0 9", ["ZRANGE", "zset", "0", "9"], 0, None),
    ("ZRANGE WS", ["ZRANGE", "zset", "0", "9", "WITHSCORES"], 0, None),
    ("HSET", ["HSET", "hash:w", "field:__rand_int__", "value:__rand_int__"], 1_000_000,
     "hash:w"),
    ("HGET", ["HGET", "hash", "field:__rand_int__"], 200_000, None),
]
DATA_MEMBERS = 100_000  # the read tests' set, sorted set and hash (half of ``-r``: hits+misses)


def load_data(port: int) -> None:
    """The keys the read tests read: a 100k-member set, sorted set (fractional scores, as a
    skiplist) and hash (a hashtable), with redis-benchmark's member names."""
    work = [encode(b"SET", b"str", b"x" * 16)]
    for j in range(0, DATA_MEMBERS, 100):
        ids = range(j, j + 100)
        work.append(encode(b"SADD", b"set", *[b"element:%012d" % i for i in ids]))
        work.append(encode(b"ZADD", b"zset", *[x for i in ids
                                               for x in (b"%r" % (i / 7), b"element:%012d" % i)]))
        work.append(encode(b"HSET", b"hash", *[x for i in ids
                                               for x in (b"field:%012d" % i, b"value:%d" % i)]))
    send(port, work, batch=50)


def cpu_ns_all(pid: int) -> int:
    """CPU time of all the process's threads, in ns (/proc/PID/task/*/schedstat): exact
    where /proc/PID/stat counts 10 ms ticks."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except FileNotFoundError:  # a thread that ended meanwhile
            pass
    return total


def _median(xs: list[float]) -> float:
    return statistics.median(xs)


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


def run_benchmark(s: ProcessServer, argv: list[str], rand: int, key: str | None,
                  requests: int, clients: int, pipeline: int) -> tuple[float, float]:
    """One redis-benchmark run: (requests/s, the server's CPU microseconds per request)."""
    assert s.proc is not None
    if key is not None:
        send(s.port, [encode(b"DEL", key.encode())])
    cmd = ["redis-benchmark", "-p", str(s.port), "-n", str(requests), "-c", str(clients),
           "-P", str(pipeline), "--csv"]
    if rand:
        cmd += ["-r", str(rand)]
    before = cpu_ns_all(s.proc.pid)
    out = subprocess.run(cmd + argv, capture_output=True, text=True, check=True).stdout
    used = cpu_ns_all(s.proc.pid) - before
    rps = float(out.strip().splitlines()[-1].split(",")[1].strip('"'))
    return rps, used / 1e3 / requests


def redis_benchmark(servers: list[tuple[str, ProcessServer]], tests: list[str], runs: int,
                    requests: int, clients: int) -> None:
    """Each test ``runs`` times on every server, interleaved run by run (the order reverses
    every other run), so load from other work falls on all alike. For each Sluice (the
    first server is Redis): the medians of its requests/s and CPU per request, and of the
    per-run ratios to Redis's (the run's Sluice / the same run's Redis), with their range.
    Pipelined rates on two cores are largely the benchmark client's and the machine's: the
    CPU ratio is the steadier measure of the server's own work."""
    for _label, s in servers:
        load_data(s.port)
    redis_label = servers[0][0]
    print(f"{'test':<12}{'P':>3}  {'server':<10}{'req/s':>10}{'CPU us':>8}   "
          f"{'rps ratio (min-max)':<22}{'CPU ratio (min-max)'}")
    for name, argv, rand, key in TESTS:
        if name not in tests:
            continue
        for pipeline in (1, 16):
            n = requests if pipeline == 1 else requests * 3
            rows: dict[str, list[tuple[float, float]]] = {label: [] for label, _ in servers}
            for run in range(runs):
                order = servers if run % 2 == 0 else servers[::-1]
                for label, s in order:
                    rows[label].append(run_benchmark(s, argv, rand, key, n, clients, pipeline))
                    time.sleep(0.1)
            base = rows[redis_label]
            for label, _ in servers:
                q = rows[label]
                line = (f"{name:<12}{pipeline:>3}  {label:<10}{_median([b[0] for b in q]):>10,.0f}"
                        f"{_median([b[1] for b in q]):>8.2f}")
                if label != redis_label:
                    rps = [b[0] / a[0] for a, b in zip(base, q, strict=True)]
                    cpu = [b[1] / a[1] for a, b in zip(base, q, strict=True)]
                    line += (f"   {_median(rps):.2f} ({min(rps):.2f}-{max(rps):.2f}){'':<9}"
                             f"{_median(cpu):.2f} ({min(cpu):.2f}-{max(cpu):.2f})")
                print(line, flush=True)


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
    ap.add_argument("--requests", type=int, default=100_000,
                    help="per unpipelined run (three times as many with -P 16)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--tests", default=",".join(t[0] for t in TESTS),
                    help="comma-separated test names (default: all)")
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--members", type=int, default=1_000_000)
    ap.add_argument("--ops", type=int, default=50_000)
    ap.add_argument("--before", metavar="DIR",
                    help="also run the Sluice of the checkout in DIR (as \"before\"), "
                         "interleaved with the others: a change measured in one run")
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
        if args.before:  # the same server from another checkout, for before/after
            path = os.environ.get("PYTHONPATH")
            os.environ["PYTHONPATH"] = os.path.abspath(args.before)
            try:
                servers.append(("before", ProcessServer("sluice").start()))
            finally:
                if path is None:
                    del os.environ["PYTHONPATH"]
                else:
                    os.environ["PYTHONPATH"] = path
        try:
            if not args.skip_benchmark:
                redis_benchmark(servers, args.tests.split(","), args.runs, args.requests,
                                args.clients)
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
