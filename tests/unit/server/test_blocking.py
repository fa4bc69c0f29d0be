"""BlockingManager with clients that have no socket, a fake event loop and a fake clock.

A real ``Server`` is built but never started: commands go through ``dispatch.process_command``
(or the client's reader and ``Server.process_input`` for pipelines), replies accumulate in each
client's output buffer (no transport, so ``flush`` keeps them), and timers live in a fake loop
that only fires when the test advances it. Also the timeout parser (seconds as an x87 long
double, as redis-server computes them).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import hiredis
import pytest

from sluice.commands import errors
from sluice.commands.lists import parse_timeout
from sluice.commands.spec import RW, WRITE, A, cmd, key_at
from sluice.protocol import NULL_ARRAY
from sluice.server.app import Server
from sluice.server.client import Client
from sluice.server.config import Config
from sluice.server.dispatch import call, process_command
from sluice.storage.keyspace import FakeClock
from tests.support import RecordingAof


class FakeTimer:
    __slots__ = ("when", "callback", "args", "cancelled")

    def __init__(self, when: float, callback: Callable[..., Any], args: tuple[Any, ...]) -> None:
        self.when, self.callback, self.args, self.cancelled = when, callback, args, False

    def cancel(self) -> None:
        self.cancelled = True


class FakeLoop:
    """Just what the server uses: ``time``, ``call_at``, and ``call_soon`` (which runs the
    callback at once: each step of a test is a whole loop iteration)."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.timers: list[FakeTimer] = []

    def time(self) -> float:
        return self.clock.now_ms() / 1000.0

    def call_at(self, when: float, callback: Callable[..., Any], *args: Any) -> FakeTimer:
        timer = FakeTimer(when, callback, args)
        self.timers.append(timer)
        return timer

    def call_soon(self, callback: Callable[..., Any], *args: Any) -> None:
        callback(*args)

    def live(self) -> list[FakeTimer]:
        return [t for t in self.timers if not t.cancelled]

    def advance(self, ms: int) -> None:
        """Move time on and fire the timers now due, in deadline order."""
        self.clock.advance(ms)
        while True:
            due = sorted((t for t in self.live() if t.when <= self.time()), key=lambda t: t.when)
            if not due:
                return
            due[0].cancelled = True
            due[0].callback(*due[0].args)


class Harness:
    def __init__(self) -> None:
        self.clock = FakeClock()
        self.server = Server(Config(), self.clock)
        self.loop = FakeLoop(self.clock)
        self.server.loop = self.loop  # type: ignore[assignment]
        self.manager = self.server.blocking

    def client(self) -> Client:
        return self.server.new_client(None)

    def run(self, client: Client, *argv: bytes | str) -> None:
        """One command from ``client``, then the end of the loop iteration."""
        process_command(self.server, client, [a if isinstance(a, bytes) else a.encode()
                                              for a in argv])
        self.server.before_return()

    def pipeline(self, client: Client, *commands: tuple[str, ...]) -> None:
        """Several commands arriving in one read, as data_received handles them."""
        for argv in commands:
            client.reader.feed(b"*%d\r\n" % len(argv) + b"".join(
                b"$%d\r\n%s\r\n" % (len(a), a.encode()) for a in argv))
        self.server.process_input(client)
        self.server.before_return()

    @staticmethod
    def replies(client: Client) -> list[Any]:
        """Decode and consume what ``client`` has been sent so far."""
        reader = hiredis.Reader()
        reader.feed(bytes(client.out))
        client.out = bytearray()
        out = []
        while (reply := reader.gets()) is not False:
            out.append(reply)
        return out

    @staticmethod
    def raw(client: Client) -> bytes:
        data = bytes(client.out)
        client.out = bytearray()
        return data


@pytest.fixture
def h() -> Harness:
    return Harness()


def test_served_client_counts_out_once(h: Harness) -> None:
    waiter, pusher = h.client(), h.client()
    h.run(waiter, "BLPOP", "k", "0")
    assert h.manager.blocked_count == 1 and waiter.blocked
    h.run(pusher, "RPUSH", "k", "v")
    assert h.replies(waiter) == [[b"k", b"v"]]
    assert h.manager.blocked_count == 0  # was -1: _rerun counted the client out twice
    assert not h.manager.blocking_keys and not waiter.blocked


def test_fifo_one_push_per_waiter(h: Harness) -> None:
    waiters = [h.client() for _ in range(3)]
    pusher = h.client()
    for w in waiters:
        h.run(w, "BRPOP", "q", "0")
    for i, expected in enumerate(waiters):
        h.run(pusher, "LPUSH", "q", f"job{i}")
        assert h.replies(expected) == [[b"q", f"job{i}".encode()]]
        assert all(h.replies(w) == [] for w in waiters if w is not expected)
    assert h.manager.blocked_count == 0


def test_one_push_of_three_serves_three_in_order(h: Harness) -> None:
    waiters = [h.client() for _ in range(3)]
    for w in waiters:
        h.run(w, "BLPOP", "q", "0")
    h.run(h.client(), "LPUSH", "q", "a", "b", "c")  # the list is c b a
    assert [h.replies(w) for w in waiters] == [[[b"q", b"c"]], [[b"q", b"b"]], [[b"q", b"a"]]]
    assert b"q" not in h.server.keyspace[0].data


def test_wrong_type_write_keeps_waiter_blocked_and_first(h: Harness) -> None:
    first, second, other = h.client(), h.client(), h.client()
    h.run(first, "BLPOP", "k", "0")
    h.run(second, "BLPOP", "k", "0")
    db = h.server.keyspace[0]
    db.set(b"k", b"a string")  # SET, as a strings command would do it
    other.modified(b"k")
    h.server.before_return()
    assert h.replies(first) == [] and h.manager.blocked_count == 2  # no WRONGTYPE reply
    db.delete(b"k")
    other.modified(b"k")
    h.server.before_return()
    assert h.manager.blocked_count == 2
    h.run(other, "RPUSH", "k", "x")
    assert h.replies(first) == [[b"k", b"x"]] and h.replies(second) == []


def test_flushall_keeps_waiters(h: Harness) -> None:
    waiter = h.client()
    h.run(waiter, "BLPOP", "k", "0")
    h.server.flush_db(h.server.keyspace[0])
    h.server.before_return()
    assert waiter.blocked and h.replies(waiter) == []


def test_multi_never_blocks(h: Harness) -> None:
    client = h.client()
    client.in_exec = True  # what EXEC sets while it runs the queued commands
    for argv, expected in (
        (("BLPOP", "none", "0"), b"*-1\r\n"),
        (("BRPOPLPUSH", "none", "dst", "0"), b"$-1\r\n"),
        (("BLMOVE", "none", "dst", "LEFT", "RIGHT", "0"), b"$-1\r\n"),
        (("BLMPOP", "0", "1", "none", "LEFT"), b"*-1\r\n"),
    ):
        h.run(client, *argv)
        assert h.raw(client) == expected
    assert h.manager.blocked_count == 0 and not h.manager.blocking_keys


@pytest.mark.parametrize(("argv", "expected"), [
    (("BLPOP", "k", "0.25"), b"*-1\r\n"),
    (("BLMPOP", "0.25", "1", "k", "RIGHT"), b"*-1\r\n"),
    # A null array, not the null bulk they reply inside MULTI: Redis's timeout reply for
    # every list command (replyToBlockedClientTimedOut).
    (("BLMOVE", "k", "d", "LEFT", "LEFT", "0.25"), b"*-1\r\n"),
    (("BRPOPLPUSH", "k", "d", "0.25"), b"*-1\r\n"),
])
def test_timeout_fires_once_with_the_null_reply(h: Harness, argv: tuple[str, ...],
                                                expected: bytes) -> None:
    client = h.client()
    h.run(client, *argv)
    h.loop.advance(249)
    assert client.blocked and h.raw(client) == b""
    h.loop.advance(1)
    assert h.raw(client) == expected
    assert h.manager.blocked_count == 0 and not h.manager.blocking_keys
    assert not h.loop.live()


def test_served_client_timer_is_cancelled(h: Harness) -> None:
    client = h.client()
    h.run(client, "BLMOVE", "src", "dst", "LEFT", "LEFT", "5")
    h.run(h.client(), "RPUSH", "src", "v")
    assert h.replies(client) == [b"v"]
    assert not h.loop.live()
    h.loop.advance(10_000)
    assert h.raw(client) == b""


def test_one_timer_serves_every_deadline_in_order(h: Harness) -> None:
    """Deadlines live in one heap with one loop timer at the earliest (Redis keeps one
    table of timeouts), not a timer per blocked client."""
    clients = {ms: h.client() for ms in (300, 100, 200)}
    for ms, client in clients.items():
        h.run(client, "BLPOP", f"k{ms}", str(ms / 1000))
    assert len(h.loop.live()) == 1
    timed_out = []
    for _ in range(3):
        h.loop.advance(100)
        timed_out += [ms for ms, c in clients.items() if h.raw(c) == b"*-1\r\n"]
        assert len(h.loop.live()) == (1 if len(timed_out) < 3 else 0)
    assert timed_out == [100, 200, 300]


def test_served_clients_do_not_pile_up_deadlines(h: Harness) -> None:
    """A served client leaves its heap entry behind; they are dropped before they outnumber
    the blocked clients by much, and a client re-run and blocked again adds none."""
    waiter, pusher, other = h.client(), h.client(), h.client()
    h.run(other, "BLPOP", "never", "100")
    for _ in range(500):
        h.clock.advance(1)  # every block has its own deadline
        h.run(waiter, "BLPOP", "k", "1")
        h.run(pusher, "SET", "k", "not a list")  # wakes nobody: a list command waits
        h.run(pusher, "DEL", "k")
        h.run(pusher, "RPUSH", "k", "v")
        assert h.replies(waiter) == [[b"k", b"v"]]
    assert len(h.manager._deadlines) <= 2 * 1 + 64 + 1
    # Left-over entries come due; only a client blocked with that deadline times out.
    h.run(waiter, "BLPOP", "k", "2")
    h.loop.advance(1999)
    assert waiter.blocked and h.raw(waiter) == b""
    h.loop.advance(1)
    assert h.raw(waiter) == b"*-1\r\n"
    h.loop.advance(100_000)
    assert h.raw(other) == b"*-1\r\n" and not h.manager._deadlines


def test_departed_clients_do_not_pile_up_deadlines(h: Harness) -> None:
    """A client that disconnects while blocked leaves its entry (and so itself) in the heap
    until its deadline; they are dropped before they outnumber the blocked clients by much."""
    stays = h.client()
    h.run(stays, "BLPOP", "k", "100")
    leaving = [h.client() for _ in range(300)]
    for client in leaving:
        h.run(client, "BLPOP", "k", "3600")
    for client in leaving:
        h.server.unlink_client(client)
    assert len(h.manager._deadlines) <= 2 * 1 + 64 + 1
    h.loop.advance(100_000)
    assert h.raw(stays) == b"*-1\r\n"


def test_blmove_chain_in_one_pass(h: Harness) -> None:
    mover, popper = h.client(), h.client()
    h.run(mover, "BLMOVE", "src", "dst", "RIGHT", "LEFT", "0")
    h.run(popper, "BLPOP", "dst", "0")
    pusher = h.client()
    process_command(h.server, pusher, [b"RPUSH", b"src", b"v"])  # no before_return yet
    assert h.replies(mover) == [b"v"] and h.replies(popper) == [[b"dst", b"v"]]
    assert h.manager.blocked_count == 0
    assert b"dst" not in h.server.keyspace[0].data


def test_pipeline_sees_element_already_taken(h: Harness) -> None:
    waiter, pusher = h.client(), h.client()
    h.run(waiter, "BLPOP", "k", "0")
    h.pipeline(pusher, ("LPUSH", "k", "a"), ("LLEN", "k"), ("LPUSH", "k", "b"), ("LLEN", "k"))
    # Redis serves ready keys after each command: the first LLEN is 0, the second sees "b".
    assert h.replies(pusher) == [1, 0, 1, 1]
    assert h.replies(waiter) == [[b"k", b"a"]]


def test_woken_client_pipeline_runs_after_the_writer_batch(h: Harness) -> None:
    waiter, pusher = h.client(), h.client()
    h.pipeline(waiter, ("BLPOP", "k", "0"), ("RPUSH", "k2", "from-waiter"), ("LLEN", "k2"))
    assert waiter.blocked and h.replies(waiter) == []
    h.pipeline(pusher, ("RPUSH", "k", "v"), ("LLEN", "k2"))
    # The waiter's pipelined commands run in before_return, after the pusher's batch.
    assert h.replies(pusher) == [1, 0]
    assert h.replies(waiter) == [[b"k", b"v"], 1, 1]


def test_client_on_two_ready_keys_served_once(h: Harness) -> None:
    waiter, pusher = h.client(), h.client()
    h.run(waiter, "BLPOP", "a", "b", "0")
    # Two writes before the next pass, as EXEC makes them: call() does not serve keys.
    for argv in ([b"RPUSH", b"b", b"1"], [b"RPUSH", b"a", b"2"]):
        call(h.server, pusher, h.server.table[argv[0].lower()], argv)
    assert [k for _, k in h.manager.ready_keys] == [b"b", b"a"]
    h.server.before_return()
    # Served once. The command is re-run, so it pops the first key in argument order (Redis
    # 7.2+ re-executes the same way; 7.0 popped from the first key signalled, "b").
    assert h.replies(waiter) == [[b"a", b"2"]]
    assert h.manager.blocked_count == 0
    assert list(h.server.keyspace[0].get(b"b")) == [b"1"]


def test_disconnect_releases_everything(h: Harness) -> None:
    gone, stays, pusher = h.client(), h.client(), h.client()
    h.run(gone, "BLPOP", "k", "other", "1")
    h.run(stays, "BLPOP", "k", "0")
    h.server.unlink_client(gone)
    assert h.manager.blocked_count == 1
    assert (0, b"other") not in h.manager.blocking_keys
    assert len(h.loop.live()) == 0
    h.run(pusher, "RPUSH", "k", "v")
    assert h.replies(stays) == [[b"k", b"v"]]
    assert h.raw(gone) == b""


def test_client_unblock_timeout_and_error(h: Harness) -> None:
    a, b, control = h.client(), h.client(), h.client()
    h.run(a, "BRPOP", "k", "0")
    h.run(b, "BRPOPLPUSH", "k", "d", "0")
    h.run(control, "CLIENT", "UNBLOCK", str(a.id))
    h.run(control, "CLIENT", "UNBLOCK", str(b.id), "ERROR")
    h.run(control, "CLIENT", "UNBLOCK", str(b.id))
    assert h.replies(control) == [1, 1, 0]
    assert h.raw(a) == b"*-1\r\n"
    assert h.raw(b) == b"-" + errors.UNBLOCKED.encode() + b"\r\n"
    h.run(b, "BRPOPLPUSH", "k", "d", "0")
    h.run(control, "CLIENT", "UNBLOCK", str(b.id), "TIMEOUT")
    assert h.raw(b) == b"*-1\r\n"
    assert h.manager.blocked_count == 0 and not h.manager.blocking_keys


@pytest.mark.parametrize(("blocking", "push", "logged"), [
    (("BLPOP", "none", "k", "0"), ("RPUSH", "k", "v"), [b"LPOP", b"k"]),
    (("BRPOP", "k", "0"), ("RPUSH", "k", "v"), [b"RPOP", b"k"]),
    (("BLMPOP", "0", "1", "k", "LEFT", "COUNT", "5"), ("RPUSH", "k", "a", "b"),
     [b"LPOP", b"k", b"2"]),
    (("BLMOVE", "k", "d", "left", "RIGHT", "0"), ("RPUSH", "k", "v"),
     [b"LMOVE", b"k", b"d", b"left", b"RIGHT"]),
    (("BRPOPLPUSH", "k", "d", "0"), ("RPUSH", "k", "v"), [b"RPOPLPUSH", b"k", b"d"]),
])
def test_served_blocking_pop_is_logged_as_its_non_blocking_form(
        h: Harness, blocking: tuple[str, ...], push: tuple[str, ...], logged: list[bytes]) -> None:
    aof = RecordingAof()
    h.server.aof = aof
    waiter = h.client()
    h.run(waiter, *blocking)
    assert aof.logged == []  # blocking logs nothing
    h.run(h.client(), *push)
    assert aof.logged == [[a.encode() for a in push], logged]
    aof.logged.clear()
    h.run(h.client(), *push)
    h.run(waiter, *blocking)  # served at once: logged the same way
    assert aof.logged[-1] == logged


def test_lmpop_is_logged_with_the_count_popped(h: Harness) -> None:
    aof = RecordingAof()
    h.server.aof = aof
    client = h.client()
    h.run(client, "RPUSH", "k", "a", "b", "c")
    h.run(client, "LMPOP", "2", "none", "k", "RIGHT", "COUNT", "10")
    assert aof.logged[-1] == [b"RPOP", b"k", b"3"]


def _install_probe(h: Harness, acl: A, unblock_on_nokey: bool = False) -> None:
    """A test-only command: BLOCKPROBE key replies once the key holds b"go", else blocks.
    Strings make no key ready (only lists and streams do), so tests signal it themselves."""

    def probe(ctx: Any, args: Any) -> Any:
        key = args.next_key()
        if ctx.db.get(key) == b"go":
            return b"served"
        return ctx.block([key], 1000, NULL_ARRAY, unblock_on_nokey=unblock_on_nokey)

    row = cmd("blockprobe", 2, WRITE, acl, key_at(1, RW), probe)
    h.server.table[b"blockprobe"] = row
    h.server.command_names[b"blockprobe"] = row


def test_blocked_type_follows_the_command_category(h: Harness) -> None:
    """Cmd.btype: the key type that can serve a blocked command (Redis's btype)."""
    table = h.server.table
    assert [table[n].btype for n in (b"blpop", b"blmove", b"xread", b"xreadgroup", b"get")] \
        == [b"list", b"list", b"stream", b"stream", None]


def test_reblocked_client_keeps_deadline_and_goes_last(h: Harness) -> None:
    _install_probe(h, A.STRING)  # no blocked type: any signal re-runs it
    first, second = h.client(), h.client()
    h.run(first, "BLOCKPROBE", "k")
    h.loop.advance(400)
    h.run(second, "BLOCKPROBE", "k")
    deadline = first.bstate.deadline_ms
    h.server.keyspace[0].set(b"k", b"not yet")
    h.manager.signal_key_as_ready(h.server.keyspace[0], b"k")
    h.server.before_return()
    assert first.blocked and first.bstate.deadline_ms == deadline
    assert list(h.manager.blocking_keys[(0, b"k")]) == [first, second]  # both re-ran, in order
    assert h.manager.blocked_count == 2
    h.loop.advance(600)  # first's original second is up; second has 400 ms left
    assert h.raw(first) == b"*-1\r\n" and second.blocked
    h.server.keyspace[0].set(b"k", b"go")
    h.manager.signal_key_as_ready(h.server.keyspace[0], b"k")
    h.server.before_return()
    assert h.replies(second) == [b"served"] and h.manager.blocked_count == 0


def test_reruns_that_block_again_add_no_deadline(h: Harness) -> None:
    _install_probe(h, A.STRING)  # no blocked type: any signal re-runs it
    client, other = h.client(), h.client()
    h.run(other, "BLOCKPROBE", "elsewhere")  # a second deadline, due at the same time
    h.run(client, "BLOCKPROBE", "k")
    for i in range(200):
        h.server.keyspace[0].set(b"k", b"not yet %d" % i)
        h.manager.signal_key_as_ready(h.server.keyspace[0], b"k")
        h.server.before_return()
        assert client.blocked
    assert len(h.manager._deadlines) == 2 and len(h.loop.live()) == 1
    h.loop.advance(1000)
    assert h.raw(client) == h.raw(other) == b"*-1\r\n" and not h.loop.live()


def test_unblock_on_nokey_reruns_when_the_key_goes(h: Harness) -> None:
    """Current Redis re-runs an unblock_on_nokey client whose key was deleted or retyped."""
    _install_probe(h, A.STREAM, unblock_on_nokey=True)
    waiter, writer = h.client(), h.client()
    h.server.keyspace[0].set(b"k", b"wait")
    h.run(waiter, "BLOCKPROBE", "k")
    h.server.keyspace[0].delete(b"k")
    writer.modified(b"k")
    h.server.before_return()
    # The probe blocks again when the key does not hold b"go": it was re-run, in place.
    assert waiter.blocked and list(h.manager.blocking_keys[(0, b"k")]) == [waiter]
    h.server.keyspace[0].set(b"k", b"go")
    writer.modified(b"k")
    h.server.before_return()
    assert h.replies(waiter) == [b"served"] and h.manager.blocked_count == 0


# -- XREADGROUP readers: shared ready checks, reused parses ---------------------------------

def _readgroup(h: Harness, client: Client, group: str, name: str, block: str = "0") -> None:
    h.run(client, "XREADGROUP", "GROUP", group, name, "COUNT", "10", "BLOCK", block,
          "STREAMS", "s", ">")


def test_one_entry_serves_the_first_reader_of_each_group(h: Harness) -> None:
    """Readers of g1 and g2 interleaved in one queue: after g1's first reader takes the entry,
    g1's answer "nothing new" is shared with its other readers, and must not be given to g2's
    (nor survive a re-run). As in Redis 8.6, where every reader is re-run, the readers left
    waiting are seen at the time of the write and keep their order."""
    writer = h.client()
    h.run(writer, "XGROUP", "CREATE", "s", "g1", "$", "MKSTREAM")
    h.run(writer, "XGROUP", "CREATE", "s", "g2", "$")
    h.replies(writer)
    readers = [(h.client(), group, f"c{i}")
               for i, group in enumerate(["g1", "g1", "g2", "g2", "g1", "g2"])]
    for client, group, name in readers:
        _readgroup(h, client, group, name)
    h.clock.advance(5)
    h.run(writer, "XADD", "s", "1-1", "f", "v")
    served = [name for client, _, name in readers if h.replies(client)]
    assert served == ["c0", "c2"]  # the first reader of g1, the first of g2
    assert list(h.manager.blocking_keys[(0, b"s")]) == [c for c, _, n in readers
                                                        if n not in served]
    stream = h.server.keyspace[0].peek(b"s")
    assert {name: stream.groups[group.encode()].consumers[name.encode()].seen_time
            for _, group, name in readers} == dict.fromkeys(
                ["c0", "c1", "c2", "c3", "c4", "c5"], h.clock.now_ms())
    # Served readers block again at the back; the next entry goes to the waiting ones, FIFO.
    for client, group, name in readers:
        if name in served:
            _readgroup(h, client, group, name)
    h.run(writer, "XADD", "s", "1-2", "f", "v")
    assert [name for client, _, name in readers if h.replies(client)] == ["c1", "c3"]


def test_readers_spared_a_rerun_go_back_as_if_rerun(h: Harness) -> None:
    """A reader of a group with nothing new is spared its re-run, but goes where the re-run
    would have put it: to the back in turn with readers that were re-run and blocked again (a
    CLAIM reader), also on the other key it reads."""
    writer = h.client()
    h.run(writer, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    h.run(writer, "XGROUP", "CREATE", "t", "g", "$", "MKSTREAM")
    first, claim, plain, both, other = (h.client() for _ in range(5))
    _readgroup(h, first, "g", "first")
    h.run(claim, "XREADGROUP", "GROUP", "g", "claim", "CLAIM", "100000000", "BLOCK", "0",
          "STREAMS", "s", ">")
    _readgroup(h, plain, "g", "plain")
    h.run(both, "XREADGROUP", "GROUP", "g", "both", "BLOCK", "0", "STREAMS", "t", "s",
          ">", ">")
    h.run(other, "XREADGROUP", "GROUP", "g", "other", "BLOCK", "0", "STREAMS", "t", ">")
    h.replies(writer)
    h.clock.advance(5000)
    h.server.keyspace.update_lru_clock()
    h.run(writer, "XADD", "s", "1-1", "f", "v")  # "first" takes it; the others get nothing
    assert h.replies(first) and not any(h.replies(c) for c in (claim, plain, both, other))
    db = h.server.keyspace[0]
    assert db.word(b"t") == db.access.lru_clock  # read by the re-run "both" was spared
    assert list(h.manager.blocking_keys[(0, b"s")]) == [claim, plain, both]
    assert list(h.manager.blocking_keys[(0, b"t")]) == [other, both]
    # The next entry goes to the reader that was re-run first, as on Redis.
    h.run(writer, "XADD", "s", "1-2", "f", "v")
    assert [bool(h.replies(c)) for c in (claim, plain, both)] == [True, False, False]


def test_a_repeated_readgroup_looks_its_group_up_again(h: Harness) -> None:
    """The connection reuses its last XREADGROUP parse for an equal request, but the key and
    group lookups are redone: a destroyed group is NOGROUP, a replaced key WRONGTYPE."""
    admin, reader = h.client(), h.client()
    h.run(admin, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    h.run(admin, "XADD", "s", "1-1", "f", "v")
    argv = ("XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", ">")
    h.run(reader, *argv)
    assert h.replies(reader) == [[[b"s", [[b"1-1", [b"f", b"v"]]]]]]
    assert reader.parse_memo is not None  # what the next equal request reuses
    h.run(reader, *argv)
    assert h.replies(reader) == [None]
    h.run(admin, "XGROUP", "DESTROY", "s", "g")
    h.run(reader, *argv)
    assert h.replies(reader)[0].args[0].startswith("NOGROUP No such key 's' or consumer group 'g'")
    h.run(admin, "DEL", "s")
    h.run(admin, "SET", "s", "x")
    h.run(reader, *argv)
    assert h.replies(reader)[0].args[0].startswith("WRONGTYPE")


def test_a_repeated_block_is_checked_against_the_clock_again(h: Harness) -> None:
    """BLOCK's deadline must fit in 64 bits; a parse reused later is checked against the
    clock of its own run."""
    admin, reader = h.client(), h.client()
    h.run(admin, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    block = str((1 << 63) - 1 - h.clock.now_ms() - 1000)  # fits for one more second
    _readgroup(h, reader, "g", "c", block)
    assert reader.blocked
    h.run(admin, "CLIENT", "UNBLOCK", str(reader.id))
    assert h.replies(reader) == [None]
    h.clock.advance(2000)
    _readgroup(h, reader, "g", "c", block)
    assert h.replies(reader)[0].args[0] == "ERR timeout is out of range"
    assert not reader.blocked


# -- timeouts ------------------------------------------------------------------------------

NOW = 1_700_000_000_000


@pytest.mark.parametrize(("raw", "ms"), [
    (b"0", 0), (b"-0", 0), (b"-0.0001", 0), (b"0.1", 100), (b"1.5", 1500), (b"100", 100_000),
    (b"1e-9", 1), (b"0.0005", 1), (b".5", 500), (b"5.", 5000), (b"+1", 1000), (b"1.5e3", 1_500_000),
    (b"0x10", 16_000),
    # x87 long double arithmetic, as redis-server: ceill(t * 1000) lands one ms up.
    (b"-0.001", 0), (b"9.2e15", 9_200_000_000_000_000_000),
    (b"0.001", 1), (b"0.501", 502), (b"8.1", 8101), (b"2.004", 2005), (b"0.0011", 2),
])
def test_parse_timeout_values(raw: bytes, ms: int) -> None:
    assert parse_timeout(raw, NOW) == ms


@pytest.mark.parametrize(("raw", "error"), [
    (b"abc", errors.TIMEOUT_NOT_FLOAT), (b"", errors.TIMEOUT_NOT_FLOAT),
    (b" 1", errors.TIMEOUT_NOT_FLOAT), (b"1 ", errors.TIMEOUT_NOT_FLOAT),
    (b"nan", errors.TIMEOUT_NOT_FLOAT), (b"1e", errors.TIMEOUT_NOT_FLOAT),
    (b"1_0", errors.TIMEOUT_NOT_FLOAT), (b"1" * 5120, errors.TIMEOUT_NOT_FLOAT),
    (b"1e5000", errors.TIMEOUT_NOT_FLOAT), (b"1e-5000", errors.TIMEOUT_NOT_FLOAT),
    (b"1e999999999999", errors.TIMEOUT_NOT_FLOAT),
    (b"-1", errors.NOT_POSITIVE_TIMEOUT), (b"-0.002", errors.NOT_POSITIVE_TIMEOUT),
    (b"-inf", errors.NOT_POSITIVE_TIMEOUT),
    # Redis 7.2+ wording; 7.0 overflows in C and says "timeout is negative".
    (b"inf", errors.TIMEOUT_OUT_OF_RANGE), (b"1e16", errors.TIMEOUT_OUT_OF_RANGE),
    (b"9.223372e15", errors.TIMEOUT_OUT_OF_RANGE),
])
def test_parse_timeout_errors(raw: bytes, error: str) -> None:
    with pytest.raises(errors.CommandError) as e:
        parse_timeout(raw, NOW)
    assert e.value.message == error.encode()
