"""A line-by-line transcription of Redis's recursive ``stringmatchlen_impl`` (util.c), the
oracle for the glob tests: slow and exponential on purpose, never used by the server."""

from __future__ import annotations


def _lower(c: int) -> int:
    return c + 32 if 65 <= c <= 90 else c


def reference_match(pattern: bytes, string: bytes, nocase: bool = False) -> bool:
    """A direct transcription of Redis's recursive stringmatchlen_impl."""
    def low(c: int) -> int:
        return _lower(c) if nocase else c

    def rec(p: int, s: int) -> bool:
        plen, slen = len(pattern) - p, len(string) - s
        while plen and slen:
            c = pattern[p]
            if c == 42:
                while plen > 1 and pattern[p + 1] == 42:
                    p += 1
                    plen -= 1
                if plen == 1:
                    return True
                while slen:
                    if rec(p + 1, s):
                        return True
                    s += 1
                    slen -= 1
                return False
            if c == 63:
                s += 1
                slen -= 1
            elif c == 91:
                p += 1
                plen -= 1
                neg = plen > 0 and pattern[p] == 94
                if neg:
                    p += 1
                    plen -= 1
                hit = False
                while True:
                    if plen >= 2 and pattern[p] == 92:
                        p += 1
                        plen -= 1
                        if pattern[p] == string[s]:
                            hit = True
                    elif plen > 0 and pattern[p] == 93:
                        break
                    elif plen == 0:
                        p -= 1
                        plen += 1
                        break
                    elif plen >= 3 and pattern[p + 1] == 45:
                        lo, hi = pattern[p], pattern[p + 2]
                        if lo > hi:
                            lo, hi = hi, lo
                        ch = string[s]
                        if nocase:
                            lo, hi, ch = _lower(lo), _lower(hi), _lower(ch)
                        p += 2
                        plen -= 2
                        if lo <= ch <= hi:
                            hit = True
                    elif low(pattern[p]) == low(string[s]):
                        hit = True
                    p += 1
                    plen -= 1
                if neg:
                    hit = not hit
                if not hit:
                    return False
                s += 1
                slen -= 1
            else:
                if c == 92 and plen >= 2:
                    p += 1
                    plen -= 1
                if low(pattern[p]) != low(string[s]):
                    return False
                s += 1
                slen -= 1
            p += 1
            plen -= 1
            if slen == 0:
                while plen and pattern[p] == 42:
                    p += 1
                    plen -= 1
                break
        return plen == 0 and slen == 0
    return rec(0, 0)
