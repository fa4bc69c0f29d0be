"""Clients blocked on keys, served the Redis way (mirrors ``blocked.c``).

* ``block_for_keys``: a handler that cannot answer yet parks its client in a FIFO per key
  (``blocking_keys[(db, key)]``), and its deadline in one heap for all blocked clients (Redis
  keeps a radix tree of timeouts). One loop timer is armed for the earliest deadline; when it
  fires, every client whose deadline has come gets its timeout reply, in deadline order. No
  future, task or timer per waiter; a served or departed client leaves its heap entry behind,
  skipped when it comes up, and all such entries are dropped once the heap holds more than
  twice as many entries as clients blocked with a deadline, plus 64 (checked when a client
  blocks or disconnects).
* ``signal_key_as_ready``: every write to a key (``Server.key_modified``) that has waiters
  appends it to ``ready_keys`` once.
* ``handle_clients_blocked_on_keys``: runs right after every command that is not queued in
  MULTI (``dispatch.process_command``, as Redis 7's ``processCommand``) and from
  ``Server.before_return`` (Redis's ``beforeSleep``). For each ready key, the clients that were
  waiting when the pass began are considered in FIFO order; a client is woken (its command
  re-run, as Redis 7.2's ``handleClientsBlockedOnKey``) only if the key now holds the type it
  waits for (``btype``: a list for BLPOP, a stream for XREAD), or if it asked to hear about a
  deleted key (XREADGROUP). Others keep their place: DEL, FLUSHALL or SET on a key a BLPOP
  waits on leave it blocked, first in line. A client that blocks again goes to the back of the
  queue and keeps its deadline. Writes made by re-run commands (BLMOVE) signal more keys; the
  loop runs until no key is ready. Woken clients' pipelined input is resumed later, by
  ``Server.process_unblocked_clients`` (Redis's ``processUnblockedClients`` in beforeSleep).
* ``unblock_client``: timeout, CLIENT UNBLOCK, disconnect.
* A client may block on no key at all: WAIT and WAITAOF (``server/replication.py``), which
  only a timeout, CLIENT UNBLOCK, or for WAITAOF an fsync can end.
* ``wake_when_claimable``: a blocked XREADGROUP ... CLAIM reader's key is also signalled
  when a pending entry there becomes idle enough to claim (Redis 8.4+), by one timer.
* Inside EXEC (MULTI) a command never blocks: ``block_for_keys`` returns the timeout reply.

So a pipeline ``LPUSH k v`` + ``LLEN k`` from one client, with a BLPOP waiting on ``k``, gets
``1`` then ``0``, as on Redis; the woken client's reply goes out in the same loop iteration
as the write that woke it.
"""

from __future__ import annotations

from collections import deque
from heapq import heapify, heappop, heappush
from typing import TYPE_CHECKING, Any

from sluice.commands.cmdlatency import record
from sluice.commands.errors import UNBLOCKED_ERROR as UNBLOCKED_ERROR  # re-exported
from sluice.commands.reply import BLOCKED, Reply
from sluice.protocol import ErrorReply

from .replication import AofWait

if TYPE_CHECKING:
    import asyncio

    from sluice.commands.context import Command, Context
    from sluice.commands.spec import ReadyCheck
    from sluice.storage.keyspace import Database

    from .app import Server
    from .client import Client


BKey = tuple[int, bytes]  # (db id, key)
_BLOCKABLE = frozenset((b"list", b"zset", b"stream"))  # the types blocked clients wait for


class BlockState:
    """Why and until when a client is blocked (Redis's ``blockingState``)."""

    __slots__ = ("keys", "db", "deadline_ms", "on_timeout", "argv", "cmd",
                 "unblock_on_nokey", "key_types", "btype", "ready_check", "memo")

    def __init__(self, db: Database, keys: list[bytes], deadline_ms: int, on_timeout: Reply,
                 argv: list[bytes], unblock_on_nokey: bool, btype: bytes | None = None,
                 cmd: Command | None = None, memo: object = None) -> None:
        self.db = db
        self.keys = keys  # distinct keys the client waits on
        self.deadline_ms = deadline_ms  # unix ms, 0 = forever
        self.on_timeout = on_timeout  # reply on timeout / CLIENT UNBLOCK TIMEOUT
        self.argv = argv  # the command to run again when a key is ready
        self.cmd = cmd  # its table entry (the subcommand's for a container)
        self.unblock_on_nokey = unblock_on_nokey  # XREADGROUP: deleted/retyped key -> re-run
        self.key_types: dict[bytes, bytes] = {}  # type of each key when the client blocked
        self.btype = btype  # the key type that can serve the command; None: any
        # The handler's optional ``ready_check(client, db, key, notes) -> bool``: False means
        # a re-run could only block again, and the check has done what it would have done
        # (BlockingManager._serve_key).
        self.ready_check: ReadyCheck[Context] | None = None if cmd is None else cmd.ready_check
        self.memo = memo  # the handler's own, for its re-runs (ctx.block's ``memo``)


class BlockingManager:
    __slots__ = ("server", "blocking_keys", "ready_keys", "_ready_set", "blocked_count",
                 "_deadlines", "_queued", "_timed", "_seq", "_timer", "_timer_at",
                 "_claim_wakes", "_claim_timer", "_claim_at")

    def __init__(self, server: Server) -> None:
        self.server = server
        self.blocking_keys: dict[BKey, deque[Client]] = {}  # key -> FIFO of waiting clients
        self.ready_keys: list[tuple[Database, bytes]] = []  # keys written since the last pass
        self._ready_set: set[BKey] = set()
        self.blocked_count = 0  # INFO clients: blocked_clients
        # (deadline ms, sequence, client): a heap of the clients blocked with a timeout. An
        # entry is live while the client is blocked with that deadline (a re-run that blocks
        # again keeps it); the sequence keeps equal deadlines in the order they blocked.
        self._deadlines: list[tuple[int, int, Client]] = []
        self._queued: dict[Client, int] = {}  # client -> the deadline its heap entry has
        self._timed = 0  # blocked clients with a deadline; none: heap and timer are cleared
        self._seq = 0
        self._timer: asyncio.TimerHandle | None = None  # fires at _deadlines' earliest
        self._timer_at = 0
        # XREADGROUP ... CLAIM readers blocked on a key: when a pending entry there becomes
        # claimable (Redis 8.4's stream_claim_pending_keys), the key is signalled ready.
        self._claim_wakes: dict[BKey, tuple[Database, int]] = {}  # key -> (db, unix ms)
        self._claim_timer: asyncio.TimerHandle | None = None
        self._claim_at = 0

    def block_for_keys(self, client: Client, keys: list[bytes], timeout_ms: int,
                       on_timeout: Reply, argv: list[bytes] | None,
                       unblock_on_nokey: bool, memo: object = None) -> Reply:
        """Park ``client`` on ``keys``; returns ``BLOCKED`` (or ``on_timeout`` inside EXEC)."""
        if client.in_exec:
            # MULTI never blocks (Redis's CLIENT_DENY_BLOCKING): answer as a timeout would.
            return on_timeout
        old = client.bstate
        if old is not None:  # re-blocked by a re-run: keep the original deadline
            deadline = old.deadline_ms
        elif timeout_ms > 0:
            deadline = client.now_ms() + timeout_ms
        else:
            deadline = 0
        db = client.db
        distinct = keys if len(keys) == 1 else list(dict.fromkeys(keys))
        cmd = client.cmd
        state = BlockState(db, distinct, deadline, on_timeout, argv or client.argv,
                           unblock_on_nokey, None if cmd is None else cmd.btype, cmd, memo)
        if unblock_on_nokey:
            state.key_types = {k: db.type_of(k) for k in distinct}
        # A re-run client was detached from its queues by _rerun before the call.
        client.bstate = state
        self.blocked_count += 1
        for key in distinct:
            self.blocking_keys.setdefault((db.id, key), deque()).append(client)
        if deadline:
            self._timed += 1
            if self._queued.get(client) != deadline:  # not re-blocked with its entry in place
                self._queued[client] = deadline
                self._seq += 1
                heappush(self._deadlines, (deadline, self._seq, client))
                if self._timer is None or deadline < self._timer_at:
                    self._arm(deadline)
                elif len(self._deadlines) > 2 * self._timed + 64:
                    self._drop_stale()
        return BLOCKED

    def signal_write(self, db: Database, key: bytes) -> None:
        """A write to ``key`` (``Server.key_modified``). Redis queues the key only when it now
        holds a type clients block on (a list or a stream: created, pushed to, XADD), or when
        it has XREADGROUP readers, who hear of a deletion or a type change; a string written
        over a key a BLPOP waits on queues nothing, and so does not change the order in
        which the keys a transaction made ready are served."""
        queue = self.blocking_keys.get((db.id, key))
        if queue and (db.type_of(key) in _BLOCKABLE
                      or any(c.bstate is not None and c.bstate.unblock_on_nokey
                             for c in queue)):
            self.signal_key_as_ready(db, key)

    def signal_deleted_key_as_ready(self, db: Database, key: bytes) -> None:
        """A value replaced in place (Redis's ``setKey`` over an existing key, as the STORE
        commands do): Redis signals only the old value's deletion
        (``signalDeletedKeyAsReady``), which concerns the clients that asked to hear of a
        deleted key (XREADGROUP); a sorted set stored over a key therefore does not serve
        the BZPOPMIN clients waiting there, unless such a reader makes the key ready."""
        queue = self.blocking_keys.get((db.id, key))
        if queue and any(c.bstate is not None and c.bstate.unblock_on_nokey for c in queue):
            self.signal_key_as_ready(db, key)

    def signal_key_as_ready(self, db: Database, key: bytes) -> None:
        bkey = (db.id, key)
        if bkey in self.blocking_keys and bkey not in self._ready_set:
            self._ready_set.add(bkey)
            self.ready_keys.append((db, key))

    def signal_all_in_db(self, db: Database) -> None:
        """FLUSHDB / SWAPDB: every blocked key of the database is ready."""
        for db_id, key in list(self.blocking_keys):
            if db_id == db.id:
                self.signal_key_as_ready(db, key)

    def handle_clients_blocked_on_keys(self) -> None:
        """Serve every ready key's waiters, FIFO, until no key is ready.

        Never while a script runs (a client served from a busy script's hook may get here):
        the keys stay ready and are served after it, as Redis does not serve blocked clients
        from processEventsWhileBlocked."""
        if self.server.scripting.run is not None:
            return
        while self.ready_keys:
            ready, self.ready_keys = self.ready_keys, []
            self._ready_set.clear()
            for db, key in ready:
                queue = self.blocking_keys.get((db.id, key))
                if queue:
                    self._serve_key(db, key, queue)

    def _serve_key(self, db: Database, key: bytes, queue: deque[Client]) -> None:
        """Serve the clients of ``queue`` as Redis 7.2+'s ``handleClientsBlockedOnKey`` does.

        In FIFO order, each client waiting when the pass began whose command the key's value
        may now serve (the type it waits for, or any change at all for XREADGROUP, which
        asked to hear of a deleted key) has its command run again: it gets its reply, or
        blocks again at the back of its keys' queues, keeping its deadline. A client waiting
        for another type keeps its place.

        A handler's ``ready_check(client, db, key, notes)`` may spare a re-run that could only
        block again: it then does what that re-run would have done (XREADGROUP: its consumer
        is seen now) and returns False, and the client goes to the back as if it had blocked
        again. ``notes`` is the checks' memo of the keys' state, cleared by every re-run, so
        ten blocked readers of one group need one look at the group.
        """
        key_type = db.type_of(key)  # again after each re-run, which may change it
        notes: dict[Any, Any] = {}
        waiting = list(queue)
        rerun: set[Client] = set()  # re-run, or spared a re-run as if it had blocked again
        # Those spared stay in their places meanwhile; the queue needs reordering only if one
        # of them is followed by a waiter that keeps its place, or follows one re-run.
        spared = reran = reorder = False
        for client in waiting:
            state = client.bstate
            if state is None:
                continue  # unblocked meanwhile
            if state.unblock_on_nokey:
                if key_type != state.key_types.get(key):
                    # Key deleted or retyped: re-run, so XREADGROUP answers its own NOGROUP
                    # or WRONGTYPE (current Redis; 7.0 sent "UNBLOCKED the stream key no
                    # longer exists", which 7.2 dropped with command reprocessing).
                    rerun.add(client)
                    self._rerun(client)
                    reran = True
                    key_type = db.type_of(key)
                    notes.clear()
                    continue
            elif state.btype is not None and key_type != state.btype:
                reorder = reorder or spared
                continue
            rerun.add(client)
            check = state.ready_check
            if check is not None and not check(client, db, key, notes):
                spared = True
                reorder = reorder or reran
                if len(state.keys) > 1:
                    self._to_the_back(client, state, key)
                continue
            self._rerun(client)
            reran = True
            key_type = db.type_of(key)
            notes.clear()
        if reorder:
            # As if those spared had been re-run: behind the waiters that kept their places,
            # in turn with those that were re-run and blocked again.
            now = self.blocking_keys.get((db.id, key))
            if now:
                present = list(now)
                now.clear()
                now.extend(c for c in present if c not in rerun)
                inside = set(present)
                now.extend(c for c in waiting if c in rerun and c in inside)

    def _to_the_back(self, client: Client, state: BlockState, key: bytes) -> None:
        """A client spared a re-run goes to the back of its other keys' queues, as when it
        blocks again (``_serve_key`` puts it back on ``key`` itself)."""
        for other in state.keys:
            if other != key:
                queue = self.blocking_keys[(state.db.id, other)]
                queue.remove(client)
                queue.append(client)

    def _rerun(self, client: Client) -> None:
        """Run the blocked command again; it either replies or blocks again."""
        state = client.bstate
        assert state is not None
        argv = state.argv
        # Detach, but keep bstate during the call so a re-block keeps the deadline.
        self._detach(client)
        assert state.cmd is not None  # only a command's handler blocks
        self.server.call_unblocked(client, state.cmd, argv)
        if client.bstate is state:  # did not block again (_detach already counted it out)
            client.bstate = None
        self.server.queue_unblocked(client)

    def _detach(self, client: Client) -> None:
        """Remove the client from its keys' queues (the state itself stays)."""
        state = client.bstate
        if state is None:
            return
        for key in state.keys:
            bkey = (state.db.id, key)
            queue = self.blocking_keys.get(bkey)
            if queue is not None:
                try:
                    queue.remove(client)
                except ValueError:
                    pass
                if not queue:
                    del self.blocking_keys[bkey]
        self.blocked_count -= 1
        if type(state.memo) is AofWait:  # WAITAOF, blocked on no key
            self.server.repl.forget(client)
        if state.deadline_ms:
            self._timed -= 1
            if not self._timed:  # every entry is stale
                self._deadlines.clear()
                self._queued.clear()
                self._arm(0)

    def unblock_client(self, client: Client, reply: Reply) -> None:
        """Unblock without re-running: send ``reply`` (timeout, CLIENT UNBLOCK, errors).

        The command is done: its call is counted now (one per command, as Redis's
        updateStatsOnUnblock; a call that blocks is not counted), an error reply as failed."""
        state = client.bstate
        if state is None:
            return
        self._detach(client)
        client.bstate = None
        cmd = state.cmd
        if cmd is not None:
            cmd.calls += 1
            cmd.usec += client.blocked_usec
            record(cmd, client.blocked_usec)
            client.commands_processed += 1
            if type(reply) is ErrorReply:
                cmd.failed_calls += 1
                self.server.count_error(reply)
            if client.blocked_usec >= self.server.slow_threshold_us:
                self.server.slow_command(client, cmd, state.argv, client.blocked_usec)
        client.blocked_usec = 0
        client.add_reply(reply)  # None is a reply too: BLMOVE's timeout is a null bulk
        self.server.queue_unblocked(client)

    def disconnect(self, client: Client) -> None:
        if client.bstate is not None:
            self._detach(client)
            client.bstate = None
            # Its heap entry holds the whole client until its deadline: not too many of those.
            if len(self._deadlines) > 2 * self._timed + 64:
                self._drop_stale()

    # -- CLAIM readers --------------------------------------------------------------------

    def wake_when_claimable(self, db: Database, keys: list[bytes], at_ms: int) -> None:
        """Signal ``keys`` ready at ``at_ms`` (unix ms), when a pending entry becomes idle
        enough for a blocked XREADGROUP ... CLAIM reader; a key keeps its earliest time.

        Redis 8.4+ checks these times before each sleep (``handleClaimableStreamEntries``),
        so its wake-up comes on the next loop iteration after the time; one timer for the
        earliest does the same here without polling. The readers then re-run: one that can
        claim now is served, the others block again (and register their own time)."""
        wakes = self._claim_wakes
        for key in keys:
            bkey = (db.id, key)
            old = wakes.get(bkey)
            if old is None or at_ms < old[1]:
                wakes[bkey] = (db, at_ms)
        self._arm_claims()

    def _arm_claims(self) -> None:
        loop = self.server.loop
        if not self._claim_wakes or loop is None:
            return
        earliest = min(at for _, at in self._claim_wakes.values())
        if self._claim_timer is not None:
            if self._claim_at <= earliest:
                return
            self._claim_timer.cancel()
        delay = max(0.0, (earliest - self.server.keyspace.clock.now_ms()) / 1000.0)
        self._claim_timer = loop.call_at(loop.time() + delay, self._claims_due)
        self._claim_at = earliest

    def _claims_due(self) -> None:
        self._claim_timer = None
        now = max(self.server.keyspace.clock.now_ms(), self._claim_at)
        for bkey, (db, at) in list(self._claim_wakes.items()):
            if at <= now:
                del self._claim_wakes[bkey]
                self.signal_key_as_ready(db, bkey[1])  # no one waiting any more: nothing
        self._arm_claims()
        self.server.before_return()

    # -- timeouts ---------------------------------------------------------------------------

    def _arm(self, deadline: int) -> None:
        """Have the one timer fire at ``deadline`` (unix ms); 0: no timer."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if deadline:
            loop = self.server.loop
            delay = max(0.0, (deadline - self.server.keyspace.clock.now_ms()) / 1000.0)
            self._timer = loop.call_at(loop.time() + delay, self._timed_out)
            self._timer_at = deadline

    def _timed_out(self) -> None:
        """The timer: time out every client whose deadline has come, earliest first.

        The deadline it was armed for has come by the loop's clock, whatever the server's
        says (a virtual clock in tests; the loop's can run a fraction of a millisecond
        ahead), as when each client had its own timer."""
        self._timer = None
        now = max(self.server.keyspace.clock.now_ms(), self._timer_at)
        heap = self._deadlines
        queued = self._queued
        while heap and heap[0][0] <= now:
            deadline, _, client = heappop(heap)
            if queued.get(client) == deadline:
                del queued[client]
            state = client.bstate
            if state is not None and state.deadline_ms == deadline:
                self.unblock_client(client, state.on_timeout)
        while heap and not _live(heap[0]):
            deadline, _, client = heappop(heap)
            if queued.get(client) == deadline:
                del queued[client]
        if heap and self._timer is None:
            self._arm(heap[0][0])
        self.server.before_return()

    def _drop_stale(self) -> None:
        """Forget the heap entries of clients served or gone since they blocked."""
        self._deadlines = [e for e in self._deadlines if _live(e)]
        heapify(self._deadlines)
        self._queued = {client: deadline for deadline, _, client in self._deadlines}


def _live(entry: tuple[int, int, Client]) -> bool:
    """Is the client of this deadline entry still blocked with that deadline?"""
    state = entry[2].bstate
    return state is not None and state.deadline_ms == entry[0]
