"""Consumer groups, consumers and pending entries of a stream.

Role: the data side of XREADGROUP, XACK, XPENDING, XCLAIM, XAUTOCLAIM and
XGROUP. Methods take parsed arguments and the current time (an injectable
clock: callers pass ``now`` in ms) and return plain values.

Mirrors ``streamCG``, ``streamConsumer`` and ``streamNACK`` of Redis's
``stream.h`` and, in ``t_stream.c``: ``streamReplyWithRange`` (group
delivery, entries_read bookkeeping), ``streamReplyWithRangeFromConsumerPEL``,
``xackCommand``, ``xpendingCommand``, ``xclaimCommand``,
``xautoclaimCommand``, ``streamCreateConsumer`` and ``streamDelConsumer``.
XREADGROUP's ``CLAIM min-idle-time`` (Redis 8.4) and XNACK (Redis 8.8) follow the redis.io
documentation (no 8.8 source was available to compare with).

Invariants:
- A :class:`PendingEntry` is shared by the group PEL and its consumer's PEL,
  as Redis shares the ``streamNACK``: ``group.pel[id] is
  entry.consumer.pel[id]`` for every pending ID.
- PELs are ``SortedDict``s keyed by ID: lookups O(log P), range scans
  proportional to what they visit.
- ``_by_time`` (built the first time XREADGROUP CLAIM is used on the group,
  then kept in step) holds ``((delivery_time + 2**63) << 64 | tick) << 128 | id``
  for every pending entry, so the most idle entries come first, and of those with the same
  time the one timed first (Redis's time-ordered PEL list).
- ``entries_read`` is -1 when unknown (Redis's SCG_INVALID_ENTRIES_READ) and
  follows Redis 7.2+ (7.0 differs for XGROUP CREATE/SETID ... ENTRIESREAD).
- NACKed entries (XNACK, Redis 8.8) are pending entries with no consumer and delivery time 0,
  listed in ``nacked`` in the order they were released (the "NACK zone" at the head of
  Redis's time-ordered PEL list): a NACKed entry is in ``pel`` and ``nacked``, in no
  consumer's PEL. Their time 0 puts them first in ``_by_time``, in release order (the tick),
  so XREADGROUP CLAIM serves them before other idle entries, as the XREADGROUP page says.
- ``hist`` counts the pending entries by delivery count (buckets ``DELIVERY_BUCKETS``), kept
  in step by every change of the PEL, so the metrics endpoint never scans a PEL.
- ``dead_letter`` (Sluice, opt-in): with a policy, the delivery paths (history reads, XCLAIM,
  XAUTOCLAIM, XREADGROUP CLAIM) do not deliver an entry already delivered
  ``max_deliveries`` times: they leave it pending and list its ID in ``due``, which the
  command layer drains (``commands/stream_deadletter.py``) in the same command.

The per-entry classes (``PendingEntry``, ``Consumer``, ``DeadLetter``) and the histogram's
buckets live in ``stream_pel.py``. Imports nothing outside ``sluice.storage`` (and
sortedcontainers), and not ``stream.py``:
a group sees its stream through :class:`GroupStream` (the members of ``Stream`` it reads),
so ``stream.py`` can import this module without a circle.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import islice
from typing import Protocol

from sortedcontainers import SortedDict, SortedList

from sluice.storage.stream_node import Entry, Node, span_entries
from sluice.storage.stream_pel import (
    DELIVERY_BUCKETS,
    LLONG_MAX,
    ClaimedEntry,
    Consumer,
    DeadLetter,
    Fits,
    PendingEntry,
    PendingInfo,
    delivery_bucket,
    next_tick,
)
from sluice.storage.streamid import MAX_ID

__all__ = ["ConsumerGroup", "Consumer", "DeadLetter", "PendingEntry", "PendingInfo",
           "ClaimedEntry", "GroupStream", "DELIVERY_BUCKETS", "LLONG_MAX", "delivery_bucket",
           "next_tick"]

_TIME_BIAS = 1 << 63


class GroupStream(Protocol):
    """What a group (and a command holding only the group) reads of the stream it belongs
    to: members of ``storage.stream.Stream``."""

    @property
    def length(self) -> int: ...  # Live entries.
    @property
    def last_id(self) -> int: ...  # ID of the last entry ever added (or XSETID).
    @property
    def first_id(self) -> int: ...  # ID of the first entry, 0 when empty.
    @property
    def max_deleted_entry_id(self) -> int: ...  # Largest ID ever deleted.
    @property
    def entries_added(self) -> int: ...  # Entries ever added.

    def get(self, sid: int) -> list[bytes] | None: ...  # An entry's fields, None if absent.
    def exists(self, sid: int) -> bool: ...  # Whether entry ``sid`` is live.
    def last_live_id(self) -> int: ...  # ID of the last live entry, 0 when empty.
    def spans(self, start: int, end: int, count: int = 0,
              rev: bool = False) -> list[tuple[Node, int, int]]: ...  # Where a range lies.
    def range_has_tombstones(self, start: int | None, end: int | None) -> bool: ...
    def estimate_distance(self, sid: int) -> int: ...  # entries_read of ``sid``, estimated.


class ConsumerGroup:
    """A consumer group (Redis's ``streamCG``)."""

    __slots__ = ("stream", "name", "last_id", "entries_read", "pel", "consumers", "_by_time",
                 "nacked", "hist", "hist_sum", "dead_letter", "due")

    stream: GroupStream  # The stream the group belongs to.
    name: bytes  # Group name.
    last_id: int  # Last delivered ID: ``>`` reads serve IDs greater than this.
    entries_read: int  # Logical read counter of last_id; -1 when unknown.
    pel: SortedDict  # ID -> PendingEntry: delivered (without NOACK) and not acknowledged.
    consumers: dict[bytes, Consumer]  # Consumers by name (creation order).
    _by_time: SortedList | None  # Idle-order index of the PEL, built on first CLAIM use.
    nacked: dict[int, None]  # NACKed IDs (no consumer), in release order (XNACK, 8.8).
    hist: list[int]  # Pending entries per delivery-count bucket (DELIVERY_BUCKETS, +Inf).
    hist_sum: int  # Sum of the delivery counts of the pending entries.
    dead_letter: DeadLetter | None  # Sluice's dead-letter policy, None when off.
    due: list[int]  # IDs the last call found due for dead-lettering (drained by commands).

    def __init__(self, stream: GroupStream, name: bytes, last_id: int, entries_read: int) -> None:
        self.stream = stream
        self.name = name
        self.last_id = last_id
        self.entries_read = entries_read
        self.pel = SortedDict()
        self.consumers = {}
        self._by_time = None
        self.nacked = {}
        self.hist = [0] * (len(DELIVERY_BUCKETS) + 1)
        self.hist_sum = 0
        self.dead_letter = None
        self.due = []

    # ------------------------------------------------------------ PEL plumbing

    def _time_key(self, sid: int, pe: PendingEntry) -> int:
        return ((((pe.delivery_time + _TIME_BIAS) << 64) | pe.tick) << 128) | sid

    def _pel_add(self, sid: int, pe: PendingEntry) -> None:
        self.pel[sid] = pe
        self.hist[delivery_bucket(pe.delivery_count)] += 1
        self.hist_sum += pe.delivery_count
        if self._by_time is not None:
            self._by_time.add(self._time_key(sid, pe))

    def _recount(self, pe: PendingEntry, n: int) -> None:
        """Set a pending entry's delivery count, keeping ``hist`` in step."""
        hist = self.hist
        hist[delivery_bucket(pe.delivery_count)] -= 1
        hist[delivery_bucket(n)] += 1
        self.hist_sum += n - pe.delivery_count
        pe.delivery_count = n

    def _is_due(self, sid: int, pe: PendingEntry) -> bool:
        """Would delivering ``pe`` once more pass the dead-letter policy? Then it is listed
        in ``due`` and left pending (and undelivered) for the command to dead-letter."""
        dl = self.dead_letter
        if dl is not None and pe.delivery_count >= dl.max_deliveries:
            self.due.append(sid)
            return True
        return False

    def _set_time(self, sid: int, pe: PendingEntry, t: int) -> None:
        """A new delivery time: the entry goes after every entry with the same time, even if
        its own time does not change (Redis's pelListUpdate)."""
        if self._by_time is not None:
            self._by_time.remove(self._time_key(sid, pe))
            pe.delivery_time = t
            pe.tick = next_tick()
            self._by_time.add(self._time_key(sid, pe))
        else:
            pe.delivery_time = t
            pe.tick = next_tick()

    def drop_pending(self, sid: int) -> PendingEntry:
        """Remove ``sid`` from the group PEL and its owner's PEL (XACK's core)."""
        pe: PendingEntry = self.pel.pop(sid)
        if pe.consumer is not None:
            del pe.consumer.pel[sid]
        elif self.nacked:
            self.nacked.pop(sid, None)
        self.hist[delivery_bucket(pe.delivery_count)] -= 1
        self.hist_sum -= pe.delivery_count
        if self._by_time is not None:
            self._by_time.remove(self._time_key(sid, pe))
        return pe

    def drop_pending_range(self, lo: int, hi: int) -> None:
        """Remove every pending ID in ``[lo, hi]`` (DELREF over a dropped node)."""
        for sid in list(self.pel.irange(lo, hi)):
            self.drop_pending(sid)

    def _give(self, sid: int, pe: PendingEntry, consumer: Consumer) -> None:
        """Move a pending entry to ``consumer``'s PEL."""
        if pe.consumer is not consumer:
            if pe.consumer is not None:
                del pe.consumer.pel[sid]
            elif self.nacked:
                self.nacked.pop(sid, None)  # a NACKed entry taken again
            consumer.pel[sid] = pe
            pe.consumer = consumer

    # -------------------------------------------------------------- consumers

    def lookup_consumer(self, name: bytes) -> Consumer | None:
        return self.consumers.get(name)

    def create_consumer(self, name: bytes, now: int) -> Consumer | None:
        """XGROUP CREATECONSUMER: the new consumer, or None if it already exists."""
        if name in self.consumers:
            return None
        c = self.consumers[name] = Consumer(name, now)
        return c

    def get_or_create_consumer(self, name: bytes, now: int) -> tuple[Consumer, bool]:
        """The consumer ``name``, created if missing; the bool says whether it was created."""
        c = self.consumers.get(name)
        if c is not None:
            return c, False
        c = self.consumers[name] = Consumer(name, now)
        return c, True

    def delete_consumer(self, name: bytes) -> int:
        """XGROUP DELCONSUMER: drop the consumer and its pending entries; returns their count."""
        c = self.consumers.get(name)
        if c is None:
            return 0
        n = len(c.pel)
        for sid in list(c.pel):
            self.drop_pending(sid)
        del self.consumers[name]
        return n

    def consumers_in_order(self) -> list[Consumer]:
        """Consumers in Redis's reply order (its rax sorts names bytewise)."""
        return [self.consumers[n] for n in sorted(self.consumers)]

    # -------------------------------------------------------------- group id

    def set_id(self, last_id: int, entries_read: int = -1) -> None:
        """XGROUP SETID (the caller resolves ``$`` to the stream's last_id)."""
        self.last_id = last_id
        self.entries_read = entries_read

    # -------------------------------------------------------------- delivery

    def deliver_new(self, consumer: Consumer, count: int, now: int, noack: bool) -> list[Entry]:
        """XREADGROUP ``>``: entries after last_id, at most ``count`` (0: all).

        Advances last_id / entries_read; unless ``noack`` records each entry
        as pending for ``consumer`` (taking it over from another consumer if
        XGROUP SETID moved last_id back, with the count reset to 1).
        """
        return span_entries(self.deliver_new_spans(consumer, count, now, noack)[0])

    def deliver_new_spans(
        self, consumer: Consumer, count: int, now: int, noack: bool
    ) -> tuple[list[tuple[Node, int, int]], list[int]]:
        """:meth:`deliver_new`, answered as where the entries are (``Stream.spans``, to be
        rendered by ``Node.render``) and their IDs, so no list is built per entry."""
        consumer.seen_time = now
        if self.last_id == MAX_ID:
            return [], []
        s = self.stream
        spans = s.spans(self.last_id + 1, MAX_ID, count)
        ids = [(node.ms[i] << 64) | node.seq[i]
               for node, lo, hi in spans for i in range(lo, hi) if node.data[i] is not None]
        if not ids:
            return spans, ids
        last = self.last_id
        for sid in ids:  # ascending, all past last_id
            # Counted on only from a known count, at or after the first entry, with no
            # tombstone ahead (8.6.3's streamReplyWithRange); else estimated afresh.
            if self.entries_read != -1 and last >= s.first_id and not (
                    s.max_deleted_entry_id and s.range_has_tombstones(last, None)):
                self.entries_read += 1
            elif s.entries_added:
                self.entries_read = s.estimate_distance(sid)
            last = sid
        self.last_id = last
        if noack:
            return spans, ids
        pel, mine = self.pel, consumer.pel
        added = 0
        for sid in ids:
            pe = pel.get(sid)
            if pe is None:
                pe = PendingEntry(consumer, now)
                if self._by_time is None:
                    pel[sid] = pe
                    added += 1
                else:
                    self._pel_add(sid, pe)
                mine[sid] = pe
            else:
                self._give(sid, pe, consumer)
                self._set_time(sid, pe, now)
                self._recount(pe, 1)
        self.hist[0] += added  # new entries have been delivered once
        self.hist_sum += added
        consumer.active_time = now
        return spans, ids

    def read_history(
        self, consumer: Consumer, after: int, count: int, now: int, fits: Fits | None = None
    ) -> list[tuple[int, list[bytes] | None]]:
        """XREADGROUP with an ID: the consumer's pending entries with IDs > ``after``.

        Entries deleted from the stream come back as ``(id, None)`` and keep
        their counters; the others get delivery_time = now, count + 1. As in
        Redis, ``after`` = the largest ID wraps to 0 and returns everything.
        ``fits`` (MAXCOUNT / MAXSIZE) is asked before each entry; the first it refuses ends
        the read. An entry due for dead-lettering is left out (see ``due``).
        """
        consumer.seen_time = now
        s = self.stream
        start = 0 if after == MAX_ID else after + 1
        keys = consumer.pel.irange(minimum=start)
        out: list[tuple[int, list[bytes] | None]] = []
        for sid in list(islice(keys, count) if count else keys):
            fields = s.get(sid)
            pe: PendingEntry = consumer.pel[sid]
            if fields is not None and self.dead_letter is not None and self._is_due(sid, pe):
                continue
            if fits is not None and not fits(sid, fields):
                break
            if fields is not None:
                self._set_time(sid, pe, now)
                self._recount(pe, pe.delivery_count + 1)
            out.append((sid, fields))
        return out

    def claim_idle(
        self,
        consumer: Consumer,
        min_idle: int,
        count: int,
        now: int,
        fits: Fits | None = None,
    ) -> list[ClaimedEntry]:
        """XREADGROUP CLAIM (Redis 8.4): take over entries idle >= ``min_idle``, most idle first.

        At most ``count`` (0: no limit). Each claimed entry moves to
        ``consumer`` with delivery_time = now and its count + 1; the reply
        carries the idle time and the delivery count from before this claim.
        Pending IDs whose entry was deleted are skipped and stay pending, as
        in Redis 8.6.3 (unlike XAUTOCLAIM, which drops them). NACKed entries (delivery time
        0) come first, in release order. Call :meth:`deliver_new` afterwards with what is
        left of COUNT. ``fits`` and ``due`` as in :meth:`read_history`.
        """
        consumer.seen_time = now
        if self._by_time is None:
            self._by_time = SortedList(self._time_key(sid, pe) for sid, pe in self.pel.items())
        limit_key = ((now - min_idle + _TIME_BIAS + 1) << 192) if min_idle > 0 else None
        out: list[ClaimedEntry] = []
        s = self.stream
        mask = MAX_ID
        for key in list(self._by_time.irange(maximum=limit_key, inclusive=(True, False))):
            if count and len(out) >= count:
                break
            sid = key & mask
            pe: PendingEntry = self.pel[sid]
            fields = s.get(sid)
            if fields is None:
                continue
            if self.dead_letter is not None and self._is_due(sid, pe):
                continue
            if fits is not None and not fits(sid, fields):
                break
            # A NACKed entry reports idle -1, as XPENDING shows it (the XNACK page).
            idle = -1 if pe.consumer is None else max(0, now - pe.delivery_time)
            before = pe.delivery_count
            self._give(sid, pe, consumer)
            self._set_time(sid, pe, now)
            self._recount(pe, before + 1)
            consumer.active_time = now
            out.append((sid, fields, idle, before))
        return out

    def oldest_delivery(self) -> int | None:
        """Delivery time of the least recently delivered pending entry that the stream still
        has (what XREADGROUP ... CLAIM BLOCK waits on), or None."""
        if self._by_time is None:
            self._by_time = SortedList(self._time_key(sid, pe) for sid, pe in self.pel.items())
        s = self.stream
        for key in self._by_time:
            sid: int = key & MAX_ID
            if s.exists(sid):
                when: int = self.pel[sid].delivery_time
                return when
        return None

    # ------------------------------------------------------------------- ack

    def ack(self, ids: Sequence[int]) -> int:
        """XACK: drop the IDs that are pending; returns how many were."""
        n = 0
        pel = self.pel
        for sid in ids:
            if sid in pel:
                self.drop_pending(sid)
                n += 1
        return n

    # --------------------------------------------------------------- pending

    def pending_summary(self) -> tuple[int, int | None, int | None, list[tuple[bytes, int]]]:
        """XPENDING summary: ``(count, smallest ID, largest ID, [(consumer, count)])``.

        Consumers without pending entries are left out; names in Redis's order.
        """
        if not self.pel:
            return 0, None, None, []
        per = [(c.name, len(c.pel)) for c in self.consumers_in_order() if c.pel]
        return len(self.pel), self.pel.keys()[0], self.pel.keys()[-1], per

    def pending_range(
        self,
        start: int,
        end: int,
        count: int,
        now: int,
        consumer: bytes | None = None,
        min_idle: int = 0,
    ) -> list[PendingInfo]:
        """XPENDING extended form; cost proportional to the entries visited."""
        if consumer is not None:
            c = self.consumers.get(consumer)
            if c is None:
                return []
            pel = c.pel
        else:
            pel = self.pel
        out: list[PendingInfo] = []
        if count <= 0:
            return out
        for sid in pel.irange(start, end):
            pe: PendingEntry = pel[sid]
            if min_idle and now - pe.delivery_time < min_idle:
                continue
            if pe.consumer is None:
                # NACKed: no owner (""), and idle -1, as the XNACK page's XPENDING example.
                out.append((sid, b"", -1, pe.delivery_count))
            else:
                out.append((sid, pe.consumer.name, max(0, now - pe.delivery_time),
                            pe.delivery_count))
            if len(out) >= count:
                break
        return out

    # ----------------------------------------------------------------- claim

    def claim(
        self,
        consumer_name: bytes,
        min_idle: int,
        ids: Sequence[int],
        now: int,
        *,
        delivery_time: int | None = None,
        retrycount: int | None = None,
        force: bool = False,
        justid: bool = False,
        lastid: int | None = None,
    ) -> list[tuple[int, list[bytes] | None]]:
        """XCLAIM. Returns the claimed ``(id, fields)`` (fields None with JUSTID).

        ``delivery_time`` is the absolute time from IDLE (now - idle) or TIME,
        whichever came last; values < 0 or > now become now. Pending IDs whose
        entry was deleted are dropped from the PEL and left out.
        """
        if min_idle < 0:
            min_idle = 0
        if lastid is not None and lastid > self.last_id:
            self.last_id = lastid
        if delivery_time is None or delivery_time < 0 or delivery_time > now:
            delivery_time = now
        consumer, _ = self.get_or_create_consumer(consumer_name, now)
        consumer.seen_time = now
        s = self.stream
        out: list[tuple[int, list[bytes] | None]] = []
        for sid in ids:
            pe: PendingEntry | None = self.pel.get(sid)
            fields = s.get(sid)
            if fields is None:
                if pe is not None:
                    self.drop_pending(sid)
                continue
            if pe is None:
                if not force:
                    continue
                pe = PendingEntry(None, now)
                self._pel_add(sid, pe)
            elif min_idle and now - pe.delivery_time < min_idle:
                continue
            elif (self.dead_letter is not None and not justid
                  and (retrycount is None or retrycount < 0) and self._is_due(sid, pe)):
                continue  # a delivery past the policy: dead-lettered instead
            self._give(sid, pe, consumer)
            self._set_time(sid, pe, delivery_time)
            if retrycount is not None and retrycount >= 0:
                self._recount(pe, retrycount)
            elif not justid:
                self._recount(pe, pe.delivery_count + 1)
            out.append((sid, None if justid else fields))
            consumer.active_time = now
        return out

    def autoclaim(
        self,
        consumer_name: bytes,
        min_idle: int,
        start: int,
        count: int,
        now: int,
        justid: bool = False,
    ) -> tuple[int, list[tuple[int, list[bytes] | None]], list[int]]:
        """XAUTOCLAIM: ``(next cursor, claimed, deleted IDs)``; scans at most count*10 entries.

        Deleted entries found on the way are dropped from the PEL, reported
        in the third list and count against ``count``, as in Redis.
        """
        if min_idle < 0:
            min_idle = 0
        consumer, _ = self.get_or_create_consumer(consumer_name, now)
        consumer.seen_time = now
        s = self.stream
        attempts = count * 10
        claimed: list[tuple[int, list[bytes] | None]] = []
        deleted: list[int] = []
        last_seen: int | None = None
        for sid in list(islice(self.pel.irange(minimum=start), attempts)):
            if not count:
                break
            last_seen = sid
            pe: PendingEntry = self.pel[sid]
            fields = s.get(sid)
            if fields is None:
                self.drop_pending(sid)
                deleted.append(sid)
                count -= 1
                continue
            if min_idle and now - pe.delivery_time < min_idle:
                continue
            if self.dead_letter is not None and not justid and self._is_due(sid, pe):
                continue  # dead-lettered by the command instead of claimed
            self._give(sid, pe, consumer)
            self._set_time(sid, pe, now)
            if not justid:
                self._recount(pe, pe.delivery_count + 1)
            claimed.append((sid, None if justid else fields))
            count -= 1
            consumer.active_time = now
        if last_seen is None:
            nxt = next(iter(self.pel.irange(minimum=start)), 0)
        else:
            nxt = next(iter(self.pel.irange(minimum=last_seen, inclusive=(False, True))), 0)
        return nxt, claimed, deleted

    # ----------------------------------------------------------------- XNACK

    def nack(self, ids: Sequence[int], mode: str, retrycount: int = -1,
             force: bool = False) -> list[int]:
        """XNACK (Redis 8.8): release pending entries to the group; returns the IDs released
        (an ID named twice counts twice, as each is looked up in turn).

        Each released entry loses its consumer, gets delivery time 0 and goes to the end of
        the NACK zone (the front of the claim order); its count becomes ``retrycount`` when
        >= 0, else one less (SILENT, never below 0), the same (FAIL) or LLONG_MAX (FATAL).
        With ``force``, an ID not pending but present in the stream gets a new unowned entry
        counted 0 (``retrycount``, or LLONG_MAX for FATAL). Other IDs are ignored.
        """
        done: list[int] = []
        for sid in ids:
            pe: PendingEntry | None = self.pel.get(sid)
            if pe is None:
                if not force or not self.stream.exists(sid):
                    continue
                pe = PendingEntry(None, 0)
                pe.delivery_count = (retrycount if retrycount >= 0
                                     else LLONG_MAX if mode == "FATAL" else 0)
                self._pel_add(sid, pe)
            else:
                if retrycount >= 0:
                    n = retrycount
                elif mode == "SILENT":
                    n = max(0, pe.delivery_count - 1)
                elif mode == "FATAL":
                    n = LLONG_MAX
                else:
                    n = pe.delivery_count
                if pe.consumer is not None:
                    del pe.consumer.pel[sid]
                    pe.consumer = None
                self._recount(pe, n)
            self._set_time(sid, pe, 0)  # a new tick: the end of the NACK zone
            self.nacked.pop(sid, None)
            self.nacked[sid] = None
            done.append(sid)
        return done
