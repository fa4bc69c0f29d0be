"""HyperLogLog commands through redis-py (RESP2 and RESP3), the AOF and snapshots."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import redis

from sluice.storage.aof import Manifest, parse_commands
from tests.support import ThreadedServer

pytestmark = pytest.mark.timeout(60)

Factory = Callable[..., ThreadedServer]


def test_pfadd_pfcount_pfmerge(rr: redis.Redis) -> None:
    assert rr.pfadd("h", "a", "b", "c") == 1
    assert rr.pfadd("h", "a") == 0
    assert rr.pfcount("h") == 3
    assert rr.pfadd("g", *range(100)) == 1
    assert rr.pfcount("h", "g") == 103
    assert rr.pfmerge("m", "h", "g")
    assert rr.pfcount("m") == 103
    assert rr.type("m") == b"string"
    assert rr.get("m")[:4] == b"HYLL"
    rr.set("s", "x")
    with pytest.raises(redis.ResponseError, match="WRONGTYPE Key is not a valid HyperLogLog"):
        rr.pfadd("s", "a")
    assert rr.execute_command("PFDEBUG", "ENCODING", "h") == b"sparse"
    assert rr.execute_command("PFSELFTEST") in (b"OK", True)


def test_cached_count_is_written_into_the_value(r: redis.Redis) -> None:
    r.pfadd("h", "a", "b")
    assert r.getrange("h", 15, 15) == b"\x80"  # stale
    assert r.pfcount("h") == 2
    assert r.getrange("h", 8, 15) == b"\x02" + bytes(7)
    r.setbit("h", 120, 1)  # marks the cache stale; a bit edit drops the HLL state too
    assert r.pfcount("h") == 2
    assert r.pfadd("h", "c") == 1
    assert r.pfcount("h") == 3


def _logged(dir_: Path) -> list[list[bytes]]:
    m = Manifest.parse((dir_ / "appendonlydir" / "appendonly.aof.manifest").read_text())
    out: list[list[bytes]] = []
    for info in m.incrs:
        out += [a for a, _ in parse_commands((dir_ / "appendonlydir" / info.name).read_bytes())]
    return out


def test_aof_logs_what_redis_propagates_and_replays(make_server: Factory, tmp_path: Path) -> None:
    lines = [f"dir {tmp_path}", "appendonly yes", "appendfsync always"]
    s = make_server(*lines)
    r = s.client()
    r.pfadd("h", *range(2000))
    r.pfadd("h", 1)  # nothing changes: not logged
    r.pfcount("h")  # refreshes the cache: logged
    r.pfcount("h")  # cache valid: not logged
    r.pfmerge("m", "h")
    before = {k: r.get(k) for k in (b"h", b"m")}
    s.stop()
    names = [a[0].upper() for a in _logged(tmp_path)]
    assert names.count(b"PFADD") == 1 and names.count(b"PFCOUNT") == 1
    assert names.count(b"PFMERGE") == 1
    s = make_server(*lines)
    assert {k: s.client().get(k) for k in (b"h", b"m")} == before


def test_snapshot_keeps_hlls(make_server: Factory, tmp_path: Path) -> None:
    s = make_server(f"dir {tmp_path}")
    r = s.client()
    r.pfadd("sparse", "a", "b")
    r.pfadd("dense", *range(5000))
    counts = (r.pfcount("sparse"), r.pfcount("dense"))
    assert r.save()
    s.stop()
    s = make_server(f"dir {tmp_path}")
    r = s.client()
    assert (r.pfcount("sparse"), r.pfcount("dense")) == counts
    assert r.pfadd("dense", "new-one") in (0, 1)
    assert r.execute_command("PFDEBUG", "ENCODING", "dense") == b"dense"
