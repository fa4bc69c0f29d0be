"""Size estimates of Sluice's value types (``memsize.register_sizer``), mirroring what
Redis's ``objectComputeSize`` measures for each type, in CPython's terms.

Each is O(1) in the value's length: counts the value keeps, and a mean element size taken
from a few elements (the ends of a list, the first fields of a hash, the first and last
nodes of a stream), as MEMORY USAGE samples. Importing this module registers them (the
server and MEMORY USAGE import it; a type without a sizer is measured generically).
"""

from __future__ import annotations

import sys

from .hash_parts import PackedFields
from .hashes import Hash
from .lists import ListValue
from .memsize import (
    DICT_ENTRY,
    LIST_SLOT,
    bytes_size,
    register_sizer,
    sampled_mean,
    value_size,
)
from .rawstring import RawString
from .sets import SetValue
from .stream import Stream
from .zsets import ZSetValue

_PEL_ENTRY = 232  # a pending entry: its record, the group's and the consumer's index entries
_CONSUMER = 360  # a consumer: its record, name, PEL index
_GROUP = 900  # a group: its record, name, PEL index, consumer dict, histogram


def list_size(lst: ListValue) -> int:
    """The deque's blocks (a pointer per element) and the elements, their mean size taken
    from the two ends, and the quicklist's node records."""
    items = lst.items
    n = len(items)
    size = 680  # the ListValue and its deque
    if n:
        size += int(n * (LIST_SLOT + (bytes_size(len(items[0])) + bytes_size(len(items[-1])))
                         / 2))
    if lst.ql is not None:
        size += 112 * len(lst.ql.nodes) + 96
    return size


def hash_size(h: Hash) -> int:
    """A packed listpack's one string, or a dict entry and two strings per field; field
    TTLs (a dict entry and an int each, and the heap) and HSCAN's positions."""
    size = 120
    d = h.d
    if type(d) is PackedFields:
        size += 64 + bytes_size(len(d.blob))
    elif d:
        size += 232 + int(len(d) * (DICT_ENTRY + sampled_mean(iter(d.items()), 3)))
    if h.ttl:
        size += len(h.ttl) * (DICT_ENTRY + 32) + len(h.heap or ()) * 72
    if h.order is not None:
        size += len(h.order.fields) * (LIST_SLOT + DICT_ENTRY + 32)
    return size


def stream_size(s: Stream) -> int:
    """The nodes (IDs in two arrays, a slot and the packed values per entry), the entries'
    mean payload taken from the first and last nodes, consumer groups and their PELs."""
    nodes = s._nodes
    size = 400  # the Stream, its IDMP state, the node lists
    if nodes:  # (run at every XADD: plain arithmetic, no generator)
        first = nodes[0]
        last = nodes[-1]
        payload = (first.lp_bytes + last.lp_bytes) / (len(first.data) + len(last.data) or 1)
        # live entries, and the tombstones the sampled nodes suggest the others hold
        entries = s.length + len(nodes) * (first.deleted + last.deleted) / 2
        size += len(nodes) * 480 + int(entries * (16 + LIST_SLOT + 33 + payload))
    if s.groups:
        for group in s.groups.values():
            size += _GROUP + len(group.pel) * _PEL_ENTRY + len(group.consumers) * _CONSUMER
    return size


def set_size(s: SetValue) -> int:
    """An intset's array (8 bytes a member), a listpack's list of strings, or a hash
    table's dict entry, slot and string per member."""
    size = 96
    if s.ints is not None:
        return size + 64 + 8 * len(s.ints)
    if s.items is not None:
        items = s.items
        return size + 56 + int(len(items) * (LIST_SLOT + sampled_mean(iter(items), 3)))
    ht = s.ht
    if ht is None or not len(ht.d):
        return size + 300
    n = len(ht.d)
    return size + 300 + int(n * (DICT_ENTRY + LIST_SLOT + sampled_mean(iter(ht.slots), 3)))


def zset_size(z: ZSetValue) -> int:
    """One key string per member (the score's 8 bytes and the member) in the sorted list,
    the member -> key dict (plus the hash table's slots for a skiplist), and the reply
    pieces made so far with their slots (a member's bulk string: its length, 7 bytes more).
    Pieces are made by reads, which do not measure again: they count from the next write."""
    zsl = z.zsl
    n = len(zsl)
    size = 120
    if not n:
        return size + 300
    mean = len(zsl[0]) + len(zsl[-1]) >> 1
    key = bytes_size(mean)
    member = bytes_size(mean - 8)
    per = LIST_SLOT + key + member + DICT_ENTRY
    if z.ht is not None:
        per += LIST_SLOT + 16  # the slot list, the sorted list's index
    return size + 300 + int(n * per) + zsl.made * (LIST_SLOT + bytes_size(mean - 1))


def raw_string_size(rs: RawString) -> int:
    """The object and its byte buffer (with the buffer's spare room)."""
    return 64 + sys.getsizeof(rs.buf)


register_sizer(ListValue, list_size)
register_sizer(SetValue, set_size)
register_sizer(ZSetValue, zset_size)
register_sizer(RawString, raw_string_size)
register_sizer(Hash, hash_size)
register_sizer(Stream, stream_size)


def sampled_size(value: object, samples: int) -> int:
    """MEMORY USAGE ... SAMPLES n: the value measured on ``n`` elements (0: all), for a
    collection; the accounting estimate otherwise."""
    take = samples or 1 << 62
    if type(value) is ListValue:
        items = value.items
        n = len(items)
        return 680 + int(n * (LIST_SLOT + sampled_mean(iter(items), take))) if n else 680
    if type(value) is Hash and type(value.d) is dict and value.d:
        d = value.d
        return 352 + int(len(d) * (DICT_ENTRY + sampled_mean(iter(d.items()), take)))
    return value_size(value)
