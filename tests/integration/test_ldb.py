"""The Lua debugger the way users meet it: ``redis-cli --ldb`` (SCRIPT DEBUG YES: a forked
session, its writes rolled back) and ``--ldb-sync-mode`` (SYNC: kept), with commands typed
on its standard input. The session's exact bytes are compared with redis-server's in
tests/differential/test_ldb_diff.py."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import ProcessServer

pytestmark = [pytest.mark.timeout(60),
              pytest.mark.skipif(not shutil.which("redis-cli"), reason="redis-cli not installed")]

SCRIPT = 'local x = redis.call("incr", KEYS[1])\nredis.debug(x)\nreturn x\n'


@pytest.fixture(scope="module")
def server() -> Iterator[ProcessServer]:
    s = ProcessServer("sluice").start()
    yield s
    s.stop()


def _cli(server: ProcessServer, script: Path, mode: str, typed: str) -> str:
    out = subprocess.run(["redis-cli", "-p", str(server.port), mode, "--eval", str(script),
                          "counter"], input=typed, capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_redis_cli_ldb(server: ProcessServer, tmp_path: Path) -> None:
    script = tmp_path / "incr.lua"
    script.write_text(SCRIPT)
    r = server.client()
    r.delete("counter")
    forked = _cli(server, script, "--ldb", "s\np x\nc\n")
    for line in ("* Stopped at 1, stop reason = step over", "<redis> incr counter",
                 "<reply> 1", "<value> 1", "<debug> line 2: 1", "(integer) 1",
                 "(Lua debugging session ended -- dataset changes rolled back)"):
        assert line in forked, line
    assert r.get("counter") is None  # the child's INCR is gone with it
    kept = _cli(server, script, "--ldb-sync-mode", "c\n")
    assert "(Lua debugging session ended)" in kept and "(integer) 1" in kept
    assert r.get("counter") == b"1"
    assert r.ping()  # the server serves again after the synchronous session
    r.close()
