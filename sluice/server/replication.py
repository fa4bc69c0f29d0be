"""A master with no replicas, as Redis is one (the master side of ``replication.c``).

Sluice has no replication, but a Redis master with no replica connected still does real
things with its replication state, and they are kept here, under Redis's names:

* ``master_repl_offset``: with no backlog Redis still advances it by one per command it
  propagates while the AOF is on (``replicationFeedSlaves``), so WAITAOF can tell whether
  the AOF is fsynced past a client's last write. The AOF (``persistence.py``) counts what it
  logs here; ``Client.woff`` is the offset after the client's last command that logged
  something (Redis's ``call``). INFO replication shows it.
* ``fsynced_reploff``: the offset the AOF is known to be fsynced to; -1 while the AOF is
  off; 0 while the first base of an AOF switched on at run time is written (Redis moves it
  only once that rewrite is done). ``appendfsync always`` moves it in the loop iteration of
  the write, ``everysec`` when the background fsync completes, ``no`` never (a WAITAOF then
  waits for its timeout, as on Redis).
* ``clients_waiting_acks``: WAITAOF clients parked by the blocking machinery
  (``BlockingManager.block_for_keys`` with no key, so timeouts, CLIENT UNBLOCK and
  disconnects work as for BLPOP). ``process_clients_waiting_replicas`` runs when
  ``fsynced_reploff`` moves or the AOF is switched off, never on a timer: a client whose
  fsync has come is answered ``[1, 0]``; one that asked for replicas keeps waiting (none
  ever acknowledges) with its timeout reply brought up to date; with the AOF switched off a
  client asking for a local fsync gets Redis's error. WAIT needs no list: with
  ``numreplicas > 0`` it can only time out, answering 0.
* ``good_replicas_ok``: Redis's ``checkGoodReplicasStatus``; with ``min-replicas-to-write``
  and ``min-replicas-max-lag`` both set, writes are refused (no replica is ever good).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sluice.commands.errors import WAITAOF_APPENDONLY_OFF
from sluice.commands.reply import BLOCKED, Reply
from sluice.protocol import ErrorReply

if TYPE_CHECKING:
    from .app import Server
    from .client import Client


class AofWait:
    """What a blocked WAITAOF waits for (Redis's bstate.reploffset / numlocal / numreplicas);
    it is the block's ``memo``, which marks the client as one of ``clients_waiting_acks``."""

    __slots__ = ("reploffset", "numlocal", "numreplicas")

    def __init__(self, reploffset: int, numlocal: int, numreplicas: int) -> None:
        self.reploffset = reploffset  # the client's woff when it blocked
        self.numlocal = numlocal  # 0 or 1: the local AOF must be fsynced past reploffset
        self.numreplicas = numreplicas  # replicas that must ack (none ever does)


_ERROR_AOF_OFF = ErrorReply(WAITAOF_APPENDONLY_OFF.encode())


class Replication:
    __slots__ = ("server", "master_repl_offset", "fsynced_reploff", "clients_waiting_acks",
                 "get_ack_from_replicas")

    def __init__(self, server: Server) -> None:
        self.server = server
        self.master_repl_offset = 0  # commands propagated while the AOF was on
        self.fsynced_reploff = -1  # -1: the AOF is off
        # WAITAOF clients, in the order they blocked (Redis adds at the head and serves from
        # it; the order matters only for who is answered first in one pass).
        self.clients_waiting_acks: dict[Client, AofWait] = {}
        # A WAIT / WAITAOF blocked in this loop iteration: Redis then sends REPLCONF GETACK
        # to its replicas before it sleeps, which with none still advances the offset by one
        # (``send_getack``, from ``Server.write_replies``).
        self.get_ack_from_replicas = False

    def good_replicas_ok(self) -> bool:
        """Redis's ``checkGoodReplicasStatus``: may a write run? No replica is ever good."""
        config = self.server.config
        return not config.min_replicas_to_write or not config.min_replicas_max_lag

    def block_for_replication(self, client: Client, timeout_ms: int) -> Reply:
        """Park a WAIT client (Redis's ``blockForReplication``): only a timeout (0 replicas)
        or CLIENT UNBLOCK ends it."""
        reply = client.block([], timeout_ms, 0)
        if reply is BLOCKED:
            self.get_ack_from_replicas = True
        return reply

    def block_for_aof_fsync(self, client: Client, timeout_ms: int, numlocal: int,
                            numreplicas: int) -> Reply:
        """Park a WAITAOF client (Redis's ``blockForAofFsync``)."""
        wait = AofWait(client.woff, numlocal, numreplicas)
        reply = client.block([], timeout_ms, [int(self.fsynced_reploff >= client.woff), 0],
                             memo=wait)
        if reply is BLOCKED:
            self.clients_waiting_acks[client] = wait
            self.get_ack_from_replicas = True
        return reply

    def send_getack(self) -> None:
        """Before the loop sleeps, after a WAIT / WAITAOF blocked (Redis's beforeSleep:
        ``sendGetackToReplicas``, held while clients are paused): REPLCONF GETACK goes to no
        replica, and replicationFeedSlaves with no backlog counts it in the offset."""
        self.get_ack_from_replicas = False
        self.master_repl_offset += 1

    def forget(self, client: Client) -> None:
        """A WAITAOF client unblocked (answered, timed out, CLIENT UNBLOCK) or gone."""
        self.clients_waiting_acks.pop(client, None)

    def set_fsynced(self, offset: int) -> None:
        """The AOF is fsynced up to ``offset`` (-1: the AOF went off)."""
        if offset != self.fsynced_reploff:
            self.fsynced_reploff = offset
            if self.clients_waiting_acks:
                self.process_clients_waiting_replicas()

    def aof_stopped(self) -> None:
        """CONFIG SET appendonly no (Redis's ``stopAppendOnly``): a WAITAOF client asking for
        a local fsync gets an error; the others' timeout replies say 0 local copies."""
        self.fsynced_reploff = -1
        if self.clients_waiting_acks:
            self.process_clients_waiting_replicas()

    def process_clients_waiting_replicas(self) -> None:
        """Answer the WAITAOF clients whose fsync has come (Redis's function of that name)."""
        aof_on = self.server.aof is not None
        blocking = self.server.blocking
        fsynced = self.fsynced_reploff
        for client, wait in list(self.clients_waiting_acks.items()):
            state = client.bstate
            if state is None or state.memo is not wait:  # (never: unblocking forgets it)
                del self.clients_waiting_acks[client]
                continue
            if wait.numlocal and not aof_on:
                blocking.unblock_client(client, _ERROR_AOF_OFF)
                continue
            local = int(fsynced >= wait.reploffset)
            if wait.numreplicas <= 0 and local >= wait.numlocal:
                blocking.unblock_client(client, [local, 0])
            else:
                state.on_timeout = [local, 0]  # what a timeout or CLIENT UNBLOCK answers
