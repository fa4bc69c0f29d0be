"""The run context of a script (Redis's ``scriptRunCtx``) and what engine, runner and server
share about a run: the script flags, the propagation flags, the errors.

``ScriptRun`` holds who called, the script client commands run as, the flags that decide
what ``redis.call`` may do (read-only, allow-oom, write-dirty), the kill and time-out state,
the script's RESP version and replication flags, and the effects to propagate. ``ScriptHost``
is what the engine needs of its owner (``runner.Scripting``).

Mirrors ``script.h`` / ``script.c`` (``scriptRunCtx``, ``SCRIPT_FLAG_*``, ``PROPAGATE_*``).
"""

from __future__ import annotations

import time
from typing import Protocol

from sluice.commands.context import Context, Reply, ServerFacade
from sluice.protocol import Raw

# Script flags (script.h's SCRIPT_FLAG_*), in scripts_flags_def order.
NO_WRITES, ALLOW_OOM, ALLOW_STALE, NO_CLUSTER, ALLOW_CROSS_SLOT = 1, 2, 4, 8, 16
EVAL_COMPAT_MODE = 32
FLAG_NAMES: tuple[tuple[int, bytes], ...] = (
    (NO_WRITES, b"no-writes"), (ALLOW_OOM, b"allow-oom"), (ALLOW_STALE, b"allow-stale"),
    (NO_CLUSTER, b"no-cluster"), (ALLOW_CROSS_SLOT, b"allow-cross-slot-keys"),
)
PROPAGATE_AOF, PROPAGATE_REPL = 1, 2  # redis.set_repl's REPL_AOF, REPL_REPLICA


class ScriptError(Exception):
    """A command a script called was refused; ``message`` is the error text (Redis's)."""

    def __init__(self, message: bytes) -> None:
        super().__init__(message)
        self.message = message


class ScriptHost(Protocol):
    """What the engine needs from its owner (``runner.Scripting``)."""

    @property
    def busy_reply_threshold(self) -> int: ...  # ms; past it, the hook serves others

    def script_call(self, run: ScriptRun, argv: list[bytes]) -> Reply: ...  # or ScriptError
    def script_busy(self, run: ScriptRun) -> None: ...  # serve other clients for a moment
    def acl_check_cmd(self, run: ScriptRun,
                      argv: list[bytes]) -> bytes | bool: ...  # allowed, or the error
    def script_log(self, level: int, message: bytes) -> None: ...  # redis.log (0..3)
    def deprecated_api(self) -> bool: ...  # lua-enable-deprecated-api


class ScriptRun:
    """One script execution (Redis's scriptRunCtx)."""

    __slots__ = ("caller", "client", "server", "funcname", "eval_mode", "read_only",
                 "allow_oom", "write_dirty", "killed", "timedout", "start", "repl", "resp3",
                 "effects", "shutdown")

    def __init__(self, caller: Context, client: Context, server: ServerFacade[Context],
                 funcname: bytes, eval_mode: bool, read_only: bool, allow_oom: bool) -> None:
        self.caller = caller            # the client that sent EVAL / FCALL
        self.client = client            # the script client commands run as
        self.server = server            # caller.server, read once
        self.funcname = funcname        # the script's SHA1, or the function's name
        self.eval_mode = eval_mode      # EVAL (SCRIPT KILL) or FCALL (FUNCTION KILL)
        self.read_only = read_only      # *_RO or no-writes: write commands refused
        self.allow_oom = allow_oom      # allow-oom: deny-oom commands run past maxmemory
        self.write_dirty = False        # a write ran: SCRIPT KILL is refused (UNKILLABLE)
        self.killed = False             # SCRIPT KILL / FUNCTION KILL asked for it
        self.timedout = False           # past busy-reply-threshold: others get BUSY
        self.start = time.monotonic()
        self.repl = PROPAGATE_AOF | PROPAGATE_REPL  # redis.set_repl
        self.resp3 = False              # redis.setresp(3)
        self.effects: list[tuple[int, list[bytes]]] = []  # writes to propagate, in order
        self.shutdown = False           # SHUTDOWN NOSAVE arrived while it ran

    @property
    def argv(self) -> list[bytes]:
        """The caller's command (FUNCTION STATS)."""
        return self.caller.argv

    def duration_ms(self) -> int:
        return int((time.monotonic() - self.start) * 1000)


class CountedError(Raw):
    """An error reply already counted in the error stats (the command that failed inside the
    script counted it): Redis's ERR_REPLY_FLAG_NO_STATS_UPDATE. Written as raw bytes so
    dispatch does not count it again; the handler counts the failed call."""

    __slots__ = ()

    @property
    def message(self) -> bytes:
        return bytes(self)[1:-2]


def counted_error(msg: bytes) -> CountedError:
    return CountedError(b"-" + msg + b"\r\n")
