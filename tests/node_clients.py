"""The Node.js client projects under ``tests/clients/`` (ioredis, node-redis, BullMQ): the
versions each ``package.json`` pins, and a ``node`` ready to run their scripts.

``ensure_installed`` runs ``npm ci`` in a project when what ``node_modules`` holds is not what
it pins, under a lock file per checkout (``npm ci`` deletes ``node_modules`` first, and two
test sessions may share one). Without node and npm the tests are skipped on a developer's
machine and fail under ``CI=true``, where ``make test`` installs them.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


def pinned(project: Path) -> dict[str, str]:
    """npm package name -> the version ``package.json`` pins (``npm:ioredis@6.0.0`` aliases
    give their version)."""
    deps = json.loads((project / "package.json").read_text())["dependencies"]
    return {name: spec.rsplit("@", 1)[-1] for name, spec in deps.items()}


def installed_version(project: Path, package: str) -> str | None:
    with contextlib.suppress(OSError, ValueError, KeyError):
        meta = project / "node_modules" / package / "package.json"
        return str(json.loads(meta.read_text())["version"])
    return None


def missing(reason: str) -> None:
    """Skip, or fail under CI (where make test has installed node, npm and the clients)."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (required under CI: make test installs the Node clients)")
    pytest.skip(reason)


@contextlib.contextmanager
def _install_lock(project: Path) -> Iterator[None]:
    tag = hashlib.sha256(str(project).encode()).hexdigest()[:12]
    with open(Path(tempfile.gettempdir()) / f"sluice-{project.name}-{tag}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def ensure_installed(project: Path, what: str) -> str:
    """The path of ``node``, once ``project``'s pinned packages are in its node_modules."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        missing(f"node and npm are needed for {what}")
    assert node and npm
    with _install_lock(project):
        if any(installed_version(project, p) != v for p, v in pinned(project).items()):
            done = subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=project,
                                  capture_output=True, text=True, timeout=300)
            if done.returncode != 0:
                missing(f"npm ci failed in {project}: {done.stderr[-2000:]}")
    return node
