"""Persistence costs: XADD throughput per fsync policy, and the stall of a background rewrite.

1. XADD with ``appendfsync always | everysec | no``, 50 clients (redis-benchmark), Sluice and
   redis-server with the same settings in the same run, interleaved policy by policy. Each
   server runs in a fresh temp dir with ``appendonly yes``. Prints requests/s, the ratio, and
   the number of fsyncs per second Sluice did (its group commit: one fsync per loop
   iteration, whatever the number of clients).
2. Rewrite stall: load N small keys (default 1,000,000) into Sluice, then run BGREWRITEAOF
   while a client sends PING in a loop and records the longest round trip; the same on
   redis-server. The stall a client sees is the fork (page tables) plus the loop's pause.

    python benchmarks/persistence_bench.py [--requests N] [--keys N] [--skip-stall]

Not part of the test suite: numbers go to docs/persistence.md and the issue note.
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tests.support import ProcessServer  # noqa: E402

XADD = ["XADD", "s", "*", "sensor-id", "1234", "temperature", "19.8", "ts", "1700000000000"]


def bench(server: ProcessServer, requests: int, clients: int) -> float:
    cmd = ["redis-benchmark", "-p", str(server.port), "-n", str(requests), "-c", str(clients),
           "--csv", *XADD]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=900).stdout
    rows = list(csv.reader(io.StringIO(out)))
    return float(rows[-1][1])


def start(kind: str, policy: str, tmp: str) -> ProcessServer:
    args = ["--appendonly", "yes", "--appendfsync", policy, "--dir", tmp,
            "--auto-aof-rewrite-percentage", "0"]
    return ProcessServer(kind, args, cwd=tmp).start()


def throughput(requests: int, clients: int) -> None:
    print(f"XADD, {clients} clients, {requests} requests per run")
    print(f"{'policy':10} {'sluice rps':>12} {'redis rps':>12} {'redis/sluice':>13}")
    for policy in ("always", "everysec", "no"):
        rps = {}
        for kind in ("redis", "sluice"):
            tmp = tempfile.mkdtemp(prefix=f"bench-{kind}-")
            server = start(kind, policy, tmp)
            try:
                rps[kind] = bench(server, requests, clients)
            finally:
                server.stop()
                shutil.rmtree(tmp, ignore_errors=True)
        print(f"{policy:10} {rps['sluice']:12.0f} {rps['redis']:12.0f} "
              f"{rps['redis'] / rps['sluice']:13.2f}", flush=True)


def stall(kind: str, keys: int, stream: bool = False) -> tuple[float, float, float]:
    """(load seconds, rewrite seconds, longest PING round trip in ms during the rewrite)."""
    tmp = tempfile.mkdtemp(prefix=f"stall-{kind}-")
    server = start(kind, "everysec", tmp)
    try:
        r = server.client(socket_timeout=120)
        t0 = time.monotonic()
        batch = 10_000
        for base in range(0, keys, batch):
            with r.pipeline(transaction=False) as p:
                for i in range(base, min(keys, base + batch)):
                    if stream:
                        p.xadd("s", {"sensor": i % 97, "temperature": "19.8"})
                    else:
                        p.set(f"key:{i}", f"value:{i}")
                p.execute()
        load = time.monotonic() - t0
        worst = 0.0
        done = threading.Event()
        probe = server.client(socket_timeout=120)

        def ping() -> None:
            nonlocal worst
            while not done.is_set():
                t = time.perf_counter()
                probe.ping()
                worst = max(worst, time.perf_counter() - t)

        th = threading.Thread(target=ping)
        th.start()
        before = r.info("persistence").get("aof_rewrites", 0)
        t1 = time.monotonic()
        r.bgrewriteaof()
        while True:
            info = r.info("persistence")
            if not info["aof_rewrite_in_progress"] and info.get("aof_rewrites", 0) > before:
                break
            if not info["aof_rewrite_in_progress"] and info["aof_last_bgrewrite_status"] == "err":
                break
            time.sleep(0.05)  # polling the state we wait for, not synchronising on time
        rewrite = time.monotonic() - t1
        done.set()
        th.join()
        return load, rewrite, worst * 1000
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=100_000)
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--keys", type=int, default=1_000_000)
    ap.add_argument("--skip-stall", action="store_true")
    ap.add_argument("--skip-throughput", action="store_true")
    ap.add_argument("--stream", action="store_true", help="stall test with N stream entries")
    a = ap.parse_args()
    if not a.skip_throughput:
        throughput(a.requests, a.clients)
    if not a.skip_stall:
        what = "stream entries" if a.stream else "keys"
        print(f"\nBGREWRITEAOF with {a.keys} {what}; longest PING round trip during the rewrite")
        for kind in ("redis", "sluice"):
            load, rewrite, worst = stall(kind, a.keys, a.stream)
            print(f"{kind:7} load {load:6.1f}s  rewrite {rewrite:6.1f}s  "
                  f"longest ping {worst:7.1f} ms", flush=True)


if __name__ == "__main__":
    main()
