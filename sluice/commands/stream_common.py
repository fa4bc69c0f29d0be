"""Helpers shared by the stream command modules (``streams.py``, ``stream_info.py`` and the
consumer-group commands).

Role: the pieces every stream handler needs and that must behave the same everywhere:

- ``get_stream``: the stream under a key, ``None`` if absent, WRONGTYPE otherwise.
- ``stream_command``: a decorator turning the storage layer's ``StreamError`` (whose ``str()``
  is Redis's exact text) into a ``CommandError``; dispatch only knows ``CommandError`` and
  ``WrongTypeError``. Every stream handler that touches storage is wrapped with it.
- ``entry_reply`` / ``entries_reply``: the ``[id, [f1, v1, ...]]`` shape Redis's
  ``streamReplyWithRange`` sends. An entry whose fields are ``None`` (deleted while pending,
  XREADGROUP history) is sent as a null array: ``*-1`` in RESP2, ``_`` in RESP3.
- ``parse_count``: COUNT for XREAD / XREADGROUP (negative means no limit, as Redis clamps).
- ``TrimArgs`` / ``parse_add_or_trim``: Redis's ``streamParseAddOrTrimArgsOrReply``, shared by
  XADD and XTRIM, with the Redis 8.2 reference policies (KEEPREF | DELREF | ACKED) and the
  Redis 8.6 idempotent-production options of XADD (IDMPAUTO pid | IDMP pid iid).

Invariants: argument checks run in Redis's order so the same error wins; nothing here builds
a reply for a whole command.

Mirrors ``t_stream.c``: ``streamParseAddOrTrimArgsOrReply``, ``streamReplyWithRange``'s
per-entry shape, ``lookupKeyRead`` + ``checkType``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from sluice.protocol import NULL_ARRAY
from sluice.storage.stream import Stream
from sluice.storage.stream_errors import StreamError
from sluice.storage.streamid import format_id

from .args import Args, parse_int
from .errors import CommandError

__all__ = [
    "entries_reply",
    "entry_reply",
    "get_stream",
    "parse_count",
    "stream_command",
]

Handler = Callable[[Any, Args], Any]


def get_stream(ctx: Any, key: bytes) -> Stream | None:
    """The stream stored at ``key`` (an access), None if absent; WRONGTYPE for other types."""
    return ctx.db.get_typed(key, Stream)  # type: ignore[no-any-return]


def stream_command(fn: Handler) -> Handler:
    """Wrap a handler so a ``StreamError`` becomes the ``-`` reply with Redis's text."""

    @functools.wraps(fn)
    def wrapper(ctx: Any, args: Args) -> Any:
        try:
            return fn(ctx, args)
        except StreamError as e:
            raise CommandError(str(e)) from None

    return wrapper


def entry_reply(sid: int, fields: list[bytes] | None) -> list[Any]:
    """One entry as ``[id, [f1, v1, ...]]``; a deleted entry's fields are a null array."""
    return [format_id(sid), NULL_ARRAY if fields is None else fields]


def entries_reply(entries: Sequence[tuple[int, list[bytes] | None]]) -> list[Any]:
    """A list of entries as ``streamReplyWithRange`` sends them."""
    return [[format_id(sid), NULL_ARRAY if f is None else f] for sid, f in entries]


def parse_count(raw: bytes) -> int:
    """COUNT of XREAD / XREADGROUP: an integer; negative (and 0) mean no limit -> 0."""
    n = parse_int(raw)
    return n if n > 0 else 0

