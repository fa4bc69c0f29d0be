"""Reply types: the Python type of a reply decides its wire type.

A handler returns plain Python values and the encoder (``encoder.py``) turns them into RESP2 or
RESP3 bytes for the connection's protocol version:

=================  ==========================  ==========================
Python value       RESP2                       RESP3
=================  ==========================  ==========================
``bytes``          ``$`` bulk string           ``$`` bulk string
``int``            ``:`` integer               ``:`` integer
``None``           ``$-1`` null bulk           ``_`` null
``NULL_ARRAY``     ``*-1`` null array          ``_`` null
``list``/``tuple`` ``*`` array                 ``*`` array
``SimpleString``   ``+``                       ``+``
``ErrorReply``     ``-``                       ``-``
``Map``            flat ``*`` array            ``%`` map
``Set``            ``*`` array                 ``~`` set
``Double``         ``$`` bulk (Redis format)   ``,`` double
``Bool``           ``:`` 1/0                   ``#`` t/f
``Verbatim``       ``$`` bulk                  ``=`` verbatim
``BigNumber``      ``$`` bulk                  ``(`` big number
``Push``           ``*`` array                 ``>`` push
``Replies``        its items, one after another (several replies from one command)
``Raw``            bytes written as they are
=================  ==========================  ==========================

``str`` is never a reply: handlers deal in bytes, as Redis does.

This module imports nothing of Sluice's.
"""

from __future__ import annotations

from typing import Any, TypeAlias


class SimpleString(bytes):
    """A ``+`` status reply such as ``+OK``."""

    __slots__ = ()


class ErrorReply(bytes):
    """A ``-`` error reply; the bytes are the whole message, code included (``ERR ...``)."""

    __slots__ = ()


class Verbatim(bytes):
    """A RESP3 verbatim string (``=``); ``txt`` format. A bulk string in RESP2."""

    __slots__ = ()


class BigNumber(bytes):
    """A RESP3 big number (``(``), given as its decimal digits. A bulk string in RESP2."""

    __slots__ = ()


class Double(float):
    """A double: ``,`` in RESP3, a bulk string formatted as Redis formats doubles in RESP2."""

    __slots__ = ()


class Bool(int):
    """A boolean: ``#t``/``#f`` in RESP3, the integer 1/0 in RESP2."""

    __slots__ = ()


class Map(dict[Any, Any]):
    """A map: ``%`` in RESP3, a flat array of key, value, key, value ... in RESP2."""

    __slots__ = ()


class Set(list[Any]):
    """A set (kept as a list to preserve the order Redis would send): ``~`` in RESP3."""

    __slots__ = ()


class Push(list[Any]):
    """An out-of-band push (``>``) in RESP3, a plain array in RESP2 (pub/sub, invalidation)."""

    __slots__ = ()


class Replies(list[Any]):
    """Several top-level replies from one command, written back to back (SUBSCRIBE with
    three channels answers three confirmations). Inside EXEC they still count as one of
    EXEC's elements, which is what Redis sends too."""

    __slots__ = ()


class Raw(bytes):
    """Bytes that are already encoded RESP and are written unchanged (precomputed replies)."""

    __slots__ = ()


class _NullArray:
    """The null array: ``*-1`` in RESP2, ``_`` in RESP3 (XREAD timeout, BLPOP timeout ...)."""

    __slots__ = ()
    _instance: _NullArray | None = None

    def __new__(cls) -> _NullArray:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "NULL_ARRAY"

    def __bool__(self) -> bool:
        return False


NULL_ARRAY = _NullArray()

Reply: TypeAlias = (bytes | bytearray | memoryview | int | float | None | _NullArray
                    | list[Any] | tuple[Any, ...] | dict[Any, Any])
"""Anything the encoder accepts (see the table above; the reply classes subclass these).
``str`` is not one. Array elements are not checked: ``list`` is invariant, so a precise
recursive type would make every list a handler builds need its own annotation."""

OK = SimpleString(b"OK")
QUEUED = SimpleString(b"QUEUED")
PONG = SimpleString(b"PONG")
