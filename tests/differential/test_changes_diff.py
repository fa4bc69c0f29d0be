"""How many changes each write counts: Sluice against redis-server, command by command.

Redis's ``server.dirty`` (INFO's ``rdb_changes_since_last_save``) decides when a ``save``
point is reached, and it is not simply one per write: a push counts each element, a pop
with a count each element popped, LTRIM each element removed (none: nothing), LMOVE and
RENAME one in all, FLUSHALL the keys it removed, XREADGROUP one per stream it propagates
anything for plus one per new consumer, XDEL each entry deleted, XACKDEL only its acks,
SADD/SREM/ZADD/ZREM each member, SMOVE two, a STORE command one.
Each case runs after the same setup on both servers; the reply and the count must match.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support import ProcessServer, RawClient, ThreadedServer

pytestmark = pytest.mark.differential

SETUP = ["RPUSH l a b c d", "SET k 10", "SET str hello", "RPUSH l2 x", "SET t v PX 100000",
         "XADD s 1-0 f v", "XADD s 2-0 f v", "XADD s 3-0 f v", "XADD s 4-0 f v",
         "XGROUP CREATE s g 0", "XREADGROUP GROUP g c COUNT 2 STREAMS s >",
         "SADD st 1 2 3", "SADD sl a b c", "ZADD zz 1 a 2 b 3 c"]

CASES = [
    # lists
    "LPUSH l x y", "RPUSH l x", "LPUSHX l x", "LPUSHX none x", "LPOP l", "LPOP l 2",
    "RPOP l 10", "LPOP none", "LSET l 0 z", "LREM l 0 a", "LREM l 0 zz", "LTRIM l 1 2",
    "LTRIM l 0 -1", "LTRIM l 5 9", "LINSERT l BEFORE b q", "LINSERT l BEFORE zz q",
    "LMOVE l l2 LEFT RIGHT", "LMOVE l l LEFT RIGHT", "RPOPLPUSH l l2", "LMPOP 1 l LEFT COUNT 3",
    "BLPOP l 0", "BLMOVE l l2 LEFT LEFT 0", "BLMPOP 0 2 none l RIGHT COUNT 2",
    # strings
    "SET k v", "SET k v NX", "SET k v XX", "SET k v GET", "SETNX k v", "SETNX n v",
    "MSET a 1 b 2", "MSETNX a 1 b 2", "MSETNX k 1 z 2", "INCR k", "INCRBY k 5", "DECR k",
    "INCRBYFLOAT k 1.5", "APPEND str x", "APPEND new x", "SETRANGE str 0 x", "GETDEL str",
    "GETDEL none", "GETEX str PX 1000", "GETEX str", "GETEX str PERSIST", "GETSET str x",
    "DELEX k IFEQ 10", "DELEX k IFEQ 11", "SET k 11 IFEQ 10", "MSETEX 2 a 1 b 2 EX 10",
    "PSETEX p 100 v", "SETEX p 100 v",
    # keyspace
    "DEL k str none", "UNLINK k none", "EXPIRE k 100", "EXPIRE none 100", "EXPIRE k -1",
    "PEXPIRE t 100 GT", "PERSIST t", "PERSIST k", "RENAME k k2", "RENAMENX k str",
    "COPY k k3", "COPY k str", "COPY k str REPLACE", "MOVE k 1", "FLUSHDB", "FLUSHALL",
    "SWAPDB 0 1", "TOUCH k",
    # streams
    "XREADGROUP GROUP g c STREAMS s >", "XREADGROUP GROUP g c COUNT 1 STREAMS s >",
    "XREADGROUP GROUP g new STREAMS s >", "XREADGROUP GROUP g c CLAIM 0 STREAMS s >",
    "XREADGROUP GROUP g d CLAIM 0 STREAMS s >", "XREADGROUP GROUP g c NOACK STREAMS s >",
    "XREADGROUP GROUP g d NOACK STREAMS s >", "XREADGROUP GROUP g c STREAMS s 0",
    "XCLAIM s g d 0 1-0", "XCLAIM s g c 0 1-0", "XCLAIM s g d 0 1-0 2-0 JUSTID",
    "XCLAIM s g d 0 1-0 LASTID 4-0", "XAUTOCLAIM s g d 0 0", "XAUTOCLAIM s g c 0 0",
    "XACKDEL s g IDS 2 1-0 2-0", "XACKDEL s g ACKED IDS 1 1-0", "XACKDEL s g IDS 1 4-0",
    "XDELEX s IDS 2 1-0 4-0", "XDELEX s ACKED IDS 2 1-0 4-0", "XACK s g 1-0 2-0 9-0",
    "XDEL s 1-0 2-0", "XTRIM s MAXLEN 1", "XTRIM s MAXLEN 10", "XADD s MAXLEN 2 5-0 f v",
    "XGROUP CREATECONSUMER s g zz", "XGROUP DELCONSUMER s g c", "XGROUP SETID s g 0",
    "XSETID s 9-0", "XGROUP CREATE new g $ MKSTREAM",
    # sets
    "SADD st 4 5 1", "SADD st 1", "SADD news x", "SREM st 1 9", "SREM st 9", "SREM st 1 2 3",
    "SMOVE st sl 1", "SMOVE st sl 9", "SMOVE st st 1", "SMOVE st newset 2", "SMOVE sl st a",
    "SPOP st", "SPOP st 2", "SPOP st 10", "SPOP st 0", "SPOP none 2",
    "SINTERSTORE d st sl", "SINTERSTORE d none st", "SINTERSTORE st none st",
    "SUNIONSTORE d st sl", "SDIFFSTORE d st st", "SDIFFSTORE st st st", "SRANDMEMBER st 2",
    "SINTERCARD 2 st sl",
    # sorted sets
    "ZADD zz 1 a 5 d", "ZADD zz CH 9 a 9 b", "ZADD zz NX 9 a", "ZADD zz INCR 1 a",
    "ZINCRBY zz 0 a", "ZADD zz 1 a", "ZADD none XX 1 a", "ZREM zz a x", "ZREM zz a b c",
    "ZREMRANGEBYRANK zz 0 1", "ZREMRANGEBYSCORE zz 5 9", "ZREMRANGEBYLEX zz - +",
    "ZPOPMIN zz", "ZPOPMAX zz 5", "ZPOPMIN zz 0", "ZMPOP 1 zz MIN COUNT 2",
    "BZPOPMIN zz 0", "BZMPOP 0 1 zz MAX COUNT 2", "ZUNIONSTORE d 1 zz",
    "ZINTERSTORE zz 2 zz none", "ZRANGESTORE d zz 0 1", "ZRANGESTORE d zz 5 9",
    "ZDIFFSTORE d 1 none", "ZRANDMEMBER zz 2",
]


# Replies with idle times (the servers' clocks differ): only the counts are compared.
TIMED = {"XREADGROUP GROUP g c CLAIM 0 STREAMS s >", "XREADGROUP GROUP g d CLAIM 0 STREAMS s >"}
# Random replies: only the counts (and the reply's type) are compared.
TIMED |= {"SPOP st", "SPOP st 2", "SRANDMEMBER st 2", "ZRANDMEMBER zz 2"}


def _changes(client: RawClient) -> int:
    info = client.call("INFO", "persistence").decode()
    return int(info.split("rdb_changes_since_last_save:")[1].split()[0])


@pytest.fixture(scope="module")
def clients(sluice: ThreadedServer, reference: ProcessServer) -> Iterator[tuple[RawClient, RawClient]]:
    pair = RawClient(sluice.port), RawClient(reference.port)
    yield pair
    for c in pair:
        c.call("FLUSHALL")
        c.close()


@pytest.mark.parametrize("command", CASES)
def test_a_write_counts_as_many_changes_as_in_redis(clients: tuple[RawClient, RawClient],
                                                    command: str) -> None:
    outcomes = []
    for c in clients:
        c.call("FLUSHALL")
        for step in SETUP:
            c.call(*step.split())
        before = _changes(c)
        reply = c.call(*command.split())
        outcomes.append((None if command in TIMED else reply, _changes(c) - before))
    assert outcomes[0] == outcomes[1]
