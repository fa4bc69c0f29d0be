"""The ``limits`` library's rate limiters (the storage behind Flask-Limiter, SlowAPI and
others) against Sluice and against redis-server, side by side.

Its Redis storage keeps a moving window as a list trimmed by a Lua script (EVALSHA, with
``NOSCRIPT`` answered by loading it), a fixed window with INCR and EXPIRE, and a sliding
window counter as two counters read and written by scripts. Each strategy takes seven hits
against a limit of five: the first five pass, the rest are refused, and the window's stats
and ``test`` agree, on both servers alike. The limit is per hour, so a window boundary inside
the test (milliseconds long) is as unlikely as it is harmless: the sliding counter carries
the previous window's hits over.
"""

from __future__ import annotations

import pytest
from limits import parse, storage, strategies

from tests.support import ProcessServer, ThreadedServer

STRATEGIES = [strategies.MovingWindowRateLimiter, strategies.FixedWindowRateLimiter,
              strategies.SlidingWindowCounterRateLimiter]


def _run(port: int, strategy: type[strategies.RateLimiter]) -> tuple[list[bool], int, bool]:
    limiter = strategy(storage.RedisStorage(f"redis://127.0.0.1:{port}"))
    item = parse("5/hour")
    hits = [limiter.hit(item, "client-1") for _ in range(7)]
    remaining = limiter.get_window_stats(item, "client-1").remaining
    return hits, remaining, limiter.test(item, "client-1")


@pytest.mark.parametrize("strategy", STRATEGIES, ids=lambda s: s.__name__)
def test_limits_strategies_as_on_redis(strategy: type[strategies.RateLimiter],
                                       sluice: ThreadedServer, reference: ProcessServer) -> None:
    try:
        ours = _run(sluice.port, strategy)
        theirs = _run(reference.port, strategy)
    finally:
        for server in (sluice, reference):
            server.client().flushall()
    assert ours == ([True] * 5 + [False] * 2, 0, False)
    assert ours == theirs
