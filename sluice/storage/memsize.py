"""What a key costs in memory, estimated in O(1) from what the value keeps (Redis's
``objectComputeSize`` in ``object.c``, and the allocator's rounding of ``zmalloc_size``).

Role: the numbers behind INFO's ``used_memory`` and ``maxmemory`` eviction
(``Database.used``, kept incrementally at each write) and MEMORY USAGE. A value class
registers its size function with ``register_sizer``; one that does not is measured by a
generic fallback (``sys.getsizeof`` of the container and a sample of its elements).

The figures are CPython's on 64-bit (3.11+): a ``bytes`` of n bytes is a 33 + n byte object,
from pymalloc's 16-byte size classes up to 512 bytes and from malloc beyond (8 bytes of chunk
header, 16-byte rounding); a dict entry costs its slot in the entries table plus its index,
amortised over the table's fill; a small int 32. ``KEY_OVERHEAD`` is what the keyspace keeps
per key besides the key and value objects (measured: ``tests/unit/storage/test_memsize.py``
checks the estimate against tracemalloc for each type). Collections are estimated from
their length and a few sampled elements, as Redis's MEMORY USAGE samples, so a big value
costs O(1) to re-measure after each write.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable
from typing import Any

# Per key, in the keyspace: its entries in the data dict and the slot dict (an int object
# each slot), its places in the slot arrays (key pointer, access word, size, kind), averaged
# over the dicts' fill.
KEY_OVERHEAD = 136
# Per key with a TTL: the expires dict entry, the deadline int, the heap's (when, key) tuple.
EXPIRE_OVERHEAD = 152
DICT_ENTRY = 48  # a dict entry (24-byte entry + index), amortised over the table's fill
LIST_SLOT = 9  # a pointer in a list or deque, with the container's over-allocation


def alloc_size(n: int) -> int:
    """Bytes an allocation of ``n`` bytes takes: pymalloc classes, or malloc's chunks."""
    if n <= 512:
        return (n + 15) & ~15
    return (n + 8 + 15) & ~15


def bytes_size(n: int) -> int:
    """A ``bytes`` object of length ``n``."""
    return alloc_size(33 + n)


def key_size(key: bytes, value: Any) -> int:
    """A key and its value in the keyspace, without the TTL."""
    if type(value) is bytes:
        return KEY_OVERHEAD + bytes_size(len(key)) + bytes_size(len(value))
    return KEY_OVERHEAD + bytes_size(len(key)) + value_size(value)


Sizer = Callable[[Any], int]
_SIZERS: dict[type, Sizer] = {}
SIZERS = _SIZERS  # read by the keyspace's per-write measure without a call in between


def register_sizer(cls: type, sizer: Sizer) -> None:
    """Declare how to estimate a value class's memory (O(1) or sampled)."""
    _SIZERS[cls] = sizer


def value_size(value: Any) -> int:
    """The estimated bytes of a value (not its key)."""
    if type(value) is bytes:
        return bytes_size(len(value))
    sizer = _SIZERS.get(type(value))
    if sizer is not None:
        return sizer(value)
    return generic_size(value)


def sampled_mean(items: Any, samples: int = 5) -> float:
    """The mean cost of the first ``samples`` elements (bytes, or tuples of bytes)."""
    total = 0
    n = 0
    for item in itertools.islice(items, samples):
        if type(item) is tuple:
            total += sum(bytes_size(len(x)) if type(x) is bytes else sys.getsizeof(x)
                         for x in item)
        elif type(item) is bytes:
            total += bytes_size(len(item))
        else:
            total += sys.getsizeof(item)
        n += 1
    return total / n if n else 0.0


def generic_size(value: Any) -> int:
    """A value of a class with no sizer: its own size plus its sampled elements."""
    base = alloc_size(sys.getsizeof(value))
    try:
        n = len(value)
    except TypeError:
        return base
    if not n:
        return base
    return base + int(n * (sampled_mean(iter(value)) + LIST_SLOT))


# -- INFO keysizes: the kind of each value, and its length bin ---------------------------

KIND_STRING, KIND_LIST, KIND_SET, KIND_ZSET, KIND_HASH, KIND_STREAM, KIND_OTHER = range(7)
_KIND_BY_NAME = {b"string": KIND_STRING, b"list": KIND_LIST, b"set": KIND_SET,
                 b"zset": KIND_ZSET, b"hash": KIND_HASH, b"stream": KIND_STREAM}
_KINDS: dict[type, int] = {bytes: KIND_STRING}
KINDS = _KINDS  # (as SIZERS)


def register_kind(cls: type, type_name: bytes) -> None:
    """A value class's kind, from the name TYPE reports for it."""
    _KINDS[cls] = _KIND_BY_NAME.get(type_name, KIND_OTHER)


def kind_of(value: Any) -> int:
    return _KINDS.get(type(value), KIND_OTHER)


def length_of(value: Any) -> int:
    """What INFO keysizes bins a value by: a string's bytes, a collection's elements."""
    try:
        return len(value)
    except TypeError:
        return 0


def size_bin(n: int) -> int:
    """The keysizes bin of a length: 0 for 0, 1 for 1, 2 for 2-3, 3 for 4-7 ..."""
    return n.bit_length()
