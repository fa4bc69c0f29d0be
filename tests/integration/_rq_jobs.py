"""Job functions for ``test_task_queues.py``'s RQ worker (imported by the worker process)."""

from __future__ import annotations


def multiply(x: int, y: int) -> int:
    return x * y
