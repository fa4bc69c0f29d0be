"""INFO's instantaneous rates and the event loop's cycle statistics (Redis's
``trackInstantaneousMetric`` / ``getInstantaneousMetric`` and ``durationAddSample``).

Every 100 ms the cron samples each counter: the change since the previous sample, per
``factor`` units of the base's change (per second for the rates, per cycle for the cycle
duration). A metric is the mean of its last 16 samples, so a rate reaches its value 1.6 s
after a steady load starts, as in Redis. CONFIG RESETSTAT starts them over.

An event-loop cycle is one wakeup of the loop that serves clients or runs the cron: it opens
at the first read of the iteration (or at the cron) and closes when the iteration's replies
have been written (``Server.write_replies``), so its duration is the work, not the sleep.
"""

from __future__ import annotations

import time

SAMPLES = 16  # STATS_METRIC_SAMPLES
PERIOD_MS = 100  # run_with_period(100) in serverCron

OPS, NET_INPUT, NET_OUTPUT, EL_CYCLE, EL_DURATION = range(5)


class Metric:
    __slots__ = ("samples", "idx", "last_base", "last_value")

    def __init__(self) -> None:
        self.samples = [0] * SAMPLES
        self.idx = 0
        self.last_base = 0
        self.last_value = 0

    def track(self, value: int, base: int, factor: int) -> None:
        """One sample: the value's change per ``factor`` of the base's change."""
        if self.last_base > 0:
            d_base = base - self.last_base
            d_value = value - self.last_value
            self.samples[self.idx] = d_value * factor // d_base if d_base > 0 else 0
            self.idx = (self.idx + 1) % SAMPLES
        self.last_base = base
        self.last_value = value

    def mean(self) -> int:
        return sum(self.samples) // SAMPLES


class EventLoopStats:
    """Cycles of the event loop and the rates INFO derives from the counters."""

    __slots__ = ("cycles", "duration_us", "cycle_start_ns", "metrics", "last_sample_ms",
                 "max_us", "aof_us", "cron_us", "commands", "max_commands")

    def __init__(self) -> None:
        self.cycles = 0  # INFO eventloop_cycles
        self.duration_us = 0  # INFO eventloop_duration_sum
        self.cycle_start_ns = 0  # the open cycle's start (0: none open)
        self.metrics = [Metric() for _ in range(5)]
        self.last_sample_ms = 0
        # INFO DEBUG: the longest cycle, the time the AOF's writes and the cron took, and the
        # most commands one cycle ran (``commands`` counts the open cycle's)
        self.max_us = self.aof_us = self.cron_us = 0
        self.commands = self.max_commands = 0

    def open_cycle(self) -> None:
        if not self.cycle_start_ns:
            self.cycle_start_ns = time.perf_counter_ns()

    def close_cycle(self) -> None:
        start = self.cycle_start_ns
        if start:
            self.cycles += 1
            took = (time.perf_counter_ns() - start) // 1000
            self.duration_us += took
            if took > self.max_us:
                self.max_us = took
            if self.commands > self.max_commands:
                self.max_commands = self.commands
            self.commands = 0
            self.cycle_start_ns = 0

    def sample(self, commands: int, net_in: int, net_out: int) -> None:
        """The cron's look at the counters, at most every 100 ms."""
        now = time.time_ns() // 1_000_000
        if now - self.last_sample_ms < PERIOD_MS:
            return
        self.last_sample_ms = now
        m = self.metrics
        m[OPS].track(commands, now, 1000)
        m[NET_INPUT].track(net_in, now, 1000)
        m[NET_OUTPUT].track(net_out, now, 1000)
        m[EL_CYCLE].track(self.cycles, now, 1000)
        m[EL_DURATION].track(self.duration_us, self.cycles, 1)

    def rate(self, metric: int) -> int:
        return self.metrics[metric].mean()

    def reset(self) -> None:
        """CONFIG RESETSTAT: the cycle counters and every metric from zero."""
        self.cycles = self.duration_us = 0
        self.max_us = self.aof_us = self.cron_us = self.max_commands = 0
        self.metrics = [Metric() for _ in range(5)]
