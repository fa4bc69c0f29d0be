"""HOTKEYS on the command path: what each executed command costs, fed to the session
(Redis 8.6's ``hotkeyStatsPreCurrentCmd`` / ``UpdateCurrentCmd`` / ``PostCurrentCmd``, called
from ``call()`` in server.c).

Role: ``Hotkeys`` holds the session (``storage/hotkeys.py``) and sets ``server.hotkeys_tracking``
to it while it is active, None otherwise. That attribute is the one test dispatch makes per
command (``call``, ``script_call``); while it is set, ``run_batch`` sends every command through
``call`` (its short path skips the books), so nothing here costs anything without a session.

What a command costs, as Redis counts it:
- keys: the command's key specs, or its own key finder (the ACL's ``KeyPlan``, Redis's
  ``getKeysFromCommandWithSpecs``); a command without keys (PING, EXEC, HOTKEYS) counts for
  nothing, not even in the session's totals.
- CPU: the handler's duration in µs. A command that blocks is not counted, neither when it
  times out nor when a write serves it (Redis re-runs it inside an execution unit, where
  nested calls are not counted).
- NET: the request's bytes as a RESP multibulk plus the reply's bytes (none under CLIENT
  REPLY OFF/SKIP). Inside EXEC, Redis does not reset its per-command byte counters between
  the transaction's commands: each one counts EXEC's request, the reply's array header and
  every reply of the transaction so far, its own included; so does this (for a session
  started inside the transaction too: EXEC brings the count up to date then).
- Nesting: a script's commands are not counted (the script's own keys are), except inside
  EXEC, where Redis's ``call()`` counts every command it runs; those count their reply (in
  the script's protocol) and no request bytes, as Redis's script client has none.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from sluice.protocol import SimpleString, encode_into
from sluice.protocol.encoder import multibulk_size
from sluice.storage.hotkeys import HotkeysSession

from .acl_user import key_plan
from .client import REPLY_ON

if TYPE_CHECKING:
    from sluice.commands.context import Command, Reply

    from .app import Server
    from .client import Client

_perf_ns = time.perf_counter_ns


def reply_size(reply: Reply, resp3: bool) -> int:
    """The bytes ``reply`` takes on the wire (the common replies without encoding them)."""
    kind = type(reply)
    if kind is SimpleString:  # +OK\r\n
        return len(reply) + 3  # type: ignore[arg-type]
    if kind is bytes:  # $<len>\r\n<data>\r\n
        n = len(reply)  # type: ignore[arg-type]
        return n + (6 if n < 10 else 7 if n < 100 else 5 + len(str(n)))
    buf = bytearray()
    encode_into(buf, reply, resp3)
    return len(buf)


class Hotkeys:
    """The server's HOTKEYS state: the session (running or stopped) and the hook."""

    __slots__ = ("server", "session", "exec_base", "exec_out")

    def __init__(self, server: Server) -> None:
        self.server = server
        self.session: HotkeysSession | None = None  # GET's; None before START, after RESET
        self.exec_base = 0  # the running EXEC's request bytes and reply header
        self.exec_out = 0  # the running EXEC's reply bytes so far

    # -- HOTKEYS START / STOP / RESET -----------------------------------------------------

    def start(self, session: HotkeysSession) -> None:
        """START: ``session`` replaces any stopped one and is tracked from now on."""
        self.session = session
        self.server.hotkeys_tracking = session

    def stop(self) -> None:
        """STOP, or DURATION's end: results stay for GET."""
        session = self.session
        if session is not None and session.active:
            session.stop(self.server.keyspace.clock.now_ms())
        self.server.hotkeys_tracking = None

    def reset(self) -> None:
        """RESET: forget the (stopped) session."""
        self.session = None
        self.server.hotkeys_tracking = None

    def cron(self) -> None:
        """End a session whose DURATION has run out (Redis checks in serverCron, at hz)."""
        session = self.session
        if session is not None and session.expired(self.server.keyspace.clock.now_ms()):
            self.stop()

    def info(self) -> dict[str, int]:
        """INFO hotkeys: nothing before a session; then whether it runs, and the time spent
        updating its top-Ks in ms (Redis adds whole ms per update, so its stays near 0; here
        the time is summed, then converted)."""
        session = self.session
        if session is None:
            return {}
        return {"hotkeys-tracking-active": 1 if session.active else 0,
                "hotkeys-cmd-cpu-time": session.update_ns // 1_000_000}

    # -- the command path --------------------------------------------------------------

    def begin_exec(self, argv: list[bytes], queued: int, done: list[Reply],
                   resp3: bool) -> None:
        """EXEC of ``queued`` commands starts, or a session starts inside it after the
        commands ``done`` gave these replies: EXEC's request, its reply's header and the
        replies so far count for each command that follows (see the module's docstring)."""
        self.exec_base = multibulk_size(argv) + len(b"*%d\r\n" % queued)
        self.exec_out = sum(reply_size(reply, resp3) for reply in done)

    def exec_reply(self, reply: Reply, resp3: bool) -> None:
        """A reply of the running EXEC that did not come from ``call`` (an ACL refusal)."""
        self.exec_out += reply_size(reply, resp3)

    def command(self, client: Client, cmd: Command, argv: list[bytes], reply: Reply,
                duration_us: int) -> None:
        """A client's command (top level, or inside EXEC) is done: count its cost."""
        session = self.server.hotkeys_tracking
        assert session is not None
        if client.is_script:
            self.script_command(client, cmd, argv, reply, duration_us)
            return
        if client.in_exec:  # every reply counts for the commands after it, keys or not
            if client.reply_mode == REPLY_ON:
                self.exec_out += reply_size(reply, client.resp3)
            found = key_plan(cmd).find(argv)
            if found:
                _record(session, [argv[pos] for pos, _ in found], duration_us,
                        self.exec_base + self.exec_out)
            return
        found = key_plan(cmd).find(argv)
        if found:
            net = multibulk_size(argv)
            if client.reply_mode == REPLY_ON:
                net += reply_size(reply, client.resp3)
            _record(session, [argv[pos] for pos, _ in found], duration_us, net)

    def script_command(self, client: Client, cmd: Command, argv: list[bytes], reply: Reply,
                       duration_us: int) -> None:
        """A script's command is done: counted only inside EXEC."""
        caller = self.server.current_client
        session = self.server.hotkeys_tracking
        if caller is None or not caller.in_exec or session is None:
            return
        found = key_plan(cmd).find(argv)
        if found:
            _record(session, [argv[pos] for pos, _ in found], duration_us,
                    reply_size(reply, client.resp3))


def _record(session: HotkeysSession, keys: list[bytes], cpu_us: int, net: int) -> None:
    """Feed the session, timing it (INFO hotkeys-cmd-cpu-time)."""
    start = _perf_ns()
    session.record(keys, cpu_us, net, session.sampled())
    session.update_ns += _perf_ns() - start
