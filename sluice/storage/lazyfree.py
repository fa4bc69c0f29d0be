"""What freeing a value would cost Redis, to count INFO ``lazyfreed_objects`` as Redis does
(``lazyfree.c``: ``lazyfreeGetFreeEffort``, ``LAZYFREE_THRESHOLD``).

Role: Sluice frees everything at once (Python's reference counting), but Redis hands a value
whose free effort is over ``LAZYFREE_THRESHOLD`` allocations to its background thread when it
is deleted lazily (UNLINK, or DEL with ``lazyfree-lazy-user-del``), and counts it in
``lazyfreed_objects``; FLUSHALL / FLUSHDB run in the background count every key. The effort
is Redis's estimate of the number of allocations: one for a string or a compact encoding, the
quicklist's nodes, a hash table's or skiplist's elements, a stream's macro nodes plus its
consumer groups and their PELs (the first group's PEL taken for all, as Redis estimates).
Pure data: nothing of the server here.
"""

from __future__ import annotations

from typing import Any

from .hashes import Hash
from .lists import ListValue
from .sets import SetValue
from .stream import Stream
from .zsets import ZSetValue

LAZYFREE_THRESHOLD = 64  # an object costing more allocations than this is freed lazily


def free_effort(value: Any) -> int:
    """``lazyfreeGetFreeEffort``: about how many allocations freeing ``value`` takes."""
    kind = type(value)
    n: int
    if kind is ListValue:
        n = 1 if value.ql is None else len(value.ql.nodes)
        return n
    if kind is SetValue or kind is Hash:
        return len(value) if value.encoding() == b"hashtable" else 1
    if kind is ZSetValue:
        return len(value) if value.encoding() == b"skiplist" else 1
    if kind is Stream:
        stream: Stream = value
        n = stream.node_count
        if stream.groups:
            first = next(iter(stream.groups.values()))
            n += len(stream.groups) * (1 + len(first.pel))
        return n
    return 1  # strings (and what is stored as one: HyperLogLog, bitmaps)


def freed_lazily(value: Any) -> bool:
    """A lazy deletion of ``value`` goes to Redis's background thread (and is counted)."""
    return free_effort(value) > LAZYFREE_THRESHOLD
