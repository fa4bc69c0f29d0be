"""Errors of the stream storage layer, each carrying Redis's exact error text.

Role: one place for the stream errors. Handlers let them propagate; dispatch sends
``str(err)`` of a :class:`StreamError` as the ``-`` reply, unchanged.
Texts are those of Redis's ``t_stream.c`` (and of the redis.io docs for
the 8.x additions).

Imports nothing of ours.
"""

from __future__ import annotations

from typing import Literal

__all__ = [
    "BusyGroupError",
    "IdOverflowError",
    "IdTooSmallError",
    "IdZeroError",
    "IdmpConfigError",
    "InvalidStreamID",
    "StreamError",
    "StreamExhaustedError",
    "StreamTooLargeError",
    "XSetIdError",
]


class StreamError(Exception):
    """Base of every error raised by the stream storage layer.

    ``str(err)`` is the exact Redis error text, prefix included.
    """


class InvalidStreamID(StreamError):
    """An argument that is not a valid stream ID."""

    def __init__(self) -> None:
        super().__init__("ERR Invalid stream ID specified as stream command argument")


class IdTooSmallError(StreamError):
    def __init__(self) -> None:
        super().__init__(
            "ERR The ID specified in XADD is equal or smaller than the target stream top item"
        )


class IdZeroError(StreamError):
    def __init__(self) -> None:
        super().__init__("ERR The ID specified in XADD must be greater than 0-0")


class StreamExhaustedError(StreamError):
    def __init__(self) -> None:
        super().__init__(
            "ERR The stream has exhausted the last possible ID, unable to add more items"
        )


class StreamTooLargeError(StreamError):
    def __init__(self) -> None:
        super().__init__("ERR Elements are too large to be stored")


class IdOverflowError(StreamError):
    """An exclusive interval bound that cannot be moved (``(+`` style edge cases)."""

    def __init__(self, which: Literal["start", "end"]) -> None:
        super().__init__(f"ERR invalid {which} ID for the interval")


class XSetIdError(StreamError):
    """One of XSETID's validation failures; the message says which."""


class BusyGroupError(StreamError):
    def __init__(self) -> None:
        super().__init__("BUSYGROUP Consumer Group name already exists")


class IdmpConfigError(StreamError):
    """XCFGSET value out of range (``ERR invalid duration`` / ``ERR invalid maxsize``)."""
