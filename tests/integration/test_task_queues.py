"""Real task-queue libraries against Sluice, end to end: a Celery worker (Redis broker and
result backend, ``--pool solo``) runs tasks, and an RQ worker (``--burst``) runs a job.

These are the libraries that failed on Sluice at their first SADD, HSET or ZADD (kombu's
Redis transport keeps its bindings in sets and its unacknowledged messages in a hash and a
sorted set, inside MULTI; RQ keeps jobs in hashes and its registries in sorted sets). Each
test starts its own Sluice process (the fixture) and the library's own worker command as a
subprocess, and waits for the result the way an application does (``AsyncResult.get``,
``Job.return_value``), with a timeout: no sleeps.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from tests.support import ProcessServer, wait_until

pytestmark = pytest.mark.timeout(120)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def server() -> Iterator[ProcessServer]:
    s = ProcessServer("sluice").start()
    yield s
    s.stop()


def _env(url: str) -> dict[str, str]:
    env = dict(os.environ)
    env["SLUICE_TEST_URL"] = url
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    return env


def _stop(proc: subprocess.Popen[bytes]) -> str:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    out = proc.stdout.read() if proc.stdout else b""
    return out.decode(errors="replace")


# kombu's Redis transport runs Lua: its restore_visible() takes a redis-py Lock, whose
# release is an EVALSHA, as soon as the worker starts, and it keeps bindings with scripts.
def test_celery_worker_runs_tasks(server: ProcessServer) -> None:
    pytest.importorskip("celery")
    url = f"redis://127.0.0.1:{server.port}/0"
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "tests.integration._celery_app", "worker",
         "--pool", "solo", "--loglevel", "info", "--without-gossip", "--without-mingle"],
        cwd=str(ROOT), env=_env(url), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        os.environ["SLUICE_TEST_URL"] = url
        sys.modules.pop("tests.integration._celery_app", None)
        from tests.integration import _celery_app as tasks

        assert tasks.app.conf.broker_url == url
        result = tasks.add.delay(2, 3)
        # Wait for the result, or for the worker to die (then fail at once, with its log).
        wait_until(lambda: result.ready() or worker.poll() is not None, timeout=60,
                   what="the task's result")
        assert worker.poll() is None, "the worker exited"
        assert result.get(timeout=10) == 5
        failed = tasks.fail.delay()
        wait_until(lambda: failed.ready() or worker.poll() is not None, timeout=60,
                   what="the failing task's result")
        with pytest.raises(ValueError, match="as planned"):
            failed.get(timeout=10)
        assert failed.state == "FAILURE"
        r = redis.Redis(port=server.port)
        # kombu's structures are on Sluice: the queue's binding set, and after the acks
        # nothing left in the unacked index.
        assert r.type("_kombu.binding.celery") == b"set"
        wait_until(lambda: r.zcard("unacked_index") == 0, what="the messages acked")
    finally:
        output = _stop(worker)
        os.environ.pop("SLUICE_TEST_URL", None)
    assert "Traceback" not in output.split("sluice_test.fail")[0], output


def test_rq_worker_runs_a_job(server: ProcessServer) -> None:
    rq = pytest.importorskip("rq")
    url = f"redis://127.0.0.1:{server.port}/0"
    conn = redis.Redis(port=server.port)
    queue = rq.Queue("default", connection=conn)
    job = queue.enqueue("tests.integration._rq_jobs.multiply", 6, 7)
    proc = subprocess.run(
        [sys.executable, "-m", "rq.cli", "worker", "--burst", "--url", url, "default"],
        cwd=str(ROOT), env=_env(url), capture_output=True, text=True, timeout=90)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    job.refresh()
    assert job.get_status() == "finished", proc.stdout + proc.stderr
    assert job.return_value() == 42
    assert rq.registry.FinishedJobRegistry("default", connection=conn).get_job_ids() == [job.id]
