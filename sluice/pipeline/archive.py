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
6. ``XTRIM s MINID <hi+1>`` (exact), also finishing any trim a crashed run left undone. A
   large trim goes in time steps of about ``trim_step_rows`` entries (exact ``XTRIM MINID``
   at ms boundaries below ``hi+1``), so the server answers its other clients between steps
   and the trim shows live progress; a crash between steps is finished by the next run.

Progress goes by phases (:mod:`sluice.pipeline.progress`): count (the plan's row estimates),
spark (starting a local session, when none was given), read/write (rows read, live, from the
reading tasks' datagrams), verify (rows found in the Parquet footers), trim (entries removed).

On the command line, a failure is one line on stderr saying what is wrong and what to do
(:mod:`sluice.pipeline.errors`), exit status 1; ``--debug`` shows the traceback. Before Spark
starts, the server, the login and the type of every key are checked, so the common mistakes
are reported in a second, not after the JVM has started.

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
from sluice.pipeline.errors import Parser, PipelineError, run_cli
from sluice.pipeline.ids import MIN_ID, StreamID, cutoff_before, parse_bound, parse_duration_ms
from sluice.pipeline.options import ConnectionOptions, parse_streams
from sluice.pipeline.progress import Phase, Phases, ProgressListener, format_rate

log = logging.getLogger(__name__)

CRASH_ENV = "SLUICE_ARCHIVE_CRASH_AT"
CRASH_POINTS = ("after-parquet", "after-move", "after-manifest", "after-trim")
DAY_MS = 86_400_000
ROWS_PER_SLICE = 200_000  # finer slices: more parallelism
TRIM_STEP_ROWS = 100_000  # about this many entries per XTRIM of a large trim


class SimulatedCrash(BaseException):
    """Raised at a crash point in tests: like a kill, it skips every ``except Exception``."""


class VerificationError(RuntimeError):
    """The Parquet written does not hold the rows read: nothing is committed or trimmed."""


class StreamChangedError(PipelineError):
    """The last archived entry is gone while older ones remain: refuse to trim."""


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
        raise StreamChangedError(
            f"stream {stream!r}: entry {done_to}, the last archived one, is gone but older "
            "entries remain; the stream changed since it was archived. Not trimming: check "
            "the stream, then archive it into a new --out directory"
        )


def archive(
    url: str,
    streams: Sequence[str] | str,
    out: str | os.PathLike[str],
    older_than: str | None = None,
    before_id: str | None = None,
    spark: Any = None,
    partitions_per_stream: int = 2,
    progress: bool | str | Phases | None = None,
    crash_at: str | None = None,
    trim_step_rows: int = TRIM_STEP_ROWS,
    spark_log_level: str = "ERROR",
) -> ArchiveResult:
    """Archive entries older than the cut-off of each stream into ``out``; see module doc.

    ``progress``: ``None`` shows live phases on a terminal only, ``True``/``False`` force
    them on or off, ``"lines"`` prints one line per phase, or pass a :class:`Phases`.
    ``spark``: a session to use; without one, a local session is made when there is data to
    read (``spark_log_level`` is its log level).
    """
    if (older_than is None) == (before_id is None):
        raise ValueError("give exactly one of older_than (e.g. '7d') or before_id")
    names = parse_streams(streams) if isinstance(streams, str) else tuple(streams)
    out_dir = Path(out).resolve()
    started = time.monotonic()
    result = ArchiveResult(run_id=_run_id(), out=str(out_dir))
    phases = progress if isinstance(progress, Phases) else Phases.auto(progress)
    client = rc.connect(ConnectionOptions(url, 60.0))
    try:
        rc.check_streams(client, names)
        with phases, mf.locked(out_dir):
            manifests = mf.load_manifests(out_dir)
            result.removed_orphans = len(mf.recover(out_dir, manifests))
            cutoff = _cutoff(client, older_than, before_id)
            done = mf.archived_to(manifests)
            with phases.phase("count", estimated=True, rate=False) as counting:
                plans = []
                for s in names:
                    plans.append(plan_stream(client, s, cutoff, done.get(s)))
                    counting.advance(plans[-1].estimate)
                counting.finish(note=f"estimated, {len(names)} stream(s)")
            _archive_plans(
                spark, spark_log_level, url, out_dir, plans, result, partitions_per_stream,
                phases, crash_at,
            )
            _trim(client, plans, result, phases, trim_step_rows)
            _crash_point("after-trim", crash_at)
    finally:
        client.close()
    result.seconds = time.monotonic() - started
    return result


def _trim(
    client: redis.Redis,
    plans: list[StreamPlan],
    result: ArchiveResult,
    phases: Phases,
    step_rows: int,
) -> None:
    """Step 6 for every stream, as one phase (entries removed, live)."""
    todo = [p for p in plans if p.trim_to is not None]
    expected = sum(result.streams[p.stream].archived for p in todo if p.stream in result.streams)
    with phases.phase("trim", total=expected or None, estimated=True) as trimming:
        for plan in plans:
            result.streams.setdefault(plan.stream, StreamResult())
        for plan in todo:
            assert plan.trim_to is not None
            base = trimming.rows
            done = result.streams[plan.stream].archived
            removed = trim_in_steps(
                client, plan.stream, plan.trim_to, max(plan.estimate, done), step_rows,
                lambda n, base=base: trimming.set(base + n),
            )
            result.streams[plan.stream].trimmed = removed
            trimming.set(base + removed)


def trim_in_steps(
    client: redis.Redis,
    stream: str,
    trim_to: StreamID,
    estimate: int,
    step_rows: int,
    on_rows: Any = None,
) -> int:
    """``XTRIM stream MINID trim_to`` (exact), in about ``estimate / step_rows`` time steps.

    Each step is an exact ``XTRIM MINID <ms>-0`` at a millisecond between the first entry and
    ``trim_to``, so no step removes an entry at or above ``trim_to``; the last step trims to
    ``trim_to`` itself. Returns the entries removed.
    """
    first = client.execute_command("XRANGE", stream, "-", "+", "COUNT", 1)
    steps = max(1, -(-max(estimate, 1) // max(step_rows, 1)))
    removed = 0
    if first and steps > 1:
        lo_ms = StreamID.parse(first[0][0]).ms
        for k in range(1, steps):
            minid = StreamID(lo_ms + (trim_to.ms - lo_ms) * k // steps, 0)
            if minid >= trim_to:
                break
            removed += int(client.xtrim(stream, minid=str(minid), approximate=False))
            if on_rows is not None:
                on_rows(removed)
    removed += int(client.xtrim(stream, minid=str(trim_to), approximate=False))
    if on_rows is not None:
        on_rows(removed)
    return removed


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
    spark_log_level: str,
    url: str,
    out: Path,
    plans: list[StreamPlan],
    result: ArchiveResult,
    partitions_per_stream: int,
    phases: Phases,
    crash_at: str | None,
) -> None:
    """Steps 3-5: read, write to staging, verify, move into place, commit the manifest."""
    todo = [p for p in plans if p.lo is not None and p.hi is not None]
    if not todo:
        return
    if spark is None:  # made only when there is work for it
        with phases.phase("spark", rate=False) as starting:
            spark = _session(spark_log_level)
            starting.finish(note="session started")
    staging = out / mf.STAGING / result.run_id
    with phases.phase(
        "read/write", total=sum(p.estimate for p in todo), estimated=True
    ) as writing:
        expected = _write_staging(spark, url, todo, staging, partitions_per_stream, writing)
        writing.finish(sum(expected.values()))
    with phases.phase("verify", total=sum(expected.values())) as verifying:
        found = _footer_counts(staging, verifying)
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
    writing: Phase,
) -> dict[str, int]:
    """One Spark job over all streams; returns the rows it wrote per stream (observed)."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    listener = _listener(spark, writing)
    address = listener.address if listener is not None else ""
    frames = [
        spark.read.format("sluice")
        .option("url", url)
        .option("streams", p.stream)
        .option("from", str(p.lo))
        .option("to", str(p.hi))
        .option(
            "partitionsPerStream", str(max(partitions_per_stream, -(-p.estimate // ROWS_PER_SLICE)))
        )
        .option("progressAddress", address)
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
    try:
        df.write.partitionBy("stream", "date").parquet(str(staging))
    finally:
        if listener is not None:
            listener.close()
    got = observation.get
    return {p.stream: int(got[f"s{i}"] or 0) for i, p in enumerate(plans)}


def _listener(spark: Any, writing: Phase) -> ProgressListener | None:
    """A UDP listener on the driver's address for the reading tasks' row counts; None when
    it cannot bind (the phase then shows its rows when the job ends)."""
    host = spark.conf.get("spark.driver.host", "127.0.0.1") or "127.0.0.1"
    try:
        return ProgressListener(host, on_rows=writing.set)
    except OSError as e:
        log.debug("no live progress: cannot listen on %s (%s)", host, e)
        return None


def _footer_counts(staging: Path, verifying: Phase | None = None) -> dict[str, int]:
    counts: dict[str, int] = {}
    for path in staging.rglob("*.parquet"):
        stream = _stream_of(path)
        rows = _rows_in(path)
        counts[stream] = counts.get(stream, 0) + rows
        if verifying is not None:
            verifying.advance(rows)
    return counts


def _rows_in(path: Path) -> int:
    import pyarrow.parquet as pq

    return int(pq.ParquetFile(path).metadata.num_rows)


def _stream_of(path: Path) -> str:
    for part in path.parts:
        if part.startswith("stream="):
            return unquote(part[len("stream=") :])
    raise ValueError(f"no stream= partition in {path}")


def _session(log_level: str = "ERROR") -> Any:
    from sluice.pipeline.session import local_session

    return local_session(app_name="sluice-archive", ui=False, log_level=log_level)


def _duration(text: str) -> str:
    """argparse type of --older-than: a bad duration is a usage error, before any work."""
    try:
        parse_duration_ms(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def _stream_id(text: str) -> str:
    try:
        parse_bound(text, is_start=True)
    except ValueError as e:
        raise argparse.ArgumentTypeError(
            f"{e}; expected <ms>-<seq>, e.g. 1700000000000-0") from None
    return text


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="sluice-archive",
        description="Archive stream history older than a cut-off into Parquet, then trim it.",
    )
    parser.add_argument("--url", required=True, help="redis://[user:password@]host:port/db")
    parser.add_argument("--streams", required=True, help="comma-separated stream keys")
    cut = parser.add_mutually_exclusive_group(required=True)
    cut.add_argument("--older-than", type=_duration, help="age cut-off, e.g. 7d, 12h, 90m")
    cut.add_argument("--before-id", type=_stream_id,
                     help="archive entries with an ID below this one")
    parser.add_argument("--out", required=True, help="archive directory")
    parser.add_argument("--partitions-per-stream", type=int, default=2)
    parser.add_argument("--trim-step-rows", type=int, default=TRIM_STEP_ROWS,
                        help="about this many entries per XTRIM of a large trim")
    parser.add_argument("--no-progress", action="store_true",
                        help="no progress (default: live on a terminal, a line per phase "
                             "otherwise)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    return parser


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    return build_parser().parse_args(argv)


def _main(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.DEBUG if args.debug else logging.WARNING)
    result = archive(
        url=args.url,
        streams=args.streams,
        out=args.out,
        older_than=args.older_than,
        before_id=args.before_id,
        partitions_per_stream=args.partitions_per_stream,
        progress=False if args.no_progress else Phases.auto(None, log_lines=True),
        trim_step_rows=args.trim_step_rows,
        # Spark logs a failed task's traceback at ERROR: the one-line error says it already.
        spark_log_level="WARN" if args.debug else "OFF",
    )
    print(json.dumps(asdict(result), indent=2) if args.json else result.summary())
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_cli("sluice-archive", build_parser(), _main, argv)


if __name__ == "__main__":
    sys.exit(main())
