"""String commands: the same command sequences against Sluice and redis-server, replies compared
byte for byte (RESP2 and RESP3). Times are absolute or far away, so replies are deterministic.

The reference is redis-server 8.6.3 (GETRANGE's clamping changed in 8.0: see
``test_getrange_clamps_as_redis_8``).
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.differential

FAR = "4102444800"  # 2100-01-01, in seconds
FAR_MS = "4102444800000"

SEQUENCES: dict[str, list[list[str]]] = {
    "get-set-basics": [
        ["GET", "k"], ["SET", "k", "v"], ["GET", "k"], ["SET", "k", ""], ["GET", "k"],
        ["STRLEN", "k"], ["STRLEN", "nope"], ["SET", "k"], ["GET"], ["GET", "a", "b"],
    ],
    "set-options": [
        ["SET", "k", "v", "NX"], ["SET", "k", "w", "NX"], ["GET", "k"],
        ["SET", "k", "x", "XX"], ["SET", "m", "x", "XX"], ["GET", "m"],
        ["SET", "k", "y", "nx", "xx"], ["SET", "k", "y", "XX", "NX"], ["SET", "k", "y", "NX", "NX"],
        ["SET", "k", "y", "FOO"], ["SET", "k", "y", "EX"], ["SET", "k", "y", "EX", "10", "PX", "5"],
        ["SET", "k", "y", "KEEPTTL", "EX", "10"], ["SET", "k", "y", "EX", "10", "KEEPTTL"],
        ["SET", "k", "y", "EX", "10", "EX", "20"], ["SET", "k", "y", "PERSIST"],
        ["SET", "k", "y", "EXAT", FAR, "PXAT", FAR_MS], ["SET", "k", "y", "EXAT", FAR],
        ["EXPIRETIME", "k"], ["SET", "k", "z", "KEEPTTL"], ["EXPIRETIME", "k"], ["GET", "k"],
        ["SET", "k", "z"], ["TTL", "k"], ["SET", "k", "v", "PXAT", FAR_MS, "GET"],
        ["PEXPIRETIME", "k"],
    ],
    "set-expire-errors": [
        ["SET", "k", "v", "EX", "0"], ["SET", "k", "v", "EX", "-1"], ["SET", "k", "v", "PX", "0"],
        ["SET", "k", "v", "EX", "abc"], ["SET", "k", "v", "EX", "1.5"],
        ["SET", "k", "v", "EX", "9223372036854775807"],
        ["SET", "k", "v", "EX", "9223372036854775"], ["SET", "k", "v", "PX", "9223372036854775807"],
        ["SET", "k", "v", "EXAT", "0"], ["SET", "k", "v", "PXAT", "-5"],
        ["SET", "k", "v", "EX", "99999999999999999999"], ["EXISTS", "k"],
        ["SETEX", "k", "0", "v"], ["SETEX", "k", "-3", "v"], ["SETEX", "k", "x", "v"],
        ["PSETEX", "k", "0", "v"], ["PSETEX", "k", "1x", "v"], ["EXISTS", "k"],
    ],
    "set-get": [
        ["SET", "k", "v1", "GET"], ["SET", "k", "v2", "GET"], ["SET", "k", "v3", "GET", "NX"],
        ["SET", "m", "v3", "GET", "XX"], ["EXISTS", "m"], ["SET", "m", "v", "NX", "GET"],
        ["SET", "k", "v4", "get", "GET"], ["GET", "k"], ["RPUSH", "l", "a"],
        ["SET", "l", "v", "GET"], ["TYPE", "l"], ["SET", "l", "v"], ["TYPE", "l"],
        ["SET", "l", "v", "GET", "EX", "0"],
    ],
    "setnx-setex-psetex": [
        ["SETNX", "k", "1"], ["SETNX", "k", "2"], ["GET", "k"],
        ["SETEX", "k", "100000", "v"], ["TTL", "k"], ["PSETEX", "p", "100000000", "v"],
        ["GET", "p"], ["SETEX", "k", "10"], ["SETNX", "k"],
    ],
    "mget-mset-msetnx": [
        ["MSET", "a", "1", "b", "2"], ["MGET", "a", "b", "c"], ["MSET", "a"], ["MSET", "a", "1", "b"],
        ["MSETNX", "c", "3", "a", "9"], ["MGET", "a", "c"], ["MSETNX", "c", "3", "d", "4"],
        ["MSETNX", "x", "1", "x", "2"], ["GET", "x"], ["RPUSH", "l", "a"], ["MGET", "l", "a"],
        ["MSETNX", "l", "1"], ["MSET", "l", "v"], ["GET", "l"], ["MSETNX", "e"],
    ],
    "getset-getdel": [
        ["GETSET", "k", "1"], ["GETSET", "k", "2"], ["GET", "k"], ["SET", "t", "v", "EX", "100000"],
        ["GETSET", "t", "w"], ["TTL", "t"], ["GETDEL", "k"], ["GETDEL", "k"], ["EXISTS", "k"],
        ["RPUSH", "l", "a"], ["GETSET", "l", "x"], ["GETDEL", "l"], ["TYPE", "l"],
    ],
    "getex": [
        ["GETEX", "nope"], ["GETEX", "nope", "EX", "-1"], ["SET", "k", "v"], ["GETEX", "k"],
        ["TTL", "k"], ["GETEX", "k", "EX", "100000"], ["TTL", "k"], ["GETEX", "k", "PERSIST"],
        ["TTL", "k"], ["GETEX", "k", "PXAT", FAR_MS], ["PEXPIRETIME", "k"],
        ["GETEX", "k", "EXAT", FAR], ["EXPIRETIME", "k"], ["GETEX", "k", "EX", "0"],
        ["GETEX", "k", "EX", "-5"], ["GETEX", "k", "PX", "x"], ["GETEX", "k", "EX"],
        ["GETEX", "k", "NX"], ["GETEX", "k", "KEEPTTL"], ["GETEX", "k", "GET"],
        ["GETEX", "k", "EX", "10", "PERSIST"], ["GETEX", "k", "PERSIST", "EX", "10"],
        ["GETEX", "k", "EX", "10", "EX", "20"], ["TTL", "k"], ["GETEX", "k", "PERSIST", "PERSIST"],
        ["GETEX", "k", "EXAT", "1"], ["EXISTS", "k"], ["RPUSH", "l", "a"], ["GETEX", "l"],
        ["GETEX", "l", "EX", "0"],
    ],
    "append-strlen": [
        ["APPEND", "k", "Hello"], ["APPEND", "k", " World"], ["GET", "k"], ["STRLEN", "k"],
        ["APPEND", "k", ""], ["APPEND", "n", ""], ["EXISTS", "n"], ["SET", "i", "12"],
        ["APPEND", "i", "3"], ["GET", "i"], ["INCR", "i"], ["RPUSH", "l", "a"],
        ["APPEND", "l", "x"], ["STRLEN", "l"], ["SET", "t", "v", "EX", "100000"],
        ["APPEND", "t", "x"], ["TTL", "t"],
    ],
    "incr-decr": [
        ["INCR", "c"], ["INCR", "c"], ["DECR", "c"], ["INCRBY", "c", "10"], ["DECRBY", "c", "3"],
        ["INCRBY", "c", "-100"], ["DECRBY", "c", "-100"], ["GET", "c"],
        ["SET", "c", "9223372036854775806"], ["INCR", "c"], ["INCR", "c"], ["GET", "c"],
        ["SET", "c", "-9223372036854775807"], ["DECR", "c"], ["DECR", "c"],
        ["DECRBY", "c", "-9223372036854775808"], ["INCRBY", "c", "9223372036854775808"],
        ["SET", "c", "0"], ["DECRBY", "c", "-9223372036854775807"],
        ["SET", "s", "abc"], ["INCR", "s"], ["SET", "s", " 1"], ["INCR", "s"], ["SET", "s", "01"],
        ["INCR", "s"], ["SET", "s", "+1"], ["INCR", "s"], ["SET", "s", "1.0"], ["INCR", "s"],
        ["SET", "s", ""], ["INCR", "s"], ["SET", "s", "-0"], ["INCR", "s"],
        ["INCRBY", "c", "1.5"], ["INCRBY", "c", ""], ["INCRBY", "c", " 1"], ["DECRBY", "c", "x"],
        ["RPUSH", "l", "a"], ["INCR", "l"], ["SET", "t", "5", "EX", "100000"], ["INCR", "t"],
        ["TTL", "t"],
    ],
    "incrbyfloat": [
        ["INCRBYFLOAT", "f", "10.5"], ["INCRBYFLOAT", "f", "0.1"], ["INCRBYFLOAT", "f", "-5"],
        ["INCRBYFLOAT", "f", "5.0e3"], ["INCRBYFLOAT", "f", "2.0e-2"], ["GET", "f"],
        ["SET", "f", "5.0e3"], ["INCRBYFLOAT", "f", "2.0e2"], ["SET", "f", "3"],
        ["INCRBYFLOAT", "f", "1"], ["INCRBYFLOAT", "f", "abc"], ["INCRBYFLOAT", "f", "inf"],
        ["INCRBYFLOAT", "f", "-inf"], ["INCRBYFLOAT", "f", "nan"], ["INCRBYFLOAT", "f", ""],
        ["INCRBYFLOAT", "f", " 1"], ["INCRBYFLOAT", "f", "1 "], ["INCRBYFLOAT", "f", "1e"],
        ["INCRBYFLOAT", "f", "0x10"], ["INCRBYFLOAT", "f", "0x1p-2"], ["INCRBYFLOAT", "f", ".5"],
        ["INCRBYFLOAT", "f", "5."], ["INCRBYFLOAT", "f", "+3"], ["INCRBYFLOAT", "f", "1e400"],
        ["INCRBYFLOAT", "f", "1e4932"], ["INCRBYFLOAT", "f", "-1e-4960"],
        ["INCRBYFLOAT", "f", "1e-5000"], ["INCRBYFLOAT", "f", "1_0"], ["GET", "f"],
        ["SET", "g", "1e308"], ["INCRBYFLOAT", "g", "1e308"], ["INCRBYFLOAT", "g", "1.7e4932"],
        ["SET", "g", "0.1"], ["INCRBYFLOAT", "g", "0.2"], ["INCRBYFLOAT", "g", "-0.3"],
        ["INCRBYFLOAT", "g", "-1e-20"], ["INCRBYFLOAT", "g", "1e-18"],
        ["SET", "h", "-0"], ["INCRBYFLOAT", "h", "-0"], ["SET", "h", "1.5"],
        ["INCRBYFLOAT", "h", "123456789012345678"], ["INCRBYFLOAT", "h", "0.000000000000000001"],
        ["SET", "h", "abc"], ["INCRBYFLOAT", "h", "1"], ["SET", "h", "inf"],
        ["INCRBYFLOAT", "h", "1"], ["RPUSH", "l", "a"], ["INCRBYFLOAT", "l", "1"],
        ["SET", "t", "1", "EX", "100000"], ["INCRBYFLOAT", "t", "1.5"], ["TTL", "t"],
    ],
    "getrange-setrange": [
        ["SET", "k", "This is a string"], ["GETRANGE", "k", "0", "3"], ["GETRANGE", "k", "-3", "-1"],
        ["GETRANGE", "k", "0", "-1"], ["GETRANGE", "k", "10", "100"], ["GETRANGE", "k", "5", "2"],
        ["GETRANGE", "k", "100", "200"], ["GETRANGE", "nope", "0", "-1"],
        ["GETRANGE", "k", "a", "1"], ["GETRANGE", "k", "0", "b"], ["SUBSTR", "k", "0", "3"],
        ["SETRANGE", "k", "5", "XX"], ["GET", "k"], ["SETRANGE", "k", "20", "end"], ["GET", "k"],
        ["SETRANGE", "n", "3", "x"], ["GET", "n"], ["SETRANGE", "e", "5", ""], ["EXISTS", "e"],
        ["SETRANGE", "k", "0", ""], ["SETRANGE", "k", "-1", "x"], ["SETRANGE", "k", "x", "x"],
        ["SETRANGE", "k", "536870912", "x"], ["SETRANGE", "z", "536870912", ""],
        ["SETRANGE", "k", "9223372036854775807", "x"], ["SET", "i", "1234"], ["GETRANGE", "i", "1", "2"],
        ["SETRANGE", "i", "1", "9"], ["GET", "i"], ["RPUSH", "l", "a"],
        ["SETRANGE", "l", "0", "x"], ["GETRANGE", "l", "0", "1"], ["SETRANGE", "l", "0", ""],
    ],
    "encodings": [
        ["SET", "a", "123"], ["OBJECT", "ENCODING", "a"], ["SET", "a", "-9223372036854775808"],
        ["OBJECT", "ENCODING", "a"], ["SET", "a", "9223372036854775808"], ["OBJECT", "ENCODING", "a"],
        ["SET", "a", "0123"], ["OBJECT", "ENCODING", "a"], ["SET", "a", "x" * 44],
        ["OBJECT", "ENCODING", "a"], ["SET", "a", "x" * 45], ["OBJECT", "ENCODING", "a"],
        ["SET", "a", "short"], ["APPEND", "a", "x"], ["OBJECT", "ENCODING", "a"],
        ["APPEND", "b", "12"], ["OBJECT", "ENCODING", "b"], ["APPEND", "c", "hi"],
        ["OBJECT", "ENCODING", "c"], ["SETRANGE", "d", "0", "7"], ["OBJECT", "ENCODING", "d"],
        ["SET", "e", "1"], ["SETRANGE", "e", "0", "2"], ["OBJECT", "ENCODING", "e"],
        ["SET", "f", "ab"], ["SETRANGE", "f", "0", ""], ["OBJECT", "ENCODING", "f"],
        ["INCRBYFLOAT", "g", "3"], ["OBJECT", "ENCODING", "g"], ["INCR", "h"],
        ["OBJECT", "ENCODING", "h"], ["INCRBY", "h", "99999999"], ["OBJECT", "ENCODING", "h"],
        ["SET", "i", "1"], ["APPEND", "i", ""], ["OBJECT", "ENCODING", "i"],
        ["MSET", "j", "5", "k", "five"], ["OBJECT", "ENCODING", "j"], ["OBJECT", "ENCODING", "k"],
        ["SET", "r", "100"], ["OBJECT", "REFCOUNT", "r"], ["SET", "r", "10000"],
        ["OBJECT", "REFCOUNT", "r"], ["SET", "r", "-1"], ["OBJECT", "REFCOUNT", "r"],
        ["INCR", "s"], ["OBJECT", "REFCOUNT", "s"], ["SET", "t", "x"], ["OBJECT", "REFCOUNT", "t"],
        ["INCRBYFLOAT", "u", "1"], ["OBJECT", "REFCOUNT", "u"], ["GETSET", "v", "7"],
        ["OBJECT", "ENCODING", "v"], ["SET", "w", "12", "GET"], ["OBJECT", "ENCODING", "w"],
        ["SETEX", "x", "1000", "77"], ["OBJECT", "ENCODING", "x"],
    ],
    "embstr_key_length": [
        # Redis 8 embeds the key: 16 + (key + 3) + 4 + value bytes must fit in 64
        ["SET", "a", "x" * 40], ["OBJECT", "ENCODING", "a"], ["SET", "a", "x" * 41],
        ["OBJECT", "ENCODING", "a"], ["SET", "", "x" * 41], ["OBJECT", "ENCODING", ""],
        ["SET", "", "x" * 42], ["OBJECT", "ENCODING", ""], ["SET", "k" * 200, "x"],
        ["OBJECT", "ENCODING", "k" * 200], ["SET", "k" * 200, "12"],
        ["OBJECT", "ENCODING", "k" * 200], ["SET", "kkkkkkkkkk", "y" * 30],
        ["OBJECT", "ENCODING", "kkkkkkkkkk"], ["SET", "k" * 20, "y" * 30],
        ["OBJECT", "ENCODING", "k" * 20],
        ["MSET", "bb", "y" * 39, "ccc", "y" * 39], ["OBJECT", "ENCODING", "bb"],
        ["OBJECT", "ENCODING", "ccc"], ["MSETNX", "m1", "y" * 39, "m22", "y" * 39],
        ["OBJECT", "ENCODING", "m1"], ["OBJECT", "ENCODING", "m22"],
        ["GETSET", "dd", "z" * 40], ["OBJECT", "ENCODING", "dd"],
        ["SET", "ee", "z" * 39, "GET"], ["OBJECT", "ENCODING", "ee"],
        ["SETEX", "ff", "100", "z" * 39], ["OBJECT", "ENCODING", "ff"],
        ["SETEX", "fff", "100", "z" * 39], ["OBJECT", "ENCODING", "fff"],
        ["SETNX", "gg", "z" * 40], ["OBJECT", "ENCODING", "gg"],
        ["PSETEX", "hh", "100000", "z" * 39], ["OBJECT", "ENCODING", "hh"],
        ["APPEND", "ii", "z" * 39], ["OBJECT", "ENCODING", "ii"],
        ["APPEND", "iii", "z" * 39], ["OBJECT", "ENCODING", "iii"],
        ["INCRBYFLOAT", "k" * 40, "3"], ["OBJECT", "ENCODING", "k" * 40],
        ["INCRBYFLOAT", "k" * 41, "3"], ["OBJECT", "ENCODING", "k" * 41],
        ["INCRBYFLOAT", "j", "1e18"], ["OBJECT", "ENCODING", "j"],
        ["INCRBYFLOAT", "jj", "0.1234567890123456789"], ["OBJECT", "ENCODING", "jj"],
        ["SET", "y", "x" * 40], ["EXPIRE", "y", "100"], ["OBJECT", "ENCODING", "y"],
        ["PERSIST", "y"], ["GETEX", "y", "EX", "100"], ["SET", "y", "x" * 39, "KEEPTTL"],
        ["OBJECT", "ENCODING", "y"],
    ],
    "embstr_after_rename_copy_move": [
        ["SET", "m", "x" * 40], ["RENAME", "m", "mm"], ["OBJECT", "ENCODING", "mm"],
        ["RENAME", "mm", "m"], ["OBJECT", "ENCODING", "m"],  # raw stays raw
        ["SET", "lk", "x" * 40], ["RENAME", "lk", "l"], ["OBJECT", "ENCODING", "l"],
        ["SET", "s", "x" * 38], ["RENAME", "s", "s2"], ["OBJECT", "ENCODING", "s2"],
        ["RENAME", "s2", "s23"], ["OBJECT", "ENCODING", "s23"],
        ["SET", "n", "x" * 30], ["COPY", "n", "n" * 12], ["OBJECT", "ENCODING", "n" * 12],
        ["COPY", "n", "o" * 11], ["OBJECT", "ENCODING", "o" * 11],  # 11 + 30 still fit
        ["SET", "p" * 12, "x" * 30], ["COPY", "p" * 12, "q"], ["OBJECT", "ENCODING", "q"],
        ["SET", "i1", "1"], ["RENAME", "i1", "i" * 100], ["OBJECT", "ENCODING", "i" * 100],
        ["APPEND", "ap", "12"], ["APPEND", "ap", "3"], ["COPY", "ap", "ap2"],
        ["OBJECT", "ENCODING", "ap2"], ["RENAME", "ap", "a"], ["OBJECT", "ENCODING", "a"],
        ["INCRBYFLOAT", "f", "3"], ["RENAME", "f", "f" * 38], ["OBJECT", "ENCODING", "f" * 38],
        ["RENAME", "f" * 38, "f" * 39], ["OBJECT", "ENCODING", "f" * 39],
        ["SET", "mv", "x" * 39], ["MOVE", "mv", "1"], ["SELECT", "1"],
        ["OBJECT", "ENCODING", "mv"], ["COPY", "mv", "mvv", "DB", "0"], ["SELECT", "0"],
        ["OBJECT", "ENCODING", "mvv"], ["SELECT", "1"], ["FLUSHDB"], ["SELECT", "0"],
    ],
    # Redis 8.4: SET IFEQ / IFNE / IFDEQ / IFDNE, DIGEST, DELEX, MSETEX
    "conditions, digests and msetex": [
        ["SET", "k", "hello"],
        ["DIGEST", "k"],
        ["DIGEST", "nokey"],
        ["RPUSH", "l", "a"],
        ["DIGEST", "l"],
        ["SET", "n", "12345"],
        ["DIGEST", "n"],
        ["SET", "k", "v", "IFEQ", "hello"],
        ["GET", "k"],
        ["SET", "k", "w", "IFEQ", "nope"],
        ["GET", "k"],
        ["SET", "k", "w", "IFNE", "v"],
        ["SET", "k", "x", "IFNE", "x", "GET"],
        ["SET", "missing", "v", "IFEQ", "a"],
        ["SET", "missing2", "v", "IFNE", "a"],
        ["GET", "missing2"],
        ["SET", "missing3", "v", "IFDEQ", "0000000000000000"],
        ["SET", "k", "y", "IFDEQ", "123"],
        ["SET", "k", "y", "IFDEQ", "0123456789abcdef"],
        ["SET", "k", "y", "IFDNE", "0123456789ABCDEF"],
        ["GET", "k"],
        ["SET", "k", "z", "IFEQ", "y", "NX"],
        ["SET", "k", "z", "IFEQ", "y", "XX"],
        ["SET", "k", "z", "NX", "IFEQ", "y"],
        ["SET", "k", "z", "IFEQ", "y", "IFEQ", "y"],
        ["SET", "k", "z", "IFEQ", "y", "IFNE", "y"],
        ["SET", "k", "z", "IFEQ", "y", "GET", "EX", "100"],
        ["TTL", "k"],
        ["SET", "l", "z", "IFEQ", "a"],
        ["SET", "l", "z", "IFNE", "a"],
        ["SET", "k", "z", "IFEQ"],
        ["SET", "n", "1", "IFEQ", "12345"],
        ["GETEX", "k", "IFEQ", "z"],
        ["DELEX", "k"],
        ["DELEX", "k"],
        ["SET", "k", "v"],
        ["DELEX", "k", "IFEQ", "x"],
        ["DELEX", "k", "IFEQ", "v"],
        ["SET", "k", "v"],
        ["DELEX", "k", "IFNE", "v"],
        ["DELEX", "k", "IFNE", "x"],
        ["SET", "k", "v"],
        ["DELEX", "k", "IFDEQ", "12"],
        ["DELEX", "k", "bogus", "x"],
        ["DELEX", "k", "IFEQ"],
        ["DELEX", "k", "IFEQ", "a", "b"],
        ["RPUSH", "l2", "a"],
        ["DELEX", "l2", "IFEQ", "a"],
        ["DELEX", "l2"],
        ["DELEX", "nokey", "IFEQ", "a"],
        ["SET", "k", "v"],
        ["MSETEX", "2", "a", "1", "b", "2", "EX", "100"],
        ["TTL", "a"],
        ["TTL", "b"],
        ["MSETEX", "1", "a", "3", "KEEPTTL"],
        ["TTL", "a"],
        ["GET", "a"],
        ["MSETEX", "1", "a", "4"],
        ["TTL", "a"],
        ["MSETEX", "2", "a", "1", "c", "2", "NX"],
        ["MSETEX", "2", "a", "1", "c", "2", "XX"],
        ["MSETEX", "1", "c", "2", "XX"],
        ["MSETEX", "1", "c", "2", "NX", "PX", "5000"],
        ["MSETEX", "0", "a", "1"],
        ["MSETEX", "x", "a", "1"],
        ["MSETEX", "-1", "a", "1"],
        ["MSETEX", "3", "a", "1", "b", "2"],
        ["MSETEX", "1", "a", "1", "GET"],
        ["MSETEX", "1", "a", "1", "IFEQ", "a"],
        ["MSETEX", "1", "a", "1", "EX", "10", "PX", "100"],
        ["MSETEX", "1", "a", "1", "EX", "0"],
        ["MSETEX", "1", "a", "1", "EXAT", "99999999999"],
        ["MSETEX", "2", "a", "1", "b"],
        ["MSETEX", "1", "a"],
        ["MSETEX", "1", "l", "1"],
        ["GET", "l"],
    ],
    "lcs": [
        ["MSET", "a", "ohmytext", "b", "mynewtext"], ["LCS", "a", "b"], ["LCS", "a", "b", "LEN"],
        ["LCS", "a", "b", "IDX"], ["LCS", "a", "b", "IDX", "MINMATCHLEN", "4"],
        ["LCS", "a", "b", "IDX", "MINMATCHLEN", "4", "WITHMATCHLEN"],
        ["LCS", "a", "b", "IDX", "WITHMATCHLEN"], ["LCS", "a", "b", "LEN", "IDX"],
        ["LCS", "a", "b", "FOO"], ["LCS", "a", "b", "MINMATCHLEN"], ["LCS", "a", "b", "MINMATCHLEN", "x"],
        ["LCS", "a", "b", "IDX", "MINMATCHLEN", "-5"], ["LCS", "a", "nope"], ["LCS", "nope", "nope2"],
        ["LCS", "a", "nope", "IDX"], ["RPUSH", "l", "x"], ["LCS", "a", "l"], ["LCS", "l", "l", "LEN"],
        ["MSET", "c", "abcabcabc", "d", "cbacbacba"], ["LCS", "c", "d", "IDX", "WITHMATCHLEN"],
        ["LCS", "d", "c"], ["MSET", "e", "aaaa", "f", "aa"], ["LCS", "e", "f", "IDX"],
    ],
    "wrong-arity-and-type": [
        ["SETNX", "k"], ["GETSET", "k"], ["GETDEL"], ["APPEND", "k"], ["INCR"], ["INCRBY", "k"],
        ["DECRBY", "k", "1", "2"], ["INCRBYFLOAT", "k"], ["GETRANGE", "k", "0"], ["SETRANGE", "k", "0"],
        ["STRLEN"], ["MGET"], ["LCS", "a"], ["RPUSH", "l", "a"], ["GET", "l"], ["STRLEN", "l"],
        ["GETRANGE", "l", "0", "1"],
    ],
}


@pytest.mark.parametrize("name", list(SEQUENCES))
def test_same_replies(raw_pair, name: str) -> None:  # type: ignore[no-untyped-def]
    ours, theirs = raw_pair
    for command in SEQUENCES[name]:
        assert ours.call(*command) == theirs.call(*command), command


def test_restore_encodes_for_the_new_key(raw_pair) -> None:  # type: ignore[no-untyped-def]
    """RESTORE builds the string afresh under its key: int if it can, embstr if it fits with
    the key, raw otherwise (even for a value that was raw, like APPEND's)."""
    ours, theirs = raw_pair
    for c in raw_pair:
        c.call("SET", "u", "x" * 40)
        c.call("SET", "w", "x" * 45)
        c.call("APPEND", "a", "12")
        c.call("APPEND", "a", "3")
        for key, new_keys in (("u", ("uu", "v")), ("w", ("w2",)), ("a", ("a2",))):
            payload = c.call("DUMP", key).split(b"\r\n", 1)[1][:-2]
            for new_key in new_keys:
                assert c.call("RESTORE", new_key, 0, payload) == b"+OK\r\n"
    for key in ("u", "uu", "v", "w2", "a", "a2"):
        assert ours.call("OBJECT", "ENCODING", key) == theirs.call("OBJECT", "ENCODING", key), key


def test_getrange_clamps_as_redis_8(raw_pair) -> None:  # type: ignore[no-untyped-def]
    """Every pair of indexes from -13 to 13 (and far ones) over an 11-byte, a 1-byte and an
    empty string. 8.6.3 clamps a negative end to the first byte (``0 -100`` is ``H``, as
    its own string unit checks) but answers nothing for two negative indexes in the wrong
    order (``-100 -101``); 7.0 and early 8.0 differed (redis#12272)."""
    ours, theirs = raw_pair
    indexes = [*range(-13, 14), -5000, 5000]
    for value in ("Hello World", "H", ""):
        for c in (ours, theirs):
            c.call("SET", "k", value)
        for a in indexes:
            for b in indexes:
                command = ["GETRANGE", "k", str(a), str(b)]
                assert ours.call(*command) == theirs.call(*command), (value, a, b)
    assert ours.call("GETRANGE", "k", "0", "-100") == b"$0\r\n\r\n"  # the empty string
    ours.call("SET", "k", "Hello World")
    assert ours.call("GETRANGE", "k", "0", "-100") == b"$1\r\nH\r\n"


def test_size_limit_follows_proto_max_bulk_len(raw_pair) -> None:  # type: ignore[no-untyped-def]
    """SETRANGE and APPEND refuse results over proto-max-bulk-len (1 MB here, Redis's minimum)."""
    ours, theirs = raw_pair
    big = str(1024 * 1024)
    try:
        for c in (ours, theirs):
            assert c.call("CONFIG", "SET", "proto-max-bulk-len", big) == b"+OK\r\n"
        for command in (["SETRANGE", "k", str(1024 * 1024 - 1), "x"], ["STRLEN", "k"],
                        ["SETRANGE", "k", str(1024 * 1024), "x"], ["APPEND", "k", "y"],
                        ["SETRANGE", "n", str(1024 * 1024 - 1), "xy"], ["EXISTS", "n"],
                        ["SET", "a", "x" * 1000], ["APPEND", "a", "y" * (1024 * 1024 - 1000)],
                        ["APPEND", "a", "z"], ["STRLEN", "a"]):
            assert ours.call(*command) == theirs.call(*command), command[:3]
    finally:
        for c in (ours, theirs):
            c.call("CONFIG", "SET", "proto-max-bulk-len", str(512 * 1024 * 1024))
