"""server/pubsub.py on its own: both sides of every subscription agree, the client's kind
follows its subscriptions, and PUBLISH counts and delivers as Redis does."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from sluice.server.pubsub import PubSub


class FakeClient:
    def __init__(self, resp3: bool = False) -> None:
        self.pubsub_channels: dict[bytes, None] = {}
        self.pubsub_patterns: dict[bytes, None] = {}
        self.pubsub_shard_channels: dict[bytes, None] = {}
        self.kind = "normal"
        self.resp3 = resp3
        self.got = bytearray()

    def add_raw(self, data: bytes) -> None:
        self.got += data


def _consistent(ps: PubSub, clients: list[FakeClient]) -> None:
    for registry, side in ((ps.channels, "pubsub_channels"), (ps.patterns, "pubsub_patterns"),
                           (ps.shard_channels, "pubsub_shard_channels")):
        pairs = {(name, id(c)) for name, subs in registry.items() for c in subs}
        assert pairs == {(name, id(c)) for c in clients for name in getattr(c, side)}
        assert all(registry.values())  # no name is left without a subscriber
    for c in clients:
        held = c.pubsub_channels or c.pubsub_patterns or c.pubsub_shard_channels
        assert c.kind == ("pubsub" if held else "normal")


NAMES = st.sampled_from([b"a", b"b", b"a*", b"?"])
OPS = st.lists(st.tuples(st.integers(0, 2), st.sampled_from(
    ["sub", "unsub", "psub", "punsub", "ssub", "sunsub", "all"]), NAMES), max_size=40)


@given(OPS)
def test_both_sides_agree(ops: list[tuple[int, str, bytes]]) -> None:
    ps = PubSub()
    clients = [FakeClient() for _ in range(3)]
    for who, op, name in ops:
        c: Any = clients[who]
        if op == "sub":
            new = name not in c.pubsub_channels
            assert ps.subscribe(c, name) == new
        elif op == "unsub":
            had = name in c.pubsub_channels
            assert ps.unsubscribe(c, name) == had
        elif op == "psub":
            new = name not in c.pubsub_patterns
            assert ps.psubscribe(c, name) == new
        elif op == "punsub":
            had = name in c.pubsub_patterns
            assert ps.punsubscribe(c, name) == had
        elif op == "ssub":
            ps.subscribe(c, name, shard=True)
        elif op == "sunsub":
            ps.unsubscribe(c, name, shard=True)
        else:
            ps.unsubscribe_all(c)
        _consistent(ps, clients)


def test_publish_counts_and_frames() -> None:
    ps = PubSub()
    a, b, c = FakeClient(), FakeClient(resp3=True), FakeClient()
    ps.subscribe(a, b"news")
    ps.psubscribe(a, b"n*")
    ps.psubscribe(b, b"n*")
    ps.subscribe(c, b"news", shard=True)
    assert ps.publish(b"news", b"hi") == 3  # a twice (channel + pattern), b once
    assert a.got == (b"*3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n$2\r\nhi\r\n"
                     b"*4\r\n$8\r\npmessage\r\n$2\r\nn*\r\n$4\r\nnews\r\n$2\r\nhi\r\n")
    assert b.got == b">4\r\n$8\r\npmessage\r\n$2\r\nn*\r\n$4\r\nnews\r\n$2\r\nhi\r\n"
    assert c.got == b""  # shard subscribers hear SPUBLISH only
    assert ps.publish(b"news", b"s", shard=True) == 1
    assert c.got == b"*3\r\n$8\r\nsmessage\r\n$4\r\nnews\r\n$1\r\ns\r\n"
    assert sorted(ps.active(None)) == [b"news"] and ps.active(b"x*") == []
    assert ps.numsub(b"news") == 1 and ps.numsub(b"news", shard=True) == 1
