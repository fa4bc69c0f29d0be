"""EVALSHA of a 3-call script (GET, INCR, PEXPIRE) against Sluice and redis-server, same run.

Pipelined: requests/s with pipelines of ``--depth`` requests on one connection (target: at
least 0.25x Redis's rate), and the server's CPU time per request in that phase (on a busy
machine the rate moves with the neighbours; the CPU time much less). Unpipelined: one request
at a time; the server's CPU time (utime + stime from /proc) per call, since the client bounds
the rate (target: at most 3x Redis's CPU per call). Run by hand:
``python benchmarks/evalsha_bench.py``.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import hiredis  # noqa: E402

from tests.support import ProcessServer  # noqa: E402

SCRIPT = (b"local v = redis.call('GET', KEYS[1]) "
          b"local n = redis.call('INCR', KEYS[2]) "
          b"redis.call('PEXPIRE', KEYS[2], 60000) return n")


def _cmd(*args: bytes) -> bytes:
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _replies(sock: socket.socket, reader: hiredis.Reader, n: int) -> None:
    got = 0
    while got < n:
        reply = reader.gets()
        if reply is False:
            reader.feed(sock.recv(1 << 20))
            continue
        if isinstance(reply, hiredis.ReplyError):
            raise RuntimeError(reply)
        got += 1


def measure(port: int, pid: int, requests: int, depth: int) -> tuple[float, float, float]:
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    reader = hiredis.Reader()
    sock.sendall(_cmd(b"SCRIPT", b"LOAD", SCRIPT))
    _replies_sha = None
    while _replies_sha is None:
        reader.feed(sock.recv(4096))
        r = reader.gets()
        _replies_sha = r if r is not False else None
    sha = _replies_sha
    if not isinstance(sha, bytes):
        raise RuntimeError(f"SCRIPT LOAD: {sha}")
    call = _cmd(b"EVALSHA", sha, b"2", b"k:get", b"k:counter")
    batch = call * depth
    done = (requests // depth) * depth
    cpu0 = _cpu_seconds(pid)
    start = time.perf_counter()
    for _ in range(requests // depth):
        sock.sendall(batch)
        _replies(sock, reader, depth)
    rate = done / (time.perf_counter() - start)
    pipelined_cpu_us = (_cpu_seconds(pid) - cpu0) / done * 1e6
    n = requests // 10
    cpu0 = _cpu_seconds(pid)
    for _ in range(n):
        sock.sendall(call)
        _replies(sock, reader, 1)
    cpu_us = (_cpu_seconds(pid) - cpu0) / n * 1e6
    sock.close()
    return rate, pipelined_cpu_us, cpu_us


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--requests", type=int, default=200_000)
    ap.add_argument("--depth", type=int, default=100)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    rows = []
    for run in range(args.runs):
        order = ("sluice", "redis") if run % 2 == 0 else ("redis", "sluice")
        res = {}
        for kind in order:
            server = ProcessServer(kind, []).start()
            try:
                assert server.proc is not None
                res[kind] = measure(server.port, server.proc.pid, args.requests, args.depth)
            finally:
                server.stop()
        rows.append(res)
        s, r = res["sluice"], res["redis"]
        print(f"run {run + 1}: pipelined sluice {s[0]:,.0f}/s redis {r[0]:,.0f}/s "
              f"({s[0] / r[0]:.2f}x), CPU/call sluice {s[1]:.1f} us redis {r[1]:.1f} us; "
              f"unpipelined CPU/call sluice {s[2]:.1f} us redis {r[2]:.1f} us "
              f"({s[2] / r[2]:.2f}x)")

    rate = statistics.median(r["sluice"][0] / r["redis"][0] for r in rows)
    cpu = statistics.median(r["sluice"][2] / r["redis"][2] for r in rows)
    print(f"median: pipelined rate {rate:.2f}x Redis's; unpipelined CPU/call {cpu:.2f}x Redis's")


if __name__ == "__main__":
    main()
