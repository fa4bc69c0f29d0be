"""What a handler returns, and the connection's reply modes.

``Reply`` is a wire value (``protocol.types.Reply``: the Python type decides the RESP type) or
``BLOCKED``, which ``ctx.block(...)`` returns when the client was parked on keys: the command
has no reply yet, it gets one when it is re-run or times out. Dispatch encodes anything else
into the client's output buffer.

The ``REPLY_*`` values are ``ctx.reply_mode``, set by CLIENT REPLY (Redis's
``CLIENT_REPLY_OFF`` / ``CLIENT_REPLY_SKIP`` flags): dispatch reads them to drop replies.

Below ``spec.py`` (a table row's handler is typed with ``Reply``) and ``context.py``; imports
only ``protocol``.
"""

from __future__ import annotations

from typing import TypeAlias

from sluice.protocol.types import Reply as WireReply

__all__ = ["BLOCKED", "REPLY_OFF", "REPLY_ON", "REPLY_SKIP", "REPLY_SKIP_NEXT", "Blocked",
           "Reply", "WireReply"]


class Blocked:
    """Returned by ``ctx.block``: the command produced no reply yet."""

    __slots__ = ()


BLOCKED = Blocked()

Reply: TypeAlias = WireReply | Blocked
"""What a handler may return: a value the encoder accepts, or ``BLOCKED``."""

# CLIENT REPLY: ON, OFF, SKIP (this command's reply is dropped, then replies resume) and
# SKIP_NEXT (set by CLIENT REPLY SKIP: its own reply and the next command's are dropped).
REPLY_ON, REPLY_OFF, REPLY_SKIP, REPLY_SKIP_NEXT = 0, 1, 2, 3
