"""The Lua debugger (LDB): ``SCRIPT DEBUG YES|SYNC`` then ``EVAL``, as Redis's ``ldb*``
(eval.c), the session ``redis-cli --ldb`` drives.

A session runs one EVAL with a line hook (``sandbox.py``'s ``ldb_hook``). At the first line, at
a breakpoint, after ``redis.breakpoint()`` or when the script runs past the busy threshold, the
script stops: the session sends its log lines to the client as an array of simple strings and
reads debugger commands from the client's socket itself, blocking, as Redis does (``SYNC``:
the whole server waits; ``YES``: a forked child runs the session on a copy of the data set).
When the script ends, ``<endsession>`` is sent, then the EVAL reply, and the connection is
closed.

This module is the session's state and its plain commands (help, list, break, maxlen, the
command parser, the log and its I/O); what needs the Lua stack (print, eval, trace, redis) runs
in the sandbox's hook, which asks ``command()`` what to do next.
"""

from __future__ import annotations

import os
import select
import time

MAX_LEN_DEFAULT = 256  # LDB_MAX_LEN_DEFAULT
BREAKPOINTS_MAX = 64  # LDB_BREAKPOINTS_MAX
CBUF_MAX = 1 << 20  # "max client buffer reached"
SEND_TIMEOUT = 5.0  # connSendTimeout(ldb.conn, 5000)

HELP = (
    "Redis Lua debugger help:",
    "[h]elp               Show this help.",
    "[s]tep               Run current line and stop again.",
    "[n]ext               Alias for step.",
    "[c]ontinue           Run till next breakpoint.",
    "[l]ist               List source code around current line.",
    "[l]ist [line]        List source code around [line].",
    "                     line = 0 means: current position.",
    "[l]ist [line] [ctx]  In this form [ctx] specifies how many lines",
    "                     to show before/after [line].",
    "[w]hole              List all source code. Alias for 'list 1 1000000'.",
    "[p]rint              Show all the local variables.",
    "[p]rint <var>        Show the value of the specified variable.",
    "                     Can also show global vars KEYS and ARGV.",
    "[b]reak              Show all breakpoints.",
    "[b]reak <line>       Add a breakpoint to the specified line.",
    "[b]reak -<line>      Remove breakpoint from the specified line.",
    "[b]reak 0            Remove all breakpoints.",
    "[t]race              Show a backtrace.",
    "[e]val <code>        Execute some Lua code (in a different callframe).",
    "[r]edis <cmd>        Execute a Redis command.",
    "[m]axlen [len]       Trim logged Redis replies and Lua var dumps to len.",
    "                     Specifying zero as <len> means unlimited.",
    "[a]bort              Stop the execution of the script. In sync",
    "                     mode dataset changes will be retained.",
    "",
    "Debugger functions you can call from Lua scripts:",
    "redis.debug()        Produce logs in the debugger console.",
    "redis.breakpoint()   Stop execution like if there was a breakpoint in the",
    "                     next line of code.",
)

_ESCAPES = {0x5C: b"\\\\", 0x22: b'\\"', 0x0A: b"\\n", 0x0D: b"\\r", 0x09: b"\\t", 0x07: b"\\a",
            0x08: b"\\b"}


def catrepr(data: bytes) -> bytes:
    """``sdscatrepr``: quoted, with C escapes and ``\\xHH`` for other unprintable bytes."""
    out = bytearray(b'"')
    for b in data:
        esc = _ESCAPES.get(b)
        if esc is not None:
            out += esc
        elif 32 <= b < 127:
            out.append(b)
        else:
            out += b"\\x%02x" % b
    out += b'"'
    return bytes(out)


def _atoi(data: bytes) -> int:
    """C's ``atoi``: leading blanks, a sign and digits; anything else ends it (0 if none)."""
    s = data.lstrip(b" \t\n\r\v\f")
    end = 1 if s[:1] in (b"-", b"+") else 0
    while end < len(s) and 48 <= s[end] <= 57:
        end += 1
    try:
        return int(s[:end])
    except ValueError:
        return 0


def _string2l(data: bytes) -> int | None:
    """Redis's ``string2l``: a whole decimal integer, no blanks or '+', else None."""
    if not data or data[:1] == b"+" or (len(data) > 1 and data[:1] == b"0") \
            or data[:2] == b"-0" or not data.lstrip(b"-").isdigit() or data.count(b"-") > 1:
        return None
    return int(data)


def reply_to_human(reply: bytes) -> bytes:
    """``ldbRedisProtocolToHuman``: a RESP reply as the debugger logs it."""
    out = bytearray()
    _human(out, reply, 0)
    return bytes(out)


def _human(out: bytearray, r: bytes, p: int) -> int:
    end = r.index(b"\r", p + 1)
    kind, head = r[p:p + 1], r[p + 1:end]
    nxt = end + 2
    if kind == b":":
        out += head
    elif kind == b"$":
        n = int(head)
        if n == -1:
            out += b"NULL"
        else:
            out += catrepr(r[nxt:nxt + n])
            nxt += n + 2
    elif kind in (b"+", b"-"):
        out += catrepr(r[p:end])
    elif kind in (b"*", b"~", b"%"):
        n = int(head)
        if n == -1 and kind == b"*":
            out += b"NULL"
            return nxt
        out += {b"*": b"[", b"~": b"~(", b"%": b"{"}[kind]
        for j in range(n):
            nxt = _human(out, r, nxt)
            if kind == b"%":
                out += b" => "
                nxt = _human(out, r, nxt)
            if j != n - 1:
                out += b","
        out += {b"*": b"]", b"~": b")", b"%": b"}"}[kind]
    elif kind == b"_":
        out += b"(null)"
    elif kind == b"#":
        out += b"#true" if head[:1] == b"t" else b"#false"
    elif kind == b",":
        out += b"(double) " + head
    return nxt


class DebugIO:
    """Blocking I/O on a client's socket, the way Redis's ``connBlock`` session does it."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def write(self, data: bytes) -> None:
        """All of it, or give up after five seconds without progress (the next read will
        see a broken connection)."""
        view = memoryview(data)
        while view:
            try:
                n = os.write(self.fd, view)
            except BlockingIOError:
                if not select.select([], [self.fd], [], SEND_TIMEOUT)[1]:
                    return
                continue
            except OSError:
                return
            view = view[n:]

    def read(self) -> bytes:
        """What arrives next; b"" when the client is gone."""
        while True:
            try:
                return os.read(self.fd, 1024)
            except BlockingIOError:
                select.select([self.fd], [], [])
            except OSError:
                return b""


class LdbSession:
    """One debugging session: the source, the breakpoints, the log and the client's input."""

    def __init__(self, io: DebugIO, source: bytes, forked: bool, busy_ms: int) -> None:
        self.io = io
        self.forked = forked
        self.busy_ms = busy_ms or 5000  # the timeout that stops a looping script
        self.lines = source.rstrip(b"\r\n").split(b"\n") if source.rstrip(b"\r\n") else []
        self.logs: list[bytes] = []
        self.step = True  # stop at the next line
        self.luabp = False  # redis.breakpoint() was called
        self.force_log = False  # the "redis" command logs its call even when not stepping
        self.bps: list[int] = []
        self.maxlen = MAX_LEN_DEFAULT
        self.hint_sent = False
        self.currentline = -1
        self.cbuf = b""
        self.started = time.monotonic()
        self.timed_out = False  # the last stop was the busy timeout's

    # -- the log -------------------------------------------------------------------------------

    def logging(self) -> bool:
        """``ldbIsEnabled``: redis.call and errors are logged while stepping."""
        return self.step or self.force_log

    def log(self, entry: bytes) -> None:
        self.logs.append(entry)

    def log_maxlen(self, entry: bytes) -> None:
        """``ldbLogWithMaxLen``: trimmed to maxlen, with a hint the first time."""
        trimmed = False
        if self.maxlen and len(entry) > self.maxlen:
            entry = entry[:self.maxlen] + b" ..."
            trimmed = True
        self.logs.append(entry)
        if trimmed and not self.hint_sent:
            self.hint_sent = True
            self.logs.append(b"<hint> The above reply was trimmed. Use 'maxlen 0' to disable "
                             b"trimming.")

    def send_logs(self) -> None:
        """The log as an array of simple strings (CR and LF as spaces), then emptied."""
        out = [b"*%d\r\n" % len(self.logs)]
        for entry in self.logs:
            out.append(b"+" + entry.replace(b"\r", b" ").replace(b"\n", b" ") + b"\r\n")
        self.logs = []
        self.io.write(b"".join(out))

    def log_command(self, argv: list[bytes]) -> None:
        """``<redis> cmd args``: a script's call, ten arguments at most."""
        parts = [b"<redis>"]
        for j, arg in enumerate(argv):
            if j == 10:
                parts.append(b" ... (%d more)" % (len(argv) - j - 1))
                break
            parts.append(b" " + arg)
        self.log(b"".join(parts))

    def log_reply(self, resp: bytes) -> None:
        self.log_maxlen(b"<reply> " + reply_to_human(resp))

    # -- source and breakpoints ------------------------------------------------------------

    def source_line(self, line: int) -> bytes:
        if 1 <= line <= len(self.lines):
            return self.lines[line - 1]
        return b"<out of range source code line>"

    def log_source_line(self, line: int) -> None:
        """``ldbLogSourceLine``: ``->`` marks the current line, ``#`` a breakpoint."""
        current, bp = line == self.currentline, line in self.bps
        prefix = b"->#" if current and bp else b"-> " if current else b"  #" if bp else b"   "
        self.log(prefix + str(line).encode().ljust(3) + b" " + self.source_line(line))

    def list_source(self, around: int, context: int) -> None:
        for j in range(1, len(self.lines) + 1):
            if around == 0 or abs(around - j) <= context:
                self.log_source_line(j)

    def breakpoints(self, argv: list[bytes]) -> None:
        """``ldbBreak``: list, add (``b 5``), remove (``b -5``) or clear (``b 0``)."""
        if len(argv) == 1:
            if not self.bps:
                self.log(b"No breakpoints set. Use 'b <line>' to add one.")
                return
            self.log(b"%d breakpoints set:" % len(self.bps))
            for bp in self.bps:
                self.log_source_line(bp)
            return
        for arg in argv[1:]:
            line = _string2l(arg)
            if line is None:
                self.log(b"Invalid argument:'" + arg + b"'")
            elif line == 0:
                self.bps = []
                self.log(b"All breakpoints removed.")
            elif line > 0:
                if len(self.bps) == BREAKPOINTS_MAX:
                    self.log(b"Too many breakpoints set.")
                elif 0 < line <= len(self.lines) and line not in self.bps:
                    self.bps.append(line)
                    self.list_source(line, 1)
                else:
                    self.log(b"Wrong line number.")
            elif -line in self.bps:
                self.bps.remove(-line)
                self.log(b"Breakpoint removed.")
            else:
                self.log(b"No breakpoint in the specified line.")

    def set_maxlen(self, argv: list[bytes]) -> None:
        if len(argv) == 2:
            value = _atoi(argv[1])
            self.hint_sent = True  # the user knows about this command
            self.maxlen = 60 if value != 0 and value <= 60 else value
        if self.maxlen:
            self.log(b"<value> replies are truncated at %d bytes." % self.maxlen)
        else:
            self.log(b"<value> replies are unlimited.")

    # -- the hook's questions --------------------------------------------------------------

    def line(self, line: int, counted: bool) -> bool:
        """A line (or 100,000 instructions) of the script: True when it stops here, the
        stop logged and sent (``luaLdbLineHook``)."""
        self.currentline = line
        bp = line in self.bps or self.luabp
        timeout = False
        if counted and not self.step and not bp:
            if (time.monotonic() - self.started) * 1000 < self.busy_ms:
                return False
            timeout = self.step = True
        if not (self.step or bp):
            return False
        reason = (b"redis.breakpoint() called" if self.luabp else b"break point") if bp \
            else b"timeout reached, infinite loop?" if timeout else b"step over"
        self.step = self.luabp = False
        self.log(b"* Stopped at %d, stop reason = %s" % (line, reason))
        self.log_source_line(line)
        self.send_logs()
        self.timed_out = timeout
        return True

    def resumed(self) -> None:
        """The script goes on: the busy clock starts again (rctx->start_time)."""
        self.started = time.monotonic()

    def command(self) -> tuple[bytes, ...]:
        """The next thing the hook must do (``ldbRepl``): ``(b"go",)`` to run on, ``(b"error",
        text)`` to stop the script, or one of print / eval / redis / trace with its
        arguments. Commands that need no Lua are answered here."""
        while True:
            argv = self._next_command()
            if argv is None:  # the client is gone: run on without stopping
                self.step = False
                self.bps = []
                if self.timed_out:
                    return (b"error", b"timeout during Lua debugging with client closing "
                                      b"connection")
                return (b"go",)
            if type(argv) is bytes:
                return (b"error", argv)
            assert isinstance(argv, list)
            name = argv[0].split(b"\0", 1)[0].lower()  # as strcasecmp reads it
            if name in (b"h", b"help"):
                self.logs.extend(h.encode() for h in HELP)
            elif name in (b"s", b"step", b"n", b"next"):
                self.step = True
                return (b"go",)
            elif name in (b"c", b"continue"):
                return (b"go",)
            elif name in (b"t", b"trace"):
                return (b"trace",)
            elif name in (b"m", b"maxlen"):
                self.set_maxlen(argv)
            elif name in (b"b", b"break"):
                self.breakpoints(argv)
            elif name in (b"e", b"eval"):
                return (b"eval", b" ".join(argv[1:]))
            elif name in (b"a", b"abort"):
                return (b"error", b"script aborted for user request")
            elif len(argv) > 1 and name in (b"r", b"redis"):
                return (b"redis", *argv[1:])
            elif name in (b"p", b"print"):
                return (b"print", argv[1]) if len(argv) == 2 else (b"print",)
            elif name in (b"l", b"list"):
                around, ctx = self.currentline, 5
                if len(argv) > 1 and _atoi(argv[1]) > 0:
                    around = _atoi(argv[1])
                if len(argv) > 2:
                    ctx = _atoi(argv[2])
                self.list_source(around, ctx)
            elif name in (b"w", b"whole"):
                self.list_source(1, 1000000)
            else:
                self.log(b"<error> Unknown Redis Lua debugger command or wrong number of "
                         b"arguments.")
            self.send_logs()

    def _next_command(self) -> list[bytes] | bytes | None:
        """A command from the client (a list), a protocol error (bytes), or None when the
        connection is gone."""
        while True:
            parsed = parse_command(self.cbuf)
            if parsed is not None:
                self.cbuf = b""
                return parsed
            data = self.io.read()
            if not data:
                return None
            self.cbuf += data
            if len(self.cbuf) > CBUF_MAX:
                self.cbuf = b""
                return b"max client buffer reached"


def parse_command(buf: bytes) -> list[bytes] | bytes | None:
    """``ldbReplParseCommand``: a whole multibulk command, b"protocol error", or None to read
    more. As forgiving as Redis's: text before the ``*`` is skipped."""
    if not buf:
        return None
    star = buf.find(b"*")
    if star < 0:
        return b"protocol error"
    head = _length(buf, star)
    if head is None:
        return None
    argc, p = head
    if not 0 < argc <= 1024:
        return b"protocol error"
    argv: list[bytes] = []
    while len(argv) < argc:
        if p >= len(buf):
            return None
        if buf[p:p + 1] != b"$":
            return b"protocol error"
        head = _length(buf, p)
        if head is None:
            return None
        n, p = head
        if not 0 < n <= 1024:
            return b"protocol error"
        if p + n + 2 > len(buf):
            return None
        argv.append(buf[p:p + n])
        p += n
        if buf[p:p + 2] != b"\r\n":
            return b"protocol error"
        p += 2
    return argv


def _length(buf: bytes, at: int) -> tuple[int, int] | None:
    """The number after the type byte at ``at`` (``*3``, ``$5``) and where its line ends;
    None when the line is not all there yet."""
    eol = buf.find(b"\r\n", at)
    if eol < 0:
        return None
    return _atoi(buf[at + 1:eol]), eol + 2
