"""Sluice's stream policies in an RDB file: one AUX field that Redis skips when it loads.

Role: the persistence of what ``SLUICE.XPOLICY`` sets (``Stream.retention``, a group's
``dead_letter``), which Redis's stream encoding has no room for. ``dump_keyspace`` writes one
``AUX`` field named ``sluice-xpolicies`` after the databases, before ``EOF``; ``load_into``
applies it once every key is loaded. Redis 8.6 logs an AUX field it does not know and goes on
(``rdbLoadRioWithLoadingCtx``; checked against redis-server 8.6.3 in
``tests/differential/test_stream_policy_diff.py``), so a Sluice RDB with policies still loads
there, without them. DUMP payloads carry no AUX fields: DUMP / RESTORE moves a stream without
its policies, as it moves one without its TTL.

Value layout (RDB length and string encodings, ``rdb_codec``): a format version (1), the
number of records, then per stream with a policy: db number, key, retention flag (0 / 1) and
if 1 the maximum age in ms and the reference policy (0 KEEPREF, 1 DELREF, 2 ACKED), the
number of groups with a dead-letter policy, then per group its name, the dead-letter stream's
key and the maximum number of deliveries. A record for a key that is no longer a stream, or
for a group that no longer exists, is skipped on load.

Imports nothing of Sluice's outside ``storage``.
"""

from __future__ import annotations

from typing import Any

from .keyspace import Keyspace
from .rdb_codec import RdbError, Reader, enc_len, enc_string
from .stream import ACKED, DELREF, KEEPREF, RefPolicy, Retention, Stream
from .stream_group import DeadLetter

__all__ = ["AUX_NAME", "apply_aux", "encode_record", "has_policy", "join_records"]

AUX_NAME = b"sluice-xpolicies"
_VERSION = 1
_POLICY_CODES: dict[RefPolicy, int] = {KEEPREF: 0, DELREF: 1, ACKED: 2}
_POLICY_NAMES: dict[int, RefPolicy] = {v: k for k, v in _POLICY_CODES.items()}


def has_policy(s: Stream) -> bool:
    """Does this stream carry a retention or a dead-letter policy?"""
    return s.retention is not None or any(g.dead_letter is not None for g in s.groups.values())


def encode_record(db_id: int, key: bytes, s: Stream) -> bytes:
    """One stream's record (call only when ``has_policy``)."""
    out = [enc_len(db_id), enc_string(key, False)]
    ret = s.retention
    if ret is None:
        out.append(enc_len(0))
    else:
        out += [enc_len(1), enc_len(ret.max_age_ms), enc_len(_POLICY_CODES[ret.policy])]
    groups = [g for g in s.groups_in_order() if g.dead_letter is not None]
    out.append(enc_len(len(groups)))
    for g in groups:
        dl = g.dead_letter
        assert dl is not None
        out += [enc_string(g.name, False), enc_string(dl.key, False), enc_len(dl.max_deliveries)]
    return b"".join(out)


def join_records(records: list[bytes]) -> bytes:
    """The AUX field's value for these records."""
    return enc_len(_VERSION) + enc_len(len(records)) + b"".join(records)


def apply_aux(keyspace: Keyspace, value: Any) -> int:
    """Attach the policies of an AUX value to the loaded streams; returns how many streams
    got one. An unknown format version is an error (a newer Sluice wrote it)."""
    r = Reader(bytes(value))
    version = r.len()
    if version != _VERSION:
        raise RdbError(f"unknown {AUX_NAME.decode()} format version {version}")
    applied = 0
    for _ in range(r.len()):
        db_id, key = r.len(), r.string()
        retention = None
        if r.len():
            max_age, code = r.len(), r.len()
            if code not in _POLICY_NAMES:
                raise RdbError(f"bad retention policy code {code} in {AUX_NAME.decode()}")
            retention = Retention(max_age, _POLICY_NAMES[code])
        groups = [(r.string(), r.string(), r.len()) for _ in range(r.len())]
        s = keyspace[db_id].data.get(key) if db_id < len(keyspace) else None
        if type(s) is not Stream:
            continue
        s.retention = retention
        for name, dl_key, max_deliveries in groups:
            g = s.groups.get(name)
            if g is not None:
                g.dead_letter = DeadLetter(dl_key, max_deliveries)
        applied += 1
    return applied
