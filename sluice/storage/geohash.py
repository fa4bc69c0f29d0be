"""Geohashes as Redis computes them: geohash.c, geohash_helper.c and the search plan of geo.c.

A position is stored in a sorted set as a 52-bit integer score: latitude and longitude
(Web Mercator's limits: latitude within +-85.05112878) scaled to 26 bits each and
interleaved, latitude in the even bits (``geohashEncode`` / ``interleave64``). Decoding
gives the centre of the cell. A search by radius or box looks at the cell of the centre at
a precision chosen from the radius, and its eight neighbours, each cell one score range of
the sorted set (``geohashCalculateAreasByShapeWGS84``, ``scoresOfGeoHashBox``); every point
found is checked against the shape with the haversine distance.

The arithmetic is the same IEEE double arithmetic in the same order, and sin / cos / asin
/ sqrt are the C library's (Python's math module calls the same libm), so positions,
distances and the cells searched are Redis's to the last bit, and so is the order of the
results: ``sort_points`` sorts stably, as glibc's qsort (a merge sort) does, and a partial
sort with ties falls back to ``pqsort``, a port of Redis's pqsort.c, so equal distances
come out in Redis's order too.

Imports nothing of Sluice's.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

STEP_MAX = 26  # 26 * 2 = 52 bits
LAT_MIN, LAT_MAX = -85.05112878, 85.05112878
LONG_MIN, LONG_MAX = -180.0, 180.0
EARTH_RADIUS_IN_METERS = 6372797.560856
MERCATOR_MAX = 20037726.37
D_R = math.pi / 180.0
UNITS = {b"m": 1.0, b"km": 1000.0, b"ft": 0.3048, b"mi": 1609.34}
_ALPHABET = b"0123456789bcdefghjkmnpqrstuvwxyz"
_EVEN = 0x5555555555555555
_ODD = 0xAAAAAAAAAAAAAAAA

# A cell: (bits, step); step 0 with bits 0 is "no cell" (GZERO / HASHISZERO).
Cell = tuple[int, int]


def _spread(v: int) -> int:
    """The 32 bits of ``v`` moved to the even bit positions of a 64-bit word."""
    v = (v | (v << 16)) & 0x0000FFFF0000FFFF
    v = (v | (v << 8)) & 0x00FF00FF00FF00FF
    v = (v | (v << 4)) & 0x0F0F0F0F0F0F0F0F
    v = (v | (v << 2)) & 0x3333333333333333
    return (v | (v << 1)) & _EVEN


def _squash(v: int) -> int:
    """The even bits of ``v`` gathered into 32 bits (the inverse of ``_spread``)."""
    v &= _EVEN
    v = (v | (v >> 1)) & 0x3333333333333333
    v = (v | (v >> 2)) & 0x0F0F0F0F0F0F0F0F
    v = (v | (v >> 4)) & 0x00FF00FF00FF00FF
    v = (v | (v >> 8)) & 0x0000FFFF0000FFFF
    return (v | (v >> 16)) & 0x00000000FFFFFFFF


def encode(longitude: float, latitude: float, step: int = STEP_MAX,
           long_range: tuple[float, float] = (LONG_MIN, LONG_MAX),
           lat_range: tuple[float, float] = (LAT_MIN, LAT_MAX)) -> int | None:
    """``geohashEncode``: the cell bits of a position at ``step`` bits per coordinate, or
    None outside the ranges (and outside Redis's Mercator limits)."""
    if (longitude > LONG_MAX or longitude < LONG_MIN or latitude > LAT_MAX
            or latitude < LAT_MIN):
        return None
    if (latitude < lat_range[0] or latitude > lat_range[1] or longitude < long_range[0]
            or longitude > long_range[1]):
        return None
    lat_offset = (latitude - lat_range[0]) / (lat_range[1] - lat_range[0])
    long_offset = (longitude - long_range[0]) / (long_range[1] - long_range[0])
    scale = float(1 << step)
    # C converts the doubles to uint32_t: truncation (the offsets are never negative).
    return _spread(int(lat_offset * scale)) | (_spread(int(long_offset * scale)) << 1)


def score_of(longitude: float, latitude: float) -> int:
    """The 52-bit sorted-set score of a position (already checked to be in range)."""
    bits = encode(longitude, latitude)
    assert bits is not None
    return bits


def decode_area(bits: int, step: int,
                long_range: tuple[float, float] = (LONG_MIN, LONG_MAX),
                lat_range: tuple[float, float] = (LAT_MIN, LAT_MAX)
                ) -> tuple[float, float, float, float] | None:
    """``geohashDecode``: (long min, long max, lat min, lat max) of a cell; None for the
    zero cell."""
    if bits == 0 and step == 0:
        return None
    ilat = _squash(bits)
    ilon = _squash(bits >> 1)
    lat_scale = lat_range[1] - lat_range[0]
    long_scale = long_range[1] - long_range[0]
    div = float(1 << step)
    return (long_range[0] + (ilon * 1.0 / div) * long_scale,
            long_range[0] + ((ilon + 1) * 1.0 / div) * long_scale,
            lat_range[0] + (ilat * 1.0 / div) * lat_scale,
            lat_range[0] + ((ilat + 1) * 1.0 / div) * lat_scale)


def _to_uint64(d: float) -> int:
    """C's ``(uint64_t)d`` as gcc compiles it on x86-64 (cvttsd2si; out of range and NaN
    give the "integer indefinite" 0x8000000000000000, or 0 past 2**64)."""
    if d != d:
        return 1 << 63
    if d < 9223372036854775808.0:
        if d <= -9223372036854775809.0:
            return 1 << 63
        return int(d) & 0xFFFFFFFFFFFFFFFF
    if d - 9223372036854775808.0 >= 9223372036854775808.0:
        return 0
    return int(d - 9223372036854775808.0) ^ (1 << 63)


def decode_score(score: float) -> tuple[float, float]:
    """``decodeGeohash``: the (longitude, latitude) centre of the cell a score names,
    clamped to the limits. Any score decodes (as C converts it to an integer)."""
    area = decode_area(_to_uint64(score), STEP_MAX)
    assert area is not None  # a step is given: never the zero cell
    lon_min, lon_max, lat_min, lat_max = area
    x = (lon_min + lon_max) / 2
    x = min(max(x, LONG_MIN), LONG_MAX)
    y = (lat_min + lat_max) / 2
    y = min(max(y, LAT_MIN), LAT_MAX)
    return x, y


# Tables for decoding 26-bit scores 16 bits at a time: the latitude bits (even) and the
# longitude bits (odd) of each 16-bit piece, gathered.
_LAT8 = [_squash(v) for v in range(1 << 16)]
_LON8 = [_squash(v >> 1) for v in range(1 << 16)]
_LAT_SCALE = LAT_MAX - LAT_MIN
_LONG_SCALE = LONG_MAX - LONG_MIN
_DIV26 = float(1 << STEP_MAX)


# Decoded positions of recently searched scores: score -> (longitude, latitude, both in
# radians, cos(latitude)). A score always decodes to the same position, so this is only a
# cache; it is emptied when it reaches _MEMO_MAX entries (a few MB at most).
_MEMO: dict[float, tuple[float, float, float, float, float]] = {}
_MEMO_MAX = 1 << 15


def _decoded(score: float) -> tuple[float, float, float, float, float]:
    """``decode_score`` with table lookups for the bits, plus the radians and cosine the
    haversine needs: the same operations in the same order, so the same doubles."""
    b = int(score) if 0.0 <= score < 9223372036854775808.0 else _to_uint64(score)
    lat8, lon8 = _LAT8, _LON8
    ilat = (lat8[b & 0xFFFF] | lat8[(b >> 16) & 0xFFFF] << 8
            | lat8[(b >> 32) & 0xFFFF] << 16 | lat8[(b >> 48) & 0xFFFF] << 24)
    ilon = (lon8[b & 0xFFFF] | lon8[(b >> 16) & 0xFFFF] << 8
            | lon8[(b >> 32) & 0xFFFF] << 16 | lon8[(b >> 48) & 0xFFFF] << 24)
    x = ((LONG_MIN + (ilon * 1.0 / _DIV26) * _LONG_SCALE)
         + (LONG_MIN + ((ilon + 1) * 1.0 / _DIV26) * _LONG_SCALE)) / 2
    if x > LONG_MAX:
        x = LONG_MAX
    elif x < LONG_MIN:
        x = LONG_MIN
    y = ((LAT_MIN + (ilat * 1.0 / _DIV26) * _LAT_SCALE)
         + (LAT_MIN + ((ilat + 1) * 1.0 / _DIV26) * _LAT_SCALE)) / 2
    if y > LAT_MAX:
        y = LAT_MAX
    elif y < LAT_MIN:
        y = LAT_MIN
    yr = y * D_R
    found = (x, y, x * D_R, yr, math.cos(yr))
    if len(_MEMO) >= _MEMO_MAX:
        _MEMO.clear()
    _MEMO[score] = found
    return found


def points_in(scores: Sequence[float], shape: Shape, limit: int
              ) -> list[tuple[int, float, float, float]]:
    """``geoGetPointsInRange``'s test for each score of a cell: (index, longitude, latitude,
    distance in metres) of the points inside ``shape``, up to ``limit`` (0: no limit).
    ``decode_score`` then ``Shape.contains``, written out for the circle with the centre's
    terms computed once: the same operations in the same order, so the same doubles."""
    out: list[tuple[int, float, float, float]] = []
    memo_get = _MEMO.get
    sin, asin, sqrt = math.sin, math.asin, math.sqrt
    cxr, cyr = shape.x * D_R, shape.y * D_R
    cos_cy = math.cos(cyr)
    box = shape.is_box
    radius = shape.radius * shape.conversion
    # A point further north or south than the radius is out whatever its longitude (the
    # great-circle distance is at least the difference in latitude): skipped without the
    # haversine, with a margin far above the arithmetic's rounding.
    lat_reach = radius * (1 + 1e-9) / EARTH_RADIUS_IN_METERS
    for i, score in enumerate(scores):
        p = memo_get(score)
        if p is None:
            p = _decoded(score)
        x, y, xr, yr, cos_y = p
        if box:
            d = shape.contains(x, y)
            if d is None:
                continue
        else:
            if abs(yr - cyr) > lat_reach:
                continue
            v = sin((xr - cxr) / 2)
            if v == 0.0:
                d = EARTH_RADIUS_IN_METERS * abs(yr - cyr)
            else:
                u = sin((yr - cyr) / 2)
                d = 2.0 * EARTH_RADIUS_IN_METERS * asin(sqrt(u * u + cos_cy * cos_y * v * v))
            if d > radius:
                continue
        out.append((i, x, y, d))
        if limit and len(out) >= limit:
            break
    return out


def geohash_string(longitude: float, latitude: float) -> bytes:
    """GEOHASH's 11 characters: the position re-encoded with the standard latitude range
    (-90..90); the 11th character stands for bits Redis does not have, and is ``0``."""
    bits = encode(longitude, latitude, 26, (-180.0, 180.0), (-90.0, 90.0)) or 0
    out = bytearray()
    for i in range(10):
        out.append(_ALPHABET[(bits >> (52 - (i + 1) * 5)) & 0x1F])
    out.append(_ALPHABET[0])
    return bytes(out)


def _move_x(bits: int, step: int, d: int) -> int:
    if d == 0:
        return bits
    x = bits & _ODD
    y = bits & _EVEN
    zz = _EVEN >> (64 - step * 2)
    if d > 0:
        x = x + (zz + 1)
    else:
        x = (x | zz) - (zz + 1)
    x &= (_ODD >> (64 - step * 2)) & 0xFFFFFFFFFFFFFFFF
    return x | y


def _move_y(bits: int, step: int, d: int) -> int:
    if d == 0:
        return bits
    x = bits & _ODD
    y = bits & _EVEN
    zz = _ODD >> (64 - step * 2)
    if d > 0:
        y = y + (zz + 1)
    else:
        y = (y | zz) - (zz + 1)
    y &= (_EVEN >> (64 - step * 2)) & 0xFFFFFFFFFFFFFFFF
    return x | y


def _neighbour(bits: int, step: int, dx: int, dy: int) -> int:
    return _move_y(_move_x(bits, step, dx), step, dy)


def estimate_step(range_meters: float, lat: float) -> int:
    """``geohashEstimateStepsByRadius``."""
    if range_meters == 0:
        return 26
    step = 1
    while range_meters < MERCATOR_MAX:
        range_meters *= 2
        step += 1
    step -= 2
    if lat > 66 or lat < -66:
        step -= 1
        if lat > 80 or lat < -80:
            step -= 1
    return min(max(step, 1), 26)


class Shape:
    """A search area (``GeoShape``): a circle of ``radius`` or a ``width`` x ``height``
    box around (``x``, ``y``), lengths in the unit whose metres are ``conversion``."""

    __slots__ = ("x", "y", "conversion", "radius", "width", "height", "is_box")

    def __init__(self, x: float, y: float, conversion: float, radius: float = 0.0,
                 width: float = 0.0, height: float = 0.0, is_box: bool = False) -> None:
        self.x, self.y, self.conversion = x, y, conversion
        self.radius, self.width, self.height, self.is_box = radius, width, height, is_box

    def bounds(self) -> tuple[float, float, float, float]:
        """``geohashBoundingBox``: (min long, min lat, max long, max lat)."""
        height = self.conversion * (self.height / 2 if self.is_box else self.radius)
        width = self.conversion * (self.width / 2 if self.is_box else self.radius)
        lat_delta = height / EARTH_RADIUS_IN_METERS / D_R
        top = width / EARTH_RADIUS_IN_METERS / math.cos((self.y + lat_delta) * D_R) / D_R
        bottom = width / EARTH_RADIUS_IN_METERS / math.cos((self.y - lat_delta) * D_R) / D_R
        delta = bottom if self.y < 0 else top
        return self.x - delta, self.y - lat_delta, self.x + delta, self.y + lat_delta

    def contains(self, lon: float, lat: float) -> float | None:
        """``geoWithinShape`` after decoding: the distance in metres from the centre if the
        point is inside, else None."""
        if not self.is_box:
            d = distance(self.x, self.y, lon, lat)
            return None if d > self.radius * self.conversion else d
        if lat_distance(lat, self.y) > self.height * self.conversion / 2:
            return None
        if distance(lon, lat, self.x, lat) > self.width * self.conversion / 2:
            return None
        return distance(self.x, self.y, lon, lat)


def search_cells(shape: Shape) -> list[Cell]:
    """``geohashCalculateAreasByShapeWGS84`` then ``membersOfAllNeighbors``'s order: the
    centre cell, then N, S, E, W, NE, NW, SE, SW; (0, 0) for a neighbour left out."""
    min_lon, min_lat, max_lon, max_lat = shape.bounds()
    if shape.is_box:
        radius_meters = math.sqrt((shape.width / 2) * (shape.width / 2)
                                  + (shape.height / 2) * (shape.height / 2))
    else:
        radius_meters = shape.radius
    radius_meters *= shape.conversion
    step = estimate_step(radius_meters, shape.y)
    bits = encode(shape.x, shape.y, step) or 0

    def around(b: int, s: int) -> list[int]:
        return [_neighbour(b, s, dx, dy) for dx, dy in
                ((0, 1), (0, -1), (1, 0), (-1, 0), (1, 1), (-1, 1), (1, -1), (-1, -1))]

    n, s, e, w = (decode_area(c, step) for c in around(bits, step)[:4])
    assert n and s and e and w
    if step > 1 and (n[3] < max_lat or s[2] > min_lat or e[1] < max_lon or w[0] > min_lon):
        step -= 1
        bits = encode(shape.x, shape.y, step) or 0
    neighbours = around(bits, step)
    area = decode_area(bits, step)
    assert area is not None
    keep = [True] * 8  # N S E W NE NW SE SW
    if step >= 2:
        if area[2] < min_lat:
            keep[1] = keep[7] = keep[6] = False
        if area[3] > max_lat:
            keep[0] = keep[4] = keep[5] = False
        if area[0] < min_lon:
            keep[3] = keep[7] = keep[5] = False
        if area[1] > max_lon:
            keep[2] = keep[6] = keep[4] = False
    return [(bits, step)] + [(c, step) if k else (0, 0) for c, k in zip(neighbours, keep, strict=True)]


def cell_score_range(cell: Cell) -> tuple[int, int]:
    """``scoresOfGeoHashBox``: [min, max) of the scores inside a cell."""
    bits, step = cell
    shift = 52 - step * 2
    return bits << shift, (bits + 1) << shift


def lat_distance(lat1: float, lat2: float) -> float:
    """``geohashGetLatDistance``."""
    return EARTH_RADIUS_IN_METERS * abs(lat2 * D_R - lat1 * D_R)


def distance(lon1: float, lat1: float, lon2: float, lat2: float) -> float:
    """``geohashGetDistance``: the haversine distance in metres."""
    lon1r = lon1 * D_R
    lon2r = lon2 * D_R
    v = math.sin((lon2r - lon1r) / 2)
    if v == 0.0:
        return lat_distance(lat1, lat2)
    lat1r = lat1 * D_R
    lat2r = lat2 * D_R
    u = math.sin((lat2r - lat1r) / 2)
    a = u * u + math.cos(lat1r) * math.cos(lat2r) * v * v
    return 2.0 * EARTH_RADIUS_IN_METERS * math.asin(math.sqrt(a))


def format_distance(d: float) -> bytes:
    """``addReplyDoubleDistance`` (``fixedpoint_d2string(d, 4)``): four decimals, rounded
    half to even as ``llrint`` does."""
    if d == 0:
        return b"0.0000"
    v = round(d * 10000.0)
    sign = b"-" if v < 0 else b""
    whole, frac = divmod(abs(v), 10000)
    return b"%s%d.%04d" % (sign, whole, frac)


# -- ordering the results --------------------------------------------------------------------


def sort_points(dists: Sequence[float], descending: bool, count: int) -> list[int]:
    """The indexes of the first ``count`` points by distance, in Redis's order: all of them
    by glibc's qsort (a stable merge sort), the first ``count`` of more by ``pqsort``, whose
    order among equal distances is its own: with no ties any correct sort gives it."""
    n = len(dists)
    order = sorted(range(n), key=dists.__getitem__, reverse=descending)
    if count >= n or len(set(dists)) == n:
        return order[:count]
    idx = list(range(n))
    if descending:
        pqsort(idx, lambda a, b: _cmp(dists[b], dists[a]), 0, count - 1)
    else:
        pqsort(idx, lambda a, b: _cmp(dists[a], dists[b]), 0, count - 1)
    return idx[:count]


def _cmp(a: float, b: float) -> int:
    return 1 if a > b else 0 if a == b else -1


def pqsort(a: list[int], cmp: Callable[[int, int], int], lrange: int, rrange: int) -> None:
    """Redis's pqsort.c (Bentley & McIlroy's quicksort that only sorts the partitions that
    overlap [lrange, rrange]), on a list, with the same pivots and swaps."""
    _pqsort(a, 0, len(a), cmp, lrange, rrange)


def _med3(a: list[int], i: int, j: int, k: int, cmp: Callable[[int, int], int]) -> int:
    if cmp(a[i], a[j]) < 0:
        return j if cmp(a[j], a[k]) < 0 else (k if cmp(a[i], a[k]) < 0 else i)
    return j if cmp(a[j], a[k]) > 0 else (i if cmp(a[i], a[k]) < 0 else k)


def _vecswap(a: list[int], i: int, j: int, n: int) -> None:
    for t in range(n):
        a[i + t], a[j + t] = a[j + t], a[i + t]


def _pqsort(a: list[int], lo: int, n: int, cmp: Callable[[int, int], int],
            lrange: int, rrange: int) -> None:
    while True:
        if n < 7:
            for pm in range(lo + 1, lo + n):
                pl = pm
                while pl > lo and cmp(a[pl - 1], a[pl]) > 0:
                    a[pl], a[pl - 1] = a[pl - 1], a[pl]
                    pl -= 1
            return
        pm = lo + n // 2
        if n > 7:
            pl = lo
            pn = lo + n - 1
            if n > 40:
                d = n // 8
                pl = _med3(a, pl, pl + d, pl + 2 * d, cmp)
                pm = _med3(a, pm - d, pm, pm + d, cmp)
                pn = _med3(a, pn - 2 * d, pn - d, pn, cmp)
            pm = _med3(a, pl, pm, pn, cmp)
        a[lo], a[pm] = a[pm], a[lo]
        pa = pb = lo + 1
        pc = pd = lo + n - 1
        while True:
            while pb <= pc:
                r = cmp(a[pb], a[lo])
                if r > 0:
                    break
                if r == 0:
                    a[pa], a[pb] = a[pb], a[pa]
                    pa += 1
                pb += 1
            while pb <= pc:
                r = cmp(a[pc], a[lo])
                if r < 0:
                    break
                if r == 0:
                    a[pc], a[pd] = a[pd], a[pc]
                    pd -= 1
                pc -= 1
            if pb > pc:
                break
            a[pb], a[pc] = a[pc], a[pb]
            pb += 1
            pc -= 1
        pn = lo + n
        r = min(pa - lo, pb - pa)
        _vecswap(a, lo, pb - r, r)
        r = min(pd - pc, pn - pd - 1)
        _vecswap(a, pb, pn - r, r)
        r = pb - pa
        if r > 1:
            left, right = lo, lo + r - 1
            if not ((lrange < left and rrange < left) or (lrange > right and rrange > right)):
                _pqsort(a, lo, r, cmp, lrange, rrange)
        r = pd - pc
        if r <= 1:
            return
        lo, n = pn - r, r
        left, right = lo, lo + r - 1
        if (lrange < left and rrange < left) or (lrange > right and rrange > right):
            return
