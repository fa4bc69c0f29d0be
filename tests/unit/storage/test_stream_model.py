"""Hypothesis state machine: random XADD / XDEL / XTRIM / XRANGE against a sorted-dict model.

XRANGE is checked twice: ``Stream.range`` against the model, and the RESP that
``range_reply`` renders straight from the nodes against the generic encoder's.
"""

from __future__ import annotations

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from sluice.commands.stream_common import entries_reply, range_reply
from sluice.protocol import encode
from sluice.storage.stream import IdTooSmallError, IdZeroError, Stream, default_trim_limit
from sluice.storage.streamid import MAX_ID, make_id

VALUES = st.sampled_from(
    [b"", b"1", b"-7", b"19.8", b"01", b"x" * 70, b"9223372036854775808", b"y" * 300, b"%s%d"]
)
FIELD_SETS = st.sampled_from(
    [(b"a",), (b"a", b"b"), (b"a", b"b", b"c"), (b"z",), (b"%d", b"b%"), (b"",)]
)


class StreamModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.s = Stream()
        self.model: dict[int, list[bytes]] = {}
        self.last = 0
        self.node_max_entries = 3
        self.node_max_bytes = 60

    def _ids(self) -> list[int]:
        return sorted(self.model)

    @rule(names=FIELD_SETS, data=st.data(), dms=st.integers(0, 3), seq=st.integers(0, 2))
    def xadd_explicit(
        self, names: tuple[bytes, ...], data: st.DataObject, dms: int, seq: int
    ) -> None:
        fields: list[bytes] = []
        for n in names:
            fields += [n, data.draw(VALUES)]
        sid = make_id((self.last >> 64) + dms, seq)
        if sid <= self.last:
            expected = IdZeroError if sid == 0 else IdTooSmallError
            try:
                self.s.append((sid, True), fields, 0)
            except expected:
                return
            raise AssertionError("accepted an ID not above the top item")
        got = self.s.append(
            (sid, True),
            fields,
            0,
            node_max_entries=self.node_max_entries,
            node_max_bytes=self.node_max_bytes,
        )
        assert got == sid
        self.model[sid] = fields
        self.last = sid

    @rule(now=st.integers(0, 5))
    def xadd_auto(self, now: int) -> None:
        sid = self.s.append(None, [b"a", b"1"], now, node_max_entries=self.node_max_entries)
        assert sid > self.last
        self.model[sid] = [b"a", b"1"]
        self.last = sid

    @precondition(lambda self: self.model)
    @rule(data=st.data())
    def xdel(self, data: st.DataObject) -> None:
        ids = self._ids()
        victims = data.draw(st.lists(st.sampled_from(ids + [self.last + 1]), max_size=4))
        expected = len({v for v in victims if v in self.model})
        assert self.s.delete(victims) == expected
        for v in victims:
            self.model.pop(v, None)

    @rule(maxlen=st.integers(0, 12))
    def xtrim_maxlen_exact(self, maxlen: int) -> None:
        ids = self._ids()
        drop = ids[: max(0, len(ids) - maxlen)]
        assert self.s.trim("MAXLEN", maxlen) == len(drop)
        for v in drop:
            del self.model[v]

    @precondition(lambda self: self.model)
    @rule(data=st.data())
    def xtrim_minid_exact(self, data: st.DataObject) -> None:
        minid = data.draw(st.sampled_from(self._ids()))
        drop = [v for v in self.model if v < minid]
        assert self.s.trim("MINID", minid) == len(drop)
        for v in drop:
            del self.model[v]

    @rule(maxlen=st.integers(0, 12), limit=st.sampled_from([0, 2, 5, None]))
    def xtrim_maxlen_approx(self, maxlen: int, limit: int | None) -> None:
        lim = default_trim_limit(self.node_max_entries) if limit is None else limit
        before = self._ids()
        n = self.s.trim("MAXLEN", maxlen, approx=True, limit=lim)
        # ~ only ever removes a prefix, never below maxlen, never more than LIMIT.
        assert n <= max(0, len(before) - maxlen)
        assert not lim or n <= lim
        for v in before[:n]:
            del self.model[v]

    @rule(data=st.data())
    def xrange(self, data: st.DataObject) -> None:
        ids = self._ids() or [0]
        lo = data.draw(st.sampled_from(ids + [0]))
        hi = data.draw(st.sampled_from(ids + [MAX_ID]))
        count = data.draw(st.integers(0, 4))
        rev = data.draw(st.booleans())
        want = [(i, self.model[i]) for i in self._ids() if lo <= i <= hi]
        if rev:
            want.reverse()
        if count:
            want = want[:count]
        assert self.s.range(lo, hi, count, rev) == want
        assert range_reply(self.s, lo, hi, count, rev) == encode(entries_reply(want))

    @invariant()
    def consistent(self) -> None:
        assert len(self.s) == len(self.model)
        ids = self._ids()
        assert self.s.first_id == (ids[0] if ids else 0)
        assert self.s.last_id == self.last
        assert self.s.last_live_id() == (ids[-1] if ids else 0)
        for node in self.s.iter_nodes():
            assert node.live + node.deleted == len(node)
            assert node.master_id == node.id_at(0)


StreamModel.TestCase.settings = settings(max_examples=120, stateful_step_count=40, deadline=None)
TestStreamModel = StreamModel.TestCase
