"""LATENCY: the spikes the latency monitor recorded, and per-command latency histograms.

LATEST, HISTORY, RESET, GRAPH and DOCTOR read ``server.latency`` (``server/latency.py``:
the events, sampled where Redis samples them, 160 samples per event, one per second at
most); HISTOGRAM reads each command's histogram (``cmdlatency.py``). DOCTOR's report is
Sluice's own text: per event, its spikes and what usually causes them.

Mirrors Redis's ``latencyCommand`` (latency.c).
"""

from __future__ import annotations

import time

from sluice.protocol import Map, Verbatim

from .args import Args
from .cmdlatency import has_samples, histogram_reply
from .context import Command, Context, Reply
from .errors import LATENCY_NO_SAMPLES, CommandError
from .introspection import every_command, find, help_reply
from .spec import ADMIN, LOADING, NONE, NOSCRIPT, STALE, A, cmd

_ADM = ADMIN | NOSCRIPT | LOADING | STALE
_LATENCY_TIPS = ("nondeterministic_output", "request_policy:all_nodes",
                 "response_policy:special")
_ALL_NODES_OK = ("request_policy:all_nodes", "response_policy:all_succeeded")


def latency_latest(ctx: Context, args: Args) -> Reply:
    return ctx.server.latency.latest()


def latency_history(ctx: Context, args: Args) -> Reply:
    return ctx.server.latency.history(args.next())


def latency_reset(ctx: Context, args: Args) -> Reply:
    return ctx.server.latency.reset(args.rest())


def latency_graph(ctx: Context, args: Args) -> Reply:
    event = args.next()
    samples = ctx.server.latency.history(event)
    if not samples:
        raise CommandError(LATENCY_NO_SAMPLES % event.decode(errors="replace"))
    peak = max(ms for _, ms in samples) or 1
    now = int(time.time())
    name = event.decode(errors="replace")
    lines = [f"{name} - high {peak} ms, low {min(ms for _, ms in samples)} ms "
             f"(all time high {ctx.server.latency.events[name][1][0]} ms)", "-" * 72]
    for ts, ms in samples:  # the monitor keeps the last 160
        bar = "#" * max(1, round(40 * ms / peak))
        lines.append(f"{now - ts:>6}s ago {ms:>8} ms |{bar}")
    return Verbatim(("\n".join(lines) + "\n").encode())


# What each event measures and what usually helps, for LATENCY DOCTOR (Sluice's own words;
# Redis's doctor gives advice of the same kind for the same events).
_EVENT_ADVICE = {
    "command": "slow commands: SLOWLOG GET names them. O(N) commands over big values "
               "(KEYS, SMEMBERS, HGETALL, LRANGE 0 -1, SORT, a long Lua script) are the usual "
               "cause: use SCAN, SSCAN, HSCAN, ranges or smaller values.",
    "fast-command": "O(1) or O(log N) commands that took long: the process was stalled rather "
                    "than busy (CPU taken by other work, swapping, a large value freed).",
    "expire-cycle": "the active expiry cycle: many keys expiring at the same moment, or big "
                    "values expiring. Spread the TTLs, or keep values smaller.",
    "expire-del": "freeing one expired key took this long: a big value expired. Keep values "
                  "smaller, or delete big ones with UNLINK before they expire.",
    "eviction-cycle": "evicting keys to get under maxmemory. Raise maxmemory, or lower the "
                      "write rate at the limit.",
    "evict-del": "freeing one evicted key took this long: a big value was evicted.",
    "aof-write": "writing the AOF buffer to the file (every write, whatever else happened): "
                 "the disk is slow. The three aof-write-* events say what competed with it.",
    "aof-write-pending-fsync": "an AOF write waited for the background fsync: the disk is "
                               "slow to sync.",
    "aof-write-active-child": "an AOF write while a BGSAVE or BGREWRITEAOF child was writing "
                              "too: the child's I/O slows the server's.",
    "aof-write-alone": "an AOF write with nothing else on the disk: the disk itself is slow.",
    "aof-fsync-always": "the fsync of appendfsync always: one per loop iteration. A faster "
                        "disk, or appendfsync everysec (losing up to a second of writes on a "
                        "crash), removes it.",
    "aof-fstat": "reading an AOF file's size: the filesystem is slow to answer.",
    "aof-rename": "installing a rewritten AOF file: the filesystem is slow to rename "
                  "(or to delete the file replaced).",
    "fork": "the fork() of BGSAVE or BGREWRITEAOF: the parent stops while the kernel copies "
            "its page tables, which grow with the memory used. Save less often, or on a "
            "replica of the data.",
    "rdb-unlink-temp-file": "deleting the temp file of a stopped BGSAVE: the filesystem is "
                            "slow to delete large files.",
}


def latency_doctor(ctx: Context, args: Args) -> Reply:
    """A report, in words, on each event's spikes and what usually causes them."""
    server = ctx.server
    threshold = server.config.latency_monitor_threshold
    if not threshold:
        text = ("Latency monitoring is off on this server. Turn it on with "
                "CONFIG SET latency-monitor-threshold <milliseconds>: every command or "
                "internal event (expiry, eviction, AOF writes and fsyncs, forks) that takes "
                "at least that long is then recorded, and this report describes the "
                "spikes.\n")
        return Verbatim(text.encode())
    events = server.latency.events
    if not events:
        return Verbatim(f"No latency spike of {threshold} ms or more has been recorded since "
                        "the monitor was turned on or last reset.\n".encode())
    lines = [f"Latency spikes of {threshold} ms or more, per event:", ""]
    for name, (samples, peak) in events.items():
        values = [ms for _, ms in samples]
        avg = sum(values) / len(values) if values else 0
        lines.append(f"{name}: {len(values)} spikes recorded, average {avg:.0f} ms, "
                     f"worst {peak[0]} ms.")
        advice = _EVENT_ADVICE.get(name)
        if advice is not None:
            lines.append(f"    {advice[0].upper()}{advice[1:]}")
    lines += ["", "LATENCY HISTORY <event> gives an event's samples, LATENCY GRAPH <event> "
              "draws them, and LATENCY RESET forgets them."]
    return Verbatim(("\n".join(lines) + "\n").encode())


def latency_histogram(ctx: Context, args: Args) -> Reply:
    """Every command (and subcommand) called since the last CONFIG RESETSTAT, or those named;
    a container names its subcommands; unknown names are skipped. (A name given twice is
    answered once: Redis would repeat it.)"""
    table = ctx.server.table
    if args:
        rows: list[Command] = []
        for name in args.rest():
            c = find(table, name)
            if c is not None:
                rows.extend(c.subcommands.values() if c.subcommands else (c,))
    else:
        rows = every_command(table)
    return Map((c.name_bytes, histogram_reply(c.calls, c.hist, c.hist_slow))
               for c in rows if has_samples(c))


_LATENCY_HELP = (
    "DOCTOR",
    "    A report, in words, on the latency spikes recorded.",
    "GRAPH <event>",
    "    A text chart of the samples of <event>.",
    "HISTORY <event>",
    "    The timestamp and latency of each sample of <event>.",
    "LATEST",
    "    The latest and the highest sample of every event.",
    "RESET [<event> ...]",
    "    Forget the samples of the given events (of all events when none is given).",
    "HISTOGRAM [<command> ...]",
    "    The latency histogram of every command called, or of the commands given.",
)


def latency_help(ctx: Context, args: Args) -> Reply:
    return help_reply("LATENCY", _LATENCY_HELP)


COMMANDS: tuple[Command, ...] = (
    #   name                 arity  flags                    acl           keys  handler
    cmd("latency",             -2,  NONE,                    A.NONE,       None, None,
        "Groups the latency diagnostics commands.", group="server", since="2.8.13",
        complexity="Depends on subcommand."),
    cmd("latency|latest",       2,  _ADM,                    A.NONE,       None, latency_latest,
        "Returns the latest and the highest latency sample of each event.", group="server",
        since="2.8.13", tips=_LATENCY_TIPS),
    cmd("latency|history",      3,  _ADM,                    A.NONE,       None, latency_history,
        "Returns the latency samples of an event.", group="server", since="2.8.13",
        syntax="event", tips=_LATENCY_TIPS),
    cmd("latency|reset",       -2,  _ADM,                    A.NONE,       None, latency_reset,
        "Forgets the latency samples of some or all events.", group="server",
        since="2.8.13", syntax="[event [event ...]]", tips=_ALL_NODES_OK),
    cmd("latency|graph",        3,  _ADM,                    A.NONE,       None, latency_graph,
        "Draws the latency samples of an event as text.", group="server", since="2.8.13",
        syntax="event", tips=_LATENCY_TIPS),
    cmd("latency|doctor",       2,  _ADM,                    A.NONE,       None, latency_doctor,
        "Describes the recorded latency spikes in words.", group="server", since="2.8.13",
        tips=_LATENCY_TIPS),
    cmd("latency|histogram",   -2,  _ADM,                    A.NONE,       None, latency_histogram,
        "Returns per-command latency histograms.", group="server", since="7.0.0",
        complexity="O(N) where N is the number of commands with latency information being retrieved.",
        syntax="[command [command ...]]", tips=_LATENCY_TIPS),
    cmd("latency|help",         2,  LOADING | STALE,         A.NONE,       None, latency_help,
        "Explains the LATENCY subcommands.", group="server", since="2.8.13"),
)
