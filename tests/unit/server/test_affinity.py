"""CPU lists (server_cpulist and friends): parsing as Redis's setcpuaffinity, and pinning."""

from __future__ import annotations

import logging
import os
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from sluice.server.affinity import (
    CPU_SETSIZE,
    apply_cpulist,
    parse_cpulist,
    pin_bio_thread,
    pin_main_thread,
)
from sluice.server.latency import LatencyMonitor
from sluice.server.persistence import fork_writer

pytestmark = pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="Linux only")


@pytest.mark.parametrize(("text", "cpus"), [
    ("0", {0}),
    ("0,2,3", {0, 2, 3}),
    ("0,2-3", {0, 2, 3}),
    ("0-20:2", set(range(0, 21, 2))),
    ("1-3,5", {1, 2, 3, 5}),
    ("0-4:2,6", {0, 2, 4, 6}),
    ("007", {7}),
    ("3-3", {3}),
    ("0-4000000000", set(range(CPU_SETSIZE))),  # bounded work, as the kernel's CPU_SET
    ("5000", set()),  # parses; the kernel refuses an empty set
])
def test_lists_that_parse(text: str, cpus: set[int]) -> None:
    assert parse_cpulist(text) == cpus


@pytest.mark.parametrize("text", [
    "", "a", "1,", ",1", "1,,2", "1-", "-1", "3-1", "0-4:0", " 1", "1 ", "1:2", "1-3x",
    "1-2-3", "1-3:2:1", "1-3:", "+1", "\uff11",  # a fullwidth digit: not ASCII
])
def test_lists_that_do_not_parse(text: str) -> None:
    assert parse_cpulist(text) is None


def _in_thread(fn: Callable[[], Any]) -> Any:
    """Run ``fn`` on a new thread (pinning it, not the test runner) and return its result."""
    out: list[Any] = []
    t = threading.Thread(target=lambda: out.append(fn()))
    t.start()
    t.join()
    return out[0]


CPU = max(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 0


def test_apply_pins_the_calling_thread_only() -> None:
    before = os.sched_getaffinity(0)

    def pin() -> set[int]:
        apply_cpulist("server_cpulist", str(CPU))
        return os.sched_getaffinity(0)

    assert _in_thread(pin) == {CPU}
    assert os.sched_getaffinity(0) == before


@pytest.mark.parametrize(("text", "message"), [
    ("0-", "server_cpulist '0-' is not a CPU list (like 0,2-3 or 0-20:2): not pinned"),
    ("5000", "server_cpulist '5000': can't set CPU affinity: Invalid argument"),
])
def test_a_list_that_cannot_be_applied_is_logged_and_changes_nothing(
        text: str, message: str, caplog: pytest.LogCaptureFixture) -> None:
    before = os.sched_getaffinity(0)

    def pin() -> set[int]:
        apply_cpulist("server_cpulist", text)
        return os.sched_getaffinity(0)

    with caplog.at_level(logging.WARNING, logger="sluice"):
        assert _in_thread(pin) == before
    assert message in caplog.text


def test_bio_thread_gets_its_list_or_the_cpus_the_process_started_with() -> None:
    start = os.sched_getaffinity(0)

    def bio(cpulist: str) -> set[int]:
        os.sched_setaffinity(0, {CPU})  # as if server_cpulist had pinned the thread's parent
        pin_bio_thread(cpulist, start)
        return os.sched_getaffinity(0)

    assert _in_thread(lambda: bio("")) == start
    assert _in_thread(lambda: bio(str(min(start)))) == {min(start)}


def test_forked_writer_pins_itself_as_its_setting_says(tmp_path: Path) -> None:
    out = tmp_path / "cpus"
    server: Any = SimpleNamespace(config=SimpleNamespace(bgsave_cpulist=str(CPU),
                                                         oom_score_adj="no"),
                                  stats=Counter(), latency=LatencyMonitor())
    pid = fork_writer(server, lambda: out.write_text(repr(sorted(os.sched_getaffinity(0)))),
                      "bgsave_cpulist")
    assert pid > 0
    assert server.stats["total_forks"] == 1  # INFO total_forks counts it
    assert server.stats["latest_fork_usec"] > 0  # and latest_fork_usec the parent's stall
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert out.read_text() == repr([CPU])


def test_start_names_the_lists_that_will_not_parse(caplog: pytest.LogCaptureFixture) -> None:
    """The forked writers pin themselves without logging; a bad list is reported at start."""
    config = SimpleNamespace(server_cpulist="", bio_cpulist="", bgsave_cpulist="1-",
                             aof_rewrite_cpulist="0")
    with caplog.at_level(logging.WARNING, logger="sluice"):
        assert pin_main_thread(config) == os.sched_getaffinity(0)
    assert "bgsave_cpulist '1-' is not a CPU list" in caplog.text
    assert "aof_rewrite_cpulist" not in caplog.text
