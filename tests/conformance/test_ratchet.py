"""The conformance ratchet in ``make test``: the Tcl tests Sluice passes keep passing.

Every unit with entries in ``passing.txt`` is run (Redis's own Tcl suite, external mode, a
fresh Sluice per unit, two units at a time: ``runner.run_unit``) once per session; each unit
is one pytest test that fails when a ledger test of that unit did not pass, with the suite's
own failure text. Tests that pass but are not in the ledger yet are listed at the end of the
session (``make conformance UPDATE=1`` adds them). Units without ledger entries (families
Sluice lacks) are left to ``make conformance``.

Needs ``tclsh`` and the suite's tree (``make test`` installs and fetches both); without them
the tests skip, or fail under ``CI=true``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests import build_reference_redis as build
from tests.conformance import ledger, report
from tests.conformance.runner import Options, SluiceTarget, UnitRun

LEDGER, _ = ledger.read(ledger.LEDGER)
UNITS = sorted(LEDGER)
# What the session found passing beyond the ledger: printed by conftest's summary hook.
NEWLY_PASSING: dict[str, list[str]] = {}

pytestmark = pytest.mark.conformance


def _need(what: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"{what} is required under CI (make test installs it)")
    pytest.skip(f"{what} missing (make test installs it)")


@pytest.fixture(scope="session")
def runs() -> dict[str, UnitRun]:
    if not shutil.which("tclsh"):
        _need("tclsh (Debian's tcl)")
    if not build.has_suite():
        _need(f"Redis {build.VERSION}'s Tcl suite ({build.suite_dir()})")
    from tests.conformance.__main__ import run_all

    # A stall limit well above the slowest single test Sluice runs today (list-3's stress
    # tests), well below what would let a lost reply eat CI's time.
    opts = Options(limit=600, stall=60)
    done = run_all(Path(build.suite_dir()), UNITS, SluiceTarget(), opts, jobs=2)
    verdict = report.judge(done, LEDGER)
    NEWLY_PASSING.update(verdict.new)
    return {r.unit: r for r in done}


@pytest.mark.parametrize("unit", UNITS)
def test_ledger_tests_still_pass(unit: str, runs: dict[str, UnitRun]) -> None:
    run = runs[unit]
    lost = sorted(LEDGER[unit] - set(run.keys("ok")))
    if lost:
        pytest.fail(f"{len(lost)} of {len(LEDGER[unit])} ledger tests of {unit} did not pass "
                    f"(Sluice passed {run.passed}, failed {run.failed}"
                    + (f"; {run.stopped}" if run.stopped else "") + "):\n"
                    + report.explain(run, lost), pytrace=False)
