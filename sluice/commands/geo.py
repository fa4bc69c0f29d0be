"""GEO commands on sorted sets: GEOADD, GEOPOS, GEODIST, GEOHASH, GEOSEARCH, GEOSEARCHSTORE,
GEORADIUS, GEORADIUSBYMEMBER and their _RO forms.

Mirrors Redis's geo.c (``geoaddCommand``, ``georadiusGeneric``, ``geohashCommand``,
``geoposCommand``, ``geodistCommand``); the geohash arithmetic, the cells a search reads and
the ordering of results are in ``storage/geohash.py``, the sorted set in
``storage/zsets.py``. A position is a member whose score is its 52-bit geohash.

GEOADD is ZADD with the coordinates turned into scores (Redis rewrites the command and runs
``zaddCommand``), so it also counts, wakes blocked pops and is logged as that ZADD. A search
reads the nine cells in Redis's order, each a score range of the sorted set, keeps the
points inside the shape, then sorts (ASC, DESC, or ASC implied by COUNT without ANY) exactly
as Redis does, equal distances included. The STORE forms write a sorted set of the geohash
scores (or, with STOREDIST, of the distances in the unit asked), replacing the destination,
or delete it when nothing is found; they are logged as they were sent.
"""

from __future__ import annotations

from typing import Any

from sluice.protocol import NULL_ARRAY, Double
from sluice.storage.geohash import (
    LAT_MAX,
    LAT_MIN,
    LONG_MAX,
    LONG_MIN,
    UNITS,
    Shape,
    cell_score_range,
    decode_score,
    distance,
    format_distance,
    geohash_string,
    points_in,
    score_of,
    search_cells,
    sort_points,
)
from sluice.storage.scores import ScoreRange, string2d
from sluice.storage.zsets import ZSetValue, decode_scores

from .args import Args, parse_int
from .context import Command, Context, Reply
from .errors import (
    GEO_ANY_WITHOUT_COUNT,
    GEO_BAD_MEMBER,
    GEO_COUNT_POSITIVE,
    GEO_EXACTLY_ONE_FROM,
    GEO_EXACTLY_ONE_SHAPE,
    GEO_INVALID_PAIR,
    GEO_NEED_HEIGHT,
    GEO_NEED_RADIUS,
    GEO_NEED_WIDTH,
    GEO_NEGATIVE_RADIUS,
    GEO_NEGATIVE_SIZE,
    GEO_STORE_WITH_OPTIONS,
    GEO_UNIT,
    NOT_FLOAT,
    SYNTAX,
    CommandError,
)
from .spec import ACCESS, DENYOOM, OW, READONLY, RO, RW, UPDATE, WRITE, A, KeySpec, cmd, key_at
from .zsets import get_zset, limits, store_empty, store_zset
from .zsets import zadd as zadd_handler

_ASC, _DESC = 1, 2
# georadiusGeneric's flags
_COORDS, _MEMBER, _NOSTORE, _SEARCH, _SEARCHSTORE = 1, 2, 4, 8, 16


def _double(raw: bytes, error: str = NOT_FLOAT) -> float:
    value = string2d(raw)
    if value is None:
        raise CommandError(error)
    return value


def _lonlat(lon_raw: bytes, lat_raw: bytes) -> tuple[float, float]:
    """``extractLongLatOrReply``."""
    lon = _double(lon_raw)
    lat = _double(lat_raw)
    if lon < LONG_MIN or lon > LONG_MAX or lat < LAT_MIN or lat > LAT_MAX:
        raise CommandError(GEO_INVALID_PAIR % (lon, lat))
    return lon, lat


def _unit(raw: bytes) -> float:
    """``extractUnitOrReply``: metres per unit."""
    to_meters = UNITS.get(raw.lower())
    if to_meters is None:
        raise CommandError(GEO_UNIT)
    return to_meters


def _position(z: ZSetValue, member: bytes) -> tuple[float, float] | None:
    score = z.score(member)
    return None if score is None else decode_score(score)


# -- GEOADD / GEOPOS / GEODIST / GEOHASH ---------------------------------------------------------


def geoadd(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    i = 2
    nx = xx = False
    while i < len(argv):
        opt = argv[i].lower()
        if opt == b"nx":
            nx = True
        elif opt == b"xx":
            xx = True
        elif opt != b"ch":
            break
        i += 1
    if (len(argv) - i) % 3 or (nx and xx):
        raise CommandError(SYNTAX)
    zargv = [b"zadd", *argv[1:i]]
    for j in range(i, len(argv), 3):
        lon, lat = _lonlat(argv[j], argv[j + 1])
        zargv += [b"%d" % score_of(lon, lat), argv[j + 2]]
    # Redis runs ZADD on the rewritten arguments, and propagates that ZADD.
    reply = zadd_handler(ctx, Args(zargv))
    ctx.rewrite_argv(zargv)
    return reply


def geopos(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    z = get_zset(ctx, argv[1])
    out: list[Any] = []
    for member in argv[2:]:
        xy = None if z is None else _position(z, member)
        out.append(NULL_ARRAY if xy is None else [Double(xy[0]), Double(xy[1])])
    return out


def geodist(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    to_meters = 1.0
    if len(argv) == 5:
        to_meters = _unit(argv[4])
    elif len(argv) > 5:
        raise CommandError(SYNTAX)
    z = get_zset(ctx, argv[1])
    if z is None:
        return None
    a, b = _position(z, argv[2]), _position(z, argv[3])
    if a is None or b is None:
        return None
    return format_distance(distance(a[0], a[1], b[0], b[1]) / to_meters)


def geohash(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    z = get_zset(ctx, argv[1])
    out: list[bytes | None] = []
    for member in argv[2:]:
        xy = None if z is None else _position(z, member)
        out.append(None if xy is None else geohash_string(xy[0], xy[1]))
    return out


# -- the searches ------------------------------------------------------------------------------


def _radius(raw: bytes, unit: bytes) -> tuple[float, float]:
    """``extractDistanceOrReply``: (radius, metres per unit)."""
    radius = _double(raw, GEO_NEED_RADIUS)
    if radius < 0:
        raise CommandError(GEO_NEGATIVE_RADIUS)
    return radius, _unit(unit)


def _members_in(z: ZSetValue, shape: Shape, limit: int
                ) -> tuple[list[bytes], list[float], list[float], list[float], list[float]]:
    """``membersOfAllNeighbors``: (members, longitudes, latitudes, distances, scores) of the
    points inside ``shape``, cell by cell in Redis's order; stop at ``limit`` (0: none)."""
    members: list[bytes] = []
    lons: list[float] = []
    lats: list[float] = []
    dists: list[float] = []
    scores: list[float] = []
    last = 0  # the last neighbour read (Redis never compares with the centre, index 0)
    cells = search_cells(shape)
    for n, cell in enumerate(cells):
        if cell == (0, 0):
            continue
        if last and cell == cells[last]:
            continue  # a huge radius: neighbours can be the same cell
        if limit and len(members) >= limit:
            break
        lo, hi = cell_score_range(cell)
        i, j = z.score_bounds(ScoreRange(float(lo), float(hi), False, True))
        keys = z.keys_at(i, j)
        if keys:
            cell_scores = decode_scores(keys)
            left = limit - len(members) if limit else 0
            for k, lon, lat, d in points_in(cell_scores, shape, left):
                members.append(keys[k][8:])
                lons.append(lon)
                lats.append(lat)
                dists.append(d)
                scores.append(cell_scores[k])
        last = n
    return members, lons, lats, dists, scores


def _search(ctx: Context, args: Args, src_index: int, flags: int) -> Reply:
    """``georadiusGeneric``."""
    argv = args.argv
    z = get_zset(ctx, argv[src_index])
    store: bytes | None = None
    storedist = False
    shape: Shape | None = None
    x = y = radius = width = height = 0.0
    conversion = 1.0
    if flags & _COORDS:
        base = 6
        x, y = _lonlat(argv[2], argv[3])
        radius, conversion = _radius(argv[4], argv[5])
        shape = Shape(x, y, conversion, radius=radius)
    elif flags & _MEMBER:
        base = 5
        if z is not None:
            xy = _position(z, argv[2])
            if xy is None:
                raise CommandError(GEO_BAD_MEMBER)
            x, y = xy
            radius, conversion = _radius(argv[3], argv[4])
            shape = Shape(x, y, conversion, radius=radius)
    else:
        base = 3 if flags & _SEARCHSTORE else 2
        if flags & _SEARCHSTORE:
            store = argv[1]

    withdist = withhash = withcoord = any_ = False
    frommember = fromloc = byradius = bybox = False
    sort = 0
    count = 0
    argc = len(argv)
    i = base
    while i < argc:
        arg = argv[i].lower()
        left = argc - i - 1
        if arg == b"withdist":
            withdist = True
        elif arg == b"withhash":
            withhash = True
        elif arg == b"withcoord":
            withcoord = True
        elif arg == b"any":
            any_ = True
        elif arg == b"asc":
            sort = _ASC
        elif arg == b"desc":
            sort = _DESC
        elif arg == b"count" and left >= 1:
            count = parse_int(argv[i + 1])
            if count <= 0:
                raise CommandError(GEO_COUNT_POSITIVE)
            i += 1
        elif arg in (b"store", b"storedist") and left >= 1 and not flags & (_NOSTORE | _SEARCH):
            store = argv[i + 1]
            storedist = arg == b"storedist"
            i += 1
        elif arg == b"storedist" and flags & _SEARCH and flags & _SEARCHSTORE:
            storedist = True
        elif arg == b"frommember" and left >= 1 and flags & _SEARCH and not fromloc:
            if z is not None:
                xy = _position(z, argv[i + 1])
                if xy is None:
                    raise CommandError(GEO_BAD_MEMBER)
                x, y = xy
            frommember = True
            i += 1
        elif arg == b"fromlonlat" and left >= 2 and flags & _SEARCH and not frommember:
            x, y = _lonlat(argv[i + 1], argv[i + 2])
            fromloc = True
            i += 2
        elif arg == b"byradius" and left >= 2 and flags & _SEARCH and not bybox:
            radius, conversion = _radius(argv[i + 1], argv[i + 2])
            byradius = True
            i += 2
        elif arg == b"bybox" and left >= 3 and flags & _SEARCH and not byradius:
            width = _double(argv[i + 1], GEO_NEED_WIDTH)
            height = _double(argv[i + 2], GEO_NEED_HEIGHT)
            if height < 0 or width < 0:
                raise CommandError(GEO_NEGATIVE_SIZE)
            conversion = _unit(argv[i + 3])
            bybox = True
            i += 3
        else:
            raise CommandError(SYNTAX)
        i += 1

    if store is not None and (withdist or withhash or withcoord):
        raise CommandError(GEO_STORE_WITH_OPTIONS % (
            "GEOSEARCHSTORE" if flags & _SEARCHSTORE else "STORE option in GEORADIUS"))
    if flags & _SEARCH:
        name = argv[0].decode(errors="replace")
        if not (frommember or fromloc):
            raise CommandError(GEO_EXACTLY_ONE_FROM % name)
        if not (byradius or bybox):
            raise CommandError(GEO_EXACTLY_ONE_SHAPE % name)
        shape = Shape(x, y, conversion, radius=radius, width=width, height=height, is_box=bybox)
    if any_ and not count:
        raise CommandError(GEO_ANY_WITHOUT_COUNT)

    if z is None:
        if store is not None:
            store_empty(ctx, store)
            return 0
        return []
    assert shape is not None
    if count and not sort and not any_:
        sort = _ASC  # the closest N need an order
    members, lons, lats, dists, scores = _members_in(z, shape, count if any_ else 0)
    found = len(members)
    if not found and store is None:
        return []
    returned = found if not count or found < count else count
    order = (sort_points(dists, sort == _DESC, returned) if sort
             else list(range(returned)))
    conv = shape.conversion
    if store is None:
        out: list[Any] = []
        for n in order:
            if not (withdist or withhash or withcoord):
                out.append(members[n])
                continue
            item: list[Any] = [members[n]]
            if withdist:
                item.append(format_distance(dists[n] / conv))
            if withhash:
                item.append(int(scores[n]))
            if withcoord:
                item.append([Double(lons[n]), Double(lats[n])])
            out.append(item)
        return out
    if returned:
        result = {members[n]: (dists[n] / conv if storedist else scores[n]) for n in order}
        store_zset(ctx, store, ZSetValue.from_scores(result, limits(ctx)),
                   b"geosearchstore" if flags & _SEARCH else b"georadiusstore")
        if returned > 1:
            ctx.server.dirty += returned - 1  # Redis counts one per member stored
    else:
        store_empty(ctx, store)
    return returned


def georadius(ctx: Context, args: Args) -> Reply:
    return _search(ctx, args, 1, _COORDS)


def georadius_ro(ctx: Context, args: Args) -> Reply:
    return _search(ctx, args, 1, _COORDS | _NOSTORE)


def georadiusbymember(ctx: Context, args: Args) -> Reply:
    return _search(ctx, args, 1, _MEMBER)


def georadiusbymember_ro(ctx: Context, args: Args) -> Reply:
    return _search(ctx, args, 1, _MEMBER | _NOSTORE)


def geosearch(ctx: Context, args: Args) -> Reply:
    return _search(ctx, args, 1, _SEARCH)


def geosearchstore(ctx: Context, args: Args) -> Reply:
    return _search(ctx, args, 2, _SEARCH | _SEARCHSTORE)


_RADIUS_OPTS = ("[WITHCOORD] [WITHDIST] [WITHHASH] [COUNT count [ANY]] [ASC | DESC]")
_STORE_OPTS = " [STORE key | STOREDIST key]"
_SEARCH_FROM = ("<FROMMEMBER member | FROMLONLAT longitude latitude> "
                "<BYRADIUS radius <M | KM | FT | MI> | BYBOX width height <M | KM | FT | MI>>")
_RADIUS_COMPLEXITY = ("O(N+log(M)) where N is the number of elements inside the bounding box "
                      "of the circular area delimited by center and radius and M is the number "
                      "of items inside the index.")
_SEARCH_COMPLEXITY = ("O(N+log(M)) where N is the number of elements in the grid-aligned "
                      "bounding box area around the shape provided as the filter and M is the "
                      "number of items inside the shape")
_GEO_STORES = (KeySpec(OW | UPDATE, keyword=b"store", startfrom=6),
               KeySpec(OW | UPDATE, keyword=b"storedist", startfrom=6))
_MEMBER_STORES = (KeySpec(OW | UPDATE, keyword=b"store", startfrom=5),
                  KeySpec(OW | UPDATE, keyword=b"storedist", startfrom=5))
_DEPRECATED = ("deprecated",)

COMMANDS: tuple[Command, ...] = (
    #   name                   arity flags             acl    keys                 handler
    cmd("geoadd",                -5, WRITE | DENYOOM,  A.GEO, key_at(1, RW | UPDATE), geoadd,
        "Adds one or more members to a geospatial index. The key is created if it doesn't "
        "exist.", group="geo", since="3.2.0",
        complexity="O(log(N)) for each item added, where N is the number of elements in the "
        "sorted set.",
        syntax="key [NX | XX] [CH] longitude latitude member [longitude latitude member ...]"),
    cmd("geopos",                -2, READONLY,         A.GEO, key_at(1, RO | ACCESS), geopos,
        "Returns the longitude and latitude of members from a geospatial index.",
        group="geo", since="3.2.0", complexity="O(1) for each member requested.",
        syntax="key [member [member ...]]"),
    cmd("geodist",               -4, READONLY,         A.GEO, key_at(1, RO | ACCESS), geodist,
        "Returns the distance between two members of a geospatial index.", group="geo",
        since="3.2.0", syntax="key member1 member2 [M | KM | FT | MI]"),
    cmd("geohash",               -2, READONLY,         A.GEO, key_at(1, RO | ACCESS), geohash,
        "Returns members from a geospatial index as geohash strings.", group="geo",
        since="3.2.0", complexity="O(1) for each member requested.",
        syntax="key [member [member ...]]"),
    cmd("geosearch",             -7, READONLY,         A.GEO, key_at(1, RO | ACCESS), geosearch,
        "Queries a geospatial index for members inside an area of a box or a circle.",
        group="geo", since="6.2.0", complexity=_SEARCH_COMPLEXITY,
        syntax=f"key {_SEARCH_FROM} [ASC | DESC] [COUNT count [ANY]] [WITHCOORD] [WITHDIST] "
        "[WITHHASH]"),
    cmd("geosearchstore",        -8, WRITE | DENYOOM,  A.GEO,
        (key_at(1, OW | UPDATE), key_at(2, RO | ACCESS)),                            geosearchstore,
        "Queries a geospatial index for members inside an area of a box or a circle, "
        "optionally stores the result.", group="geo", since="6.2.0",
        complexity=_SEARCH_COMPLEXITY,
        syntax=f"destination source {_SEARCH_FROM} [ASC | DESC] [COUNT count [ANY]] "
        "[STOREDIST]", reads=True),
    cmd("georadius",             -6, WRITE | DENYOOM,  A.GEO,
        (key_at(1, RO | ACCESS), *_GEO_STORES),                                      georadius,
        "Queries a geospatial index for members within a distance from a coordinate, "
        "optionally stores the result.", group="geo", since="3.2.0",
        complexity=_RADIUS_COMPLEXITY, doc_flags=_DEPRECATED,
        syntax="key longitude latitude radius <M | KM | FT | MI> " + _RADIUS_OPTS + _STORE_OPTS, reads=True),
    cmd("georadius_ro",          -6, READONLY,         A.GEO, key_at(1, RO | ACCESS), georadius_ro,
        "Returns members from a geospatial index that are within a distance from a "
        "coordinate.", group="geo", since="3.2.10", complexity=_RADIUS_COMPLEXITY,
        doc_flags=_DEPRECATED,
        syntax="key longitude latitude radius <M | KM | FT | MI> " + _RADIUS_OPTS),
    cmd("georadiusbymember",     -5, WRITE | DENYOOM,  A.GEO,
        (key_at(1, RO | ACCESS), *_MEMBER_STORES),                                   georadiusbymember,
        "Queries a geospatial index for members within a distance from a member, "
        "optionally stores the result.", group="geo", since="3.2.0",
        complexity=_RADIUS_COMPLEXITY, doc_flags=_DEPRECATED,
        syntax="key member radius <M | KM | FT | MI> " + _RADIUS_OPTS + _STORE_OPTS, reads=True),
    cmd("georadiusbymember_ro",  -5, READONLY,         A.GEO, key_at(1, RO | ACCESS),
        georadiusbymember_ro,
        "Returns members from a geospatial index that are within a distance from a member.",
        group="geo", since="3.2.10", complexity=_RADIUS_COMPLEXITY, doc_flags=_DEPRECATED,
        syntax="key member radius <M | KM | FT | MI> " + _RADIUS_OPTS),
)
