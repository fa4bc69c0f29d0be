"""storage/hyperloglog.py: the fast paths against the plain ones.

The sparse updates with their state (bisection over ``starts``) must leave the same bytes as
the opcode walk that mirrors Redis's ``hllSparseSet`` line by line, and the state must stay
what a fresh build from the bytes gives; the bulk register code must agree with the
one-register macros. Agreement with redis-server itself is in
tests/differential/test_hyperloglog_diff.py.
"""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sluice.storage import hyperloglog as H
from sluice.storage.hll_debug import decode_sparse, selftest
from sluice.storage.rawstring import RawString

M64 = (1 << 64) - 1


def reference_murmur(data: bytes, seed: int = H.SEED) -> int:
    """MurmurHash64A written out from its definition, one byte at a time."""
    m, r = 0xC6A4A7935BD1E995, 47
    h = (seed ^ (len(data) * m)) & M64
    whole = len(data) - len(data) % 8
    for i in range(0, whole, 8):
        k = 0
        for j in range(7, -1, -1):
            k = (k << 8) | data[i + j]
        k = (k * m) & M64
        k ^= k >> r
        k = (k * m) & M64
        h = ((h ^ k) * m) & M64
    tail = data[whole:]
    if tail:
        for j in range(len(tail) - 1, -1, -1):
            h ^= tail[j] << (8 * j)
        h = (h * m) & M64
    h ^= h >> r
    h = (h * m) & M64
    return h ^ (h >> r)


@given(st.binary(max_size=70))
def test_murmur_matches_its_definition(data: bytes) -> None:
    assert H.murmurhash64a(data) == reference_murmur(data)


def test_murmur_of_long_inputs() -> None:
    data = bytes(range(256)) * 5
    assert H.murmurhash64a(data) == reference_murmur(data)


def _exact_copy(rs: RawString) -> RawString:
    other = RawString(rs.buf)
    other.hll = None
    return other


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 16383), st.integers(1, 40)), max_size=400),
       st.sampled_from([40, 100, 300, 3000]), st.randoms(use_true_random=False))
def test_sparse_fast_path_equals_the_opcode_walk(sets: list[tuple[int, int]], sparse_max: int,
                                                  rnd: random.Random) -> None:
    # Clustered registers too, so VAL runs form, split and merge.
    base = rnd.randrange(16384 - 50)
    sets = sets + [(base + rnd.randrange(50), rnd.randint(1, 6)) for _ in range(60)]
    fast = RawString(H.create())
    slow = RawString(H.create())
    for index, count in sets:
        st_ = H.state_of(fast)
        if fast.buf[4] == H.SPARSE:
            assert st_ is not None
            a = H.sparse_set(fast, st_, index, count, sparse_max)
        else:
            a = H.set_register(fast, index, count, sparse_max)
        b = (H.sparse_set_exact(slow, index, count, sparse_max) if slow.buf[4] == H.SPARSE
             else H.set_register(slow, index, count, sparse_max))
        assert a == b
        assert fast.buf == slow.buf, decode_sparse(fast.buf)
    st_ = H.state_of(fast)
    assert st_ is not None
    rebuilt = H.state_of(_exact_copy(fast))
    assert rebuilt is not None
    assert st_.hist == rebuilt.hist
    assert st_.starts == rebuilt.starts
    regs = H.registers(fast.buf)
    assert st_.hist == H.histogram(regs)


@pytest.mark.parametrize("seed", range(40))
def test_dense_clusters_of_small_values(seed: int) -> None:
    """Registers packed close together with few distinct values: VAL runs are split and
    merged all the time, the case where the order of updates shapes the bytes."""
    rnd = random.Random(seed)
    fast, slow = RawString(H.create()), RawString(H.create())
    base = rnd.randrange(16384 - 40)
    for _ in range(300):
        index, count = base + rnd.randrange(40), rnd.randint(1, 4)
        st_ = H.state_of(fast)
        assert st_ is not None
        assert H.sparse_set(fast, st_, index, count, 3000) == H.sparse_set_exact(
            slow, index, count, 3000)
        assert fast.buf == slow.buf


def test_merge_scan_reaches_five_opcodes() -> None:
    """Merges on both sides of a split VAL, then one more to the right: Redis looks at five
    opcodes from the one before the split, merges included (a crafted value: the runs it
    starts from are mergeable)."""
    def val(v: int, n: int) -> int:
        return 0x80 | ((v - 1) << 2) | (n - 1)
    rest = 16384 - 106
    body = bytes((0x40 | (99 >> 8), 99 & 0xFF, val(2, 1), val(2, 3), val(2, 1), val(2, 1),
                  0x40 | ((rest - 1) >> 8), (rest - 1) & 0xFF))
    fast = RawString(b"HYLL\x01" + bytes(11) + body)
    slow = RawString(fast.buf)
    st_ = H.state_of(fast)
    assert st_ is not None
    assert H.sparse_set(fast, st_, 102, 3, 3000) == H.sparse_set_exact(slow, 102, 3, 3000) == 1
    assert fast.buf == slow.buf
    assert decode_sparse(fast.buf) == b"Z:100 v:2,2 v:3,1 v:2,3 Z:16278"


def test_pack_and_unpack_agree_with_the_macros() -> None:
    rnd = random.Random(7)
    values = bytes(rnd.randrange(64) for _ in range(H.REGISTERS))
    buf = bytearray(H.DENSE_SIZE)
    for i, v in enumerate(values):
        H.dense_put(buf, i, v)
    assert bytes(buf[H.HDR:]) == bytes(H.pack_dense(values))
    assert H.dense_registers(buf) == values
    assert all(H.dense_get(buf, i) == values[i] for i in range(0, H.REGISTERS, 7))


def test_max_and_histogram() -> None:
    rnd = random.Random(3)
    a = bytes(rnd.randrange(64) for _ in range(H.REGISTERS))
    b = bytes(rnd.randrange(64) for _ in range(H.REGISTERS))
    assert H.max_registers(a, b) == bytes(map(max, a, b))
    counts = Counter(a)
    assert H.histogram(a) == [counts.get(v, 0) for v in range(64)]


def test_estimate_of_known_histograms() -> None:
    empty = [H.REGISTERS] + [0] * 63
    assert H.estimate(empty) == 0
    one = [H.REGISTERS - 1, 1] + [0] * 62
    assert H.estimate(one) == 1


def test_corrupted_sparse_has_no_state_and_fails_like_redis() -> None:
    rs = RawString(H.create())
    H.add(rs, [b"a", b"b", b"c"], 3000)
    rs.buf += b"hello"  # opcodes past register 16383
    rs.hll = None
    assert H.state_of(rs) is None
    with pytest.raises(H.HllCorrupt):
        H.registers(rs.buf)
    # A register covered before the corruption is still set, as Redis's walk finds it.
    index, count = H.pattern_len(b"zzz")
    assert H.sparse_set_exact(rs, index, min(count, 32), 3000) in (0, 1)
    with pytest.raises(H.HllCorrupt):
        H.sparse_to_dense(rs)


def test_header_checks() -> None:
    assert H.is_hll(H.create())
    assert not H.is_hll(b"HYLL")
    assert not H.is_hll(b"HYLX" + bytes(14))
    assert not H.is_hll(b"HYLL\x02" + bytes(13))
    assert not H.is_hll(b"HYLL\x00" + bytes(20))  # dense of the wrong length
    assert H.is_hll(b"HYLL\x00" + bytes(H.DENSE_SIZE - 5))


def test_selftest_passes() -> None:
    assert selftest(3000, random.Random(1)) is None
