"""Build the reference redis-server of the differential tests from Debian's source tarball,
and keep the Tcl test suite of the same tarball for the conformance ratchet.

    python tests/build_reference_redis.py          # prints the path of redis-server
    python tests/build_reference_redis.py --suite  # prints the path of the Tcl suite's tree

The newest Redis we can reach from here is the one in Debian's ``experimental`` suite
(Debian's stable has 7.0.15, which lacks the 8.x stream commands that Sluice implements).
Its upstream tarball is downloaded from the Debian mirror this machine's apt is configured
with (``URIs:`` of ``/etc/apt/sources.list.d/*.sources``, or the ``deb`` lines of
``sources.list``; ``SLUICE_DEBIAN_MIRROR`` overrides it), checked against the SHA-256 pinned
below, built without TLS, and its ``redis-server`` kept in ``.cache/redis-<version>/``, so a
later ``make test`` finds it built. Only the server is kept: the redis-cli tests use Debian's
packaged redis-cli, as a user of Debian would. The tarball's Tcl suite (``tests/``,
``runtest``, ``redis.conf``) is kept beside it in ``suite/`` for ``tests/conformance``; when
the server is there but the suite is not (a cache from before), the tarball is fetched and
checked again and only the suite is extracted.

When Debian has replaced the pinned release, the pool no longer holds its tarball; the newest
release that ``experimental`` lists is then built instead, checked against the SHA-256 in
Debian's source index, with a warning saying so (pin that release here).

Progress goes to stderr; stdout carries only the path asked for.
"""

from __future__ import annotations

import glob
import hashlib
import lzma
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

VERSION = "8.6.3"
SHA256 = "58d0d1eb49a1ea6c2179659707fec171b1e2e2b8d5157ed2ec59d1d66ad5a654"
POOL = "pool/main/r/redis"
SOURCES = "dists/experimental/main/source/Sources.xz"
ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".cache"
APT = Path("/etc/apt")
# What the Tcl suite needs from the source tree (external mode and the spawning mode).
SUITE_PARTS = ("tests", "runtest", "redis.conf")


def say(msg: str) -> None:
    print(f"reference redis: {msg}", file=sys.stderr, flush=True)


def built(version: str) -> Path:
    return CACHE / f"redis-{version}" / "redis-server"


def suite_dir(version: str = VERSION) -> Path:
    return CACHE / f"redis-{version}" / "suite"


def has_suite(version: str = VERSION) -> bool:
    return (suite_dir(version) / ".complete").exists()


def newest_cached() -> Path | None:
    """The reference redis-server built earlier, newest version first, if any."""
    found = [p for p in CACHE.glob("redis-*/redis-server") if os.access(p, os.X_OK)]
    if not found:
        return None
    return max(found, key=lambda p: _version_key(p.parent.name.removeprefix("redis-")))


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", version))


# --- where Debian is: the machine's apt configuration -------------------------------------

def _deb822_uris(text: str) -> list[str]:
    """URIs of the enabled ``deb``/``deb-src`` stanzas of a deb822 ``.sources`` file."""
    uris: list[str] = []
    for stanza in re.split(r"\n\s*\n", text):
        fields: dict[str, str] = {}
        key = ""
        for line in stanza.splitlines():
            if line.startswith("#") or not line.strip():
                continue
            if line[0].isspace() and key:  # a continuation line
                fields[key] += " " + line.strip()
                continue
            key, _, value = line.partition(":")
            key = key.strip().lower()
            fields[key] = value.strip()
        types = fields.get("types", "").split()
        if fields.get("enabled", "yes").lower() == "no" or not {"deb", "deb-src"} & set(types):
            continue
        uris += fields.get("uris", "").split()
    return uris


def _one_line_uris(text: str) -> list[str]:
    """URIs of the ``deb``/``deb-src`` lines of a one-line-style ``sources.list``."""
    uris: list[str] = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        line = re.sub(r"\[[^\]]*\]", " ", line)  # [arch=amd64 signed-by=...]
        words = line.split()
        if len(words) >= 2 and words[0] in ("deb", "deb-src"):
            uris.append(words[1])
    return uris


def apt_mirrors(apt: Path = APT) -> list[str]:
    """Debian mirrors this machine's apt uses, in the order apt lists them, without
    duplicates. ``SLUICE_DEBIAN_MIRROR`` (one URL) comes first when set."""
    found: list[str] = []
    env = os.environ.get("SLUICE_DEBIAN_MIRROR")
    if env:
        found.append(env)
    for name in sorted(glob.glob(str(apt / "sources.list.d" / "*.sources"))):
        found += _deb822_uris(Path(name).read_text(errors="replace"))
    one_line = [apt / "sources.list", *sorted((apt / "sources.list.d").glob("*.list"))]
    for path in one_line:
        if path.is_file():
            found += _one_line_uris(path.read_text(errors="replace"))
    seen: list[str] = []
    for uri in found:
        uri = uri.rstrip("/")
        if uri.startswith(("http://", "https://")) and uri not in seen:
            seen.append(uri)
    return seen


# --- download and check --------------------------------------------------------------------

def _download(url: str) -> bytes:
    say(f"downloading {url}")
    with urllib.request.urlopen(url, timeout=120) as resp:  # noqa: S310 (the apt mirror)
        return bytes(resp.read())


def _from_mirrors(path: str) -> bytes:
    """``path`` from the first apt mirror that has it."""
    mirrors = apt_mirrors()
    if not mirrors:
        raise SystemExit("no Debian mirror in /etc/apt (sources.list.d/*.sources, "
                         "sources.list); set SLUICE_DEBIAN_MIRROR to one")
    missing: urllib.error.HTTPError | None = None
    for mirror in mirrors:
        try:
            return _download(f"{mirror}/{path}")
        except urllib.error.HTTPError as e:
            if e.code != 404:
                raise
            missing = e
    assert missing is not None
    raise missing


def _experimental_release() -> tuple[str, str]:
    """(version, sha256) of the upstream tarball of the redis source package in experimental."""
    index = lzma.decompress(_from_mirrors(SOURCES)).decode("utf-8", "replace")
    for stanza in index.split("\n\n"):
        if re.search(r"^Package: redis$", stanza, re.M):
            m = re.search(r"^ ([0-9a-f]{64}) \d+ redis_([0-9.]+)\.orig\.tar\.gz$", stanza, re.M)
            if m:
                return m.group(2), m.group(1)
    raise SystemExit(f"no redis source package in {SOURCES}")


def _checked(version: str, sha: str, data: bytes) -> bytes:
    say(f"verifying the SHA-256 of redis_{version}.orig.tar.gz")
    if hashlib.sha256(data).hexdigest() != sha:
        raise SystemExit(f"redis_{version}.orig.tar.gz does not match its SHA-256")
    return data


def fetch() -> tuple[str, bytes | None]:
    """(version, tarball checked against its SHA-256), or (version, None) when that version
    is built already and its suite kept."""
    version, sha = VERSION, SHA256
    try:
        data = _from_mirrors(f"{POOL}/redis_{version}.orig.tar.gz")
    except urllib.error.HTTPError as e:
        if e.code != 404:
            raise
        version, sha = _experimental_release()
        say(f"warning: Debian no longer has Redis {VERSION}; using {version}, the one in "
            f"experimental (pin it in {Path(__file__).name})")
        if built(version).exists() and has_suite(version):
            return version, None
        data = _from_mirrors(f"{POOL}/redis_{version}.orig.tar.gz")
    return version, _checked(version, sha, data)


# --- build and keep -----------------------------------------------------------------------

def _extract(tarball: bytes, tmp: Path) -> Path:
    archive = tmp / "redis.tar.gz"
    archive.write_bytes(tarball)
    with tarfile.open(archive) as tar:
        tar.extractall(tmp, filter="data")
    return next(tmp.glob("redis-*/src")).parent


def keep_suite(src: Path, version: str) -> Path:
    """Copy the Tcl suite out of an extracted tree into ``.cache/redis-<version>/suite``."""
    target = suite_dir(version)
    staging = target.with_name("suite.partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    for part in SUITE_PARTS:
        if (src / part).is_dir():
            shutil.copytree(src / part, staging / part, symlinks=True)
        elif (src / part).exists():
            shutil.copy2(src / part, staging / part)
    (staging / ".complete").write_text(f"redis {version}\n")
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    say(f"kept the Tcl test suite in {target}")
    return target


def _compiled(log: bytes) -> int:
    """Compiler runs in a build log so far: Redis's own ``CC file.o`` lines (coloured) and
    its dependencies' ``cc ... -c`` commands."""
    plain = re.sub(rb"\x1b\[[0-9;]*m", b"", log)
    return len(re.findall(rb"(?m)^\s*CC\s|\s-c\s", plain))


def _make(src: Path, version: str) -> None:
    jobs = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 2
    say(f"building Redis {version} (make -j{jobs} BUILD_TLS=no; about a minute on 2 cores)")
    log = src / "build.log"
    start = time.monotonic()
    with log.open("wb") as out:
        proc = subprocess.Popen(["make", "-j", str(jobs), "BUILD_TLS=no"], cwd=src,
                                stdout=out, stderr=subprocess.STDOUT)
        stop = threading.Event()

        def heartbeat() -> None:
            while not stop.wait(15):
                say(f"  still building: {_compiled(log.read_bytes())} files compiled, "
                    f"{time.monotonic() - start:.0f} s")

        beat = threading.Thread(target=heartbeat, daemon=True)
        beat.start()
        code = proc.wait()
        stop.set()
    if code:
        sys.stderr.write(log.read_text(errors="replace")[-4000:])
        raise SystemExit(f"building Redis {version} failed")
    say(f"built in {time.monotonic() - start:.0f} s")


def build(version: str, tarball: bytes | None) -> Path:
    target = built(version)
    if tarball is None:
        return target
    with tempfile.TemporaryDirectory(prefix="redis-build-") as tmp:
        src = _extract(tarball, Path(tmp))
        if not target.exists():
            _make(src, version)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src / "src" / "redis-server", target)
        keep_suite(src, version)
    return target


def ensure() -> Path:
    """The reference redis-server, with its Tcl suite beside it: built when missing."""
    path = built(VERSION)
    if path.exists() and has_suite(VERSION):
        return path
    if path.exists():
        say(f"{path} is built but its Tcl suite is not kept: fetching the tarball again")
    path = build(*fetch())
    say(f"done: {path}")
    return path


def main(argv: list[str]) -> None:
    path = ensure()
    if "--suite" in argv:
        print(suite_dir(path.parent.name.removeprefix("redis-")))
    else:
        print(path)


if __name__ == "__main__":
    main(sys.argv[1:])
