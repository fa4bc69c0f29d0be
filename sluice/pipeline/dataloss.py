"""``failOnDataLoss`` for the streaming source: a checkpoint whose history was trimmed away.

Spark's checkpoint holds, per stream, the ID of the last entry already covered (``S``); the
next micro-batch reads ``(S, end]``. If the stream's history was trimmed past ``S`` meanwhile
(retention by age, ``XTRIM``, ``XADD ... MAXLEN``, the archival job), entries after ``S`` may
be gone before the query read them. As Kafka's source does, the reader then fails the query
(``failOnDataLoss=true``, the default) with a message naming the stream and the offsets, or
logs a warning and goes on with what is left (``failOnDataLoss=false``).

When it is reported, for a stream that exists and a checkpoint that is not ``0-0``:

- its first entry is newer than ``S``: the checkpointed entry was trimmed, and so may have
  been entries after it that the query never read;
- it is empty and its last generated ID is newer than ``S``: entries were added after ``S``
  and all of them are gone.

Like Kafka's ("this may be a false alarm"), the check can fire when nothing unread was lost:
Redis streams keep no record of which IDs were trimmed, so a trimmed checkpoint followed by
the very next entry (a quiet stream whose last read entry aged out) looks the same as a
trimmed checkpoint followed by trimmed unread entries. A checkpoint at ``0-0`` (nothing read
yet, ``startingOffsets=earliest``) never reports: earliest means "whatever is there". The
check runs when a micro-batch is planned on the driver (``partitions``), so it also covers
the batch Spark replays after a restart.

Pure: no pyspark, no redis (the caller passes ``StreamBounds``).
"""

from __future__ import annotations

from sluice.pipeline.client import StreamBounds
from sluice.pipeline.ids import MIN_ID, StreamID


class DataLossError(RuntimeError):
    """Entries after a checkpointed offset may have been trimmed before they were read."""


def check_data_loss(stream: str, start: StreamID, bounds: StreamBounds | None) -> str | None:
    """A message when ``(start, ...]`` of ``stream`` may have lost entries, else None."""
    if start == MIN_ID or bounds is None:
        return None
    if bounds.first is not None:
        if bounds.first <= start:
            return None
        return (f"stream '{stream}': the checkpointed offset {start} is older than the "
                f"stream's first entry {bounds.first}; entries after {start} may have been "
                f"trimmed (retention, XTRIM, MAXLEN) before this query read them")
    if bounds.last_generated > start:
        return (f"stream '{stream}': the checkpointed offset is {start} but the stream is "
                f"empty and its last generated ID is {bounds.last_generated}; entries after "
                f"{start} were trimmed before this query read them")
    return None
