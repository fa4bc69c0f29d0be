"""LATENCY's samples (Redis's latency.c): spikes per event, at most one sample per second.

A spike is an event that took at least ``latency-monitor-threshold`` ms (``threshold``; 0
turns monitoring off, and then timing costs one test). Events are sampled where Redis
samples them, under its names:

* ``command`` / ``fast-command``: a command's run (``Server.slow_command``);
* ``expire-cycle``: one active expiry cycle; ``expire-del``: freeing one expired key;
* ``eviction-cycle``: one ``performEvictions`` pass; ``evict-del``: freeing one evicted key;
* ``aof-write`` for every write of the AOF buffer, and with it ``aof-write-pending-fsync``
  (a background fsync was running), ``aof-write-active-child`` (a fork child was writing) or
  ``aof-write-alone``; ``aof-fsync-always``: the fsync of ``appendfsync always``;
  ``aof-fstat``: sizing an AOF file; ``aof-rename``: installing a rewritten base;
* ``fork``: the ``fork()`` of BGSAVE or BGREWRITEAOF (INFO ``latest_fork_usec`` too);
* ``rdb-unlink-temp-file``: removing the temp file of a killed child.

The LATENCY handlers read it through ``commands.context.Latency``.
"""

from __future__ import annotations

import collections
import time

LATENCY_SAMPLES = 160  # per event, as Redis's LATENCY_TS_LEN


class LatencyMonitor:
    """Latency spikes per event: at most one sample per second, the last 160 kept."""

    __slots__ = ("events", "threshold")

    def __init__(self) -> None:
        # event -> (samples [(unix seconds, ms)], all-time max ms)
        self.events: dict[str, tuple[collections.deque[list[int]], list[int]]] = {}
        self.threshold = 0  # latency-monitor-threshold, ms; 0: off

    def start(self) -> int:
        """Redis's ``latencyStartMonitor``: a start time while monitoring is on, else 0."""
        return time.perf_counter_ns() if self.threshold else 0

    def end(self, event: str, start: int) -> int:
        """``latencyEndMonitor`` + ``latencyAddSampleIfNeeded``: the ms since ``start`` (0
        when monitoring was off at the start), sampled under ``event`` if a spike."""
        if not start:
            return 0
        ms = (time.perf_counter_ns() - start) // 1_000_000
        if ms >= self.threshold > 0:
            self.add(event, ms)
        return ms

    def sample(self, event: str, ms: int) -> None:
        """``latencyAddSampleIfNeeded``: record ``ms`` under ``event`` if it is a spike."""
        if ms >= self.threshold > 0:
            self.add(event, ms)

    def add(self, event: str, ms: int, now: int | None = None) -> None:
        now = int(time.time()) if now is None else now
        entry = self.events.get(event)
        if entry is None:
            entry = (collections.deque(maxlen=LATENCY_SAMPLES), [0])
            self.events[event] = entry
        samples, peak = entry
        peak[0] = max(peak[0], ms)
        if samples and samples[-1][0] == now:  # one sample per second: keep the worst
            samples[-1][1] = max(samples[-1][1], ms)
        else:
            samples.append([now, ms])

    def latest(self) -> list[list[object]]:
        return [[name.encode(), samples[-1][0], samples[-1][1], peak[0]]
                for name, (samples, peak) in self.events.items() if samples]

    def history(self, event: bytes) -> list[list[int]]:
        entry = self.events.get(event.decode(errors="replace"))
        return [list(s) for s in entry[0]] if entry else []

    def reset(self, events: list[bytes]) -> int:
        if not events:
            n = len(self.events)
            self.events.clear()
            return n
        n = 0
        for raw in events:
            if self.events.pop(raw.decode(errors="replace"), None) is not None:
                n += 1
        return n
