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

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import ProcessServer, ThreadedServer

pytestmark = pytest.mark.timeout(120)

PROJECT = Path(__file__).resolve().parents[1] / "clients" / "bullmq"
SCRIPT = PROJECT / "queue.js"
PINNED = json.loads((PROJECT / "package.json").read_text())["dependencies"]
CHECKS = ["a job added is completed by a worker", "a failing job is retried and completes",
          "the queue counts what happened", "a job removed on completion leaves nothing"]


def _missing(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (required under CI: make install-test installs BullMQ)")
    pytest.skip(reason)


def _installed_version(package: str) -> str | None:
    with contextlib.suppress(OSError, ValueError, KeyError):
        meta = PROJECT / "node_modules" / package / "package.json"
        return str(json.loads(meta.read_text())["version"])
    return None


@contextlib.contextmanager
def _install_lock() -> Iterator[None]:
    """Serialise ``npm ci`` between test runs sharing this checkout (it deletes node_modules)."""
    tag = hashlib.sha256(str(PROJECT).encode()).hexdigest()[:12]
    with open(Path(tempfile.gettempdir()) / f"sluice-bullmq-{tag}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@pytest.fixture(scope="module")
def node() -> str:
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        _missing("node and npm are needed for the BullMQ test")
    assert node and npm
    with _install_lock():
        if any(_installed_version(p) != v for p, v in PINNED.items()):
            done = subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=PROJECT,
                                  capture_output=True, text=True, timeout=300)
            if done.returncode != 0:
                _missing(f"npm ci failed in {PROJECT}: {done.stderr[-2000:]}")
    return node


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
