"""HOTKEYS' session: which keys cost the most CPU time and network bytes (Redis 8.6's
``hotkeys.c``; its top-K structure is ``chk.c``).

Role: pure data. A ``HotkeysSession`` is what ``HOTKEYS START`` creates and ``GET`` reports:
the options, the clock readings, the session's counters, and one ``TopK`` per tracked metric.
The server feeds it one call per executed command that has keys (``record``): the command's
CPU time in microseconds and its network bytes (request plus reply), each shared equally
among the command's keys, as Redis's ``hotkeyStatsUpdateCurrentCmd`` divides them.

The top-K: Redis keeps a Cuckoo Heavy Keeper sketch (10 * COUNT names in a min-heap, over
cuckoo tables of about 100 * COUNT buckets, with probabilistic decay of colliding lobby
counters). Here it is a weighted Space-Saving summary (Metwally, Agrawal, El Abbadi, 2005) of
10 * COUNT counters. They behave alike where the Tcl tests and users look: both are exact
while the session has seen no more distinct keys than the structure holds (Redis's tables are
collision-free in practice at that size), both hold memory bounded by COUNT whatever the
number of keys, and both let a newcomer that displaces the weakest entry inherit that entry's
count (CHK's promoted lobby item keeps the kicked-out heavy entry's count, Space-Saving's new
counter starts at the evicted minimum), so a key's reported weight may overestimate it by at
most the minimum counter when many cold keys churn. Space-Saving is deterministic (no
``rand()``), and guarantees every key heavier than total / capacity is in the summary.

Invariants:
- ``TopK`` holds at most ``capacity`` items, each with a count > 0, one per slot.
- ``TopK.heap`` holds exactly one entry per slot, whose count is <= the slot's count (counts
  only grow, and a slot's new item starts above the count it replaces; a stale entry is
  refreshed when it reaches the top), so the first fresh top of the heap is a true minimum.
- ``total`` is the sum of every weight added (Redis's ``chkTopK.total``: GET's
  ``total-net-bytes``).
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable

CPU = 1  # HOTKEYS_TRACK_CPU
NET = 2  # HOTKEYS_TRACK_NET
SLOTS = 16384  # CLUSTER_SLOTS: standalone reports the whole range as selected


class TopK:
    """Weighted Space-Saving: the heaviest items of a stream of (item, weight).

    Items live in slots (``items[i]``, ``counts[i]``, ``index[item] == i``); the heap holds
    one int per slot, ``count << shift | slot``, so its comparisons are of plain ints (about
    a third cheaper per eviction than (count, item) pairs)."""

    __slots__ = ("capacity", "index", "items", "counts", "heap", "total", "shift", "mask")

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.index: dict[bytes, int] = {}  # item -> its slot
        self.items: list[bytes] = []  # slot -> item
        self.counts: list[int] = []  # slot -> estimated weight (never under the truth)
        self.heap: list[int] = []  # lazy min-heap of count << shift | slot (see invariants)
        self.total = 0  # every weight added
        self.shift = capacity.bit_length()
        self.mask = (1 << self.shift) - 1

    def __len__(self) -> int:
        return len(self.items)

    def add(self, item: bytes, weight: int) -> None:
        """Count ``weight`` for ``item``; a weight of 0 is no event (as chkTopKUpdate)."""
        if weight <= 0:
            return
        self.total += weight
        counts = self.counts
        slot = self.index.get(item)
        if slot is not None:
            counts[slot] += weight
            return
        heap, shift = self.heap, self.shift
        slot = len(counts)
        if slot < self.capacity:
            self.index[item] = slot
            self.items.append(item)
            counts.append(weight)
            heapq.heappush(heap, weight << shift | slot)
            return
        mask = self.mask
        while True:  # the true minimum: refresh stale tops until the top is current
            top = heap[0]
            slot = top & mask
            low = counts[slot]
            if low == top >> shift:
                break
            heapq.heapreplace(heap, low << shift | slot)
        items, index = self.items, self.index
        del index[items[slot]]
        items[slot] = item
        index[item] = slot
        counts[slot] = low + weight
        heapq.heapreplace(heap, (low + weight) << shift | slot)

    def weights(self) -> dict[bytes, int]:
        """Every item held, with its estimated weight."""
        return dict(zip(self.items, self.counts, strict=True))

    def top(self, k: int) -> list[tuple[bytes, int]]:
        """The ``k`` heaviest items, heaviest first (ties by item, for a stable order)."""
        return heapq.nsmallest(k, zip(self.items, self.counts, strict=True),
                               key=lambda kv: (-kv[1], kv[0]))


class HotkeysSession:
    """One HOTKEYS session (Redis's ``hotkeyStats``), active from START to STOP, DURATION's
    end, or RESET; a stopped session stays for GET until RESET or the next START."""

    __slots__ = (
        "metrics", "count", "duration_ms", "sample_ratio", "slots", "start_ms", "active",
        "ru_start", "cpu", "net", "time_sampled_selected", "time_all_selected", "time_all",
        "net_sampled_selected", "net_all_selected", "net_all", "update_ns", "random",
    )

    def __init__(self, metrics: int, count: int = 10, duration_ms: int = 0,
                 sample_ratio: int = 1, *, start_ms: int, ru_start: tuple[float, float],
                 slots: tuple[int, ...] | None = None,
                 rng: Callable[[], float] = random.random) -> None:
        assert metrics & (CPU | NET)
        self.metrics = metrics  # CPU | NET bits
        self.count = count  # K: how many keys GET reports per metric
        self.duration_ms = duration_ms  # DURATION (0: until STOP); once stopped, the length
        self.sample_ratio = sample_ratio  # a command's keys are tracked with probability 1/ratio
        self.slots = slots  # SLOTS (cluster mode only: always None in standalone)
        self.start_ms = start_ms  # collection-start-time-unix-ms
        self.active = True
        self.ru_start = ru_start  # (user, sys) CPU seconds of the process at START
        # The top-Ks track 10 * K items, as Redis's chkTopKCreate(count * 10, ...).
        self.cpu = TopK(count * 10) if metrics & CPU else None
        self.net = TopK(count * 10) if metrics & NET else None
        # Redis's counters: CPU microseconds and network bytes of every command with keys,
        # of those in the selected slots, and of the sampled ones among those.
        self.time_sampled_selected = 0
        self.time_all_selected = 0
        self.time_all = 0
        self.net_sampled_selected = 0
        self.net_all_selected = 0
        self.net_all = 0
        self.update_ns = 0  # time spent updating the top-Ks (INFO hotkeys-cmd-cpu-time)
        self.random = rng

    def sampled(self) -> bool:
        """Is this command's sample drawn? (probability 1 / ratio; always with ratio 1)."""
        ratio = self.sample_ratio
        return ratio == 1 or self.random() < 1.0 / ratio

    def record(self, keys: list[bytes], cpu_us: int, net_bytes: int, sampled: bool = True,
               in_slots: bool = True) -> None:
        """One command's cost: ``cpu_us`` and ``net_bytes`` shared among its ``keys`` (at
        least one), added to the top-Ks if the command is sampled and in the selected slots
        (integer shares: a key's share of a 1 µs command with 2 keys is 0, no event)."""
        self.time_all += cpu_us
        self.net_all += net_bytes
        if in_slots:
            self.time_all_selected += cpu_us
            self.net_all_selected += net_bytes
            if sampled and self.sample_ratio > 1:
                self.time_sampled_selected += cpu_us
                self.net_sampled_selected += net_bytes
        if not (sampled and in_slots):
            return
        n = len(keys)
        cpu, net = self.cpu, self.net
        if cpu is not None:
            share = cpu_us // n
            if share:
                for key in keys:
                    cpu.add(key, share)
        if net is not None:
            share = net_bytes // n
            if share:
                for key in keys:
                    net.add(key, share)

    def stop(self, now_ms: int) -> None:
        """STOP, or DURATION's end: the session keeps its results and its length."""
        self.active = False
        self.duration_ms = now_ms - self.start_ms

    def expired(self, now_ms: int) -> bool:
        """Has DURATION run out? (the cron stops the session then, as Redis's serverCron)"""
        return self.active and self.duration_ms > 0 and now_ms - self.start_ms >= self.duration_ms

    def elapsed_ms(self, now_ms: int) -> int:
        """collection-duration-ms: so far while active, the session's length once stopped."""
        return now_ms - self.start_ms if self.active else self.duration_ms

    def slot_ranges(self) -> list[list[int]]:
        """selected-slots: sorted, merged ranges; a single slot is a 1-element list."""
        if self.slots is None:
            return [[0, SLOTS - 1]]  # standalone: this node serves every slot
        ranges: list[list[int]] = []
        for slot in sorted(self.slots):
            if ranges and ranges[-1][-1] == slot - 1:
                ranges[-1] = [ranges[-1][0], slot]
            else:
                ranges.append([slot])
        return ranges

    def report(self, now_ms: int, ru_now: tuple[float, float]) -> list[tuple[bytes, object]]:
        """GET's fields in Redis's order, with its conditional ones: the selected-slots
        counters only when SLOTS was given, the sampled ones only with SAMPLE > 1 too; CPU's
        and NET's totals and lists only for the metrics tracked."""
        has_slots = self.slots is not None
        sampling = self.sample_ratio > 1
        out: list[tuple[bytes, object]] = [
            (b"tracking-active", 1 if self.active else 0),
            (b"sample-ratio", self.sample_ratio),
            (b"selected-slots", self.slot_ranges()),
        ]
        if has_slots and sampling:
            out.append((b"sampled-commands-selected-slots-us", self.time_sampled_selected))
        if has_slots:
            out.append((b"all-commands-selected-slots-us", self.time_all_selected))
        out.append((b"all-commands-all-slots-us", self.time_all))
        if has_slots and sampling:
            out.append((b"net-bytes-sampled-commands-selected-slots", self.net_sampled_selected))
        if has_slots:
            out.append((b"net-bytes-all-commands-selected-slots", self.net_all_selected))
        out.append((b"net-bytes-all-commands-all-slots", self.net_all))
        out.append((b"collection-start-time-unix-ms", self.start_ms))
        out.append((b"collection-duration-ms", self.elapsed_ms(now_ms)))
        if self.cpu is not None:
            # The process's CPU time since START (Redis: getrusage, whole milliseconds).
            out.append((b"total-cpu-time-user-ms", _ms(ru_now[0] - self.ru_start[0])))
            out.append((b"total-cpu-time-sys-ms", _ms(ru_now[1] - self.ru_start[1])))
        if self.net is not None:
            out.append((b"total-net-bytes", self.net.total))
        for name, topk in ((b"by-cpu-time-us", self.cpu), (b"by-net-bytes", self.net)):
            if topk is not None:
                flat: list[bytes | int] = []
                for key, weight in topk.top(self.count):
                    flat += (key, weight)
                out.append((name, flat))
        return out


def _ms(seconds: float) -> int:
    """Whole milliseconds of a non-negative CPU time difference (rounded to the µs first,
    as the timevals Redis subtracts are)."""
    return max(0, round(seconds * 1_000_000)) // 1000
