"""The conformance ratchet in ``make test``: the Tcl tests Sluice passes keep passing.

Every unit with entries in ``passing.txt`` is run once per session (Redis's own Tcl suite,
external mode, a fresh Sluice per unit: ``runner.run_unit``); each unit is one pytest test
that fails when a ledger test of that unit did not pass, with the suite's own failure text.
Tests that pass but are not in the ledger yet are listed at the end of the session
(``make conformance UPDATE=1`` adds them). Units without ledger entries (families Sluice
lacks) are left to ``make conformance``.

The units run in the background, one at a time, while the rest of the session runs
(``conftest.py`` starts them once collection is done and moves these tests to the end): the
rest of the suite and the Tcl units both spend most of their time waiting, so the ratchet
adds little to ``make test``'s time. Units still queued when the session reaches these tests
run two at a time. ``SLUICE_CONFORMANCE_JOBS=2`` runs two from the start.

Needs ``tclsh`` and the suite's tree (``make test`` installs and fetches both); without them
the tests skip, or fail under ``CI=true``.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import threading
from pathlib import Path

import pytest

from tests import build_reference_redis as build
from tests.conformance import ledger, report
from tests.conformance.runner import (
    SLOW_FIRST,
    Options,
    SluiceTarget,
    UnitRun,
    run_all,
    run_unit,
)

LEDGER, _ = ledger.read(ledger.LEDGER)
UNITS = sorted(LEDGER)
# What the session found passing beyond the ledger: printed by conftest's summary hook.
NEWLY_PASSING: dict[str, list[str]] = {}

pytestmark = pytest.mark.conformance


def missing() -> str:
    """What the ratchet lacks on this machine, or ``""``."""
    if not shutil.which("tclsh"):
        return "tclsh (Debian's tcl)"
    if not build.has_suite():
        return f"Redis {build.VERSION}'s Tcl suite ({build.suite_dir()})"
    return ""


class Background:
    """The ledger's units, run from a queue by worker threads: one from the end of
    collection (the rest of the session runs beside it), a second one once the session has
    reached the ratchet's tests (``result()``) and the machine is free for two."""

    def __init__(self, units: list[str]) -> None:
        # Slow units first (runner.SLOW_FIRST), so that two workers finish together.
        self.queue = sorted(units, key=lambda u: u not in SLOW_FIRST)
        self.lock = threading.Lock()
        # The stall limit stays above the slowest single test of a ledger unit today (100 s,
        # in unit/pause: an EXEC waits out a CLIENT PAUSE that a failing scripting test left
        # behind). Once a unit's ledger tests have all reported, 10 s without progress end it.
        self.cancel = threading.Event()
        self.opts = Options(limit=600, stall=120, cancel=self.cancel)
        self.runs: dict[str, UnitRun] = {}
        self.errors: list[BaseException] = []
        self.workers: list[threading.Thread] = []

    def start(self) -> Background:
        for _ in range(int(os.environ.get("SLUICE_CONFORMANCE_JOBS", "1"))):
            self._add_worker()
        return self

    def _add_worker(self) -> None:
        slot = len(self.workers)  # a port range of its own, as run_all gives each job
        worker = threading.Thread(target=self._work, args=(slot,), daemon=True,
                                  name=f"conformance-{slot}")
        self.workers.append(worker)
        worker.start()

    def _work(self, slot: int) -> None:
        opts = dataclasses.replace(self.opts,
                                   baseport=self.opts.baseport + slot * self.opts.portcount)
        while not self.cancel.is_set():
            with self.lock:
                if not self.queue:
                    return
                unit = self.queue.pop(0)
            try:
                run = run_unit(Path(build.suite_dir()), unit, SluiceTarget(),
                               dataclasses.replace(opts, watch=frozenset(LEDGER.get(unit, ()))))
            except BaseException as e:  # reported by the tests, not lost on a thread
                self.errors.append(e)
                return
            with self.lock:
                self.runs[unit] = run

    def result(self) -> dict[str, UnitRun]:
        with self.lock:
            if self.queue and len(self.workers) < 2:
                self._add_worker()
        for worker in list(self.workers):
            worker.join()
        if self.errors:
            raise self.errors[0]
        return self.runs

    def stop(self) -> None:
        self.cancel.set()
        for worker in self.workers:
            worker.join(60)


BACKGROUND: list[Background] = []  # started by conftest.py when these tests are selected


def start_background(units: list[str] | None = None) -> None:
    """Start the units (all of the ledger's, or those of the selected tests) once."""
    if not BACKGROUND and UNITS and not missing():
        BACKGROUND.append(Background(sorted(units or UNITS)).start())


@pytest.fixture(scope="session")
def runs() -> dict[str, UnitRun]:
    what = missing()
    if what:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{what} is required under CI (make test installs it)")
        pytest.skip(f"{what} missing (make test installs it)")
    start_background()  # when conftest did not (this module was run on its own)
    done = BACKGROUND[0].result()
    NEWLY_PASSING.update(report.judge(list(done.values()), LEDGER).new)
    return done


def _run_of(unit: str, runs: dict[str, UnitRun]) -> UnitRun:
    if unit not in runs:  # not selected when the units started (a test rerun by hand)
        runs.update({r.unit: r for r in run_all(Path(build.suite_dir()), [unit],
                                                SluiceTarget(), Options(stall=120), 1)})
    return runs[unit]


@pytest.mark.parametrize("unit", UNITS)
def test_ledger_tests_still_pass(unit: str, runs: dict[str, UnitRun]) -> None:
    run = _run_of(unit, runs)
    lost = sorted(LEDGER[unit] - set(run.keys("ok")))
    if lost:
        pytest.fail(f"{len(lost)} of {len(LEDGER[unit])} ledger tests of {unit} did not pass "
                    f"(Sluice passed {run.passed}, failed {run.failed}"
                    + (f"; {run.stopped}" if run.stopped else "") + "):\n"
                    + report.explain(run, lost), pytrace=False)
