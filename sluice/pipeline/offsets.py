"""Structured Streaming offsets: ``{stream: last_id}`` JSON, and the admission-control split.

An offset maps each stream to the ID of the last entry *already covered*; a micro-batch
reads the half-open interval ``(start[s], end[s]]`` per stream with ``XRANGE``. Because stream
IDs only grow, an interval whose end was an existing ID when it was planned always yields the
same rows when it is replayed after a restart (unless someone deletes entries in it: the
reader never trims, and the archival job trims only history older than its cut-off).

Invariants:
- Offsets are plain ``dict[str, str]`` (Spark serialises them with ``json.dumps`` and
  compares the JSON text), always with every configured stream present and keys in the
  configured order, so equal positions produce equal JSON.
- ``"0-0"`` means "nothing read yet": no entry can have ID 0-0.

Pure: no redis, no pyspark.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence

from sluice.pipeline.ids import MIN_ID, StreamID

EARLIEST = "earliest"
LATEST = "latest"

Offsets = dict[str, str]


def normalize(streams: Sequence[str], positions: Mapping[str, str]) -> Offsets:
    """Every configured stream, in configured order; missing streams start at 0-0."""
    return {
        s: str(StreamID.parse(positions[s])) if s in positions else str(MIN_ID) for s in streams
    }


def parse_starting_offsets(text: str, streams: Sequence[str]) -> Offsets | str:
    """``earliest`` / ``latest`` (returned as the keyword) or a JSON ``{stream: id}`` object.

    A JSON value may also be ``"-"`` (earliest) for a stream; ``"$"`` and ``"latest"`` are
    resolved by the reader because they need the server. Unknown streams are an error, so a
    typo does not silently start a stream from the beginning.
    """
    keyword = text.strip().lower()
    if keyword in (EARLIEST, LATEST):
        return keyword
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"startingOffsets must be 'earliest', 'latest' or a JSON object, got {text!r}"
        ) from exc
    if not isinstance(raw, dict) or not all(isinstance(v, str) for v in raw.values()):
        raise ValueError(f'startingOffsets JSON must map stream -> "ms-seq", got {text!r}')
    unknown = sorted(set(raw) - set(streams))
    if unknown:
        raise ValueError(f"startingOffsets names streams not in 'streams': {unknown}")
    return {s: raw[s] for s in streams if s in raw}


def dumps(offsets: Offsets) -> str:
    return json.dumps(offsets, separators=(",", ":"))


def loads(text: str, streams: Sequence[str]) -> Offsets:
    return normalize(streams, json.loads(text))


FetchIds = Callable[[str, str, str, int], list[str]]
"""``fetch_ids(stream, after_id, until_id, count)``: IDs of up to ``count`` entries in
``(after_id, until_id]``, ascending."""


def limited_end(start: Offsets, latest: Offsets, max_rows: int, fetch_ids: FetchIds) -> Offsets:
    """The end offset admitting at most ``max_rows`` rows in total, shared fairly.

    Each round gives every stream that still has rows an equal share of the remaining budget
    (at least one row); a stream that returns fewer rows than its share is exhausted and its
    unused share goes to the others in the next round. The result never passes ``latest`` and
    always advances at least one stream when any has data and ``max_rows >= 1``.
    """
    if max_rows < 1:
        raise ValueError("maxRecordsPerTrigger must be >= 1")
    end = dict(start)
    active = [s for s in start if StreamID.parse(latest[s]) > StreamID.parse(start[s])]
    budget = max_rows
    while budget > 0 and active:
        share = max(1, budget // len(active))
        still_active = []
        for stream in active:
            if budget <= 0:
                break
            take = min(share, budget)
            ids = fetch_ids(stream, end[stream], latest[stream], take)
            if ids:
                end[stream] = ids[-1]
                budget -= len(ids)
            if len(ids) == take and StreamID.parse(end[stream]) < StreamID.parse(latest[stream]):
                still_active.append(stream)
        active = still_active
    return end
