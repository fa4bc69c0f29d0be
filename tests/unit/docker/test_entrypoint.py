"""docker/entrypoint.sh without Docker: run by ``sh`` with stand-ins for ``id``, ``setpriv``,
``find`` and ``sluice-server`` on PATH that record what they were asked to do."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

Runner = Callable[..., list[str]]
ENTRYPOINT = Path(__file__).resolve().parents[3] / "docker" / "entrypoint.sh"

FAKES = {
    # root until setpriv has run (it exports FAKE_UID=999 to what it executes)
    "id": 'echo "${FAKE_UID:-0}"\n',
    "setpriv": 'echo "setpriv $*" >> "$LOG"\n'
               'while [ "${1#--}" != "$1" ]; do shift; done\n'
               'FAKE_UID=999 exec "$@"\n',
    "find": 'echo "find $*" >> "$LOG"\n',
    "sluice-server": 'echo "exec sluice-server" >> "$LOG"\n'
                     'for a in "$@"; do echo "arg=$a" >> "$LOG"; done\n'
                     'echo "umask=$(umask)" >> "$LOG"\n',
    "sh-user-command": 'echo "exec other $*" >> "$LOG"\n',
}


@pytest.fixture
def run(tmp_path: Path) -> Callable[..., list[str]]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in FAKES.items():
        script = bin_dir / name
        script.write_text("#!/bin/sh\n" + body)
        script.chmod(0o755)
    log = tmp_path / "log"

    def runner(*args: str, uid: str | None = None, conf: str | None = None) -> list[str]:
        if conf is not None:
            (tmp_path / "my.conf").write_text(conf)
        env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "LOG": str(log)}
        if uid is not None:
            env["FAKE_UID"] = uid
        log.write_text("")
        done = subprocess.run([shutil.which("sh") or "/bin/sh", str(ENTRYPOINT), *args],
                              cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=30)
        assert done.returncode == 0, done.stderr
        return log.read_text().splitlines()

    return runner


def server_args(lines: list[str]) -> list[str]:
    assert "exec sluice-server" in lines
    return [line[4:] for line in lines if line.startswith("arg=")]


DEFAULTS = ["--bind", "* -::*", "--protected-mode", "no", "--dir", "/data", "--appendonly", "yes"]


def test_no_arguments_start_the_server_with_the_containers_defaults_as_the_sluice_user(
        run: Runner) -> None:
    lines = run()
    assert lines[0] == "find . ! -user sluice -exec chown sluice:sluice {} +"
    assert lines[1] == "setpriv --reuid=sluice --regid=sluice --init-groups " \
        f"{ENTRYPOINT} sluice-server"
    assert server_args(lines) == DEFAULTS
    assert "umask=0077" in lines


def test_options_go_after_the_defaults_so_they_win(run: Runner) -> None:
    lines = run("--appendonly", "no", "--requirepass", "s3cret word")
    assert server_args(lines) == [*DEFAULTS, "--appendonly", "no", "--requirepass", "s3cret word"]


def test_a_config_file_comes_first_and_keeps_the_directives_it_sets(run: Runner) -> None:
    conf = "# mine\nbind 10.0.0.5\n  Dir /srv/sluice\nport 7000\n"
    lines = run("my.conf", "--hz", "20", conf=conf)
    assert server_args(lines) == ["my.conf", "--protected-mode", "no", "--appendonly", "yes",
                                  "--hz", "20"]


def test_the_explicit_command_name_is_the_same(run: Runner) -> None:
    assert server_args(run("sluice-server", "--port", "7000")) == [*DEFAULTS, "--port", "7000"]


def test_config_from_stdin_stays_first(run: Runner) -> None:
    assert server_args(run("-", "--hz", "5")) == ["-", *DEFAULTS, "--hz", "5"]


def test_already_non_root_starts_directly(run: Runner) -> None:
    lines = run("--hz", "7", uid="1000")
    assert not any(line.startswith(("find", "setpriv")) for line in lines)
    assert server_args(lines) == [*DEFAULTS, "--hz", "7"]


def test_another_command_runs_as_given_without_a_user_change(run: Runner) -> None:
    lines = run("sh-user-command", "--flag")
    assert lines == ["exec other --flag"]


def test_version_and_help_are_passed_alone(run: Runner) -> None:
    assert server_args(run("--version")) == ["--version"]
    assert server_args(run("sluice-server", "-h")) == ["-h"]
