"""CLIENT PAUSE: holding clients' commands until a deadline or CLIENT UNPAUSE.

Mirrors Redis 7's ``pauseClients`` / ``unpauseClients`` and the check in ``processCommand``:

* ``ALL`` holds every command; ``WRITE`` holds the commands that may change data or be
  propagated (flags ``write`` or ``may_replicate``, and EXEC of a transaction holding one).
  Read commands, and commands refused before the check (unknown, wrong arity, NOAUTH), are
  answered at once.
* A held command is parked on its client (``client.postponed``): ``Server.process_input``
  reads nothing more from that client, so its pipelined commands keep their order. Held
  clients count in INFO ``blocked_clients``, as Redis counts its postponed clients.
* A new pause never weakens the current one: the later deadline and the stricter mode win.
* The end of a pause (its timer, or CLIENT UNPAUSE) re-runs the held commands in arrival
  order through ``dispatch.process_command`` (every check again), then resumes the rest of
  each client's input.
* While paused, keys are not expired, neither in the background nor on lookup: an expired
  key reads as absent but stays stored until the pause ends (Redis's PAUSE_ACTION_EXPIRE).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sluice.commands.spec import F

if TYPE_CHECKING:
    import asyncio

    from sluice.commands.context import Command

    from .app import Server
    from .client import Client

PAUSE_OFF, PAUSE_WRITE, PAUSE_ALL = 0, 1, 2
_MAY_WRITE = F.WRITE | F.MAY_REPLICATE


def _flags(client: Client, cmd: Command, argv: list[bytes]) -> int:
    return cmd.flags if cmd.get_flags is None else cmd.get_flags(client, argv, cmd.flags)


class ClientPause:
    __slots__ = ("server", "mode", "end", "timer", "held")

    def __init__(self, server: Server) -> None:
        self.server = server
        self.mode = PAUSE_OFF  # dispatch checks this one attribute per command
        self.end = 0.0  # loop time the pause ends
        self.timer: asyncio.TimerHandle | None = None
        self.held: list[Client] = []  # clients with a postponed command, in arrival order

    def pause(self, timeout_ms: int, write_only: bool) -> None:
        loop = self.server.loop
        end = loop.time() + timeout_ms / 1000.0
        mode = PAUSE_WRITE if write_only else PAUSE_ALL
        if self.mode != PAUSE_OFF:
            mode = max(mode, self.mode)
            end = max(end, self.end)
        self.mode, self.end = mode, end
        self.server.keyspace.pause_expiry(True)
        if self.timer is not None:
            self.timer.cancel()
        self.timer = loop.call_at(end, self._timed_out)

    def must_hold(self, client: Client, cmd: Command, flags: int) -> bool:
        """Whether the current pause holds this command (called only while paused).
        ``flags`` are the command's for these arguments (a script's declared flags count:
        Redis's getCommandFlags), and so are those of the commands EXEC would run."""
        if self.mode == PAUSE_ALL:
            return True
        if flags & _MAY_WRITE:
            return True
        if cmd.name == "exec" and client.multi:
            return any(_flags(client, c, argv) & _MAY_WRITE for c, argv in client.multi)
        return False

    def hold(self, client: Client, argv: list[bytes]) -> None:
        client.postponed = argv
        self.held.append(client)

    def forget(self, client: Client) -> None:
        """A held client disconnected."""
        if client.postponed is not None:
            client.postponed = None
            try:
                self.held.remove(client)
            except ValueError:
                pass

    def unpause(self) -> None:
        """End the pause; the held commands run from a fresh loop callback (never from inside
        the CLIENT UNPAUSE that ended it)."""
        self._stop()
        if self.held:
            held, self.held = self.held, []
            self.server.loop.call_soon(self._release, held)

    def _stop(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        self.mode = PAUSE_OFF
        self.end = 0.0
        self.server.keyspace.pause_expiry(False)

    def _release(self, held: list[Client]) -> None:
        from .dispatch import process_command

        server = self.server
        for client in held:
            argv = client.postponed
            client.postponed = None
            if argv is None or client.closed:
                continue
            process_command(server, client, argv)
            if client.postponed is None:  # not held again by a new pause
                server.queue_unblocked(client)  # its pipelined input runs next
        server.before_return()

    def _timed_out(self) -> None:
        self.timer = None
        self._stop()
        held, self.held = self.held, []
        self._release(held)
