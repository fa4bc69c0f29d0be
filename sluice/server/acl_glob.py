"""Pattern matching for ACL key and channel patterns, safe against hostile keys.

Same answers as Redis's ``stringmatchlen`` (util.c) and ``sluice.storage.glob.stringmatch``,
but with a bounded cost: ACL patterns are checked on the command path against keys chosen by
the client, and a regex with several ``.*`` backtracks polynomially (``*a*a*a*a*a*b`` against
a few hundred ``a`` takes minutes). Redis bounds the same risk with ``skipLongerMatches``.

The pattern is split at its stars into runs of fixed-width items (a literal byte, ``?``, or a
class whose byte set is computed by running Redis's class walk for every byte value). The
first run is anchored at the start, the last at the end, and the runs in between are placed
leftmost, in order, with ``re.search``: for fixed-width runs the leftmost placement is always
a valid one, so the answer is exact and the cost is O(len(key) * len(pattern)).

Deviation: Redis gives up (no match) when a match nests more than 1000 stars; here any number
of stars is matched correctly. Consecutive stars are one star, as in Redis.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable


def _lower(c: int) -> int:
    return c + 32 if 65 <= c <= 90 else c


def _class_items(pat: bytes, i: int, nocase: bool) -> tuple[bytes, int]:
    """The byte set of a class starting after '[', and the index after the class."""
    n = len(pat)
    negate = i < n and pat[i] == 94  # '^'
    if negate:
        i += 1
    exact: set[int] = set()  # escaped bytes: compared case-sensitively even with nocase
    plain: set[int] = set()
    ranges: list[tuple[int, int]] = []
    while True:
        if i < n and pat[i] == 92 and n - i >= 2:  # '\x'
            i += 1
            exact.add(pat[i])
        elif i < n and pat[i] == 93:  # ']'
            break
        elif i >= n:
            i -= 1  # unterminated: the class ends with the pattern
            break
        elif n - i >= 3 and pat[i + 1] == 45:  # 'a-z' (and 'a-]', a range up to ']')
            lo, hi = sorted((pat[i], pat[i + 2]))
            ranges.append((_lower(lo), _lower(hi)) if nocase else (lo, hi))
            i += 2
        else:
            plain.add(_lower(pat[i]) if nocase else pat[i])
        i += 1
    members = bytearray()
    for c in range(256):
        key = _lower(c) if nocase else c
        hit = c in exact or key in plain or any(lo <= key <= hi for lo, hi in ranges)
        if hit != negate:
            members.append(c)
    return bytes(members), i + 1


def _item(members: bytes) -> bytes:
    """One regex item for a byte set, runs of consecutive bytes written as ranges."""
    if not members:
        return b"(?!)"
    if len(members) == 256:
        return b"(?s:.)"
    parts = []
    start = prev = members[0]
    for c in [*members[1:], -1]:
        if c == prev + 1:
            prev = c
            continue
        parts.append(b"\\x%02x" % start if start == prev else b"\\x%02x-\\x%02x" % (start, prev))
        start = prev = c
    return b"[" + b"".join(parts) + b"]"


def _runs(pat: bytes, nocase: bool) -> list[list[bytes]]:
    """Fixed-width runs of regex items, split where the pattern has stars."""
    runs: list[list[bytes]] = [[]]
    i, n = 0, len(pat)
    while i < n:
        c = pat[i]
        if c == 42:  # '*'
            if runs[-1] or len(runs) == 1:
                runs.append([])
            i += 1
            continue
        if c == 63:  # '?'
            runs[-1].append(b"(?s:.)")
            i += 1
            continue
        if c == 91:  # '['
            members, i = _class_items(pat, i + 1, nocase)
            runs[-1].append(_item(members))
            continue
        if c == 92 and n - i >= 2:  # '\x' is the byte x
            i += 1
            c = pat[i]
        if nocase and (65 <= c <= 90 or 97 <= c <= 122):
            runs[-1].append(b"[\\x%02x\\x%02x]" % (_lower(c), _lower(c) - 32))
        else:
            runs[-1].append(re.escape(bytes((c,))))
        i += 1
    return runs


@functools.lru_cache(maxsize=4096)
def compile_pattern(pattern: bytes, nocase: bool = False) -> Callable[[bytes], bool]:
    """A predicate equivalent to ``stringmatchlen(pattern, s, nocase)``."""
    if not pattern:
        return lambda s: not s
    runs = _runs(pattern, nocase)
    if len(runs) == 1:
        if not any(c in pattern for c in b"?[\\") and not nocase:
            return pattern.__eq__  # type: ignore[return-value]
        whole = re.compile(b"".join(runs[0]))
        return lambda s: whole.fullmatch(s) is not None
    if len(runs) == 2 and not runs[1] and not nocase and not any(c in pattern for c in b"?[\\"):
        prefix = pattern.rstrip(b"*")  # 'user:*', the usual ACL pattern
        if prefix:
            return lambda s: s.startswith(prefix)
    head, tail = runs[0], runs[-1]
    head_w, tail_w = len(head), len(tail)
    head_rx = re.compile(b"".join(head)) if head else None
    tail_rx = re.compile(b"".join(tail)) if tail else None
    mids = [(re.compile(b"".join(r)), len(r)) for r in runs[1:-1] if r]

    def match(s: bytes) -> bool:
        n = len(s)
        # Redis never matches the empty string against a non-empty pattern, not even '*'.
        if not n or n < head_w + tail_w:
            return False
        if head_rx is not None and head_rx.match(s) is None:
            return False
        if tail_rx is not None and tail_rx.match(s, n - tail_w) is None:
            return False
        pos, end = head_w, n - tail_w
        for rx, w in mids:
            m = rx.search(s, pos, end)
            if m is None:
                return False
            pos = m.start() + w
        return True

    return match
