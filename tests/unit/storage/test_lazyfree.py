"""Redis's free effort of each type (storage/lazyfree.py): what UNLINK counts in INFO
lazyfreed_objects."""

from __future__ import annotations

from sluice.storage.lazyfree import LAZYFREE_THRESHOLD, free_effort, freed_lazily
from sluice.storage.lists import ListValue
from sluice.storage.sets import DEFAULT_LIMITS, SetValue
from sluice.storage.stream import Stream


def test_strings_and_compact_encodings_cost_one() -> None:
    assert free_effort(b"x" * 10_000) == 1
    small = SetValue()
    for i in range(100):
        small.add(b"%d" % i, DEFAULT_LIMITS)  # an intset
    assert small.encoding() == b"intset" and free_effort(small) == 1
    assert free_effort(ListValue([b"a"] * 100)) == 1  # one listpack


def test_hashtable_set_costs_its_members() -> None:
    s = SetValue()
    for i in range(200):  # past set-max-listpack-entries (128)
        s.add(b"member:%d" % i, DEFAULT_LIMITS)
    assert s.encoding() == b"hashtable"
    assert free_effort(s) == 200 > LAZYFREE_THRESHOLD and freed_lazily(s)


def test_quicklist_costs_its_nodes() -> None:
    lst = ListValue([b"x" * 1000 for _ in range(1000)])  # 8 kB nodes: ~8 elements each
    assert lst.ql is not None
    assert free_effort(lst) == len(lst.ql.nodes) > LAZYFREE_THRESHOLD


def test_stream_costs_nodes_groups_and_pel() -> None:
    s = Stream()
    for i in range(1, 21):
        s.append((i << 64 | 1, True), [b"f", b"v"], 0, node_max_entries=5)
    assert free_effort(s) == s.node_count == 4
    g = s.create_group(b"g", 0)
    c = g.create_consumer(b"c", 0)
    assert c is not None
    g.deliver_new(c, 3, 0, False)
    s.create_group(b"h", 0)
    assert free_effort(s) == 4 + 2 * (1 + 3)  # the first group's PEL, taken for each group
    assert not freed_lazily(s)
