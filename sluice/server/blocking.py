"""Clients blocked on keys, served the Redis way (mirrors ``blocked.c``).

* ``block_for_keys``: a handler that cannot answer yet parks its client in a FIFO per key
  (``blocking_keys[(db, key)]``) and arms one timer for the deadline. No future or task per
  waiter.
* ``signal_key_as_ready``: every write to a key (``Server.key_modified``) that has waiters
  appends it to ``ready_keys`` once.
* ``handle_clients_blocked_on_keys``: runs from ``Server.before_return``, i.e. before the loop
  goes back to waiting for I/O. For each ready key, the clients that were waiting when the pass
  began are unblocked in FIFO order and their command is re-run; a client that blocks again
  goes to the back of the queue and keeps its deadline. Writes made by re-run commands (BLMOVE)
  signal more keys; the loop runs until no key is ready.
* ``unblock_client``: timeout, CLIENT UNBLOCK, disconnect.

The woken client's reply is written in the same loop iteration as the write that woke it.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

from sluice.protocol import ErrorReply

if TYPE_CHECKING:
    import asyncio

    from sluice.storage.keyspace import Database

    from .app import Server
    from .client import Blocked, Client

UNBLOCKED_ERROR = ErrorReply(b"UNBLOCKED client unblocked via CLIENT UNBLOCK")
NOKEY_ERROR = ErrorReply(b"UNBLOCKED the stream key no longer exists")

BKey = tuple[int, bytes]  # (db id, key)


class BlockState:
    """Why and until when a client is blocked (Redis's ``blockingState``)."""

    __slots__ = ("keys", "db", "deadline_ms", "timer", "on_timeout", "argv", "unblock_on_nokey",
                 "key_types")

    def __init__(self, db: Database, keys: list[bytes], deadline_ms: int, on_timeout: Any,
                 argv: list[bytes], unblock_on_nokey: bool) -> None:
        self.db = db
        self.keys = keys  # distinct keys the client waits on
        self.deadline_ms = deadline_ms  # unix ms, 0 = forever
        self.timer: asyncio.TimerHandle | None = None
        self.on_timeout = on_timeout  # reply on timeout / CLIENT UNBLOCK TIMEOUT
        self.argv = argv  # the command to run again when a key is ready
        self.unblock_on_nokey = unblock_on_nokey  # XREADGROUP: deleted key -> error
        self.key_types: dict[bytes, bytes] = {}  # type of each key when the client blocked


class BlockingManager:
    __slots__ = ("server", "blocking_keys", "ready_keys", "_ready_set", "blocked_count")

    def __init__(self, server: Server) -> None:
        self.server = server
        self.blocking_keys: dict[BKey, deque[Client]] = {}  # key -> FIFO of waiting clients
        self.ready_keys: list[tuple[Database, bytes]] = []  # keys written since the last pass
        self._ready_set: set[BKey] = set()
        self.blocked_count = 0  # INFO clients: blocked_clients

    def block_for_keys(self, client: Client, keys: list[bytes], timeout_ms: int,
                       on_timeout: Any, argv: list[bytes] | None,
                       unblock_on_nokey: bool) -> Blocked:
        from .client import BLOCKED

        server = self.server
        old = client.bstate
        if old is not None:  # re-blocked by a re-run: keep the original deadline
            deadline = old.deadline_ms
        elif timeout_ms > 0:
            deadline = client.now_ms() + timeout_ms
        else:
            deadline = 0
        db = client.db
        distinct = list(dict.fromkeys(keys))
        state = BlockState(db, distinct, deadline, on_timeout, argv or client.argv,
                           unblock_on_nokey)
        if unblock_on_nokey:
            state.key_types = {k: db.type_of(k) for k in distinct}
        # A re-run client was detached from its queues by _rerun before the call.
        client.bstate = state
        self.blocked_count += 1
        for key in distinct:
            self.blocking_keys.setdefault((db.id, key), deque()).append(client)
        if deadline:
            loop = server.loop
            delay = max(0.0, (deadline - client.now_ms()) / 1000.0)
            state.timer = loop.call_at(loop.time() + delay, self._timed_out, client)
        return BLOCKED

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
        """Serve every ready key's waiters, FIFO, until no key is ready."""
        while self.ready_keys:
            ready, self.ready_keys = self.ready_keys, []
            self._ready_set.clear()
            for db, key in ready:
                queue = self.blocking_keys.get((db.id, key))
                if not queue:
                    continue
                # Only the clients waiting when the pass began; re-blocked ones wait their turn.
                for _ in range(len(queue)):
                    if not queue:
                        break
                    client = queue[0]
                    state = client.bstate
                    if state is None:  # pragma: no cover - defensive
                        queue.popleft()
                        continue
                    if state.unblock_on_nokey and db.type_of(key) != state.key_types.get(key):
                        self.unblock_client(client, NOKEY_ERROR)
                        continue
                    self._rerun(client)
        self.server.process_unblocked_clients()

    def _rerun(self, client: Client) -> None:
        """Run the blocked command again; it either replies or blocks again."""
        state = client.bstate
        assert state is not None
        argv = state.argv
        # Detach, but keep bstate during the call so a re-block keeps the deadline.
        self._detach(client)
        self.server.call_unblocked(client, argv)
        if client.bstate is state:  # did not block again
            client.bstate = None
            self.blocked_count -= 1
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
        if state.timer is not None:
            state.timer.cancel()
            state.timer = None
        self.blocked_count -= 1

    def unblock_client(self, client: Client, reply: Any) -> None:
        """Unblock without re-running: send ``reply`` (timeout, CLIENT UNBLOCK, errors)."""
        if client.bstate is None:
            return
        self._detach(client)
        client.bstate = None
        if reply is not None:
            client.add_reply(reply)
        self.server.queue_unblocked(client)

    def disconnect(self, client: Client) -> None:
        if client.bstate is not None:
            self._detach(client)
            client.bstate = None

    def _timed_out(self, client: Client) -> None:
        state = client.bstate
        if state is None:
            return
        state.timer = None
        self.unblock_client(client, state.on_timeout)
        self.server.before_return()
