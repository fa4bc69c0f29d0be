"""Row layout: stream entries -> Arrow record batches, with optional typed fields.

The fixed schema is ``stream string, id string, ms long, seq long, fields map<string,string>``.
A user schema (``spark.read.schema(...)``) may pick any of those five metadata columns and add
columns of other names: each such column is the entry *field* of that name, parsed from its
string value into the column's type. A missing field is null; a value that does not parse is an
error naming the stream, entry ID, field, value and type (or null with ``parseErrors=null``).

Invariants:
- Batches match ``to_arrow_schema(schema)`` exactly (Spark rejects any difference in type or
  nullability), so the Arrow schema comes from the same function Spark uses.
- Parsing is vectorised with ``pyarrow.compute.cast``; only a failing batch is re-parsed value
  by value, to find and name the offending value.

Imports pyarrow and pyspark: only the Spark side of the package imports this module.
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import accumulate, chain
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

META_TYPES: dict[str, DataType] = {
    "stream": StringType(),
    "id": StringType(),
    "ms": LongType(),
    "seq": LongType(),
    "fields": MapType(StringType(), StringType()),
}

LONG_MAX = (1 << 63) - 1

FIELD_TYPES = (
    StringType,
    BinaryType,
    BooleanType,
    ByteType,
    ShortType,
    IntegerType,
    LongType,
    FloatType,
    DoubleType,
    DecimalType,
    DateType,
    TimestampType,
    TimestampNTZType,
)


class FieldParseError(ValueError):
    """A stream field value that does not parse as its column's type."""


def fixed_schema() -> StructType:
    return StructType([StructField(name, dtype) for name, dtype in META_TYPES.items()])


@dataclass(frozen=True, slots=True)
class Layout:
    """Which output column comes from where; validated once on the driver."""

    schema: StructType
    null_on_parse_error: bool = False

    @classmethod
    def build(cls, schema: StructType, null_on_parse_error: bool = False) -> Layout:
        for field in schema.fields:
            expected = META_TYPES.get(field.name)
            if expected is not None and field.dataType != expected:
                raise ValueError(
                    f"column {field.name!r} is stream metadata and must be "
                    f"{expected.simpleString()}, not {field.dataType.simpleString()}"
                )
            if expected is None and not isinstance(field.dataType, FIELD_TYPES):
                raise ValueError(
                    f"column {field.name!r}: type {field.dataType.simpleString()} is not "
                    "supported for stream fields (use a scalar type, or read 'fields' as a map)"
                )
        return cls(schema, null_on_parse_error)

    def arrow_schema(self) -> pa.Schema:
        return to_arrow_schema(self.schema, timezone="UTC")


def page_to_batch(
    stream: str, page: Sequence[list[Any]], layout: Layout, arrow_schema: pa.Schema
) -> pa.RecordBatch:
    """One ``XRANGE`` page (raw ``[id, [f, v, ...]]`` entries) as a record batch.

    ``arrow_schema`` is ``layout.arrow_schema()``, computed once per partition by the caller.
    """
    ids = [entry[0] for entry in page]
    columns: list[pa.Array] = []
    records: list[dict[str, str]] | None = None
    id_parts: pa.Array | None = None
    for field, arrow_field in zip(layout.schema.fields, arrow_schema, strict=True):
        name = field.name
        if name == "stream":
            columns.append(pa.array([stream] * len(page), type=pa.string()))
        elif name == "id":
            columns.append(pa.array(ids, type=pa.string()))
        elif name in ("ms", "seq"):
            if id_parts is None:
                id_parts = pc.split_pattern(pa.array(ids, type=pa.string()), "-")
            part = pc.list_element(id_parts, 0 if name == "ms" else 1)
            columns.append(_as_long(pc.cast(part, pa.uint64())))
        elif name == "fields":
            columns.append(_fields_map(page, arrow_field.type))
        else:
            if records is None:
                records = [dict(zip(e[1][::2], e[1][1::2], strict=True)) for e in page]
            raw = [r.get(name) for r in records]
            columns.append(_typed_column(raw, arrow_field.type, field, stream, ids, layout))
    return pa.RecordBatch.from_arrays(columns, schema=arrow_schema)


def _as_long(parts: pa.Array) -> pa.Array:
    """ID parts are unsigned 64-bit, Spark's long is signed: above 2^63-1 becomes null.

    Only hand-made IDs get there (an ms that large is millions of years away); the ``id``
    column keeps the exact value.
    """
    too_big = pc.greater(parts, pa.scalar(LONG_MAX, pa.uint64()))
    if pc.any(too_big).as_py():
        parts = pc.if_else(too_big, pa.scalar(None, pa.uint64()), parts)
    return pc.cast(parts, pa.int64())


def _fields_map(page: Sequence[list[Any]], map_type: pa.DataType) -> pa.Array:
    flat = list(chain.from_iterable(entry[1] for entry in page))
    offsets = list(accumulate((len(entry[1]) >> 1 for entry in page), initial=0))
    return pa.MapArray.from_arrays(
        pa.array(offsets, type=pa.int32()),
        pa.array(flat[::2], type=pa.string()),
        pa.array(flat[1::2], type=pa.string()),
        type=map_type,
    )


def _typed_column(
    raw: list[str | None],
    arrow_type: pa.DataType,
    field: StructField,
    stream: str,
    ids: list[str],
    layout: Layout,
) -> pa.Array:
    strings = pa.array(raw, type=pa.string())
    if pa.types.is_string(arrow_type):
        return strings
    try:
        return _cast(strings, arrow_type)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    # Slow path: find the value that failed, and either name it or null it.
    convert = _python_converter(field.dataType)
    out: list[Any] = []
    for entry_id, value in zip(ids, raw, strict=True):
        if value is None:
            out.append(None)
            continue
        try:
            out.append(convert(value))
        except (ValueError, ArithmeticError):
            if layout.null_on_parse_error:
                out.append(None)
                continue
            raise FieldParseError(
                f"stream {stream!r} entry {entry_id}: field {field.name!r} value {value!r} "
                f"is not a valid {field.dataType.simpleString()} "
                "(fix the data, change the column type, or set option parseErrors=null)"
            ) from None
    return pa.array(out, type=arrow_type)


def _cast(strings: pa.Array, arrow_type: pa.DataType) -> pa.Array:
    if pa.types.is_timestamp(arrow_type) and arrow_type.tz is not None:
        # Values without an offset are taken as UTC, like Spark's session time zone in tests.
        try:
            return pc.cast(strings, arrow_type)
        except pa.ArrowInvalid:
            naive = pc.cast(strings, pa.timestamp(arrow_type.unit))
            return pc.assume_timezone(naive, "UTC").cast(arrow_type)
    return pc.cast(strings, arrow_type)


def _python_converter(dtype: DataType) -> Callable[[str], Any]:
    if isinstance(dtype, BooleanType):
        return _parse_bool
    if isinstance(dtype, ByteType | ShortType | IntegerType | LongType):
        bits = {ByteType: 8, ShortType: 16, IntegerType: 32, LongType: 64}[type(dtype)]
        return lambda s: _parse_int(s, bits)
    if isinstance(dtype, FloatType | DoubleType):
        return float
    if isinstance(dtype, DecimalType):
        return lambda s: _parse_decimal(s, dtype)
    if isinstance(dtype, DateType):
        return dt.date.fromisoformat
    if isinstance(dtype, TimestampType):
        return _parse_timestamp
    if isinstance(dtype, TimestampNTZType):
        return dt.datetime.fromisoformat
    if isinstance(dtype, BinaryType):
        return str.encode
    raise ValueError(f"unsupported field type {dtype.simpleString()}")


def _parse_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("true", "1"):
        return True
    if lowered in ("false", "0"):
        return False
    raise ValueError(text)


def _parse_int(text: str, bits: int) -> int:
    value = int(text.strip())
    if not -(1 << (bits - 1)) <= value < (1 << (bits - 1)):
        raise ValueError(f"{text} out of range")
    return value


def _parse_decimal(text: str, dtype: DecimalType) -> decimal.Decimal:
    value = decimal.Decimal(text.strip())
    quantum = decimal.Decimal(1).scaleb(-dtype.scale)
    rounded = value.quantize(quantum)
    if len(rounded.as_tuple().digits) > dtype.precision:
        raise ValueError(f"{text} exceeds decimal({dtype.precision},{dtype.scale})")
    return rounded


def _parse_timestamp(text: str) -> dt.datetime:
    value = dt.datetime.fromisoformat(text.strip())
    return value if value.tzinfo else value.replace(tzinfo=dt.UTC)
