"""Client-side caching: key tracking and invalidation messages (Redis's ``tracking.c``).

Role: clients that turned ``CLIENT TRACKING`` on are told when a key they may cache
changes. In the default mode the server remembers, per key, the clients that read it
(``table``: key -> client ids, filled after each read-only command, ``remember_keys``); a
write of the key (``invalidate_key``, from ``Server.key_modified``: Redis's
``signalModifiedKey``) sends each of them an invalidation and forgets the key. In BCAST mode
clients subscribe to key prefixes instead (``prefixes``); keys written during an event-loop
iteration are collected per prefix and sent once, before the replies are written
(``broadcast``). FLUSHDB / FLUSHALL invalidate everything with a null
(``invalidate_all``), and ``tracking-table-max-keys`` bounds the table (``limit``): keys
over the limit are invalidated as if written.

Invalidations are RESP3 pushes (``>2 invalidate [keys]``), or, for a client that redirects
to another connection (REDIRECT id), Pub/Sub messages on ``__redis__:invalidate`` when that
connection speaks RESP2 and is subscribed. An invalidation for the client running the
command waits until its reply has been added (``pending``, flushed by dispatch after the
reply: Redis's ``trackingHandlePendingKeyInvalidations``), after EXEC's whole reply inside
a transaction.

Invariants:
- ``count`` is the number of clients with tracking on (INFO tracking_clients); when it is 0
  nothing here runs on the command path (dispatch and ``key_modified`` test it first).
- Client ids in the table may belong to clients gone or no longer tracking: they are
  skipped when an invalidation is sent (Redis removes them lazily too).
- A client in BCAST mode is listed in ``prefixes[p].clients`` for each of its prefixes
  (``client.tracking_prefixes``), and nowhere else.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sluice.commands.client_tracking import BCAST, BROKEN_REDIR, CACHING, NOLOOP, ON, OPTIN, OPTOUT
from sluice.commands.spec import F, K

if TYPE_CHECKING:
    from sluice.commands.context import Command

    from .app import Server
    from .client import Client

__all__ = ["BCAST", "BROKEN_REDIR", "CACHING", "NOLOOP", "ON", "OPTIN", "OPTOUT", "Tracking"]

CHANNEL = b"__redis__:invalidate"
_PUSH_HEAD = b">2\r\n$10\r\ninvalidate\r\n"
_MESSAGE_HEAD = b"*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n"


def _keys_proto(keys: list[bytes]) -> bytes:
    return b"*%d\r\n" % len(keys) + b"".join(b"$%d\r\n%s\r\n" % (len(k), k) for k in keys)


class _Bcast:
    """One prefix of BCAST mode (Redis's ``bcastState``)."""

    __slots__ = ("keys", "clients")

    def __init__(self) -> None:
        self.keys: dict[bytes, Client | None] = {}  # written this iteration -> by whom
        self.clients: dict[Client, None] = {}  # subscribed to the prefix


class Tracking:
    __slots__ = ("server", "table", "items", "prefixes", "count", "pending", "_effort",
                 "bcast_pending")

    def __init__(self, server: Server) -> None:
        self.server = server
        self.table: dict[bytes, dict[int, None]] = {}  # key -> ids of clients that read it
        self.items = 0  # ids in the table, all keys together (INFO tracking_total_items)
        self.prefixes: dict[bytes, _Bcast] = {}
        self.count = 0  # clients with tracking on (INFO tracking_clients)
        # invalidations for the client running the command: keys, None for "everything"
        self.pending: list[bytes | None] = []
        self._effort = 0  # how many cron calls in a row found the table over its limit
        self.bcast_pending = False  # a prefix has keys to broadcast

    # -- CLIENT TRACKING ------------------------------------------------------------------

    def enable(self, client: Client, redirect: int, options: int,
               prefixes: list[bytes]) -> None:
        """``enableTracking``: on, with these options (already checked)."""
        if not client.tracking & ON:
            self.count += 1
        client.tracking = (client.tracking | ON) & ~(BROKEN_REDIR | BCAST | OPTIN | OPTOUT
                                                     | NOLOOP)
        client.tracking_redirect = redirect
        if options & BCAST:
            client.tracking |= BCAST
            for prefix in prefixes or [b""]:
                state = self.prefixes.get(prefix)
                if state is None:
                    state = self.prefixes[prefix] = _Bcast()
                if client not in state.clients:
                    state.clients[client] = None
                    client.tracking_prefixes[prefix] = None
        client.tracking |= options & (OPTIN | OPTOUT | NOLOOP)

    def disable(self, client: Client) -> None:
        """``disableTracking``: off (its ids left in the table are skipped later)."""
        if client.tracking & BCAST:
            for prefix in client.tracking_prefixes:
                state = self.prefixes[prefix]
                del state.clients[client]
                if not state.clients:
                    del self.prefixes[prefix]
            client.tracking_prefixes = {}
        if client.tracking & ON:
            self.count -= 1
            client.tracking = 0

    # -- remembering and invalidating -----------------------------------------------------

    def remember_keys(self, client: Client, cmd: Command, argv: list[bytes]) -> None:
        """After ``cmd`` (read-only) ran for ``client`` (or its script or transaction): the
        keys it read are the client's to be told about (``trackingRememberKeys``)."""
        flags = client.tracking
        caching = flags & CACHING
        if (flags & OPTIN and not caching) or (flags & OPTOUT and caching):
            return
        if cmd.flags & F.PUBSUB:  # shard channels are keys to COMMAND, not to caches
            return
        table = self.table
        cid = client.id
        for spec in cmd.keys:
            if spec.flags & K.NOT_KEY:
                continue
            for pos in spec.keys(argv):
                key = argv[pos]
                ids = table.get(key)
                if ids is None:
                    ids = table[key] = {}
                if cid not in ids:
                    ids[cid] = None
                    self.items += 1

    def invalidate_key(self, key: bytes, bcast: bool = True, in_command: bool = True) -> None:
        """``trackingInvalidateKey``: ``key`` changed (or is evicted from the table). The
        current client's own message waits for its reply only while a command runs
        (``in_command``; Redis's CLIENT_EXECUTING_COMMAND)."""
        server = self.server
        current = server.current_client if in_command else None
        if bcast and self.prefixes:
            for prefix, state in self.prefixes.items():
                if key.startswith(prefix):
                    state.keys[key] = current
                    self.bcast_pending = True
        ids = self.table.pop(key, None)
        if ids is None:
            return
        self.items -= len(ids)
        clients = server.clients
        for cid in ids:
            target = clients.get(cid)
            if target is None or not target.tracking & ON or target.tracking & BCAST:
                continue
            if target is current:
                if target.tracking & NOLOOP:
                    continue
                self.pending.append(key)  # after the command's reply
            else:
                self.send(target, _keys_proto([key]))

    def invalidate_all(self) -> None:
        """FLUSHDB / FLUSHALL: a null to every tracking client; the table starts afresh."""
        if self.count:
            current = self.server.current_client
            for client in list(self.server.clients.values()):
                if client.tracking & ON:
                    if client is current:
                        self.pending.append(None)
                    else:
                        self.send(client, None)
        self.table = {}
        self.items = 0

    def flush_pending(self, client: Client) -> None:
        """The current client's invalidations, after its reply (and its own pushes)."""
        pending, self.pending = self.pending, []
        if client.closed:
            return
        for key in pending:
            self.send(client, None if key is None else _keys_proto([key]))

    def send(self, client: Client, keys_proto: bytes | None) -> None:
        """``sendTrackingMessage``: ``keys_proto`` is the encoded array of keys, or None
        for the null that means every key."""
        target = client
        redirected = False
        if client.tracking_redirect:
            target = self.server.clients.get(client.tracking_redirect)  # type: ignore[assignment]
            if target is None:
                client.tracking |= BROKEN_REDIR
                if client.resp3:
                    client.add_raw(b">2\r\n$21\r\ntracking-redir-broken\r\n:%d\r\n"
                                   % client.tracking_redirect)
                return
            redirected = True
        if target.resp3:
            head = _PUSH_HEAD
            null = b"_\r\n"
        elif redirected and target.kind == "pubsub":
            head = _MESSAGE_HEAD
            null = b"$-1\r\n"
        else:
            return  # RESP2 without a redirection has no way to be told
        target.add_raw(head + (null if keys_proto is None else keys_proto))

    def broadcast(self) -> None:
        """``trackingBroadcastInvalidationMessages``: each prefix's keys written since the
        last call, to its subscribers (a NOLOOP client is not told its own writes)."""
        self.bcast_pending = False
        for state in self.prefixes.values():
            if not state.keys:
                continue
            keys = sorted(state.keys)  # Redis walks a radix tree: in byte order
            everyone = _keys_proto(keys)
            for client in list(state.clients):
                if client.tracking & NOLOOP:
                    mine = [k for k in keys if state.keys[k] is not client]
                    if mine:
                        self.send(client, _keys_proto(mine))
                else:
                    self.send(client, everyone)
            state.keys = {}

    def limit(self, max_keys: int) -> None:
        """``trackingLimitUsedSlots``: over ``tracking-table-max-keys``, invalidate keys
        (more each call that still finds the table too big) as if they were written."""
        table = self.table
        if not max_keys or len(table) <= max_keys:
            self._effort = 0
            return
        effort = 100 * (self._effort + 1)
        for key in list(table):  # Redis walks at random; dict order is as arbitrary here
            if effort <= 0:
                break
            effort -= 1
            self.invalidate_key(key, bcast=False, in_command=False)
            if len(table) <= max_keys:
                self._effort = 0
                return
        self._effort += 1

    # -- introspection ----------------------------------------------------------------------

    def info_fields(self) -> dict[str, int]:
        return {"tracking_total_keys": len(self.table), "tracking_total_items": self.items,
                "tracking_total_prefixes": len(self.prefixes)}
