"""A Sluice RDB with stream policies and NACKed entries still loads in Redis 8.6.3.

Sluice writes RDB v13 (what 8.6 reads) plus, when some stream has a policy, an AUX field
``sluice-xpolicies`` that Redis skips; NACKed entries (XNACK, 8.8) are written as pending
entries of a consumer named ``""`` with delivery times 0, 1, 2 ... (``rdb_stream.py``). The
reference loads the file, answers for every entry, and can claim the NACKed entries at once.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support import ProcessServer, ThreadedServer

pytestmark = [pytest.mark.differential, pytest.mark.timeout(60)]

Factory = Callable[..., ThreadedServer]


def _raw(r: Any, *args: Any) -> Any:
    conn = r.connection_pool.get_connection()
    try:
        conn.send_command(*args)
        return conn.read_response()
    finally:
        r.connection_pool.release(conn)


def test_redis_86_loads_a_sluice_rdb_with_policies_and_nacks(
        make_server: Factory, reference: ProcessServer, tmp_path: Path) -> None:
    ours = tmp_path / "ours"
    ours.mkdir()
    srv = make_server(f"dir {ours}")
    r = srv.client()
    for i in range(1, 6):
        r.xadd("jobs", {"n": str(i)}, id=f"{i}-0")
    r.xgroup_create("jobs", "workers", "0")
    r.xgroup_create("jobs", "audit", "0")
    r.xreadgroup("workers", "w1", {"jobs": ">"})
    assert _raw(r, "XNACK", "jobs", "workers", "FAIL", "IDS", "2", "4-0", "2-0") == 2
    _raw(r, "SLUICE.XPOLICY", "DEADLETTER", "jobs", "workers", "jobs:dead", "MAXDELIVERIES", 5)
    _raw(r, "SLUICE.XPOLICY", "RETENTION", "jobs", "MAXAGE", "86400000", "ACKED")
    r.set("plain", "value")
    assert r.save()
    data = (ours / "dump.rdb").read_bytes()
    assert b"sluice-xpolicies" in data

    theirs = tmp_path / "theirs"
    theirs.mkdir()
    shutil.copy(ours / "dump.rdb", theirs / "dump.rdb")
    redis86 = ProcessServer("redis", ["--dir", str(theirs), "--dbfilename", "dump.rdb"],
                            cwd=str(theirs)).start()
    try:
        t = redis86.client()
        assert t.get("plain") == b"value"
        assert t.xlen("jobs") == 5
        assert _raw(t, "XPENDING", "jobs", "workers")[:3] == [5, b"1-0", b"5-0"]
        rows = _raw(t, "XPENDING", "jobs", "workers", "-", "+", "10")
        owners = {row[0]: row[1] for row in rows}
        assert owners == {b"1-0": b"w1", b"2-0": b"", b"3-0": b"w1", b"4-0": b"", b"5-0": b"w1"}
        idle = {row[0]: row[2] for row in rows}
        assert idle[b"4-0"] > 10**12 and idle[b"2-0"] > 10**12  # "delivered" in 1970
        _raw(t, "XINFO", "STREAM", "jobs", "FULL")  # answers (no crash on the "" owner)
        # 8.6 can take them over at once, as XNACK meant ("immediately claimable")
        claimed = _raw(t, "XAUTOCLAIM", "jobs", "workers", "w2", "3600000", "0-0", "JUSTID")
        assert sorted(claimed[1]) == [b"2-0", b"4-0"]
        assert t.ping()
    finally:
        redis86.stop()
