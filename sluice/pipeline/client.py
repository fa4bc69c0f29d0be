"""The pipeline's RESP client: connections and the few stream commands it needs.

Everything goes through redis-py, so the pipeline works against Sluice and any Redis server.
Connections are opened where they are used (inside ``read()``/``write()`` on an executor, or
briefly on the driver for planning) and never stored on objects Spark pickles.

``XRANGE`` replies are taken raw (``[[id, [f1, v1, ...]], ...]``): redis-py's default callback
turns each entry into a dict, which costs more than the rest of the read path and which the
Arrow builder would only flatten again.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import redis

from sluice.pipeline.errors import PipelineError
from sluice.pipeline.ids import StreamID
from sluice.pipeline.options import ConnectionOptions

RawEntry = list[Any]  # [id, [field, value, field, value, ...]]


def connect(conn: ConnectionOptions) -> redis.Redis:
    """A client decoding replies as UTF-8 text, with raw XRANGE/XREVRANGE replies."""
    client = redis.Redis.from_url(
        conn.url,
        decode_responses=True,
        socket_timeout=conn.socket_timeout,
        socket_connect_timeout=conn.socket_timeout,
    )
    for command in ("XRANGE", "XREVRANGE"):
        client.set_response_callback(command, _identity)
    return client


def _identity(response: Any, **_: Any) -> Any:
    return response


@dataclass(frozen=True, slots=True)
class StreamBounds:
    """First and last entry of a stream as seen at one moment (``XINFO STREAM``)."""

    length: int
    first: StreamID | None
    last: StreamID | None
    last_generated: StreamID
    entries_added: int | None  # Redis 7.0+; None on servers that do not report it


def stream_bounds(client: redis.Redis, key: str) -> StreamBounds | None:
    """``None`` when the key does not exist (a stream that has not been created yet)."""
    try:
        info = client.xinfo_stream(key)
    except redis.ResponseError as exc:
        if "no such key" in str(exc).lower():
            return None
        raise
    first, last = info.get("first-entry"), info.get("last-entry")
    return StreamBounds(
        length=int(info["length"]),
        first=StreamID.parse(first[0]) if first else None,
        last=StreamID.parse(last[0]) if last else None,
        last_generated=StreamID.parse(info["last-generated-id"]),
        entries_added=int(info["entries-added"]) if "entries-added" in info else None,
    )


def xrange_pages(
    client: redis.Redis, key: str, lo: StreamID, hi: StreamID, count: int
) -> Iterator[list[RawEntry]]:
    """Pages of entries in inclusive ``[lo, hi]``, ascending, at most ``count`` per page."""
    cursor = lo
    while cursor <= hi:
        page = client.execute_command("XRANGE", key, str(cursor), str(hi), "COUNT", count)
        if not page:
            return
        yield page
        if len(page) < count:
            return
        last = StreamID.parse(page[-1][0])
        if last >= hi:
            return
        cursor = last.next()


def ids_after(client: redis.Redis, key: str, after: str, until: str, count: int) -> list[str]:
    """IDs of up to ``count`` entries in ``(after, until]`` (fields are fetched and dropped)."""
    page = client.execute_command("XRANGE", key, f"({after}", until, "COUNT", count)
    return [entry[0] for entry in page or []]


def check_streams(client: redis.Redis, keys: Sequence[str]) -> None:
    """Before Spark starts: the server answers, the login works, and every key is a stream
    or absent. Raises redis-py's errors, or ``PipelineError`` naming the key."""
    pipe = client.pipeline(transaction=False)
    for key in keys:
        pipe.type(key)
    for key, kind in zip(keys, pipe.execute(), strict=True):
        if kind not in ("stream", "none"):
            raise PipelineError(
                f"key {key!r} holds a {kind}, not a stream: remove it from --streams, "
                "or check the database number in --url")


def server_time_ms(client: redis.Redis) -> int:
    seconds, micros = client.time()
    return int(seconds) * 1000 + int(micros) // 1000


def supports_idmp(client: redis.Redis) -> bool:
    """Whether ``XADD`` accepts ``IDMP`` (Redis 8.6+), read from ``COMMAND DOCS XADD``.

    A server without ``COMMAND DOCS`` (or with docs that omit the argument) is treated as not
    supporting it, which selects the deterministic-ID fallback: safe either way.
    """
    try:
        # "COMMAND DOCS" as one name: redis-py then uses its DOCS parser, not COMMAND's.
        docs = client.execute_command("COMMAND DOCS", "XADD")
    except redis.ResponseError:
        return False
    return "idmp" in repr(docs).lower()
