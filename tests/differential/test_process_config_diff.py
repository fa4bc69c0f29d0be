"""Settings that act on the process, against redis-server 8.6.3: oom-score-adj and
oom-score-adj-values (read back from /proc/<pid>/oom_score_adj of the server and of its
BGSAVE child), with their errors byte for byte."""

from __future__ import annotations

import fnmatch
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import ProcessServer, RawClient, require_redis_server, wait_until

pytestmark = pytest.mark.differential


def _score(pid: int) -> int:
    return int(Path(f"/proc/{pid}/oom_score_adj").read_text())


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[list[ProcessServer]]:
    require_redis_server()
    started = []
    for kind in ("sluice", "redis"):
        d = tmp_path / kind
        d.mkdir()
        started.append(ProcessServer(kind, ["--dir", str(d)], cwd=str(d)).start())
    yield started
    for s in started:
        s.stop()


def test_oom_score_adj_as_redis(servers: list[ProcessServer]) -> None:
    steps: list[list[object]] = [
        ["CONFIG", "SET", "oom-score-adj-values", "10 200 800"],
        ["CONFIG", "SET", "oom-score-adj", "yes"], "score",
        ["CONFIG", "SET", "oom-score-adj-values", "20 300 900"], "score",
        ["CONFIG", "SET", "oom-score-adj", "absolute"], "score",
        ["CONFIG", "GET", "oom-score-adj"], ["CONFIG", "GET", "oom-score-adj-values"],
        ["CONFIG", "SET", "oom-score-adj-values", "1 2"],
        ["CONFIG", "SET", "oom-score-adj-values", "1 2 3000"],
        ["CONFIG", "SET", "oom-score-adj-values", "1 2 x"],
        ["CONFIG", "SET", "oom-score-adj", "maybe"],
        "child",
        ["CONFIG", "SET", "oom-score-adj", "no"], "score",
    ]
    outcomes = []
    for server in servers:
        pid = server.proc.pid
        base = _score(pid)
        r = RawClient(server.port)
        got: list[object] = []
        for step in steps:
            if step == "score":  # both inherit the test runner's score: compare as read
                got.append(_score(pid))
            elif step == "child":
                r.call("SET", "k", "v")
                r.call("CONFIG", "SET", "rdb-key-save-delay", "10000000")
                r.call("BGSAVE")
                child = wait_until(lambda pid=pid: subprocess.run(
                    ["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split(),
                    what="the BGSAVE child")
                wait_until(lambda c=int(child[0]): _score(c) == 900, what="the child's score")
                got.append(_score(int(child[0])))
                r.call("CONFIG", "SET", "rdb-key-save-delay", "0")
                subprocess.run(["kill", "-9", child[0]], check=False)
                wait_until(lambda r=r: b"rdb_bgsave_in_progress:0" in r.call("INFO", "persistence"))
            else:
                got.append(r.call(*step))
        outcomes.append((got, _score(pid) == base))
        r.close()
    for i, (a, b) in enumerate(zip(outcomes[0][0], outcomes[1][0], strict=True)):
        assert a == b, (i, steps[i], a, b)
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][1]  # "no" put the original score back


@pytest.mark.parametrize(("args", "expected"), [
    (["--protected-mode", "yes"], "*connections from any local client."),
    (["--protected-mode", "no"], "*connections from any IP address on the configured network "
                                 "interface."),
    (["--protected-mode", "no", "--requirepass", "secret"], None),
    (["--protected-mode", "yes", "--user", "default", "off"], None),
])
def test_insecure_configuration_warning_as_redis(tmp_path: Path, args: list[str],
                                                 expected: str | None) -> None:
    """Once ready, a server whose default user needs no password warns in its log, by its
    protected mode and bind (both servers bind 127.0.0.1 here; binding every interface is
    left to the unit test, tests/unit/server/test_security.py)."""
    require_redis_server()
    found = []
    for kind in ("sluice", "redis"):
        d = tmp_path / kind
        d.mkdir()
        log = d / "server.log"
        server = ProcessServer(kind, ["--logfile", str(log), *args], cwd=str(d)).start()
        try:
            # the warning follows the ready line: wait for the ready line, then read
            wait_until(lambda log=log: "eady to accept connections" in log.read_text(),
                       what="the ready line")
            lines = [line for line in log.read_text().splitlines()
                     if "does not require authentication" in line]
        finally:
            server.stop()
        found.append([line[line.index("WARNING"):] for line in lines])
    assert found[0] == found[1]
    if expected is None:
        assert found[0] == []
    else:
        assert len(found[0]) == 1 and fnmatch.fnmatchcase(found[0][0], expected)


@pytest.mark.parametrize("at_start", ["no", "yes"])
def test_key_memory_histograms_only_turn_off_at_run_time(at_start: str) -> None:
    """key-memory-histograms can be turned off at run time but not on, whatever it was at
    start (Redis 8.6: 'memory tracking cannot be enabled at runtime')."""
    require_redis_server()
    steps = [["CONFIG", "SET", "key-memory-histograms", "yes"],
             ["CONFIG", "GET", "key-memory-histograms"],
             ["CONFIG", "SET", "key-memory-histograms", "no"],
             ["CONFIG", "SET", "key-memory-histograms", "yes"],
             ["CONFIG", "GET", "key-memory-histograms"]]
    outcomes = []
    for kind in ("sluice", "redis"):
        server = ProcessServer(kind, ["--key-memory-histograms", at_start]).start()
        try:
            r = RawClient(server.port)
            outcomes.append([r.call(*step) for step in steps])
            r.close()
        finally:
            server.stop()
    assert outcomes[0] == outcomes[1]
    assert b"memory tracking cannot be enabled at runtime" in outcomes[0][3]
