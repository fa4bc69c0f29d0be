"""GEO commands against redis-server 8.6.3, reply bytes compared (RESP2 and RESP3): scores,
positions, distances and hashes to the printed digit, the order of search results (ties
included), the STORE forms, and generated searches over random points."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support import RawClient, replay_same

pytestmark = pytest.mark.differential

SICILY = ["GEOADD", "Sicily", "13.361389", "38.115556", "Palermo", "15.087269", "37.502669",
          "Catania", "12.758489", "38.788135", "edge1", "17.241510", "38.788135", "edge2"]

SEQUENCES: dict[str, list[list[str]]] = {
    "add-pos-dist-hash": [
        SICILY, ["ZRANGE", "Sicily", "0", "-1", "WITHSCORES"], ["GEOPOS", "Sicily", "Palermo",
                                                                "nope", "Catania"],
        ["GEOPOS", "nokey", "a"], ["GEOPOS", "Sicily"], ["GEODIST", "Sicily", "Palermo", "Catania"],
        ["GEODIST", "Sicily", "Palermo", "Catania", "km"], ["GEODIST", "Sicily", "Palermo",
                                                            "Catania", "MI"],
        ["GEODIST", "Sicily", "Palermo", "Catania", "ft"], ["GEODIST", "Sicily", "Palermo",
                                                            "Palermo"],
        ["GEODIST", "Sicily", "Palermo", "x"], ["GEODIST", "nokey", "a", "b"],
        ["GEODIST", "Sicily", "Palermo", "Catania", "yd"], ["GEODIST", "Sicily", "a", "b", "km", "x"],
        ["GEOHASH", "Sicily", "Palermo", "Catania", "nope"], ["GEOHASH", "nokey", "a"],
        ["GEOADD", "Sicily", "XX", "13.361389", "38.115556", "Palermo"],
        ["GEOADD", "Sicily", "NX", "1", "1", "Palermo", "2", "2", "new"],
        ["GEOADD", "Sicily", "CH", "XX", "1", "1", "Palermo"], ["GEOADD", "Sicily", "NX", "XX", "1", "1", "a"],
        ["GEOADD", "Sicily", "1", "1"], ["GEOADD", "Sicily", "181", "1", "a"],
        ["GEOADD", "Sicily", "1", "85.06", "a"], ["GEOADD", "Sicily", "x", "1", "a"],
        ["GEOADD", "Sicily", "GT", "1", "1", "a"], ["GEOADD", "Sicily", "-180", "-85.05112878", "sw",
                                                    "180", "85.05112878", "ne"],
        ["GEOPOS", "Sicily", "sw", "ne"], ["GEOHASH", "Sicily", "sw", "ne"],
        ["SET", "str", "x"], ["GEOADD", "str", "1", "1", "a"], ["GEOPOS", "str", "a"],
        ["ZADD", "z", "-5", "neg", "inf", "inf", "0", "zero", "4503599627370496", "big"],
        ["GEOPOS", "z", "neg", "inf", "zero", "big"], ["GEOHASH", "z", "neg", "zero", "big"],
        ["GEODIST", "z", "neg", "big"],
    ],
    "searches": [
        SICILY,
        ["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km", "ASC"],
        ["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km", "DESC",
         "WITHCOORD", "WITHDIST", "WITHHASH"],
        ["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYBOX", "400", "400", "km", "ASC",
         "WITHCOORD", "WITHDIST"],
        ["GEOSEARCH", "Sicily", "FROMMEMBER", "Palermo", "BYRADIUS", "100", "mi", "COUNT", "1"],
        ["GEOSEARCH", "Sicily", "FROMMEMBER", "Palermo", "BYBOX", "1000", "1000", "km",
         "COUNT", "2", "ANY"],
        ["GEOSEARCH", "Sicily", "FROMMEMBER", "Palermo", "BYRADIUS", "0", "m"],
        ["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "10000", "km"],
        ["GEOSEARCH", "Sicily", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "m"],
        ["GEOSEARCH", "nokey", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km"],
        ["GEOSEARCH", "nokey", "FROMMEMBER", "x", "BYRADIUS", "200", "km"],
        ["GEOSEARCH", "Sicily", "FROMMEMBER", "nope", "BYRADIUS", "200", "km"],
        ["GEOSEARCH", "Sicily", "BYRADIUS", "200", "km"],
        ["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37"],
        ["geosearch", "Sicily", "FROMLONLAT", "15", "37", "FROMMEMBER", "Palermo", "BYRADIUS", "1", "km"],
        ["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "1", "km", "BYBOX", "1", "1", "km"],
        ["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "-1", "km"],
        ["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYBOX", "1", "x", "km"],
        ["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "1", "km", "ANY"],
        ["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "1", "km", "COUNT", "-1"],
        ["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "1", "km", "STORE", "x"],
        ["GEOSEARCH", "Sicily", "FROMLONLAT", "200", "37", "BYRADIUS", "1", "km"],
        ["GEORADIUS", "Sicily", "15", "37", "200", "km", "WITHDIST", "ASC"],
        ["GEORADIUS", "Sicily", "15", "37", "200", "km", "COUNT", "1", "DESC", "WITHHASH"],
        ["GEORADIUS_RO", "Sicily", "15", "37", "200", "km", "WITHCOORD"],
        ["GEORADIUS_RO", "Sicily", "15", "37", "200", "km", "STORE", "x"],
        ["GEORADIUSBYMEMBER", "Sicily", "Palermo", "200", "km", "WITHDIST"],
        ["GEORADIUSBYMEMBER_RO", "Sicily", "Catania", "300", "km", "COUNT", "2", "ASC"],
        ["GEORADIUSBYMEMBER", "Sicily", "nope", "200", "km"],
        ["GEORADIUSBYMEMBER", "nokey", "nope", "200", "km"],
        ["GEORADIUS", "Sicily", "15", "37", "200", "km", "STORE", "x", "WITHDIST"],
        ["GEOSEARCHSTORE", "d", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km",
         "WITHDIST"],
    ],
    "stores": [
        SICILY,
        ["GEORADIUS", "Sicily", "15", "37", "200", "km", "STORE", "r"],
        ["ZRANGE", "r", "0", "-1", "WITHSCORES"], ["OBJECT", "ENCODING", "r"],
        ["GEORADIUS", "Sicily", "15", "37", "200", "km", "STOREDIST", "r2"],
        ["ZRANGE", "r2", "0", "-1", "WITHSCORES"],
        ["GEOSEARCHSTORE", "s", "Sicily", "FROMLONLAT", "15", "37", "BYBOX", "400", "400", "km",
         "COUNT", "1"],
        ["ZRANGE", "s", "0", "-1", "WITHSCORES"],
        ["GEOSEARCHSTORE", "s", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "mi",
         "STOREDIST"],
        ["ZRANGE", "s", "0", "-1", "WITHSCORES"],
        ["SET", "t", "x", "EX", "1000"],
        ["GEOSEARCHSTORE", "t", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km"],
        ["TTL", "t"], ["TYPE", "t"],
        ["GEOSEARCHSTORE", "t", "Sicily", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "km"],
        ["EXISTS", "t"], ["GEOSEARCHSTORE", "t", "nokey", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "km"],
        ["GEORADIUSBYMEMBER", "Sicily", "Palermo", "1", "km", "STORE", "Sicily"],
        ["ZRANGE", "Sicily", "0", "-1"],
        ["MULTI"], ["GEOADD", "m", "1", "1", "a"], ["GEOSEARCH", "m", "FROMMEMBER", "a", "BYRADIUS",
                                                     "1", "km", "WITHDIST"], ["EXEC"],
    ],
    "ties": [
        # Equal distances: COUNT makes Redis use pqsort, whose order among ties is its own.
        ["GEOADD", "t", *[x for i in range(60) for x in ("10", "10", f"m{i:02d}")]],
        ["GEOADD", "t", *[x for i in range(30) for x in ("10.001", "10.001", f"n{i:02d}")]],
        ["GEOSEARCH", "t", "FROMLONLAT", "10", "10", "BYRADIUS", "50", "km", "COUNT", "7"],
        ["GEOSEARCH", "t", "FROMLONLAT", "10", "10", "BYRADIUS", "50", "km", "COUNT", "45", "DESC"],
        ["GEOSEARCH", "t", "FROMLONLAT", "10", "10", "BYRADIUS", "50", "km", "ASC"],
        ["GEOSEARCH", "t", "FROMLONLAT", "10", "10", "BYRADIUS", "50", "km", "DESC"],
        ["GEOSEARCH", "t", "FROMLONLAT", "10.0005", "10.0005", "BYBOX", "10", "10", "km", "COUNT",
         "70", "DESC", "WITHDIST"],
    ],
}


@pytest.mark.parametrize("name", list(SEQUENCES))
def test_same_replies(raw_pair: tuple[RawClient, RawClient], name: str) -> None:
    replay_same(raw_pair, SEQUENCES[name])


def test_geoadd_is_logged_as_zadd(make_server: Any, tmp_path: Any) -> None:
    s = make_server(f"dir {tmp_path}", "appendonly yes", "appendfsync always")
    r = s.client()
    r.execute_command("GEOADD", "g", "CH", "13.361389", "38.115556", "Palermo")
    s.stop()
    data = b"".join(p.read_bytes() for p in (tmp_path / "appendonlydir").glob("*.incr.aof"))
    assert b"zadd\r\n$1\r\ng\r\n$2\r\nCH\r\n$16\r\n3479099956230698\r\n$7\r\nPalermo" in data


LONS = st.floats(-180, 180, allow_nan=False)
LATS = st.floats(-85.05112878, 85.05112878, allow_nan=False)
POINT = st.tuples(LONS, LATS).map(lambda p: (repr(p[0]), repr(p[1])))
UNITS = st.sampled_from(["m", "km", "mi", "ft"])


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.tuples(st.floats(-2, 2), st.floats(-2, 2)), min_size=1, max_size=150),
       st.tuples(LONS, st.floats(-80, 80)),
       st.lists(st.tuples(st.sampled_from(["radius", "box"]),
                          st.floats(0, 500_000), st.floats(0, 500_000), UNITS,
                          st.sampled_from([[], ["ASC"], ["DESC"], ["COUNT", "3"],
                                           ["COUNT", "2", "ANY"], ["COUNT", "5", "DESC"]])),
                min_size=1, max_size=6))
def test_generated_searches(raw_pair: tuple[RawClient, RawClient], offsets: list[Any],
                            centre: tuple[float, float], searches: list[Any]) -> None:
    """Points scattered around a centre (so cells and their edges matter), then searches
    around it; every reply the same, byte for byte."""
    ours, theirs = raw_pair
    cx, cy = centre
    args: list[str] = []
    for i, (dx, dy) in enumerate(offsets):
        lon = min(max(cx + dx, -180.0), 180.0)
        lat = min(max(cy + dy, -85.05112878), 85.05112878)
        args += [repr(lon), repr(lat), f"p{i}"]
    for c in raw_pair:
        c.call("DEL", "g")
    assert ours.call("GEOADD", "g", *args) == theirs.call("GEOADD", "g", *args)
    for kind, a, b, unit, opts in searches:
        shape = ["BYRADIUS", repr(a / 1000), unit] if kind == "radius" else [
            "BYBOX", repr(a / 1000), repr(b / 1000), unit]
        command = ["GEOSEARCH", "g", "FROMLONLAT", repr(cx), repr(cy), *shape, *opts,
                   "WITHDIST", "WITHCOORD", "WITHHASH"]
        assert ours.call(*command) == theirs.call(*command), command
