"""Benchmark: the consumer-group latency test of the Redis streams introduction (not in CI).

    .venv/bin/python benchmarks/stream_latency.py [--duration 10] [--rate 10000]
        [--consumers 10] [--servers redis,sluice] [--no-pin] [--client redis-py]

For each server, in the same run: a fresh server process on a free port (redis-server with
``--save "" --appendonly no``; Sluice with ``python -m sluice.server``), one producer process
adding ``--rate`` messages per second to one stream for ``--duration`` seconds, each message
carrying its send time (``time.monotonic_ns()``, CLOCK_MONOTONIC, comparable across
processes) and a sequence number, and ``--consumers`` consumer processes in one group, each
looping ``XREADGROUP GROUP g <name> COUNT 10000 BLOCK 100 STREAMS lat >`` then ``XACK``
of what it got. A message's latency is its receive time minus its send time.

Printed per server: the 1 ms buckets as the Redis article prints them ("Processed between 0
and 1 ms -> 74.11%"), p50 / p99 / p99.9 / max, the achieved producer rate, how far behind
schedule the producer fell, and how many messages were lost (never delivered) or duplicated
(delivered more than once); the server's CPU, the clients' CPU, and two signs of a noisy
machine: the load average and the share of CPU time the hypervisor gave to other machines
(steal); then a JSON line with the same numbers for scripts. ``--json FILE`` also writes
every run with its latency distribution (``cdf``: [percentile, ms] points, finer in the
tail) for ``benchmarks/plot.py``, which draws the CDF in docs/performance.md.

The producer sends what is due every millisecond in one pipeline, stamping each message just
before the write, so the rate holds even when a single round trip is slow.

``--pin`` (the default; ``--no-pin`` to turn it off) gives the server a CPU of its own and
the clients the others: both servers are started with ``--server_cpulist <highest CPU>``
(Redis 6.2+'s setting, which Sluice also has) and the eleven client processes are pinned to
the remaining CPUs. On our 2-core machines, without it, the clients' wakeups preempt the
server on its own core, and the test measures the scheduler as much as the server; with it,
the server runs as it would with its clients on other machines.

``--client`` picks the client code of the eleven processes. ``lean`` (the default) sends
pre-encoded RESP over a plain socket and parses replies with hiredis; ``redis-py`` uses
redis-py's ``xreadgroup`` / ``xack`` / ``pipeline``. The clients share the two cores of our
test machines with the server, and redis-py's clients spent 95-145 us of CPU per message,
more than half the machine at 10,000 messages/s, so with them the test mostly measured how
the scheduler shares the cores. The lean clients do the same commands for a fraction of that;
``commands per message`` and the clients' CPU are printed so the two can be compared.
"""

from __future__ import annotations

import argparse
import array
import datetime as dt
import json
import multiprocessing as mp
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import hiredis
import redis

ROOT = Path(__file__).resolve().parents[1]
STREAM = "lat"
GROUP = "g"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def placement(pin: bool) -> tuple[int | None, set[int] | None]:
    """``--pin``: the server's CPU (the highest we may use) and the clients' CPUs (the rest),
    or (None, None) when not pinning or with fewer than two CPUs."""
    if not pin or not hasattr(os, "sched_getaffinity"):
        return None, None
    cpus = os.sched_getaffinity(0)
    if len(cpus) < 2:
        return None, None
    server_cpu = max(cpus)
    return server_cpu, cpus - {server_cpu}


def start_server(kind: str, server_cpu: int | None = None) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    if kind == "redis":
        # The reference redis-server of the tests (8.6, built by make test), else PATH's.
        sys.path.insert(0, str(ROOT))
        from tests.build_reference_redis import newest_cached

        built = newest_cached()
        exe = str(built) if built else shutil.which("redis-server")
        if not exe:
            raise SystemExit("redis-server not found")
        cmd = [exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
               "--appendonly", "no"]
    else:
        cmd = [sys.executable, "-m", "sluice.server", "--port", str(port), "--bind",
               "127.0.0.1", "--save", ""]
    if server_cpu is not None:  # both servers pin themselves the same way (Redis 6.2+)
        cmd += ["--server_cpulist", str(server_cpu)]
    # A scratch working directory: no snapshot of someone else's is loaded at start.
    workdir = tempfile.mkdtemp(prefix=f"latency-{kind}-")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p))
    proc = subprocess.Popen(cmd, cwd=workdir, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while True:
        try:
            if redis.Redis(port=port, socket_timeout=1).ping():
                return proc, port
        except redis.ConnectionError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise SystemExit(f"{kind} server did not start")
        time.sleep(0.05)


def _resp(*args: bytes) -> bytes:
    return b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)


class LeanClient:
    """One connection: pre-encoded requests out, hiredis-parsed replies in."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.reader = hiredis.Reader()

    def reply(self) -> Any:
        while True:
            r = self.reader.gets()
            if r is not False:
                if isinstance(r, hiredis.ReplyError):
                    raise RuntimeError(str(r))
                return r
            data = self.sock.recv(1 << 16)
            if not data:
                raise ConnectionError("server closed the connection")
            self.reader.feed(data)

    def close(self) -> None:
        self.sock.close()


# Each client flavour gives the consumer loop ``read() -> (receive time, [(id, sent ns, seq)])``
# and ``ack(ids)``, and the producer ``send(seqs)`` (one pipeline, replies read) and ``close``.


def _lean_consumer(port: int, name: str) -> tuple[Any, Any, Any]:
    c = LeanClient(port)
    request = _resp(b"XREADGROUP", b"GROUP", GROUP.encode(), name.encode(), b"COUNT", b"10000",
                    b"BLOCK", b"100", b"STREAMS", STREAM.encode(), b">")
    ack_head = (b"XACK", STREAM.encode(), GROUP.encode())

    def read() -> tuple[int, list[tuple[bytes, int, int]]]:
        c.sock.sendall(request)
        reply = c.reply()
        now = time.monotonic_ns()
        # Fields as the producer sent them: ts, <ns>, seq, <n>.
        return now, [(sid, int(f[1]), int(f[3])) for _, entries in reply or ()
                     for sid, f in entries]

    def ack(ids: list[bytes]) -> None:
        c.sock.sendall(_resp(*ack_head, *ids))
        c.reply()

    return read, ack, c.close


def _redis_py_consumer(port: int, name: str) -> tuple[Any, Any, Any]:
    r = redis.Redis(port=port, socket_timeout=30)

    def read() -> tuple[int, list[tuple[bytes, int, int]]]:
        reply = r.xreadgroup(GROUP, name, {STREAM: ">"}, count=10000, block=100)
        now = time.monotonic_ns()
        return now, [(sid, int(f[b"ts"]), int(f[b"seq"])) for _, entries in reply or ()
                     for sid, f in entries]

    def ack(ids: list[bytes]) -> None:
        r.xack(STREAM, GROUP, *ids)

    return read, ack, r.close


def consumer(port: int, name: str, stop: Any, out: Any, lean: bool) -> None:
    """Read, stamp, acknowledge; hand back (sequence numbers, latencies in µs, CPU time)."""
    read, ack, close = (_lean_consumer if lean else _redis_py_consumer)(port, name)
    seqs = array.array("q")
    lats = array.array("q")
    while True:
        now, entries = read()
        if not entries:
            if stop.is_set():
                break
            continue
        for _, sent_ns, seq in entries:
            seqs.append(seq)
            lats.append((now - sent_ns) // 1000)
        ack([sid for sid, _, _ in entries])
    out.put((name, seqs.tobytes(), lats.tobytes(), time.process_time()))
    close()


def _lean_producer(port: int) -> tuple[Any, Any]:
    c = LeanClient(port)
    key = STREAM.encode()

    def send(seqs: range) -> None:
        c.sock.sendall(b"".join(
            _resp(b"XADD", key, b"*", b"ts", b"%d" % time.monotonic_ns(), b"seq", b"%d" % seq)
            for seq in seqs))
        for _ in seqs:
            c.reply()

    return send, c.close


def _redis_py_producer(port: int) -> tuple[Any, Any]:
    r = redis.Redis(port=port, socket_timeout=30)

    def send(seqs: range) -> None:
        pipe = r.pipeline(transaction=False)
        for seq in seqs:
            pipe.xadd(STREAM, {"ts": time.monotonic_ns(), "seq": seq})
        pipe.execute()

    return send, r.close


def producer(port: int, rate: int, duration: float, out: Any, lean: bool) -> None:
    """``rate`` messages a second for ``duration`` seconds, what is due sent as one pipeline."""
    send, close = (_lean_producer if lean else _redis_py_producer)(port)
    total = int(rate * duration)
    sent = 0
    worst_lag = 0.0
    start = time.monotonic()
    while sent < total:
        now = time.monotonic()
        due = min(total, int((now - start) * rate) + 1)
        if due > sent:
            worst_lag = max(worst_lag, (due - sent - 1) / rate)
            send(range(sent, due))
            sent = due
        else:
            # Wait for the next message's slot (pacing a producer, not synchronising a test).
            time.sleep(max(0.0, start + sent / rate - time.monotonic()))
    elapsed = time.monotonic() - start
    out.put(("producer", sent, elapsed, worst_lag, time.process_time()))
    close()


def run(kind: str, rate: int, duration: float, consumers: int, client: str,
        pin: bool) -> dict[str, Any]:
    pinned_cpu, client_cpus = placement(pin)
    proc, port = start_server(kind, pinned_cpu)
    all_cpus = os.sched_getaffinity(0) if client_cpus else None
    try:
        if client_cpus:
            os.sched_setaffinity(0, client_cpus)  # the clients are forked from here
        admin = redis.Redis(port=port)
        admin.xgroup_create(STREAM, GROUP, "$", mkstream=True)
        ctx = mp.get_context("fork")
        stop = ctx.Event()
        out = ctx.Queue()
        lean = client == "lean"
        workers = [ctx.Process(target=consumer, args=(port, f"c{i}", stop, out, lean))
                   for i in range(consumers)]
        for w in workers:
            w.start()
        # Every consumer blocked before the first message.
        while admin.info("clients")["blocked_clients"] < consumers:
            time.sleep(0.01)
        user0, sys0 = _cpu_seconds(proc.pid)
        switches0 = _switches(proc.pid)
        steal0, ticks0 = _steal()
        calls0 = _calls(admin)
        prod = ctx.Process(target=producer, args=(port, rate, duration, out, lean))
        prod.start()
        results = [out.get(timeout=duration + 60)]
        stop.set()
        results += [out.get(timeout=60) for _ in workers]
        user1, sys1 = _cpu_seconds(proc.pid)
        server_cpu, server_sys = user1 + sys1 - user0 - sys0, sys1 - sys0
        switches = _switches(proc.pid) - switches0
        steal1, ticks1 = _steal()
        calls = _calls(admin) - calls0
        prod.join(10)
        for w in workers:
            w.join(10)
        pending = admin.xpending(STREAM, GROUP)["pending"]
        admin.close()
    finally:
        proc.terminate()
        proc.wait(10)
        if all_cpus:
            os.sched_setaffinity(0, all_cpus)
    _, sent, elapsed, worst_lag, clients_cpu = next(r for r in results if r[0] == "producer")
    seen: Counter[int] = Counter()
    lat = array.array("q")
    for _name, seq_bytes, lat_bytes, cpu in (r for r in results if r[0] != "producer"):
        clients_cpu += cpu
        s = array.array("q")
        s.frombytes(seq_bytes)
        seen.update(s)
        part = array.array("q")
        part.frombytes(lat_bytes)
        lat.extend(part)
    lost = sum(1 for i in range(sent) if i not in seen)
    dup = sum(c - 1 for c in seen.values() if c > 1)
    ordered = sorted(lat)
    return {
        "server": kind, "client": client,
        "server_on_cpu": pinned_cpu, "client_cpus": sorted(client_cpus) if client_cpus else None,
        "sent": sent, "received": len(lat), "lost": lost,
        "duplicated": dup,
        "pending_after": pending, "rate": sent / elapsed, "producer_worst_lag_ms":
        worst_lag * 1000, "server_cpu_s": server_cpu,
        "server_cpu_us_per_msg": server_cpu / max(sent, 1) * 1e6,
        "server_kernel_share": server_sys / server_cpu if server_cpu else 0.0,
        "clients_cpu_us_per_msg": clients_cpu / max(sent, 1) * 1e6,
        "calls_per_msg": calls / max(sent, 1),
        "preempted_per_msg": switches / max(sent, 1), "load_avg_1m": os.getloadavg()[0],
        "steal_share": (steal1 - steal0) / max(ticks1 - ticks0, 1),
        "p50_ms": _pct(ordered, 50), "p99_ms": _pct(ordered, 99),
        "p99_9_ms": _pct(ordered, 99.9), "max_ms": ordered[-1] / 1000 if ordered else None,
        "within_1ms": _within(ordered, 1), "within_2ms": _within(ordered, 2),
        "buckets": _buckets(ordered),
        "cdf": _cdf(ordered),
    }


def _cpu_seconds(pid: int) -> tuple[float, float]:
    """User and system CPU of a process, from /proc (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / ticks, int(fields[12]) / ticks


def _switches(pid: int) -> int:
    """Times the server was taken off a CPU while it still had work (involuntary switches)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("nonvoluntary_ctxt_switches:"):
            return int(line.split()[1])
    return 0


def _steal() -> tuple[int, int]:
    """CPU time the hypervisor gave to other machines, and all CPU time, in ticks (the
    ``cpu`` line of /proc/stat). On a shared VM a run with much steal says little."""
    fields = [int(f) for f in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return fields[7], sum(fields[:8])


def _calls(admin: redis.Redis) -> int:
    """Commands the server has run (INFO commandstats), INFO itself included."""
    stats = admin.info("commandstats")
    return sum(int(v["calls"]) for v in stats.values())


def _pct(ordered: array.array[int] | list[int], p: float) -> float | None:
    if not ordered:
        return None
    k = min(len(ordered) - 1, max(0, int(round(p / 100 * len(ordered) + 0.5)) - 1))
    return ordered[k] / 1000


def _within(ordered: list[int], ms: int) -> float:
    if not ordered:
        return 0.0
    return 100.0 * sum(1 for v in ordered if v < ms * 1000) / len(ordered)


def _reference_version() -> str:
    sys.path.insert(0, str(ROOT))
    from tests.build_reference_redis import newest_cached

    exe = str(newest_cached() or shutil.which("redis-server") or "")
    out = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout if exe else ""
    return "redis-server " + next((w[2:] for w in out.split() if w.startswith("v=")), "?")


def _cdf(ordered: array.array[int] | list[int]) -> list[tuple[float, float]]:
    """[percentile, latency ms] at 0.5% steps, then finer up to the maximum: the tail is
    where two servers differ, so it gets most of the points."""
    if not ordered:
        return []
    points = [p / 2 for p in range(0, 198)] + [99 + p / 10 for p in range(0, 10)]
    points += [99.9 + p / 100 for p in range(0, 10)] + [100.0]
    n = len(ordered)
    return [(p, ordered[min(n - 1, int(p / 100 * n))] / 1000) for p in points]


def _buckets(ordered: list[int]) -> list[tuple[int, float]]:
    counts: Counter[int] = Counter(v // 1000 for v in ordered)
    n = len(ordered) or 1
    return [(ms, 100.0 * c / n) for ms, c in sorted(counts.items())]


def report(res: dict[str, Any]) -> None:
    where = (f"server on CPU {res['server_on_cpu']}, clients on {res['client_cpus']}"
             if res["server_on_cpu"] is not None else "not pinned")
    print(f"\n== {res['server']} ({res['client']} clients, {where}) ==")
    for ms, share in res["buckets"]:
        print(f"Processed between {ms} and {ms + 1} ms -> {share:.2f}%")
    print(f"p50 {res['p50_ms']:.3f} ms   p99 {res['p99_ms']:.3f} ms   "
          f"p99.9 {res['p99_9_ms']:.3f} ms   max {res['max_ms']:.3f} ms")
    print(f"within 1 ms {res['within_1ms']:.2f}%   within 2 ms {res['within_2ms']:.2f}%")
    print(f"rate {res['rate']:.0f} msg/s (producer at most {res['producer_worst_lag_ms']:.1f} ms"
          f" behind schedule)   sent {res['sent']}   received {res['received']}   "
          f"lost {res['lost']}   duplicated {res['duplicated']}   "
          f"pending after {res['pending_after']}")
    print(f"server CPU {res['server_cpu_s']:.2f} s = {res['server_cpu_us_per_msg']:.1f} us per "
          f"message (XADD, delivery, XACK and the readers' blocking; "
          f"{res['server_kernel_share']:.0%} of it in the kernel)   "
          f"machine load average {res['load_avg_1m']:.2f}, "
          f"{res['steal_share']:.1%} of its CPU time stolen by the hypervisor")
    print(f"commands per message {res['calls_per_msg']:.2f}   server preempted "
          f"{res['preempted_per_msg']:.3f} times per message   client processes' CPU "
          f"{res['clients_cpu_us_per_msg']:.1f} us per message")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=float, default=10.0, help="seconds of producing")
    ap.add_argument("--rate", type=int, default=10_000, help="messages per second")
    ap.add_argument("--consumers", type=int, default=10)
    ap.add_argument("--servers", default="redis,sluice", help="comma-separated, in order")
    ap.add_argument("--client", choices=("lean", "redis-py"), default="lean",
                    help="client code of the producer and consumers (see above)")
    ap.add_argument("--pin", action=argparse.BooleanOptionalAction, default=True,
                    help="server on its own CPU, clients on the others (see above)")
    ap.add_argument("--runs", type=int, default=1,
                    help="alternate the servers this many times (both orders)")
    ap.add_argument("--json", help="write every run, with its CDF, to this file")
    args = ap.parse_args()
    results = []
    kinds = [k.strip() for k in args.servers.split(",")]
    for i in range(args.runs):
        for kind in (kinds if i % 2 == 0 else kinds[::-1]):
            res = run(kind, args.rate, args.duration, args.consumers, args.client, args.pin)
            report(res)
            results.append(res)
    for res in results:
        print(json.dumps({k: v for k, v in res.items() if k not in ("buckets", "cdf")}))
    if args.json:
        with open(args.json, "w") as f:
            f.write(dump_results({
                "benchmark": "stream_latency",
                "when": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                "rate": args.rate, "duration_s": args.duration, "consumers": args.consumers,
                "client": args.client, "pin": args.pin, "cpus": os.cpu_count(),
                "reference": _reference_version(), "runs": results,
            }))


def dump_results(payload: dict[str, Any]) -> str:
    """JSON with one line per run (a run's CDF is 220 points: one per line would bury the
    settings in thousands of lines), its floats rounded to what was measured."""
    def rounded(value: Any) -> Any:
        if isinstance(value, float):
            return round(value, 4)
        if isinstance(value, (list, tuple)):
            return [rounded(v) for v in value]
        if isinstance(value, dict):
            return {k: rounded(v) for k, v in value.items()}
        return value

    head = {k: v for k, v in payload.items() if k != "runs"}
    runs = ",\n".join("  " + json.dumps(rounded(r)) for r in payload.get("runs", []))
    return json.dumps(head, indent=1)[:-2] + ',\n "runs": [\n' + runs + "\n ]\n}\n"


if __name__ == "__main__":
    main()
