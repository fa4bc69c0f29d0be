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


def _class_bytes(pattern: bytes, p: int) -> tuple[int, bytes]:
    """The set of bytes a class starting after ``[`` at ``p`` accepts, and where it ends."""
    end = p
    accepted = bytearray()
    for c in range(256):
        end, ok = _class_end(pattern, p, c, False)
        if ok:
            accepted.append(c)
    return end, bytes(accepted)


def _to_regex(pattern: bytes) -> bytes | None:
    """A regex equivalent to ``pattern`` for non-empty strings, or None if there is none."""
    plen = len(pattern)
    out = [b"(?s)\\A"]
    p = stars = 0
    while p < plen:
        ch = pattern[p]
        if ch == _STAR:
            while p + 1 < plen and pattern[p + 1] == _STAR:
                p += 1
            stars += 1
            out.append(b".*")
        elif ch == _QMARK:
            out.append(b".")
        elif ch == _LBRACKET:
            p, accepted = _class_bytes(pattern, p + 1)
            if not accepted:
                out.append(b"(?!)")
            else:
                out.append(b"[" + b"".join(b"\\x%02x" % c for c in accepted) + b"]")
        else:
            if ch == _BSLASH and plen - p >= 2:
                p += 1
                ch = pattern[p]
            out.append(re.escape(bytes((ch,))))
        p += 1
    if stars > MAX_NESTING // 2:  # deep nesting: leave the depth rule to the reference
        return None
    out.append(b"\\Z")
    return b"".join(out)


def compile_pattern(pattern: bytes, nocase: bool = False) -> Callable[[bytes], bool]:
    """A matcher for one pattern, equivalent to ``stringmatch(pattern, s, nocase)``."""
    if nocase:
        return lambda s: stringmatch(pattern, s, True)
    source = _to_regex(pattern)
    if source is None:
        return lambda s: stringmatch(pattern, s)
    match = re.compile(source).match
    return lambda s: bool(s) and match(s) is not None if pattern else not s
