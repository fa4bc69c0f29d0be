"""Pure parts of the pipeline: IDs, bounds, range splitting, offsets, options. No Spark."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sluice.pipeline import offsets as off
from sluice.pipeline.idempotency import deterministic_id
from sluice.pipeline.ids import (
    MAX_ID,
    MIN_ID,
    U64_MAX,
    StreamID,
    cutoff_before,
    parse_bound,
    parse_duration_ms,
    split_range,
    split_time_range,
)
from sluice.pipeline.options import ReadOptions, WriteOptions, get_option

ids = st.builds(StreamID, st.integers(0, U64_MAX), st.integers(0, U64_MAX))


# -- IDs and bounds ---------------------------------------------------------------------
def test_parse_and_format_round_trip() -> None:
    assert StreamID.parse("1700000000000-5") == StreamID(1700000000000, 5)
    assert str(StreamID(1, 2)) == "1-2"
    assert StreamID.parse(f"{U64_MAX}-{U64_MAX}") == MAX_ID


@pytest.mark.parametrize(
    "bad", ["", "1", "1-", "-1", "a-1", "+1-0", " 1-0", "1_0-0", "1-2-3", f"{U64_MAX + 1}-0"]
)
def test_parse_rejects_what_redis_rejects(bad: str) -> None:
    with pytest.raises(ValueError):
        StreamID.parse(bad)


def test_next_and_prev_carry_across_ms() -> None:
    assert StreamID(5, U64_MAX).next() == StreamID(6, 0)
    assert StreamID(6, 0).prev() == StreamID(5, U64_MAX)
    with pytest.raises(ValueError):
        MAX_ID.next()
    with pytest.raises(ValueError):
        MIN_ID.prev()


@pytest.mark.parametrize(
    ("text", "is_start", "expected"),
    [
        ("-", True, MIN_ID),
        ("+", False, MAX_ID),
        ("100", True, StreamID(100, 0)),
        ("100", False, StreamID(100, U64_MAX)),
        ("100-3", True, StreamID(100, 3)),
        ("(100-3", True, StreamID(100, 4)),
        ("(100-3", False, StreamID(100, 2)),
        ("(100", True, StreamID(100, 1)),  # Redis: "(100" as a start is 100-0 exclusive
        ("(100", False, StreamID(100, U64_MAX - 1)),  # and as an end 100-max exclusive
        ("(100-0", False, StreamID(99, U64_MAX)),
    ],
)
def test_parse_bound(text: str, is_start: bool, expected: StreamID) -> None:
    assert parse_bound(text, is_start=is_start) == expected


def test_exclusive_bound_past_the_edge_is_an_error() -> None:
    with pytest.raises(ValueError, match="invalid start ID"):
        parse_bound(f"({U64_MAX}-{U64_MAX}", is_start=True)
    with pytest.raises(ValueError, match="invalid end ID"):
        parse_bound("(0-0", is_start=False)


@given(ids)
def test_int_round_trip(value: StreamID) -> None:
    assert StreamID.from_int(value.as_int()) == value
    assert StreamID.parse(str(value)) == value


# -- range splitting --------------------------------------------------------------------
def _check_cover(slices: list[tuple[StreamID, StreamID]], lo: StreamID, hi: StreamID) -> None:
    assert slices[0][0] == lo and slices[-1][1] == hi
    for (a, b), (c, _) in zip(slices, slices[1:], strict=False):
        assert a <= b and b.next() == c


@given(ids, ids, st.integers(1, 50))
def test_split_range_covers_exactly(a: StreamID, b: StreamID, parts: int) -> None:
    lo, hi = min(a, b), max(a, b)
    slices = split_range(lo, hi, parts)
    assert 1 <= len(slices) <= parts
    _check_cover(slices, lo, hi)


@given(ids, ids, st.integers(1, 50))
def test_split_time_range_covers_exactly_and_cuts_on_ms(
    a: StreamID, b: StreamID, parts: int
) -> None:
    lo, hi = min(a, b), max(a, b)
    slices = split_time_range(lo, hi, parts)
    _check_cover(slices, lo, hi)
    if lo.ms != hi.ms:
        assert all(s.seq == 0 for s, _ in slices[1:])


def test_split_small_range_never_makes_empty_slices() -> None:
    assert split_range(StreamID(1, 0), StreamID(1, 2), 10) == [
        (StreamID(1, 0), StreamID(1, 0)),
        (StreamID(1, 1), StreamID(1, 1)),
        (StreamID(1, 2), StreamID(1, 2)),
    ]
    assert split_range(StreamID(2, 0), StreamID(1, 0), 3) == []


def test_split_time_range_balances_by_time() -> None:
    slices = split_time_range(StreamID(1000, 0), StreamID(1999, 7), 4)
    assert [(a.ms, b.ms) for a, b in slices] == [
        (1000, 1249),
        (1250, 1499),
        (1500, 1749),
        (1750, 1999),
    ]


# -- durations --------------------------------------------------------------------------
def test_durations_and_cutoff() -> None:
    assert parse_duration_ms("7d") == 7 * 86_400_000
    assert parse_duration_ms("90s") == 90_000
    assert parse_duration_ms("1.5h") == 5_400_000
    assert cutoff_before(10_000, "2s") == StreamID(8_000, 0)
    with pytest.raises(ValueError):
        parse_duration_ms("7 days")


# -- offsets ----------------------------------------------------------------------------
def test_offsets_json_round_trip_is_stable() -> None:
    streams = ("b", "a")
    positions = off.normalize(streams, {"a": "5-1"})
    assert positions == {"b": "0-0", "a": "5-1"}
    assert list(positions) == ["b", "a"]
    assert off.loads(off.dumps(positions), streams) == positions
    assert off.dumps(positions) == json.dumps({"b": "0-0", "a": "5-1"}, separators=(",", ":"))


def test_starting_offsets() -> None:
    assert off.parse_starting_offsets("Earliest", ["a"]) == "earliest"
    assert off.parse_starting_offsets("latest", ["a"]) == "latest"
    assert off.parse_starting_offsets('{"a": "7-0"}', ["a", "b"]) == {"a": "7-0"}
    with pytest.raises(ValueError, match="not in 'streams'"):
        off.parse_starting_offsets('{"typo": "7-0"}', ["a"])
    with pytest.raises(ValueError, match="JSON"):
        off.parse_starting_offsets("yesterday", ["a"])


def _fake_fetch(data: dict[str, list[str]]) -> off.FetchIds:
    def fetch(stream: str, after: str, until: str, count: int) -> list[str]:
        lo, hi = StreamID.parse(after), StreamID.parse(until)
        return [i for i in data[stream] if lo < StreamID.parse(i) <= hi][:count]

    return fetch


def test_limited_end_shares_the_budget_fairly() -> None:
    data = {"a": [f"{i}-0" for i in range(1, 101)], "b": ["1-0", "2-0"], "c": []}
    start = {"a": "0-0", "b": "0-0", "c": "0-0"}
    latest = {"a": "100-0", "b": "2-0", "c": "0-0"}
    end = off.limited_end(start, latest, 10, _fake_fetch(data))
    # b has only 2 rows; its unused share goes to a: 8 + 2 = 10 rows in total.
    assert end == {"a": "8-0", "b": "2-0", "c": "0-0"}


def test_limited_end_never_passes_latest_and_always_advances() -> None:
    data = {"a": [f"{i}-0" for i in range(1, 6)], "b": [f"{i}-0" for i in range(1, 6)]}
    start = {"a": "0-0", "b": "0-0"}
    assert off.limited_end(start, {"a": "3-0", "b": "0-0"}, 100, _fake_fetch(data)) == {
        "a": "3-0",
        "b": "0-0",
    }
    one = off.limited_end(start, {"a": "5-0", "b": "5-0"}, 1, _fake_fetch(data))
    assert one != start


# -- options ----------------------------------------------------------------------------
class CaseInsensitive(dict[str, str]):
    """Spark's view: keys stored lower-cased."""

    def __init__(self, raw: dict[str, str]) -> None:
        super().__init__({k.lower(): v for k, v in raw.items()})


def test_options_are_case_insensitive() -> None:
    raw = {
        "URL": "redis://x:1/0",
        "Streams": "a, b",
        "maxRecordsPerTrigger": "5",
        "PARTITIONSPERSTREAM": "3",
        "From": "(10-0",
    }
    for options in (raw, CaseInsensitive(raw)):
        opts = ReadOptions.from_options(options)
        assert opts.conn.url == "redis://x:1/0"
        assert opts.streams == ("a", "b")
        assert opts.max_records_per_trigger == 5
        assert opts.partitions_per_stream == 3
        assert opts.start == StreamID(10, 1)
    assert get_option({"MaxRecordsPerTrigger": "1"}, "maxrecordspertrigger") == "1"


def test_option_errors_name_the_option() -> None:
    with pytest.raises(ValueError, match="streams"):
        ReadOptions.from_options({})
    with pytest.raises(ValueError, match="batchSize"):
        ReadOptions.from_options({"streams": "a", "batchSize": "0"})
    with pytest.raises(ValueError, match="idempotent"):
        WriteOptions.from_options({"idempotent": "maybe"})
    assert WriteOptions.from_options({"IDEMPOTENT": "true"}).idempotent == "auto"


def test_deterministic_ids_order_by_partition_then_row() -> None:
    a, b = deterministic_id(1000, 0, 7), deterministic_id(1000, 1, 0)
    assert StreamID.parse(a) < StreamID.parse(b)
    assert a == "1000-7"


def test_import_sluice_pipeline_does_not_import_pyspark() -> None:
    code = "import sys, sluice, sluice.pipeline; assert 'pyspark' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
