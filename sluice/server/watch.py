"""WATCH's optimistic locks: which clients watch which keys, and what makes their EXEC fail.

Mirrors Redis's multi.c (``watchForKey``, ``unwatchAllKeys``, ``touchWatchedKey``,
``touchAllWatchedKeysInDb``, ``isWatchedKeyExpired``). A watched key is listed twice, on its
client (``Client.watched``) and here under (db id, key), so a write finds its watchers in
O(1) and a client leaving forgets its keys in O(its keys).

Redis 7's rules for expiry: a watched key that expires logically after WATCH fails EXEC; one
that was already expired when watched does not, and neither does its deletion (nothing
changed logically), unless it is replaced by a live value.

The server calls :meth:`Watches.touch` from ``key_modified`` (every write), after testing
``keys`` itself, so a server with no WATCH pays one truth test per write.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sluice.storage.keyspace import Clock, Database

if TYPE_CHECKING:
    from .client import Client


class WatchedKey:
    """One key a client WATCHes (Redis's ``watchedKey``)."""

    __slots__ = ("client", "db", "key", "expired")

    def __init__(self, client: Client, db: Database, key: bytes, expired: bool) -> None:
        self.client = client
        self.db = db
        self.key = key
        self.expired = expired  # the key was already logically expired when watched


class Watches:
    """Every WATCH of the server, by (db id, key)."""

    __slots__ = ("keys", "_clock")

    def __init__(self, clock: Clock) -> None:
        self.keys: dict[tuple[int, bytes], list[WatchedKey]] = {}
        self._clock = clock

    def watch(self, client: Client, key: bytes) -> None:
        """WATCH ``key`` in the client's database (a second WATCH of it changes nothing)."""
        db = client.db
        watchers = self.keys.get((db.id, key))
        if watchers is None:
            watchers = self.keys[(db.id, key)] = []
        else:  # O(the key's watchers), not O(the client's keys)
            for wk in watchers:
                if wk.client is client:
                    return
        wk = WatchedKey(client, db, key, self._expired(db, key))
        client.watched.append(wk)
        watchers.append(wk)

    def unwatch_all(self, client: Client) -> None:
        """UNWATCH, EXEC, DISCARD, RESET or a client leaving: forget the client's keys."""
        for wk in client.watched:
            bkey = (wk.db.id, wk.key)
            watchers = self.keys.get(bkey)
            if watchers is not None:
                try:
                    watchers.remove(wk)
                except ValueError:
                    pass
                if not watchers:
                    del self.keys[bkey]
        client.watched = []
        client.dirty_cas = False

    def expired_since_watch(self, client: Client) -> bool:
        """A watched key that has logically expired since WATCH also fails EXEC (Redis 7);
        one that was already expired when watched does not."""
        return any(not wk.expired and self._expired(wk.db, wk.key) for wk in client.watched)

    def touch(self, db: Database, key: bytes, watchers: list[WatchedKey]) -> None:
        """A write to a watched key makes its watchers' EXEC fail, except that deleting a key
        that was already expired when watched changes nothing logically."""
        for wk in watchers:
            if wk.expired and key not in db.data:
                wk.expired = False
                continue
            wk.client.dirty_cas = True

    def touch_all_in_db(self, emptied: Database, replaced_with: Database | None) -> None:
        """FLUSHDB (``replaced_with`` None) or SWAPDB: touch the watched keys of ``emptied``
        whose value goes away or changes (Redis's ``touchAllWatchedKeysInDb``)."""
        for (db_id, key), watchers in list(self.keys.items()):
            if db_id != emptied.id:
                continue
            existed = key in emptied.data
            exists = replaced_with is not None and key in replaced_with.data
            if not (existed or exists):
                continue
            for wk in watchers:
                if wk.expired:
                    if not exists:  # the expired key is simply gone: no logical change
                        wk.expired = False
                        continue
                    if self._expired(replaced_with, key):
                        continue  # still an expired key
                elif not existed and self._expired(replaced_with, key):
                    wk.expired = True  # a missing key replaced by an expired one
                    continue
                wk.client.dirty_cas = True

    def _expired(self, db: Database | None, key: bytes) -> bool:
        if db is None:
            return False
        when = db.expires.get(key)
        return when is not None and when <= self._clock.now_ms()
