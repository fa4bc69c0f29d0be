"""Idempotent production state of a stream (XADD IDMP / IDMPAUTO, XCFGSET).

Role: remember, per producer ID (pid), the idempotent IDs (iids) recently
used with XADD and the entry each one produced, so a retried XADD gets the
original entry ID back instead of adding a duplicate.

Follows the redis.io documentation of Redis 8.6 ("Idempotent message
processing", XADD, XCFGSET, XINFO STREAM); Redis's source for it was not
available to compare with.

Invariants:
- Each producer's history is ordered oldest first and never longer than
  ``maxsize`` (IDMP-MAXSIZE is stronger than IDMP-DURATION).
- An iid is forgotten once ``duration`` seconds have passed since it was
  recorded; expiry is applied lazily when that producer is next looked at,
  and for all producers by :meth:`IdmpState.stats`.
- Producers with no iids left are dropped.

Imports nothing outside ``sluice.storage``.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Sequence

from sluice.storage.stream_errors import IdmpConfigError

__all__ = ["IdmpState"]


class IdmpState:
    """Per-stream IDMP settings, history and counters."""

    __slots__ = ("duration", "maxsize", "producers", "iids_added", "iids_duplicates")

    duration: int  # IDMP-DURATION: seconds an idempotent ID is remembered (1..86400).
    maxsize: int  # IDMP-MAXSIZE: idempotent IDs remembered per producer (1..10000).
    # Producer ID -> (idempotent ID -> (entry ID, time recorded in ms)), oldest first.
    producers: dict[bytes, OrderedDict[bytes, tuple[int, int]]]
    iids_added: int  # Lifetime count of entries added with an idempotent ID.
    iids_duplicates: int  # Lifetime count of XADDs answered as duplicates.

    def __init__(self) -> None:
        self.duration = 100
        self.maxsize = 100
        self.producers = {}
        self.iids_added = 0
        self.iids_duplicates = 0

    def configure(self, duration: int | None = None, maxsize: int | None = None) -> None:
        """XCFGSET: set IDMP-DURATION / IDMP-MAXSIZE; a changed value clears every history.

        The docs say both that XCFGSET clears the maps and that it does so when
        the values differ from the current ones; we follow the latter.
        """
        if duration is not None and not 1 <= duration <= 86400:
            raise IdmpConfigError("ERR invalid duration")
        if maxsize is not None and not 1 <= maxsize <= 10000:
            raise IdmpConfigError("ERR invalid maxsize")
        new = (
            self.duration if duration is None else duration,
            self.maxsize if maxsize is None else maxsize,
        )
        if new != (self.duration, self.maxsize):
            self.producers.clear()
        self.duration, self.maxsize = new

    @staticmethod
    def auto_iid(fields: Sequence[bytes]) -> bytes:
        """IDMPAUTO's content-derived iid: same fields and values, same iid."""
        h = hashlib.blake2b(digest_size=16)
        for f in fields:
            h.update(len(f).to_bytes(8, "little"))
            h.update(f)
        return h.digest()

    def _expire(self, pid: bytes, now_ms: int) -> OrderedDict[bytes, tuple[int, int]] | None:
        hist = self.producers.get(pid)
        if hist is None:
            return None
        horizon = now_ms - self.duration * 1000
        while hist and next(iter(hist.values()))[1] <= horizon:
            hist.popitem(last=False)
        if not hist:
            del self.producers[pid]
            return None
        return hist

    def find(self, pid: bytes, iid: bytes, now_ms: int) -> int | None:
        """The entry ID an earlier XADD recorded for (pid, iid), or None; counts duplicates."""
        hist = self._expire(pid, now_ms)
        rec = None if hist is None else hist.get(iid)
        if rec is None:
            return None
        self.iids_duplicates += 1
        return rec[0]

    def record(self, pid: bytes, iid: bytes, sid: int, now_ms: int) -> None:
        """Remember that (pid, iid) produced entry ``sid`` (called by Stream.append)."""
        hist = self._expire(pid, now_ms)
        if hist is None:
            hist = self.producers[pid] = OrderedDict()
        while len(hist) >= self.maxsize:
            hist.popitem(last=False)
        hist[iid] = (sid, now_ms)
        self.iids_added += 1

    def stats(self, now_ms: int) -> tuple[int, int]:
        """``(pids-tracked, iids-tracked)`` for XINFO STREAM, after expiring old iids."""
        for pid in list(self.producers):
            self._expire(pid, now_ms)
        return len(self.producers), sum(len(h) for h in self.producers.values())
