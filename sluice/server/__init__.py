"""The asyncio server: app (Server), connection, client state, dispatch, blocking, config."""
