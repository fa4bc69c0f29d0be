"""The glob matcher (storage/glob.py): Redis's stringmatchlen rules, and the compiled matcher
agreeing with the reference on random patterns (KEYS agreeing with redis-server is checked in
tests/differential/test_keyspace_diff.py)."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sluice.storage.glob import MAX_NESTING, compile_pattern, stringmatch

CASES = [
    # pattern, string, matches
    (b"*", b"anything", True),
    (b"*", b"", False),  # Redis: "*" needs a byte (KEYS special-cases "*" before matching)
    (b"", b"", True),
    (b"", b"a", False),
    (b"h?llo", b"hello", True),
    (b"h?llo", b"hllo", False),
    (b"h*llo", b"hllo", True),
    (b"h*llo", b"heeeello", True),
    (b"h[ae]llo", b"hallo", True),
    (b"h[ae]llo", b"hillo", False),
    (b"h[^e]llo", b"hallo", True),
    (b"h[^e]llo", b"hello", False),
    (b"h[a-b]llo", b"hbllo", True),
    (b"h[b-a]llo", b"hbllo", True),  # reversed ranges are swapped
    (b"a\\*b", b"a*b", True),
    (b"a\\*b", b"axb", False),
    (b"a\\", b"a\\", True),  # a trailing backslash is literal
    (b"[a-]", b"]", True),  # "-" before "]": the "]" ends the range a..]
    (b"[a-]", b"_", True),  # the range is ]..a, swapped
    (b"[a-]", b"b", False),
    (b"[abc", b"c", True),  # an open class runs to the end of the pattern
    (b"[", b"[", False),
    (b"[^", b"x", True),
    (b"[\\]]", b"]", True),
    (b"[]a]", b"a", False),  # "[]" is an empty class, then "a]" must follow
    (b"[]a]", b"a]", False),
    (b"a*", b"a", True),
    (b"a*?", b"a", False),
    (b"*?", b"a", True),
    (b"**a", b"ba", True),
    (b"a*b*c", b"axxbyyc", True),
    (b"a*b*c", b"axxbyy", False),
]


@pytest.mark.parametrize("pattern,string,expected", CASES)
def test_redis_rules(pattern: bytes, string: bytes, expected: bool) -> None:
    assert stringmatch(pattern, string) is expected
    assert compile_pattern(pattern)(string) is expected


def test_nocase() -> None:
    assert stringmatch(b"HeLLo", b"hello", nocase=True)
    assert stringmatch(b"h[A-Z]llo", b"hello", nocase=True)
    assert not stringmatch(b"h[\\E]llo", b"hello", nocase=True)  # escapes in classes keep case
    assert compile_pattern(b"H*O", nocase=True)(b"hello")
    assert not compile_pattern(b"H*O")(b"hello")


def test_nesting_limit() -> None:
    """Redis stops (no match) at the 1001st nested star; one star fewer still matches."""
    ok = b"a*" * MAX_NESTING + b"b"
    too_deep = b"a*" * (MAX_NESTING + 1) + b"b"
    assert stringmatch(ok, b"a" * MAX_NESTING + b"b")
    assert not stringmatch(too_deep, b"a" * (MAX_NESTING + 1) + b"b")
    assert not compile_pattern(too_deep)(b"a" * (MAX_NESTING + 1) + b"b")


def test_hostile_patterns_are_cheap() -> None:
    pattern = b"*a*a*a*a*a*a*a*a*b"
    subject = b"a" * 20000
    start = time.perf_counter()
    assert not compile_pattern(pattern)(subject)
    assert not stringmatch(pattern, subject)
    assert time.perf_counter() - start < 2.0


_alphabet = st.sampled_from([b"a", b"b", b"A", b"*", b"?", b"[", b"]", b"^", b"-", b"\\"])


@settings(max_examples=400, deadline=None)
@given(pattern=st.lists(_alphabet, max_size=10).map(b"".join),
       string=st.lists(st.sampled_from([b"a", b"b", b"A", b"[", b"]", b"-", b"*"]), max_size=8).map(b"".join),
       nocase=st.booleans())
def test_compiled_matcher_agrees_with_the_reference(pattern: bytes, string: bytes, nocase: bool) -> None:
    assert compile_pattern(pattern, nocase)(string) is stringmatch(pattern, string, nocase)
