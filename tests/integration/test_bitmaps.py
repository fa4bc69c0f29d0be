"""Bitmap commands through redis-py in RESP2 and RESP3, and what they leave for the AOF,
snapshots, COPY and the string commands."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import redis

from tests.support import ThreadedServer, wait_until

pytestmark = pytest.mark.timeout(60)

Factory = Callable[..., ThreadedServer]


def test_setbit_getbit_bitcount_bitpos(rr: redis.Redis) -> None:
    assert rr.setbit("k", 7, 1) == 0
    assert rr.setbit("k", 7, 1) == 1
    assert rr.getbit("k", 7) == 1 and rr.getbit("k", 6) == 0 and rr.getbit("nope", 1) == 0
    assert rr.get("k") == b"\x01"
    rr.setbit("k", 20, 1)
    assert rr.strlen("k") == 3
    assert rr.bitcount("k") == 2
    assert rr.bitcount("k", 0, 0) == 1
    assert rr.bitcount("k", 8, 23, "BIT") == 1
    assert rr.bitpos("k", 1) == 7
    assert rr.bitpos("k", 1, 1) == 20
    assert rr.bitpos("k", 0, 0, 0) == 0
    assert rr.object("encoding", "k") in (b"raw", "raw")


def test_bitop_and_bitfield(rr: redis.Redis) -> None:
    rr.set("a", b"\xf0")
    rr.set("b", b"\x3c\xff")
    assert rr.bitop("AND", "d", "a", "b") == 2
    assert rr.get("d") == b"\x30\x00"
    assert rr.bitop("ONE", "d", "a", "b") == 2
    assert rr.get("d") == b"\xcc\xff"
    assert rr.execute_command("BITOP", "DIFF", "d", "b", "a") == 2
    assert rr.get("d") == b"\x0c\xff"
    bf = rr.bitfield("f")
    assert bf.set("i8", 0, 100).incrby("i8", 0, 100).execute() == [0, -56]
    bf = rr.bitfield("f", default_overflow="FAIL")
    assert bf.incrby("u2", "#1", 7).get("u8", 0).execute() == [None, 200]
    assert rr.bitfield_ro("f", "i8", 0) == [-56]


def test_strings_being_edited_read_like_strings(r: redis.Redis) -> None:
    """A value SETBIT edits in place answers every string command like any string."""
    r.set("k", "abc", ex=1000)
    r.setbit("k", 6, 1)  # 'a' (0x61) -> 'c'
    assert r.get("k") == b"cbc" and r.ttl("k") > 0
    assert r.mget("k", "x") == [b"cbc", None]
    assert r.getrange("k", 1, 2) == b"bc"
    assert r.append("k", "d") == 4
    r.setbit("k", 7, 0)
    assert r.lcs("k", "k") == b"bbcd"
    assert r.set("k", "new", get=True) == b"bbcd"
    r.setbit("k", 0, 1)
    assert r.getdel("k") == b"\xeeew"
    r.setbit("c", 0, 0)
    assert r.copy("c", "d")
    r.setbit("d", 0, 1)
    assert r.get("c") == b"\x00" and r.get("d") == b"\x80"
    assert r.type("d") == b"string"
    r.rename("d", "e")
    assert r.get("e") == b"\x80"


def test_bit_edits_survive_aof_and_rewrite(make_server: Factory, tmp_path: Path) -> None:
    lines = [f"dir {tmp_path}", "appendonly yes", "appendfsync always"]
    s = make_server(*lines)
    r = s.client()
    r.setbit("b", 100, 1)
    r.bitfield("b").set("u8", "#0", 77).execute()
    r.bitop("NOT", "n", "b")
    before = {k: r.get(k) for k in (b"b", b"n")}
    s.stop()
    s = make_server(*lines)
    r = s.client()
    assert {k: r.get(k) for k in (b"b", b"n")} == before
    assert r.bgrewriteaof()
    wait_until(lambda: r.info("persistence")["aof_rewrites"] == 1, what="rewrite")
    s.stop()
    s = make_server(*lines)
    assert {k: s.client().get(k) for k in (b"b", b"n")} == before


def test_bit_edits_survive_a_snapshot(make_server: Factory, tmp_path: Path) -> None:
    lines = [f"dir {tmp_path}"]
    s = make_server(*lines)
    r = s.client()
    r.setbit("b", 1000, 1)
    assert r.save()
    s.stop()
    s = make_server(*lines)
    assert s.client().getbit("b", 1000) == 1
    assert s.client().strlen("b") == 126
