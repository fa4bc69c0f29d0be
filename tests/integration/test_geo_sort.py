"""GEO and SORT through redis-py in RESP2 and RESP3, the AOF and snapshots."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import redis

from sluice.storage.keyspace import FakeClock
from tests.support import RecordingAof, ThreadedServer

pytestmark = pytest.mark.timeout(60)

Factory = Callable[..., ThreadedServer]
SICILY = (13.361389, 38.115556, "Palermo", 15.087269, 37.502669, "Catania")


def test_geo_commands(rr: redis.Redis) -> None:
    assert rr.geoadd("Sicily", SICILY) == 2
    assert rr.zscore("Sicily", "Palermo") == 3479099956230698
    assert rr.geodist("Sicily", "Palermo", "Catania", "km") == pytest.approx(166.2742)
    hashes = rr.geohash("Sicily", "Palermo", "nope")  # redis-py decodes them in one protocol
    assert [h.decode() if isinstance(h, bytes) else h for h in hashes] == ["sqc8b49rny0", None]
    (lon, lat), missing = rr.geopos("Sicily", "Palermo", "nope")
    assert (round(lon, 6), round(lat, 6)) == (13.361389, 38.115556) and missing is None
    found = rr.geosearch("Sicily", longitude=15, latitude=37, radius=200, unit="km",
                         withdist=True, sort="ASC")
    assert [m for m, _ in found] == [b"Catania", b"Palermo"]
    assert found[0][1] == pytest.approx(56.4413)
    assert rr.geosearch("Sicily", member="Palermo", width=400, height=400, unit="km",
                        count=1) == [b"Palermo"]
    assert rr.geosearchstore("near", "Sicily", longitude=15, latitude=37, radius=200,
                             unit="km", storedist=True) == 2
    assert rr.zscore("near", "Catania") == pytest.approx(56.4413, abs=1e-3)
    assert rr.georadius("Sicily", 15, 37, 100, unit="km") == [b"Catania"]
    assert rr.georadiusbymember("Sicily", "Palermo", 10, unit="km") == [b"Palermo"]
    with pytest.raises(redis.ResponseError, match="invalid longitude,latitude pair"):
        rr.geoadd("Sicily", (200, 100, "x"))


def test_sort_commands(rr: redis.Redis) -> None:
    rr.rpush("l", 3, 1, 2)
    rr.mset({"w_1": 30, "w_2": 20, "w_3": 10, "o_1": "one", "o_2": "two", "o_3": "three"})
    assert rr.sort("l") == [b"1", b"2", b"3"]
    assert rr.sort("l", desc=True, start=0, num=2) == [b"3", b"2"]
    assert rr.sort("l", by="w_*", get=["#", "o_*"]) == [b"3", b"three", b"2", b"two", b"1",
                                                          b"one"]
    assert rr.sort("l", by="nosort") == [b"3", b"1", b"2"]
    assert rr.sort("l", alpha=True, store="dst") == 3
    assert rr.lrange("dst", 0, -1) == [b"1", b"2", b"3"]
    assert rr.sort_ro("l", by="w_*") == [b"3", b"2", b"1"]
    rr.sadd("s", "b", "a", "c")
    assert rr.sort("s", alpha=True) == [b"a", b"b", b"c"]
    rr.zadd("z", {"x": 2, "y": 1})
    assert rr.sort("z", by="nosort") == [b"y", b"x"]
    assert rr.object("encoding", "z") == b"skiplist"  # SORT converts it, as Redis does
    rr.rpush("bad", "a")
    with pytest.raises(redis.ResponseError, match="can't be converted into double"):
        rr.sort("bad")


def test_geoadd_and_sort_store_survive_a_restart(make_server: Factory, tmp_path: Path) -> None:
    lines = [f"dir {tmp_path}", "appendonly yes", "appendfsync always"]
    s = make_server(*lines)
    r = s.client()
    r.geoadd("g", SICILY)
    r.rpush("l", 3, 1, 2)
    r.sort("l", store="sorted")
    r.geosearchstore("near", "g", longitude=15, latitude=37, radius=200, unit="km")
    before = {k: r.dump(k) for k in (b"g", b"sorted", b"near")}
    s.stop()
    s = make_server(*lines)
    assert {k: s.client().dump(k) for k in (b"g", b"sorted", b"near")} == before


def test_sort_reads_hash_fields_with_lazy_expiry(make_server: Factory) -> None:
    """BY / GET ``->field`` read a hash field as HGET does: one past its TTL is deleted on
    the way and logged as HDEL, before SORT's own STORE."""
    clock = FakeClock(1_700_000_000_000)
    server = make_server(clock=clock)
    r = server.client()
    r.rpush("l", 1, 2)
    r.hset("h_1", mapping={"w": 5, "v": "one"})
    r.hset("h_2", mapping={"w": 3, "v": "two"})
    r.hpexpire("h_1", 10, "w")
    clock.advance(11)
    log = RecordingAof()
    server.call(lambda: setattr(server.server, "aof", log))
    try:
        assert r.sort("l", by="h_*->w", get="h_*->v") == [b"one", b"two"]  # weights 0 and 3
        assert r.sort("l", by="h_*->w", get="h_*->v", store="dst") == 2
    finally:
        server.call(lambda: setattr(server.server, "aof", None))
    assert r.hkeys("h_1") == [b"v"]
    assert log.logged == [[b"HDEL", b"h_1", b"w"],
                          [b"SORT", b"l", b"BY", b"h_*->w", b"GET", b"h_*->v", b"STORE", b"dst"]]
