"""Fixtures for the pipeline tests: a server on a free port and one shared SparkSession.

``start_server(kind)`` starts either a real ``redis-server`` or Sluice (``python -m
sluice.server``) on a port picked by binding a socket to port 0, and waits until it answers
PING (bounded). Which kind the tests use comes from ``SLUICE_PIPELINE_SERVER`` (``sluice`` by
default: the pipeline is Sluice's; ``redis`` or ``both`` show the source is not tied to
Sluice, against the reference redis-server of the differential tests).

Under ``CI=true`` a missing redis-server is a failure, not a skip; so is a missing pyspark or
Java once the installed package declares the ``spark`` extra (CI is then expected to install
it), while before that the Spark tests skip with the reason.

The SparkSession is session-scoped, ``local[2,2]`` (two cores; a failed task is retried once,
which the sink's retry test relies on), with the UI off. Spark tests are marked ``spark``.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis

from tests.support import answers, require_redis_server

REPO = Path(__file__).resolve().parents[2]
CI = os.environ.get("CI", "").lower() == "true"
SERVER_KINDS = {
    "redis": ["redis"],
    "sluice": ["sluice"],
    "both": ["redis", "sluice"],
}[os.environ.get("SLUICE_PIPELINE_SERVER", "sluice")]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "spark: needs pyspark and Java (pipeline tests)")


@dataclass
class ServerHandle:
    kind: str
    port: int
    process: subprocess.Popen[bytes]
    workdir: str

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def client(self) -> redis.Redis:
        return redis.Redis(port=self.port, decode_responses=True)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
        shutil.rmtree(self.workdir, ignore_errors=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def server_command(kind: str, port: int, workdir: str) -> list[str]:
    if kind == "redis":
        binary = require_redis_server()
        return [
            binary,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ]
    if kind == "sluice":
        return [
            sys.executable,
            "-m",
            "sluice.server",
            "--port",
            str(port),
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            workdir,
        ]
    raise ValueError(f"unknown server kind {kind!r}")


def start_server(kind: str, timeout: float = 15.0) -> ServerHandle:
    """Start a server of ``kind`` on a free port and wait (bounded) until it answers PING."""
    port = free_port()
    # A scratch working directory: never load or write a dump.rdb lying in the checkout.
    workdir = tempfile.mkdtemp(prefix=f"pipeline-{kind}-")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    }
    process = subprocess.Popen(
        server_command(kind, port, workdir),
        cwd=workdir,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    handle = ServerHandle(kind, port, process, workdir)
    deadline = time.monotonic() + timeout
    while not answers(port, timeout=2):
        if process.poll() is not None or time.monotonic() > deadline:
            handle.stop()
            err = process.stderr.read().decode(errors="replace") if process.stderr else ""
            raise RuntimeError(f"{kind} server did not start on port {port}: {err}")
        time.sleep(0.05)
    return handle


@pytest.fixture(scope="session", params=SERVER_KINDS)
def server(request: pytest.FixtureRequest) -> Iterator[ServerHandle]:
    handle = start_server(request.param)
    yield handle
    handle.stop()


@pytest.fixture
def r(server: ServerHandle) -> Iterator[redis.Redis]:
    client = server.client()
    client.flushall()
    yield client
    client.close()


@pytest.fixture
def key() -> str:
    """A unique stream key prefix per test (no cross-test interference)."""
    return f"t{uuid.uuid4().hex[:8]}"


def spark_extra_declared() -> bool:
    """Whether the installed sluice declares the 'spark' extra (then CI must install it)."""
    try:
        extras = importlib.metadata.metadata("sluice").get_all("Provides-Extra") or []
    except importlib.metadata.PackageNotFoundError:
        return False
    return "spark" in extras


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    try:
        import pyspark  # noqa: F401
    except ImportError:
        if CI and spark_extra_declared():
            pytest.fail("pyspark is required under CI (install the 'spark' extra)")
        pytest.skip("pyspark not installed (pip install -e '.[spark]')")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        if CI and spark_extra_declared():
            pytest.fail("Java is required for the spark tests under CI")
        pytest.skip("Java not installed")
    from sluice.pipeline.session import local_session

    session = local_session(master="local[2,2]", app_name="sluice-tests", ui=False)
    yield session
    session.stop()


def produce(
    client: redis.Redis, stream: str, n: int, start_ms: int = 1_000_000, per_ms: int = 1
) -> list[str]:
    """Append ``n`` entries with explicit IDs (``per_ms`` per millisecond); returns the IDs."""
    ids = [f"{start_ms + i // per_ms}-{i % per_ms}" for i in range(n)]
    pipe = client.pipeline(transaction=False)
    for i, entry_id in enumerate(ids):
        pipe.xadd(stream, {"n": str(i), "tag": f"t{i % 3}", "payload": "x" * (i % 5)}, id=entry_id)
    pipe.execute()
    return ids


def wait_for(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    """Poll ``predicate`` until true; fail after ``timeout`` seconds (bounded wait)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.1)
