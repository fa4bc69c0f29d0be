"""The ratchet's session summary: Tcl tests that pass and are not in the ledger yet."""

from __future__ import annotations

import pytest


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    from tests.conformance.test_ratchet import NEWLY_PASSING

    if not NEWLY_PASSING:
        return
    terminalreporter.section("Redis Tcl tests newly passing (make conformance UPDATE=1)")
    for unit, keys in sorted(NEWLY_PASSING.items()):
        for key in keys:
            terminalreporter.write_line(f"[{unit}] {key}")
