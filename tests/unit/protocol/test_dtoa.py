"""Doubles printed as Redis 8.6 prints them (``sluice.protocol.dtoa``).

The expected texts are what redis-server 8.6.3 answered to ZSCORE for these scores (the
differential tests compare many more, generated, against the running reference).
"""

from __future__ import annotations

import math
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sluice.protocol import encode
from sluice.protocol.dtoa import d2string, double2ll, grisu2
from sluice.protocol.types import Double


@pytest.mark.parametrize("value, text", [
    (1.5, b"1.5"), (0.1, b"0.1"), (-0.0, b"-0"), (0.0, b"0"), (1e-7, b"1e-7"),
    (1e17, b"100000000000000000"), (1e18, b"1000000000000000000"), (5e18, b"5e+18"),
    (1e19, b"1e+19"), (1.2345678901234567e19, b"12345678901234567000"),
    (123456789.123, b"123456789.123"), (1e-5, b"0.00001"), (0.0001, b"0.0001"),
    (1.5e300, b"1.5e+300"), (4e-320, b"4e-320"), (1e-320, b"1e-320"), (math.inf, b"inf"),
    (-math.inf, b"-inf"), (math.nan, b"nan"), (1 / 3, b"0.3333333333333333"),
    (-2.5, b"-2.5"), (5e-324, b"5e-324"), (1.7976931348623157e308, b"1.7976931348623157e+308"),
])
def test_known_redis_texts(value: float, text: bytes) -> None:
    assert d2string(value) == text


def test_doubles_in_replies() -> None:
    assert encode(Double(0.1), resp3=False) == b"$3\r\n0.1\r\n"
    assert encode(Double(-math.inf), resp3=True) == b",-inf\r\n"


def test_integers_print_as_integers_up_to_half_of_llong_max() -> None:
    assert double2ll(4.6e18) == 4600000000000000000
    assert double2ll(4.7e18) is None
    assert double2ll(1.5) is None


@given(st.integers(0, 2**64 - 1))
def test_every_double_round_trips(bits: int) -> None:
    value = struct.unpack("<d", struct.pack("<Q", bits))[0]
    if math.isnan(value):
        assert d2string(value) == b"nan"
        return
    text = d2string(value)
    back = float(text)
    assert back == value
    if value and not math.isinf(value) and double2ll(value) is None:
        digits, _ = grisu2(abs(value))
        assert 1 <= len(digits) <= 17
