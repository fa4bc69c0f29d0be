"""Data source options: case-insensitive lookup, parsed once into frozen dataclasses.

Spark hands options over in a case-insensitive map whose keys are lower-cased when the map is
turned into a plain dict (``dict(options)``), so ``options["maxRecordsPerTrigger"]`` on such a
dict fails. We never convert: :func:`get_option` compares lower-cased names, which works on
Spark's map and on a plain dict built by hand in a test alike.

The parsed dataclasses are small and picklable: the reader objects that carry them are sent
to executors, so they hold settings only, never a connection.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from sluice.pipeline.ids import MAX_ID, MIN_ID, StreamID, parse_bound

DEFAULT_URL = "redis://127.0.0.1:6379/0"

# Option names as users write them (documented spelling); lookups ignore case.
URL = "url"
STREAMS = "streams"
STREAM = "stream"
FROM = "from"
TO = "to"
PARTITIONS_PER_STREAM = "partitionsPerStream"
BATCH_SIZE = "batchSize"
PARSE_ERRORS = "parseErrors"
STARTING_OFFSETS = "startingOffsets"
MAX_RECORDS_PER_TRIGGER = "maxRecordsPerTrigger"
GROUP = "group"
FAIL_ON_DATA_LOSS = "failOnDataLoss"
IDEMPOTENT = "idempotent"
PRODUCER_ID = "producerId"
SOCKET_TIMEOUT = "socketTimeout"
# Internal (sluice-archive's live progress): "host:port" of a UDP socket on the driver to
# which each reading task sends the number of rows of every page it reads.
PROGRESS_ADDRESS = "progressAddress"
# Fault injection for tests of task retries: the first attempt of partition 0 fails after
# writing this many rows (Spark then retries the task).
FAIL_FIRST_ATTEMPT_AFTER = "failFirstAttemptAfterRows"


def get_option(options: Mapping[str, str], name: str, default: str | None = None) -> str | None:
    """Case-insensitive option lookup that never rebuilds ``options`` as a dict."""
    wanted = name.lower()
    for key in options:
        if key.lower() == wanted:
            value = options[key]
            return None if value is None else str(value)
    return default


def _int_option(options: Mapping[str, str], name: str, default: int, minimum: int) -> int:
    raw = get_option(options, name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"option {name} must be an integer, got {raw!r}") from None
    if value < minimum:
        raise ValueError(f"option {name} must be >= {minimum}, got {value}")
    return value


def _float_option(options: Mapping[str, str], name: str, default: float) -> float:
    raw = get_option(options, name)
    try:
        return default if raw is None else float(raw)
    except ValueError:
        raise ValueError(f"option {name} must be a number, got {raw!r}") from None


def _choice(options: Mapping[str, str], name: str, choices: tuple[str, ...]) -> str:
    raw = (get_option(options, name) or choices[0]).strip().lower()
    if raw not in choices:
        raise ValueError(f"option {name} must be one of {', '.join(choices)}, got {raw!r}")
    return raw


def _address(raw: str | None) -> tuple[str, int] | None:
    if not raw:
        return None
    host, _, port = raw.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"option {PROGRESS_ADDRESS} must be host:port, got {raw!r}")
    return host.strip("[]"), int(port)


def parse_streams(raw: str | None) -> tuple[str, ...]:
    names = tuple(s.strip() for s in (raw or "").split(",") if s.strip())
    if not names:
        raise ValueError("option 'streams' is required: a comma-separated list of stream keys")
    if len(set(names)) != len(names):
        raise ValueError(f"option 'streams' lists a stream twice: {raw!r}")
    return names


@dataclass(frozen=True, slots=True)
class ConnectionOptions:
    url: str
    socket_timeout: float

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> ConnectionOptions:
        return cls(
            url=get_option(options, URL, DEFAULT_URL) or DEFAULT_URL,
            socket_timeout=_float_option(options, SOCKET_TIMEOUT, 30.0),
        )


@dataclass(frozen=True, slots=True)
class ReadOptions:
    """Options of the batch and streaming readers."""

    conn: ConnectionOptions
    streams: tuple[str, ...]
    start: StreamID  # inclusive, resolved from 'from'
    end: StreamID  # inclusive, resolved from 'to'
    partitions_per_stream: int
    batch_size: int
    null_on_parse_error: bool
    starting_offsets: str
    max_records_per_trigger: int | None
    group: str | None
    progress: tuple[str, int] | None = None  # PROGRESS_ADDRESS, parsed
    fail_on_data_loss: bool = True  # streaming: fail when a checkpoint was trimmed (dataloss.py)

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> ReadOptions:
        max_rows = get_option(options, MAX_RECORDS_PER_TRIGGER)
        return cls(
            conn=ConnectionOptions.from_options(options),
            streams=parse_streams(get_option(options, STREAMS)),
            start=parse_bound(get_option(options, FROM, "-") or "-", is_start=True),
            end=parse_bound(get_option(options, TO, "+") or "+", is_start=False),
            partitions_per_stream=_int_option(options, PARTITIONS_PER_STREAM, 1, 1),
            batch_size=_int_option(options, BATCH_SIZE, 10_000, 1),
            null_on_parse_error=_choice(options, PARSE_ERRORS, ("fail", "null")) == "null",
            starting_offsets=get_option(options, STARTING_OFFSETS, "earliest") or "earliest",
            max_records_per_trigger=(
                None if max_rows is None else _int_option(options, MAX_RECORDS_PER_TRIGGER, 0, 1)
            ),
            group=get_option(options, GROUP) or None,
            progress=_address(get_option(options, PROGRESS_ADDRESS)),
            fail_on_data_loss=_choice(options, FAIL_ON_DATA_LOSS, ("true", "false")) == "true",
        )

    @property
    def bounded(self) -> bool:
        return (self.start, self.end) != (MIN_ID, MAX_ID)


@dataclass(frozen=True, slots=True)
class WriteOptions:
    """Options of the batch and streaming writers."""

    conn: ConnectionOptions
    stream: str | None  # target when the rows carry no 'stream' column
    batch_size: int  # XADDs per pipeline round trip
    idempotent: str  # off | auto | idmp | ids
    producer_id: str | None
    fail_first_attempt_after: int | None = None

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> WriteOptions:
        raw = (get_option(options, IDEMPOTENT) or "off").strip().lower()
        aliases = {"false": "off", "no": "off", "true": "auto", "yes": "auto"}
        mode = aliases.get(raw, raw)
        if mode not in ("off", "auto", "idmp", "ids"):
            raise ValueError(f"option idempotent must be off, auto, idmp or ids, got {raw!r}")
        return cls(
            conn=ConnectionOptions.from_options(options),
            stream=get_option(options, STREAM) or None,
            batch_size=_int_option(options, BATCH_SIZE, 1_000, 1),
            idempotent=mode,
            producer_id=get_option(options, PRODUCER_ID) or None,
            fail_first_attempt_after=(
                _int_option(options, FAIL_FIRST_ATTEMPT_AFTER, 0, 1)
                if get_option(options, FAIL_FIRST_ATTEMPT_AFTER) is not None
                else None
            ),
        )
