"""Draw the pictures of docs/performance.md and docs/pipeline.md from the benchmarks' JSON.

    python benchmarks/plot.py [--results benchmarks/results] [--out docs/img]

Reads ``redis_benchmark.json`` (``benchmarks/redis_benchmark.py --json``) and
``stream_latency.json`` (``benchmarks/stream_latency.py --json``) and writes:

- ``stream-latency-cdf.png``: the consumer-group latency CDF of every run, Sluice against
  redis-server, with the 2 ms line of our target;
- ``ratios.png``: Sluice / redis-server, per command, as bars: requests per second when
  pipelined (higher is better) and server CPU per request unpipelined (lower is better);
- ``pipeline.png``: the data pipeline (streams -> Spark -> Parquet, archive then XTRIM),
  drawn from a description, not from measurements;
- ``poison-pel.png`` (docs/streams.md): the PEL of a group where 1% of the messages always
  fail, with and without a dead-letter policy (``benchmarks/poison_pel.py --json``).

It also prints the two tables of docs/performance.md (Markdown) for the run.
``make bench`` runs both benchmarks, then this. Needs matplotlib (``pip install
'sluice[bench]'``). A missing results file skips its picture with a note.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SLUICE, REDIS = "#1f77b4", "#d62728"
# No timestamp or version in the files: the same data draws the same bytes.
META = {"Software": None}


def _load(path: Path) -> dict[str, Any] | None:
    if not path.exists():
        print(f"{path} not found: skipped (run the benchmark with --json {path})")
        return None
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def _ms_axis(ax: Any) -> None:
    ax.set_xscale("log")
    ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.grid(True, which="both", alpha=0.25)
    ax.axvline(2.0, color="grey", ls="--", lw=1)


def latency_cdf(data: dict[str, Any], out: Path) -> None:
    fig, (whole, tail) = plt.subplots(1, 2, figsize=(10, 4.6),
                                      gridspec_kw={"width_ratios": [3, 2]})
    seen: set[str] = set()
    for run in data["runs"]:
        kind = run["server"]
        points = run.get("cdf") or []
        if not points:
            continue
        color = SLUICE if kind == "sluice" else REDIS
        label = ("Sluice" if kind == "sluice" else "redis-server") if kind not in seen else None
        seen.add(kind)
        whole.plot([max(m, 0.01) for _, m in points], [p for p, _ in points], color=color,
                   alpha=0.7, lw=1.3, label=label)
        last = [(p, m) for p, m in points if p >= 99]
        tail.plot([max(m, 0.01) for _, m in last], [p for p, _ in last], color=color,
                  alpha=0.7, lw=1.3, marker=".", ms=3)
    for ax in (whole, tail):
        _ms_axis(ax)
        ax.set_xlabel("latency (ms, log scale)")
    whole.set_ylim(0, 100.5)
    whole.set_ylabel("messages delivered within (%)")
    whole.text(2.1, 2, "2 ms", color="grey")
    whole.legend(loc="upper left")
    whole.set_title("XADD to XREADGROUP, every message", fontsize=10)
    tail.set_ylim(99, 100.02)
    tail.set_title("the slowest 1%", fontsize=10)
    n = {k: sum(1 for r in data["runs"] if r["server"] == k) for k in seen}
    loads = [r["load_avg_1m"] for r in data["runs"]] or [0.0]
    fig.suptitle(f"Consumer-group latency at {data['rate']:,} messages/s, "
                 f"{data['consumers']} consumers: {n.get('sluice', 0)} runs of Sluice and "
                 f"{n.get('redis', 0)} of {data.get('reference', 'redis-server')}, "
                 f"{data['duration_s']:.0f} s each,\ninterleaved on one shared "
                 f"{data.get('cpus', 2)}-core VM, load average {min(loads):.1f}-{max(loads):.1f}"
                 " during the runs (other work on the machine: see docs/performance.md)",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=110, metadata=META)
    plt.close(fig)


def ratios(data: dict[str, Any], out: Path) -> None:
    results = data["results"]
    base = {(r["test"], r["pipeline"]): r for r in results if r["server"] == "redis"}
    loops = sorted({r["server"] for r in results if r["server"] != "redis"}, reverse=True)
    tests = list(dict.fromkeys(r["test"] for r in results))
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(9, 6.4), sharex=True)
    width = 0.8 / max(len(loops), 1)
    colors = {loop: c for loop, c in zip(loops, (SLUICE, "#9ecae1", "#6baed6"), strict=False)}
    for i, loop in enumerate(loops):
        mine = {(r["test"], r["pipeline"]): r for r in results if r["server"] == loop}
        xs = [t + (i - (len(loops) - 1) / 2) * width for t in range(len(tests))]
        rps = [mine[(t, 16)]["rps"] / base[(t, 16)]["rps"] if (t, 16) in mine else 0
               for t in tests]
        cpu = [mine[(t, 1)]["cpu_us"] / base[(t, 1)]["cpu_us"]
               if (t, 1) in mine and base[(t, 1)]["cpu_us"] else 0 for t in tests]
        label = loop.replace("sluice[", "Sluice, ").rstrip("]")
        top.bar(xs, rps, width, color=colors[loop], label=label)
        bottom.bar(xs, cpu, width, color=colors[loop], label=label)
        for x, v in zip(xs, rps, strict=True):
            top.text(x, v + 0.01, f"{v:.2f}", ha="center", fontsize=7)
        for x, v in zip(xs, cpu, strict=True):
            bottom.text(x, v + 0.04, f"{v:.1f}", ha="center", fontsize=7)
    top.axhline(1.0, color=REDIS, lw=1)
    top.text(-0.45, 1.02, "redis-server = 1", color=REDIS, fontsize=8)
    top.set_ylabel("requests/s, Sluice / Redis\n(pipelined, -P 16; higher is better)")
    top.set_ylim(0, 1.15)
    bottom.axhline(1.0, color=REDIS, lw=1)
    bottom.set_ylim(0, max(2.0, bottom.get_ylim()[1]) * 1.1)
    bottom.set_ylabel("server CPU per request,\nSluice / Redis (unpipelined;\nlower is better)")
    bottom.set_xticks(range(len(tests)), tests, rotation=15)
    top.legend(loc="upper right", fontsize=8, ncols=len(loops))
    load = data.get("load_avg_1m", ["?"])
    top.set_title(f"redis-benchmark, {data['clients']} clients, {data['requests']:,} requests "
                  f"per test, against {data.get('reference', 'redis-server')} in the same run\n"
                  f"{data['cpus']}-core shared VM, load average {load[0]:.1f} at the start",
                  fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=110, metadata=META)
    plt.close(fig)


def _box(ax: Any, x: float, y: float, w: float, h: float, text: str, color: str) -> None:
    ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.02,rounding_size=0.08",
                                fc=color, ec="#333333", lw=1.2))
    ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=9)


def _arrow(ax: Any, a: tuple[float, float], b: tuple[float, float], text: str = "",
           rad: float = 0.0, dy: float = 0.12) -> None:
    ax.add_patch(FancyArrowPatch(a, b, arrowstyle="-|>", mutation_scale=14, lw=1.3,
                                 color="#333333", connectionstyle=f"arc3,rad={rad}"))
    if text:
        ax.text((a[0] + b[0]) / 2, (a[1] + b[1]) / 2 + dy, text, ha="center", fontsize=8,
                color="#333333")


def pipeline(out: Path) -> None:
    fig, ax = plt.subplots(figsize=(10, 4.6))
    ax.set_xlim(0, 10)
    ax.set_ylim(0, 4.6)
    ax.axis("off")
    _box(ax, 0.2, 2.9, 1.6, 0.9, "producers\n(apps, XADD)", "#f2f2f2")
    _box(ax, 2.6, 2.6, 2.0, 1.5, "Sluice\nstreams\norders, clicks ...", "#c6dbef")
    _box(ax, 5.5, 2.6, 1.9, 1.5, "Spark\nformat(\"sluice\")\nbatch / streaming", "#fdd0a2")
    _box(ax, 8.2, 2.6, 1.6, 1.5, "Parquet\nstream=/date=", "#c7e9c0")
    _box(ax, 2.6, 0.3, 2.0, 1.2, "consumer groups\nXREADGROUP / XACK", "#f2f2f2")
    _box(ax, 5.5, 0.3, 1.9, 1.2, "sluice-archive\nverify, manifest", "#fdd0a2")
    _arrow(ax, (1.8, 3.35), (2.6, 3.35), "XADD")
    _arrow(ax, (4.6, 3.5), (5.5, 3.5), "XRANGE slices")
    _arrow(ax, (5.5, 3.05), (4.6, 3.05), "sink: XADD (IDMP)", dy=-0.25)
    _arrow(ax, (7.4, 3.35), (8.2, 3.35), "exactly once")
    _arrow(ax, (3.6, 2.6), (3.6, 1.5), "")
    _arrow(ax, (8.6, 2.6), (7.4, 1.15), "1. rows older\nthan the cut-off", rad=-0.2, dy=-0.55)
    _arrow(ax, (5.5, 0.9), (4.6, 2.65), "2. then XTRIM MINID", rad=-0.25, dy=-0.1)
    ax.text(5, 4.45, "Streams into Spark and back: checkpointed offsets {stream: id}, "
            "archive first, trim only after the manifest commits", ha="center", fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=110, metadata=META)
    plt.close(fig)


def ratio_table(data: dict[str, Any]) -> str:
    """The README's and docs/performance.md's table, in Markdown."""
    results = data["results"]
    base = {(r["test"], r["pipeline"]): r for r in results if r["server"] == "redis"}
    mine = {(r["test"], r["pipeline"], r["server"]): r for r in results}
    rows = ["| command | req/s -P 16, Redis | Sluice / Redis (uvloop; asyncio) "
            "| CPU µs/req -P 1, Redis | Sluice / Redis (uvloop; asyncio) |",
            "|---|---|---|---|---|"]
    for test in dict.fromkeys(r["test"] for r in results):
        b16, b1 = base.get((test, 16)), base.get((test, 1))
        if not b16 or not b1:
            continue
        rps = "; ".join(f"{mine[(test, 16, s)]['rps'] / b16['rps']:.2f}"
                        for s in ("sluice[uvloop]", "sluice[asyncio]") if (test, 16, s) in mine)
        cpu = "; ".join(f"{mine[(test, 1, s)]['cpu_us'] / b1['cpu_us']:.2f}"
                        for s in ("sluice[uvloop]", "sluice[asyncio]") if (test, 1, s) in mine)
        rows.append(f"| {test} | {b16['rps']:,.0f} | {rps} | {b1['cpu_us']:.1f} | {cpu} |")
    return "\n".join(rows)


def latency_table(data: dict[str, Any]) -> str:
    rows = ["| run | server | p50 | p99 | p99.9 | within 2 ms | server CPU / message | "
            "producer behind | load | steal |", "|---|---|---|---|---|---|---|---|---|---|"]
    for i, r in enumerate(data["runs"], 1):
        rows.append(
            f"| {i} | {'Sluice' if r['server'] == 'sluice' else 'redis-server'} "
            f"| {r['p50_ms']:.2f} ms | {r['p99_ms']:.2f} ms | {r['p99_9_ms']:.1f} ms "
            f"| {r['within_2ms']:.2f}% | {r['server_cpu_us_per_msg']:.0f} µs "
            f"| {r['producer_worst_lag_ms']:.0f} ms | {r['load_avg_1m']:.1f} "
            f"| {r['steal_share']:.1%} |")
    return "\n".join(rows)


def poison_pel(data: dict[str, Any], out: Path) -> None:
    fig, (pel_ax, dead_ax) = plt.subplots(1, 2, figsize=(10, 4.2))
    styles = {("redis", False): (REDIS, "-", "redis-server 8.6.3 (no policy exists)"),
              ("sluice", False): (SLUICE, "--", "Sluice, no policy"),
              ("sluice", True): ("#2ca02c", "-",
                                 f"Sluice, MAXDELIVERIES {data['max_deliveries']}")}
    for run in data["runs"]:
        color, ls, label = styles[run["server"], run["policy"]]
        points = run["points"]
        xs = list(range(1, len(points) + 1))
        pel_ax.plot(xs, [p[1] for p in points], color=color, ls=ls, lw=1.6, label=label)
        if run["policy"]:
            dead_ax.plot(xs, [p[2] for p in points], color=color, lw=1.6,
                         label="dead letters (Sluice, policy)")
            dead_ax.plot(xs, [min(p[0], run["messages"]) // data["poison_every"]
                              for p in points], color="grey", ls=":", lw=1.2,
                         label="poison messages produced")
    pel_ax.set_title("pending entries (PEL) of the group")
    dead_ax.set_title("dead-letter stream")
    for ax in (pel_ax, dead_ax):
        ax.set_xlabel("round (100 new messages per round, then draining)")
        ax.grid(True, alpha=0.25)
        ax.legend(loc="upper left", fontsize=8)
    pel_ax.set_ylabel("entries")
    fig.tight_layout()
    fig.savefig(out, dpi=110, metadata=META)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", default=str(ROOT / "benchmarks" / "results"))
    ap.add_argument("--out", default=str(ROOT / "docs" / "img"))
    args = ap.parse_args(argv)
    results, out = Path(args.results), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    latency = _load(results / "stream_latency.json")
    if latency:
        latency_cdf(latency, out / "stream-latency-cdf.png")
        print(latency_table(latency), end="\n\n")
    bench = _load(results / "redis_benchmark.json")
    if bench:
        ratios(bench, out / "ratios.png")
        print(ratio_table(bench), end="\n\n")
    pipeline(out / "pipeline.png")
    poison = _load(results / "poison_pel.json")
    if poison:
        poison_pel(poison, out / "poison-pel.png")
    print(f"pictures in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
