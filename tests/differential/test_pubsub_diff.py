"""Pub/Sub: the same conversations with Sluice and redis-server, every reply and push compared
byte for byte (RESP2 and RESP3).

A step is ``(connection, command or None, how many replies to read on that connection)``.
Scenarios avoid what redis-server orders by hash (several channels dropped by one argument-less
UNSUBSCRIBE, several channels listed by PUBSUB CHANNELS): those are compared as sets below.
"""

from __future__ import annotations

import re
import string
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support import RawClient

Step = tuple[str, list[str] | None, int]

SCENARIOS: dict[str, list[Step]] = {
    "subscribe, publish, pattern match": [
        ("a", ["SUBSCRIBE", "news", "sport", "news"], 3),
        ("a", ["PSUBSCRIBE", "n*", "n*"], 2),
        ("c", ["SUBSCRIBE", "news"], 1),
        ("c", ["PSUBSCRIBE", "*s"], 1),
        ("b", ["PUBLISH", "news", "hello"], 1),  # 4 deliveries
        ("a", None, 2),  # message, then pmessage
        ("c", None, 2),
        ("b", ["PUBLISH", "nothing", "x"], 1),
        ("a", None, 1),
        ("b", ["PUBLISH", "sport", ""], 1),
        ("a", None, 1),
        ("b", ["PUBSUB", "NUMSUB", "news", "sport", "none"], 1),
        ("b", ["PUBSUB", "NUMPAT"], 1),
        ("b", ["PUBSUB", "CHANNELS", "n*"], 1),
        ("a", ["UNSUBSCRIBE", "news", "never"], 2),
        ("a", ["PUNSUBSCRIBE"], 1),
        ("a", ["UNSUBSCRIBE"], 1),
        ("a", ["UNSUBSCRIBE"], 1),  # nothing left: a null channel
        ("a", ["PUNSUBSCRIBE", "p?"], 1),
        ("b", ["PUBSUB", "NUMPAT"], 1),
        ("b", ["PUBSUB", "CHANNELS"], 1),
    ],
    "what a subscribed connection may run": [
        ("a", ["SUBSCRIBE", "c"], 1),
        ("a", ["PING"], 1),
        ("a", ["PING", "hi"], 1),
        ("a", ["GET", "k"], 1),  # refused in RESP2, runs in RESP3
        ("a", ["CLIENT", "ID", "x"], 1),
        ("a", ["PUBLISH", "c", "self"], 1),  # RESP3: the count, then the push (7.2+)
        ("a", None, 0),
        ("a", ["UNSUBSCRIBE", "c"], 1),
        ("a", ["PING"], 1),
        ("a", ["SUBSCRIBE", "c"], 1),
        ("a", ["RESET"], 1),  # drops the subscription without a confirmation
        ("b", ["PUBLISH", "c", "gone"], 1),
        ("a", ["GET", "k"], 1),
    ],
    "sharded channels": [
        ("a", ["SSUBSCRIBE", "s1", "s2"], 2),
        ("a", ["SUBSCRIBE", "plain"], 1),  # its count leaves shard channels out
        ("b", ["SPUBLISH", "s1", "m"], 1),
        ("a", None, 1),
        ("b", ["PUBLISH", "s1", "not to shard subscribers"], 1),
        ("b", ["PUBSUB", "SHARDNUMSUB", "s1", "plain"], 1),
        ("b", ["PUBSUB", "SHARDCHANNELS", "s1"], 1),
        ("a", ["SUNSUBSCRIBE", "s2"], 1),
        ("a", ["SUNSUBSCRIBE"], 1),
        ("a", ["SUNSUBSCRIBE"], 1),
        ("a", ["UNSUBSCRIBE"], 1),
    ],
    "inside MULTI": [
        ("a", ["MULTI"], 1),
        ("a", ["SUBSCRIBE", "m1"], 1),
        ("a", ["SSUBSCRIBE", "m2"], 1),
        ("a", ["PING"], 1),
        ("a", ["EXEC"], 1),
        ("a", ["UNSUBSCRIBE"], 1),
    ],
    "errors": [
        ("a", ["SUBSCRIBE"], 1),
        ("a", ["PSUBSCRIBE"], 1),
        ("a", ["PUBLISH", "c"], 1),
        ("a", ["SPUBLISH", "c", "m", "x"], 1),
        ("a", ["PUBSUB"], 1),
        ("a", ["PUBSUB", "NOPE"], 1),
        ("a", ["PUBSUB", "NUMPAT", "x"], 1),
        ("a", ["PUBSUB", "CHANNELS", "a", "b"], 1),
        ("a", ["PUBSUB", "SHARDCHANNELS", "a", "b"], 1),
    ],
}


def _conversation(port: int, protocol: int, steps: list[Step]) -> list[bytes]:
    clients: dict[str, RawClient] = {}
    transcript: list[bytes] = []
    try:
        for name, command, replies in steps:
            client = clients.get(name)
            if client is None:
                client = clients[name] = RawClient(port, protocol)
            if command is not None:
                client.send(*command)
            transcript += [name.encode() + b": " + r for r in client.read_replies(replies)]
        for client in clients.values():  # nothing unexpected left unread
            client.send("PING")
            transcript.append(client.read_replies(1)[0])
    finally:
        for client in clients.values():
            client.close()
    return transcript


@pytest.mark.differential
@pytest.mark.parametrize("protocol", [2, 3], ids=["resp2", "resp3"])
@pytest.mark.parametrize("name", list(SCENARIOS))
def test_same_conversation(sluice: Any, reference: Any, name: str, protocol: int) -> None:
    steps = SCENARIOS[name]
    self_publish = protocol == 3 and name == "what a subscribed connection may run"
    if self_publish:
        # In RESP3 a subscriber may publish to itself: one more frame to read, the push.
        steps = [(c, cmd, n + 1) if cmd is None else (c, cmd, n) for c, cmd, n in steps]
    ours = _conversation(sluice.port, protocol, steps)
    theirs = _conversation(reference.port, protocol, steps)
    if self_publish:
        # Redis 7.2+ sends that push after PUBLISH's own reply (redis/redis#12326, which also
        # keeps it out of EXEC's array); 7.0 sent it before.
        push = b"a: >3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$4\r\nself\r\n"
        assert ours[ours.index(push) - 1] == b"a: :1\r\n"
    assert ours == theirs


@pytest.mark.differential
@pytest.mark.parametrize("protocol", [2, 3], ids=["resp2", "resp3"])
def test_hash_ordered_replies_as_sets(sluice: Any, reference: Any, protocol: int) -> None:
    steps: list[Step] = [
        ("a", ["SUBSCRIBE", "x1", "x2", "x3"], 3),
        ("a", ["PSUBSCRIBE", "p1", "p2"], 2),
        ("b", ["PUBSUB", "CHANNELS"], 1),
        ("b", ["PUBSUB", "CHANNELS", "x[12]"], 1),
        ("a", ["UNSUBSCRIBE"], 3),
        ("a", ["PUNSUBSCRIBE"], 2),
    ]

    def canonical(transcript: list[bytes]) -> list[Any]:
        # Each reply's bulk strings as a sorted list; counts dropped (they follow the order).
        return [sorted(re.findall(rb"\$\d+\r\n([^\r]*)\r\n", r)) for r in transcript]

    ours = _conversation(sluice.port, protocol, steps)
    theirs = _conversation(reference.port, protocol, steps)
    assert sorted(canonical(ours)) == sorted(canonical(theirs))


# -- random conversations ---------------------------------------------------------------------
# Channels a1 a2 b1 bb and patterns a* b? : a channel matches at most one pattern, so the
# order of pushes on a connection does not depend on how redis-server orders its patterns.
CHANNELS = ["a1", "a2", "b1", "bb"]
PATTERNS = ["a*", "b?"]
CLIENTS = "xyz"


def _pattern_matches(pattern: str, channel: str) -> bool:
    return channel.startswith(pattern[0]) and (pattern[1] == "*" or len(channel) == 2)


@st.composite
def conversations(draw: st.DrawFn) -> list[Step]:
    channels: dict[str, set[str]] = {c: set() for c in CLIENTS}
    patterns: dict[str, set[str]] = {c: set() for c in CLIENTS}
    steps: list[Step] = []
    for _ in range(draw(st.integers(1, 25))):
        who = draw(st.sampled_from(CLIENTS))
        action = draw(st.sampled_from(["sub", "unsub", "psub", "punsub", "pub", "numsub"]))
        if action in ("sub", "unsub"):
            names = draw(st.lists(st.sampled_from(CHANNELS), min_size=1, max_size=3))
            steps.append((who, ["SUBSCRIBE" if action == "sub" else "UNSUBSCRIBE", *names],
                          len(names)))
            for n in names:
                (channels[who].add if action == "sub" else channels[who].discard)(n)
        elif action in ("psub", "punsub"):
            names = draw(st.lists(st.sampled_from(PATTERNS), min_size=1, max_size=2))
            steps.append((who, ["PSUBSCRIBE" if action == "psub" else "PUNSUBSCRIBE", *names],
                          len(names)))
            for n in names:
                (patterns[who].add if action == "psub" else patterns[who].discard)(n)
        elif action == "pub":
            channel = draw(st.sampled_from(CHANNELS))
            text = draw(st.text(string.ascii_letters, max_size=5))
            subscribed = channels[who] or patterns[who]
            if subscribed:
                continue  # a RESP2 subscriber may not publish; covered by the scenarios
            steps.append((who, ["PUBLISH", channel, text], 1))
            for c in CLIENTS:
                n = (channel in channels[c]) + sum(
                    _pattern_matches(p, channel) for p in patterns[c])
                if n:
                    steps.append((c, None, n))
        else:
            if channels[who] or patterns[who]:
                continue
            steps.append((who, ["PUBSUB", "NUMSUB", *CHANNELS], 1))
    return steps


@pytest.mark.differential
@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=conversations())
def test_random_conversations(sluice: Any, reference: Any, steps: list[Step]) -> None:
    assert _conversation(sluice.port, 2, steps) == _conversation(reference.port, 2, steps)


@pytest.mark.differential
def test_a_script_publishing_to_its_caller(sluice: Any, reference: Any) -> None:
    """RESP3: messages a script publishes to the client running it come after the script's
    reply (Redis's current client is the caller, not the script's own client)."""
    script = ("redis.call('ping', 'abc') redis.call('publish', 'foo', 'bar') "
              "redis.call('publish', 'foo', 'vaz') return 'bla'")
    steps: list[Step] = [
        ("a", ["SUBSCRIBE", "foo"], 1),
        ("a", ["EVAL", script, "0"], 3),  # the reply, then both messages
        ("a", ["FCALL_RO", "nosuch", "0"], 1),
        ("b", ["EVAL", "return redis.call('publish', 'foo', 'other')", "0"], 1),
        ("a", None, 1),
    ]
    ours = _conversation(sluice.port, 3, steps)
    assert ours == _conversation(reference.port, 3, steps)
    assert ours[1] == b"a: $3\r\nbla\r\n"
