"""The stream additions of Redis 7.2-8.6 against the reference redis-server (8.6), reply by reply.

XDELEX and XACKDEL with their KEEPREF / DELREF / ACKED policies, the same policies on XADD and
XTRIM, idempotent production (IDMP, IDMPAUTO, XCFGSET), XREADGROUP CLAIM, XREAD ``+``, XSETID
with ENTRIESADDED / MAXDELETEDID, ENTRIESREAD and lag, and the 7.2 rule that XREADGROUP
creates its consumer even when it reads nothing. Until the reference was 8.6 these were
checked against the redis.io pages only; comparing them found XACKDEL answering NOGROUP for a
missing group (Redis answers -1 per ID) and counting an ID pending but already gone from the
stream as not found (Redis: deleted), a repeated policy accepted, and four error texts.

Every step's reply is compared in RESP2 and RESP3. Explicit IDs keep both servers' streams
identical; the only values that may differ are times, masked by the step's ``mask``: idle
times of CLAIM entries and of XINFO CONSUMERS, and XINFO STREAM FULL's times.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import hiredis
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support import ProcessServer, RawClient, ThreadedServer, replay_same

pytestmark = pytest.mark.differential

Step = tuple[str, Callable[[Any], Any] | None]


def _parse(raw: bytes) -> Any:
    reader = hiredis.Reader()
    reader.feed(raw)
    return reader.gets()


def claim_idle(reply: Any) -> Any:
    """XREADGROUP ... CLAIM: each entry is [id, fields, idle ms, deliveries]; mask the idle."""
    if reply is None:
        return None
    streams = reply.items() if isinstance(reply, dict) else (tuple(s) for s in reply)
    return [(key, [[e[0], e[1], "idle", e[3]] if len(e) == 4 else e for e in entries])
            for key, entries in streams]


_TIMES = {b"idle", b"inactive", b"seen-time", b"active-time", b"delivery-time"}


def times(reply: Any) -> Any:
    """Any reply with the time fields of XINFO (CONSUMERS, STREAM FULL) masked."""
    if isinstance(reply, dict):
        return {k: "t" if k in _TIMES else times(v) for k, v in reply.items()}
    if isinstance(reply, list):
        if len(reply) % 2 == 0 and any(k in _TIMES for k in reply[::2] if isinstance(k, bytes)):
            return [x for k, v in zip(reply[::2], reply[1::2], strict=True)
                    for x in (k, "t" if k in _TIMES else times(v))]
        # XINFO STREAM FULL's PEL entries: [id, consumer, delivery time, count] in the group,
        # [id, delivery time, count] in a consumer
        if len(reply) == 4 and isinstance(reply[2], int) and isinstance(reply[1], bytes):
            return [reply[0], reply[1], "t", reply[3]]
        if len(reply) == 3 and isinstance(reply[0], bytes) and isinstance(reply[1], int):
            return [reply[0], "t", reply[2]]
        return [times(x) for x in reply]
    return reply


SCENARIOS: dict[str, list[Step]] = {
    "xdelex and xackdel": [(c, None) for c in (
        "XADD s 1-0 f v", "XADD s 2-0 f v", "XADD s 3-0 f v", "XADD s 4-0 f v", "XADD s 5-0 f v",
        "XGROUP CREATE s g 0", "XGROUP CREATE s g2 0", "XREADGROUP GROUP g c COUNT 3 STREAMS s >",
        "XDELEX s IDS 1 1-0", "XDELEX s KEEPREF IDS 2 2-0 9-0", "XDELEX s DELREF IDS 1 3-0",
        "XDELEX s ACKED IDS 2 4-0 5-0", "XDELEX s ACKED IDS 0", "XDELEX s IDS 2 4-0",
        "XDELEX s IDS x 4-0", "XDELEX s FOO IDS 1 4-0", "XDELEX s KEEPREF DELREF IDS 1 4-0",
        "XDELEX nokey IDS 1 1-0", "XDELEX nokey IDS 1 bad", "XDELEX s IDS 1 bad",
        "XDELEX s IDS 2 4-0 4-0", "XDELEX s IDS 1 4-0 IDS 1 5-0", "XDELEX s IDS", "XDELEX s",
        "XPENDING s g", "XPENDING s g2",
        # pending in g, already deleted from the stream: acknowledged and "deleted"
        "XACKDEL s g IDS 1 1-0", "XACKDEL s g IDS 3 2-0 3-0 2-0", "XACKDEL s g ACKED IDS 1 4-0",
        "XACKDEL s g2 KEEPREF IDS 1 4-0", "XACKDEL s nogroup IDS 2 4-0 bad",
        "XACKDEL nokey g IDS 1 4-0", "XACKDEL s g IDS 0", "XACKDEL s g IDS 1",
        "XACKDEL s g BAD IDS 1 1-0", "XACKDEL s g IDS 1 bad", "SET str x",
        "XACKDEL str g FOO", "XDELEX str FOO", "XINFO STREAM s", "XINFO GROUPS s",
    )],
    "acked policy with two groups": [(c, None) for c in (
        "XADD s 1-0 f v", "XADD s 2-0 f v", "XADD s 3-0 f v", "XGROUP CREATE s a 0",
        "XGROUP CREATE s b 0", "XREADGROUP GROUP a c STREAMS s >",
        "XACKDEL s a ACKED IDS 2 1-0 2-0", "XREADGROUP GROUP b c COUNT 1 STREAMS s >",
        "XACKDEL s b ACKED IDS 1 1-0", "XRANGE s - +", "XACKDEL s a DELREF IDS 1 3-0",
        "XPENDING s b", "XINFO STREAM s", "XINFO GROUPS s",
    )],
    "policies on xadd and xtrim": [(c, None) for c in (
        "XADD s 1-0 f v", "XADD s 2-0 f v", "XADD s 3-0 f v", "XGROUP CREATE s g 0",
        "XREADGROUP GROUP g c COUNT 2 STREAMS s >", "XADD s KEEPREF 4-0 f v",
        "XADD s DELREF MAXLEN 3 5-0 f v", "XPENDING s g", "XADD s ACKED MAXLEN = 1 6-0 f v",
        "XLEN s", "XRANGE s - +", "XADD s KEEPREF DELREF 7-0 f v", "XADD s ACKED ACKED 7-0 f v",
        "XTRIM s MAXLEN 1 KEEPREF", "XTRIM s MAXLEN 0 ACKED", "XTRIM s MINID 100 DELREF",
        "XTRIM s MAXLEN 0 DELREF ACKED", "XTRIM s KEEPREF", "XPENDING s g", "XINFO STREAM s",
    )],
    "idempotent production": [(c, None) for c in (
        "XADD s IDMP p1 i1 1-0 f v", "XADD s IDMPAUTO p1 2-0 f v", "XADD s IDMP p1 3-0 f v",
        "XADD s IDMP p1 i1 IDMPAUTO p2 4-0 f v", "XADD s IDMPAUTO 4-0 f v",
        'XADD s IDMP "" i1 * f v', 'XADD s IDMP p1 "" * f v', 'XADD s IDMPAUTO "" * f v',
        "XADD s 1-0 f v", "XCFGSET s IDMP-DURATION 100", "XCFGSET s IDMP-MAXSIZE 5",
        "XCFGSET s IDMP-DURATION 0", "XCFGSET s IDMP-DURATION -1", "XCFGSET s IDMP-MAXSIZE 0",
        "XCFGSET s IDMP-MAXSIZE 100000000", "XCFGSET s IDMP-DURATION 86401",
        "XCFGSET s IDMP-DURATION 10 IDMP-DURATION 20", "XCFGSET s IDMP-MAXSIZE 1 IDMP-MAXSIZE 2",
        "XCFGSET s", "XCFGSET s FOO 1", "XCFGSET s IDMP-DURATION", "XCFGSET nokey IDMP-DURATION 10",
        "XCFGSET s IDMP-DURATION x", "XCFGSET nokey FOO", "SET str x", "XCFGSET str FOO",
        "XINFO STREAM s",
    )],
    # IDs of this millisecond ("NOW"): an idempotent ID is forgotten IDMP-DURATION seconds after
    # its entry's time (Redis's cron; Sluice on the next look), so old IDs would race it.
    "xidmprecord and idmpauto": [(c, None) for c in (
        "XADD s NOW-1 f v", "XIDMPRECORD s p1 i1 NOW-1", "XIDMPRECORD s p1 i1 NOW-1",
        "XIDMPRECORD s p1 i2 NOW-1", "XIDMPRECORD s p1 i1 NOW-2", "XADD s NOW-2 f v",
        "XIDMPRECORD s p1 i1 NOW-2", 'XIDMPRECORD s "" i1 NOW-1', 'XIDMPRECORD s p1 "" NOW-1',
        "XIDMPRECORD s p1 i1 bad", "XIDMPRECORD nokey p1 i1 NOW-1", "XIDMPRECORD nokey p1 i1 bad",
        "SET str x", "XIDMPRECORD str p1 i1 NOW-1", "XIDMPRECORD s p1 i1", "XINFO STREAM s",
        "XCFGSET s IDMP-MAXSIZE 1", "XIDMPRECORD s p1 i1 NOW-1", "XIDMPRECORD s p1 i2 NOW-2",
        "XINFO STREAM s", "XADD s2 IDMPAUTO p NOW-1 a 1", "XADD s2 NOW-1 a 1 b 2",
        "XINFO STREAM s2",
    )],
    # A pending entry deleted from the stream: CLAIM skips it and it stays pending (XAUTOCLAIM
    # would drop it).
    "claim skips deleted entries": [
        ("XADD s 1-0 f v", None), ("XADD s 2-0 f v", None), ("XADD s 3-0 f v", None),
        ("XGROUP CREATE s g 0", None), ("XREADGROUP GROUP g c1 STREAMS s >", None),
        ("XDEL s 1-0", None), ("XREADGROUP GROUP g c2 CLAIM 0 COUNT 1 STREAMS s >", claim_idle),
        ("XPENDING s g", None), ("XREADGROUP GROUP g c2 CLAIM 0 STREAMS s >", claim_idle),
        ("XPENDING s g", None), ("XREADGROUP GROUP g c2 CLAIM 0 STREAMS s 0", None),
    ],
    "claim, plus and entries read": [
        ("XADD s 1-0 f v", None), ("XADD s 2-0 f v", None), ("XADD s 3-0 f v", None),
        ("XGROUP CREATE s g 0", None), ("XREADGROUP GROUP g c1 COUNT 2 STREAMS s >", None),
        ("XREADGROUP GROUP g c2 CLAIM 0 COUNT 5 STREAMS s >", claim_idle),
        ("XPENDING s g", None), ("XREADGROUP GROUP g c3 CLAIM 0 STREAMS s >", claim_idle),
        ("XREADGROUP GROUP g c3 CLAIM -1 STREAMS s >", None),
        ("XREADGROUP GROUP g c3 CLAIM x STREAMS s >", None),
        ("XREADGROUP GROUP g c3 CLAIM 0 STREAMS s 0", None),
        ("XREADGROUP GROUP g c3 CLAIM 0 NOACK STREAMS s >", claim_idle),
        ("XREADGROUP GROUP g c3 CLAIM 1000000 STREAMS s >", None),
        ("XREADGROUP GROUP g c4 CLAIM 0 CLAIM 1000000 STREAMS s >", None),  # the last wins
        ("XREAD CLAIM 0 STREAMS s 0", None), ("XINFO CONSUMERS s g", times),
        ("XREAD STREAMS s +", None), ("XREAD COUNT 2 STREAMS s s + 0", None),
        ("XREAD STREAMS nokey +", None), ("XREAD BLOCK 100 STREAMS s +", None),
        ("XREAD STREAMS s", None), ("XREADGROUP GROUP g c STREAMS s", None),
        ("XREADGROUP GROUP g c STREAMS s +", None),
        ("XREAD BLOCK 9223372036854775807 STREAMS s $", None),
        ("XDEL s 2-0", None), ("XSETID s 5-0 ENTRIESADDED 3 MAXDELETEDID 1-0", None),
        ("XSETID s 5-0 ENTRIESADDED 2 MAXDELETEDID 2-0", None), ("XSETID s 1-0", None),
        ("XGROUP CREATE s g5 0 ENTRIESREAD 1", None), ("XINFO GROUPS s", None),
        ("XGROUP SETID s g5 0 ENTRIESREAD 5", None), ("XINFO GROUPS s", None),
        # 7.2+: a reader that gets nothing (here: blocks and times out) still becomes a consumer
        ("XREADGROUP GROUP g nobody BLOCK 1 STREAMS s >", None), ("XINFO GROUPS s", None),
        ("XCLAIM s g cz 0 9-0", None), ("XAUTOCLAIM s g cy 0 0 COUNT 1", None),
        ("XINFO CONSUMERS s g", times), ("XGROUP HELP", None),
        ("XADD s 6-0 a 1", None), ("XADD s 7-0 b 2", None),
        ("XREADGROUP GROUP g5 c STREAMS s >", None), ("XDEL s 6-0", None),
        ("XINFO GROUPS s", None), ("XINFO STREAM s FULL", times),
    ],
}


def _words(command: str, now: int = 0) -> list[bytes]:
    return [b"" if w == '""' else w.replace("NOW", str(now)).encode() for w in command.split()]


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_scenario(raw_pair: tuple[RawClient, RawClient], name: str) -> None:
    ours, theirs = raw_pair
    now = int(time.time() * 1000)
    for command, mask in SCENARIOS[name]:
        argv = _words(command, now)
        mine, real = ours.call(*argv), theirs.call(*argv)
        if mask is None or real.startswith(b"-"):
            assert mine == real, command
        else:
            assert mask(_parse(mine)) == mask(_parse(real)), command


def test_idmpauto_ids_mean_the_same_on_both_servers(
        raw_pair: tuple[RawClient, RawClient]) -> None:
    """IDMPAUTO's iid is Redis's hash: a stream DUMPed by one server and RESTOREd on the
    other still recognises a retry, whatever the order of its fields."""
    for src, dst in (raw_pair, raw_pair[::-1]):
        for c in (src, dst):
            c.call("DEL", "k")
        first = src.call("XADD", "k", "IDMPAUTO", "p", "*", "a", "1", "b", "2")
        payload = _parse(src.call("DUMP", "k"))
        assert dst.call("RESTORE", "k", "0", payload) == b"+OK\r\n"
        assert dst.call("XADD", "k", "IDMPAUTO", "p", "*", "b", "2", "a", "1") == first
        assert dst.call("XLEN", "k") == b":1\r\n"
        assert dst.call("XADD", "k", "IDMPAUTO", "p", "*", "a", "2", "b", "1") != first


def test_new_streams_take_the_idmp_settings_of_the_config(
        raw_pair: tuple[RawClient, RawClient]) -> None:
    replies = []
    for c in raw_pair:
        try:
            replies.append([c.call(*w.split()) for w in (
                "CONFIG SET stream-idmp-duration 7", "CONFIG SET stream-idmp-maxsize 0",
                "CONFIG SET stream-idmp-maxsize 9", "CONFIG GET stream-idmp-duration",
                "CONFIG GET stream-idmp-maxsize",
                "XADD c1 1-0 f v", "XGROUP CREATE c2 g $ MKSTREAM")])
            replies[-1] += [stream_idmp(c, "c1"), stream_idmp(c, "c2")]
        finally:
            c.call("CONFIG", "SET", "stream-idmp-duration", "100")
            c.call("CONFIG", "SET", "stream-idmp-maxsize", "100")
    assert replies[0] == replies[1]
    assert replies[0][-1] == [7, 9]


def stream_idmp(client: RawClient, key: str) -> list[Any]:
    info = _parse(client.call("XINFO", "STREAM", key))
    fields = info if isinstance(info, dict) else dict(zip(info[::2], info[1::2], strict=True))
    return [fields[b"idmp-duration"], fields[b"idmp-maxsize"]]


def test_blocked_claim_reader_is_woken_by_idle_time(
        raw_pair: tuple[RawClient, RawClient]) -> None:
    """XREADGROUP ... CLAIM BLOCK gets the pending entry once it is idle enough, with no
    write to wake it (Redis checks before each sleep, Sluice arms a timer)."""
    replies = []
    for c in raw_pair:
        c.call("XADD", "s", "1-0", "f", "v")
        c.call("XGROUP", "CREATE", "s", "g", "0")
        c.call("XREADGROUP", "GROUP", "g", "c1", "STREAMS", "s", ">")
        c.send("XREADGROUP", "GROUP", "g", "c2", "CLAIM", "50", "BLOCK", "5000", "STREAMS",
               "s", ">")
    for c in raw_pair:
        replies.append(claim_idle(_parse(c.read_reply())))
        replies.append(c.call("XPENDING", "s", "g"))
    assert replies[0:2] == replies[2:4]
    assert replies[0] == [(b"s", [[b"1-0", [b"f", b"v"], "idle", 1]])]


_WATCH_SETUP = ["XADD s 1-0 f v", "XADD s 2-0 f v", "XADD s IDMP p dup 3-0 f v",
                "XGROUP CREATE s g 0", "XREADGROUP GROUP g c COUNT 2 STREAMS s >"]
# Which stream commands make a WATCHed stream abort EXEC, and how many changes each counts
# (rdb_changes_since_last_save: what Redis propagates). Redis 8 touches WATCH only for
# writes to the entries (keyModified(..., 1)); group bookkeeping, XSETID, XCFGSET and
# XIDMPRECORD are propagated without it (7.0 touched it for XSETID), and so is a retried
# idempotent XADD, which changes nothing.
_WATCH_CASES = [
    "XADD s 9-0 f v", "XADD s IDMP p i * f v", "XDEL s 1-0", "XDEL s 7-0", "XTRIM s MAXLEN 1",
    "XTRIM s MAXLEN 10", "XSETID s 5-0", "XSETID s 5-0 ENTRIESADDED 9",
    "XGROUP CREATE s g2 0", "XGROUP SETID s g 0", "XGROUP DESTROY s g",
    "XGROUP CREATECONSUMER s g zz", "XGROUP DELCONSUMER s g c",
    "XREADGROUP GROUP g c STREAMS s >", "XREADGROUP GROUP g new STREAMS s >", "XACK s g 1-0",
    "XCLAIM s g d 0 1-0", "XAUTOCLAIM s g d 0 0", "XACKDEL s g IDS 1 1-0",
    "XACKDEL s g IDS 1 3-0", "XDELEX s IDS 1 3-0", "XDELEX s IDS 1 9-0",
    "XCFGSET s IDMP-DURATION 50", "XCFGSET s IDMP-DURATION 100", "XIDMPRECORD s p i2 1-0",
    "XREADGROUP GROUP g c CLAIM 0 STREAMS s >", "XREADGROUP GROUP g c NOACK STREAMS s >",
    "XADD s IDMP p dup * f v", "XADD s IDMP p dup * other value",
    # Counted as Redis's server.dirty counts them: one per stream an XREADGROUP propagates
    # anything for, one per new consumer, one per claim, one per entry deleted, one per ack.
    # Left out on purpose: XDELEX DELREF of IDs pending but already deleted, which drops
    # their references; Redis counts and propagates nothing for it (a restart brings them
    # back), Sluice counts one change and logs it.
    "XREADGROUP GROUP g new CLAIM 0 STREAMS s >", "XREADGROUP GROUP g c COUNT 1 STREAMS s >",
    "XCLAIM s g d 0 1-0 2-0 JUSTID", "XCLAIM s g d 0 1-0 LASTID 3-0",
    "XAUTOCLAIM s g d 0 0 COUNT 1", "XACKDEL s g IDS 2 1-0 2-0", "XACKDEL s g ACKED IDS 1 1-0",
    "XDEL s 1-0 2-0", "XTRIM s MAXLEN 0", "XDELEX s IDS 2 1-0 3-0", "XACK s g 1-0 2-0 9-0",
]


def _changes(client: RawClient) -> int:
    info = client.call("INFO", "persistence").decode()
    return int(info.split("rdb_changes_since_last_save:")[1].split()[0])


@pytest.mark.parametrize("command", _WATCH_CASES)
def test_which_writes_touch_watch_and_how_many_changes_they_count(
        sluice: ThreadedServer, reference: ProcessServer, command: str) -> None:
    outcomes = []
    for port in (sluice.port, reference.port):
        watcher, writer = RawClient(port), RawClient(port)
        try:
            watcher.call("FLUSHALL")
            for step in _WATCH_SETUP:
                watcher.call(*_words(step))
            watcher.call("WATCH", "s")
            before = _changes(writer)
            writer.call(*_words(command))
            changes = _changes(writer) - before
            watcher.call("MULTI")
            watcher.call("PING")
            outcomes.append((watcher.call("EXEC"), changes))
        finally:
            watcher.call("FLUSHALL")
            watcher.close()
            writer.close()
    assert outcomes[0] == outcomes[1]


def test_masks_hide_times_only() -> None:
    """The masks keep everything but times: a different delivery count or ID still shows."""
    a = [[b"s", [[b"1-0", [b"f", b"v"], 5, 2]]]]
    assert claim_idle(a) == claim_idle([[b"s", [[b"1-0", [b"f", b"v"], 9, 2]]]])
    assert claim_idle(a) != claim_idle([[b"s", [[b"1-0", [b"f", b"v"], 5, 3]]]])
    c = [[b"name", b"c", b"pending", 1, b"idle", 10, b"inactive", 3]]
    assert times(c) == times([[b"name", b"c", b"pending", 1, b"idle", 0, b"inactive", 7]])
    assert times(c) != times([[b"name", b"c", b"pending", 2, b"idle", 10, b"inactive", 3]])


# -- random sequences with groups and the 8.x deletions ----------------------------------------


def group_commands(seed: int, n: int = 70) -> list[list[str]]:
    """Writes, group reads and acknowledgements mixed with XDELEX / XACKDEL / trims under the
    three reference policies, on one stream with two groups. No CLAIM and no blocking: their
    replies carry times."""
    import random

    rnd = random.Random(seed)
    top = [0]

    def an_id() -> str:
        return f"{max(0, top[0] + rnd.randint(-5, 1))}-{rnd.randint(0, 1)}"

    def ids() -> list[str]:
        chosen = [an_id() for _ in range(rnd.randint(1, 4))]
        return ["IDS", str(len(chosen)), *chosen]

    def policy() -> list[str]:
        return rnd.choice([[], [], ["KEEPREF"], ["DELREF"], ["ACKED"]])

    group = lambda: rnd.choice(["g1", "g2", "g1", "nog"])  # noqa: E731
    out: list[list[str]] = [["XGROUP", "CREATE", "s", "g1", "$", "MKSTREAM"]]
    while len(out) < n:
        roll = rnd.random()
        if roll < 0.3:
            top[0] += 1
            trim = []
            if rnd.random() < 0.2:
                trim = [*policy(), "MAXLEN", rnd.choice(["=", "~"]), str(rnd.randint(0, 8))]
            out.append(["XADD", "s", *trim, f"{top[0]}-*", "f", rnd.choice(["1", "v" * 30])])
        elif roll < 0.4:
            out.append(["XREADGROUP", "GROUP", group(), rnd.choice(["c1", "c2"]),
                        "COUNT", str(rnd.randint(1, 3)), "STREAMS", "s",
                        rnd.choice([">", ">", "0"])])
        elif roll < 0.5:
            out.append(["XACK", "s", group(), *(an_id() for _ in range(rnd.randint(1, 3)))])
        elif roll < 0.6:
            out.append(["XDELEX", "s", *policy(), *ids()])
        elif roll < 0.7:
            out.append(["XACKDEL", "s", group(), *policy(), *ids()])
        elif roll < 0.76:
            out.append(["XTRIM", "s", "MINID", rnd.choice(["=", "~"]), an_id(), *policy()])
        elif roll < 0.8:
            out.append(["XDEL", "s", an_id()])
        elif roll < 0.84:
            out.append(["XGROUP", "CREATE", "s", "g2", rnd.choice(["0", "$", an_id()])])
        elif roll < 0.88:
            out.append(["XGROUP", "SETID", "s", group(), rnd.choice(["0", "$", an_id()])])
        elif roll < 0.92:
            out.append(["XPENDING", "s", group()])
        elif roll < 0.96:
            out.append(["XINFO", "GROUPS", "s"])
        else:
            out.append(["XRANGE", "s", "-", "+"])
    return out


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(min_value=0, max_value=2**32))
def test_random_group_sequences(small_nodes: tuple[RawClient, RawClient], seed: int) -> None:
    replay_same(small_nodes, group_commands(seed))
    ours, theirs = small_nodes
    for check in (["XINFO", "STREAM", "s"], ["XINFO", "GROUPS", "s"], ["XPENDING", "s", "g1"],
                  ["XPENDING", "s", "g1", "-", "+", "100"]):
        mine, real = ours.call(*check), theirs.call(*check)
        if check[-1] == "100":  # extended XPENDING: [id, consumer, idle ms, deliveries]
            mine, real = ([e[:2] + e[3:] for e in _parse(x)] if x[:1] == b"*" else x
                          for x in (mine, real))
        assert mine == real, check
