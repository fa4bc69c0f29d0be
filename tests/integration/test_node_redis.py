"""node-redis (Node.js) client-side caching against Sluice: reads served from the client's own
cache, kept right by Sluice's RESP3 invalidation pushes.

``tests/clients/node-redis/exercise.js`` opens a RESP3 client with node-redis's
``BasicClientSideCache`` (which turns ``CLIENT TRACKING ON``) and a plain writer: three reads
of a key reach the server once (INFO commandstats says so) and the cache counts the hits; a
SET from the writer invalidates it (the cache empties, the next read has the new value), as
do writes to a hash and a list, FLUSHALL (the null invalidation), and a key expiring in the
active cycle. It prints a JSON report and exits 1 on any failure. The same script runs
against redis-server (differential): its expectations are Redis's behaviour.

node_modules is not committed: ``make install-test`` runs ``npm ci``; if it is missing here
the fixture runs it. Without node/npm the tests are skipped, except under CI=true, where that
is a failure.
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

PROJECT = Path(__file__).resolve().parents[1] / "clients" / "node-redis"
SCRIPT = PROJECT / "exercise.js"
PINNED = pinned(PROJECT)["redis"]
CHECKS = {"served_from_cache", "invalidated_by_another_connection", "hashes_and_lists",
          "flushall_invalidates_everything", "expiry_invalidates"}


@pytest.fixture(scope="module")
def node() -> str:
    return ensure_installed(PROJECT, "the node-redis tests")


def run_exercise(node: str, port: int) -> dict[str, Any]:
    done = subprocess.run([node, str(SCRIPT), str(port)], cwd=PROJECT, capture_output=True,
                          text=True, timeout=90)
    try:
        report: dict[str, Any] = json.loads(done.stdout)
    except ValueError:
        raise AssertionError(f"no JSON report (exit {done.returncode}):\n"
                             f"{done.stdout}\n{done.stderr}") from None
    failed = {name: why for name, why in report.get("checks", {}).items() if why != "ok"}
    assert done.returncode == 0 and report["ok"], (
        f"node-redis checks failed: {json.dumps(failed or report, indent=1)}\n{done.stderr}")
    assert report["version"] == PINNED
    assert set(report["checks"]) == CHECKS
    return report


def test_node_redis_client_side_cache_on_sluice(node: str, make_server: Any) -> None:
    server: ThreadedServer = make_server()  # its own: the exercise flushes and resets stats
    run_exercise(node, server.port)


@pytest.mark.differential
def test_exercise_expectations_hold_on_redis(node: str) -> None:
    from tests.support import require_redis_server

    require_redis_server()
    ref = ProcessServer("redis").start()
    try:
        run_exercise(node, ref.port)
    finally:
        ref.stop()
