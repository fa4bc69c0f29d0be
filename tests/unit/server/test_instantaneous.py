"""INFO's instantaneous rates (instantaneous.py): Redis's 16-sample means of per-period
changes, and the event loop's cycle counters."""

from __future__ import annotations

from sluice.server.instantaneous import EL_CYCLE, OPS, SAMPLES, EventLoopStats, Metric


def test_the_first_sample_only_sets_the_base() -> None:
    m = Metric()
    m.track(500, 1000, 1000)
    assert m.samples == [0] * SAMPLES and m.mean() == 0


def test_a_steady_rate_fills_in_over_sixteen_samples() -> None:
    m = Metric()
    for i in range(SAMPLES + 1):  # 1,000 more every 100 ms: 10,000 a second
        m.track(i * 1000, 1_000_000 + i * 100, 1000)
        if i == 8:
            assert m.mean() == 10_000 * 8 // SAMPLES  # half the samples so far
    assert m.mean() == 10_000
    for i in range(SAMPLES + 1, 2 * SAMPLES + 1):  # idle: it falls back to zero
        m.track(SAMPLES * 1000, 1_000_000 + i * 100, 1000)
    assert m.mean() == 0


def test_no_base_change_gives_a_zero_sample() -> None:
    m = Metric()
    m.track(0, 5, 1)
    m.track(100, 5, 1)  # a per-cycle mean with no new cycle
    assert m.samples[0] == 0


def test_cycles_are_counted_once_and_reset() -> None:
    el = EventLoopStats()
    el.close_cycle()  # none open: nothing counted
    el.open_cycle()
    el.open_cycle()  # still the same cycle
    el.close_cycle()
    assert el.cycles == 1 and el.duration_us >= 0 and not el.cycle_start_ns
    el.metrics[OPS].samples[0] = 5
    el.reset()
    assert el.cycles == 0 and el.rate(OPS) == 0 and el.rate(EL_CYCLE) == 0
