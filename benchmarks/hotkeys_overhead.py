"""What HOTKEYS costs the command path, in process (no sockets), CPU time per command:

* SET and GET pipelined (``dispatch.run_batch``, batches of 100, the short path) and one by
  one through ``process_command`` (the full path, where ``call`` makes the one test);
* with no session, with a session running (``METRICS 2 CPU NET``), and with a stopped one
  (GET still holds it: nothing may be paid for it).

With ``--baseline DIR`` (a checkout of the code before HOTKEYS, e.g. ``git archive main |
tar -x -C /tmp/base``) each round also measures the no-session lines under that tree, in a
subprocess, rounds interleaved so machine noise falls on both; the median of the rounds is
printed, and the ratio to the baseline.

    python benchmarks/hotkeys_overhead.py [--baseline /tmp/base] [--rounds 7]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CASES = ("SET pipelined", "GET pipelined", "SET full path", "GET full path")


def measure_all(modes: list[str]) -> dict[str, float]:
    """µs of CPU per command for each case and mode, in this interpreter's tree."""
    from sluice.server.app import Server
    from sluice.server.client import Client
    from sluice.server.dispatch import process_command, run_batch

    server = Server()
    client = Client(server, 1, None)
    server.clients[1] = client
    sets = [[b"SET", b"key:%03d" % (i % 100), b"value"] for i in range(100)]
    gets = [[b"GET", b"key:%03d" % (i % 100)] for i in range(100)]

    def pipelined(batch: list[list[bytes]]) -> None:
        run_batch(server, client, batch)

    def one_by_one(batch: list[list[bytes]]) -> None:
        for argv in batch:
            process_command(server, client, argv)

    def best(fn: object, batch: list[list[bytes]]) -> float:
        times = []
        for _ in range(9):
            start = time.process_time()
            for _ in range(40):
                fn(batch)  # type: ignore[operator]
                client.out.clear()
                server.pending_writes.clear()
            times.append((time.process_time() - start) / (40 * len(batch)) * 1e6)
        return min(times)

    out: dict[str, float] = {}
    for mode in modes:
        if mode == "session":
            process_command(server, client, [b"HOTKEYS", b"START", b"METRICS", b"2", b"CPU",
                                             b"NET"])
        elif mode == "stopped":
            process_command(server, client, [b"HOTKEYS", b"STOP"])
        client.out.clear()
        for name, fn, batch in (("SET pipelined", pipelined, sets),
                                ("GET pipelined", pipelined, gets),
                                ("SET full path", one_by_one, sets),
                                ("GET full path", one_by_one, gets)):
            best(fn, batch)  # warm-up
            out[f"{name}|{mode}"] = best(fn, batch)
    return out


def child(tree: str, modes: list[str]) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": tree}
    code = (f"import sys; sys.path.insert(0, {HERE!r}+'/benchmarks'); import json, "
            f"hotkeys_overhead as h; print(json.dumps(h.measure_all({modes!r})))")
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, check=True, cwd=tree)
    result: dict[str, float] = json.loads(proc.stdout)
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", help="source tree of the Sluice before HOTKEYS")
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    runs: dict[str, list[float]] = {}
    for _ in range(args.rounds):
        trees = [("before", args.baseline, ["none"])] if args.baseline else []
        trees.append(("after", HERE, ["none", "session", "stopped"]))
        for label, tree, modes in trees:
            for key, us in child(tree, modes).items():
                runs.setdefault(f"{key}|{label}", []).append(us)
    print(f"{'case':<16}{'tree':<8}{'session':<9}{'us/cmd':>8}{'vs no session':>15}"
          f"{'vs before':>11}")
    for case in CASES:
        base = statistics.median(runs[f"{case}|none|after"])
        before = runs.get(f"{case}|none|before")
        for label, mode in (("before", "none"), ("after", "none"), ("after", "session"),
                            ("after", "stopped")):
            values = runs.get(f"{case}|{mode}|{label}")
            if not values:
                continue
            us = statistics.median(values)
            vs_before = f"{us / statistics.median(before):>10.3f}x" if before else ""
            print(f"{case:<16}{label:<8}{mode:<9}{us:>8.3f}{us / base:>14.3f}x{vs_before}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
