"""storage/geohash.py: known values from Redis's documentation, the written-out search test
against the plain functions, and pqsort against a plain sort."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sluice.storage import geohash as G


def test_known_positions() -> None:
    """GEOADD Sicily 13.361389 38.115556 Palermo 15.087269 37.502669 Catania (redis.io)."""
    palermo = G.score_of(13.361389, 38.115556)
    catania = G.score_of(15.087269, 37.502669)
    assert palermo == 3479099956230698
    assert catania == 3479447370796909
    assert G.decode_score(float(palermo)) == (13.361389338970184, 38.1155563954963)
    assert G.geohash_string(*G.decode_score(float(palermo))) == b"sqc8b49rny0"
    d = G.distance(*G.decode_score(float(palermo)), *G.decode_score(float(catania)))
    assert G.format_distance(d) == b"166274.1516"
    assert G.format_distance(d / 1000) == b"166.2742"
    assert G.format_distance(0.0) == b"0.0000"
    assert G.format_distance(0.00004) == b"0.0000"
    assert G.format_distance(12.34565) == b"%.4f" % 12.34565  # rounding of the scaled double


def test_out_of_range_positions_do_not_encode() -> None:
    assert G.encode(181.0, 0.0) is None
    assert G.encode(0.0, 85.06) is None
    assert G.encode(180.0, 85.05112878) is not None


def test_every_score_decodes_as_c_converts_it() -> None:
    assert G._to_uint64(-5.0) == 2**64 - 5
    assert G._to_uint64(float("inf")) == 0
    assert G._to_uint64(float("-inf")) == 2**63
    assert G._to_uint64(float("nan")) == 2**63
    assert G._to_uint64(2.0**63) == 2**63
    for score in (-5.0, 0.0, 1e300, float("inf")):
        lon, lat = G.decode_score(score)
        assert G.LONG_MIN <= lon <= G.LONG_MAX and G.LAT_MIN <= lat <= G.LAT_MAX


def test_search_cells_cover_the_centre_first() -> None:
    shape = G.Shape(13.36, 38.11, 1000.0, radius=100.0)
    cells = G.search_cells(shape)
    assert len(cells) == 9
    bits, step = cells[0]
    lo, hi = G.cell_score_range(cells[0])
    assert lo <= G.score_of(13.36, 38.11) < hi
    assert 1 <= step <= 26


def test_points_in_is_decode_and_contains() -> None:
    rnd = random.Random(11)
    for _ in range(5000):
        score = (float(rnd.randrange(1 << 52)) if rnd.random() < 0.9
                 else rnd.choice([-5.0, 0.0, 2.0**60, 1e300, -1e300]))
        shape = G.Shape(rnd.uniform(-180, 180), rnd.uniform(-85, 85), rnd.choice([1.0, 1000.0]),
                        radius=rnd.uniform(0, 2e4), width=rnd.uniform(0, 4e4),
                        height=rnd.uniform(0, 4e4), is_box=rnd.random() < 0.5)
        x, y = G.decode_score(score)
        d = shape.contains(x, y)
        want = [] if d is None else [(0, x, y, d)]
        assert G.points_in([score], shape, 0) == want
        assert G.points_in([score], shape, 0) == want  # from the cache of decoded positions


@given(st.lists(st.integers(0, 6), max_size=120), st.data())
def test_pqsort_sorts_the_range_asked(values: list[int], data: st.DataObject) -> None:
    if not values:
        return
    lo = data.draw(st.integers(0, len(values) - 1))
    hi = data.draw(st.integers(lo, len(values) - 1))
    idx = list(range(len(values)))
    G.pqsort(idx, lambda a, b: (values[a] > values[b]) - (values[a] < values[b]), lo, hi)
    assert sorted(idx) == list(range(len(values)))
    assert [values[i] for i in idx[lo:hi + 1]] == sorted(values)[lo:hi + 1]


@pytest.mark.parametrize("descending", [False, True])
def test_sort_points_keeps_ties_in_order_for_a_full_sort(descending: bool) -> None:
    dists = [3.0, 1.0, 3.0, 2.0, 1.0]
    order = G.sort_points(dists, descending, 5)
    want = sorted(range(5), key=dists.__getitem__, reverse=descending)
    assert order == want
