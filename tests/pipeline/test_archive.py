"""Archival job: Parquet by stream and date, manifest, trim; crash-safe re-runs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import redis

from sluice.pipeline.archive import SimulatedCrash, archive, main
from sluice.pipeline.manifest import load_manifests
from sluice.pipeline.progress import Phase, Phases
from sluice.pipeline.session import submit_args

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]

HOUR = 3_600_000


def produce_history(client: redis.Redis, stream: str, old: int, recent: int) -> list[str]:
    """``old`` entries hourly from 10 days ago, then ``recent`` entries stamped now."""
    seconds, micros = client.time()
    now = int(seconds) * 1000 + int(micros) // 1000
    pipe = client.pipeline(transaction=False)
    for i in range(old):
        pipe.xadd(stream, {"i": str(i)}, id=f"{now - 10 * 24 * HOUR + i * HOUR}-0")
    for i in range(recent):
        pipe.xadd(stream, {"i": str(old + i)})
    return [str(x) for x in pipe.execute()]


def archived(spark: Any, out: Path) -> list[tuple[str, str]]:
    rows = spark.read.parquet(str(out)).select("stream", "id").collect()
    return [(row.stream, row.id) for row in rows]


def remaining(client: redis.Redis, streams: list[str]) -> list[tuple[str, str]]:
    return [(s, entry_id) for s in streams for entry_id, _ in client.xrange(s)]


def produced_pairs(produced: dict[str, list[str]]) -> list[tuple[str, str]]:
    return sorted((s, i) for s, ids in produced.items() for i in ids)


def assert_exactly_once(
    spark: Any, r: redis.Redis, out: Path, produced: dict[str, list[str]]
) -> list[tuple[str, str]]:
    got = archived(spark, out)
    left = remaining(r, list(produced))
    assert len(got) == len(set(got)), "a row was archived twice"
    assert not set(got) & set(left), "an archived row was not trimmed"
    assert sorted(got + left) == produced_pairs(produced), "archived + remaining != produced"
    return got


def test_archive_writes_parquet_by_stream_and_date_then_trims(
    spark: Any, server: Any, r: redis.Redis, key: str, tmp_path: Path
) -> None:
    a, b = f"{key}a", f"{key}b"
    produced = {a: produce_history(r, a, 60, 7), b: produce_history(r, b, 30, 0)}
    out = tmp_path / "archive"
    result = archive(server.url, [a, b, f"{key}missing"], out, older_than="1d", spark=spark)
    assert result.streams[a].archived == 60 and result.streams[b].archived == 30
    assert result.streams[a].trimmed == 60 and r.xlen(a) == 7 and r.xlen(b) == 0
    assert len(list((out / f"stream={a}").glob("date=*"))) >= 3  # hourly rows span 3+ days
    got = assert_exactly_once(spark, r, out, produced)
    assert len(got) == 90
    [manifest] = load_manifests(out)
    assert manifest.streams[a]["rows"] == 60 and manifest.streams[a]["to"] == produced[a][59]
    assert sum(f["rows"] for f in manifest.files) == 90

    again = archive(server.url, [a, b], out, older_than="1d", spark=spark)
    assert again.rows == 0 and len(load_manifests(out)) == 1
    assert_exactly_once(spark, r, out, produced)


@pytest.mark.parametrize("crash_at", ["after-parquet", "after-move", "after-manifest"])
def test_crash_then_rerun_loses_and_duplicates_nothing(
    spark: Any, server: Any, r: redis.Redis, key: str, tmp_path: Path, crash_at: str
) -> None:
    a, b = f"{key}a", f"{key}b"
    produced = {a: produce_history(r, a, 40, 3), b: produce_history(r, b, 25, 2)}
    out = tmp_path / "archive"
    with pytest.raises(SimulatedCrash):
        archive(server.url, [a, b], out, older_than="1d", spark=spark, crash_at=crash_at)
    assert r.xlen(a) == 43 and r.xlen(b) == 27, "trimmed before the manifest was durable"
    assert len(load_manifests(out)) == (1 if crash_at == "after-manifest" else 0)

    rerun = archive(server.url, [a, b], out, older_than="1d", spark=spark)
    expected_new = 0 if crash_at == "after-manifest" else 65
    assert rerun.rows == expected_new
    got = assert_exactly_once(spark, r, out, produced)
    assert len(got) == 65 and r.xlen(a) == 3 and r.xlen(b) == 2


def test_cli_before_id_prints_summary(
    spark: Any,
    server: Any,
    r: redis.Redis,
    key: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    ids = produce_history(r, key, 10, 0)
    out = tmp_path / "archive"
    code = main(
        [
            "--url",
            server.url,
            "--streams",
            key,
            "--before-id",
            ids[4],
            "--out",
            str(out),
            "--no-progress",
            "--json",
        ]
    )
    assert code == 0
    result = json.loads(capsys.readouterr().out)
    assert result["streams"][key]["archived"] == 4  # --before-id is exclusive
    assert sorted(i for _, i in archived(spark, out)) == sorted(ids[:4])
    assert [entry_id for entry_id, _ in r.xrange(key)] == ids[4:]


class RecordingPhases(Phases):
    """Phases that remember every update (name, rows, finished) instead of drawing."""

    def __init__(self) -> None:
        super().__init__("off")
        self.updates: list[tuple[str, int, bool]] = []

    def refresh(self, phase: Phase, finished: bool = False) -> None:
        self.updates.append((phase.name, phase.rows, finished))


def test_progress_goes_by_phases_with_live_rows_from_the_reading_tasks(
    spark: Any, server: Any, r: redis.Redis, key: str, tmp_path: Path
) -> None:
    produce_history(r, key, 120, 5)
    phases = RecordingPhases()
    result = archive(server.url, [key], tmp_path / "archive", older_than="1d", spark=spark,
                     progress=phases, trim_step_rows=50)
    assert result.streams[key].archived == 120 and result.streams[key].trimmed == 120
    finished = [(name, rows) for name, rows, done in phases.updates if done]
    assert [name for name, _ in finished] == ["count", "read/write", "verify", "trim"]
    assert dict(finished)["read/write"] == dict(finished)["verify"] == 120
    # Rows counted by the reading tasks' datagrams, before the job's exact count was known.
    live = [rows for name, rows, done in phases.updates if name == "read/write" and not done]
    assert live and 0 < max(live) <= 120
    # The trim went in steps: several updates, rising, before the last.
    trims = [rows for name, rows, done in phases.updates if name == "trim" and not done]
    assert len(trims) >= 2 and trims == sorted(trims) and trims[-1] == 120


def test_spark_submit_with_the_documented_flags_is_quiet(
    server: Any, r: redis.Redis, key: str, tmp_path: Path
) -> None:
    """docs/pipeline.md's spark-submit line: no loopback warning, no INFO flood."""
    spark_submit = shutil.which("spark-submit") or str(Path(sys.executable).with_name("spark-submit"))
    if not Path(spark_submit).exists():
        pytest.skip("spark-submit is not installed next to this Python")
    produce_history(r, key, 30, 2)
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable,
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    env.pop("PYSPARK_GATEWAY_PORT", None)
    script = str(REPO / "sluice" / "pipeline" / "archive.py")
    done = subprocess.run(
        [spark_submit, "--master", "local[2]", *submit_args(), script, "--url", server.url,
         "--streams", key, "--older-than", "1d", "--out", str(tmp_path / "a")],
        capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert f"{key}: 30 archived" in done.stdout
    noise = [line for line in done.stderr.splitlines()
             if not line.startswith(("count ", "spark ", "read/write ", "verify ", "trim "))]
    assert "loopback" not in done.stderr and " INFO " not in done.stderr
    assert len(noise) <= 2, noise  # the JVM's own incubator-module warning at most
    assert r.xlen(key) == 2
