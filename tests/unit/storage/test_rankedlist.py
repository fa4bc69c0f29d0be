"""``RankedList`` against a plain sorted list: random inserts, removals, range deletions,
ranks, ranges and rendered pieces, with a small ``LOAD`` so that sublists split, merge and
vanish often, and the invariants checked after every step."""

from __future__ import annotations

import bisect
import random

import pytest

from sluice.storage.rankedlist import RankedList


class Small(RankedList):
    __slots__ = ()
    LOAD = 4


def check(r: RankedList, model: list[bytes]) -> None:
    assert len(r.lists) == len(r.pieces) == len(r.maxes)
    for keys, made, top in zip(r.lists, r.pieces, r.maxes, strict=True):
        assert keys and keys[-1] == top and (made is None or len(keys) == len(made))
        assert len(keys) <= 2 * r.LOAD
    assert list(r) == model and len(r) == len(model)
    assert r.made == sum(len(p) - p.count(None) for p in r.pieces if p is not None)
    if r.tree is not None:
        fresh = r.tree
        r.tree = None
        assert r._build() == fresh


def render(k: bytes) -> bytes:
    return b"<" + k + b">"


@pytest.mark.parametrize("seed", range(12))
def test_random_operations_match_a_sorted_list(seed: int) -> None:
    rnd = random.Random(seed)
    start = sorted({b"%05d" % rnd.randrange(100_000) for _ in range(rnd.choice([0, 5, 60]))})
    r = Small(reversed(start))
    model = list(start)
    check(r, model)
    for _ in range(600):
        op = rnd.random()
        if op < 0.45 or not model:
            k = b"%05d" % rnd.randrange(100_000)
            if k not in model:
                r.add(k)
                bisect.insort(model, k)
        elif op < 0.8:
            k = rnd.choice(model)
            r.remove(k)
            model.remove(k)
        elif op < 0.87:
            i = rnd.randrange(len(model))
            j = min(len(model), i + rnd.choice([1, 3, 9, 40]))
            r.delete(i, j)
            del model[i:j]
        else:
            with pytest.raises(ValueError):
                r.remove(b"x")
        check(r, model)
        if model:
            for _ in range(3):
                probe = b"%05d" % rnd.randrange(100_000)
                assert r.bisect_left(probe) == bisect.bisect_left(model, probe)
                assert r.bisect_right(probe) == bisect.bisect_right(model, probe)
                k = rnd.choice(model)
                assert r.bisect_left(k) == model.index(k)
                assert r.bisect_right(k) == model.index(k) + 1
                i = rnd.randrange(len(model))
                assert r[i] == model[i] and r[-1 - i] == model[-1 - i]
                j = min(len(model), i + rnd.choice([1, 2, 10, 30]))
                assert r.keys(i, j) == model[i:j]
                want = [render(x) for x in model[i:j]]
                rev = rnd.random() < 0.5
                if rnd.random() < 0.5:  # joined first: it makes the missing pieces itself
                    assert r.rendered(i, j, render) == want
                assert r.joined(i, j, rev, render, b"%d:".__mod__) == (
                    b"%d:" % (j - i) + b"".join(want[::-1] if rev else want))
                assert r.rendered(i, j, render) == want
    # a copy is independent
    dup = r.copy()
    if model:
        dup.remove(model[0])
        check(r, model)
        check(dup, model[1:])


def test_pieces_are_made_once_and_dropped_for_another_render() -> None:
    calls: list[bytes] = []

    def counting(k: bytes) -> bytes:
        calls.append(k)
        return k * 2

    r = Small([b"a", b"b", b"c", b"d", b"e", b"f", b"g"])
    assert r.pieces == [None, None]  # nothing read: no piece lists at all
    assert r.rendered(1, 6, counting) == [b"bb", b"cc", b"dd", b"ee", b"ff"]
    assert r.rendered(0, 7, counting) == [x * 2 for x in b"a b c d e f g".split()]
    assert sorted(calls) == [b"a", b"b", b"c", b"d", b"e", b"f", b"g"]
    assert r.pieces[0] is not None and r.pieces[1] is not None
    r.add(b"cc")  # a new key has no piece until it is read
    assert r.rendered(0, 8, counting)[3] == b"cccc" and calls[-1] == b"cc" and len(calls) == 8
    assert r.rendered(0, 2, render) == [b"<a>", b"<b>"]  # another render: made afresh


def test_out_of_range_index() -> None:
    r = RankedList([b"a"])
    with pytest.raises(IndexError):
        r[1]
    with pytest.raises(IndexError):
        RankedList()[0]
    assert r.joined(0, 0, False, render, b"%d:".__mod__) == b"0:"
    r.delete(0, 1)
    assert len(r) == 0 and list(r) == [] and r.bisect_left(b"a") == 0
