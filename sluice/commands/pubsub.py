"""Pub/Sub: SUBSCRIBE, PSUBSCRIBE, SSUBSCRIBE and their UN- forms, PUBLISH, SPUBLISH, PUBSUB.

Mirrors Redis's ``pubsub.c`` (checked byte for byte against redis-server 7.0.15). The
subscriptions themselves live in ``server.pubsub`` (``server/pubsub.py``); handlers here parse
and build the confirmations.

- Each (un)subscription is confirmed by its own push (``>3`` in RESP3, an array in RESP2), so
  a command naming three channels answers ``Replies`` of three pushes. The count they carry is
  channels + patterns for SUBSCRIBE/PSUBSCRIBE and their UN- forms, shard channels for the S
  forms.
- UN- forms without arguments drop every subscription of their kind, and confirm with a null
  channel when there was none.
- A RESP2 connection with subscriptions may only run these commands, PING, QUIT and RESET
  (``server/dispatch.py``); RESP3 connections may run anything.
- Sharded channels work as in a single-node Redis: a namespace of their own, no patterns.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from sluice.protocol import Push, Replies

from .args import Args
from .context import Command, Context, Reply
from .errors import CommandError, subcommand_syntax
from .introspection import help_reply
from .spec import (
    DENYOOM,
    FAST,
    LOADING,
    MAY_REPLICATE,
    NOSCRIPT,
    PUBSUB,
    STALE,
    A,
    K,
    cmd,
    key_at,
)

# may-replicate (hidden from COMMAND INFO, as Redis hides it): a message is propagated, so
# CLIENT PAUSE WRITE holds PUBLISH and read-only scripts may not call it.
_PUB = PUBSUB | LOADING | STALE | FAST | MAY_REPLICATE
_INFO = PUBSUB | LOADING | STALE
_UNSUB = PUBSUB | NOSCRIPT | LOADING | STALE
_SUB = _UNSUB | DENYOOM  # Redis 8 refuses new subscriptions when out of memory
_SHARD_KEYS = key_at(1, K.NOT_KEY, last=-1)  # channels, declared for cluster slot routing


def _count(ctx: Context) -> int:
    return len(ctx.pubsub_channels) + len(ctx.pubsub_patterns)


def _shard_count(ctx: Context) -> int:
    return len(ctx.pubsub_shard_channels)


def _confirm_each(ctx: Context, names: list[bytes], change: Callable[[Context, bytes], bool],
                  kind: bytes, count: Callable[[Context], int]) -> Replies:
    """Apply ``change`` to each name, confirming each with ``[kind, name, count]``."""
    out = Replies()
    for name in names:
        change(ctx, name)
        out.append(Push((kind, name, count(ctx))))
    return out


def _drop(ctx: Context, names: list[bytes], held: Mapping[bytes, None],
          change: Callable[[Context, bytes], bool], kind: bytes,
          count: Callable[[Context], int]) -> Reply:
    """The UN- forms: the names given, or every one held; a null name if there is none."""
    names = names or list(held)
    if not names:
        return Push((kind, None, count(ctx)))
    return _confirm_each(ctx, names, change, kind, count)


def subscribe(ctx: Context, args: Args) -> Reply:
    return _confirm_each(ctx, args.argv[1:], ctx.server.pubsub.subscribe, b"subscribe", _count)


def psubscribe(ctx: Context, args: Args) -> Reply:
    return _confirm_each(ctx, args.argv[1:], ctx.server.pubsub.psubscribe, b"psubscribe",
                         _count)


def ssubscribe(ctx: Context, args: Args) -> Reply:
    if ctx.in_exec:
        # Redis lets SUBSCRIBE run inside EXEC for old clients' sake, not SSUBSCRIBE.
        raise CommandError("ERR SSUBSCRIBE isn't allowed for a DENY BLOCKING client")
    add = partial(ctx.server.pubsub.subscribe, shard=True)
    return _confirm_each(ctx, args.argv[1:], add, b"ssubscribe", _shard_count)


def unsubscribe(ctx: Context, args: Args) -> Reply:
    return _drop(ctx, args.argv[1:], ctx.pubsub_channels, ctx.server.pubsub.unsubscribe,
                 b"unsubscribe", _count)


def punsubscribe(ctx: Context, args: Args) -> Reply:
    return _drop(ctx, args.argv[1:], ctx.pubsub_patterns, ctx.server.pubsub.punsubscribe,
                 b"punsubscribe", _count)


def sunsubscribe(ctx: Context, args: Args) -> Reply:
    remove = partial(ctx.server.pubsub.unsubscribe, shard=True)
    return _drop(ctx, args.argv[1:], ctx.pubsub_shard_channels, remove, b"sunsubscribe",
                 _shard_count)


def publish(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    return ctx.server.pubsub.publish(argv[1], argv[2], publisher=ctx)


def spublish(ctx: Context, args: Args) -> Reply:
    argv = args.argv
    return ctx.server.pubsub.publish(argv[1], argv[2], shard=True, publisher=ctx)


def _channels(ctx: Context, args: Args, shard: bool) -> Reply:
    argv = args.argv
    if len(argv) > 3:
        raise subcommand_syntax(argv[1], "pubsub")
    return ctx.server.pubsub.active(argv[2] if len(argv) == 3 else None, shard)


def pubsub_channels(ctx: Context, args: Args) -> Reply:
    return _channels(ctx, args, False)


def pubsub_shardchannels(ctx: Context, args: Args) -> Reply:
    return _channels(ctx, args, True)


def _numsub(ctx: Context, args: Args, shard: bool) -> Reply:
    pubsub = ctx.server.pubsub
    out: list[Any] = []
    for channel in args.argv[2:]:
        out += (channel, pubsub.numsub(channel, shard))
    return out


def pubsub_numsub(ctx: Context, args: Args) -> Reply:
    return _numsub(ctx, args, False)


def pubsub_shardnumsub(ctx: Context, args: Args) -> Reply:
    return _numsub(ctx, args, True)


def pubsub_numpat(ctx: Context, args: Args) -> Reply:
    return len(ctx.server.pubsub.patterns)


_HELP = (
    "CHANNELS [<pattern>]",
    "    Return the currently active channels matching a <pattern> (default: '*').",
    "NUMPAT",
    "    Return number of subscriptions to patterns.",
    "NUMSUB [<channel> ...]",
    "    Return the number of subscribers for the specified channels, excluding",
    "    pattern subscriptions(default: no channels).",
    "SHARDCHANNELS [<pattern>]",
    "    Return the currently active shard level channels matching a <pattern> (default: '*').",
    "SHARDNUMSUB [<shardchannel> ...]",
    "    Return the number of subscribers for the specified shard level channel(s)",
)


def pubsub_help(ctx: Context, args: Args) -> Reply:
    return help_reply("PUBSUB", _HELP)


_N = "O(N) where N is the number of "
COMMANDS: tuple[Command, ...] = (
    #   name                   arity  flags          acl       keys         handler
    cmd("subscribe",            -2,   _SUB,          A.NONE,   None,        subscribe,
        "Listens for messages published to channels.", since="2.0.0", group="pubsub",
        complexity=_N + "channels to subscribe to.", syntax="channel [channel ...]"),
    cmd("psubscribe",           -2,   _SUB,          A.NONE,   None,        psubscribe,
        "Listens for messages published to channels that match one or more patterns.",
        since="2.0.0", group="pubsub", complexity=_N + "patterns to subscribe to.",
        syntax="pattern [pattern ...]"),
    cmd("ssubscribe",           -2,   _SUB,          A.NONE,   _SHARD_KEYS, ssubscribe,
        "Listens for messages published to shard channels.", since="7.0.0", group="pubsub",
        complexity=_N + "shard channels to subscribe to.",
        syntax="shardchannel [shardchannel ...]"),
    cmd("unsubscribe",          -1,   _UNSUB,        A.NONE,   None,        unsubscribe,
        "Stops listening to messages posted to channels.", since="2.0.0", group="pubsub",
        complexity=_N + "channels to unsubscribe.", syntax="[channel [channel ...]]"),
    cmd("punsubscribe",         -1,   _UNSUB,        A.NONE,   None,        punsubscribe,
        "Stops listening to messages published to channels that match one or more patterns.",
        since="2.0.0", group="pubsub",
        complexity="O(N) where N is the number of patterns to unsubscribe.",
        syntax="[pattern [pattern ...]]"),
    cmd("sunsubscribe",         -1,   _UNSUB,        A.NONE,   _SHARD_KEYS, sunsubscribe,
        "Stops listening to messages posted to shard channels.", since="7.0.0",
        group="pubsub", complexity=_N + "shard channels to unsubscribe.",
        syntax="[shardchannel [shardchannel ...]]"),
    cmd("publish",               3,   _PUB,          A.NONE,  None,        publish,
        "Posts a message to a channel.", since="2.0.0", group="pubsub",
        complexity="O(N+M) where N is the number of clients subscribed to the receiving "
                   "channel and M is the total number of subscribed patterns (by any client).",
        syntax="channel message"),
    cmd("spublish",              3,   _PUB,          A.NONE,  key_at(1, K.NOT_KEY), spublish,
        "Post a message to a shard channel", since="7.0.0", group="pubsub",
        complexity="O(N) where N is the number of clients subscribed to the receiving shard "
                   "channel.", syntax="shardchannel message"),
    cmd("pubsub",               -2,   0,             A.NONE,   None,        None,
        "A container for Pub/Sub commands.", since="2.8.0", group="pubsub",
        complexity="Depends on subcommand."),
    cmd("pubsub|channels",      -2,   _INFO,         A.NONE,   None,        pubsub_channels,
        "Returns the active channels.", since="2.8.0", group="pubsub",
        complexity=_N + "active channels, and assuming constant time pattern matching "
                   "(relatively short channels and patterns)", syntax="[pattern]"),
    cmd("pubsub|shardchannels", -2,   _INFO,         A.NONE,   None,        pubsub_shardchannels,
        "Returns the active shard channels.", since="7.0.0", group="pubsub",
        complexity=_N + "active shard channels, and assuming constant time pattern matching "
                   "(relatively short shard channels).", syntax="[pattern]"),
    cmd("pubsub|numsub",        -2,   _INFO,         A.NONE,   None,        pubsub_numsub,
        "Returns a count of subscribers to channels.", since="2.8.0", group="pubsub",
        complexity="O(N) for the NUMSUB subcommand, where N is the number of requested "
                   "channels", syntax="[channel [channel ...]]"),
    cmd("pubsub|shardnumsub",   -2,   _INFO,         A.NONE,   None,        pubsub_shardnumsub,
        "Returns the count of subscribers of shard channels.", since="7.0.0",
        group="pubsub", complexity="O(N) for the SHARDNUMSUB subcommand, where N is the number "
                                   "of requested shard channels",
        syntax="[shardchannel [shardchannel ...]]"),
    cmd("pubsub|numpat",         2,   _INFO,         A.NONE,   None,        pubsub_numpat,
        "Returns a count of unique pattern subscriptions.", since="2.8.0", group="pubsub"),
    cmd("pubsub|help",           2,   LOADING | STALE, A.NONE, None,        pubsub_help,
        "Returns helpful text about the different subcommands.", since="6.2.0",
        group="pubsub"),
)
