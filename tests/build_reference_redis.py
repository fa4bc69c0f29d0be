"""Build the reference redis-server of the differential tests from Debian's source tarball.

    python tests/build_reference_redis.py      # prints the path of redis-server

The newest Redis we can reach from here is the one in Debian's ``experimental`` suite
(Debian's stable has 7.0.15, which lacks the 8.x stream commands that Sluice implements).
Its upstream tarball is downloaded from deb.debian.org, checked against the SHA-256 pinned
below, built without TLS, and its ``redis-server`` kept in ``.cache/redis-<version>/``, so a
later ``make test`` finds it built. Only the server is kept: the redis-cli tests use Debian's
packaged redis-cli, as a user of Debian would.

When Debian has replaced the pinned release, the pool no longer holds its tarball; the newest
release that ``experimental`` lists is then built instead, checked against the SHA-256 in
Debian's source index, with a warning saying so (pin that release here).
"""

from __future__ import annotations

import hashlib
import lzma
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

VERSION = "8.6.3"
SHA256 = "58d0d1eb49a1ea6c2179659707fec171b1e2e2b8d5157ed2ec59d1d66ad5a654"
MIRROR = "http://deb.debian.org/debian"
POOL = f"{MIRROR}/pool/main/r/redis"
SOURCES = f"{MIRROR}/dists/experimental/main/source/Sources.xz"
ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".cache"


def built(version: str) -> Path:
    return CACHE / f"redis-{version}" / "redis-server"


def newest_cached() -> Path | None:
    """The reference redis-server built earlier, newest version first, if any."""
    found = [p for p in CACHE.glob("redis-*/redis-server") if os.access(p, os.X_OK)]
    if not found:
        return None
    return max(found, key=lambda p: _version_key(p.parent.name.removeprefix("redis-")))


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", version))


def _download(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=120) as resp:  # noqa: S310 (a fixed http mirror)
        return bytes(resp.read())


def _experimental_release() -> tuple[str, str]:
    """(version, sha256) of the upstream tarball of the redis source package in experimental."""
    index = lzma.decompress(_download(SOURCES)).decode("utf-8", "replace")
    for stanza in index.split("\n\n"):
        if re.search(r"^Package: redis$", stanza, re.M):
            m = re.search(r"^ ([0-9a-f]{64}) \d+ redis_([0-9.]+)\.orig\.tar\.gz$", stanza, re.M)
            if m:
                return m.group(2), m.group(1)
    raise SystemExit(f"no redis source package in {SOURCES}")


def fetch() -> tuple[str, bytes | None]:
    """(version, tarball checked against its SHA-256), or (version, None) when that version
    is built already."""
    version, sha = VERSION, SHA256
    try:
        data = _download(f"{POOL}/redis_{version}.orig.tar.gz")
    except urllib.error.HTTPError as e:
        if e.code != 404:
            raise
        version, sha = _experimental_release()
        print(f"warning: Debian no longer has Redis {VERSION}; using {version}, the one in "
              f"experimental (pin it in {Path(__file__).name})", file=sys.stderr)
        if built(version).exists():
            return version, None
        data = _download(f"{POOL}/redis_{version}.orig.tar.gz")
    if hashlib.sha256(data).hexdigest() != sha:
        raise SystemExit(f"redis_{version}.orig.tar.gz does not match its SHA-256")
    return version, data


def build(version: str, tarball: bytes | None) -> Path:
    target = built(version)
    if tarball is None:
        return target
    with tempfile.TemporaryDirectory(prefix="redis-build-") as tmp:
        archive = Path(tmp) / "redis.tar.gz"
        archive.write_bytes(tarball)
        with tarfile.open(archive) as tar:
            tar.extractall(tmp, filter="data")
        src = next(Path(tmp).glob("redis-*/src")).parent
        jobs = str(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 2)
        log = Path(tmp) / "build.log"
        with log.open("wb") as out:
            done = subprocess.run(["make", "-j", jobs, "BUILD_TLS=no"], cwd=src, stdout=out,
                                  stderr=subprocess.STDOUT, check=False)
        if done.returncode:
            sys.stderr.write(log.read_text(errors="replace")[-4000:])
            raise SystemExit(f"building Redis {version} failed")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src / "src" / "redis-server", target)
    return target


def main() -> None:
    path = built(VERSION)
    if not path.exists():
        path = build(*fetch())
    print(path)


if __name__ == "__main__":
    main()
