"""Our command table against ``COMMAND INFO`` of the reference redis-server (8.6).

For every command and subcommand in our table, the arity, the flags, the legacy
first/last/step, the ACL categories and the key specs (flags, begin_search, find_keys) must be
what the reference reports. One test per row, so a wrong row names itself.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import hiredis
import pytest

from sluice.commands import load_table
from sluice.commands.introspection import every_command, info_record
from tests.support import RawClient

pytestmark = pytest.mark.differential

FIELDS = ("arity", "flags", "range", "categories", "key_specs")


def _text(value: Any) -> Any:
    """hiredis gives bytes; make nested replies comparable plain data."""
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, list):
        return [_text(v) for v in value]
    return value


def _pairs(flat: list[Any]) -> dict[str, Any]:
    return {flat[i]: flat[i + 1] for i in range(0, len(flat), 2)}


def normalize(record: list[Any]) -> dict[str, Any]:
    """A COMMAND INFO record (RESP2, decoded) as the fields we compare."""
    name, arity, flags, first, last, step, categories, _tips, specs, _subs = record
    key_specs = []
    for spec in specs:
        fields = _pairs(spec)
        begin = _pairs(fields["begin_search"])
        find = _pairs(fields["find_keys"])
        key_specs.append({
            "flags": sorted(fields["flags"]),
            "begin_search": (begin["type"], _pairs(begin["spec"])),
            "find_keys": (find["type"], _pairs(find["spec"])),
        })
    return {
        "name": name,
        "arity": arity,
        "flags": sorted(flags),
        "range": (first, last, step),
        "categories": sorted(categories),
        "key_specs": key_specs,
    }


def _flatten(records: list[Any]) -> dict[str, dict[str, Any]]:
    out = {}
    for record in records:
        out[record[0]] = normalize(record)
        for sub in record[9]:
            out[sub[0]] = normalize(sub)
    return out


def _encoded(value: Any) -> Any:
    """Our reply objects, through the RESP2 encoder and hiredis, as the reference's are."""
    from sluice.protocol import encode_into

    buf = bytearray()
    encode_into(buf, value, False)
    reader = hiredis.Reader()
    reader.feed(bytes(buf))
    return _text(reader.gets())


# Rows the reference (8.6.3) cannot have. XNACK came in Redis 8.8: its record is written out
# from the 8.8 documentation (redis.io's XNACK page and src/commands/xnack.json: arity -7,
# WRITE FAST, @stream, one RW UPDATE key at 1). Sluice's own commands (``sluice.*``) are
# namespaced so that no Redis command can collide with them: the test checks that the
# reference indeed has no such name.
LATER_REDIS: dict[str, dict[str, Any]] = {
    "xnack": {
        "name": "xnack", "arity": -7, "flags": ["fast", "write"], "range": (1, 1, 1),
        "categories": ["@fast", "@stream", "@write"],
        "key_specs": [{"flags": ["RW", "update"], "begin_search": ("index", {"index": 1}),
                       "find_keys": ("range", {"lastkey": 0, "keystep": 1, "limit": 0})}],
    },
}

OUR_TABLE = load_table()
OUR_ROWS = {c.name: c for c in every_command(OUR_TABLE)}


@pytest.fixture(scope="module")
def reference_rows(reference: Any) -> dict[str, dict[str, Any]]:
    client = RawClient(reference.port)
    try:
        raw = client.call("COMMAND", "INFO")
    finally:
        client.close()
    reader = hiredis.Reader()
    reader.feed(raw)
    return _flatten(_text(reader.gets()))


@pytest.fixture(scope="module")
def our_rows() -> dict[str, dict[str, Any]]:
    return _flatten(_encoded([info_record(c) for c in OUR_TABLE.values()]))


def differences(name: str, ours: dict[str, Any], theirs: dict[str, Any]) -> list[str]:
    return [f"{field}: ours {ours[field]!r}, redis {theirs[field]!r}" for field in FIELDS
            if ours[field] != theirs[field]]


@pytest.mark.parametrize("name", sorted(OUR_ROWS))
def test_row_matches_redis(name: str, reference_rows: dict[str, Any],
                           our_rows: dict[str, Any]) -> None:
    if name.split("|")[0].startswith("sluice."):
        assert name not in reference_rows, f"{name} collides with a Redis command"
        return
    theirs = reference_rows.get(name)
    if theirs is None and name in LATER_REDIS:
        assert name not in reference_rows
        theirs = LATER_REDIS[name]
    assert theirs is not None, f"{name} is not a command of the reference Redis"
    wrong = differences(name, our_rows[name], theirs)
    assert not wrong, f"{name}:\n  " + "\n  ".join(wrong)


def test_a_wrong_row_is_caught(reference_rows: dict[str, Any]) -> None:
    """Each kind of mistake in a row (here CLIENT ID's) makes the comparison fail."""
    from sluice.commands.introspection import _info_cache
    from sluice.commands.spec import A, F, K, key_at

    right = OUR_ROWS["client|id"]
    mistakes = {
        "arity": dataclasses.replace(right, arity=3),
        "flags": dataclasses.replace(right, flags=right.flags | F.FAST),
        "categories": dataclasses.replace(right, acl=right.acl | A.KEYSPACE),
        "key_specs": dataclasses.replace(right, keys=(key_at(2, K.RO),)),
    }
    for field, row in mistakes.items():
        _info_cache.pop(row.name, None)
        try:
            ours = _flatten(_encoded([info_record(row)]))["client|id"]
        finally:
            _info_cache.pop(row.name, None)
        assert differences("client|id", ours, reference_rows["client|id"]), field
