"""INFO [section ...]: Redis's sections and field names.

Mirrors Redis's ``genRedisInfoString`` (server.c). Sections: server, clients, memory,
persistence, stats, replication, cpu, commandstats, errorstats, keyspace; ``all``,
``everything`` and ``default`` as Redis defines them.
"""

from __future__ import annotations

import resource
from collections.abc import Callable
from typing import Any

from sluice.protocol import Verbatim

from .args import Args
from .spec import LOADING, STALE, A, cmd


def _server(s: Any) -> dict[str, Any]:
    return s.info_server_fields()  # type: ignore[no-any-return]


def _clients(s: Any) -> dict[str, Any]:
    return {
        "connected_clients": len(s.clients),
        "cluster_connections": 0,
        "maxclients": s.config.maxclients,
        "client_recent_max_input_buffer": 0,
        "client_recent_max_output_buffer": 0,
        "blocked_clients": s.blocking.blocked_count,
        "tracking_clients": 0,
        "clients_in_timeout_table": sum(1 for c in s.clients.values() if c.bstate is not None
                                        and c.bstate.deadline_ms),
    }


def _memory(s: Any) -> dict[str, Any]:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    try:
        with open("/proc/self/statm") as f:
            rss = int(f.read().split()[1]) * resource.getpagesize()
    except OSError:
        pass
    return {
        "used_memory": rss,
        "used_memory_human": _human(rss),
        "used_memory_rss": rss,
        "used_memory_rss_human": _human(rss),
        "used_memory_peak": rss,
        "maxmemory": 0,
        "maxmemory_human": "0B",
        "maxmemory_policy": "noeviction",
        "mem_allocator": "pymalloc",
    }


def _persistence(s: Any) -> dict[str, Any]:
    p = getattr(s, "persistence", None)
    if p is not None:
        return p.info_fields()  # type: ignore[no-any-return]
    if s.aof is not None and hasattr(s.aof, "info_fields"):
        return s.aof.info_fields()  # type: ignore[no-any-return]
    return {
        "loading": 0,
        "async_loading": 0,
        "rdb_changes_since_last_save": s.dirty,
        "rdb_bgsave_in_progress": 0,
        "rdb_last_save_time": s.lastsave,
        "aof_enabled": 0,
        "aof_rewrite_in_progress": 0,
    }


def _stats(s: Any) -> dict[str, Any]:
    st = s.stats
    return {
        "total_connections_received": st["total_connections_received"],
        "total_commands_processed": s.commands_processed,
        "instantaneous_ops_per_sec": 0,
        "total_net_input_bytes": st["total_net_input_bytes"],
        "total_net_output_bytes": st["total_net_output_bytes"],
        "rejected_connections": st["rejected_connections"],
        "expired_keys": st["expired_keys"],
        "evicted_keys": 0,
        "keyspace_hits": st["keyspace_hits"],
        "keyspace_misses": st["keyspace_misses"],
        "pubsub_channels": 0,
        "pubsub_patterns": 0,
        "total_error_replies": st["total_error_replies"],
        "total_blocking_keys": len(s.blocking.blocking_keys),
        "acl_access_denied_auth": st["acl_access_denied_auth"],
        "acl_access_denied_cmd": st["acl_access_denied_cmd"],
        "acl_access_denied_key": st["acl_access_denied_key"],
        "acl_access_denied_channel": st["acl_access_denied_channel"],
    }


def _replication(s: Any) -> dict[str, Any]:
    return {
        "role": "master",
        "connected_slaves": 0,
        "master_failover_state": "no-failover",
        "master_replid": s.run_id,
        "master_replid2": "0" * 40,
        "master_repl_offset": 0,
        "second_repl_offset": -1,
        "repl_backlog_active": 0,
        "repl_backlog_size": 1048576,
        "repl_backlog_first_byte_offset": 0,
        "repl_backlog_histlen": 0,
    }


def _cpu(s: Any) -> dict[str, Any]:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "used_cpu_sys": f"{ru.ru_stime:.6f}",
        "used_cpu_user": f"{ru.ru_utime:.6f}",
        "used_cpu_sys_children": "0.000000",
        "used_cpu_user_children": "0.000000",
    }


def _commandstats(s: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}

    def add(c: Any) -> None:
        if c.calls or c.rejected_calls or c.failed_calls:
            per = c.usec / c.calls if c.calls else 0.0
            out[f"cmdstat_{c.name}"] = (
                f"calls={c.calls},usec={c.usec},usec_per_call={per:.2f},"
                f"rejected_calls={c.rejected_calls},failed_calls={c.failed_calls}"
            )

    for c in s.table.values():
        add(c)
        for sub in c.subcommands.values():
            add(sub)
    return out


def _errorstats(s: Any) -> dict[str, Any]:
    return {f"errorstat_{code}": f"count={n}" for code, n in sorted(s.error_stats.items())}


def _keyspace(s: Any) -> dict[str, Any]:
    out = {}
    for db in s.keyspace.dbs:
        if len(db):
            out[f"db{db.id}"] = f"keys={len(db)},expires={len(db.expires)},avg_ttl=0"
    return out


SECTIONS: dict[str, Callable[[Any], dict[str, Any]]] = {
    "server": _server,
    "clients": _clients,
    "memory": _memory,
    "persistence": _persistence,
    "stats": _stats,
    "replication": _replication,
    "cpu": _cpu,
    "commandstats": _commandstats,
    "errorstats": _errorstats,
    "keyspace": _keyspace,
}
DEFAULT = ("server", "clients", "memory", "persistence", "stats", "replication", "cpu",
           "keyspace", "errorstats")


def _human(n: int) -> str:
    for unit in ("B", "K", "M", "G"):
        if n < 1024:
            return f"{n:.2f}{unit}" if unit != "B" else f"{n}B"
        n /= 1024  # type: ignore[assignment]
    return f"{n:.2f}T"


def info_text(server: Any, sections: list[bytes]) -> str:
    wanted: list[str] = []
    for raw in sections or [b"default"]:
        name = raw.decode(errors="replace").lower()
        if name in ("all", "everything"):
            wanted.extend(SECTIONS)
        elif name == "default":
            wanted.extend(DEFAULT)
        elif name in SECTIONS:
            wanted.append(name)
    parts = []
    for name in dict.fromkeys(wanted):
        fields = SECTIONS[name](server)
        lines = [f"# {name.capitalize() if name not in ('cpu',) else 'CPU'}"]
        lines.extend(f"{k}:{v}" for k, v in fields.items())
        parts.append("\r\n".join(lines))
    return "\r\n\r\n".join(parts) + "\r\n" if parts else ""


def info(ctx: Any, args: Args) -> Any:
    return Verbatim(info_text(ctx.server, args.rest()).encode())


COMMANDS = (
    #   name   arity  flags            acl         keys  handler
    cmd("info",  -1,  LOADING | STALE, A.DANGEROUS, None, info,
        "Returns information and statistics about the server.", group="server",
        complexity="O(1)", syntax="[section [section ...]]", tips=("nondeterministic_output",
        "request_policy:all_shards", "response_policy:special")),
)
