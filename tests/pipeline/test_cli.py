"""The pipeline commands as a user meets them, without Spark: one-line errors with what to do
(the server and key checks run before the JVM starts), ``--debug``, progress by phases with
live rows, the trim in steps, the streaming job's batch lines."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import redis

from sluice.pipeline.archive import trim_in_steps
from sluice.pipeline.errors import PipelineError, describe
from sluice.pipeline.ids import StreamID
from sluice.pipeline.progress import Phases, ProgressListener
from sluice.pipeline.reader import _progress_sender
from sluice.pipeline.session import JAVA_OPTIONS, LOG4J2_PROPERTIES, submit_args
from sluice.pipeline.stream_job import BatchPrinter, batch_line, lag_ms
from tests.support import free_port, wait_until

REPO = Path(__file__).resolve().parents[2]


def run(module: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True,
                          timeout=60, env=env, cwd=REPO)


def archive_cli(url: str, *extra: str, streams: str = "orders") -> subprocess.CompletedProcess[str]:
    return run("sluice.pipeline.archive", "--url", url, "--streams", streams,
               "--out", "/nonexistent-never-written", *(extra or ("--older-than", "7d")))


def job_cli(url: str, streams: str = "orders") -> subprocess.CompletedProcess[str]:
    return run("sluice.pipeline.stream_job", "--url", url, "--streams", streams,
               "--out", "/nonexistent-out", "--checkpoint", "/nonexistent-ckpt")


def one_line(done: subprocess.CompletedProcess[str], prog: str, status: int = 1) -> str:
    assert done.returncode == status, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"{prog}: error: ")
    return lines[0]


def closed_port_url() -> str:
    return f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there


@pytest.mark.parametrize("prog", ["sluice-archive", "sluice.pipeline.stream_job"])
def test_a_closed_port_is_one_line_saying_to_check_the_url(prog: str) -> None:
    url = closed_port_url()
    done = archive_cli(url) if prog == "sluice-archive" else job_cli(url)
    line = one_line(done, prog)
    assert f"cannot connect to 127.0.0.1:{url.split(':')[2]}" in line
    assert "is the server running there? Check --url" in line


@pytest.mark.parametrize("prog", ["sluice-archive", "sluice.pipeline.stream_job"])
def test_a_key_that_is_not_a_stream_is_named(prog: str, server: Any, r: redis.Redis) -> None:
    r.set("notastream", "x")
    r.xadd("orders", {"a": "1"})
    done = (archive_cli(server.url, streams="orders,notastream") if prog == "sluice-archive"
            else job_cli(server.url, "orders,notastream"))
    line = one_line(done, prog)
    assert "key 'notastream' holds a string, not a stream: remove it from --streams" in line


def test_a_wrong_password_says_where_to_put_the_right_one(server: Any) -> None:
    url = server.url.replace("redis://", "redis://nobody:wrong@")
    line = one_line(archive_cli(url), "sluice-archive")
    assert "refused the login" in line and "redis://user:password@host:port/db" in line
    assert "wrong" not in line.split("refused")[0]  # no credentials echoed


@pytest.mark.parametrize("args, words", [
    (("--older-than", "7x"), "invalid duration '7x': expected e.g. 90s, 12h, 7d"),
    (("--before-id", "nope"), "invalid stream ID 'nope'"),
])
def test_a_bad_argument_is_one_usage_line(args: tuple[str, ...], words: str) -> None:
    done = archive_cli(closed_port_url(), *args)
    line = one_line(done, "sluice-archive", status=2)
    assert words in line and line.endswith("(--help shows the usage)")


def test_debug_shows_the_traceback() -> None:
    done = archive_cli(closed_port_url(), "--older-than", "7d", "--debug")
    assert done.returncode == 1
    assert "Traceback (most recent call last)" in done.stderr
    assert "redis.exceptions.ConnectionError" in done.stderr


class _Named(Exception):
    pass


def _error(module: str, name: str, text: str) -> Exception:
    cls = type(name, (Exception,), {"__module__": module})
    return cls(text)


@pytest.mark.parametrize("exc, expected", [
    (redis.exceptions.NoPermissionError("NOPERM User app has no permissions to run the "
                                        "'xtrim' command"), "give the user of --url"),
    (redis.exceptions.TimeoutError("Timeout reading from socket"), "did not answer in time"),
    (redis.exceptions.ResponseError("WRONGTYPE Operation against a key holding the wrong kind "
                                    "of value"), "a key in --streams is not a stream"),
    (ModuleNotFoundError("No module named 'pyspark'", name="pyspark"),
     "pip install 'sluice[spark]'"),
    (_error("pyspark.errors.exceptions.base", "PySparkRuntimeError",
            "[JAVA_GATEWAY_EXITED] Java gateway process exited before sending its port number."),
     "install a Java 17+ runtime"),
    (_error("py4j.protocol", "Py4JJavaError",
            "An error occurred while calling o57.parquet.\n: org.apache.spark.SparkException: "
            "Job aborted.\nTraceback (most recent call last):\n  File \"x.py\", line 1\n"
            "redis.exceptions.ConnectionError: Error 111 connecting to 127.0.0.1:7. "
            "Connection refused.\n\tat org.apache.spark..."),
     "cannot connect to 127.0.0.1:6379/0 (Error 111 connecting to 127.0.0.1:7"),
    (PipelineError("key 'k' holds a list, not a stream: remove it"), "key 'k' holds a list"),
])
def test_describe_gives_one_line_with_what_to_do(exc: BaseException, expected: str) -> None:
    line = describe(exc, "redis://u:secret@127.0.0.1:6379/0")
    assert line is not None and expected in line and "\n" not in line
    assert "secret" not in line


def test_describe_leaves_bugs_to_the_traceback() -> None:
    assert describe(KeyError("x")) is None
    assert describe(_Named("boom")) is None


def test_phases_as_lines_for_a_log() -> None:
    out = io.StringIO()
    with Phases("lines", out) as phases:
        with phases.phase("count", estimated=True, rate=False) as p:
            p.advance(1200)
            p.finish(note="estimated, 2 stream(s)")
        with phases.phase("read/write", total=1000, estimated=True) as p:
            p.set(600)
            p.set(1500)  # past the estimate: no total until the end
            assert p.total is None
            p.finish(1500)
        with phases.phase("trim", total=1500):
            pass
    lines = out.getvalue().splitlines()
    assert [line.split()[0] for line in lines] == ["count", "read/write", "trim"]
    assert lines[0].startswith("count      1,200 rows") and "estimated, 2 stream(s)" in lines[0]
    assert "rows/s" not in lines[0] and "1,500 rows" in lines[1] and "rows/s" in lines[1]


def test_phases_live_on_a_terminal_show_rows_and_rate() -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    tty = Tty()
    phases = Phases.auto(None, tty)
    assert phases.mode == "live" and Phases.auto(None, io.StringIO()).mode == "off"
    assert Phases.auto(None, io.StringIO(), log_lines=True).mode == "lines"
    assert phases._progress is not None
    phases._progress.console.force_terminal = True  # a StringIO is no real terminal
    with phases, phases.phase("read/write", total=10_000, estimated=True) as p:
        for rows in range(1000, 5001, 1000):
            p.set(rows)
            time.sleep(0.01)  # rows/s needs time to pass between samples
        phases._progress.refresh()
        drawn = tty.getvalue()
    assert "read/write" in drawn and "5,000 / ~10,000 rows" in drawn and "rows/s" in drawn


def test_progress_datagrams_are_summed_and_never_fail_the_reader() -> None:
    seen: list[int] = []
    with ProgressListener("127.0.0.1", on_rows=seen.append) as listener:
        host, port = listener.address.rsplit(":", 1)
        send = _progress_sender((host, int(port)))
        for rows in (10_000, 10_000, 345):
            send(rows)
        send(0)  # the slice is done: the sender closes its socket
        wait_until(lambda: listener.rows == 20_345, what="the datagrams")
    assert seen[-1] == 20_345
    nobody = _progress_sender(("127.0.0.1", free_port()))  # nothing listens: no error
    nobody(10)
    nobody(0)
    _progress_sender(None)(5)


def test_trim_in_steps_removes_exactly_below_the_target_in_several_xtrims(
        r: redis.Redis) -> None:
    ids = [r.xadd("tr", {"i": str(i)}, id=f"{1_000 + i * 10}-{i % 2}") for i in range(1000)]
    before = int(r.info("commandstats").get("cmdstat_xtrim", {}).get("calls", 0))
    target = StreamID.parse(ids[700]).next()  # keep ids[701:]
    seen: list[int] = []
    removed = trim_in_steps(r, "tr", target, estimate=701, step_rows=100, on_rows=seen.append)
    assert removed == 701 and [e[0] for e in r.xrange("tr")] == ids[701:]
    calls = int(r.info("commandstats")["cmdstat_xtrim"]["calls"]) - before
    assert 5 <= calls <= 8 and seen == sorted(seen) and seen[-1] == 701 and len(seen) == calls


def test_batch_lines_say_rows_rate_and_lag() -> None:
    ends = {"orders": "1700000000123-0", "clicks": "1700000000000-5", "views": "9-0", "x": "1-0"}
    newest = {"orders": "1700000000123-0", "clicks": "1700000001250-0", "views": "90-0",
              "x": None}
    line = batch_line(7, 1500, 4210.4, ends, newest,
                      {"orders": 0, "clicks": 12, "views": 1001, "x": None})
    assert line == ("batch 7  1,500 rows  4,210 rows/s  orders ..1700000000123-0 caught up  "
                    "clicks ..1700000000000-5 lag 12 entries (1,250 ms)  "
                    "views ..9-0 lag more than 1,000 entries (81 ms)  x ..1-0 lag ?")
    assert lag_ms(None, "5-0") is None and lag_ms("5-0", "7-1") == 2


def test_the_lag_is_counted_on_the_server(server: Any, r: redis.Redis) -> None:
    ids = [r.xadd("lagging", {"i": str(i)}) for i in range(1005)]
    printer = BatchPrinter(server.url, io.StringIO())
    try:
        newest, behind = printer.lag({"lagging": ids[1000], "gone": "1-0"})
        assert newest == {"lagging": ids[-1], "gone": None} and behind["lagging"] == 4
        _, behind = printer.lag({"lagging": ids[0]})
        assert behind == {"lagging": 1001}  # more than LAG_COUNT: counting stops there
    finally:
        printer.close()


def test_spark_submit_flags_carry_local_sessions_defaults() -> None:
    flags = submit_args()
    assert flags[:2] == ["--driver-java-options", JAVA_OPTIONS]
    assert "spark.log.level=WARN" in flags and "spark.ui.showConsoleProgress=false" in flags
    assert Path(LOG4J2_PROPERTIES).is_file()
    printed = run("sluice.pipeline.session", "--submit-args")
    assert printed.returncode == 0 and printed.stdout.split() == flags
    script = run("sluice.pipeline.session", "--archive-script").stdout.strip()
    assert script.endswith("sluice/pipeline/archive.py") and Path(script).is_file()


def test_the_archive_command_names_the_extra_when_a_module_is_missing(tmp_path: Path) -> None:
    blocker = tmp_path / "pyspark.py"
    blocker.write_text("raise ModuleNotFoundError(\"No module named 'pyspark'\", name='pyspark')\n")
    (tmp_path / "rich.py").write_text(blocker.read_text().replace("pyspark", "rich"))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO)])}
    code = ("import sys; from sluice.pipeline.cli import archive_main; "
            "sys.exit(archive_main(['--help']))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=60)
    assert done.returncode == 1
    assert done.stderr.strip() == ("sluice-archive: error: the pipeline needs the spark extra "
                                   "(rich is missing): pip install 'sluice[spark]'")

