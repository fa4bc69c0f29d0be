"""An argument cursor that words parse errors as Redis does.

``Args`` walks ``argv`` left to right. Integer and float parsing follow Redis's rules
(``string2ll``, ``strtold``-like), so ``01``, ``+1``, `` 1`` or ``1_0`` are refused where Redis
refuses them, even though Python's ``int()`` would accept them.
"""

from __future__ import annotations

import math

from sluice.protocol import string2ll

from .errors import NOT_FLOAT, NOT_INTEGER, RANGE_LONG, SYNTAX, CommandError, ConfigError

LONG_MAX = 2**63 - 1


def parse_int(value: bytes, error: str = NOT_INTEGER) -> int:
    """A 64-bit signed integer, strictly as Redis's ``string2ll``."""
    n = string2ll(value)
    if n is None:
        raise CommandError(error)
    return n


def parse_range_long(raw: bytes, lo: int, hi: int, msg: str | None = None) -> int:
    """Redis's ``getRangeLongFromObjectOrReply``: an integer in ``[lo, hi]``; ``msg`` words
    every failure when given, else Redis's own two messages."""
    n = parse_int(raw, msg) if msg else parse_int(raw)
    if not lo <= n <= hi:
        raise CommandError(msg if msg else RANGE_LONG % (lo, hi))
    return n


_SPACES = frozenset(b" \t\n\v\f\r\x00")


_MIN_ELEMENT = 6  # the shortest element of an array reply: an empty bulk string, $0\r\n\r\n


def capped_repeats(count: int, room: int | None) -> int:
    """How many elements a reply of ``count`` repeating picks (SRANDMEMBER, HRANDFIELD,
    ZRANDMEMBER with a negative count) needs to build: all of them, or, when the client's
    output room is bounded (``ctx.reply_room()``), just enough to pass it, since a reply
    past it closes the client unsent. Redis's loops stop there too, the client flagged to
    close; without it a count of -10^9 would build a billion-element reply first."""
    if room is None:
        return count
    return min(count, room // _MIN_ELEMENT + 1)


_UNITS = {b"": 1, b"b": 1, b"k": 1000, b"kb": 1024, b"m": 1000**2, b"mb": 1024**2,
          b"g": 1000**3, b"gb": 1024**3}


def parse_memory(value: bytes) -> int:
    """``1gb`` -> bytes, as Redis's ``memtoull`` (case-insensitive units); ConfigError if
    it is not a memory value."""
    v = value.strip().lower()
    i = len(v)
    while i and not v[i - 1 : i].isdigit():
        i -= 1
    num, unit = v[:i], v[i:]
    if not num or not num.isdigit() or unit not in _UNITS:
        raise ConfigError("argument must be a memory value")
    return int(num) * _UNITS[unit]


def has_spaces(s: bytes) -> bool:
    """Redis's ``ACLStringHasSpaces``: whitespace or NUL (not allowed in ACL user names and
    patterns)."""
    return any(c in _SPACES for c in s)


def parse_float(value: bytes, error: str = NOT_FLOAT) -> float:
    """A double as Redis's ``string2d``/``strtold``: no spaces, no NaN, ``inf`` allowed."""
    if not value or value[:1].isspace() or value[-1:].isspace():
        raise CommandError(error)
    try:
        f = float(value)
    except ValueError:
        raise CommandError(error) from None
    if math.isnan(f) or b"_" in value:
        raise CommandError(error)
    return f


class Args:
    """Cursor over a command's arguments, starting after the command name."""

    __slots__ = ("argv", "pos")

    def __init__(self, argv: list[bytes], pos: int = 1) -> None:
        self.argv = argv
        self.pos = pos

    def __len__(self) -> int:
        """Arguments left."""
        return len(self.argv) - self.pos

    def __bool__(self) -> bool:
        return self.pos < len(self.argv)

    def next(self) -> bytes:
        """The next argument; ``ERR syntax error`` when there is none."""
        if self.pos >= len(self.argv):
            raise CommandError(SYNTAX)
        arg = self.argv[self.pos]
        self.pos += 1
        return arg

    next_key = next

    def next_upper(self) -> bytes:
        return self.next().upper()

    def peek_upper(self) -> bytes | None:
        return self.argv[self.pos].upper() if self.pos < len(self.argv) else None

    def next_int(self, error: str = NOT_INTEGER) -> int:
        return parse_int(self.next(), error)

    def next_float(self, error: str = NOT_FLOAT) -> float:
        return parse_float(self.next(), error)

    def rest(self) -> list[bytes]:
        """All remaining arguments (the cursor moves to the end)."""
        out = self.argv[self.pos :]
        self.pos = len(self.argv)
        return out

    def expect_end(self) -> None:
        if self.pos < len(self.argv):
            raise CommandError(SYNTAX)
