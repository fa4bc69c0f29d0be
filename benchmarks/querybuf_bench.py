"""The read path: what reading into query buffers (protocol/querybuf.py) costs and saves,
on a Sluice before and after and on redis-server, in the same run.

Tests (redis-benchmark, ``-c 50``), each ``--rounds`` times with the servers interleaved
round by round, the median kept:

- ``get`` unpipelined and ``-P 16``: the path every small request takes;
- ``set-1k -P 100``: a pipeline of 1 KB values, whose reads end inside requests;
- ``set-100k`` and ``set-1m``: one big argument per request (100 KB, 1 MB values), which
  the new path reads in place into a buffer made for it.

Printed per test: requests/s and server CPU microseconds per request (every thread's schedstat), and both
as ratios to redis-server's. Unpipelined rates are bound by redis-benchmark and the kernel
on a small machine: CPU per request is the measure of the server's own work there.

    python benchmarks/querybuf_bench.py --baseline /tmp/base [--rounds 5]

(``--baseline``: a source tree of the Sluice before, e.g. ``git archive main | tar -x -C
/tmp/base``.) Not part of the test suite; the numbers go to README and issue notes.
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from hotpath_bench import HERE, Sluice  # noqa: E402
from set_benchmark import cpu_ns_all  # noqa: E402

from tests.support import ProcessServer  # noqa: E402

# name -> (pipeline, requests, redis-benchmark arguments)
TESTS: dict[str, tuple[int, int, list[str]]] = {
    "get": (1, 100_000, ["-r", "100000", "-t", "get"]),
    "get -P16": (16, 200_000, ["-r", "100000", "-t", "get"]),
    "set-1k -P100": (100, 100_000, ["-r", "100000", "-d", "1000", "-t", "set"]),
    "set-100k": (1, 4_000, ["-r", "1000", "-d", "100000", "-t", "set"]),
    "set-1m": (1, 400, ["-r", "100", "-d", "1000000", "-t", "set"]),
}


def bench(port: int, pid: int, test: str) -> tuple[float, float]:
    pipeline, requests, extra = TESTS[test]
    cmd = ["redis-benchmark", "-p", str(port), "-n", str(requests), "-c", "50",
           "-P", str(pipeline), "--csv", *extra]
    before = cpu_ns_all(pid)
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    used = (cpu_ns_all(pid) - before) / 1e9
    rows = [r for r in csv.reader(io.StringIO(out)) if r and r[0] != "test"]
    return float(rows[0][1]), used * 1e6 / requests


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", required=True, help="source tree of the Sluice before")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--tests", default=",".join(TESTS), help="comma-separated test names")
    args = ap.parse_args()
    tests = [t for t in args.tests.split(",") if t]
    redis_server = ProcessServer("redis").start()
    assert redis_server.proc is not None
    servers: list[tuple[str, int, int, object]] = [
        ("redis", redis_server.port, redis_server.proc.pid, redis_server)]
    for label, tree in (("sluice before", args.baseline), ("sluice after", HERE)):
        s = Sluice(tree, [])
        servers.append((label, s.port, s.proc.pid, s))
    results: dict[tuple[str, str], list[tuple[float, float]]] = {}
    try:
        for i in range(args.rounds):
            for test in tests:
                order = servers if i % 2 == 0 else servers[::-1]
                for label, port, pid, _s in order:
                    results.setdefault((label, test), []).append(bench(port, pid, test))
    finally:
        for _label, _port, _pid, s in servers:
            s.stop()  # type: ignore[attr-defined]
    print(f"{'test':<14}{'server':<16}{'req/s':>10}{'CPU us/req':>12}"
          f"{'rps/Redis':>11}{'CPU/Redis':>11}")
    for test in tests:
        base_rps = statistics.median(r[0] for r in results["redis", test])
        base_cpu = statistics.median(r[1] for r in results["redis", test])
        for label, *_ in servers:
            rps = statistics.median(r[0] for r in results[label, test])
            cpu = statistics.median(r[1] for r in results[label, test])
            print(f"{test:<14}{label:<16}{rps:>10,.0f}{cpu:>12.1f}"
                  f"{rps / base_rps:>11.2f}{cpu / base_cpu:>11.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
