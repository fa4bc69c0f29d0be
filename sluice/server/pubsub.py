"""Pub/Sub subscriptions and message delivery (Redis's ``pubsub.c``).

Role: the server-wide side of the subscriptions: channel -> subscribers, pattern ->
subscribers, shard channel -> subscribers (``server.pubsub_channels``, ``pubsub_patterns``,
``pubsubshard_channels``). Each client keeps its own side in ``client.pubsub_channels``,
``pubsub_patterns`` and ``pubsub_shard_channels``, so a disconnect or RESET releases exactly
what it holds.

Invariants:
- ``client in self.channels[ch]`` if and only if ``ch in client.pubsub_channels`` (the same
  for patterns and shard channels); a name with no subscriber left is removed.
- Subscribers are kept in subscription order: PUBLISH delivers in that order, channel
  subscribers first, then pattern subscribers pattern by pattern, as Redis does.
- ``client.kind`` is ``"pubsub"`` while the client holds any subscription (Redis's
  ``CLIENT_PUBSUB``): it picks the pubsub output buffer limits, the ``P`` flag of CLIENT
  LIST and, in RESP2, the commands the connection may still run (``dispatch.py``).

A message is encoded once per protocol version and appended to each subscriber's output as
is; like Redis 7.2+, CLIENT REPLY OFF does not silence it.

``mem`` is what the subscriptions cost (names, registries), kept as they come and go, for
``used_memory`` and the maxmemory check before each command (``memory.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from sluice.protocol import Push, encode
from sluice.storage.glob import compile_pattern
from sluice.storage.memsize import DICT_ENTRY, bytes_size

if TYPE_CHECKING:
    from .client import Client

Subscribers = dict["Client", None]  # an ordered set


# What a subscription costs: a channel (or pattern) its name, subscriber dict and registry
# entry; each subscriber a dict entry on each side.
CHANNEL = 232 + DICT_ENTRY
SUBSCRIBER = 2 * DICT_ENTRY


class PubSub:
    __slots__ = ("channels", "patterns", "shard_channels", "_matchers", "mem", "current")

    def __init__(self) -> None:
        self.channels: dict[bytes, Subscribers] = {}
        self.patterns: dict[bytes, Subscribers] = {}
        self.shard_channels: dict[bytes, Subscribers] = {}
        self._matchers: dict[bytes, Callable[[bytes], bool]] = {}  # pattern -> its matcher
        self.mem = 0  # estimated bytes of every subscription
        # The client whose command runs now (the server's current_client): a script's
        # PUBLISH publishes for the client that called the script.
        self.current: Callable[[], Client | None] | None = None

    # -- subscribing ---------------------------------------------------------------------------

    def subscribe(self, client: Client, channel: bytes, shard: bool = False) -> bool:
        """Add a channel subscription; False if the client already had it."""
        mine = client.pubsub_shard_channels if shard else client.pubsub_channels
        if channel in mine:
            return False
        mine[channel] = None
        registry = self.shard_channels if shard else self.channels
        subscribers = registry.get(channel)
        if subscribers is None:
            subscribers = registry[channel] = {}
            self.mem += CHANNEL + bytes_size(len(channel))
        subscribers[client] = None
        self.mem += SUBSCRIBER
        client.kind = "pubsub"
        return True

    def unsubscribe(self, client: Client, channel: bytes, shard: bool = False) -> bool:
        """Drop a channel subscription; False if the client did not have it."""
        mine = client.pubsub_shard_channels if shard else client.pubsub_channels
        if channel not in mine:
            return False
        del mine[channel]
        self.mem -= SUBSCRIBER
        if _forget(self.shard_channels if shard else self.channels, channel, client):
            self.mem -= CHANNEL + bytes_size(len(channel))
        _update_kind(client)
        return True

    def psubscribe(self, client: Client, pattern: bytes) -> bool:
        if pattern in client.pubsub_patterns:
            return False
        client.pubsub_patterns[pattern] = None
        subscribers = self.patterns.get(pattern)
        if subscribers is None:
            subscribers = self.patterns[pattern] = {}
            self._matchers[pattern] = compile_pattern(pattern)
            self.mem += CHANNEL + bytes_size(len(pattern))
        subscribers[client] = None
        self.mem += SUBSCRIBER
        client.kind = "pubsub"
        return True

    def punsubscribe(self, client: Client, pattern: bytes) -> bool:
        if pattern not in client.pubsub_patterns:
            return False
        del client.pubsub_patterns[pattern]
        self.mem -= SUBSCRIBER
        if _forget(self.patterns, pattern, client):
            del self._matchers[pattern]
            self.mem -= CHANNEL + bytes_size(len(pattern))
        _update_kind(client)
        return True

    def unsubscribe_all(self, client: Client) -> None:
        """Release every subscription without notifying (disconnect, RESET)."""
        for ch in list(client.pubsub_channels):
            self.unsubscribe(client, ch)
        for ch in list(client.pubsub_shard_channels):
            self.unsubscribe(client, ch, shard=True)
        for pattern in list(client.pubsub_patterns):
            self.punsubscribe(client, pattern)

    # -- publishing ----------------------------------------------------------------------------

    def publish(self, channel: bytes, message: bytes, shard: bool = False,
                publisher: Client | None = None) -> int:
        """Deliver to the channel's subscribers (and, unless ``shard``, to the clients whose
        patterns match); the number of deliveries, a client counted once per match.

        A message to the ``publisher`` itself (a RESP3 connection may publish while
        subscribed, and MULTI can queue SUBSCRIBE then PUBLISH) waits in its
        ``deferred_pushes`` until the reply of the command it runs has been added (Redis
        7.2+; 7.0 put it before PUBLISH's reply, or in the middle of EXEC's)."""
        frames = _Frames()
        receivers = 0
        if publisher is not None and publisher.is_script and self.current is not None:
            publisher = self.current()  # after EVAL's reply, as Redis 7.2+ (its caller's)
        subscribers = (self.shard_channels if shard else self.channels).get(channel)
        if subscribers:
            kind = b"smessage" if shard else b"message"
            for client in subscribers:
                _push(client, frames.get(client.resp3, (kind, channel, message)), publisher)
            receivers += len(subscribers)
        if not shard and self.patterns:
            matchers = self._matchers
            for pattern, subscribers in self.patterns.items():
                if matchers[pattern](channel):
                    frames = _Frames()  # pmessage frames name the pattern
                    for client in subscribers:
                        _push(client, frames.get(
                            client.resp3, (b"pmessage", pattern, channel, message)), publisher)
                    receivers += len(subscribers)
        return receivers

    # -- introspection -------------------------------------------------------------------------

    def numsub(self, channel: bytes, shard: bool = False) -> int:
        subscribers = (self.shard_channels if shard else self.channels).get(channel)
        return len(subscribers) if subscribers else 0

    def active(self, pattern: bytes | None, shard: bool = False) -> list[bytes]:
        """PUBSUB CHANNELS / SHARDCHANNELS: channels with a subscriber, matching ``pattern``."""
        names = self.shard_channels if shard else self.channels
        if pattern is None:
            return list(names)
        match = compile_pattern(pattern)
        return [ch for ch in names if match(ch)]


def _push(client: Client, frame: bytes, publisher: Client | None) -> None:
    if client is publisher:
        if client.deferred_pushes is None:
            client.deferred_pushes = []
        client.deferred_pushes.append(frame)
    else:
        client.add_raw(frame)


class _Frames:
    """One message's encoding per protocol version, made on first use."""

    __slots__ = ("resp2", "resp3")

    def __init__(self) -> None:
        self.resp2: bytes | None = None
        self.resp3: bytes | None = None

    def get(self, resp3: bool, items: tuple[bytes, ...]) -> bytes:
        if resp3:
            if self.resp3 is None:
                self.resp3 = encode(Push(items), True)
            return self.resp3
        if self.resp2 is None:
            self.resp2 = encode(Push(items), False)
        return self.resp2


def _forget(registry: dict[bytes, Subscribers], name: bytes, client: Client) -> bool:
    """Remove ``client`` from ``registry[name]``; True if that left the name unused."""
    subscribers = registry[name]
    del subscribers[client]
    if subscribers:
        return False
    del registry[name]
    return True


def _update_kind(client: Client) -> None:
    if client.kind == "pubsub" and not (
        client.pubsub_channels or client.pubsub_patterns or client.pubsub_shard_channels
    ):
        client.kind = "normal"
