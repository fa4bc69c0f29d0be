"""Structured Streaming: checkpointed exactly-once into Parquet, rate limits, group mirror."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
import redis

from sluice.pipeline.stream_job import build_query
from tests.pipeline.conftest import REPO, ServerHandle, produce, wait_for

pytestmark = pytest.mark.spark


def archived_ids(spark: Any, out: Path) -> list[str]:
    """``stream/id`` of the rows a reader through Spark sees (the sink's log decides)."""
    rows = spark.read.parquet(str(out)).select("stream", "id").collect()
    return [f"{row.stream}/{row.id}" for row in rows]


def tagged(stream: str, ids: list[str]) -> list[str]:
    return [f"{stream}/{i}" for i in ids]


def run_available_now(spark: Any, server: ServerHandle, streams: str, tmp: Path, **kw: Any) -> Any:
    query = build_query(
        spark, server.url, streams, str(tmp / "out"), str(tmp / "ckpt"), available_now=True, **kw
    )
    assert query.awaitTermination(120), "AvailableNow query did not finish"
    assert query.exception() is None
    return query


def test_restart_from_checkpoint_reads_every_row_once(
    spark: Any, server: ServerHandle, r: redis.Redis, key: str, tmp_path: Path
) -> None:
    a, b = f"{key}a", f"{key}b"
    produced = tagged(a, produce(r, a, 300)) + tagged(b, produce(r, b, 120))
    run_available_now(spark, server, f"{a},{b}", tmp_path)
    assert sorted(archived_ids(spark, tmp_path / "out")) == sorted(produced)

    produced += tagged(a, produce(r, a, 50, start_ms=2_000_000))
    produced += tagged(b, produce(r, b, 5, start_ms=2_000_000))
    run_available_now(spark, server, f"{a},{b}", tmp_path)
    got = archived_ids(spark, tmp_path / "out")
    assert len(got) == len(set(got)) == len(produced)
    assert set(got) == set(produced)


def test_max_records_per_trigger_bounds_each_micro_batch(
    spark: Any, server: ServerHandle, r: redis.Redis, key: str, tmp_path: Path
) -> None:
    produced = tagged(f"{key}a", produce(r, f"{key}a", 70))
    produced += tagged(f"{key}b", produce(r, f"{key}b", 30))
    query = run_available_now(spark, server, f"{key}a,{key}b", tmp_path, max_records_per_trigger=40)
    sizes = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
    assert sizes == [40, 40, 20]
    assert sorted(archived_ids(spark, tmp_path / "out")) == sorted(produced)


def test_starting_offsets_latest_and_json(
    spark: Any, server: ServerHandle, r: redis.Redis, key: str, tmp_path: Path
) -> None:
    ids = produce(r, key, 10)
    df = (
        spark.readStream.format("sluice")
        .option("url", server.url)
        .option("streams", key)
        .option("startingOffsets", f'{{"{key}": "{ids[6]}"}}')
        .load()
    )
    query = (
        df.writeStream.format("memory").queryName(f"{key}json").trigger(availableNow=True).start()
    )
    assert query.awaitTermination(60)
    assert [x.id for x in spark.sql(f"select id from {key}json").collect()] == ids[7:]

    df = (
        spark.readStream.format("sluice")
        .option("url", server.url)
        .option("streams", key)
        .option("STARTINGOFFSETS", "latest")
        .load()
    )
    query = (
        df.writeStream.format("memory").queryName(f"{key}latest").trigger(availableNow=True).start()
    )
    assert query.awaitTermination(60)
    assert spark.sql(f"select * from {key}latest").count() == 0


def test_group_mirrors_committed_progress(
    spark: Any, server: ServerHandle, r: redis.Redis, key: str, tmp_path: Path
) -> None:
    ids = produce(r, key, 100)
    run_available_now(spark, server, key, tmp_path, max_records_per_trigger=30, group="spark")
    groups = {g["name"]: g for g in r.xinfo_groups(key)}
    # Spark commits batch N when it plans N+1, so the group trails by at most one batch.
    assert groups["spark"]["last-delivered-id"] in (ids[89], ids[99])
    assert r.xlen(key) == 100  # commit() never trims
    assert groups["spark"]["pending"] == 0


def test_kill_9_mid_stream_then_restart_gives_every_row_once(
    spark: Any, server: ServerHandle, r: redis.Redis, key: str, tmp_path: Path
) -> None:
    produced = tagged(f"{key}a", produce(r, f"{key}a", 3000))
    produced += tagged(f"{key}b", produce(r, f"{key}b", 1000))
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    job = [
        sys.executable,
        "-m",
        "sluice.pipeline.stream_job",
        "--url",
        server.url,
        "--streams",
        f"{key}a,{key}b",
        "--out",
        str(out),
        "--checkpoint",
        str(ckpt),
        "--max-records-per-trigger",
        "500",
        "--trigger-seconds",
        "0.2",
    ]
    process = subprocess.Popen(
        job,
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        commits = ckpt / "commits"
        wait_for(
            lambda: commits.is_dir() and len(list(commits.glob("[0-9]*"))) >= 1,
            timeout=180,  # a fresh JVM on a loaded 2-core machine can take a minute
            what="a committed micro-batch",
        )
    finally:
        os.killpg(process.pid, signal.SIGKILL)  # the driver and its JVM, mid-stream
        process.wait(timeout=30)
    done = len(list((ckpt / "commits").glob("[0-9]*")))
    assert done < 8, "the job finished before it was killed; nothing was tested"

    run_available_now(spark, server, f"{key}a,{key}b", tmp_path)
    got = archived_ids(spark, out)
    assert len(got) == len(set(got)), "a row was written twice"
    assert sorted(got) == sorted(produced), "a row is missing"


def test_the_job_prints_a_line_per_batch_and_ctrl_c_stops_it_cleanly(
    spark: Any, server: ServerHandle, r: redis.Redis, key: str, tmp_path: Path
) -> None:
    produce(r, key, 300)
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    job = [sys.executable, "-m", "sluice.pipeline.stream_job", "--url", server.url,
           "--streams", key, "--out", str(out), "--checkpoint", str(ckpt),
           "--max-records-per-trigger", "100", "--trigger-seconds", "0.2"]
    process = subprocess.Popen(job, cwd=REPO, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(process.stdout or ()), daemon=True)
    reader.start()
    try:
        wait_for(lambda: any(line.startswith("batch 2 ") for line in lines), timeout=180,
                 what="three batch lines")
        process.send_signal(signal.SIGINT)  # Ctrl-C
        assert process.wait(timeout=120) == 0
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)
    reader.join(10)
    err = process.stderr.read() if process.stderr else ""
    batch = [line.split() for line in lines if line.startswith("batch ")]
    assert [b[:4] for b in batch[:3]] == [["batch", str(i), "100", "rows"] for i in range(3)]
    # Each of the first two batches leaves the rest behind: 200, then 100 entries.
    assert batch[0][6:11] == [key, batch[0][7], "lag", "200", "entries"]
    assert batch[1][8:11] == ["lag", "100", "entries"] and batch[0][7].startswith("..")
    assert lines[2].rstrip().endswith("caught up")  # the third reaches the end
    assert "stopped after" in err and "the same command resumes" in err
    assert "Traceback" not in err
