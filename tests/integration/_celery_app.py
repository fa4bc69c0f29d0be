"""A Celery app for ``test_task_queues.py``: broker and result backend are the Sluice server
named by ``SLUICE_TEST_URL`` (the worker process imports this module with it set)."""

from __future__ import annotations

import os

from celery import Celery

URL = os.environ.get("SLUICE_TEST_URL", "redis://127.0.0.1:6379/0")

app = Celery("sluice_test", broker=URL, backend=URL)
app.conf.update(
    broker_connection_retry_on_startup=True,
    task_acks_late=True,  # the kombu Redis transport's unacked hash and sorted set, in use
    worker_prefetch_multiplier=1,
    result_expires=600,
)


@app.task(name="sluice_test.add")
def add(x: int, y: int) -> int:
    return x + y


@app.task(name="sluice_test.fail")
def fail() -> None:
    raise ValueError("as planned")
