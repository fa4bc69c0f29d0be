"""Keyspace notifications: publishing an event (Redis's ``notifyKeyspaceEvent``, notify.c).

Role: ``notify_keyspace_event`` publishes ``event`` on ``__keyspace@<db>__:<key>`` (class K)
and ``key`` on ``__keyevent@<db>__:<event>`` (class E) through the server's Pub/Sub, when
the event's class is enabled by ``notify-keyspace-events`` (``commands/keyevents.py`` names
the classes and the events). A message to the client running the command waits until its
reply is written (``PubSub.publish``'s ``publisher``), as Redis 7.2+ queues pushes to the
current client.

Invariant: when ``notify-keyspace-events`` is empty nothing here runs: handlers call
``ctx.notify`` (one integer test on the server's ``notify_flags``), and the keyspace's hooks
for the events it fires itself ("new", "overwritten", "type_changed", "keymiss") are
installed only while one of their classes is on (``apply_flags``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sluice.commands.keyevents import (
    EVENT_CLASS,
    NOTIFY_KEY_MISS,
    NOTIFY_KEYEVENT,
    NOTIFY_KEYSPACE,
    NOTIFY_NEW,
    NOTIFY_OVERWRITTEN,
    NOTIFY_TYPE_CHANGED,
)

if TYPE_CHECKING:
    from .app import Server


def notify_keyspace_event(server: Server, event: bytes, key: bytes, db_id: int) -> None:
    """Publish ``event`` about ``key`` of database ``db_id``, if its class is enabled."""
    flags = server.notify_flags
    if not flags & EVENT_CLASS[event]:
        return
    publish = server.pubsub.publish
    publisher = server.current_client
    if flags & NOTIFY_KEYSPACE:
        publish(b"__keyspace@%d__:%s" % (db_id, key), event, publisher=publisher)
    if flags & NOTIFY_KEYEVENT:
        publish(b"__keyevent@%d__:%s" % (db_id, event), key, publisher=publisher)


def apply_flags(server: Server, flags: int) -> None:
    """``notify-keyspace-events`` changed: keep the flags where the hot path tests them and
    install the keyspace's hooks only for the classes it fires itself."""
    server.notify_flags = flags
    access = server.keyspace.access

    def on_event(db_id: int, event: bytes, key: bytes) -> None:
        notify_keyspace_event(server, event, key, db_id)

    def on_miss(db_id: int, key: bytes) -> None:
        notify_keyspace_event(server, b"keymiss", key, db_id)

    own = NOTIFY_NEW | NOTIFY_OVERWRITTEN | NOTIFY_TYPE_CHANGED
    access.on_event = on_event if flags & own else None
    access.on_miss = on_miss if flags & NOTIFY_KEY_MISS else None
