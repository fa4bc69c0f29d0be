"""Throughput and server CPU per request: Sluice vs redis-server, in the same run.

Runs redis-benchmark (Debian redis-tools) against both servers, interleaved test by test so
machine noise hits both alike, and reads each server's CPU time from /proc/PID/stat before
and after every test. Unpipelined requests/s on a small machine is bound by the benchmark
client and the kernel, so compare those by server CPU microseconds per request; compare
pipelined runs by requests/s.

    python benchmarks/redis_benchmark.py [--requests N] [--clients C] [--loops asyncio,uvloop]
        [--tests ping,set,get] [--stream] [--hash] [--pipelines 1,16] [--json FILE]

Not part of the test suite: numbers go to docs/performance.md. ``--json`` writes the results
(and the machine's load) for ``benchmarks/plot.py``, which draws the ratio bars there.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import io
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tests.support import ProcessServer  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")

STREAM_TESTS = {
    "XADD": ["XADD", "s", "*", "sensor-id", "1234", "temperature", "19.8", "ts", "1700000000000"],
    "XRANGE": ["XRANGE", "s", "-", "+", "COUNT", "10"],
    "XLEN": ["XLEN", "s"],
}
# One hash of up to 100,000 fields (a hashtable), written and read at random fields.
HASH_TESTS = {
    "HSET": ["-r", "100000", "HSET", "h", "field:__rand_int__", "value:__rand_int__"],
    "HGET": ["-r", "100000", "HGET", "h", "field:__rand_int__"],
}


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


@dataclass
class Result:
    server: str
    test: str
    pipeline: int
    rps: float
    cpu_us: float


def run_one(server: ProcessServer, label: str, test: str, custom: list[str] | None,
            requests: int, clients: int, pipeline: int) -> Result:
    assert server.proc is not None
    cmd = ["redis-benchmark", "-p", str(server.port), "-n", str(requests), "-c", str(clients),
           "-P", str(pipeline), "--csv"]
    cmd += custom if custom else ["-t", test]
    before = cpu_seconds(server.proc.pid)
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    used = cpu_seconds(server.proc.pid) - before
    rows = [r for r in csv.reader(io.StringIO(out)) if r and r[0] != "test"]
    name = test if custom else rows[0][0]
    rps = float(rows[0][1])
    return Result(label, name, pipeline, rps, used * 1e6 / requests)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", type=int, default=200_000)
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--loops", default="uvloop,asyncio")
    ap.add_argument("--tests", default="ping_inline,ping_mbulk,set,get")
    ap.add_argument("--stream", action="store_true", help="also XADD, XRANGE, XLEN")
    ap.add_argument("--hash", action="store_true",
                    help="also HSET and HGET on a hash of up to 100k fields")
    ap.add_argument("--pipelines", default="1,16")
    ap.add_argument("--json", help="write the results to this file (for benchmarks/plot.py)")
    args = ap.parse_args()
    if not shutil.which("redis-benchmark"):
        print("redis-benchmark not found (apt-get install redis-tools)", file=sys.stderr)
        return 1
    servers: list[tuple[str, ProcessServer]] = [("redis", ProcessServer("redis").start())]
    for loop in args.loops.split(","):
        os.environ["SLUICE_LOOP"] = loop  # read by the child at start-up
        servers.append((f"sluice[{loop}]", ProcessServer("sluice").start()))
    tests: list[tuple[str, list[str] | None]] = [(t, None) for t in args.tests.split(",") if t]
    if args.stream:
        tests += [(name, argv) for name, argv in STREAM_TESTS.items()]
    if args.hash:
        tests += [(name, argv) for name, argv in HASH_TESTS.items()]
    results: list[Result] = []
    load_before = os.getloadavg()[0]
    try:
        for test, custom in tests:
            for p in (int(x) for x in args.pipelines.split(",")):
                for label, s in servers:
                    if custom and test in STREAM_TESTS and test != "XADD":
                        s.client().execute_command(*STREAM_TESTS["XADD"])  # some entries first
                    results.append(run_one(s, label, test, custom, args.requests, args.clients, p))
                    time.sleep(0.2)
    finally:
        for _, s in servers:
            s.stop()
    base = {(r.test, r.pipeline): r for r in results if r.server == "redis"}
    print(f"{'test':<14}{'P':>3}  {'server':<16}{'req/s':>12}{'CPU us/req':>12}{'rps ratio':>11}{'CPU ratio':>11}")
    for r in results:
        b = base[(r.test, r.pipeline)]
        print(f"{r.test:<14}{r.pipeline:>3}  {r.server:<16}{r.rps:>12,.0f}{r.cpu_us:>12.2f}"
              f"{r.rps / b.rps:>11.2f}{r.cpu_us / b.cpu_us if b.cpu_us else 0:>11.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({
                "benchmark": "redis_benchmark",
                "when": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                "requests": args.requests, "clients": args.clients,
                "cpus": os.cpu_count(), "load_avg_1m": [load_before, os.getloadavg()[0]],
                "reference": "redis-server " + _version(),
                "results": [asdict(r) for r in results],
            }, f, indent=1)
            f.write("\n")
    return 0


def _version() -> str:
    """The reference's version, from its --version line (``v=8.6.3``)."""
    from tests.support import REDIS_SERVER

    out = subprocess.run([REDIS_SERVER, "--version"], capture_output=True, text=True).stdout
    return next((w[2:] for w in out.split() if w.startswith("v=")), "?")


if __name__ == "__main__":
    sys.exit(main())
