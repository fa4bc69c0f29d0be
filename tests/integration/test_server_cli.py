"""``sluice-server``'s command line and stop, beside redis-server 8.6.3's where they share a
habit: usage and version flags, a missing config file, configuration from standard input,
the built-in defaults, and the log lines of a stop on SIGTERM / SIGINT."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from sluice import REDIS_VERSION, __version__
from sluice.server.__main__ import build_config
from sluice.server.config import Config, ConfigError
from tests.support import answers, free_port, require_redis_server, wait_until

pytestmark = pytest.mark.timeout(60)

SLUICE = [sys.executable, "-m", "sluice.server"]


def run(cmd: list[str], stdin: str = "", cwd: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=30,
                          cwd=cwd or tempfile.gettempdir())


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help_prints_usage_on_stderr_and_exits_1_as_redis_server(flag: str) -> None:
    ours = run([*SLUICE, flag])
    assert ours.returncode == 1 and ours.stdout == ""
    assert ours.stderr.startswith("Usage: sluice-server [/path/to/sluice.conf] [options] [-]")
    assert "sluice-server - (read config from stdin)" in ours.stderr
    theirs = run([require_redis_server(), flag])
    assert (theirs.returncode, theirs.stdout) == (1, "")
    assert theirs.stderr.startswith("Usage: ")


@pytest.mark.parametrize("flag", ["--version", "-v"])
def test_version_names_sluice_and_the_redis_release_it_follows(flag: str) -> None:
    ours = run([*SLUICE, flag])
    assert ours.returncode == 0 and ours.stderr == ""
    words = dict(w.split("=", 1) for w in ours.stdout.split()[2:])
    assert ours.stdout.startswith("Sluice server v=")
    assert words["v"] == __version__ and words["redis_version"] == REDIS_VERSION
    theirs = run([require_redis_server(), flag])
    assert theirs.returncode == 0 and f"v={REDIS_VERSION} " in theirs.stdout


@pytest.mark.parametrize("argv", [["--test-memory", "64"], ["--check-system"],
                                  ["--port", "7000", "--sentinel"]])
def test_redis_server_tools_are_refused_by_name(argv: list[str]) -> None:
    out = run([*SLUICE, *argv])
    flag = next(a for a in argv if a in ("--test-memory", "--check-system", "--sentinel"))
    assert out.returncode == 1 and out.stdout == ""
    assert out.stderr.startswith(f"sluice-server: {flag}: Sluice has no ")
    assert len(out.stderr.strip().splitlines()) == 1


def test_a_missing_config_file_is_one_line_with_redis_words(tmp_path: Path) -> None:
    missing = str(tmp_path / "nope.conf")
    ours = run([*SLUICE, missing])
    expected = f"Fatal error, can't open config file '{missing}': No such file or directory"
    assert ours.returncode == 1 and ours.stderr.strip() == expected
    theirs = run([require_redis_server(), missing])
    assert theirs.returncode == 1 and theirs.stdout.rstrip().endswith(expected)


def test_a_stray_word_names_the_usage() -> None:
    out = run([*SLUICE, "-x"])
    assert out.returncode == 1
    assert out.stderr.strip() == ("Invalid argument '-x': options are --name value pairs "
                                  "(sluice-server --help shows the usage)")


def test_config_file_then_stdin_then_options_the_last_word_wins(tmp_path: Path) -> None:
    conf = tmp_path / "s.conf"
    conf.write_text("port 7001\nhz 11\nmaxclients 5\n")
    stdin = _Stdin("hz 12\nmaxclients 6\n")
    config = build_config([str(conf), "--maxclients", "7", "-"], stdin=stdin)
    assert (config.port, config.hz, config.maxclients) == (7001, 12, 7)
    assert config.config_file == str(conf)
    only_stdin = build_config(["-", "--hz", "13"], stdin=_Stdin("port 7002\nhz 12\n"))
    assert (only_stdin.port, only_stdin.hz, only_stdin.config_file) == (7002, 13, None)
    with pytest.raises(ConfigError, match="at line 1\n>>> 'bogus 1'\nBad directive"):
        build_config(["-"], stdin=_Stdin("bogus 1\n"))


class _Stdin:
    def __init__(self, text: str) -> None:
        self.text = text

    def read(self) -> str:
        return self.text


def test_a_server_reads_its_config_from_stdin(tmp_path: Path) -> None:
    port = free_port()
    proc = subprocess.Popen([*SLUICE, "-"], stdin=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, cwd=tmp_path)
    assert proc.stdin is not None and proc.stderr is not None
    proc.stdin.write(f"port {port}\nbind 127.0.0.1\nsave \"\"\nhz 17\n".encode())
    proc.stdin.close()
    try:
        client = redis.Redis(port=port, decode_responses=True)
        wait_until(lambda: answers(port), what="the server to answer")
        assert client.config_get("hz") == {"hz": "17"}
    finally:
        proc.terminate()
        proc.wait(15)
        log = proc.stderr.read().decode()
        proc.stderr.close()
    assert "* Reading config from stdin" in log


@pytest.mark.parametrize("argv, expected", [
    (["--requirepass", "--secret"], {"requirepass": "--secret"}),
    (["--save"], {"save": []}),
    (["--save", "--hz", "20"], {"save": [], "hz": 20}),
    (["--save", "60", "1", "300", "10"], {"save": [(60, 1), (300, 10)]}),
    (["--port 7003", "--hz", "21"], {"port": 7003, "hz": 21}),
])
def test_command_line_options_follow_redis_servers_rules(argv: list[str], expected: dict) -> None:
    config = Config()
    config.load_argv(argv)
    assert {name: getattr(config, name) for name in expected} == expected


def test_settings_sluice_cannot_honour_are_refused_at_start() -> None:
    """replicaof/slaveof (no replication) and daemonize (runs in the foreground) are known
    settings whose only accepted values are the ones Sluice lives by."""
    config = Config()
    config.load_argv(["--replicaof", "no", "one", "--slaveof", "NO ONE", "--daemonize", "no"])
    for argv, word in ((["--replicaof", "127.0.0.1", "6380"], "replicaof"),
                       (["--slaveof", "127.0.0.1", "6380"], "replicaof"),
                       (["--daemonize", "yes"], "following: no")):
        with pytest.raises(ConfigError, match=word):
            Config().load_argv(argv)


@pytest.mark.parametrize(("argv", "line", "reason"), [
    # redis-server 8.6.3's refusals of the same command lines (its Tcl introspection test)
    (["--replicaof", "127.0.0.1", "abc"], """'replicaof "127.0.0.1" "abc"'""",
     "Invalid master port"),
    (["--replicaof", "--127.0.0.1", "abc"], """'replicaof "--127.0.0.1" "abc"'""",
     "Invalid master port"),
    (["--replicaof", "127.0.0.1", "70000"], """'replicaof "127.0.0.1" "70000"'""",
     "Invalid master port"),
    (["--replicaof", "--127.0.0.1", "--abc"], """'replicaof "--127.0.0.1"'""",
     "wrong number of arguments"),
])
def test_replicaof_errors_as_redis(argv: list[str], line: str, reason: str) -> None:
    with pytest.raises(ConfigError) as e:
        Config().load_argv(argv)
    assert f">>> {line}" in str(e.value) and reason in str(e.value)


def _default_settings(cmd: list[str], port: int, cwd: str) -> dict[str, str]:
    proc = subprocess.Popen([*cmd, "--port", str(port)], cwd=cwd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        client = redis.Redis(port=port, decode_responses=True)
        wait_until(lambda: answers(port), what="the server to answer")
        return {name: client.config_get(name)[name]
                for name in ("save", "appendonly", "protected-mode", "dbfilename", "dir",
                             "appendfsync", "bind")}
    finally:
        proc.kill()
        proc.wait(10)


def test_defaults_are_redis_servers_but_the_bind_address(tmp_path: Path) -> None:
    """What README.md says: without a config file the defaults are Redis's built-in ones
    (save points included), except ``bind``, which is the redis.conf Redis ships
    (``127.0.0.1 -::1``) rather than the compiled-in ``* -::*``."""
    ours = _default_settings(SLUICE, free_port(), str(tmp_path))
    theirs = _default_settings([require_redis_server()], free_port(), str(tmp_path))
    assert ours.pop("bind") == "127.0.0.1 -::1" and theirs.pop("bind") == "* -::*"
    assert ours == theirs
    assert ours["save"] == "3600 1 300 100 60 10000"


@pytest.fixture
def stoppable(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], redis.Redis, Path]]:
    port = free_port()
    env = dict(os.environ, SLUICE_LOOP="asyncio")
    proc = subprocess.Popen(
        [*SLUICE, "--port", str(port), "--bind", "127.0.0.1", "--appendonly", "yes",
         "--save", "3600 1", "--dir", str(tmp_path)],
        cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    client = redis.Redis(port=port)
    try:
        wait_until(lambda: answers(port), what="the server to answer")
        yield proc, client, tmp_path
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        client.close()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_logs_each_step_of_a_clean_stop(
        stoppable: tuple[subprocess.Popen[bytes], redis.Redis, Path], sig: signal.Signals) -> None:
    proc, client, data = stoppable
    client.set("k", "v")
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0
    lines = [line.split(" ", 6)[-1] for line in err.decode().splitlines()]
    steps = [f"Received {sig.name} scheduling shutdown...", "User requested shutdown...",
             "Calling fsync() on the AOF file.", "Saving the final RDB snapshot before exiting.",
             "DB saved on disk", "Sluice is now ready to exit, bye bye..."]
    assert [line for line in lines if line in steps] == steps
    assert (data / "dump.rdb").exists()
    # Marks as redis-server's log: '#' for warnings, '*' for notices.
    assert any(" # Received " in line for line in err.decode().splitlines())


def test_systemd_hears_ready_once_the_server_answers_and_stopping_at_a_signal(
        tmp_path: Path) -> None:
    """``supervised systemd`` with systemd's NOTIFY_SOCKET: READY=1 comes when the port
    answers (a Type=notify unit starts its dependents then), STOPPING=1 at SIGTERM."""
    path = str(tmp_path / "notify")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    sock.settimeout(30)
    port = free_port()
    proc = subprocess.Popen([*SLUICE, "--port", str(port), "--save", "", "--supervised",
                             "systemd"], cwd=tmp_path, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=dict(os.environ, NOTIFY_SOCKET=path))
    try:
        got = []
        while b"READY=1\n" not in got:
            got.append(sock.recv(100))
        assert answers(port)  # ready means ready: the listener is open
        assert got[0] == b"STATUS=Sluice is loading...\n"
        proc.send_signal(signal.SIGTERM)
        assert sock.recv(100) == b"STOPPING=1\n"
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        sock.close()
