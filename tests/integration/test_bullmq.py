"""BullMQ (Node.js) against Sluice: a real task queue in which every operation is a Lua script.

``tests/clients/bullmq/queue.js`` runs a BullMQ Queue, a Worker and QueueEvents on one server:
a job is added and completed (its return value comes back through the events stream), a job
that throws once is retried and completes, the queue's counts agree, and a job removed on
completion leaves nothing. BullMQ loads its ~50 scripts with EVALSHA (EVAL on NOSCRIPT); they
use hashes, sets, sorted sets, lists, a stream, cmsgpack and ``redis.pcall``.

The same script runs against the reference redis-server (differential), so its expectations
are Redis's behaviour. node_modules is not committed: ``make install-test`` runs ``npm ci``;
if it is missing here, the fixture runs it. Without node/npm the tests are skipped, except
under CI=true, where that is a failure.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.node_clients import ensure_installed, pinned
from tests.support import ProcessServer, ThreadedServer

pytestmark = pytest.mark.timeout(120)

PROJECT = Path(__file__).resolve().parents[1] / "clients" / "bullmq"
SCRIPT = PROJECT / "queue.js"
PINNED = pinned(PROJECT)
CHECKS = ["a job added is completed by a worker", "a failing job is retried and completes",
          "the queue counts what happened", "a job removed on completion leaves nothing"]


@pytest.fixture(scope="module")
def node() -> str:
    return ensure_installed(PROJECT, "the BullMQ test")


def run_queue(node: str, port: int) -> dict[str, Any]:
    done = subprocess.run([node, str(SCRIPT), str(port)], cwd=PROJECT, capture_output=True,
                          text=True, timeout=90)
    try:
        report: dict[str, Any] = json.loads(done.stdout)
    except ValueError:
        raise AssertionError(f"no JSON report (exit {done.returncode}):\n"
                             f"{done.stdout}\n{done.stderr[-4000:]}") from None
    failed = [c for c in report.get("checks", []) if not c["ok"]]
    assert done.returncode == 0 and report["ok"], (
        f"BullMQ checks failed: {json.dumps(failed or report, indent=1)}\n"
        f"{done.stderr[-4000:]}")
    assert report["bullmq"] == PINNED["bullmq"]
    assert [c["name"] for c in report["checks"]] == CHECKS
    return report


def test_bullmq_queue_and_worker_on_sluice(node: str, sluice: ThreadedServer) -> None:
    run_queue(node, sluice.port)
    # Every queue operation was a script: BullMQ's commands went through EVALSHA (or EVAL
    # the first time), and they ran commands of the types its scripts touch.
    r = sluice.client()
    try:
        stats = r.info("commandstats")
        for name in ("evalsha", "hgetall", "zadd", "lpush", "xadd"):
            assert stats.get(f"cmdstat_{name}", {}).get("calls", 0) > 0, name
    finally:
        r.close()


@pytest.mark.differential
def test_queue_expectations_hold_on_redis(node: str, reference: ProcessServer) -> None:
    run_queue(node, reference.port)
