"""Keyspace and expiry commands against redis-server: replies compared byte for byte (RESP2 and
RESP3), except where Redis's order is its hash table's (KEYS, SCAN), compared as sets.

Expiry is made deterministic with absolute times (far future, or in the past) and TTLs far
enough away that the rounding to seconds cannot differ.
"""

from __future__ import annotations

import hiredis
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support import ProcessServer, ThreadedServer, require_redis_server, wait_until

pytestmark = pytest.mark.differential

FAR = "4102444800"  # 2100-01-01 in seconds
FAR_MS = "4102444800000"
LATER = "4102444900"

SEQUENCES: dict[str, list[list[str]]] = {
    "del-exists-unlink": [
        ["MSET", "a", "1", "b", "2", "c", "3"], ["EXISTS", "a"], ["EXISTS", "a", "a", "nope", "b"],
        ["DEL", "a", "a", "nope"], ["EXISTS", "a"], ["UNLINK", "b", "c", "b"], ["DEL", "x"],
        ["EXISTS", "b", "c"], ["DEL"], ["UNLINK"], ["EXISTS"], ["RPUSH", "l", "1"], ["DEL", "l"],
    ],
    "type": [
        ["SET", "s", "v"], ["RPUSH", "l", "x"], ["TYPE", "s"], ["TYPE", "l"], ["TYPE", "nope"],
        ["TYPE"], ["TYPE", "a", "b"],
    ],
    "rename": [
        ["RENAME", "nope", "x"], ["RENAMENX", "nope", "x"], ["SET", "a", "1"],
        ["RENAME", "a", "a"], ["RENAMENX", "a", "a"], ["RENAME", "a", "b"], ["GET", "b"],
        ["EXISTS", "a"], ["SET", "c", "3"], ["RENAMENX", "b", "c"], ["RENAMENX", "b", "d"],
        ["MGET", "b", "c", "d"], ["EXPIREAT", "d", FAR], ["RENAME", "d", "e"],
        ["EXPIRETIME", "e"], ["EXPIREAT", "c", LATER], ["RENAME", "e", "c"], ["EXPIRETIME", "c"],
        ["SET", "p", "v"], ["RENAME", "p", "c"], ["TTL", "c"], ["RPUSH", "l", "x"],
        ["RENAME", "l", "c"], ["TYPE", "c"], ["LRANGE", "c", "0", "-1"], ["RENAME", "c"],
    ],
    "copy": [
        ["COPY", "nope", "x"], ["SET", "a", "v"], ["COPY", "a", "a"], ["COPY", "a", "b"],
        ["GET", "b"], ["COPY", "a", "b"], ["SET", "a", "w"], ["COPY", "a", "b", "REPLACE"],
        ["GET", "b"], ["COPY", "a", "b", "replace", "REPLACE"], ["COPY", "a", "b", "FOO"],
        ["COPY", "a", "b", "DB"], ["COPY", "a", "b", "DB", "x"], ["COPY", "a", "b", "DB", "16"],
        ["COPY", "a", "b", "DB", "-1"], ["COPY", "a", "b", "DB", "99999999999"],
        ["COPY", "a", "a", "DB", "0"], ["COPY", "a", "a", "DB", "1"], ["SELECT", "1"],
        ["GET", "a"], ["COPY", "a", "a", "DB", "0"], ["COPY", "a", "a", "DB", "0", "REPLACE"],
        ["SELECT", "0"], ["EXPIREAT", "a", FAR], ["COPY", "a", "t"], ["EXPIRETIME", "t"],
        ["RPUSH", "l", "1", "2"], ["COPY", "l", "l2"], ["RPUSH", "l2", "3"],
        ["LRANGE", "l", "0", "-1"], ["LRANGE", "l2", "0", "-1"], ["COPY", "l", "a", "REPLACE"],
        ["TYPE", "a"], ["SELECT", "1"], ["FLUSHDB"], ["SELECT", "0"],
    ],
    "move": [
        ["MOVE", "nope", "1"], ["SET", "a", "v"], ["MOVE", "a", "0"], ["MOVE", "a", "16"],
        ["MOVE", "a", "-1"], ["MOVE", "a", "x"], ["MOVE", "a", "2147483648"], ["MOVE", "a", "1"], ["EXISTS", "a"],
        ["SELECT", "1"], ["GET", "a"], ["SET", "b", "in1"], ["SELECT", "0"], ["SET", "b", "in0"],
        ["MOVE", "b", "1"], ["GET", "b"], ["EXPIREAT", "b", FAR], ["SELECT", "1"], ["DEL", "b"],
        ["SELECT", "0"], ["MOVE", "b", "1"], ["SELECT", "1"], ["EXPIRETIME", "b"], ["FLUSHDB"],
        ["SELECT", "0"],
    ],
    "swapdb": [
        ["SWAPDB", "0"], ["SWAPDB", "x", "1"], ["SWAPDB", "0", "y"], ["SWAPDB", "0", "16"],
        ["SWAPDB", "-1", "0"], ["SWAPDB", "99999999999", "0"], ["SWAPDB", "0", "0"],
        ["SET", "a", "in0"], ["EXPIREAT", "a", FAR], ["SELECT", "2"], ["SET", "b", "in2"],
        ["SWAPDB", "0", "2"], ["GET", "a"], ["EXPIRETIME", "a"], ["GET", "b"], ["SELECT", "0"],
        ["GET", "a"], ["GET", "b"], ["DBSIZE"], ["SWAPDB", "2", "0"], ["GET", "a"],
        ["SELECT", "2"], ["FLUSHDB"], ["SELECT", "0"],
    ],
    "expire-options": [
        ["EXPIRE", "nope", "100"], ["SET", "k", "v"], ["EXPIRE", "k", "100", "FOO"],
        ["EXPIRE", "k", "100", "NX", "XX"], ["EXPIRE", "k", "100", "NX", "GT"],
        ["EXPIRE", "k", "100", "lt", "nx"], ["EXPIRE", "k", "100", "GT", "LT"],
        ["EXPIRE", "k", "abc", "NX"], ["EXPIRE", "k", "abc", "FOO"], ["EXPIRE", "k", "1.5"],
        ["EXPIREAT", "k", FAR, "XX"], ["EXPIREAT", "k", FAR, "GT"], ["EXPIREAT", "k", FAR, "LT"],
        ["EXPIRETIME", "k"], ["EXPIREAT", "k", FAR, "NX"], ["EXPIREAT", "k", LATER, "NX"],
        ["EXPIREAT", "k", LATER, "XX"], ["EXPIRETIME", "k"], ["EXPIREAT", "k", FAR, "GT"],
        ["EXPIREAT", "k", FAR, "LT"], ["EXPIRETIME", "k"], ["EXPIREAT", "k", LATER, "LT"],
        ["EXPIREAT", "k", LATER, "GT"], ["PEXPIREAT", "k", FAR_MS, "GT", "XX"],
        ["PEXPIRETIME", "k"], ["PERSIST", "k"], ["PERSIST", "k"], ["EXPIRETIME", "k"],
        ["EXPIREAT", "k", FAR, "XX"], ["EXPIREAT", "k", FAR, "LT"], ["EXPIRETIME", "k"],
        ["PEXPIRE", "k", "100000000", "nx"], ["PEXPIRE", "k", "100000000", "xx"], ["TTL", "k"],
        ["EXPIRE", "k", "-1", "GT"], ["EXISTS", "k"], ["EXPIRE", "k", "-1", "LT"], ["EXISTS", "k"],
    ],
    "expire-deletes": [
        ["SET", "a", "1"], ["EXPIRE", "a", "0"], ["EXISTS", "a"], ["SET", "a", "1"],
        ["EXPIRE", "a", "-10"], ["GET", "a"], ["SET", "a", "1"], ["PEXPIRE", "a", "-1"],
        ["TTL", "a"], ["SET", "a", "1"], ["EXPIREAT", "a", "1"], ["EXISTS", "a"],
        ["SET", "a", "1"], ["PEXPIREAT", "a", "0"], ["EXISTS", "a"], ["EXPIRE", "a", "-10"],
        ["RPUSH", "l", "x"], ["EXPIREAT", "l", "100"], ["TYPE", "l"],
    ],
    "expire-overflow": [
        ["SET", "k", "v"], ["EXPIRE", "k", "9223372036854775807"],
        ["EXPIRE", "k", "9223372036854775"], ["EXPIRE", "k", "9223372036854774"],
        ["EXPIRE", "k", "-9223372036854775808"], ["EXPIRE", "k", "-9223372036854775"],
        ["PEXPIRE", "k", "9223372036854775807"], ["EXPIREAT", "k", "9223372036854775807"],
        ["EXPIREAT", "k", "9223372036854775"], ["PEXPIREAT", "k", "9223372036854775807"],
        ["PTTL", "k"], ["PEXPIRETIME", "k"], ["EXPIRE", "k", "99999999999999999999"],
        ["EXISTS", "k"], ["SET", "j", "v"], ["PEXPIREAT", "j", "-9223372036854775808"],
        ["EXISTS", "j"],
    ],
    "ttl-family": [
        ["TTL", "nope"], ["PTTL", "nope"], ["EXPIRETIME", "nope"], ["PEXPIRETIME", "nope"],
        ["SET", "k", "v"], ["TTL", "k"], ["PTTL", "k"], ["EXPIRETIME", "k"], ["PEXPIRETIME", "k"],
        ["EXPIRE", "k", "1000"], ["TTL", "k"], ["PEXPIREAT", "k", "4102444800499"],
        ["EXPIRETIME", "k"], ["PEXPIREAT", "k", "4102444800500"], ["EXPIRETIME", "k"],
        ["PEXPIRETIME", "k"], ["PERSIST", "nope"], ["PERSIST", "k"], ["TTL", "k"], ["TTL"],
        ["PERSIST"], ["EXPIRE", "k"],
    ],
    "touch-randomkey": [
        ["TOUCH", "a"], ["RANDOMKEY"], ["SET", "a", "1"], ["TOUCH", "a", "a", "b"],
        ["RANDOMKEY"], ["RANDOMKEY", "x"], ["TOUCH"],
    ],
    "object": [
        ["OBJECT"], ["OBJECT", "FOO"], ["OBJECT", "FOO", "k"], ["OBJECT", "HELP"],
        ["OBJECT", "help"], ["OBJECT", "HELP", "x"], ["OBJECT", "ENCODING"],
        ["OBJECT", "ENCODING", "nope"], ["OBJECT", "REFCOUNT", "nope"],
        ["OBJECT", "IDLETIME", "nope"], ["OBJECT", "FREQ", "nope"], ["SET", "k", "v"],
        ["OBJECT", "FREQ", "k"], ["OBJECT", "ENCODING", "k", "x"],  # IDLETIME k: timing
        ["RPUSH", "l", "a"], ["OBJECT", "REFCOUNT", "l"],
    ],
    "scan-errors": [
        ["SCAN", "x"], ["SCAN", "1.5"], ["SCAN", "0", "COUNT", "0"],
        ["SCAN", "0", "COUNT", "-1"], ["SCAN", "0", "COUNT", "x"], ["SCAN", "0", "COUNT"],
        ["SCAN", "0", "MATCH"], ["SCAN", "0", "FOO", "bar"], ["SCAN", "0", "TYPE"],
        ["SCAN", "18446744073709551616"], ["SCAN", "0", "MATCH", "*", "COUNT", "5"],
    ],
    "keys-basics": [
        ["KEYS", "*"], ["KEYS"], ["KEYS", "a", "b"], ["SET", "", "empty"], ["KEYS", "*"],
        ["KEYS", "?"], ["KEYS", "**"], ["KEYS", "[]"],
    ],
}


@pytest.mark.parametrize("name", list(SEQUENCES))
def test_same_replies(raw_pair, name: str) -> None:  # type: ignore[no-untyped-def]
    ours, theirs = raw_pair
    for command in SEQUENCES[name]:
        assert ours.call(*command) == theirs.call(*command), command


def _parse(raw: bytes) -> object:
    reader = hiredis.Reader()
    reader.feed(raw)
    return reader.gets()


KEY_NAMES = ["a", "ab", "abc", "b", "ba", "h", "hello", "hallo", "hxllo", "hllo", "heeeello",
             "a*b", "a?b", "a[b", "a]b", "a\\b", "a-b", "x^y", "", "A", "Ab", "k:1", "k:2",
             "k:10", "foo:bar:baz", "é", "\t", "[", "]", "-"]
PATTERNS = ["*", "a*", "*b", "a*b", "?", "??", "h?llo", "h*llo", "h[ae]llo", "h[^e]llo",
            "h[a-b]llo", "h[b-a]llo", "a\\*b", "a\\?b", "a\\[b", "a[\\]]b", "a[\\-]b",
            "[a-]", "[a-]*", "[^a-c]*", "a[", "a[b", "[", "[^", "\\", "a\\", "*\\", "k:?",
            "k:*", "k:[0-9]", "k:[0-9]*", "*:*:*", "[A-Z]*", "[a-Z]*", "*[", "[]]", "[]a]",
            "[!a]*", "x^*", "x[\\^]y", "h*e*l*o", "*a*", "***", "?*", "*?", "a*?b", ""]


def test_keys_patterns_match_redis(pair) -> None:  # type: ignore[no-untyped-def]
    ours, theirs = pair
    for r in (ours, theirs):
        r.mset({k: "1" for k in KEY_NAMES})
    for pattern in PATTERNS:
        assert sorted(ours.keys(pattern)) == sorted(theirs.keys(pattern)), pattern


_glob_chars = st.sampled_from(list("ab*?[]^-\\c"))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pattern=st.text(_glob_chars, max_size=8),
       keys=st.lists(st.text(st.sampled_from(list("abc[]^-*?\\")), max_size=6), min_size=1,
                     max_size=12, unique=True))
def test_random_patterns_match_redis(pair, pattern: str, keys: list[str]) -> None:  # type: ignore[no-untyped-def]
    """Random patterns over an alphabet full of special characters: KEYS agrees with Redis."""
    ours, theirs = pair
    for r in (ours, theirs):
        r.flushdb()
        r.mset({k: "1" for k in keys})
    assert sorted(ours.keys(pattern)) == sorted(theirs.keys(pattern)), (pattern, keys)


def _full_scan(client, *options: str) -> list[bytes]:  # type: ignore[no-untyped-def]
    cursor = b"0"
    seen: list[bytes] = []
    while True:
        reply = _parse(client.call("SCAN", cursor, *options))
        cursor, batch = reply  # type: ignore[misc]
        seen.extend(batch)
        if cursor == b"0":
            return seen


def test_scan_returns_what_redis_returns(raw_pair) -> None:  # type: ignore[no-untyped-def]
    ours, theirs = raw_pair
    for c in (ours, theirs):
        c.call("MSET", *[x for i in range(300) for x in (f"key:{i}", "v")])
        c.call("RPUSH", "list:1", "x")
        c.call("RPUSH", "list:2", "x")
        c.call("SET", "gone", "v")
        c.call("PEXPIREAT", "gone", "1")  # deleted at once
    for options in ([], ["COUNT", "7"], ["MATCH", "key:1*"], ["MATCH", "list:*", "COUNT", "1000"],
                    ["TYPE", "list"], ["TYPE", "STRING", "MATCH", "*:2?"], ["TYPE", "hash"],
                    ["MATCH", "nothing*"]):
        got, want = _full_scan(ours, *options), _full_scan(theirs, *options)
        assert len(got) == len(set(got)), options  # no key twice
        assert sorted(got) == sorted(want), options


def test_scan_cursors_and_unknown_types_as_redis(raw_pair) -> None:  # type: ignore[no-untyped-def]
    """Cursors are read with ``string2ull`` (7.0's ``strtoul`` took -1 as 2^64-1 and "" as 0,
    and refused a leading space); an unknown TYPE matches nothing, with no error (8.6.3's
    error for it is still commented out in its source; no documentation names one)."""
    ours, theirs = raw_pair
    for cursor in ("-1", "", " 0", "+0", "0"):
        assert ours.call("SCAN", cursor) == theirs.call("SCAN", cursor), cursor
    ours.call("SET", "k", "v")
    theirs.call("SET", "k", "v")
    assert ours.call("SCAN", "0", "TYPE", "foo") == theirs.call("SCAN", "0", "TYPE", "foo") \
        == b"*2\r\n$1\r\n0\r\n*0\r\n"


def test_randomkey_returns_a_live_key(raw_pair) -> None:  # type: ignore[no-untyped-def]
    ours, _ = raw_pair
    ours.call("MSET", "a", "1", "b", "2", "c", "3")
    ours.call("PEXPIREAT", "c", "1")
    seen = {_parse(ours.call("RANDOMKEY")) for _ in range(60)}
    assert seen == {b"a", b"b"}


def test_lazyfreed_objects_counted_as_redis(pair) -> None:  # type: ignore[no-untyped-def]
    """INFO's lazyfreed_objects: what Redis frees in the background. UNLINK of a value whose
    free effort is over 64 allocations (a 200-member hashtable set; not a 64-member one, not
    a 64-member listpack, a short list or a string), and every key of a flush unless it is a
    SYNC one inside MULTI.
    redis-server counts from its background thread, so its count is waited for."""
    from tests.support import wait_until

    steps: list[tuple[list[list[str]], int]] = [
        ([["SADD", "big", *(f"m{i}" for i in range(200))], ["UNLINK", "big"]], 1),
        ([["SADD", "edge", *(f"m{i}" for i in range(64))], ["OBJECT", "ENCODING", "edge"],
          ["UNLINK", "edge"]], 1),
        ([["RPUSH", "l", *map(str, range(1000))], ["SET", "s", "x" * 100_000],
          ["UNLINK", "l", "s", "nope"]], 1),
        # ~125 quicklist nodes of 8 KB; a 600-field hashtable hash; a 200-member skiplist
        ([["RPUSH", "q", *("x" * 1000 for _ in range(1000))],
          ["HSET", "h", *(f"f{i // 2}" for i in range(1200))],
          ["ZADD", "z", *(f"{i // 2}" for i in range(400))], ["UNLINK", "q", "h", "z"]], 4),
        ([["MSET", "a", "1", "b", "2", "c", "3"], ["FLUSHALL"]], 7),
        ([["MSET", "a", "1", "b", "2"], ["MULTI"], ["FLUSHALL"], ["EXEC"]], 7),
        ([["MSET", "a", "1", "b", "2"], ["MULTI"], ["FLUSHDB", "ASYNC"], ["EXEC"]], 9),
        ([["SET", "a", "1"], ["FLUSHDB", "SYNC"], ["FLUSHALL"]], 10),
    ]
    for client in pair:
        client.config_resetstat()
    for commands, expected in steps:
        for client in pair:
            for argv in commands:
                client.execute_command(*argv)
            wait_until(lambda c=client, n=expected: c.info("memory")["lazyfreed_objects"] == n,
                       what=f"lazyfreed_objects {expected} after {commands[-1]}")
    ours, theirs = (c.info("memory")["lazyfreed_objects"] for c in pair)
    assert ours == theirs == 10


def test_scan_expires_only_keys_its_pattern_lets_through() -> None:
    """SCAN deletes an expired key it looks up, after the MATCH filter and before the TYPE
    filter (Redis's order): an expired key the pattern filters out stays stored."""
    require_redis_server()
    ours = ThreadedServer(["enable-debug-command yes"]).start()
    theirs = ProcessServer("redis", ["--enable-debug-command", "yes"]).start()
    try:
        counts = []
        for server in (ours, theirs):
            r = server.client()
            r.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "0")
            r.mset({f"key:{i}": i for i in range(100)})
            secs, usecs = r.time()
            # far enough ahead that the PEXPIREATs land before it on a loaded machine (one
            # in the past would delete its key at once)
            deadline = secs * 1000 + usecs // 1000 + 200
            for key in ("key:foo", "key:hash", "boo"):
                if key == "key:hash":
                    r.hset(key, "f", "v")
                else:
                    r.set(key, "v")
                r.pexpireat(key, deadline)
            # the server's own clock past the deadline (a lookup would delete the keys)
            wait_until(lambda r=r, d=deadline: (lambda t: t[0] * 1000 + t[1] // 1000)(r.time()) > d)
            found, cursor = [], 0
            while True:
                cursor, keys = r.scan(cursor, match="key*", count=10, _type="string")
                found += keys
                if cursor == 0:
                    break
            counts.append((len(found), r.dbsize()))
        assert counts[0] == counts[1] == (100, 101)  # boo is still stored
    finally:
        ours.stop()
        theirs.stop()
