"""What keyspace notifications, client-side caching and memory accounting cost the plain
command path: pipelined and unpipelined SET, GET and XADD on a Sluice before and after,
against redis-server, in the same run.

Servers: redis-server; Sluice from ``--baseline`` (a checkout of the code before, e.g.
``git archive main | tar -x -C /tmp/base``); Sluice from this tree; and this tree again with
``notify-keyspace-events KEA`` and a tracking client connected (what the features cost when
they are used, no subscriber listening). Each test runs ``--rounds`` times, the servers
interleaved round by round so machine noise falls on all of them alike; the median is kept.
Pipelined runs compare requests/s, unpipelined ones server CPU per request
(redis-benchmark and the kernel bound the unpipelined rate on a small machine).

    python benchmarks/hotpath_bench.py --baseline /tmp/base [--requests N] [--rounds 5]
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tests.support import ProcessServer, free_port  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")
HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


class Sluice:
    """A Sluice from a given source tree, in a subprocess."""

    def __init__(self, tree: str, extra: list[str]) -> None:
        self.port = free_port()
        env = {**os.environ, "PYTHONPATH": tree}
        self.dir = tempfile.mkdtemp(prefix="sluice-bench-")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "sluice.server", "--port", str(self.port), "--save", "",
             *extra], cwd=self.dir, env=env, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


TESTS = {  # name -> redis-benchmark's arguments
    "set": ["-r", "100000", "-t", "set"],
    "get": ["-r", "100000", "-t", "get"],
    "xadd": ["-r", "100", "XADD", "stream:__rand_int__", "*", "field", "value"],
}


def bench(port: int, pid: int, test: str, requests: int, pipeline: int) -> tuple[float, float]:
    cmd = ["redis-benchmark", "-p", str(port), "-n", str(requests), "-c", "50",
           "-P", str(pipeline), "--csv", *TESTS[test]]
    before = cpu_seconds(pid)
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    used = cpu_seconds(pid) - before
    rows = [r for r in csv.reader(io.StringIO(out)) if r and r[0] != "test"]
    return float(rows[0][1]), used * 1e6 / requests


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", required=True, help="source tree of the Sluice before")
    ap.add_argument("--requests", type=int, default=200_000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    redis_server = ProcessServer("redis").start()
    servers: list[tuple[str, int, int, object]] = []
    assert redis_server.proc is not None
    servers.append(("redis", redis_server.port, redis_server.proc.pid, redis_server))
    for label, tree, extra in (("sluice before", args.baseline, []),
                               ("sluice after", HERE, []),
                               ("after, KEA+tracking", HERE,
                                ["--notify-keyspace-events", "KEA"])):
        s = Sluice(tree, extra)
        servers.append((label, s.port, s.proc.pid, s))
    tracker = socket.create_connection(("127.0.0.1", servers[-1][1]))
    tracker.sendall(b"*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n*3\r\n$6\r\nCLIENT\r\n$8\r\nTRACKING\r\n"
                    b"$2\r\nON\r\n*2\r\n$3\r\nGET\r\n$16\r\nkey:000000000001\r\n")
    results: dict[tuple[str, str, int], list[tuple[float, float]]] = {}
    try:
        for _ in range(args.rounds):
            for test in TESTS:
                for p in (16, 1):
                    for label, port, pid, _s in servers:
                        results.setdefault((label, test, p), []).append(
                            bench(port, pid, test, args.requests, p))
    finally:
        tracker.close()
        for _label, _port, _pid, s in servers:
            s.stop()  # type: ignore[attr-defined]
    print(f"{'test':<5}{'P':>3}  {'server':<22}{'req/s':>10}{'CPU us/req':>12}"
          f"{'rps/Redis':>11}{'CPU/Redis':>11}")
    for test in TESTS:
        for p in (16, 1):
            base_rps = statistics.median(r[0] for r in results["redis", test, p])
            base_cpu = statistics.median(r[1] for r in results["redis", test, p])
            for label, *_ in servers:
                rps = statistics.median(r[0] for r in results[label, test, p])
                cpu = statistics.median(r[1] for r in results[label, test, p])
                print(f"{test:<5}{p:>3}  {label:<22}{rps:>10,.0f}{cpu:>12.2f}"
                      f"{rps / base_rps:>11.2f}{cpu / base_cpu:>11.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
