"""Benchmark: a consumer group where 1% of the messages always fail, with and without a
dead-letter policy (not in CI).

    .venv/bin/python benchmarks/poison_pel.py [--messages 20000] [--poison-every 100]
        [--max-deliveries 3] [--json benchmarks/results/poison_pel.json]

Three runs, in the same run, each on a fresh server on a free port: redis-server (the
reference, 8.6.3: no dead-letter policy exists there), Sluice without a policy, and Sluice
with ``SLUICE.XPOLICY DEADLETTER jobs workers jobs:dead MAXDELIVERIES <n>``.

Each round the producer adds 100 messages (one pipeline; message ``i`` is poison when
``i % poison_every == 0``), and one consumer runs ``XREADGROUP GROUP workers c CLAIM 0
STREAMS jobs >``: every pending message is delivered again (CLAIM with min-idle 0), then the
new ones. It acknowledges the good ones and never the poison. After production stops the
consumer goes on until its PEL is empty or stops changing. Recorded per round: messages
produced, PEL size (``XPENDING`` summary), dead letters, deliveries.

Checked at the end: with the policy, every poison message is in ``jobs:dead`` exactly once
(by ``origin-id``) and the PEL is empty; without it, every poison message is still pending.
Printed as a table and, with ``--json``, written for ``benchmarks/plot.py``
(``docs/img/poison-pel.png``, shown in docs/streams.md).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support import ProcessServer, require_redis_server  # noqa: E402

BATCH = 100


def run(kind: str, policy: bool, messages: int, poison_every: int,
        max_deliveries: int) -> dict[str, Any]:
    server = ProcessServer(kind).start()
    try:
        r = server.client(socket_timeout=60)
        r.xgroup_create("jobs", "workers", "$", mkstream=True)
        if policy:
            r.execute_command("SLUICE.XPOLICY", "DEADLETTER", "jobs", "workers", "jobs:dead",
                              "MAXDELIVERIES", max_deliveries)
        produced = deliveries = 0
        poison: set[bytes] = set()
        points: list[tuple[int, int, int]] = []  # (produced, pel, dead letters)
        started = time.perf_counter()
        last_pel = -1
        idle_rounds = 0
        while True:
            if produced < messages:
                with r.pipeline(transaction=False) as p:
                    for i in range(produced, produced + BATCH):
                        p.xadd("jobs", {"i": str(i), "poison": str(int(i % poison_every == 0))})
                    ids = p.execute()
                for i, sid in zip(range(produced, produced + BATCH), ids, strict=True):
                    if i % poison_every == 0:
                        poison.add(sid)
                produced += BATCH
            got = r.execute_command("XREADGROUP", "GROUP", "workers", "c", "CLAIM", "0",
                                    "STREAMS", "jobs", ">")
            good = []
            for _, es in (got or []):
                for e in es:
                    deliveries += 1
                    if e[0] not in poison:
                        good.append(e[0])
            if good:
                r.xack("jobs", "workers", *good)
            pel = int(r.xpending("jobs", "workers")["pending"])
            dead = r.xlen("jobs:dead")
            points.append((produced, pel, dead))
            if produced >= messages:
                idle_rounds = idle_rounds + 1 if pel == last_pel else 0
                if pel == 0 or idle_rounds >= 3 * max_deliveries:
                    break
            last_pel = pel
        elapsed = time.perf_counter() - started
        dead_ids = [f[b"origin-id"] for _, f in r.xrange("jobs:dead")]
        pending = {p["message_id"] for p in r.xpending_range("jobs", "workers", "-", "+",
                                                              10**6)}
        return {
            "server": kind, "policy": policy, "messages": produced, "poison": len(poison),
            "rounds": len(points), "deliveries": deliveries, "seconds": round(elapsed, 3),
            "max_pel": max(p for _, p, _ in points), "final_pel": points[-1][1],
            "dead_letters": len(dead_ids), "dead_unique": len(set(dead_ids)),
            "dead_are_poison": set(dead_ids) == poison if policy else None,
            "poison_pending": len(poison & pending),
            "points": points,
        }
    finally:
        server.stop()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--messages", type=int, default=20_000)
    ap.add_argument("--poison-every", type=int, default=100)
    ap.add_argument("--max-deliveries", type=int, default=3)
    ap.add_argument("--json", help="write the results here (for benchmarks/plot.py)")
    args = ap.parse_args(argv)
    require_redis_server()
    runs = [run("redis", False, args.messages, args.poison_every, args.max_deliveries),
            run("sluice", False, args.messages, args.poison_every, args.max_deliveries),
            run("sluice", True, args.messages, args.poison_every, args.max_deliveries)]
    print("| server | dead-letter policy | messages | poison | rounds | deliveries | max PEL "
          "| final PEL | dead letters (unique) | poison still pending | seconds |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for x in runs:
        policy = f"MAXDELIVERIES {args.max_deliveries}" if x["policy"] else "none"
        print(f"| {'Sluice' if x['server'] == 'sluice' else 'redis-server'} | {policy} "
              f"| {x['messages']} | {x['poison']} | {x['rounds']} | {x['deliveries']} "
              f"| {x['max_pel']} | {x['final_pel']} | {x['dead_letters']} "
              f"({x['dead_unique']}) | {x['poison_pending']} | {x['seconds']} |")
    with_policy = runs[2]
    ok = (with_policy["dead_are_poison"] and with_policy["dead_letters"] ==
          with_policy["dead_unique"] == with_policy["poison"] and with_policy["final_pel"] == 0
          and all(x["poison_pending"] == x["poison"] for x in runs[:2]))
    print("every poison message dead-lettered exactly once, PEL drained:", ok)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({"max_deliveries": args.max_deliveries,
                                               "poison_every": args.poison_every,
                                               "runs": runs}, separators=(",", ":")) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
