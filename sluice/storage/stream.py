"""The stream value type: entries, trimming, tombstone bookkeeping, idempotent XADD.

Role: the data side of every stream command. Methods take parsed arguments
and return plain values (IDs as ints, entries as ``(id, [f1, v1, ...])``);
they never build replies. Errors are :class:`StreamError` subclasses whose
``str()`` is Redis's exact error text.

Mirrors ``struct stream`` of Redis's ``stream.h`` and, in ``t_stream.c``:
``streamAppendItem``, ``streamTrim``, ``streamDeleteItem``, ``streamGetEdgeID``,
``streamRangeHasTombstones``, ``streamEstimateDistanceFromFirstEverEntry``,
``streamReplyWithCGLag`` (lag only) and ``xsetidCommand``'s checks; the
Redis 8.2 reference policies (KEEPREF / DELREF / ACKED of XADD, XTRIM,
XDELEX, XACKDEL) and the Redis 8.6 idempotent production (IDMP / IDMPAUTO,
XCFGSET) follow the redis.io documentation.

Layout: entries live in :class:`~sluice.storage.stream_node.Node` objects
(Redis's listpacks) kept in a list with a parallel list of their master IDs,
so a lookup is a ``bisect`` over nodes and then over the node's IDs:
O(log N). A node holds at most ``node_max_entries`` entries (tombstones
included) and is closed when ``lp_bytes + new element bytes >=
node_max_bytes``, exactly the rules of ``streamAppendItem``, so approximate
trimming (which only drops whole nodes) matches Redis entry for entry.

Invariants:
- ``length`` is the number of live entries; tombstones stay inside nodes until
  their node is dropped (a node goes away when its last live entry is
  deleted with XDEL, or when trimming removes it whole).
- ``last_id`` only grows, except through :meth:`set_id` (XSETID), which
  Redis also only lets move forward past the last live entry.
- ``first_id`` is the first live entry, ``0`` when the stream is empty.
- ``max_deleted_entry_id`` is the largest ID deleted by XDEL-like commands;
  trimming does not change it, as in Redis.

Imports nothing outside ``sluice.storage``.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Sequence
from typing import Literal

from sluice.storage.keyspace import register_type
from sluice.storage.stream_errors import (
    BusyGroupError,
    IdmpConfigError,
    IdOverflowError,
    IdTooSmallError,
    IdZeroError,
    InvalidStreamID,
    StreamError,
    StreamExhaustedError,
    StreamTooLargeError,
    XSetIdError,
)
from sluice.storage.stream_group import (
    Consumer,
    ConsumerGroup,
    DeadLetter,
    PendingEntry,
    next_tick,
)
from sluice.storage.stream_idmp import IdmpState
from sluice.storage.stream_node import Entry, Node, positions, span_entries
from sluice.storage.streamid import MAX_ID, MAX_PART, format_id

__all__ = [
    "ACKED",
    "DEFAULT_NODE_MAX_BYTES",
    "DEFAULT_NODE_MAX_ENTRIES",
    "DELREF",
    "KEEPREF",
    "BusyGroupError",
    "Entry",
    "IdOverflowError",
    "IdTooSmallError",
    "IdZeroError",
    "IdmpConfigError",
    "IdmpState",
    "InvalidStreamID",
    "RefPolicy",
    "Retention",
    "Stream",
    "StreamError",
    "StreamExhaustedError",
    "StreamTooLargeError",
    "XDelExResult",
    "XSetIdError",
    "default_trim_limit",
    "span_entries",
]

DEFAULT_NODE_MAX_BYTES = 4096
DEFAULT_NODE_MAX_ENTRIES = 100
# Redis refuses entries whose field and value bytes add up to more (1 GB).
_LISTPACK_MAX_SIZE = 1 << 30

RefPolicy = Literal["KEEPREF", "DELREF", "ACKED"]
KEEPREF: RefPolicy = "KEEPREF"
DELREF: RefPolicy = "DELREF"
ACKED: RefPolicy = "ACKED"


class XDelExResult:
    """Per-ID result codes of XDELEX / XACKDEL (Redis 8.2)."""

    NOT_FOUND = -1  # No such entry in the stream.
    DELETED = 1  # Entry deleted (and, for XACKDEL, acknowledged).
    REFERENCED = 2  # ACKED policy: kept because a group still needs it.


def default_trim_limit(node_max_entries: int) -> int:
    """LIMIT used by ``~`` trimming when none is given: 100 nodes' worth, clamped as Redis does."""
    limit = 100 * node_max_entries
    if limit <= 0:
        limit = 10000
    return min(limit, 1000000)


class Retention:
    """A stream's retention by age (Sluice, ``SLUICE.XPOLICY RETENTION``): entries older
    than ``max_age_ms`` (by the time part of their ID) are trimmed in the background, as
    ``XTRIM key MINID <now - max_age> <policy>`` would."""

    __slots__ = ("max_age_ms", "policy")

    max_age_ms: int  # Entries whose ID time is older than now - max_age_ms go (>= 1).
    policy: RefPolicy  # KEEPREF | DELREF | ACKED, as XTRIM's.

    def __init__(self, max_age_ms: int, policy: RefPolicy = "KEEPREF") -> None:
        self.max_age_ms = max_age_ms
        self.policy = policy


class Stream:
    """A stream value (Redis's ``struct stream``) plus its idempotency state."""

    __slots__ = (
        "_nodes",
        "_keys",
        "length",
        "last_id",
        "first_id",
        "max_deleted_entry_id",
        "entries_added",
        "groups",
        "idmp",
        "retention",
    )

    _nodes: list[Node]  # The macro nodes in ID order (the radix tree's values).
    _keys: list[int]  # master_id of each node, parallel to _nodes (the rax keys).
    length: int  # Current number of live entries.
    last_id: int  # Largest ID ever added (or set by XSETID); 0 if none yet.
    first_id: int  # The first live entry, 0 if the stream is empty.
    max_deleted_entry_id: int  # Largest ID deleted by XDEL/XDELEX/XACKDEL.
    entries_added: int  # All-time count of entries added.
    groups: dict[bytes, ConsumerGroup]  # Consumer groups by name (creation order).
    idmp: IdmpState  # Idempotent-production history and settings (XADD IDMP, XCFGSET).
    retention: Retention | None  # Sluice's retention by age; None when off.

    def __init__(self) -> None:
        self._nodes = []
        self._keys = []
        self.length = 0
        self.last_id = 0
        self.first_id = 0
        self.max_deleted_entry_id = 0
        self.entries_added = 0
        self.groups = {}
        self.idmp = IdmpState()
        self.retention = None

    def __len__(self) -> int:
        return self.length

    # ------------------------------------------------------------------ append

    def append(
        self,
        id_spec: tuple[int, bool] | None,
        fields: list[bytes],
        now_ms: int,
        *,
        node_max_bytes: int = DEFAULT_NODE_MAX_BYTES,
        node_max_entries: int = DEFAULT_NODE_MAX_ENTRIES,
        idmp: tuple[bytes, bytes] | None = None,
    ) -> int:
        """Add an entry and return its ID (XADD without the trimming).

        ``id_spec`` is :func:`parse_xadd_id`'s result: None for ``*``,
        ``(ms << 64, False)`` for ``<ms>-*``, ``(id, True)`` for an explicit
        ID. ``fields`` is the flat ``[f1, v1, ...]`` list (non-empty, even).
        ``idmp`` is ``(producer_id, idempotent_id)`` to record for IDMP /
        IDMPAUTO once the entry is added (see :meth:`IdmpState.find`).
        """
        if id_spec is not None and id_spec[1] and id_spec[0] == 0:
            raise IdZeroError()
        last = self.last_id
        if last == MAX_ID:
            raise StreamExhaustedError()
        if id_spec is None:
            # streamNextID: the clock, unless it is behind the last ID's ms.
            sid = now_ms << 64 if now_ms > (last >> 64) else last + 1
        elif id_spec[1]:
            sid = id_spec[0]
        elif (last >> 64) == (id_spec[0] >> 64):
            if last & MAX_PART == MAX_PART:
                raise IdTooSmallError()  # the sequence would overflow
            sid = last + 1
        else:
            sid = id_spec[0]
        if sid <= last:
            raise IdTooSmallError()
        total = sum(map(len, fields))
        if total > _LISTPACK_MAX_SIZE:
            raise StreamTooLargeError()

        nodes = self._nodes
        node = nodes[-1] if nodes else None
        if node is not None:
            max_bytes = node_max_bytes
            if max_bytes == 0 or max_bytes > _LISTPACK_MAX_SIZE:
                max_bytes = _LISTPACK_MAX_SIZE
            if node.lp_bytes + total >= max_bytes or (
                node_max_entries and len(node) >= node_max_entries
            ):
                node = None
        if node is None:
            node = Node(sid, fields)
            nodes.append(node)
            self._keys.append(sid)
        node.append(sid, fields)
        self.length += 1
        self.entries_added += 1
        self.last_id = sid
        if self.length == 1:
            self.first_id = sid
        if idmp is not None:
            self.idmp.record(idmp[0], idmp[1], sid, now_ms)
        return sid

    # ------------------------------------------------------------------ lookup

    def _locate(self, sid: int) -> tuple[int, int]:
        """(node index, position) of the first stored ID >= sid (may be past the end)."""
        k = bisect.bisect_right(self._keys, sid) - 1
        if k < 0:
            return 0, 0
        i = self._nodes[k].index_ge(sid)
        if i == len(self._nodes[k]):
            return k + 1, 0
        return k, i

    def get(self, sid: int) -> list[bytes] | None:
        """The fields of entry ``sid``, or None if it does not exist (or is deleted)."""
        k = bisect.bisect_right(self._keys, sid) - 1
        if k < 0:
            return None
        node = self._nodes[k]
        i = node.index_ge(sid)
        if i < len(node) and node.id_at(i) == sid:
            return node.fields_at(i)
        return None

    def exists(self, sid: int) -> bool:
        """True if ``sid`` is a live entry (streamEntryExists)."""
        k = bisect.bisect_right(self._keys, sid) - 1
        if k < 0:
            return False
        node = self._nodes[k]
        i = node.index_ge(sid)
        return i < len(node) and node.data[i] is not None and node.id_at(i) == sid

    def range(self, start: int, end: int, count: int = 0, rev: bool = False) -> list[Entry]:
        """Live entries with ``start <= id <= end``, ascending (or descending if rev).

        ``count`` 0 means no limit. O(log N + M) plus skipped tombstones.
        """
        out: list[Entry] = []
        for node, lo, hi in self.spans(start, end, count, rev):
            ms, seq, data, fields_at = node.ms, node.seq, node.data, node.fields_at
            for i in (range(hi - 1, lo - 1, -1) if rev else range(lo, hi)):
                if data[i] is not None:
                    out.append(((ms[i] << 64) | seq[i], fields_at(i)))  # type: ignore[arg-type]
        return out

    def spans(
        self, start: int, end: int, count: int = 0, rev: bool = False
    ) -> list[tuple[Node, int, int]]:
        """Where the entries of :meth:`range` are: ``(node, lo, hi)`` position ranges, in the
        order they are read (rev: read each ``[lo, hi)`` backwards).

        Positions include tombstones, which readers skip; ``count`` counts live entries
        only, and a node without tombstones is cut by arithmetic rather than by walking it.
        O(log N) per node touched.
        """
        out: list[tuple[Node, int, int]] = []
        nodes = self._nodes
        if start > end or not nodes:
            return out
        left = count or -1  # live entries still wanted; -1: no limit
        if not rev:
            k, lo = self._locate(start)
            while k < len(nodes) and left:
                node = nodes[k]
                hi = len(node) if end == MAX_ID else node.index_gt(end)  # MAX_ID: "+", ">"
                if hi > lo:
                    hi, left = _cut(node, lo, hi, left, False)
                    out.append((node, lo, hi))
                if hi < len(node):
                    break  # the range ends inside this node (or the count did)
                k, lo = k + 1, 0
            return out
        k = bisect.bisect_right(self._keys, end) - 1
        if k < 0:
            return out
        hi = nodes[k].index_gt(end)
        while left:
            node = nodes[k]
            lo = node.index_ge(start)
            if hi > lo:
                lo, left = _cut(node, lo, hi, left, True)
                out.append((node, lo, hi))
            if lo > 0 or k == 0:
                break  # the range starts inside this node (or the count ended)
            k -= 1
            hi = len(nodes[k])
        return out

    def iter_ids(self, start: int = 0) -> Iterator[int]:
        """Live IDs >= start, ascending (lazy; used to walk the stream cheaply)."""
        nodes = self._nodes
        k, i = self._locate(start)
        while k < len(nodes):
            node = nodes[k]
            data = node.data
            for j in range(i, len(data)):
                if data[j] is not None:
                    yield node.id_at(j)
            k += 1
            i = 0

    def first_entry(self) -> Entry | None:
        """The first live entry, or None."""
        r = self.range(0, MAX_ID, 1)
        return r[0] if r else None

    def last_entry(self) -> Entry | None:
        """The last live entry, or None."""
        r = self.range(0, MAX_ID, 1, rev=True)
        return r[0] if r else None

    def last_live_id(self) -> int:
        """ID of the last live entry, 0 if empty (streamLastValidID)."""
        for node in reversed(self._nodes):
            data = node.data
            for i in range(len(data) - 1, -1, -1):
                if data[i] is not None:
                    return node.id_at(i)
        return 0

    def _first_live_id(self) -> int:
        """streamGetEdgeID(first, skip tombstones), with 0 instead of the max for empty."""
        for node in self._nodes:
            if node.live:
                for i, d in enumerate(node.data):
                    if d is not None:
                        return node.id_at(i)
        return 0

    def first_stored_id(self) -> int:
        """First ID kept in a node, tombstones included; the largest ID if there is none.

        This is streamGetEdgeID(first, keep tombstones), which XADD/XTRIM use to
        rewrite ``MINID ~`` into an exact ``MINID =`` for the AOF and replicas.
        """
        return self._nodes[0].master_id if self._nodes else MAX_ID

    # ----------------------------------------------------------- node walking

    def iter_nodes(self) -> Iterator[Node]:
        """The macro nodes in order, for persistence and XINFO STREAM FULL."""
        return iter(self._nodes)

    @property
    def node_count(self) -> int:
        """Number of macro nodes (``radix-tree-nodes`` is not the same thing)."""
        return len(self._nodes)

    # --------------------------------------------------------------- deleting

    def _remove_node(self, k: int) -> None:
        del self._nodes[k]
        del self._keys[k]

    def _delete_at(self, k: int, i: int) -> None:
        """Delete live entry i of node k (streamIteratorRemoveEntry)."""
        node = self._nodes[k]
        if node.live == 1:
            self._remove_node(k)  # its last live entry: the whole listpack goes
        else:
            node.mark_deleted(i)
        self.length -= 1

    def _delete_one(self, sid: int) -> bool:
        k = bisect.bisect_right(self._keys, sid) - 1
        if k < 0:
            return False
        node = self._nodes[k]
        i = node.index_ge(sid)
        if i == len(node) or node.data[i] is None or node.id_at(i) != sid:
            return False
        self._delete_at(k, i)
        return True

    def _delete_entry(self, sid: int) -> bool:
        """Delete one entry by ID, as XDEL, XDELEX and XACKDEL do: it becomes the max deleted
        ID if it is above it. Call :meth:`_after_deletes` once the batch is done."""
        if not self._delete_one(sid):
            return False
        if sid > self.max_deleted_entry_id:
            self.max_deleted_entry_id = sid
        return True

    def _after_deletes(self) -> None:
        """The first ID again, if the batch deleted the first entry (once, as Redis)."""
        if self.length == 0:
            self.first_id = 0
        elif not self.exists(self.first_id):
            self.first_id = self._first_live_id()

    def delete(self, ids: Sequence[int]) -> int:
        """XDEL: delete the given IDs; returns how many existed."""
        deleted = sum(1 for sid in ids if self._delete_entry(sid))
        if deleted:
            self._after_deletes()
        return deleted

    # ------------------------------------------------------ group references

    def is_referenced(self, sid: int) -> bool:
        """True if some group still needs ``sid``: it is pending there, or not yet delivered."""
        return any(sid > g.last_id or sid in g.pel for g in self.groups.values())

    def delete_refs(self, sid: int) -> None:
        """Remove ``sid`` from the PEL of every group (DELREF)."""
        for g in self.groups.values():
            if sid in g.pel:
                g.drop_pending(sid)

    def _delete_refs_range(self, lo: int, hi: int) -> None:
        for g in self.groups.values():
            g.drop_pending_range(lo, hi)

    def delete_ex(self, ids: Sequence[int], policy: RefPolicy = KEEPREF) -> list[int]:
        """XDELEX: delete IDs under a reference policy; one XDelExResult code per ID."""
        res: list[int] = []
        for sid in ids:
            if policy == ACKED and self.is_referenced(sid):
                # Whether or not the stream has it (Redis 8.6.3: an ID no group has read yet
                # is "referenced" even if it was never added).
                res.append(XDelExResult.REFERENCED)
                continue
            if policy == DELREF:
                self.delete_refs(sid)  # also drops dangling references to missing IDs
            gone = self._delete_entry(sid)
            res.append(XDelExResult.DELETED if gone else XDelExResult.NOT_FOUND)
        if XDelExResult.DELETED in res:
            self._after_deletes()
        return res

    def ack_delete(
        self, group: ConsumerGroup, ids: Sequence[int], policy: RefPolicy = KEEPREF
    ) -> list[int]:
        """XACKDEL: one XDelExResult code per ID (Redis 8.2's ``xackdelCommand``).

        An ID not pending in ``group`` is NOT_FOUND, whether or not the stream has it. A
        pending one is acknowledged, then deleted (DELETED, also when the stream had already
        lost it) unless ACKED finds another group still needing it (REFERENCED).
        """
        res: list[int] = []
        deleted = False
        for sid in ids:
            if sid not in group.pel:
                res.append(XDelExResult.NOT_FOUND)
                continue
            group.drop_pending(sid)
            if policy == ACKED and self.is_referenced(sid):
                res.append(XDelExResult.REFERENCED)
                continue
            if policy == DELREF:
                self.delete_refs(sid)
            deleted = self._delete_entry(sid) or deleted
            res.append(XDelExResult.DELETED)
        if deleted:
            self._after_deletes()
        return res

    # --------------------------------------------------------------- trimming

    def trim(
        self,
        strategy: Literal["MAXLEN", "MINID"],
        threshold: int,
        approx: bool = False,
        limit: int = 0,
        ref_policy: RefPolicy = KEEPREF,
    ) -> int:
        """XTRIM / the trimming half of XADD (Redis 8.6's ``streamTrim``); returns entries
        deleted.

        ``threshold`` is the MAXLEN count or the MINID ID. ``limit`` caps the entries
        deleted (0: no cap); the command layer passes :func:`default_trim_limit` for ``~``
        without LIMIT and 0 for ``=``. Nodes are taken from the head:

        - a node wholly past the threshold ("eligible") goes at once under KEEPREF;
        - otherwise, under KEEPREF with ``~``, trimming stops;
        - otherwise its entries are deleted one by one up to the threshold: under ACKED only
          those no group needs, under DELREF after dropping every group's reference. An
          eligible node whose live entries all went is removed, and trimming goes on to the
          next node; any other node ends it.

        So ``~`` trims whole nodes only under KEEPREF; under ACKED and DELREF it is as exact
        as ``=`` (whatever the groups). Trimming never moves ``max_deleted_entry_id``.
        """
        maxlen = threshold if strategy == "MAXLEN" else -1
        minid = threshold if strategy == "MINID" else 0
        by_len = strategy == "MAXLEN"
        keepref = ref_policy == KEEPREF
        acked = ref_policy == ACKED
        delref = ref_policy == DELREF
        nodes = self._nodes
        deleted = 0
        k = 0
        while k < len(nodes):
            if by_len and self.length <= maxlen:
                break
            node = nodes[k]
            entries = node.live
            if limit and deleted + entries > limit:
                break
            # For MINID the node's last ID counts even if it is a tombstone, as in Redis.
            eligible = self.length - entries >= maxlen if by_len else node.last_id < minid
            if eligible and keepref:
                self._remove_node(k)
                self.length -= entries
                deleted += entries
                continue
            if approx and keepref:
                break
            data = node.data
            gone = 0
            for i in range(len(data)):
                sid = node.id_at(i)
                if (self.length <= maxlen) if by_len else (sid >= minid):
                    break
                if data[i] is None:
                    continue
                if acked and self.is_referenced(sid):
                    continue
                if delref:
                    self.delete_refs(sid)
                node.mark_deleted(i)
                self.length -= 1
                gone += 1
            deleted += gone
            if eligible and gone == entries:
                self._remove_node(k)
                continue
            if not eligible:
                break
            k += 1
        if self.length == 0:
            self.first_id = 0
        elif deleted:
            self.first_id = self._first_live_id()
        return deleted

    # ------------------------------------------------------ entries-read / lag

    def range_has_tombstones(self, start: int | None, end: int | None) -> bool:
        """streamRangeHasTombstones: might ``[start, end]`` contain a deleted entry?"""
        if not self.length or not self.max_deleted_entry_id:
            return False
        lo = 0 if start is None else start
        hi = MAX_ID if end is None else end
        return lo <= self.max_deleted_entry_id <= hi

    def estimate_distance(self, sid: int) -> int:
        """streamEstimateDistanceFromFirstEverEntry: the entries-read value of ``sid``, or -1."""
        if not self.entries_added:
            return 0
        if not self.length and sid <= self.last_id:
            return self.entries_added
        if sid and sid < self.max_deleted_entry_id:
            return -1
        if sid == self.last_id:
            return self.entries_added
        if sid > self.last_id:
            return -1
        if not self.max_deleted_entry_id or self.max_deleted_entry_id < self.first_id:
            if sid < self.first_id:
                return self.entries_added - self.length
            if sid == self.first_id:
                return self.entries_added - self.length + 1
        return -1

    def group_lag(self, group: ConsumerGroup) -> int | None:
        """A group's lag as XINFO reports it (streamReplyWithCGLag); None when unknown."""
        if not self.entries_added or not self.length:
            return 0
        if group.last_id < self.first_id and self.max_deleted_entry_id < self.first_id:
            return self.length
        if group.entries_read != -1 and not self.range_has_tombstones(group.last_id, None):
            return self.entries_added - group.entries_read
        read = self.estimate_distance(group.last_id)
        return None if read == -1 else self.entries_added - read

    # ------------------------------------------------------------------ XSETID

    def set_id(self, last_id: int, entries_added: int = -1, max_deleted_id: int = 0) -> None:
        """XSETID with its checks, in Redis's order; raises XSetIdError."""
        if max_deleted_id and last_id < max_deleted_id:
            raise XSetIdError(
                "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id"
            )
        if entries_added < -1:
            raise XSetIdError("ERR entries_added must be positive")
        if last_id < self.max_deleted_entry_id:
            raise XSetIdError(
                "ERR The ID specified in XSETID is smaller than current max_deleted_entry_id"
            )
        if self.length > 0:
            if last_id < self.last_live_id():
                raise XSetIdError(
                    "ERR The ID specified in XSETID is smaller than the target stream top item"
                )
            if entries_added != -1 and self.length > entries_added:
                raise XSetIdError(
                    "ERR The entries_added specified in XSETID is smaller than the target "
                    "stream length"
                )
        self.last_id = last_id
        if entries_added != -1:
            self.entries_added = entries_added
        if max_deleted_id:
            self.max_deleted_entry_id = max_deleted_id

    # ---------------------------------------------------------------- groups

    def create_group(self, name: bytes, last_id: int, entries_read: int = -1) -> ConsumerGroup:
        """XGROUP CREATE (the caller resolves ``$`` to ``last_id``); BusyGroupError if it exists."""
        if name in self.groups:
            raise BusyGroupError()
        g = ConsumerGroup(self, name, last_id, entries_read)
        self.groups[name] = g
        return g

    def destroy_group(self, name: bytes) -> bool:
        """XGROUP DESTROY; True if the group existed."""
        return self.groups.pop(name, None) is not None

    def groups_in_order(self) -> list[ConsumerGroup]:
        """Groups in Redis's reply order (its rax sorts names bytewise)."""
        return [self.groups[n] for n in sorted(self.groups)]

    # ------------------------------------------------------- keyspace hooks

    def encoding(self) -> bytes:
        """OBJECT ENCODING: Redis reports every stream as ``stream``."""
        return b"stream"

    def copy(self) -> Stream:
        """COPY: an independent deep copy, groups, PELs, consumers and IDMP state included."""
        dup = Stream()
        for node in self._nodes:
            n = Node.__new__(Node)
            for slot in Node.__slots__:
                setattr(n, slot, getattr(node, slot))
            n.ms, n.seq, n.data = node.ms[:], node.seq[:], node.data[:]
            dup._nodes.append(n)
        dup._keys = self._keys[:]
        dup.length, dup.last_id, dup.first_id = self.length, self.last_id, self.first_id
        dup.max_deleted_entry_id = self.max_deleted_entry_id
        dup.entries_added = self.entries_added
        for name, g in self.groups.items():
            g2 = dup.groups[name] = ConsumerGroup(dup, name, g.last_id, g.entries_read)
            for cname, c in g.consumers.items():
                c2 = g2.consumers[cname] = Consumer(cname, c.seen_time)
                c2.active_time = c.active_time
            for sid, pe in g.pel.items():
                owner = None if pe.consumer is None else g2.consumers[pe.consumer.name]
                pe2 = PendingEntry(owner, pe.delivery_time)
                pe2.delivery_count = pe.delivery_count
                g2.pel[sid] = pe2
                if owner is not None:
                    owner.pel[sid] = pe2
            for sid in g.nacked:  # release order; ticks in that order too
                g2.pel[sid].tick = next_tick()
            g2.nacked = dict(g.nacked)
            g2.hist, g2.hist_sum = g.hist[:], g.hist_sum
            if g.dead_letter is not None:
                g2.dead_letter = DeadLetter(g.dead_letter.key, g.dead_letter.max_deliveries)
        if self.retention is not None:
            dup.retention = Retention(self.retention.max_age_ms, self.retention.policy)
        src, idmp = self.idmp, dup.idmp
        idmp.duration, idmp.maxsize = src.duration, src.maxsize
        idmp.iids_added, idmp.iids_duplicates = src.iids_added, src.iids_duplicates
        idmp.producers = {pid: hist.copy() for pid, hist in src.producers.items()}
        return dup

    def __repr__(self) -> str:
        return (
            f"<Stream length={self.length} last_id={format_id(self.last_id).decode()} "
            f"nodes={len(self._nodes)} groups={len(self.groups)}>"
        )


register_type(Stream, b"stream")  # TYPE and SCAN ... TYPE report "stream"


def _cut(node: Node, lo: int, hi: int, left: int, rev: bool) -> tuple[int, int]:
    """Shorten ``[lo, hi)`` of ``node`` to its first ``left`` live entries (its last ones if
    ``rev``); ``left`` -1 means no limit. Returns the new bound (``hi``, or ``lo`` if rev) and
    what is still wanted after this span."""
    if left < 0:
        return (lo if rev else hi), -1
    if not node.deleted:  # no tombstones: positions are entries
        if hi - lo <= left:
            return (lo if rev else hi), left - (hi - lo)
        return (hi - left if rev else lo + left), 0
    data = node.data
    for i in positions(lo, hi, rev):
        if data[i] is not None:
            left -= 1
            if not left:
                return (i if rev else i + 1), 0
    return (lo if rev else hi), left
