"""A cache under a memory limit, as a user would run one: Sluice vs redis-server, same run.

Both servers get ``maxmemory 50mb`` and ``maxmemory-policy allkeys-lru``. The workload writes
about 500 MB through them: a stream of cold 1 KB values, each written once and never read
again (a log a cache sees pass by), interleaved with reads of a hot set of keys chosen by a
Zipf distribution (s = 1), cache-aside: a read that misses writes the value back. The same
seeded sequence goes to both servers, in pipelines of 200 commands.

Reported per server: the hot reads' hit ratio, evicted keys, OOM errors (there must be none:
every command is allowed to evict), used_memory at the end, and the process's peak and final
RSS (``VmHWM``/``VmRSS``), to state how far above the limit the process stays (for Sluice,
the Python interpreter's own 30-40 MB come on top of ``used_memory``, which does not count
them). Also the time each server took.

    python benchmarks/eviction_bench.py [--megabytes 500] [--hot 200000] [--value 1024]
        [--maxmemory 50mb] [--json FILE]

Not part of the test suite: the numbers go to docs/performance.md and the README.
"""

from __future__ import annotations

import argparse
import bisect
import itertools
import json
import os
import random
import sys
import time
from typing import Any

import redis

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tests.support import ProcessServer  # noqa: E402

PIPELINE = 200


def zipf_sampler(n: int, s: float, rng: random.Random) -> Any:
    """Ranks 0..n-1 with P(k) proportional to 1/(k+1)**s, by inverse CDF."""
    weights = [1.0 / (k + 1) ** s for k in range(n)]
    cdf = list(itertools.accumulate(weights))
    total = cdf[-1]

    def sample() -> int:
        return bisect.bisect_left(cdf, rng.random() * total)

    return sample


def proc_memory(pid: int) -> tuple[int, int]:
    """(peak RSS, current RSS) of a process, in bytes."""
    peak = rss = 0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                peak = int(line.split()[1]) * 1024
            elif line.startswith("VmRSS:"):
                rss = int(line.split()[1]) * 1024
    return peak, rss


def run(server: ProcessServer, args: argparse.Namespace) -> dict[str, Any]:
    r = redis.Redis(port=server.port)
    assert server.proc is not None
    start_peak, start_rss = proc_memory(server.proc.pid)
    rng = random.Random(2026)
    hot = zipf_sampler(args.hot, 1.0, rng)
    value = b"v" * args.value
    writes = hits = reads = ooms = 0
    written = 0
    cold = 0
    target = args.megabytes * 1024 * 1024
    started = time.perf_counter()
    while written < target:
        pipe = r.pipeline(transaction=False)
        ranks = []
        for _ in range(PIPELINE // 2):
            pipe.set(b"cold:%d" % cold, value)
            cold += 1
            rank = hot()
            ranks.append(rank)
            pipe.get(b"hot:%d" % rank)
        results = pipe.execute(raise_on_error=False)
        written += len(value) * (PIPELINE // 2)
        writes += PIPELINE // 2
        fill = r.pipeline(transaction=False)
        for i, rank in enumerate(ranks):
            got = results[2 * i + 1]
            reads += 1
            if isinstance(results[2 * i], Exception):
                ooms += 1
            if got is not None and not isinstance(got, Exception):
                hits += 1
            else:
                fill.set(b"hot:%d" % rank, value)  # cache-aside: the miss is filled
        if len(fill):
            for res in fill.execute(raise_on_error=False):
                writes += 1
                written += len(value)
                if isinstance(res, Exception):
                    ooms += 1
    elapsed = time.perf_counter() - started
    info = r.info()
    peak, rss = proc_memory(server.proc.pid)
    r.close()
    return {
        "server": server.kind, "hit_ratio": hits / reads, "reads": reads, "writes": writes,
        "megabytes_written": written / 2**20, "oom_errors": ooms,
        "evicted_keys": info["evicted_keys"], "keys": info.get("db0", {}).get("keys", 0),
        "used_memory": info["used_memory"], "rss_start": start_rss, "rss_peak": peak,
        "rss_end": rss, "maxmemory": info["maxmemory"], "seconds": elapsed,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--megabytes", type=int, default=500)
    ap.add_argument("--hot", type=int, default=200_000)
    ap.add_argument("--value", type=int, default=1024)
    ap.add_argument("--maxmemory", default="50mb")
    ap.add_argument("--json")
    args = ap.parse_args()
    config = ["--maxmemory", args.maxmemory, "--maxmemory-policy", "allkeys-lru"]
    results = []
    for kind in ("redis", "sluice"):
        server = ProcessServer(kind, config).start()
        try:
            results.append(run(server, args))
        finally:
            server.stop()
        res = results[-1]
        mb = 2**20
        print(f"{kind:7s} hit ratio {100 * res['hit_ratio']:5.1f}%  evicted {res['evicted_keys']:7d}  "
              f"OOM errors {res['oom_errors']}  keys {res['keys']:6d}  "
              f"used_memory {res['used_memory'] / mb:5.1f} MB  RSS start "
              f"{res['rss_start'] / mb:5.1f} peak {res['rss_peak'] / mb:5.1f} end "
              f"{res['rss_end'] / mb:5.1f} MB  {res['megabytes_written']:.0f} MB written "
              f"in {res['seconds']:.1f} s", flush=True)
    redis_hit, sluice_hit = (r["hit_ratio"] for r in results)
    print(f"hit ratio difference: {100 * (redis_hit - sluice_hit):+.1f} points (Redis - Sluice)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"when": time.strftime("%Y-%m-%d %H:%M"), "args": vars(args),
                       "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
