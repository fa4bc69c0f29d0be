"""Bitmaps, HyperLogLog, GEO and SORT: Sluice vs redis-server, in the same run.

redis-benchmark (Debian redis-tools) sends each command to both servers, interleaved test
by test so machine noise hits both alike; every test starts from the same data, loaded
before it by a setup step. Prints requests/s, the server's CPU microseconds per request
(from /proc/PID/stat) and the ratios Sluice / Redis.

    python benchmarks/types_bench.py [--runs 3] [--tests pfadd,pfcount,...] [--loop uvloop]

Tests:
  pfadd          PFADD hll <random of 100k> -P 16 (a dense HLL after the first thousands)
  pfcount        PFCOUNT hll -P 16 on a dense HLL (the cached count, refreshed after PFADD)
  pfcount3       PFCOUNT of three dense HLLs (the union: merged and counted on each call)
  setbit         SETBIT bm 4194303 1 -P 16 on a 1 MB bitmap (in place: no copy of the 1 MB)
  bitcount       BITCOUNT of a 1 MB string (10 clients, unpipelined)
  geosearch      GEOSEARCH FROMLONLAT BYRADIUS 50 km over 100k members, COUNT 10 ASC
  sort           SORT of a list of 1000 numbers, LIMIT 0 10

Not part of the test suite: numbers go to the README and issue notes.
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import random
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import redis  # noqa: E402

from tests.support import ProcessServer  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def _fill_hll(r: redis.Redis, key: str, n: int, seed: int) -> None:
    rnd = random.Random(seed)
    pipe = r.pipeline(transaction=False)
    for _ in range(0, n, 1000):
        pipe.pfadd(key, *(rnd.randrange(10**9) for _j in range(1000)))
    pipe.execute()


def setup_hll(r: redis.Redis) -> None:
    r.delete("hll")
    _fill_hll(r, "hll", 20_000, 1)
    r.pfcount("hll")


def setup_hll3(r: redis.Redis) -> None:
    for i, key in enumerate(("h1", "h2", "h3")):
        r.delete(key)
        _fill_hll(r, key, 20_000, 10 + i)


def setup_bitmap(r: redis.Redis) -> None:
    r.set("bm", random.Random(2).randbytes(1 << 20))


def setup_geo(r: redis.Redis) -> None:
    rnd = random.Random(3)
    r.delete("geo")
    pipe = r.pipeline(transaction=False)
    for i in range(0, 100_000, 1000):
        args: list[object] = []
        for j in range(i, i + 1000):
            args += [rnd.uniform(-10, 30), rnd.uniform(35, 60), f"m{j}"]
        pipe.execute_command("GEOADD", "geo", *args)
    pipe.execute()


def setup_sort(r: redis.Redis) -> None:
    rnd = random.Random(4)
    r.delete("list")
    r.rpush("list", *(rnd.randrange(10**6) for _ in range(1000)))


@dataclass
class Test:
    setup: Callable[[redis.Redis], None] | None
    argv: list[str]
    pipeline: int
    requests: int
    clients: int
    random_range: int = 0


TESTS: dict[str, Test] = {
    "pfadd": Test(setup_hll, ["PFADD", "hll", "__rand_int__"], 16, 300_000, 50, 100_000),
    "pfcount": Test(setup_hll, ["PFCOUNT", "hll"], 16, 300_000, 50),
    "pfcount3": Test(setup_hll3, ["PFCOUNT", "h1", "h2", "h3"], 1, 3_000, 10),
    # redis-benchmark's random numbers are zero-padded, which no bit offset may be.
    "setbit": Test(setup_bitmap, ["SETBIT", "bm", "4194303", "1"], 16, 300_000, 50),
    "bitcount": Test(setup_bitmap, ["BITCOUNT", "bm"], 1, 2_000, 10),
    "geosearch": Test(setup_geo, ["GEOSEARCH", "geo", "FROMLONLAT", "10", "47", "BYRADIUS",
                                  "50", "km", "COUNT", "10", "ASC"], 1, 5_000, 10),
    "sort": Test(setup_sort, ["SORT", "list", "LIMIT", "0", "10"], 1, 10_000, 10),
}


@dataclass
class Result:
    server: str
    test: str
    rps: float
    cpu_us: float


def run_one(server: ProcessServer, label: str, name: str, test: Test) -> Result:
    assert server.proc is not None
    if test.setup is not None:
        test.setup(server.client())
    cmd = ["redis-benchmark", "-p", str(server.port), "-n", str(test.requests),
           "-c", str(test.clients), "-P", str(test.pipeline), "--csv"]
    if test.random_range:
        cmd += ["-r", str(test.random_range)]
    cmd += test.argv
    before = cpu_seconds(server.proc.pid)
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    used = cpu_seconds(server.proc.pid) - before
    rows = [r for r in csv.reader(io.StringIO(out)) if r and r[0] != "test"]
    return Result(label, name, float(rows[0][1]), used * 1e6 / test.requests)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tests", default=",".join(TESTS))
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--loop", default="uvloop")
    args = ap.parse_args()
    if not shutil.which("redis-benchmark"):
        print("redis-benchmark not found (apt-get install redis-tools)", file=sys.stderr)
        return 1
    os.environ["SLUICE_LOOP"] = args.loop
    servers = [("redis", ProcessServer("redis").start()),
               (f"sluice[{args.loop}]", ProcessServer("sluice").start())]
    results: list[Result] = []
    try:
        for name in args.tests.split(","):
            for _ in range(args.runs):
                for label, s in servers:
                    results.append(run_one(s, label, name, TESTS[name]))
                    time.sleep(0.2)
    finally:
        for _, s in servers:
            s.stop()
    print(f"{'test':<11}{'P':>3}  {'server':<16}{'req/s':>12}{'CPU us/req':>12}"
          f"{'rps ratio':>11}{'CPU ratio':>11}")
    last_redis: Result | None = None
    for r in results:
        if r.server == "redis":
            last_redis = r
        assert last_redis is not None
        p = TESTS[r.test].pipeline
        cpu_ratio = r.cpu_us / last_redis.cpu_us if last_redis.cpu_us else 0.0
        print(f"{r.test:<11}{p:>3}  {r.server:<16}{r.rps:>12,.0f}{r.cpu_us:>12.2f}"
              f"{r.rps / last_redis.rps:>11.2f}{cpu_ratio:>11.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
