"""INFO's instantaneous rates and event-loop counters over a real socket, on both event
loops: under a pipelined load the rates are positive and the counters grow; once the load
stops the rates fall back (16 samples of 100 ms later). Conditions are polled, not
slept on; the numbers themselves depend on the machine and are not asserted."""

from __future__ import annotations

import threading
import time

import pytest
import redis

from tests.support import wait_until

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def port(loop_port: int) -> int:
    return loop_port


def test_rates_follow_the_load(port: int) -> None:
    r = redis.Redis(port=port)
    before = r.info("stats")
    stop = threading.Event()

    def load() -> None:
        c = redis.Redis(port=port)
        while not stop.is_set():
            pipe = c.pipeline(transaction=False)
            for i in range(20):
                pipe.set(f"rate:{i}", "v" * 100)
            pipe.execute()
        c.close()

    worker = threading.Thread(target=load)
    worker.start()
    try:
        wait_until(lambda: r.info("stats")["instantaneous_ops_per_sec"] > 0, what="a rate")
        during = r.info("stats")
    finally:
        stop.set()
        worker.join()
    assert during["instantaneous_input_kbps"] > 0 and during["instantaneous_output_kbps"] > 0
    assert during["instantaneous_eventloop_cycles_per_sec"] > 0
    assert during["instantaneous_eventloop_duration_usec"] > 0
    for name in ("eventloop_cycles", "eventloop_duration_sum", "eventloop_duration_cmd_sum"):
        assert during[name] > before[name], name
    assert during["eventloop_duration_cmd_sum"] <= during["eventloop_duration_sum"]
    # only this test's own INFO probes remain, ten a second at most (each probe is a
    # command the rate counts): the rate falls far below the load's
    rate = during["instantaneous_ops_per_sec"]

    def fallen() -> bool:
        time.sleep(0.1)
        return bool(r.info("stats")["instantaneous_ops_per_sec"] < max(rate / 4, 20))

    wait_until(fallen, timeout=15, what="the rate to fall back")
    r.config_resetstat()
    after = r.info("stats")
    assert after["eventloop_cycles"] < during["eventloop_cycles"]
    r.close()


def test_info_debug(port: int) -> None:
    """INFO DEBUG (only when named): the cron's time grows while the server idles, one
    pipelined batch of commands sets the most commands a cycle ran, the longest cycle is at
    least as long as any cycle on average; CONFIG RESETSTAT zeroes them."""
    r = redis.Redis(port=port)
    assert "eventloop_duration_cron_sum" not in r.info("everything")
    first = r.info("debug")
    wait_until(lambda: r.info("debug")["eventloop_duration_cron_sum"]
               > first["eventloop_duration_cron_sum"], what="a cron run")
    pipe = r.pipeline(transaction=False)
    for i in range(50):
        pipe.set(f"debug:{i}", i)
    pipe.execute()  # one write: one read on the server, one cycle (usually)
    debug = r.info("debug")
    assert debug["eventloop_cmd_per_cycle_max"] >= 2
    stats = r.info("stats")
    assert debug["eventloop_duration_max"] * stats["eventloop_cycles"] \
        >= stats["eventloop_duration_sum"] > 0
    assert debug["eventloop_duration_aof_sum"] == 0  # no AOF
    r.config_resetstat()
    after = r.info("debug")
    assert after["eventloop_cmd_per_cycle_max"] <= 1
    r.close()
