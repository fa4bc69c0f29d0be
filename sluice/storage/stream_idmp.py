"""Idempotent production state of a stream (XADD IDMP / IDMPAUTO, XCFGSET).

Role: remember, per producer ID (pid), the idempotent IDs (iids) recently
used with XADD and the entry each one produced, so a retried XADD gets the
original entry ID back instead of adding a duplicate.

Follows Redis 8.6.3 (t_stream.c, checked by tests/differential/test_streams8_diff.py):

- IDMPAUTO's iid is Redis's: per field/value pair, XXH3-128 of the field, its length as
  8 little-endian bytes, and the value; the pair hashes are combined by sum and xor (so the
  pairs' order does not matter) into 16 bytes, low half first. An entry moved between Sluice
  and Redis (DUMP/RESTORE, RDB) keeps answering retries.
- An iid expires ``duration`` seconds after its *entry ID's* time, as Redis's cron expires
  them; Sluice expires lazily, when that producer is next looked at, and for all producers
  in :meth:`IdmpState.stats`.

Invariants:
- Each producer's history is ordered oldest first and never longer than
  ``maxsize`` (IDMP-MAXSIZE is stronger than IDMP-DURATION).
- Producers with no iids left are dropped.

Imports nothing outside ``sluice.storage`` but ``xxhash``.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

from xxhash import xxh3_128_intdigest

from sluice.storage.stream_errors import IdmpConfigError

__all__ = ["IdmpState"]

_MASK64 = (1 << 64) - 1


def _rotl1(x: int) -> int:
    return ((x << 1) | (x >> 63)) & _MASK64


class IdmpState:
    """Per-stream IDMP settings, history and counters."""

    __slots__ = ("duration", "maxsize", "producers", "iids_added", "iids_duplicates")

    duration: int  # IDMP-DURATION: seconds an idempotent ID is remembered (1..86400).
    maxsize: int  # IDMP-MAXSIZE: idempotent IDs remembered per producer (1..10000).
    # Producer ID -> (idempotent ID -> (entry ID, its ms part)), oldest first.
    producers: dict[bytes, OrderedDict[bytes, tuple[int, int]]]
    iids_added: int  # Lifetime count of entries added with an idempotent ID.
    iids_duplicates: int  # Lifetime count of XADDs answered as duplicates.

    def __init__(self, duration: int = 100, maxsize: int = 100) -> None:
        self.duration = duration  # a new stream takes stream-idmp-duration
        self.maxsize = maxsize  # and stream-idmp-maxsize
        self.producers = {}
        self.iids_added = 0
        self.iids_duplicates = 0

    def configure(self, duration: int | None = None, maxsize: int | None = None) -> bool:
        """XCFGSET: set IDMP-DURATION / IDMP-MAXSIZE; a changed value clears every history.
        True if anything changed.

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
        if new == (self.duration, self.maxsize):
            return False
        self.producers.clear()
        self.duration, self.maxsize = new
        return True

    @staticmethod
    def auto_iid(fields: Sequence[bytes]) -> bytes:
        """IDMPAUTO's content-derived iid (Redis's ``createIdempotencyHash``): the same
        field/value pairs, in any order, give the same iid."""
        sum_lo = sum_hi = xor_lo = xor_hi = 0
        for i in range(0, len(fields) - 1, 2):
            field = fields[i]
            h = xxh3_128_intdigest(field + len(field).to_bytes(8, "little") + fields[i + 1])
            lo, hi = h & _MASK64, h >> 64
            sum_lo, sum_hi = (sum_lo + lo) & _MASK64, (sum_hi + hi) & _MASK64
            xor_lo ^= lo
            xor_hi ^= hi
        lo, hi = sum_lo ^ _rotl1(xor_hi), sum_hi ^ _rotl1(xor_lo)
        return lo.to_bytes(8, "little") + hi.to_bytes(8, "little")

    def _expire(self, pid: bytes, now_ms: int) -> OrderedDict[bytes, tuple[int, int]] | None:
        hist = self.producers.get(pid)
        if hist is None:
            return None
        horizon = now_ms - self.duration * 1000
        while hist and next(iter(hist.values()))[0] >> 64 <= horizon:
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

    def recorded(self, pid: bytes, iid: bytes) -> int | None:
        """The entry ID recorded for (pid, iid), looked up without expiring or counting a
        duplicate (Redis's ``idmpLookup``, XIDMPRECORD's check)."""
        hist = self.producers.get(pid)
        rec = None if hist is None else hist.get(iid)
        return None if rec is None else rec[0]

    def record(self, pid: bytes, iid: bytes, sid: int, now_ms: int) -> None:
        """Remember that (pid, iid) produced entry ``sid`` (called by Stream.append)."""
        hist = self._expire(pid, now_ms)
        if hist is None:
            hist = self.producers[pid] = OrderedDict()
        while len(hist) >= self.maxsize:
            hist.popitem(last=False)
        hist[iid] = (sid, sid >> 64)
        self.iids_added += 1

    def stats(self, now_ms: int) -> tuple[int, int]:
        """``(pids-tracked, iids-tracked)`` for XINFO STREAM, after expiring old iids."""
        for pid in list(self.producers):
            self._expire(pid, now_ms)
        return len(self.producers), sum(len(h) for h in self.producers.values())
