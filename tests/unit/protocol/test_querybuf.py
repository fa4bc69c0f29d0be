"""The query buffer, read the way the event loop reads it: ``get_buffer``, ``recv_into``,
``received``, ``end_read`` (an ``asyncio.BufferedProtocol``).

What is checked is Redis's policy (networking.c, ``clientsCronResizeQueryBuffer``): no
buffer of its own for a client whose reads end on request boundaries, the reusable buffer
kept by a client whose read ended inside a request, a buffer sized for a big argument as
soon as its header arrives, and the cron's trimming.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sluice.protocol import RequestReader
from sluice.protocol.querybuf import PROTO_IOBUF_LEN, QueryBuffer


def encode(*args: bytes) -> bytes:
    return b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)


def read(reader: RequestReader, data: bytes, most: int | None = None) -> tuple[list[list[bytes]], bytes]:
    """One read as the event loop does it: as much of ``data`` as the buffer takes (at most
    ``most``), then every complete request. Returns them and the bytes not read."""
    buf = reader.get_buffer()
    n = min(len(buf), len(data), most if most is not None else len(data))
    buf[:n] = data[:n]
    reader.received(n)
    got = []
    try:
        while batch := reader.take():
            got.extend(batch)
    finally:
        reader.end_read()
    return got, data[n:]


def read_all(reader: RequestReader, data: bytes, most: int | None = None) -> list[list[bytes]]:
    got: list[list[bytes]] = []
    while data:
        batch, data = read(reader, data, most)
        got.extend(batch)
    return got


def test_reads_that_end_on_a_boundary_hold_no_buffer() -> None:
    a, b = RequestReader(), RequestReader()
    got, rest = read(a, encode(b"SET", b"k", b"v") + encode(b"GET", b"k"))
    assert (got, rest) == ([[b"SET", b"k", b"v"], [b"GET", b"k"]], b"")
    assert (a.pending(), a.free(), a.buffer_size(), a.held()) == (0, 0, 0, 0)
    first = a.get_buffer()
    a.received(0)
    a.end_read()
    assert b.get_buffer().obj is first.obj  # the same reusable buffer serves the next client
    b.received(0)
    b.end_read()


def test_a_read_that_ends_inside_a_request_keeps_the_buffer() -> None:
    reader, other = RequestReader(), RequestReader()
    partial = b"*3\r\n$3\r\nset\r\n$2\r\na"
    got, _ = read(reader, partial)
    assert got == []
    assert reader.pending() == len(partial)
    assert reader.buffer_size() == PROTO_IOBUF_LEN
    assert reader.free() == PROTO_IOBUF_LEN - len(partial)
    own = reader.get_buffer()
    assert other.get_buffer().obj is not own.obj  # the others get a new reusable buffer
    other.received(0)
    other.end_read()
    n = len(b"a\r\n$1\r\nb\r\n")
    own[:n] = b"a\r\n$1\r\nb\r\n"
    reader.received(n)
    assert reader.take() == [[b"set", b"aa", b"b"]]
    reader.end_read()
    # As Redis: the client keeps its buffer (the cron frees it when idle), with nothing in it.
    assert (reader.pending(), reader.buffer_size(), reader.free()) == (0, 16384, 16384)


def test_a_big_argument_gets_a_buffer_of_its_size_and_reads_exactly_what_it_lacks(
        monkeypatch: pytest.MonkeyPatch) -> None:
    value = bytes(range(256)) * 4000  # 1,024,000 bytes
    request = encode(b"SET", b"a", value)
    header = request[: request.index(b"$1024000\r\n") + 10]
    reader = RequestReader()
    got, rest = read(reader, header)
    assert (got, rest) == ([], b"")
    assert reader.buffer_size() == len(value) + 2  # made when the header arrived
    reallocations = []
    original = QueryBuffer.reallocate
    monkeypatch.setattr(QueryBuffer, "reallocate",
                        lambda self, n: (reallocations.append(n), original(self, n))[1])
    body = request[len(header):]
    sizes = []
    while body:
        buf = reader.get_buffer()
        sizes.append(len(buf))
        n = min(len(buf), 300_000)
        buf[:n] = body[:n]
        reader.received(n)
        got.extend(reader.take())
        reader.end_read()
        body = body[n:]
    assert got == [[b"SET", b"a", value]]
    assert sizes == [len(value) + 2 - 300_000 * i for i in range(4)]  # what the value lacks
    assert reallocations == []  # the bytes landed in place
    # A next fat argument of the same size will find its room ready, as in Redis.
    assert reader.buffer_size() == len(value) + 2


def test_big_argument_with_a_request_after_it_in_the_same_read() -> None:
    value = b"x" * 40_000
    data = encode(b"SET", b"a", value) + encode(b"GET", b"a")
    reader = RequestReader()
    assert read_all(reader, data, most=7000) == [[b"SET", b"a", value], [b"GET", b"a"]]


def test_cron_frees_an_idle_empty_buffer_and_trims_an_idle_partial_one() -> None:
    reader = RequestReader()
    read(reader, encode(b"SET", b"a", b"b")[:10])
    read(reader, encode(b"SET", b"a", b"b")[10:])
    assert reader.buffer_size() == PROTO_IOBUF_LEN
    assert reader.resize(idle_seconds=2) is True  # not idle long enough
    assert reader.buffer_size() == PROTO_IOBUF_LEN
    assert reader.resize(idle_seconds=3) is False
    assert (reader.buffer_size(), reader.free(), reader.pending()) == (0, 0, 0)

    fat = RequestReader()
    read(fat, b"*3\r\n$3\r\nset\r\n$1\r\na\r\n$1000000\r\na")
    assert fat.buffer_size() > 1_000_000
    assert fat.resize(idle_seconds=3) is True
    assert (fat.pending(), fat.free()) == (1, 0)  # trimmed to what it holds
    rest = b"a" * 999_999 + b"\r\n"
    buf = fat.get_buffer()
    assert len(buf) == len(rest)  # the room the argument needs is made again
    buf[:] = rest
    fat.received(len(rest))
    assert fat.take() == [[b"set", b"a", b"a" * 1_000_000]]
    fat.end_read()


def test_cron_trims_a_busy_buffer_to_its_recent_peak() -> None:
    reader = RequestReader()
    read_all(reader, encode(b"SET", b"x", b"A" * 400_000), most=100_000)
    assert reader.buffer_size() > 400_000
    reader.resize(idle_seconds=0)  # the peak of this period was the big argument
    assert reader.buffer_size() > 400_000
    read(reader, encode(b"SET", b"x", b"A" * 100))
    reader.resize(idle_seconds=0)
    assert 0 < reader.buffer_size() < 400_000  # trimmed, but room for the recent peak kept
    assert read_all(reader, encode(b"GET", b"x")) == [[b"GET", b"x"]]


def test_bytes_fed_while_another_client_holds_the_reusable_buffer() -> None:
    # A script busy in one client's read: the server reads others with os.read and feed().
    busy, other = RequestReader(), RequestReader()
    buf = busy.get_buffer()
    buf[:14] = encode(b"PING")
    busy.received(14)
    other.feed(encode(b"ECHO", b"hi"))
    assert other.take() == [[b"ECHO", b"hi"]]
    assert busy.take() == [[b"PING"]]
    busy.end_read()


def test_inline_and_unauthenticated_input_is_parsed_in_the_reusable_buffer() -> None:
    reader = RequestReader(auth_required=True)
    assert read_all(reader, b"AUTH pw\r\n") == [[b"AUTH", b"pw"]]
    assert reader.buffer_size() == 0
    reader.set_limits(auth_required=False)
    assert read_all(reader, b"PING\r\n" + encode(b"ECHO", b"x"), most=9) == [
        [b"PING"], [b"ECHO", b"x"]]


def test_compaction_and_growth_keep_a_large_request_linear(monkeypatch: pytest.MonkeyPatch) -> None:
    # Many small arguments (no big-argument path): the buffer grows by doubling, and bytes
    # moved to the front are only the partial request, so copying stays linear.
    moved = 0
    original_compact, original_realloc = QueryBuffer.compact, QueryBuffer.reallocate

    def compact(self: QueryBuffer, keep_from: int) -> int:
        nonlocal moved
        moved += self.end - keep_from
        return original_compact(self, keep_from)

    def reallocate(self: QueryBuffer, capacity: int) -> None:
        nonlocal moved
        moved += self.end
        original_realloc(self, capacity)

    monkeypatch.setattr(QueryBuffer, "compact", compact)
    monkeypatch.setattr(QueryBuffer, "reallocate", reallocate)
    args = [b"%08d" % i for i in range(200_000)]  # a 3 MB MSET-like request
    request = encode(b"RPUSH", b"l", *args)
    reader = RequestReader()
    assert read_all(reader, request + encode(b"LLEN", b"l"), most=65536) == [
        [b"RPUSH", b"l", *args], [b"LLEN", b"l"]]
    assert moved <= 4 * len(request), f"{moved} bytes moved for a {len(request)}-byte request"


@settings(max_examples=80, deadline=None)
@given(st.lists(st.lists(st.one_of(st.binary(max_size=30), st.sampled_from([b"z" * 33_000])),
                         min_size=1, max_size=5), max_size=8),
       st.lists(st.integers(min_value=1, max_value=40_000), min_size=1, max_size=12))
def test_reads_of_any_size_give_the_requests_in_order(reqs: list[list[bytes]],
                                                      sizes: list[int]) -> None:
    data = b"".join(encode(*r) for r in reqs)
    reader, got, i = RequestReader(), [], 0
    while data:
        batch, data = read(reader, data, sizes[i % len(sizes)])
        got.extend(batch)
        i += 1
        if i % 5 == 0:
            reader.resize(idle_seconds=i % 10)  # the cron may look between any two reads
    assert got == reqs


def test_a_reusable_buffer_grown_for_a_big_argument_stays_with_its_client() -> None:
    reader, other = RequestReader(), RequestReader()
    read(reader, b"*2\r\n$4\r\nECHO\r\n$40000\r\n")
    assert reader.buffer_size() == 40_002
    buf = other.get_buffer()
    assert len(buf) == PROTO_IOBUF_LEN and buf.obj is not reader.get_buffer().obj
    other.received(0)
    other.end_read()
