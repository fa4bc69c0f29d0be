"""The archive directory: Parquet files, the manifests that commit them, and recovery.

Layout under ``--out DIR``::

    DIR/stream=<s>/date=<yyyy-mm-dd>/part-*.parquet   archived rows (Hive-style partitions)
    DIR/_manifests/<run_id>.json                      one per committed run
    DIR/_staging/<run_id>/...                         a run's output before it is committed
    DIR/.lock                                         flock held while a run works

Invariants (what makes re-runs after a crash lose and duplicate nothing):
- A data file belongs to the archive iff a manifest lists it. Files are written to staging,
  moved into place, and only then is the manifest written (temp file, fsync, rename, fsync of
  the directory). Anything not listed -- staging leftovers, files moved before a crash, a
  half-written manifest temp file -- is deleted by :func:`recover` at the start of a run.
- Per stream, manifests record the inclusive ID range they archived; the next run starts
  after the highest ``to``, so rows committed but not yet trimmed are never archived twice.
- The server is trimmed (``XTRIM MINID``) only after the manifest is durable.

Readers should read the archive through the manifests, or with Spark's
``spark.read.parquet(DIR)``, which skips ``_``-prefixed directories.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sluice.pipeline.ids import StreamID

MANIFESTS = "_manifests"
STAGING = "_staging"


@dataclass
class Manifest:
    run_id: str
    created: str
    streams: dict[str, dict[str, Any]]  # stream -> {"from", "to", "rows", "cutoff"}
    files: list[dict[str, Any]] = field(default_factory=list)  # {"path", "stream", "rows"}

    def to_json(self) -> str:
        return json.dumps(self.__dict__, indent=2, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Manifest:
        raw = json.loads(text)
        return cls(raw["run_id"], raw["created"], raw["streams"], raw.get("files", []))


@contextlib.contextmanager
def locked(out: Path) -> Iterator[None]:
    """One archive run per directory at a time; the kernel drops the lock if we die."""
    out.mkdir(parents=True, exist_ok=True)
    with open(out / ".lock", "w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RuntimeError(f"another archive run holds {out / '.lock'}") from None
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def load_manifests(out: Path) -> list[Manifest]:
    folder = out / MANIFESTS
    if not folder.is_dir():
        return []
    return [Manifest.from_json(p.read_text()) for p in sorted(folder.glob("*.json"))]


def archived_to(manifests: list[Manifest]) -> dict[str, StreamID]:
    """Per stream, the highest ID any committed run archived."""
    high: dict[str, StreamID] = {}
    for manifest in manifests:
        for stream, info in manifest.streams.items():
            to = StreamID.parse(info["to"])
            if stream not in high or to > high[stream]:
                high[stream] = to
    return high


def data_files(out: Path) -> list[Path]:
    return [
        p for p in out.rglob("*.parquet") if not p.relative_to(out).parts[0].startswith(("_", "."))
    ]


def recover(out: Path, manifests: list[Manifest]) -> list[Path]:
    """Delete everything no manifest commits; returns the data files it removed."""
    shutil.rmtree(out / STAGING, ignore_errors=True)
    for temp in (out / MANIFESTS).glob("*.tmp") if (out / MANIFESTS).is_dir() else ():
        temp.unlink()
    committed = {f["path"] for m in manifests for f in m.files}
    removed = [p for p in data_files(out) if str(p.relative_to(out)) not in committed]
    for path in removed:
        path.unlink()
    return removed


def commit_files(out: Path, staging: Path) -> list[Path]:
    """Move a run's staged Parquet files into place (same file system: atomic renames)."""
    moved = []
    for source in sorted(staging.rglob("*.parquet")):
        target = out / source.relative_to(staging)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(source, target)
        moved.append(target)
    return moved


def write_manifest(out: Path, manifest: Manifest) -> Path:
    """Durably commit a run: temp file, fsync, rename, fsync the directory."""
    folder = out / MANIFESTS
    folder.mkdir(parents=True, exist_ok=True)
    final = folder / f"{manifest.run_id}.json"
    temp = folder / f"{manifest.run_id}.json.tmp"
    with open(temp, "w") as handle:
        handle.write(manifest.to_json())
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temp, final)
    directory = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)
    return final
