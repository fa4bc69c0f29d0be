"""Streams in RDB files: ``RDB_TYPE_STREAM_LISTPACKS_4`` (what Redis 8.6 writes).

Role: serialise a :class:`~sluice.storage.stream.Stream` with its consumer groups, PELs,
consumers and idempotent-production (IDMP) state the way Redis 8.6's ``rdbSaveObject`` does,
and load streams of types 15 (5.0-6.2), 19 (7.0), 21 (7.2-8.4, adds consumers' active time)
and 26 (8.6, adds the IDMP state).

Layout of type 26, in order:

* the number of listpack nodes; per node its 16-byte big-endian master ID (the rax key) and
  the listpack as a string. The listpack starts with the master entry ``count, deleted,
  num-fields, field..., 0``; then per entry ``flags, ms-delta, seq-delta, [num-fields,
  field, value, ...] | [value, ...], lp-count`` (values only when the fields equal the master
  fields: flag SAMEFIELDS = 2; flag DELETED = 1 marks a tombstone).
* length, last ID (ms, seq), first ID, max deleted entry ID, entries added (lengths; the
  three after the last ID since type 19).
* the number of groups; per group (bytewise name order): name, last-delivered ID (ms, seq),
  entries-read (-1 as 2^64-1; since type 19), the PEL (count, then per entry the raw 16-byte
  ID, delivery time as 8-byte little-endian ms, delivery count), the consumers (count, then
  per consumer name, seen-time, active-time (since type 21; -1 when never active), and its
  PEL as raw 16-byte IDs that must be in the group PEL).
* since type 26: IDMP duration (seconds, 1..86400) and max size (1..10000); the number of
  producers; per producer (bytewise pid order) its pid, the number of its iids, then per iid
  (oldest first) the iid and the entry ID it produced (ms, seq); then the all-time counts of
  iids added and of duplicates. No recording time is stored: Redis expires an iid by the
  time part of its entry ID, so that is the time a loaded iid is taken to be recorded at.

NACKed entries (XNACK, Redis 8.8) have no consumer. How Redis 8.8 writes them is not
documented (its RDB notes and the XNACK page say nothing), and a PEL entry without an owner
would be loaded by 8.6 as it is and break its XPENDING, so we write what 8.6 handles: the
entries stay in the group PEL with delivery time = their position in the NACK zone (0, 1,
2 ...: "idle since 1970", so any XAUTOCLAIM takes them at once) and are owned by a consumer
named ``""`` (the owner XPENDING shows for NACKed entries in 8.8), created with seen-time 0
and active-time -1 when the group has no such consumer. Loading turns the ``""`` consumer's
entries with such times back into NACKed entries, in that order, and drops the synthetic
consumer if nothing else is left in it. A file with a PEL entry nobody owns (what 8.8 may
write) is refused, not guessed at.

Tombstones: Sluice drops the fields of a deleted entry, so a tombstone is written with the
DELETED and SAMEFIELDS flags and empty values (readers skip deleted entries' contents).

Loading rebuilds the nodes as the file has them (same boundaries, tombstones kept), so
XINFO STREAM FULL and approximate trimming see what Redis would. This module reaches into
``Stream._nodes`` / ``_keys``, the group's PEL plumbing and the IDMP history: it is the
stream's persistence.
"""

from __future__ import annotations

import struct
from collections import OrderedDict
from typing import Any

from .rdb_codec import RdbError, Reader, as_bytes, enc_len, enc_string, lp_decode, lp_encode
from .stream import Stream
from .stream_errors import BusyGroupError
from .stream_group import Consumer, ConsumerGroup, PendingEntry, next_tick
from .stream_idmp import IdmpState
from .stream_node import Node

T_STREAM_LISTPACKS, T_STREAM_LISTPACKS_2, T_STREAM_LISTPACKS_3 = 15, 19, 21
T_STREAM_LISTPACKS_4 = 26
IDMP_DURATION_RANGE = range(1, 86401)  # seconds, as XCFGSET accepts
IDMP_MAXSIZE_RANGE = range(1, 10001)
FLAG_DELETED, FLAG_SAMEFIELDS = 1, 2
_MASK64 = (1 << 64) - 1
NACK_OWNER = b""  # the consumer NACKed entries are written under (see the docstring)
NACK_TIME_LIMIT = 1 << 31  # delivery times below this, under NACK_OWNER: NACK positions


def _signed(v: int) -> int:
    v &= _MASK64
    return v - (1 << 64) if v >> 63 else v


def _node_listpack(node: Node) -> bytes:
    mf = node.master_fields
    items: list[bytes | int] = [node.live, node.deleted, len(mf), *mf, 0]
    mid = node.master_id
    mms, mseq = mid >> 64, mid & _MASK64
    for i in range(len(node.data)):
        fields = node.fields_at(i)
        items.append(0)  # flags, filled below
        flag_at = len(items) - 1
        items.append(_signed(node.ms[i] - mms))
        items.append(_signed(node.seq[i] - mseq))
        if fields is None:
            items[flag_at] = FLAG_DELETED | FLAG_SAMEFIELDS
            items += [b""] * len(mf)
            items.append(len(mf) + 3)
        elif tuple(fields[0::2]) == mf:
            items[flag_at] = FLAG_SAMEFIELDS
            items += fields[1::2]
            items.append(len(mf) + 3)
        else:
            n = len(fields) // 2
            items.append(n)
            items += fields
            items.append(2 * n + 4)
    return lp_encode(items)


def _id_len(sid: int) -> bytes:
    return enc_len(sid >> 64) + enc_len(sid & _MASK64)


def save_stream(s: Stream, opts: Any) -> tuple[int, bytes]:
    out: list[bytes] = []
    nodes = list(s.iter_nodes())
    out.append(enc_len(len(nodes)))
    for node in nodes:
        out.append(enc_string(node.master_id.to_bytes(16, "big"), opts.compress))
        out.append(enc_string(_node_listpack(node), opts.compress))
    out.append(enc_len(s.length))
    out.append(_id_len(s.last_id))
    out.append(_id_len(s.first_id))
    out.append(_id_len(s.max_deleted_entry_id))
    out.append(enc_len(s.entries_added))
    groups = s.groups_in_order()
    out.append(enc_len(len(groups)))
    for g in groups:
        out.append(enc_string(g.name, opts.compress))
        out.append(_id_len(g.last_id))
        out.append(enc_len(g.entries_read))
        out.append(enc_len(len(g.pel)))
        zone = {sid: i for i, sid in enumerate(g.nacked)}
        for sid, pe in g.pel.items():
            out.append(sid.to_bytes(16, "big"))
            out.append(struct.pack("<q", zone.get(sid, pe.delivery_time)))
            out.append(enc_len(pe.delivery_count))
        consumers = [(c.name, c.seen_time, c.active_time, list(c.pel))
                     for c in g.consumers_in_order()]
        if zone:
            if consumers and consumers[0][0] == NACK_OWNER:  # "" sorts first
                name, seen, active, ids = consumers[0]
                consumers[0] = (name, seen, active, sorted([*ids, *zone]))
            else:
                consumers.insert(0, (NACK_OWNER, 0, -1, list(zone)))
        out.append(enc_len(len(consumers)))
        for name, seen, active, ids in consumers:
            out.append(enc_string(name, opts.compress))
            out.append(struct.pack("<q", seen))
            out.append(struct.pack("<q", active))
            out.append(enc_len(len(ids)))
            for sid in ids:
                out.append(sid.to_bytes(16, "big"))
    _save_idmp(s.idmp, out, opts.compress)
    return T_STREAM_LISTPACKS_4, b"".join(out)


def _save_idmp(idmp: IdmpState, out: list[bytes], compress: bool) -> None:
    out.append(enc_len(idmp.duration))
    out.append(enc_len(idmp.maxsize))
    out.append(enc_len(len(idmp.producers)))
    for pid in sorted(idmp.producers):  # Redis keeps producers in a rax: bytewise order
        hist = idmp.producers[pid]
        out.append(enc_string(pid, compress))
        out.append(enc_len(len(hist)))
        for iid, (sid, _recorded) in hist.items():
            out.append(enc_string(iid, compress))
            out.append(_id_len(sid))
    out.append(enc_len(idmp.iids_added))
    out.append(enc_len(idmp.iids_duplicates))


def _load_idmp(r: Reader, idmp: IdmpState) -> None:
    duration, maxsize = r.len(), r.len()
    if duration not in IDMP_DURATION_RANGE:
        raise RdbError(f"stream IDMP duration {duration} out of range")
    if maxsize not in IDMP_MAXSIZE_RANGE:
        raise RdbError(f"stream IDMP max size {maxsize} out of range")
    idmp.duration, idmp.maxsize = duration, maxsize
    for _ in range(r.len()):
        pid = r.string()
        if pid in idmp.producers:
            raise RdbError("duplicate IDMP producer in stream")
        hist: OrderedDict[bytes, tuple[int, int]] = OrderedDict()
        for _ in range(r.len()):
            iid = r.string()
            sid = _read_id(r)
            # A repeated iid keeps its first entry, as Redis's loader does.
            hist.setdefault(iid, (sid, sid >> 64))
        if hist:  # Sluice keeps no empty producers
            idmp.producers[pid] = hist
    idmp.iids_added = r.len()
    idmp.iids_duplicates = r.len()


def _load_node(master_id: int, blob: bytes) -> Node:
    items = lp_decode(blob)
    try:
        live, deleted, nmaster = int(items[0]), int(items[1]), int(items[2])
        master = [as_bytes(f) for f in items[3 : 3 + nmaster]]
        if items[3 + nmaster] != 0:
            raise RdbError("stream listpack master entry is not terminated by 0")
        node = Node(master_id, [x for f in master for x in (f, b"")])
        mms, mseq = master_id >> 64, master_id & _MASK64
        pos = 4 + nmaster
        while pos < len(items):
            flags = int(items[pos])
            ms = (mms + int(items[pos + 1])) & _MASK64
            seq = (mseq + int(items[pos + 2])) & _MASK64
            pos += 3
            if flags & FLAG_SAMEFIELDS:
                values = [as_bytes(v) for v in items[pos : pos + nmaster]]
                fields = [x for f, v in zip(master, values, strict=True) for x in (f, v)]
                pos += nmaster
            else:
                n = int(items[pos])
                fields = [as_bytes(v) for v in items[pos + 1 : pos + 1 + 2 * n]]
                pos += 1 + 2 * n
            pos += 1  # lp-count
            node.append((ms << 64) | seq, fields)
            if flags & FLAG_DELETED:
                node.mark_deleted(len(node.data) - 1)
    except (IndexError, ValueError, TypeError):
        raise RdbError("malformed stream listpack") from None
    if node.live != live or node.deleted != deleted:
        raise RdbError("stream listpack counters do not match its entries")
    return node


def _read_id(r: Reader) -> int:
    ms, seq = r.len(), r.len()
    return (ms << 64) | seq


def load_stream(r: Reader, rdb_type: int) -> Stream:
    s = Stream()
    for _ in range(r.len()):
        key = r.string()
        if len(key) != 16:
            raise RdbError("stream node key is not a 128-bit ID")
        master_id = int.from_bytes(key, "big")
        node = _load_node(master_id, r.string())
        if not node.data:
            raise RdbError("empty stream listpack")
        s._nodes.append(node)
        s._keys.append(master_id)
    s.length = r.len()
    s.last_id = _read_id(r)
    live = [node.id_at(i) for node in s._nodes for i in range(len(node.data))
            if node.data[i] is not None]
    if len(live) != s.length:
        raise RdbError("stream length does not match its entries")
    if rdb_type >= T_STREAM_LISTPACKS_2:
        s.first_id = _read_id(r)
        s.max_deleted_entry_id = _read_id(r)
        s.entries_added = r.len()
    else:
        s.first_id = live[0] if live else 0
        s.entries_added = s.length
    for _ in range(r.len()):
        name = r.string()
        last_id = _read_id(r)
        # Before 7.0 groups had no read counter: estimated from the stream, as Redis does.
        entries_read = (r.signed_len() if rdb_type >= T_STREAM_LISTPACKS_2
                        else s.estimate_distance(last_id))
        try:
            g = s.create_group(name, last_id, entries_read)
        except BusyGroupError:
            raise RdbError("duplicate consumer group name in stream") from None
        for _ in range(r.len()):
            sid = int.from_bytes(r.take(16), "big")
            pe = PendingEntry(None, r.ms_time())
            pe.delivery_count = r.len()
            if sid in g.pel:
                raise RdbError("duplicate entry in a consumer group PEL")
            g._pel_add(sid, pe)
        for _ in range(r.len()):
            cname = r.string()
            if cname in g.consumers:
                raise RdbError("duplicate consumer in stream consumer group")
            c = Consumer(cname, r.ms_time())
            c.active_time = r.ms_time() if rdb_type >= T_STREAM_LISTPACKS_3 else c.seen_time
            g.consumers[cname] = c
            for _ in range(r.len()):
                sid = int.from_bytes(r.take(16), "big")
                pe = g.pel.get(sid)
                if pe is None:
                    raise RdbError("consumer PEL entry missing from the group PEL")
                if pe.consumer is not None:
                    raise RdbError("stream PEL entry owned by two consumers")
                pe.consumer = c
                c.pel[sid] = pe
        if any(pe.consumer is None for pe in g.pel.values()):
            raise RdbError("group PEL entry without an owner")
        if NACK_OWNER in g.consumers:
            _restore_nacked(g)
    if rdb_type >= T_STREAM_LISTPACKS_4:
        _load_idmp(r, s.idmp)
    return s


def _restore_nacked(g: ConsumerGroup) -> None:
    """Turn the entries ``save_stream`` wrote under the ``""`` consumer back into NACKed ones."""
    owner = g.consumers[NACK_OWNER]
    zone = sorted((pe.delivery_time, sid) for sid, pe in owner.pel.items()
                  if 0 <= pe.delivery_time < NACK_TIME_LIMIT)
    for _, sid in zone:
        pe = owner.pel.pop(sid)
        pe.consumer = None
        pe.delivery_time = 0
        pe.tick = next_tick()
        g.nacked[sid] = None
    if not owner.pel and owner.seen_time == 0 and owner.active_time == -1:
        del g.consumers[NACK_OWNER]  # ours, made up to carry them


def register(savers: dict[bytes, Any], loaders: dict[int, Any]) -> None:
    savers[b"stream"] = save_stream
    for t in (T_STREAM_LISTPACKS, T_STREAM_LISTPACKS_2, T_STREAM_LISTPACKS_3,
              T_STREAM_LISTPACKS_4):
        loaders[t] = load_stream
