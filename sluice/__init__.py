"""Sluice: a Redis-compatible server in Python, built around Redis Streams.

Subpackages: ``protocol`` (RESP, sans-IO), ``storage`` (data and files), ``commands`` (the
command table and handlers), ``server`` (asyncio), ``pipeline`` (PySpark, optional).
"""

__version__ = "0.1.0"

REDIS_VERSION = "8.6.3"
"""The Redis release whose behaviour Sluice matches (INFO redis_version, HELLO's version)."""
