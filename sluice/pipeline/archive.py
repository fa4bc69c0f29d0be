"""Archival job: stream history older than a cut-off -> Parquet + manifest -> XTRIM MINID.

Usable three ways: ``sluice-archive --url URL --streams a,b --older-than 7d --out DIR``; the
Python function :func:`archive`; and ``spark-submit .../sluice/pipeline/archive.py ARGS``.

One run, per stream ``s``:

1. recover: delete whatever no manifest commits (see :mod:`sluice.pipeline.manifest`);
2. plan ``[lo, hi]``: ``lo`` is just after the highest ID already archived (or the first
   entry), ``hi`` the last entry older than the cut-off (``--before-id ID`` is exclusive;
   ``--older-than 7d`` means before ``now - 7d`` by the server's clock), clipped to the last
   entry that exists, so no entry below ``hi`` can appear later;
3. read with the Sluice data source, add a UTC ``date`` column, write Parquet partitioned by
   ``stream`` and ``date`` into staging;
4. verify: the row count in the Parquet footers per stream equals the rows the job read;
5. move the files into place and write the manifest (the commit point);
6. ``XTRIM s MINID <hi+1>`` (exact), also finishing any trim a crashed run left undone.

A crash anywhere leaves either an uncommitted run (deleted and redone by the next run) or a
committed one whose trim the next run completes. Crash injection for tests: ``crash_at=`` or
the ``SLUICE_ARCHIVE_CRASH_AT`` environment variable (``after-parquet``, ``after-move``,
``after-manifest``, ``after-trim``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import os
import shutil
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import redis

from sluice.pipeline import client as rc
from sluice.pipeline import manifest as mf
from sluice.pipeline.ids import MIN_ID, StreamID, cutoff_before, parse_bound
from sluice.pipeline.options import ConnectionOptions, parse_streams
from sluice.pipeline.progress import Progress, format_rate

log = logging.getLogger(__name__)

CRASH_ENV = "SLUICE_ARCHIVE_CRASH_AT"
CRASH_POINTS = ("after-parquet", "after-move", "after-manifest", "after-trim")
DAY_MS = 86_400_000
ROWS_PER_SLICE = 200_000  # finer slices: more parallelism and a smoother progress bar


class SimulatedCrash(BaseException):
    """Raised at a crash point in tests: like a kill, it skips every ``except Exception``."""


class VerificationError(RuntimeError):
    """The Parquet written does not hold the rows read: nothing is committed or trimmed."""


@dataclass
class StreamPlan:
    stream: str
    lo: StreamID | None  # inclusive range to archive now; None when there is nothing new
    hi: StreamID | None
    trim_to: StreamID | None  # XTRIM MINID target (first ID to keep), None: nothing to trim
    estimate: int = 0


@dataclass
class StreamResult:
    archived: int = 0
    trimmed: int = 0
    range: tuple[str, str] | None = None


@dataclass
class ArchiveResult:
    run_id: str
    out: str
    streams: dict[str, StreamResult] = field(default_factory=dict)
    seconds: float = 0.0
    removed_orphans: int = 0

    @property
    def rows(self) -> int:
        return sum(s.archived for s in self.streams.values())

    def summary(self) -> str:
        lines = [f"archive run {self.run_id} -> {self.out}"]
        for stream, res in self.streams.items():
            span = f"{res.range[0]}..{res.range[1]}" if res.range else "nothing new"
            lines.append(f"  {stream}: {res.archived:,} archived ({span}), {res.trimmed:,} trimmed")
        lines.append(f"  total: {format_rate(self.rows, self.seconds)}")
        if self.removed_orphans:
            lines.append(f"  recovered: removed {self.removed_orphans} uncommitted file(s)")
        return "\n".join(lines)


def _crash_point(name: str, crash_at: str | None) -> None:
    if os.environ.get(CRASH_ENV) == name:
        os._exit(86)  # a real crash: no cleanup, no finally blocks
    if crash_at == name:
        raise SimulatedCrash(name)


def plan_stream(
    client: redis.Redis, stream: str, cutoff: StreamID, done_to: StreamID | None
) -> StreamPlan:
    """Decide what to archive and trim for one stream (see the module docstring, step 2)."""
    bounds = rc.stream_bounds(client, stream)
    if bounds is None or bounds.first is None or bounds.last is None:
        return StreamPlan(stream, None, None, None)
    pending = done_to is not None and bounds.first <= done_to  # committed, not yet trimmed
    if pending:
        assert done_to is not None
        _check_untrimmed(client, stream, done_to)
    hi = _last_before(client, stream, cutoff)
    lo = bounds.first if done_to is None else max(bounds.first, done_to.next())
    if hi is None or lo > hi:
        trim_to = done_to.next() if pending and done_to is not None else None
        return StreamPlan(stream, None, None, trim_to)
    span = max(1, bounds.last.ms - bounds.first.ms)
    estimate = bounds.length if hi >= bounds.last else int(bounds.length * (hi.ms - lo.ms) / span)
    return StreamPlan(stream, lo, hi, hi.next(), max(estimate, 1))


def _last_before(client: redis.Redis, stream: str, cutoff: StreamID) -> StreamID | None:
    """The last entry with an ID below ``cutoff`` (an ID that exists), if any."""
    if cutoff == MIN_ID:
        return None
    page = client.execute_command("XREVRANGE", stream, str(cutoff.prev()), "-", "COUNT", 1)
    return StreamID.parse(page[0][0]) if page else None


def _check_untrimmed(client: redis.Redis, stream: str, done_to: StreamID) -> None:
    """Rows up to ``done_to`` are archived but still on the server: check they are ours.

    The last archived entry must still exist; if it does not, the stream was deleted and
    recreated (or edited) since, and trimming up to ``done_to`` would drop rows that are in
    no archive. Refuse rather than guess.
    """
    if not client.execute_command("XRANGE", stream, str(done_to), str(done_to)):
        raise RuntimeError(
            f"stream {stream!r}: entry {done_to}, the last archived one, is gone but older "
            "entries remain; the stream changed since it was archived. Not trimming."
        )


def archive(
    url: str,
    streams: Sequence[str] | str,
    out: str | os.PathLike[str],
    older_than: str | None = None,
    before_id: str | None = None,
    spark: Any = None,
    partitions_per_stream: int = 2,
    progress: bool | None = None,
    crash_at: str | None = None,
) -> ArchiveResult:
    """Archive entries older than the cut-off of each stream into ``out``; see module doc."""
    if (older_than is None) == (before_id is None):
        raise ValueError("give exactly one of older_than (e.g. '7d') or before_id")
    names = parse_streams(streams) if isinstance(streams, str) else tuple(streams)
    out_dir = Path(out).resolve()
    started = time.monotonic()
    result = ArchiveResult(run_id=_run_id(), out=str(out_dir))
    client = rc.connect(ConnectionOptions(url, 60.0))
    try:
        with mf.locked(out_dir):
            manifests = mf.load_manifests(out_dir)
            result.removed_orphans = len(mf.recover(out_dir, manifests))
            cutoff = _cutoff(client, older_than, before_id)
            done = mf.archived_to(manifests)
            plans = [plan_stream(client, s, cutoff, done.get(s)) for s in names]
            _archive_plans(
                spark, url, out_dir, plans, result, partitions_per_stream, progress, crash_at
            )
            for plan in plans:
                result.streams.setdefault(plan.stream, StreamResult())
                if plan.trim_to is not None:
                    trimmed = client.xtrim(plan.stream, minid=str(plan.trim_to), approximate=False)
                    result.streams[plan.stream].trimmed = int(trimmed)
            _crash_point("after-trim", crash_at)
    finally:
        client.close()
    result.seconds = time.monotonic() - started
    return result


def _run_id() -> str:
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S")
    return f"{stamp}-{uuid.uuid4().hex[:8]}"


def _cutoff(client: redis.Redis, older_than: str | None, before_id: str | None) -> StreamID:
    if before_id is not None:
        # Exclusive: archive entries with ID < before_id (the XTRIM MINID convention).
        return parse_bound(before_id, is_start=True)
    assert older_than is not None
    return cutoff_before(rc.server_time_ms(client), older_than)


def _archive_plans(
    spark: Any,
    url: str,
    out: Path,
    plans: list[StreamPlan],
    result: ArchiveResult,
    partitions_per_stream: int,
    progress: bool | None,
    crash_at: str | None,
) -> None:
    """Steps 3-5: read, write to staging, verify, move into place, commit the manifest."""
    todo = [p for p in plans if p.lo is not None and p.hi is not None]
    if not todo:
        return
    spark = spark or _session()
    staging = out / mf.STAGING / result.run_id
    expected = _write_staging(spark, url, todo, staging, partitions_per_stream, progress)
    found = _footer_counts(staging)
    for plan in todo:
        if found.get(plan.stream, 0) != expected.get(plan.stream, 0):
            raise VerificationError(
                f"stream {plan.stream!r}: read {expected.get(plan.stream, 0)} rows but the "
                f"Parquet files hold {found.get(plan.stream, 0)}; nothing committed or trimmed"
            )
    _crash_point("after-parquet", crash_at)
    moved = mf.commit_files(out, staging)
    _crash_point("after-move", crash_at)
    manifest = mf.Manifest(
        run_id=result.run_id,
        created=dt.datetime.now(dt.UTC).isoformat(),
        streams={
            p.stream: {"from": str(p.lo), "to": str(p.hi), "rows": expected.get(p.stream, 0)}
            for p in todo
        },
        files=[
            {"path": str(f.relative_to(out)), "stream": _stream_of(f), "rows": _rows_in(f)}
            for f in moved
        ],
    )
    mf.write_manifest(out, manifest)
    shutil.rmtree(out / mf.STAGING, ignore_errors=True)
    _crash_point("after-manifest", crash_at)
    for plan in todo:
        result.streams[plan.stream] = StreamResult(
            archived=expected.get(plan.stream, 0), range=(str(plan.lo), str(plan.hi))
        )


def _write_staging(
    spark: Any,
    url: str,
    plans: list[StreamPlan],
    staging: Path,
    partitions_per_stream: int,
    progress: bool | None,
) -> dict[str, int]:
    """One Spark job over all streams; returns the rows it wrote per stream (observed)."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    frames = [
        spark.read.format("sluice")
        .option("url", url)
        .option("streams", p.stream)
        .option("from", str(p.lo))
        .option("to", str(p.hi))
        .option(
            "partitionsPerStream", str(max(partitions_per_stream, -(-p.estimate // ROWS_PER_SLICE)))
        )
        .load()
        for p in plans
    ]
    df = frames[0]
    for frame in frames[1:]:
        df = df.unionByName(frame)
    # UTC day from the ID's milliseconds: plain arithmetic, whatever the session time zone.
    df = df.withColumn("date", F.date_from_unix_date(F.floor(F.col("ms") / DAY_MS).cast("int")))
    observation = Observation("archive")
    metrics = [
        F.sum(F.when(F.col("stream") == p.stream, 1).otherwise(0)).alias(f"s{i}")
        for i, p in enumerate(plans)
    ]
    df = df.observe(observation, *metrics)
    total = sum(p.estimate for p in plans)
    group = f"sluice-archive-{staging.name}"
    spark.sparkContext.setJobGroup(group, "sluice-archive")
    done = _task_fraction(spark, group)
    with Progress("archiving", lambda: int(total * done()), total=total, enabled=progress):
        df.write.partitionBy("stream", "date").parquet(str(staging))
    got = observation.get
    return {p.stream: int(got[f"s{i}"] or 0) for i, p in enumerate(plans)}


def _task_fraction(spark: Any, group: str) -> Any:
    """Share of finished tasks in the job group: the progress bar's row estimate.

    Rows are only known exactly at the end (the observed counts); a slice is one task, so
    finished tasks x estimated rows per task is the honest live figure (shown as ``~``).
    """
    tracker = spark.sparkContext.statusTracker()

    def fraction() -> float:
        done = total = 0
        for job_id in tracker.getJobIdsForGroup(group):
            job = tracker.getJobInfo(job_id)
            for stage_id in job.stageIds if job else ():
                stage = tracker.getStageInfo(stage_id)
                if stage:
                    done, total = done + stage.numCompletedTasks, total + stage.numTasks
        return done / total if total else 0.0

    return fraction


def _footer_counts(staging: Path) -> dict[str, int]:
    counts: dict[str, int] = {}
    for path in staging.rglob("*.parquet"):
        stream = _stream_of(path)
        counts[stream] = counts.get(stream, 0) + _rows_in(path)
    return counts


def _rows_in(path: Path) -> int:
    import pyarrow.parquet as pq

    return int(pq.ParquetFile(path).metadata.num_rows)


def _stream_of(path: Path) -> str:
    for part in path.parts:
        if part.startswith("stream="):
            return unquote(part[len("stream=") :])
    raise ValueError(f"no stream= partition in {path}")


def _session() -> Any:
    from sluice.pipeline.session import local_session

    return local_session(app_name="sluice-archive", ui=False)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="sluice-archive",
        description="Archive stream history older than a cut-off into Parquet, then trim it.",
    )
    parser.add_argument("--url", required=True, help="redis://host:port/db of the server")
    parser.add_argument("--streams", required=True, help="comma-separated stream keys")
    cut = parser.add_mutually_exclusive_group(required=True)
    cut.add_argument("--older-than", help="age cut-off, e.g. 7d, 12h, 90m")
    cut.add_argument("--before-id", help="archive entries with an ID below this one")
    parser.add_argument("--out", required=True, help="archive directory")
    parser.add_argument("--partitions-per-stream", type=int, default=2)
    parser.add_argument("--no-progress", action="store_true", help="never draw a progress bar")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    result = archive(
        url=args.url,
        streams=args.streams,
        out=args.out,
        older_than=args.older_than,
        before_id=args.before_id,
        partitions_per_stream=args.partitions_per_stream,
        progress=False if args.no_progress else None,
    )
    print(json.dumps(asdict(result), indent=2) if args.json else result.summary())
    return 0


if __name__ == "__main__":
    sys.exit(main())
