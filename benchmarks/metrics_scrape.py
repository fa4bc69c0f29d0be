"""Benchmark: what one Prometheus scrape costs the server (not in CI).

    .venv/bin/python benchmarks/metrics_scrape.py [--streams 100] [--groups 10]
        [--pending 1000 10000] [--scrapes 20] [--json benchmarks/results/metrics_scrape.json]

For each ``--pending`` size, in the same run: a Sluice server with ``--metrics-port`` and a
redis-server (the reference), each filled with ``--streams`` streams of ``pending`` entries
and ``--groups`` consumer groups per stream that have read every entry without acknowledging
(so each group's PEL holds ``pending`` entries; ``streams x groups x pending`` in all).

Measured, as server CPU (the process's utime + stime from /proc, around rounds of
``--scrapes`` calls back to back, while nothing else talks to it) and client wall time, per
scrape (the median round):

- Sluice: ``GET /metrics`` (every metric of ``sluice/server/metrics.py``);
- both servers: what redis_exporter sends to collect the same stream metrics
  (``INFO ALL``, then per stream ``XINFO STREAM`` and ``XINFO GROUPS``, and per group
  ``XINFO CONSUMERS``), for comparison in the same run.

The target (issue 23): a scrape of 100 streams x 10 groups x 100k pending entries under 50 ms
of server time. 100k pending per group is 100M PEL entries, about 30 GB as Python objects:
it does not fit these 23 GB machines, so the sizes run show whether the cost depends on the
PEL size at all (it should not: nothing in a scrape walks a PEL).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support import ProcessServer, free_port, require_redis_server  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def fill(r: Any, streams: int, groups: int, pending: int, big: tuple[int, int] = (0, 0)
         ) -> None:
    """``streams`` streams of ``pending`` entries read by ``groups`` groups; the first
    ``big[0]`` streams get ``big[1]`` entries instead."""
    for s in range(streams):
        key = f"stream:{s}"
        pending_here = big[1] if s < big[0] else pending
        with r.pipeline(transaction=False) as p:
            for i in range(pending_here):
                p.xadd(key, {"order": str(i), "amount": "19.99"})
                if len(p) >= 5000:
                    p.execute()
            p.execute()
        for g in range(groups):
            r.xgroup_create(key, f"group:{g}", "0")
            left = pending_here
            while left > 0:
                got = r.xreadgroup(f"group:{g}", "worker", {key: ">"}, count=min(left, 5000))
                left -= sum(len(es) for _, es in got)


def exporter_round(r: Any, streams: int, groups: int) -> None:
    """What redis_exporter sends to collect these stream metrics."""
    r.info("all")
    with r.pipeline(transaction=False) as p:
        for s in range(streams):
            key = f"stream:{s}"
            p.xinfo_stream(key)
            p.xinfo_groups(key)
            for g in range(groups):
                p.xinfo_consumers(key, f"group:{g}")
        p.execute()


def measure(pid: int, fn: Any, n: int, rounds: int = 5) -> dict[str, float]:
    """Server CPU and client wall time per call: ``rounds`` rounds of ``n`` calls back to back
    (/proc counts CPU in 10 ms ticks: a round of many calls makes that resolution fine)."""
    fn()  # warm up (and let the stream directory find every stream)
    fn()
    cpu, wall = [], []
    for _ in range(rounds):
        c0, w0 = cpu_seconds(pid), time.perf_counter()
        for _ in range(n):
            fn()
        wall.append((time.perf_counter() - w0) / n)
        cpu.append((cpu_seconds(pid) - c0) / n)
    return {"server_cpu_ms": round(statistics.median(cpu) * 1000, 2),
            "server_cpu_ms_max": round(max(cpu) * 1000, 2),
            "wall_ms": round(statistics.median(wall) * 1000, 2)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--streams", type=int, default=100)
    ap.add_argument("--groups", type=int, default=10)
    ap.add_argument("--pending", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--scrapes", type=int, default=20)
    ap.add_argument("--big", default="", metavar="N:PENDING",
                    help="also a run where the first N streams' groups hold PENDING each")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    require_redis_server()
    results = []
    configs = [(p, (0, 0)) for p in args.pending]
    if args.big:
        n, big_pending = (int(x) for x in args.big.split(":"))
        configs.append((args.pending[0], (n, big_pending)))
    for pending, big in configs:
        row: dict[str, Any] = {"streams": args.streams, "groups": args.groups,
                               "pending_per_group": pending, "big": list(big),
                               "pel_entries": args.groups * ((args.streams - big[0]) * pending
                                                             + big[0] * big[1])}
        mport = free_port()
        sluice = ProcessServer("sluice", ["--metrics-port", str(mport)]).start()
        try:
            r = sluice.client(socket_timeout=600)
            t0 = time.perf_counter()
            fill(r, args.streams, args.groups, pending, big)
            row["sluice_fill_s"] = round(time.perf_counter() - t0, 1)
            assert sluice.proc is not None
            url = f"http://127.0.0.1:{mport}/metrics"
            body = urllib.request.urlopen(url, timeout=600).read()
            row["scrape_bytes"] = len(body)
            row["scrape_samples"] = sum(1 for line in body.splitlines()
                                        if line and not line.startswith(b"#"))
            row["sluice_scrape"] = measure(
                sluice.proc.pid, lambda u=url: urllib.request.urlopen(u, timeout=600).read(),
                args.scrapes)
            row["sluice_exporter_commands"] = measure(
                sluice.proc.pid, lambda c=r: exporter_round(c, args.streams, args.groups),
                max(3, args.scrapes // 4), rounds=3)
            row["sluice_rss_mb"] = int(r.info("memory")["used_memory"]) // 2**20
        finally:
            sluice.stop()
        ref = ProcessServer("redis").start()
        try:
            r = ref.client(socket_timeout=600)
            fill(r, args.streams, args.groups, pending, big)
            assert ref.proc is not None
            row["redis_exporter_commands"] = measure(
                ref.proc.pid, lambda c=r: exporter_round(c, args.streams, args.groups),
                max(3, args.scrapes // 4), rounds=3)
            row["redis_rss_mb"] = int(r.info("memory")["used_memory_rss"]) // 2**20
        finally:
            ref.stop()
        print(json.dumps(row))
        results.append(row)
    print()
    print("| PEL entries | Sluice GET /metrics: server CPU (median / worst round) | wall | samples "
          "| exporter's commands: Sluice CPU | redis-server CPU |")
    print("|---|---|---|---|---|---|")
    for x in results:
        s, e, rr = x["sluice_scrape"], x["sluice_exporter_commands"], x["redis_exporter_commands"]
        shape = f"{x['streams']} x {x['groups']} x {x['pending_per_group']:,}"
        if x["big"][0]:
            shape = (f"{x['big'][0]} x {x['groups']} x {x['big'][1]:,} + "
                     f"{x['streams'] - x['big'][0]} x {x['groups']} x {x['pending_per_group']:,}")
        print(f"| {x['pel_entries']:,} ({shape}) | {s['server_cpu_ms']} / {s['server_cpu_ms_max']} ms "
              f"| {s['wall_ms']} ms | {x['scrape_samples']} | {e['server_cpu_ms']} ms "
              f"| {rr['server_cpu_ms']} ms |")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({"runs": results}, separators=(",", ":")) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
