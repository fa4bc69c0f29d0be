"""Glob-style pattern matching exactly as Redis does it (KEYS, SCAN MATCH, pub/sub patterns).

Mirrors the semantics of Redis's ``stringmatchlen`` (util.c), quirks included:

* ``*`` matches any run of bytes, ``?`` one byte, ``\\x`` the byte ``x``;
* ``[...]`` a class: ``^`` negates, ``a-z`` is a range (reversed ranges are swapped), ``\\``
  escapes inside the class; a ``-`` right before the closing ``]`` makes ``]`` the range end;
  a class left open at the end of the pattern takes the rest of the pattern as its members;
* a trailing ``\\`` is a literal backslash;
* the empty string matches only the empty pattern (``*`` does not match ``""``: KEYS and SCAN
  special-case the pattern ``*`` before matching, as Redis does);
* Redis gives up (no match) once a match needs more than 1000 nested ``*``: so do we.

``stringmatch`` is the reference implementation: the backtracking of Redis's recursive matcher
reduced to "retry from the innermost ``*``", which gives the same answers (once an inner ``*``
has tried every position, Redis abandons every outer one too). ``compile_pattern`` returns a
matcher for one pattern, normally a compiled ``re`` built from the same parse (much faster for
KEYS over a large keyspace); the reference is used where a regex cannot express the rule.
Pure functions over ``bytes``; imports nothing of Sluice's.
"""

from __future__ import annotations

import re
from collections.abc import Callable

MAX_NESTING = 1000  # Redis's limit on nested '*' (protection against abusive patterns)

_STAR, _QMARK, _LBRACKET, _RBRACKET, _BSLASH, _CARET, _DASH = b"*?[]\\^-"


def _lower(c: int) -> int:
    return c + 32 if 65 <= c <= 90 else c


def _class_end(pattern: bytes, p: int, c: int, nocase: bool) -> tuple[int, bool]:
    """Parse the class starting after ``[`` at ``p``; returns (index of its last byte, matched)."""
    plen = len(pattern)
    negate = p < plen and pattern[p] == _CARET
    if negate:
        p += 1
    matched = False
    while True:
        ch = pattern[p] if p < plen else -1
        if ch == _BSLASH and plen - p >= 2:
            p += 1
            if pattern[p] == c:
                matched = True
        elif ch == _RBRACKET:
            break
        elif p >= plen:
            p -= 1  # an open class ends on the pattern's last byte
            break
        elif plen - p >= 3 and pattern[p + 1] == _DASH:
            lo, hi = ch, pattern[p + 2]
            if lo > hi:
                lo, hi = hi, lo
            x = c
            if nocase:
                lo, hi, x = _lower(lo), _lower(hi), _lower(c)
            p += 2
            if lo <= x <= hi:
                matched = True
        elif ch == c or (nocase and _lower(ch) == _lower(c)):
            matched = True
        p += 1
    return p, matched != negate


def stringmatch(pattern: bytes, string: bytes, nocase: bool = False) -> bool:
    """True if ``string`` matches the glob ``pattern`` (Redis's ``stringmatchlen``)."""
    plen, slen = len(pattern), len(string)
    p = s = 0
    star_p = -1  # pattern index just after the innermost '*' reached so far
    star_s = 0  # string index where the current attempt for that '*' started
    depth = 0  # '*' reached on the current path (Redis's recursion depth)
    while True:
        failed = False
        while p < plen and s < slen:
            ch = pattern[p]
            if ch == _STAR:
                while p + 1 < plen and pattern[p + 1] == _STAR:
                    p += 1
                if p == plen - 1:
                    return True
                depth += 1
                if depth > MAX_NESTING:
                    return False
                star_p, star_s = p + 1, s
                p += 1
                continue
            if ch == _QMARK:
                s += 1
            elif ch == _LBRACKET:
                p, ok = _class_end(pattern, p + 1, string[s], nocase)
                if not ok:
                    failed = True
                    break
                s += 1
            else:
                if ch == _BSLASH and plen - p >= 2:
                    p += 1
                    ch = pattern[p]
                c = string[s]
                if ch != c and not (nocase and _lower(ch) == _lower(c)):
                    failed = True
                    break
                s += 1
            p += 1
            if s == slen:
                while p < plen and pattern[p] == _STAR:
                    p += 1
                break
        if not failed and p == plen and s == slen:
            return True
        # Retry the innermost '*' one byte further on (it must leave a byte to match).
        if star_p < 0:
            return False
        star_s += 1
        if star_s >= slen:
            return False
        p, s = star_p, star_s


def _items(pattern: bytes, nocase: bool) -> list[bytes | None]:
    """The pattern as a list of items: None for a run of ``*``, else the set of bytes one
    position accepts (parsed exactly as ``stringmatch`` walks it)."""
    plen = len(pattern)
    out: list[bytes | None] = []
    p = 0
    while p < plen:
        ch = pattern[p]
        if ch == _STAR:
            while p + 1 < plen and pattern[p + 1] == _STAR:
                p += 1
            out.append(None)
        elif ch == _QMARK:
            out.append(bytes(range(256)))
        elif ch == _LBRACKET:
            end = p
            accepted = bytearray()
            for c in range(256):
                end, ok = _class_end(pattern, p + 1, c, nocase)
                if ok:
                    accepted.append(c)
            p = end
            out.append(bytes(accepted))
        else:
            if ch == _BSLASH and plen - p >= 2:
                p += 1
                ch = pattern[p]
            if nocase and 65 <= _lower(ch) - 32 <= 90:
                out.append(bytes((ch, ch ^ 32)))
            else:
                out.append(bytes((ch,)))
        p += 1
    return out


def _segment(items: list[bytes]) -> re.Pattern[bytes]:
    """A regex for a star-free run of items (fixed width: one byte per item)."""
    parts = []
    for accepted in items:
        if len(accepted) == 1:
            parts.append(re.escape(accepted))
        elif not accepted:
            parts.append(b"(?!)")
        elif len(accepted) == 256:
            parts.append(b".")
        else:
            parts.append(b"[" + b"".join(b"\\x%02x" % c for c in accepted) + b"]")
    return re.compile(b"".join(parts), re.DOTALL)


def compile_pattern(pattern: bytes, nocase: bool = False) -> Callable[[bytes], bool]:
    """A matcher for one pattern, equivalent to ``stringmatch(pattern, s, nocase)``.

    The pattern is cut at its stars into runs of fixed-width items: the first run must match
    at the start, the last at the end, and the ones between are placed leftmost, in order
    (for fixed-width runs the leftmost placement is always a valid one). That is exact and
    O(len(string) * len(pattern)) whatever the pattern: a plain regex with several ``.*``
    would backtrack polynomially on hostile patterns, which KEYS must not allow.
    """
    if not pattern:
        return lambda s: not s
    if not nocase and not any(c in pattern for c in b"?[\\"):
        if b"*" not in pattern:
            return pattern.__eq__
        prefix = pattern.rstrip(b"*")
        if prefix and b"*" not in prefix:  # 'user:*', the usual ACL and SCAN pattern
            return lambda s: s.startswith(prefix) and len(s) > 0
    items = _items(pattern, nocase)
    stars = items.count(None)
    if stars > MAX_NESTING:  # leave Redis's nesting limit to the reference
        return lambda s: stringmatch(pattern, s, nocase)
    runs: list[list[bytes]] = [[]]
    for item in items:
        if item is None:
            runs.append([])
        else:
            runs[-1].append(item)
    compiled = [_segment(run) for run in runs]
    if stars == 0:
        whole = compiled[0].fullmatch
        return lambda s: whole(s) is not None
    head, tail = compiled[0], compiled[-1]
    head_len, tail_len = len(runs[0]), len(runs[-1])
    middle = compiled[1:-1]
    fixed = head_len + tail_len + sum(len(r) for r in runs[1:-1])

    def match(s: bytes) -> bool:
        n = len(s)
        if not s or n < fixed:
            return False
        if head.match(s) is None or tail.fullmatch(s, n - tail_len) is None:
            return False
        pos, limit = head_len, n - tail_len
        for seg in middle:
            m = seg.search(s, pos, limit)
            if m is None:
                return False
            pos = m.end()
        return True

    return match
