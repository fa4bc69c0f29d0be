"""LATENCY's samples (Redis's latency.c): spikes per event, at most one sample per second.

``Server.slow_command`` adds a ``command`` or ``fast-command`` sample for every command that
took at least ``latency-monitor-threshold`` ms; the LATENCY handlers read it through
``commands.context.Latency``.
"""

from __future__ import annotations

import collections
import time

LATENCY_SAMPLES = 160  # per event, as Redis's LATENCY_TS_LEN


class LatencyMonitor:
    """Latency spikes per event: at most one sample per second, the last 160 kept."""

    __slots__ = ("events",)

    def __init__(self) -> None:
        # event -> (samples [(unix seconds, ms)], all-time max ms)
        self.events: dict[str, tuple[collections.deque[list[int]], list[int]]] = {}

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
