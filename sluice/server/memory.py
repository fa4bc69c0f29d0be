"""Memory accounting and ``maxmemory`` eviction (Redis's ``evict.c``: ``performEvictions``,
``getMaxmemoryState``, ``evictionTimeProc``; and the memory fields of INFO and MEMORY STATS).

What ``used_memory`` means here: the estimate of what the server holds beyond the Python
interpreter itself (whose code, modules and startup structures, some 30-40 MB of RSS, are
not counted, as Redis does not count its binary): the dataset, kept incrementally by the
keyspace at every write (``Database.used``, ``storage/memsize.py``), plus the server's
buffers (clients' query and output buffers, transports' pending writes, the AOF buffer, the
tracking table, subscriptions) measured by ``refresh`` (the cron, INFO, every eviction pass).
``mem_fragmentation_ratio`` is RSS over that.

Eviction: while ``maxmemory`` is set, every command first checks ``used > maxmemory``
cheaply (``over``: the dataset counter against ``threshold``, which the last refresh made
``maxmemory`` minus the rest); when over, ``perform_evictions`` deletes keys chosen by the
policy (``storage/evict.py``) until enough is freed, for at most the time
``maxmemory-eviction-tenacity`` allows, then keeps going from the event loop (Redis's
``evictionTimeProc``). It answers ``EVICT_FAIL`` when nothing can be evicted: dispatch then
refuses commands flagged ``denyoom`` with ``-OOM``. Each evicted key is deleted as Redis's
``deleteEvictedKeyAndPropagate`` does: the "evicted" event, then WATCH, tracking and blocked
clients (``key_modified``), a DEL to the AOF, ``evicted_keys``. The AOF buffer is not
counted against the limit (Redis's ``freeMemoryGetNotCountedMemory``), so that logging DELs
cannot feed more eviction.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from sluice.storage.evict import POLICIES, RANDOM, EvictionPool
from sluice.storage.memsize import EXPIRE_OVERHEAD, KEY_OVERHEAD

from .notify import notify_keyspace_event

if TYPE_CHECKING:
    from sluice.storage.keyspace import Database

    from .app import Server
    from .client import Client

EVICT_OK, EVICT_RUNNING, EVICT_FAIL = 0, 1, 2
_monotonic = time.monotonic
# What the server's own structures are counted as at start (Redis's used_memory_startup is
# about 0.9 MB): the command table, the databases, the listeners.
STARTUP = 900 * 1024
CLIENT_BASE = 6 * 1024  # a connection: its objects, reader, transport, protocol
# What a connection's lists cost per entry (measured with tracemalloc on CPython 3.12; the
# strings themselves are counted only where the connection holds its own copy):
WATCH_COST = 300  # a WATCHed key: its WatchedKey, its key and both lists' entries
SUBSCRIPTION_COST = 96  # a channel or pattern: the connection's entry, its share of the map's
PREFIX_COST = 128  # a BCAST tracking prefix: the connection's entry, its share of the map's


def rss() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * 4096
    except OSError:
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def client_memory(c: Client) -> int:
    """What a connection holds: its structures, its query and output buffers, the writes its
    transport could not send yet, a queued transaction, its WATCHed keys, subscriptions and
    tracking prefixes (Redis's getClientMemoryUsage, as its last recorded usage: without the
    arguments of the command about to run). O(1) but for a queued transaction."""
    size = CLIENT_BASE + len(c.out) + c.reader.held()
    t = c.transport
    if t is not None:
        size += t.get_write_buffer_size()
    if c.bstate is not None:  # a blocked command keeps its arguments (a finished one not)
        size += sum(map(len, c.argv))
    if c.multi:
        size += sum(len(a) + 48 for _, argv in c.multi for a in argv)
    if c.watched:
        size += len(c.watched) * WATCH_COST
    subscriptions = (len(c.pubsub_channels) + len(c.pubsub_patterns)
                     + len(c.pubsub_shard_channels))
    if subscriptions:
        size += subscriptions * SUBSCRIPTION_COST
    if c.tracking_prefixes:
        size += len(c.tracking_prefixes) * PREFIX_COST
    return size


def time_limit_us(tenacity: int) -> float:
    """``evictionTimeLimitUs``: how long one eviction pass may run."""
    if tenacity <= 10:
        return 50.0 * tenacity
    if tenacity < 100:
        return 500.0 * 1.15 ** (tenacity - 10)
    return float("inf")


class Memory:
    __slots__ = ("server", "pool", "clients_mem", "aof_mem", "other_mem", "peak", "peak_time",
                 "startup", "refreshed_at",
                 "threshold", "running", "exceeded_since", "exceeded_total", "_handle",
                 "_policy", "last_result")

    def __init__(self, server: Server) -> None:
        self.server = server
        self.pool = EvictionPool()
        self.clients_mem = 0  # clients' buffers and structures, at the last refresh
        self.aof_mem = 0  # the AOF buffer (not counted for eviction)
        self.other_mem = 0  # tracking table, subscriptions, slow log ...
        self.startup = STARTUP  # INFO used_memory_startup
        self.refreshed_at = 0.0  # monotonic time of the last refresh
        self.peak = 0  # INFO used_memory_peak
        self.peak_time = 0
        # ``over()`` while the dataset counter passes this: maxmemory less everything else
        # (0: no maxmemory)
        self.threshold = 0
        self.running = False  # the eviction continues from the event loop
        self.exceeded_since = 0.0  # monotonic time the limit was first found exceeded, 0
        self.exceeded_total = 0.0  # INFO total_eviction_exceeded_time (seconds)
        self._handle: Any = None
        self._policy: tuple[bool, int] | None = None  # (allkeys, score kind) or noeviction
        self.last_result = EVICT_OK
        self.apply_policy(server.config.maxmemory_policy)

    # -- settings -------------------------------------------------------------------------

    def apply_policy(self, policy: str) -> None:
        """maxmemory-policy changed: how keys are chosen and how reads touch them."""
        self._policy = POLICIES.get(policy)
        self.pool.clear()
        self.server.keyspace.access.set_policy(lfu="lfu" in policy, lrm="lrm" in policy)

    # -- accounting -----------------------------------------------------------------------

    def refresh(self) -> int:
        """Measure the buffers again; returns ``used_memory`` (and keeps the peak)."""
        server = self.server
        server.keyspace.settle()  # the collections' writes not measured yet
        clients = 0
        for c in server.clients.values():
            clients += client_memory(c)
        self.clients_mem = clients
        self.refreshed_at = _monotonic()
        aof = server.aof
        self.aof_mem = len(getattr(aof, "buf", b"")) if aof is not None else 0
        tracking = server.tracking
        self.other_mem = (
            sum(KEY_OVERHEAD + len(k) for k in tracking.table) // 2 + 40 * tracking.items
            + 400 * len(server.slowlog))
        used = self.used()
        if used > self.peak:
            self.peak = used
            self.peak_time = int(time.time())
        maxmemory = server.config.maxmemory
        # (It may be negative: buffers alone over the limit. Only read while maxmemory is set.)
        self.threshold = maxmemory - STARTUP - clients - self.other_mem if maxmemory else 0
        return used

    def used(self) -> int:
        """``used_memory`` with the buffers as last measured."""
        server = self.server
        server.keyspace.settle()
        return (STARTUP + server.keyspace.access.used + server.pubsub.mem + self.clients_mem
                + self.aof_mem + self.other_mem)

    def overhead(self) -> int:
        """INFO used_memory_overhead: everything but the values (the keyspace's tables
        counted as overhead, as Redis counts its dict entries)."""
        keys = sum(len(db.slots) for db in self.server.keyspace.dbs)
        expires = sum(len(db.expires) for db in self.server.keyspace.dbs)
        return (STARTUP + self.server.pubsub.mem + self.clients_mem + self.aof_mem
                + self.other_mem + keys * KEY_OVERHEAD + expires * EXPIRE_OVERHEAD)

    # -- eviction -------------------------------------------------------------------------

    def over(self, extra: int = 0) -> bool:
        """The cheap test every command makes while maxmemory is set (``extra``: what the
        command's arguments take, which the client holds while it runs). The buffers are
        measured again when the last measure is over 5 ms old: a client's query or output
        buffer can grow between two crons (Redis counts it as it grows)."""
        if _monotonic() - self.refreshed_at > 0.005:
            self.refresh()
        server = self.server
        return server.keyspace.access.used + server.pubsub.mem + extra > self.threshold

    def perform_evictions(self, extra: int = 0) -> int:
        """``performEvictions``: EVICT_OK, EVICT_RUNNING (over the limit, the eviction goes
        on from the event loop) or EVICT_FAIL (over the limit, nothing left to evict)."""
        server = self.server
        maxmemory = server.config.maxmemory
        if not maxmemory or server.pause.mode:  # CLIENT PAUSE WRITE holds evictions too
            return EVICT_OK
        used = self.refresh() - self.aof_mem + extra
        if used <= maxmemory:
            return self._result(EVICT_OK)
        policy = self._policy
        if policy is None:
            return self._result(EVICT_FAIL)
        start = server.latency.start()
        result = self._evict(policy, used - maxmemory)
        server.latency.end("eviction-cycle", start)
        return self._result(result)

    def _evict(self, policy: tuple[bool, int], tofree: int) -> int:
        """Evict keys by ``policy`` until ``tofree`` bytes are freed or the time limit of
        ``maxmemory-eviction-tenacity`` passes (then the eviction goes on from a timer)."""
        server = self.server
        allkeys, kind = policy
        dbs = server.keyspace.dbs
        access = server.keyspace.access
        samples = server.config.maxmemory_samples
        limit_us = time_limit_us(server.config.maxmemory_eviction_tenacity)
        start = time.perf_counter()
        freed = evicted = 0
        while freed < tofree:
            if kind == RANDOM:
                found = self.pool.pick_random(dbs, allkeys)
            else:
                found = self.pool.best(dbs, allkeys, kind, samples)
            if found is None:
                return EVICT_FAIL
            db, key = found
            before = access.used
            self.evict_key(db, key)
            freed += before - access.used
            evicted += 1
            if evicted % 16 == 0 and (time.perf_counter() - start) * 1e6 > limit_us:
                self._start_time_proc()
                return EVICT_RUNNING
        return EVICT_RUNNING if self.running else EVICT_OK

    def evict_clients(self) -> None:
        """``evictClients``: while the clients' memory is over ``maxmemory-clients`` (bytes,
        or a percentage of maxmemory), close the one holding the most (CLIENT NO-EVICT
        ones, and the server's own, are spared); INFO evicted_clients counts them."""
        server = self.server
        limit = server.config.maxmemory_clients
        if limit < 0:
            limit = server.config.maxmemory * -limit // 100
        if not limit:
            return
        # never below 128 KB, so that a bad setting cannot shut every client out (Redis's
        # getClientEvictionLimit)
        limit = max(limit, 128 * 1024)
        sizes = [(client_memory(c), c) for c in server.clients.values()]
        total = sum(size for size, _ in sizes)
        if total < limit:
            return
        sizes.sort(key=lambda pair: pair[0], reverse=True)
        for size, c in sizes:
            if total < limit:
                break
            if c.no_evict or c.transport is None or c.closed:
                continue
            server.stats["evicted_clients"] += 1
            total -= size
            server.close_client(c)

    def evict_key(self, db: Database, key: bytes) -> None:
        """``deleteEvictedKeyAndPropagate``."""
        server = self.server
        start = server.latency.start()
        db.remove(key)  # the value is freed here
        server.latency.end("evict-del", start)
        server.stats["evicted_keys"] += 1
        if server.notify_flags:
            notify_keyspace_event(server, b"evicted", key, db.id)
        server.key_modified(db, key, changes=0)
        if server.aof is not None:
            server.aof.feed(db.id, [[b"DEL", key]])

    def _result(self, result: int) -> int:
        if result == EVICT_OK:
            if self.exceeded_since:
                self.exceeded_total += time.monotonic() - self.exceeded_since
                self.exceeded_since = 0.0
        elif not self.exceeded_since:
            self.exceeded_since = time.monotonic()
        self.last_result = result
        return result

    def _start_time_proc(self) -> None:
        if self.running:
            return
        loop = self.server.loop
        if loop is None:
            return
        self.running = True
        self._handle = loop.call_soon(self._time_proc)

    def _time_proc(self) -> None:
        """``evictionTimeProc``: keep evicting from the event loop until under the limit."""
        self.running = False
        self._handle = None
        try:
            if self.perform_evictions() == EVICT_RUNNING:
                self._start_time_proc()
        finally:
            self.server.before_return()

    def close(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
            self.running = False

    # -- INFO -------------------------------------------------------------------------------

    def current_exceeded_ms(self) -> int:
        return int((time.monotonic() - self.exceeded_since) * 1000) if self.exceeded_since else 0
