"""CPU affinity from Redis's ``*_cpulist`` settings (Redis 6.2+).

Role: ``server_cpulist`` pins the server's main thread at start, ``bio_cpulist`` the
background I/O thread, ``bgsave_cpulist`` and ``aof_rewrite_cpulist`` the forked children.
All four are immutable and empty by default (no pinning), as in Redis.

A list is written as ``taskset`` takes it: ``0,2,3``, ``0,2-3``, ``0-20:2`` (a range with a
stride). Redis's ``setcpuaffinity`` leaves the affinity alone, silently, when the list does
not parse; so do we, with a warning in the log. CPUs past ``CPU_SETSIZE`` (1024) are
ignored as the kernel's ``CPU_SET`` ignores them, so ``0-4000000000`` costs no more than
``0-1023``.

Linux only (``os.sched_setaffinity``); elsewhere the settings are accepted and do nothing,
as in a Redis built without ``USE_SETCPUAFFINITY``.
"""

from __future__ import annotations

import logging
import os
import re
from typing import Any

__all__ = ["parse_cpulist", "apply_cpulist", "pin_main_thread", "pin_bio_thread", "pin_child"]

log = logging.getLogger("sluice")

CPU_SETSIZE = 1024

# One item: N, or N-M, or N-M:S (digits only: no sign, no spaces).
_ITEM = re.compile(r"([0-9]+)(?:-([0-9]+)(?::([0-9]+))?)?\Z")


def parse_cpulist(text: str) -> set[int] | None:
    """The CPUs of a ``taskset``-style list (those below CPU_SETSIZE); None when it does
    not parse."""
    cpus: set[int] = set()
    for item in text.split(","):
        m = _ITEM.match(item)
        if m is None:
            return None
        lo = int(m[1])
        hi = int(m[2]) if m[2] is not None else lo
        step = int(m[3]) if m[3] is not None else 1
        if step == 0 or lo > hi:
            return None
        cpus.update(range(lo, min(hi, CPU_SETSIZE - 1) + 1, step))
    return cpus


def _pin(cpus: set[int]) -> OSError | None:
    """Pin the calling thread to ``cpus``; the error, if the kernel refused."""
    try:
        os.sched_setaffinity(0, cpus)
    except OSError as e:
        return e
    return None


def _not_a_list(setting: str, value: str) -> None:
    log.warning("%s '%s' is not a CPU list (like 0,2-3 or 0-20:2): not pinned", setting, value)


def apply_cpulist(setting: str, cpulist: str) -> None:
    """Pin the calling thread to ``cpulist`` (the value of config ``setting``); nothing when
    it is empty. Threads and children started afterwards inherit the affinity."""
    if not cpulist or not hasattr(os, "sched_setaffinity"):
        return
    cpus = parse_cpulist(cpulist)
    if cpus is None:
        _not_a_list(setting, cpulist)
    elif (e := _pin(cpus)) is not None:
        log.warning("%s '%s': can't set CPU affinity: %s", setting, cpulist, e.strerror)


def pin_main_thread(config: Any) -> set[int] | None:
    """At start: apply ``server_cpulist``, and say now if one of the other lists will not
    parse (the forked children must not log). Returns the CPUs the process had before."""
    before = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    apply_cpulist("server_cpulist", config.server_cpulist)
    for setting in ("bio_cpulist", "bgsave_cpulist", "aof_rewrite_cpulist"):
        value = getattr(config, setting)
        if value and parse_cpulist(value) is None:
            _not_a_list(setting, value)
    return before


def pin_child(cpulist: str) -> None:
    """In a forked child (bgsave_cpulist, aof_rewrite_cpulist): pin, or silently not, as
    Redis does; logging could wait forever on a lock another thread held at the fork."""
    cpus = parse_cpulist(cpulist) if cpulist else None
    if cpus and hasattr(os, "sched_setaffinity"):
        _pin(cpus)


def pin_bio_thread(bio_cpulist: str, cpus_at_start: set[int] | None) -> None:
    """The bio thread's initializer: ``bio_cpulist``, else ``cpus_at_start`` (what the
    process had before ``server_cpulist``). Redis creates its bio threads before it pins the
    main thread, so they keep those; ours starts on first use and would inherit the pin."""
    if bio_cpulist:
        apply_cpulist("bio_cpulist", bio_cpulist)
    elif cpus_at_start is not None:
        _pin(cpus_at_start)
