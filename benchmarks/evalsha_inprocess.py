"""What one EVALSHA costs in process, without the socket: batches of 100 requests through
``dispatch.run_batch`` (the pipelined path) on a server with no connection, timed in CPU
time (``time.process_time``: a neighbour's burst on this shared machine preempts us but adds
no CPU time). Lines:

* EVALSHA of the 3-call script of ``evalsha_bench.py`` (GET, INCR, PEXPIRE);
* EVALSHA of ``return 1`` with the same keys: the cost of a run with no ``redis.call``;
* GET, INCR and PEXPIRE sent as three commands: what the script's commands cost by themselves.

The difference between the first line and the other two is what the three ``redis.call``
crossings add. Usage: ``python benchmarks/evalsha_inprocess.py [repetitions]``; prints the
best and the median microseconds per EVALSHA (or per three commands).
"""

from __future__ import annotations

import hashlib
import statistics
import sys
import time

from sluice.server.app import Server
from sluice.server.client import Client
from sluice.server.dispatch import process_command, run_batch

SCRIPT = (b"local v = redis.call('GET', KEYS[1]) "
          b"local n = redis.call('INCR', KEYS[2]) "
          b"redis.call('PEXPIRE', KEYS[2], 60000) return n")
EMPTY = b"return 1"


def measure(server: Server, client: Client, batch: list[list[bytes]], per: int,
            reps: int) -> tuple[float, float]:
    """(best, median) CPU µs per ``per`` requests of ``batch``, over ``reps`` timings."""
    rounds = max(1, 6000 // len(batch))
    times = []
    for _ in range(reps):
        start = time.process_time()
        for _ in range(rounds):
            run_batch(server, client, batch)
            client.out.clear()
            server.pending_writes.clear()
        times.append((time.process_time() - start) / (rounds * len(batch)) * per * 1e6)
    return min(times), statistics.median(times)


def main() -> None:
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 11
    server = Server()
    client = Client(server, 1, None)
    server.clients[1] = client
    shas = []
    for body in (SCRIPT, EMPTY):
        process_command(server, client, [b"SCRIPT", b"LOAD", body])
        shas.append(hashlib.sha1(body).hexdigest().encode())
    client.out.clear()
    keys = [b"2", b"k:get", b"k:counter"]
    cases = [
        ("EVALSHA, 3 redis.call", [[b"EVALSHA", shas[0], *keys]] * 100, 1),
        ("EVALSHA, return 1", [[b"EVALSHA", shas[1], *keys]] * 100, 1),
        ("GET + INCR + PEXPIRE as commands", [[b"GET", b"k:get"], [b"INCR", b"k:counter"],
                                              [b"PEXPIRE", b"k:counter", b"60000"]] * 33, 3),
    ]
    for _, batch, per in cases:  # warm-up
        measure(server, client, batch, per, 2)
    for label, batch, per in cases:
        best, median = measure(server, client, batch, per, reps)
        print(f"{label:34s} best {best:6.2f} us  median {median:6.2f} us")


if __name__ == "__main__":
    main()
