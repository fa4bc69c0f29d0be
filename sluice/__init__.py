"""Sluice: a Redis-compatible server in Python, built around Redis Streams.

Subpackages: ``protocol`` (RESP, sans-IO), ``storage`` (data and files), ``commands`` (the
command table and handlers), ``server`` (asyncio), ``pipeline`` (PySpark, optional).
"""

__version__ = "0.1.0"
