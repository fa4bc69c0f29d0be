"""ioredis (Node.js) against Sluice: a real application-style client that must not notice.

``tests/clients/ioredis/exercise.js`` drives the server with ioredis 5 (RESP2, no HELLO) and
ioredis 6 (``hello 3``, RESP3 by default): the connect handshake, pipelines, auto-pipelining,
MULTI/EXEC and WATCH, strings, SCAN streams, BLPOP/BLMOVE across connections, XADD/XRANGE,
XREAD BLOCK and XREADGROUP BLOCK woken from another connection, XACK/XPENDING/XAUTOCLAIM,
CLIENT ID + CLIENT UNBLOCK, and reconnection after CLIENT KILL. It prints a JSON report and
exits 1 on any mismatch.

The same script also runs against a real redis-server (differential): its expectations are
Redis's replies, not a description of Sluice's.

node_modules is not committed: ``make install-test`` runs ``npm ci`` once; if it is missing
here, the module fixture runs ``npm ci`` itself. Without node/npm the tests are skipped, except
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

PROJECT = Path(__file__).resolve().parents[1] / "clients" / "ioredis"
SCRIPT = PROJECT / "exercise.js"
# npm package name -> the version package.json pins (an alias "npm:ioredis@X" for ioredis6).
PINNED = pinned(PROJECT)
PACKAGES = ["ioredis", "ioredis6"]


@pytest.fixture(scope="module")
def node() -> str:
    return ensure_installed(PROJECT, "the ioredis tests")


def run_exercise(node: str, port: int, package: str) -> dict[str, Any]:
    done = subprocess.run([node, str(SCRIPT), str(port), package], cwd=PROJECT,
                          capture_output=True, text=True, timeout=90)
    try:
        report: dict[str, Any] = json.loads(done.stdout)
    except ValueError:
        raise AssertionError(f"no JSON report (exit {done.returncode}):\n"
                             f"{done.stdout}\n{done.stderr}") from None
    failed = {name: why for name, why in report.get("checks", {}).items() if why != "ok"}
    assert done.returncode == 0 and report["ok"], (
        f"{package} checks failed: {json.dumps(failed or report, indent=1)}\n{done.stderr}")
    assert report["ioredis"] == PINNED[package]
    assert set(report["checks"]) >= {"handshake", "pipelines", "transactions", "lists",
                                     "streams", "consumer_groups", "client_unblock"}
    return report


@pytest.mark.parametrize("package", PACKAGES)
def test_ioredis_uses_sluice_without_noticing(node: str, sluice: ThreadedServer,
                                              package: str) -> None:
    report = run_exercise(node, sluice.port, package)
    # Sluice accepts CLIENT SETINFO (Redis 7.2+), so MONITOR shows both, before the INFO
    # ready check; ioredis 6 opens with `hello 3` and gets RESP3.
    handshake = [[str(a) for a in args] for args in report["handshake"]]
    setinfo = [args for args in handshake if args[:2] == ["client", "SETINFO"]]
    assert sorted(setinfo) == [["client", "SETINFO", "LIB-NAME", "ioredis"],
                               ["client", "SETINFO", "LIB-VER", PINNED[package]]]
    assert handshake.index(setinfo[0]) < handshake.index(["info"])
    assert report["protocol"] == (3 if package == "ioredis6" else 2)
    assert (handshake[0] == ["hello", "3"]) == (package == "ioredis6")


@pytest.mark.differential
@pytest.mark.parametrize("package", PACKAGES)
def test_exercise_expectations_hold_on_redis(node: str, reference: ProcessServer,
                                             package: str) -> None:
    # The exercise's expectations hold on redis-server too, handshake included: like Sluice,
    # Redis 7.2+ accepts CLIENT SETINFO, so MONITOR shows both before the ready check.
    report = run_exercise(node, reference.port, package)
    handshake = [[str(a) for a in args] for args in report["handshake"]]
    assert sorted(a for a in handshake if a[:2] == ["client", "SETINFO"]) == [
        ["client", "SETINFO", "LIB-NAME", "ioredis"],
        ["client", "SETINFO", "LIB-VER", PINNED[package]]]
