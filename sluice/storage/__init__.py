"""Keyspace, value types, and (later) the AOF and snapshot files. Pure data: no RESP, no asyncio."""
