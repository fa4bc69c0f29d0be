"""Choosing keys to evict under ``maxmemory`` (Redis's ``evict.c``: the eviction pool,
``evictionPoolPopulate``, the policies' scores, and the random policies' pick).

Role: pure data. ``EvictionPool.best`` returns the next key to evict for a policy, by
Redis's approximated algorithm: each round samples ``maxmemory-samples`` keys of every
non-empty database (all keys, or those with a TTL for ``volatile-*``), scores them (idle time
for LRU and LRM, 255 minus the decayed counter for LFU, the nearness of the deadline for TTL),
and keeps the best 16 candidates across calls; the best candidate still present is the one.
``pick_random`` is ``allkeys-random`` / ``volatile-random``: a random key of the next
database, round robin. The server deletes what these return (``server/memory.py``).

Invariant: ``pool`` is sorted by score, ascending, and holds at most ``POOL_SIZE`` entries;
an entry's key may since have gone (a ghost): ``best`` skips it, as Redis does.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from .keyspace import Database

POOL_SIZE = 16  # EVPOOL_SIZE
ULLONG_MAX = (1 << 64) - 1

# maxmemory-policy -> (allkeys, score kind); score kinds:
LRU, LFU, TTL, RANDOM = 0, 1, 2, 3
POLICIES: dict[str, tuple[bool, int]] = {
    "volatile-lru": (False, LRU), "volatile-lfu": (False, LFU),
    "volatile-random": (False, RANDOM), "volatile-ttl": (False, TTL),
    "volatile-lrm": (False, LRU), "allkeys-lru": (True, LRU), "allkeys-lfu": (True, LFU),
    "allkeys-random": (True, RANDOM), "allkeys-lrm": (True, LRU),
}


class EvictionPool:
    """The best candidates seen so far: (score, db id, key), ascending by score."""

    __slots__ = ("pool", "next_db")

    def __init__(self) -> None:
        self.pool: list[tuple[int, int, bytes]] = []
        self.next_db = 0  # the random policies' round robin

    def clear(self) -> None:
        self.pool = []

    def populate(self, db: Database, allkeys: bool, kind: int, samples: int) -> int:
        """Sample ``samples`` keys of ``db`` into the pool; returns how many were sampled."""
        pool = self.pool
        access = db.access
        meta, slots, expires = db.meta, db.slots, db.expires
        sample = db.sample_key if allkeys else db.sample_volatile
        taken = 0
        for _ in range(samples):
            key = sample()
            if key is None:
                break
            taken += 1
            if kind == LRU:
                score = access.idle_ms(meta[slots[key]])
            elif kind == LFU:
                score = 255 - access.lfu_decr(meta[slots[key]])
            else:
                score = ULLONG_MAX - expires[key]
            if len(pool) >= POOL_SIZE:
                if score <= pool[0][0]:
                    continue  # no better than the worst candidate of a full pool
                del pool[0]
            bisect.insort(pool, (score, db.id, key))
        return taken

    def best(self, dbs: Sequence[Database], allkeys: bool, kind: int,
             samples: int) -> tuple[Database, bytes] | None:
        """The key to evict next, or None when no database has a candidate."""
        pool = self.pool
        while True:
            total = 0
            for db in dbs:
                if (len(db.slots) if allkeys else len(db.expires)):
                    total += self.populate(db, allkeys, kind, samples)
            if not total:
                return None
            while pool:
                _, db_id, key = pool.pop()
                db = dbs[db_id]
                if key in (db.slots if allkeys else db.expires):
                    return db, key
                # a ghost (deleted since it was sampled): try the next best

    def pick_random(self, dbs: Sequence[Database], allkeys: bool) -> tuple[Database, bytes] | None:
        """A random key of the next database that has one (``*-random`` policies)."""
        n = len(dbs)
        for _ in range(n):
            self.next_db = (self.next_db + 1) % n
            db = dbs[self.next_db]
            key = db.sample_key() if allkeys else db.sample_volatile()
            if key is not None:
                return db, key
        return None
