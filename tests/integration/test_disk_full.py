"""A real full disk (a 512 KB tmpfs): writes are refused with MISCONF, the write that hit the
full disk is not acknowledged until it is on disk, reads go on, and everything recovers when
space comes back. Needs root (mount); skipped elsewhere.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis

from tests.support import ThreadedServer, wait_until

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    disk = tmp_path / "disk"
    disk.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", str(disk)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def test_full_disk_misconf_and_recovery(small_disk: Path,
                                        make_server: Callable[..., ThreadedServer]) -> None:
    lines = [f"dir {small_disk}", "appendonly yes", "appendfsync always",
             "auto-aof-rewrite-percentage 0"]
    s = make_server(*lines)
    aof = s.server.aof  # type: ignore[union-attr]
    filler = small_disk / "filler"
    with open(filler, "wb") as f:  # leave ~40 KB free
        st = os.statvfs(small_disk)
        f.write(b"\0" * max(0, st.f_bavail * st.f_frsize - 40_000))
    acked: list[str] = []
    stop = threading.Event()

    def writer() -> None:
        w = s.client(socket_timeout=30)
        i = 0
        with contextlib.suppress(redis.RedisError):
            while not stop.is_set():
                w.set(f"k{i}", "x" * 1000)
                acked.append(f"k{i}")
                i += 1

    t = threading.Thread(target=writer)
    t.start()
    wait_until(lambda: s.call(lambda: aof.write_error is not None), what="disk full")
    r = s.client()
    with pytest.raises(redis.ResponseError, match="^MISCONF Errors writing to the AOF file: No "
                                                  "space left on device"):
        r.set("other", "1")
    n = len(acked)
    assert r.get("k0") == b"x" * 1000  # reads go on
    assert len(acked) == n  # the write that hit the full disk is not acknowledged
    filler.unlink()  # space comes back; the cron retries
    wait_until(lambda: len(acked) > n, what="held reply released")
    assert r.info("persistence")["aof_last_write_status"] == "ok"
    stop.set()
    t.join(30)
    s.stop()
    s2 = make_server(*lines)
    r2 = s2.client()
    missing = [k for k in acked if r2.get(k) is None]
    assert missing == []
