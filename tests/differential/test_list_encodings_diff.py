"""List encodings against a real redis-server (8.6): ``listpack`` <-> ``quicklist``.

Two kinds of checks:

* fixed sequences, byte for byte in RESP2 and RESP3, around each conversion: big elements,
  many elements, ``CONFIG SET list-max-listpack-size`` (and the quicklist keeping the fill it
  was created with), LSET / LINSERT / LMOVE / LREM / LTRIM, DUMP + RESTORE;
* seeded random command sequences compared after every command with the reference's
  quicklist shape: ``DEBUG OBJECT`` gives ``ql_nodes``, ``ql_uncompressed_size`` (the sum of
  the nodes' listpack bytes) and ``ql_listpack_max`` (the quicklist's fill), which Sluice's
  node model (``storage/quicklist.py``) must reproduce exactly, through splits, merges, plain
  nodes, DUMP/RESTORE and DEBUG RELOAD.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis

from tests.support import ProcessServer, ThreadedServer, require_redis_server

pytestmark = [pytest.mark.differential, pytest.mark.timeout(120)]

Seq = list[tuple[Any, ...]]
BIG = "b" * 9000  # over 8 KB: a large element, in a plain node of its own


def enc(key: str) -> tuple[str, ...]:
    return ("OBJECT", "ENCODING", key)


SEQUENCES: dict[str, Seq] = {
    "big_elements": [
        ("RPUSH", "l", "a", "b"), enc("l"), ("RPUSH", "l", BIG), enc("l"), ("RPOP", "l"),
        enc("l"), ("LPUSH", "l", BIG, "c"), enc("l"), ("LPOP", "l"), enc("l"), ("LPOP", "l"),
        enc("l"), ("LRANGE", "l", 0, -1),
        ("RPUSH", "m", "x" * 8185), enc("m"), ("RPUSH", "n", "x" * 8186), enc("n"),
        ("RPUSH", "s", "a", "b", "c"), ("LSET", "s", 1, BIG), enc("s"), ("LSET", "s", 1, "b"),
        enc("s"), ("LRANGE", "s", 0, -1), ("LSET", "s", 5, BIG),
        ("RPUSH", "u", "a"), ("LSET", "u", 5, BIG), enc("u"),  # converted, though it failed
        ("RPUSH", "v", "a"), ("LINSERT", "v", "BEFORE", "nope", BIG), enc("v"),
        ("RPUSH", "w", "a", "b", "c"), ("LINSERT", "w", "AFTER", "b", BIG), enc("w"),
        ("LREM", "w", 0, BIG), enc("w"), ("LRANGE", "w", 0, -1),
    ],
    "many_elements": [
        ("RPUSH", "l", *["1"] * 4093), enc("l"), ("RPUSH", "l", "1"), enc("l"),
        ("LPOP", "l", 4092), enc("l"), ("LPOP", "l"), enc("l"), ("LLEN", "l"),
        # the check adds lengths (10 each), not listpack bytes (12 each): 9607 bytes fit
        ("RPUSH", "m", *["x" * 10] * 800), enc("m"), ("RPUSH", "m", "y"), enc("m"),
        ("RPOP", "m", 460), enc("m"), ("RPOP", "m"), enc("m"),  # 340 left: half of 8 KB
        ("LPUSH", "p", *[str(i) for i in range(3000)]), enc("p"), ("LTRIM", "p", 0, 9),
        enc("p"), ("LRANGE", "p", 0, -1),
        ("RPUSH", "q", *["a", "b" * 50] * 120), enc("q"), ("LREM", "q", 0, "b" * 50), enc("q"),
        ("LLEN", "q"),
    ],
    "config_set": [
        ("CONFIG", "SET", "list-max-listpack-size", "3"), ("RPUSH", "l", "a", "b", "c"),
        enc("l"), ("RPUSH", "l", "d"), enc("l"), ("RPOP", "l"), enc("l"), ("RPOP", "l"),
        enc("l"), ("RPOP", "l"), enc("l"),
        ("CONFIG", "SET", "list-max-ziplist-size", "0"),
        ("CONFIG", "GET", "list-max-listpack-size"), ("RPUSH", "z", "a"), enc("z"),
        ("RPUSH", "z", "b"), enc("z"), ("RPOP", "z"), enc("z"),  # 0 halved: never back
        ("CONFIG", "SET", "list-max-listpack-size", "-6"),  # below -5: 64 KB
        ("CONFIG", "GET", "list-max-listpack-size"), ("RPUSH", "g", *["x" * 1000] * 60),
        enc("g"), ("RPUSH", "g", "x" * 6000), enc("g"),
        ("CONFIG", "SET", "list-max-listpack-size", "-1"), ("RPUSH", "q", *["x" * 100] * 40),
        enc("q"), ("RPUSH", "q", "x" * 100), enc("q"),
        # a quicklist keeps the fill it was created with for its nodes
        ("CONFIG", "SET", "list-max-listpack-size", "2"), ("RPUSH", "f", "a", "b", "c"),
        ("CONFIG", "SET", "list-max-listpack-size", "-2"), ("RPUSH", "f", "d", "e", "f"),
        enc("f"), ("LPOP", "f", 3), enc("f"), ("LPOP", "f"), enc("f"),
        ("CONFIG", "SET", "list-max-listpack-size", "2147483647"),
        ("CONFIG", "SET", "list-max-listpack-size", "-2147483648"),
        ("CONFIG", "GET", "list-max-ziplist-size"),
        ("CONFIG", "SET", "list-max-listpack-size", "2147483648"),
        ("CONFIG", "SET", "list-max-listpack-size", "x"),
    ],
    "lmove": [
        # dst holds 8190 listpack bytes: 8190 + 5 is over 8 KB, 8190 + 0 is not
        ("RPUSH", "d1", *["x" * 10] * 681, "x" * 9), enc("d1"),
        ("RPUSH", "d2", *["x" * 10] * 681, "x" * 9),
        ("RPUSH", "s1", "12345"), ("LMOVE", "s1", "d1", "LEFT", "RIGHT"), enc("d1"),
        # from a quicklist an integer comes back as a number, which the check does not count
        ("RPUSH", "s2", BIG, "12345"), enc("s2"), ("LMOVE", "s2", "d2", "RIGHT", "RIGHT"),
        enc("d2"), enc("s2"),
        ("RPUSH", "s3", BIG, "abcde"), ("RPUSH", "d3", *["x" * 10] * 681, "x" * 9),
        ("LMOVE", "s3", "d3", "RIGHT", "LEFT"), enc("d3"),
        ("RPUSH", "r", "a", BIG), ("LMOVE", "r", "r", "RIGHT", "LEFT"), enc("r"),
        ("RPOPLPUSH", "r", "r"), enc("r"), ("LMOVE", "r", "new", "LEFT", "LEFT"), enc("r"),
        enc("new"), ("LRANGE", "r", 0, -1),
    ],
    "push_estimate_boundary": [
        # a node takes an element while its bytes + the element's length + 8 stay within the
        # limit: 8179 + 5 + 8 = 8192 joins the node, 8179 + 6 + 8 does not
        ("CONFIG", "SET", "list-max-listpack-size", "2000"),
        ("RPUSH", "l", BIG), ("RPUSH", "l", *["x" * 10] * 681), ("RPUSH", "l", "y" * 5),
        ("LPOP", "l"), enc("l"),  # one node of 682 elements: within 2000 / 2, a listpack
        ("RPUSH", "m", BIG), ("RPUSH", "m", *["x" * 10] * 681), ("RPUSH", "m", "y" * 6),
        ("LPOP", "m"), enc("m"),  # two nodes: still a quicklist
    ],
    "inserts_with_a_count_fill": [
        ("CONFIG", "SET", "list-max-listpack-size", "4"),
        ("RPUSH", "l", "p0", "a", "p1", "b", "p2", "c", "p3", "d"), enc("l"),
        ("LINSERT", "l", "AFTER", "p1", "x"), ("LINSERT", "l", "BEFORE", "p2", "y"),
        ("LINSERT", "l", "BEFORE", "p0", "z"), ("LINSERT", "l", "AFTER", "d", "w"),
        ("LINSERT", "l", "AFTER", "p3", BIG), ("LRANGE", "l", 0, -1), enc("l"),
        ("LREM", "l", 0, BIG), ("LPOP", "l", 6), enc("l"), ("LTRIM", "l", 1, 2), enc("l"),
        ("LRANGE", "l", 0, -1),
    ],
}


@pytest.mark.parametrize("name", SEQUENCES)
def test_encoding_sequence(raw_pair: tuple[Any, Any], name: str) -> None:
    ours, theirs = raw_pair
    try:
        for argv in SEQUENCES[name]:
            assert ours.call(*argv) == theirs.call(*argv), argv[:4]
    finally:
        for c in raw_pair:
            c.call("CONFIG", "SET", "list-max-listpack-size", "-2")


def test_dump_restore_keeps_the_shape(raw_pair: tuple[Any, Any]) -> None:
    """Each server restores its own payloads; the encodings must agree (Redis saves the
    nodes as they are, so a quicklist left with one big node comes back a listpack)."""
    ours, theirs = raw_pair
    try:
        for c in raw_pair:
            c.call("RPUSH", "small", "a", "b")
            c.call("RPUSH", "big", *["x" * 10] * 800, "y")  # two nodes
            c.call("RPUSH", "one", *["x" * 10] * 800, "y")
            c.call("RPOP", "one")  # one node of 9607 bytes: more than half the limit
            c.call("RPUSH", "plain", BIG)
        for key in ("small", "big", "one", "plain"):
            assert ours.call(*enc(key)) == theirs.call(*enc(key)), key
            for c in raw_pair:
                payload = c.call("DUMP", key).split(b"\r\n", 1)[1][:-2]
                c.call("RESTORE", key + "2", 0, payload)
                c.call("CONFIG", "SET", "list-max-listpack-size", "1")
                c.call("RESTORE", key + "3", 0, payload)
                c.call("CONFIG", "SET", "list-max-listpack-size", "-2")
            for copy in (key + "2", key + "3"):
                assert ours.call(*enc(copy)) == theirs.call(*enc(copy)), copy
                assert ours.call("LRANGE", copy, 0, 2) == theirs.call("LRANGE", copy, 0, 2)
    finally:
        for c in raw_pair:
            c.call("CONFIG", "SET", "list-max-listpack-size", "-2")


# -- quicklist shapes, compared with DEBUG OBJECT -------------------------------------------


@pytest.fixture(scope="module")
def debug_reference() -> Iterator[ProcessServer]:
    require_redis_server()
    server = ProcessServer("redis", ["--enable-debug-command", "yes"]).start()
    yield server
    server.stop()


Shape = tuple[Any, ...] | None


def reference_shape(r: redis.Redis, key: str) -> Shape:
    if not r.exists(key):
        return None
    info = r.execute_command("DEBUG", "OBJECT", key).decode()
    encoding = re.search(r"encoding:(\S+)", info).group(1)  # type: ignore[union-attr]
    if encoding == "listpack":
        return ("listpack",)
    fields = dict(re.findall(r"(ql_\w+):(-?[\d.]+)", info))
    return ("quicklist", int(fields["ql_nodes"]), int(fields["ql_uncompressed_size"]),
            int(fields["ql_listpack_max"]))


def sluice_shape(server: ThreadedServer, key: str) -> Shape:
    def shape() -> Shape:
        assert server.server is not None
        value = server.server.keyspace[0].peek(key.encode())
        if value is None:
            return None
        if value.ql is None:
            return ("listpack",)
        nodes = value.ql.nodes
        return ("quicklist", len(nodes), sum(n.sz for n in nodes), value.ql.fill)

    return server.call(shape)  # type: ignore[no-any-return]


def random_commands(rnd: random.Random, steps: int) -> Iterator[list[Any]]:
    pivots = ["P0", "P1", "P2", "P3"]

    def element() -> str:
        k = rnd.random()
        if k < 0.25:
            return rnd.choice(pivots)
        if k < 0.45:
            return str(rnd.randint(-100, 10**12))
        if k < 0.80:
            return "x" * rnd.randint(0, 120)
        if k < 0.94:
            return "y" * rnd.randint(120, 3000)
        return "z" * rnd.randint(4000, 12000)

    for _ in range(steps):
        key, other = rnd.choice("ab"), rnd.choice("ab")
        r = rnd.random()
        if r < 0.03:
            yield ["CONFIG", "SET", "list-max-listpack-size", rnd.choice(["-1", "-2", "1", "3", "5"])]
        elif r < 0.25:
            yield [rnd.choice(["LPUSH", "RPUSH"]), key, *(element() for _ in range(rnd.randint(1, 10)))]
        elif r < 0.45:
            yield ["LINSERT", key, rnd.choice(["BEFORE", "AFTER"]), rnd.choice(pivots), element()]
        elif r < 0.57:
            yield ["LSET", key, rnd.randint(-12, 12), element()]
        elif r < 0.63:
            yield ["LREM", key, rnd.randint(-2, 2), rnd.choice(pivots)]
        elif r < 0.75:
            yield [rnd.choice(["LPOP", "RPOP"]), key, rnd.randint(1, 4)]
        elif r < 0.80:
            yield ["LTRIM", key, rnd.randint(0, 2), rnd.randint(-4, -1)]
        elif r < 0.90:
            yield ["LMOVE", key, other, rnd.choice(["LEFT", "RIGHT"]), rnd.choice(["LEFT", "RIGHT"])]
        elif r < 0.94:
            yield ["COPY", key, "c", "REPLACE"]
        elif r < 0.98:
            yield ["DUMP+RESTORE", key]
        else:
            yield ["DEBUG", "RELOAD"]


def run(r: redis.Redis, argv: list[Any]) -> Any:
    try:
        if argv[0] == "DUMP+RESTORE":
            payload = r.dump(argv[1])
            return payload is not None and r.restore("r", 0, payload, replace=True)
        return r.execute_command(*argv)
    except redis.ResponseError as e:
        return ("error", str(e))


@pytest.mark.parametrize("seed", range(6))
def test_quicklist_nodes_match(make_server: Callable[..., ThreadedServer],
                               debug_reference: ProcessServer, seed: int) -> None:
    ours_server = make_server("enable-debug-command yes")
    ours, theirs = ours_server.client(), debug_reference.client()
    theirs.flushall()
    theirs.config_set("list-max-listpack-size", -2)
    done: list[list[Any]] = []
    try:
        for argv in random_commands(random.Random(seed), 250):
            done.append([a if len(str(a)) < 20 else f"<{len(str(a))} bytes>" for a in argv])
            assert run(ours, argv) == run(theirs, argv), done[-1]
            for key in ("a", "b", "c", "r"):
                assert sluice_shape(ours_server, key) == reference_shape(theirs, key), \
                    (key, done[-5:])
    finally:
        theirs.config_set("list-max-listpack-size", -2)
        theirs.flushall()


def test_debug_object_reports_the_quicklist_as_redis(make_server: Callable[..., ThreadedServer],
                                                     debug_reference: ProcessServer) -> None:
    """DEBUG OBJECT's quicklist fields (nodes, average node, fill, compress depth at
    creation, uncompressed size): the same from both servers, for a list made under one
    fill and depth and read after the settings changed (Tcl sort "SORT STORE quicklist
    with the right options" relies on them)."""
    ours, theirs = make_server("enable-debug-command yes").client(), debug_reference.client()
    fields = []
    try:
        for r in (ours, theirs):
            r.delete("l", "sorted")
            r.config_set("list-max-listpack-size", -1)
            r.config_set("list-compress-depth", 12)
            r.rpush("l", *[str(i) * 50 for i in range(300)])
            r.sort("l", store="sorted", alpha=True)
            r.config_set("list-compress-depth", 0)
            r.config_set("list-max-listpack-size", -2)
            infos = [r.execute_command("DEBUG", "OBJECT", k).decode() for k in ("l", "sorted")]
            fields.append([re.findall(r"(?:encoding|ql_\w+):\S+", i) for i in infos])
    finally:
        theirs.config_set("list-compress-depth", 0)
        theirs.config_set("list-max-listpack-size", -2)
    assert fields[0] == fields[1]
    assert "ql_compressed:1" in fields[0][0] and "ql_listpack_max:-1" in fields[0][1]


def test_quicklist_packed_threshold_makes_plain_nodes_as_redis(
        make_server: Callable[..., ThreadedServer], debug_reference: ProcessServer) -> None:
    """DEBUG QUICKLIST-PACKED-THRESHOLD: past it an element gets a plain node of its own,
    whatever the fill; the nodes (DEBUG OBJECT), the values and the errors as redis-server's.
    The threshold is process-wide, so it is set back to the default (0) at the end."""
    ours, theirs = make_server("enable-debug-command yes").client(), debug_reference.client()
    script: list[list[Any]] = [
        ["DEBUG", "QUICKLIST-PACKED-THRESHOLD", "1b"],
        ["RPUSH", "lst", "9", "x" * 10, "y" * 10, "bb"], ["LINSERT", "lst", "BEFORE", "bb", "z" * 20],
        ["LSET", "lst", "0", "w" * 30], ["LRANGE", "lst", "0", "-1"], ["LPOS", "lst", "bb"],
        ["LREM", "lst", "0", "y" * 10], ["LMOVE", "lst", "dst", "LEFT", "RIGHT"],
        ["DEBUG", "QUICKLIST-PACKED-THRESHOLD", "5gb"], ["DEBUG", "QUICKLIST-PACKED-THRESHOLD", "x"],
        ["DEBUG", "QUICKLIST-PACKED-THRESHOLD", "0"], ["RPUSH", "lst", "q" * 10],
    ]
    try:
        for r in (ours, theirs):
            r.delete("lst", "dst")
            r.config_set("list-max-listpack-size", 2)  # a quicklist from the third element
        for argv in script:
            assert run(ours, argv) == run(theirs, argv), argv
            shapes = [re.findall(r"(?:encoding|ql_nodes|ql_uncompressed_size):\S+",
                                 r.execute_command("DEBUG", "OBJECT", "lst").decode())
                      if r.exists("lst") else None for r in (ours, theirs)]
            assert shapes[0] == shapes[1], argv
        assert "encoding:quicklist" in shapes[0]
    finally:
        for r in (ours, theirs):
            r.execute_command("DEBUG", "QUICKLIST-PACKED-THRESHOLD", "0")
            r.config_set("list-max-listpack-size", -2)
