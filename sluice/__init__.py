"""Sluice: a Redis-compatible server in Python, built around Redis Streams.

Subpackages: ``protocol`` (RESP, sans-IO), ``storage`` (data and files), ``commands`` (the
command table and handlers), ``server`` (asyncio), ``pipeline`` (PySpark, optional),
``testing`` (the pytest plugin).

``serve_in_background()`` runs a server inside your program (``server/embedded.py``); it is
imported on first use, so ``import sluice`` stays cheap.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__version__ = "0.1.0"

REDIS_VERSION = "8.6.3"
"""The Redis release whose behaviour Sluice matches (INFO redis_version, HELLO's version)."""

__all__ = ["__version__", "serve_in_background", "BackgroundServer"]


# import_module, not an import statement: every module imports this package (REDIS_VERSION),
# and a static import of the server here, even inside a function, would put the server under
# protocol and storage for mypy and in import-linter's graph. Type checkers see Any here;
# ``sluice.server.embedded`` has the precise types.
def __getattr__(name: str) -> Any:
    if name in ("serve_in_background", "BackgroundServer"):
        return getattr(import_module("sluice.server.embedded"), name)
    raise AttributeError(f"module 'sluice' has no attribute {name!r}")
