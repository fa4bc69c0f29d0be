"""INFO [section ...]: Redis's sections and field names.

Mirrors Redis 8.6's ``genRedisInfoString`` (server.c): the sections server, clients, memory,
persistence, threads, stats, replication, cpu, hotkeys, modules, commandstats, errorstats,
latencystats, cluster, keyspace, keysizes and debug, always printed in that order whatever
order they were asked in; ``default``, ``all`` and ``everything`` as Redis defines them (debug
is in none of them: it is printed only when named)
(``module_list`` is another name for modules); unknown names are ignored. Field names and
order are Redis 8.6's. Values Sluice has no counterpart for (allocator details, replication
buffers, defragmentation, I/O threads, cluster slot migration) are reported as 0, as Redis
reports them with the feature off.

hotkeys: empty before the first ``HOTKEYS START``; then ``hotkeys-tracking-active`` and
``hotkeys-cmd-cpu-time`` (the ms spent updating the session's top-Ks), until RESET.

keysizes: the per-database histograms of string lengths and collection sizes, kept by the
keyspace at every write (``storage/keyspace.py``), as Redis keeps them; with
``key-memory-histograms yes``, the histograms of the keys' memory too (built by walking the
keyspace's size array when asked, since the option is for diagnosis).

What Sluice does not have yet, and so prints empty or as 0:

- modules: no modules (Redis 8 lists its built-in vectorset module here).

The ``eventloop_*`` stats count the loop's wakeups that serve clients or run the cron
(``server/instantaneous.py``); debug adds the longest cycle, the most commands one cycle ran,
and the time the AOF's writes and the cron took.

This module knows the sections (names, titles, order, ``default`` / ``all``) and prints them;
the fields come from the server (``ctx.server.info_section(name)``, built in
``server/info.py``), which owns what they report.
"""

from __future__ import annotations

from sluice.protocol import Verbatim

from .args import Args
from .context import Command, Context, Reply, ServerFacade
from .spec import LOADING, STALE, A, cmd

# Every section, in the order INFO prints them, with its title.
SECTIONS: dict[str, str] = {
    "server": "Server",
    "clients": "Clients",
    "memory": "Memory",
    "persistence": "Persistence",
    "threads": "Threads",
    "stats": "Stats",
    "replication": "Replication",
    "cpu": "CPU",
    "hotkeys": "Hotkeys",
    "modules": "Modules",
    "commandstats": "Commandstats",
    "errorstats": "Errorstats",
    "latencystats": "Latencystats",
    "cluster": "Cluster",
    "keyspace": "Keyspace",
    "keysizes": "Keysizes",
    "debug": "Debug",
}

DEFAULT = frozenset(("server", "clients", "memory", "persistence", "threads", "stats",
                     "replication", "cpu", "hotkeys", "modules", "errorstats", "cluster",
                     "keyspace", "keysizes"))
ALL = frozenset(SECTIONS) - {"debug"}  # debug: only when named, as in Redis
ALIASES = {"module_list": "modules"}  # the name Redis's default list uses


def wanted_sections(names: list[bytes]) -> set[str]:
    wanted: set[str] = set()
    for raw in names or [b"default"]:
        name = raw.decode(errors="replace").lower()
        if name in ("all", "everything"):
            wanted |= ALL
        elif name == "default":
            wanted |= DEFAULT
        elif name in SECTIONS:
            wanted.add(name)
        elif name in ALIASES:
            wanted.add(ALIASES[name])
    return wanted


def info_text(server: ServerFacade[Context], sections: list[bytes]) -> str:
    wanted = wanted_sections(sections)
    parts = []
    for name, title in SECTIONS.items():
        if name not in wanted:
            continue
        lines = [f"# {title}"]
        lines.extend(f"{k}:{v}" for k, v in server.info_section(name).items())
        parts.append("\r\n".join(lines))
    return "\r\n\r\n".join(parts) + "\r\n" if parts else ""


def info(ctx: Context, args: Args) -> Reply:
    return Verbatim(info_text(ctx.server, args.rest()).encode())


COMMANDS: tuple[Command, ...] = (
    #   name   arity  flags            acl          keys  handler
    cmd("info",  -1,  LOADING | STALE, A.DANGEROUS, None, info,
        "Reports facts and statistics about the server, by section.", group="server",
        complexity="O(1)", syntax="[section [section ...]]", tips=("nondeterministic_output",
        "request_policy:all_shards", "response_policy:special")),
)
