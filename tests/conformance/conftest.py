"""The ratchet's place in the session: its units start in the background as soon as
collection is done, its tests run last, and the summary lists Tcl tests that newly pass."""

from __future__ import annotations

import pytest

RATCHET = "tests/conformance/test_ratchet.py::"


def _is_ratchet(item: pytest.Item) -> bool:
    return item.nodeid.startswith(RATCHET)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items[:] = [i for i in items if not _is_ratchet(i)] + [i for i in items if _is_ratchet(i)]


def pytest_collection_finish(session: pytest.Session) -> None:
    units = [str(i.callspec.params["unit"]) for i in session.items
             if _is_ratchet(i) and isinstance(i, pytest.Function) and hasattr(i, "callspec")]
    if units:
        from tests.conformance.test_ratchet import start_background

        start_background(units)


def pytest_sessionfinish() -> None:
    """Stop the units if the session ends before the ratchet's tests ran (-x, Ctrl-C)."""
    from tests.conformance.test_ratchet import BACKGROUND

    for background in BACKGROUND:
        background.stop()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    from tests.conformance.test_ratchet import NEWLY_PASSING

    if not NEWLY_PASSING:
        return
    terminalreporter.section("Redis Tcl tests newly passing (make conformance UPDATE=1)")
    for unit, keys in sorted(NEWLY_PASSING.items()):
        for key in keys:
            terminalreporter.write_line(f"[{unit}] {key}")
