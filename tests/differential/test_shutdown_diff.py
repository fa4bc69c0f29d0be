"""Shutting down as redis-server 8.6.3 does, by SHUTDOWN and by signals: a final snapshot
that fails keeps the server serving (unless NOSAVE / FORCE, or shutdown-on-sigterm says so);
a signal's shutdown waits for the next cron tick, so SHUTDOWN ABORT can cancel it; the first
base of an AOF switched on at run time blocks the exit; a second SIGINT during the final
save exits at once (status 1) and removes its temp file. Each scenario runs on both servers
and what can be seen from outside (replies, the process alive or its exit status, files)
is compared."""

from __future__ import annotations

import signal
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support import ProcessServer, RawClient, require_redis_server, wait_until

pytestmark = [pytest.mark.differential, pytest.mark.timeout(120)]


def _both(tmp_path: Path, args: list[str],
          scenario: Callable[[ProcessServer, Path], object]) -> list[object]:
    require_redis_server()
    outcomes = []
    for kind in ("sluice", "redis"):
        d = tmp_path / kind
        d.mkdir()
        server = ProcessServer(kind, ["--dir", str(d), "--enable-debug-command", "yes", *args],
                               cwd=str(d)).start()
        try:
            outcomes.append(scenario(server, d))
        finally:
            server.kill()
    return outcomes


def _alive(server: ProcessServer) -> bool:
    assert server.proc is not None
    return server.proc.poll() is None


def _exit_status(server: ProcessServer) -> int:
    assert server.proc is not None
    return server.proc.wait(30)


def _server_ms(r: RawClient) -> int:
    reply = r.call("TIME")  # *2 $10 <secs> $6 <usecs>
    parts = reply.split(b"\r\n")
    return int(parts[2]) * 1000 + int(parts[4]) // 1000


def _after_cron_ticks(r: RawClient) -> None:
    """Half a second of the server's own time: five ticks of its cron at hz 10, the one
    that acts on a signal's shutdown (there is no counter of them to wait on)."""
    start = _server_ms(r)
    wait_until(lambda: _server_ms(r) - start >= 500, what="the cron to tick")


def _unwritable_dump(d: Path) -> None:
    (d / "dump.rdb").mkdir()  # a directory where the snapshot goes: the rename fails


def test_a_failed_final_save_keeps_the_server_up(tmp_path: Path) -> None:
    def scenario(server: ProcessServer, d: Path) -> object:
        r = RawClient(server.port)
        r.call("SET", "k", "v")
        _unwritable_dump(d)
        refused = r.call("SHUTDOWN")
        assert server.proc is not None
        server.proc.send_signal(signal.SIGTERM)
        _after_cron_ticks(r)  # the tick that handles the signal tries the save, and stays
        up = r.call("PING")
        r.send("SHUTDOWN", "NOSAVE")
        return refused, up, _exit_status(server)

    ours, theirs = _both(tmp_path, ["--save", "3600 1"], scenario)
    assert ours == theirs == (b"-ERR Errors trying to SHUTDOWN. Check logs.\r\n", b"+PONG\r\n", 0)


@pytest.mark.parametrize("flags", ["nosave", "force", "save force"])
def test_shutdown_on_sigterm_decides_a_signals_save(tmp_path: Path, flags: str) -> None:
    def scenario(server: ProcessServer, d: Path) -> object:
        r = RawClient(server.port)
        r.call("SET", "k", "v")
        _unwritable_dump(d)
        got = r.call("CONFIG", "SET", "shutdown-on-sigterm", flags)
        assert server.proc is not None
        server.proc.send_signal(signal.SIGTERM)
        return got, _exit_status(server)

    ours, theirs = _both(tmp_path, ["--save", "3600 1"], scenario)
    assert ours == theirs == (b"+OK\r\n", 0)


def test_shutdown_on_sigterm_errors_as_redis(tmp_path: Path) -> None:
    def scenario(server: ProcessServer, d: Path) -> object:
        r = RawClient(server.port)
        return [r.call("CONFIG", "SET", "shutdown-on-sigterm", v) for v in
                ("save nosave", "bogus", "now force")] + [
            r.call("CONFIG", "GET", "shutdown-on-sigterm")]

    ours, theirs = _both(tmp_path, [], scenario)
    assert ours == theirs


def test_shutdown_abort_cancels_a_signals_shutdown_before_the_cron_runs(tmp_path: Path) -> None:
    def scenario(server: ProcessServer, d: Path) -> object:
        r = RawClient(server.port)
        none_pending = r.call("SHUTDOWN", "ABORT")
        r.call("DEBUG", "PAUSE-CRON", "1")
        assert server.proc is not None
        server.proc.send_signal(signal.SIGTERM)
        aborted = wait_until(lambda: (lambda a: a if a == b"+OK\r\n" else None)(
            r.call("SHUTDOWN", "ABORT")), what="the signal to arrive")
        r.call("DEBUG", "PAUSE-CRON", "0")
        # the cron runs again, and there is nothing left for it to stop
        wait_until(lambda: b"rdb_changes_since_last_save" in r.call("INFO", "persistence"))
        return none_pending, aborted, r.call("PING"), _alive(server)

    ours, theirs = _both(tmp_path, ["--save", ""], scenario)
    assert ours == theirs
    assert ours[0].startswith(b"-ERR No shutdown in progress")


def test_an_initial_aof_rewrite_blocks_a_signals_exit(tmp_path: Path) -> None:
    def scenario(server: ProcessServer, d: Path) -> object:
        r = RawClient(server.port)
        for i in range(5):
            r.call("SET", f"k{i}", "v")
        r.call("CONFIG", "SET", "rdb-key-save-delay", "10000000")
        r.call("CONFIG", "SET", "appendonly", "yes")
        wait_until(lambda: b"aof_rewrite_in_progress:1" in r.call("INFO", "persistence"))
        assert server.proc is not None
        server.proc.send_signal(signal.SIGTERM)
        _after_cron_ticks(r)
        still = (_alive(server), r.call("PING"))
        r.call("CONFIG", "SET", "shutdown-on-sigterm", "force")
        server.proc.send_signal(signal.SIGTERM)
        return still, _exit_status(server)

    ours, theirs = _both(tmp_path, ["--save", ""], scenario)
    assert ours == theirs == ((True, b"+PONG\r\n"), 0)


def test_a_second_sigint_during_the_final_save_exits_at_once(tmp_path: Path) -> None:
    def scenario(server: ProcessServer, d: Path) -> object:
        r = RawClient(server.port)
        for i in range(20):
            r.call("SET", f"k{i}", "v")
        r.call("CONFIG", "SET", "rdb-key-save-delay", "100000")  # 2 s of saving
        assert server.proc is not None
        pid = server.proc.pid
        server.proc.send_signal(signal.SIGINT)
        temp = d / f"temp-{pid}.rdb"
        wait_until(temp.exists, what="the final save to begin")
        server.proc.send_signal(signal.SIGINT)
        return _exit_status(server), temp.exists(), (d / "dump.rdb").exists()

    ours, theirs = _both(tmp_path, ["--save", "3600 1"], scenario)
    assert ours == theirs == (1, False, False)
