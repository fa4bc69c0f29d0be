"""HOTKEYS START's parser (``commands.hotkeys.parse_start``): Redis's order of checks."""

from __future__ import annotations

import pytest

from sluice.commands import errors
from sluice.commands.errors import CommandError
from sluice.commands.hotkeys import parse_start
from sluice.storage.hotkeys import CPU, NET


def _start(line: str) -> tuple[int, int, int, int]:
    return parse_start([b"HOTKEYS", b"START", *line.encode().split()])


@pytest.mark.parametrize(("line", "parsed"), [
    ("METRICS 1 CPU", (CPU, 10, 0, 1)),
    ("metrics 2 net cpu", (CPU | NET, 10, 0, 1)),
    ("METRICS 2 GPU NET", (NET, 10, 0, 1)),  # an unknown metric beside a valid one: allowed
    ("METRICS 1 CPU COUNT 64 DURATION 3 SAMPLE 2147483647", (CPU, 64, 3000, 2**31 - 1)),
    ("METRICS 1 NET sample 5 count 1 COUNT 7", (NET, 7, 0, 5)),  # the last one wins
])
def test_valid(line: str, parsed: tuple[int, int, int, int]) -> None:
    assert _start(line) == parsed


@pytest.mark.parametrize(("line", "error"), [
    ("", errors.HOTKEYS_METRICS_REQUIRED),
    ("METRICS", errors.HOTKEYS_METRICS_REQUIRED),
    ("COUNT 1 METRICS 1 CPU", errors.HOTKEYS_METRICS_REQUIRED),
    ("METRICS 0", errors.HOTKEYS_METRICS_COUNT),
    ("METRICS 3 CPU NET GPU", errors.HOTKEYS_METRICS_COUNT),
    ("METRICS 01 CPU", errors.HOTKEYS_METRICS_COUNT),  # string2l is strict
    ("METRICS 2 CPU", errors.HOTKEYS_METRICS_MISMATCH),
    ("METRICS 1 CPU NET", errors.SYNTAX),  # NET is read as an option
    ("METRICS 2 GPU TPU", errors.HOTKEYS_NO_VALID_METRICS),
    ("METRICS 2 CPU CPU", errors.HOTKEYS_METRIC_TWICE % "CPU"),
    ("METRICS 2 net NET", errors.HOTKEYS_METRIC_TWICE % "NET"),
    ("METRICS 1 CPU COUNT", errors.SYNTAX),
    ("METRICS 1 CPU COUNT 65", errors.HOTKEYS_COUNT_RANGE),
    ("METRICS 1 CPU COUNT x", errors.HOTKEYS_COUNT_RANGE),
    ("METRICS 1 CPU DURATION 0", errors.HOTKEYS_DURATION_RANGE),
    ("METRICS 1 CPU DURATION 1000001", errors.HOTKEYS_DURATION_RANGE),
    ("METRICS 1 CPU SAMPLE 0", errors.HOTKEYS_SAMPLE_RANGE),
    ("METRICS 1 CPU SAMPLE 2147483648", errors.HOTKEYS_SAMPLE_RANGE),
    ("METRICS 1 CPU SLOTS x", errors.HOTKEYS_SLOTS_STANDALONE),  # before its arguments
    ("METRICS 1 CPU SLOTS", errors.SYNTAX),
    ("METRICS 1 CPU COUNT 0 SLOTS 1 0", errors.HOTKEYS_COUNT_RANGE),  # left to right
])
def test_errors(line: str, error: str) -> None:
    with pytest.raises(CommandError) as e:
        _start(line)
    assert e.value.message == error.encode()
