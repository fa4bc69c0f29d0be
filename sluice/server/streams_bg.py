"""Background work on streams: the directory of stream keys, and retention by age.

Role: two things the cron (``Server.cron``) and the metrics endpoint need without ever
walking the whole keyspace at once.

``StreamDirectory`` remembers which keys hold streams. It learns them by a bounded walk of
the databases in SCAN order (``walk(budget)``: at most ``budget`` keys a call, resuming where
the last call stopped, like Redis's active-expire cycle resumes its scan), and forgets a key
when it is seen holding something else or nothing. A stream is known at most one full walk
after it appears (or after RENAME / MOVE / SWAPDB give it a new name). Looking up the known
keys is O(number of streams), never O(keys).

``retention_cycle`` applies ``SLUICE.XPOLICY RETENTION`` (``Stream.retention``): for each
known stream whose first entry is older than its maximum age it trims, as
``XTRIM key MINID = <threshold> <KEEPREF | DELREF | ACKED>`` would, where the threshold is
``now - max-age`` but never more than ``RETENTION_WORK`` entries past the head, so a tick
examines at most ``RETENTION_WORK`` entries across all streams (the next tick goes on).
Each trim that removed something is logged as exactly that XTRIM (an exact MINID: replay
removes the same entries) and counted as a write (``key_modified``: WATCH, dirty; blocked
readers are not woken, as XTRIM does not wake them). Skipped while clients are paused, as
active expiry is. Under ACKED a trim removes only what no group needs, from the head: old
entries still pending there hold the tick's window until they are acknowledged (and nothing
a group has not read yet can go), as ``XTRIM ... ACKED`` would keep them.

Runs on the event loop's thread, between commands, like every other cron task.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import islice
from typing import TYPE_CHECKING

from sluice.storage.keyspace import Database, Keyspace
from sluice.storage.stream import Stream
from sluice.storage.streamid import format_id

from .notify import notify_keyspace_event

if TYPE_CHECKING:
    from .app import Server

WALK_KEYS = 1000  # keys the directory visits per cron tick
RETENTION_WORK = 1000  # entries retention may examine per cron tick, across all streams


class StreamDirectory:
    """The keys known to hold streams, per database (see the module docstring)."""

    __slots__ = ("keyspace", "known", "_db", "_cursor", "_turn")

    def __init__(self, keyspace: Keyspace) -> None:
        self.keyspace = keyspace
        self.known: dict[tuple[int, bytes], None] = {}  # (db id, key), in discovery order
        self._db = 0  # the database the walk is in
        self._cursor = 0  # its SCAN cursor there
        self._turn = 0  # where retention starts next (round robin over known streams)

    def note(self, db: Database, key: bytes) -> None:
        """A stream key learnt without the walk (a policy was just set on it)."""
        self.known[db.id, key] = None

    def learn_all(self) -> bool:
        """Walk every key once (after loading: O(keys), like the load itself); True if some
        stream has a retention policy, so the cron must keep walking and trimming."""
        self.walk(sum(len(db) for db in self.keyspace.dbs) + 1)
        return any(s.retention is not None for _, _, s in self.streams())

    def walk(self, budget: int = WALK_KEYS) -> None:
        """Visit up to ``budget`` keys, resuming the last walk."""
        dbs = self.keyspace.dbs
        visited = idle = 0
        while visited < budget and idle <= len(dbs):
            db = dbs[self._db]
            if db.data:
                self._cursor, keys = db.scan(self._cursor, budget - visited)
                data = db.data
                for key in keys:
                    if type(data.get(key)) is Stream:
                        self.known[db.id, key] = None
                visited += len(keys)
                if self._cursor:
                    continue
            else:
                self._cursor = 0
            self._db = (self._db + 1) % len(dbs)
            idle += 1

    def streams(self) -> Iterator[tuple[Database, bytes, Stream]]:
        """The known keys that still hold a stream, in (db, key) order; drops the others.
        Reads values without touching them (no access time, no lazy expiry)."""
        dbs = self.keyspace.dbs
        for db_id, key in sorted(self.known):
            value = dbs[db_id].data.get(key) if db_id < len(dbs) else None
            if type(value) is Stream:
                yield dbs[db_id], key, value
            else:
                del self.known[db_id, key]


def retention_cycle(server: Server, directory: StreamDirectory,
                    work: int = RETENTION_WORK) -> int:
    """One tick of retention by age; returns the entries trimmed."""
    candidates = [(db, key, s) for db, key, s in directory.streams() if s.retention is not None]
    if not candidates:
        return 0
    now = server.keyspace.clock.now_ms()
    trimmed = 0
    start = directory._turn % len(candidates)
    directory._turn = start + 1
    for db, key, s in candidates[start:] + candidates[:start]:
        if work <= 0:
            break
        ret = s.retention
        assert ret is not None
        cutoff = now - ret.max_age_ms
        if cutoff <= 0 or not s.length or (s.first_id >> 64) >= cutoff:
            continue
        if db.find(key) is not s:  # expired meanwhile (find deletes it and logs the DEL)
            continue
        threshold = cutoff << 64
        head = list(islice(s.iter_ids(), work + 1))
        if len(head) > work and head[-1] < threshold:
            threshold = head[-1]  # this tick's share; the next tick goes on from there
        work -= min(len(head), work)
        deleted = s.trim("MINID", threshold, False, 0, ret.policy)
        if not deleted:
            continue
        trimmed += deleted
        if server.notify_flags:  # a retention trim is an XTRIM
            notify_keyspace_event(server, b"xtrim", key, db.id)
        server.key_modified(db, key, ready=False, changes=deleted)
        if server.aof is not None:
            server.aof.feed(db.id, [[b"XTRIM", key, b"MINID", b"=", format_id(threshold),
                                     ret.policy.encode()]])
    if trimmed:
        server.stats["sluice_retention_trimmed"] += trimmed
    return trimmed
