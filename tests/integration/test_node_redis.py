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

PROJECT = Path(__file__).resolve().parents[1] / "clients" / "node-redis"
SCRIPT = PROJECT / "exercise.js"
PINNED = json.loads((PROJECT / "package.json").read_text())["dependencies"]["redis"]
CHECKS = {"served_from_cache", "invalidated_by_another_connection", "hashes_and_lists",
          "flushall_invalidates_everything", "expiry_invalidates"}


def _missing(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (required under CI: make test installs the client)")
    pytest.skip(reason)


def _installed_version() -> str | None:
    with contextlib.suppress(OSError, ValueError, KeyError):
        meta = PROJECT / "node_modules" / "redis" / "package.json"
        return str(json.loads(meta.read_text())["version"])
    return None


@contextlib.contextmanager
def _install_lock() -> Iterator[None]:
    """Serialise ``npm ci`` between test runs sharing this checkout (it deletes node_modules)."""
    tag = hashlib.sha256(str(PROJECT).encode()).hexdigest()[:12]
    with open(Path(tempfile.gettempdir()) / f"sluice-node-redis-{tag}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@pytest.fixture(scope="module")
def node() -> str:
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        _missing("node and npm are needed for the node-redis tests")
    assert node and npm
    with _install_lock():
        if _installed_version() != PINNED:
            done = subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=PROJECT,
                                  capture_output=True, text=True, timeout=300)
            if done.returncode != 0:
                _missing(f"npm ci failed in {PROJECT}: {done.stderr[-2000:]}")
    return node


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
