"""Per-key access metadata: the approximated LRU clock, the LFU counter and LRM (Redis's
``evict.c`` and ``object.c``: ``LRU_CLOCK``, ``estimateObjectIdleTime``, ``LFULogIncr``,
``LFUDecrAndReturn``, ``updateLFU``, ``initObjectLRUOrLFU``, ``updateLRM``).

Each key has one 24-bit word (``Database.meta``, a slot of an ``array('I')``), read the way
the policy says, exactly as Redis reads ``robj.lru``:

- LRU and LRM policies: the LRU clock (seconds, 24 bits, wrapping) of the last access (LRU:
  reads and writes) or of the last write (LRM: ``allkeys-lrm`` / ``volatile-lrm``, Redis 8.6);
- LFU policies: 16 bits of minutes (the last decrement time) and an 8-bit logarithmic
  counter that starts at ``LFU_INIT_VAL`` and decays by one every ``lfu-decay-time`` minutes.

Switching policy at run time reinterprets the words, as Redis does (its OBJECT FREQ error says
it "will take some time to adjust"). ``Access`` is the state every database of a keyspace
shares: the policy's mode, the clocks the cron refreshes, the LFU settings, and the lookup
statistics (INFO ``keyspace_hits`` / ``keyspace_misses``), and the dataset's estimated size
(``used``, the sum of the databases' shares: one counter for the eviction check to read).
Pure data: no server here.
"""

from __future__ import annotations

import random
from collections.abc import Callable

LRU_CLOCK_MAX = (1 << 24) - 1  # robj.lru has 24 bits
LFU_INIT_VAL = 5  # a new key's counter, so that it is not evicted before it gets a chance

# Access.mode: what a read does to the word
TOUCH_LRU = 0  # LRU: the word becomes the clock
TOUCH_LFU = 1  # LFU: decay, then a logarithmic increment
TOUCH_NONE = 2  # LRM (reads do not count), or CLIENT NO-TOUCH


class Access:
    """Shared by the databases of one keyspace: how reads touch keys, and lookup stats."""

    __slots__ = ("mode", "lfu", "lrm", "lru_clock", "lfu_minutes", "lfu_log_factor",
                 "lfu_decay_time", "counting", "hits", "misses", "on_miss", "on_event",
                 "no_touch", "used", "time_deletes")

    def __init__(self, now_ms: int) -> None:
        self.mode = TOUCH_LRU  # what reads do (TOUCH_*), from the policy and NO-TOUCH
        self.lfu = False  # the policy is an LFU one (words hold LFU data)
        self.lrm = False  # the policy is an LRM one (writes set the clock, reads do not)
        self.lru_clock = (now_ms // 1000) & LRU_CLOCK_MAX  # refreshed by the server's cron
        self.lfu_minutes = (now_ms // 60_000) & 0xFFFF  # LFUGetTimeInMinutes
        self.lfu_log_factor = 10  # lfu-log-factor
        self.lfu_decay_time = 1  # lfu-decay-time (minutes per decrement; 0: never)
        # INFO keyspace_hits / keyspace_misses: lookups of the running command count while
        # ``counting`` (dispatch sets it per command: Redis's read lookups count, its write
        # lookups do not).
        self.counting = False
        self.hits = 0
        self.misses = 0
        # A counted lookup that found nothing (the "keymiss" event), when someone listens:
        # called with the database's number and the key.
        self.on_miss: Callable[[int, bytes], None] | None = None
        # "new", "overwritten", "type_changed" events from the keyspace, when someone listens:
        # (database number, event, key).
        self.on_event: Callable[[int, bytes, bytes], None] | None = None
        self.no_touch = False  # the running command's client has CLIENT NO-TOUCH on
        self.used = 0  # estimated bytes of every database's keys (each keeps its own share)
        # Time each expired key's deletion for ``on_expire`` (LATENCY's expire-del): set by
        # the server while latency monitoring is on, so it costs nothing otherwise.
        self.time_deletes = False

    def set_policy(self, lfu: bool, lrm: bool) -> None:
        self.lfu = lfu
        self.lrm = lrm
        self._update_mode()

    def set_no_touch(self, on: bool) -> None:
        if on != self.no_touch:
            self.no_touch = on
            self._update_mode()

    def _update_mode(self) -> None:
        if self.no_touch or self.lrm:
            self.mode = TOUCH_NONE
        else:
            self.mode = TOUCH_LFU if self.lfu else TOUCH_LRU

    def refresh(self, now_ms: int) -> None:
        """The cron's clock update (Redis's ``server.lruclock`` / ``server.unixtime``)."""
        self.lru_clock = (now_ms // 1000) & LRU_CLOCK_MAX
        self.lfu_minutes = (now_ms // 60_000) & 0xFFFF

    # -- the word ----------------------------------------------------------------------

    def initial(self) -> int:
        """A new key's word (``initObjectLRUOrLFU``)."""
        if self.lfu:
            return (self.lfu_minutes << 8) | LFU_INIT_VAL
        return self.lru_clock

    def restored_word(self, idle_s: int, freq: int) -> int | None:
        """RESTORE's IDLETIME / FREQ as a word for the running policy, None when the option
        given does not apply to it (``objectSetLRUOrLFU``): FREQ under LFU, IDLETIME under
        the others; an idle time longer than the clock wraps, as Redis's does."""
        if self.lfu:
            return None if freq < 0 else (self.lfu_minutes << 8) | freq
        if idle_s < 0:
            return None
        word = self.lru_clock - idle_s
        # (Redis adds LRU_CLOCK_MAX once, and the 24-bit field keeps the low bits)
        return (word + LRU_CLOCK_MAX) & LRU_CLOCK_MAX if word < 0 else word

    def lfu_decr(self, word: int) -> int:
        """The counter after the decay due since its time (``LFUDecrAndReturn``)."""
        counter = word & 255
        decay = self.lfu_decay_time
        if decay:
            ldt = word >> 8
            now = self.lfu_minutes
            elapsed = now - ldt if now >= ldt else 65535 - ldt + now
            periods = elapsed // decay
            if periods:
                counter = 0 if periods > counter else counter - periods
        return counter

    def lfu_touch(self, word: int) -> int:
        """The word after an access (``updateLFU``: decay, then ``LFULogIncr``)."""
        counter = self.lfu_decr(word)
        if counter < 255:
            base = counter - LFU_INIT_VAL
            if base < 0:
                base = 0
            if random.random() < 1.0 / (base * self.lfu_log_factor + 1):
                counter += 1
        return (self.lfu_minutes << 8) | counter

    def idle_ms(self, word: int) -> int:
        """``estimateObjectIdleTime``: ms since the word's clock, wrapping once."""
        clock = self.lru_clock
        if clock >= word:
            return (clock - word) * 1000
        return (clock + (LRU_CLOCK_MAX - word)) * 1000
