"""The encoding settings a value is loaded with (RDB files, AOF bases, RESTORE payloads).

Redis decides the encoding of a set or sorted set it loads with the server's current
``set-max-*`` / ``zset-max-listpack-*`` settings (``rdbLoadObject``). The loaders in
``rdb_set.py`` / ``rdb_zset.py`` are called deep inside the RDB reader, which knows nothing
of the server; the server states its settings around a load instead::

    with loading_with(server.config):
        rdb.load_into(...)

``current(default)`` gives the loaders those settings, or ``default`` (Redis's defaults)
outside such a block (``sluice-check-rdb``, tests). A context variable, not a global: each
server in a process (tests run several) states its own, and a load runs to its end in the
thread that started it.

Imports nothing of Sluice's.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

_CURRENT: ContextVar[Any] = ContextVar("sluice_load_limits", default=None)


def current(default: Any) -> Any:
    """The settings of the load in progress, or ``default``."""
    value = _CURRENT.get()
    return default if value is None else value


@contextmanager
def loading_with(settings: Any) -> Iterator[None]:
    """Loads inside the block use ``settings`` (an object with the limits as attributes)."""
    token = _CURRENT.set(settings)
    try:
        yield
    finally:
        _CURRENT.reset(token)
