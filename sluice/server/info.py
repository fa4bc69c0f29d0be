"""INFO's fields, section by section, from the server's state (Redis 8.6's
``genRedisInfoString``), and CONFIG RESETSTAT.

``commands/info.py`` knows the sections' names, titles and order and prints them; it asks
``Server.info_section(name)``, which answers from ``FIELDS`` here (a section without an entry
is printed empty). See that module's docstring for what Sluice reports as 0 or leaves out.
"""

from __future__ import annotations

import os
import resource
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sluice import REDIS_VERSION, __version__
from sluice.commands.cmdlatency import DISCARD, has_samples, new_histogram, percentiles_line
from sluice.storage.hashes import count_subexpiry
from sluice.storage.keyspace import NO_KIND
from sluice.storage.memsize import KIND_HASH, KIND_LIST, KIND_SET, KIND_STRING, KIND_ZSET

from .instantaneous import EL_CYCLE, EL_DURATION, NET_INPUT, NET_OUTPUT, OPS
from .memory import STARTUP

if TYPE_CHECKING:
    from sluice.commands.context import Command

    from .app import Server


def _server(s: Server) -> dict[str, Any]:
    uptime = int(time.time() - s.start_time)
    return {
        "redis_version": REDIS_VERSION,
        "sluice_version": __version__,
        "redis_git_sha1": "00000000",
        "redis_git_dirty": 0,
        "redis_build_id": "0",
        "redis_mode": "standalone",
        "os": " ".join(os.uname()[i] for i in (0, 2, 4)),
        "arch_bits": 64,
        "monotonic_clock": "POSIX clock_gettime",
        "multiplexing_api": "asyncio",
        "atomicvar_api": "python",
        "gcc_version": "0.0.0",
        "process_id": os.getpid(),
        "process_supervised": "no",
        "run_id": s.run_id,
        "tcp_port": s.port,
        "server_time_usec": time.time_ns() // 1000,
        "uptime_in_seconds": uptime,
        "uptime_in_days": uptime // 86400,
        "hz": s.config.hz,
        "configured_hz": s.config.hz,
        "lru_clock": int(time.time()) & 0xFFFFFF,
        "executable": os.path.abspath(sys.argv[0]) if sys.argv else "",
        "config_file": s.config.config_file or "",
        "io_threads_active": 0,
        **{f"listener{n}": text for n, text in sorted(s.listener_info.items())},
    }


def _clients(s: Server) -> dict[str, Any]:
    clients = list(s.clients.values())
    held = len(s.pause.held) if hasattr(s, "pause") else 0
    return {
        "connected_clients": len(clients),
        "cluster_connections": 0,
        "maxclients": s.config.maxclients,
        "client_recent_max_input_buffer": max((c.reader.buffer_size() for c in clients), default=0),
        "client_recent_max_output_buffer": max((len(c.out) for c in clients), default=0),
        # Clients held by CLIENT PAUSE count as blocked, as Redis counts its postponed ones.
        "blocked_clients": s.blocking.blocked_count + held,
        "tracking_clients": s.tracking.count,
        "pubsub_clients": sum(1 for c in clients if c.kind == "pubsub"),
        "watching_clients": sum(1 for c in clients if c.watched),
        "clients_in_timeout_table": sum(1 for c in clients if c.bstate is not None
                                        and c.bstate.deadline_ms),
        "total_watched_keys": len(s.watched_keys),
        "total_blocking_keys": len(s.blocking.blocking_keys),
        "total_blocking_keys_on_nokey": sum(
            1 for queue in s.blocking.blocking_keys.values()
            if any(c.bstate is not None and c.bstate.unblock_on_nokey for c in queue)),
    }


def _rss() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * resource.getpagesize()
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024




def _total_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return 0


def _memory(s: Server) -> dict[str, Any]:
    # used_memory is Sluice's estimate of what it holds beyond the interpreter (memory.py:
    # the dataset kept at each write, the buffers measured now); RSS is the process's.
    memory = s.memory
    used = memory.refresh()
    rss = _rss()
    peak = memory.peak
    overhead = memory.overhead()
    startup = STARTUP
    dataset = max(0, used - overhead)
    net = used - startup
    total = _total_memory()
    maxmemory = s.config.maxmemory
    sc = s.scripting
    vm_eval, vm_functions = sc.vm_memory()
    scripts_eval = sc.scripts.memory
    functions_mem = sc.functions_memory()
    frag = rss / used if used else 0.0
    return {
        "used_memory": used,
        "used_memory_human": _human(used),
        "used_memory_rss": rss,
        "used_memory_rss_human": _human(rss),
        "used_memory_peak": peak,
        "used_memory_peak_human": _human(peak),
        "used_memory_peak_time": memory.peak_time,
        "used_memory_peak_perc": f"{100 * used / peak if peak else 100:.2f}%",
        "used_memory_overhead": overhead,
        "used_memory_startup": startup,
        "used_memory_dataset": dataset,
        "used_memory_dataset_perc": f"{100 * dataset / net if net > 0 else 100:.2f}%",
        "allocator_allocated": used,
        "allocator_active": used,
        "allocator_resident": rss,
        "allocator_muzzy": 0,
        "total_system_memory": total,
        "total_system_memory_human": _human(total),
        "used_memory_lua": vm_eval,
        "used_memory_vm_eval": vm_eval,
        "used_memory_lua_human": _human(vm_eval),
        "used_memory_scripts_eval": scripts_eval,
        "number_of_cached_scripts": len(sc.scripts.cache),
        "number_of_functions": len(sc.functions.functions),
        "number_of_libraries": len(sc.functions.libraries),
        "used_memory_vm_functions": vm_functions,
        "used_memory_vm_total": vm_eval + vm_functions,
        "used_memory_vm_total_human": _human(vm_eval + vm_functions),
        "used_memory_functions": functions_mem,
        "used_memory_scripts": scripts_eval + functions_mem,
        "used_memory_scripts_human": _human(scripts_eval + functions_mem),
        "maxmemory": maxmemory,
        "maxmemory_human": _human(maxmemory),
        "maxmemory_policy": s.config.maxmemory_policy,
        "allocator_frag_ratio": "1.00",
        "allocator_frag_bytes": 0,
        "allocator_rss_ratio": f"{frag:.2f}",
        "allocator_rss_bytes": rss - used,
        "rss_overhead_ratio": "1.00",
        "rss_overhead_bytes": 0,
        "mem_fragmentation_ratio": f"{frag:.2f}",
        "mem_fragmentation_bytes": rss - used,
        "mem_not_counted_for_evict": memory.aof_mem,
        "mem_replication_backlog": 0,
        "mem_total_replication_buffers": 0,
        "mem_replica_full_sync_buffer": 0,
        "mem_clients_slaves": 0,
        "mem_clients_normal": memory.clients_mem,
        "mem_cluster_slot_migration_output_buffer": 0,
        "mem_cluster_slot_migration_input_buffer": 0,
        "mem_cluster_slot_migration_input_buffer_peak": 0,
        "mem_cluster_links": 0,
        "mem_aof_buffer": memory.aof_mem,
        "mem_allocator": "pymalloc",
        "mem_overhead_db_hashtable_rehashing": 0,  # Python's dicts resize all at once
        "active_defrag_running": 0,
        "lazyfree_pending_objects": 0,
        "lazyfreed_objects": s.stats["lazyfreed_objects"],  # what Redis frees in background
    }


def _persistence(s: Server) -> dict[str, Any]:
    p = s.persistence
    if p is not None:
        return p.info_fields()
    if s.aof is not None and hasattr(s.aof, "info_fields"):  # tests' stand-ins have none
        return s.aof.info_fields()
    return {
        "loading": 0,
        "async_loading": 0,
        "rdb_changes_since_last_save": s.dirty,
        "rdb_bgsave_in_progress": 0,
        "rdb_last_save_time": s.lastsave,
        "aof_enabled": 0,
        "aof_rewrite_in_progress": 0,
    }


def _threads(s: Server) -> dict[str, Any]:
    # One thread serves every client: the event loop's, Redis's main thread (io_thread_0).
    st = s.stats
    return {"io_thread_0": f"clients={len(s.clients)},reads={st['total_reads_processed']},"
                           f"writes={st['total_writes_processed']}"}


def _command_usec(s: Server) -> int:
    """Microseconds spent running commands (eventloop_duration_cmd_sum): the commands'
    stats less what scripts' own calls to commands added to them."""
    total = 0
    for c in s.table.values():
        total += c.usec + sum(sub.usec for sub in c.subcommands.values())
    return total - s.script_support.command_usec


def _stats(s: Server) -> dict[str, Any]:
    st = s.stats
    el = s.el_stats
    return {
        "total_connections_received": st["total_connections_received"],
        "total_commands_processed": s.total_commands_processed(),
        "instantaneous_ops_per_sec": el.rate(OPS),
        "total_net_input_bytes": st["total_net_input_bytes"],
        "total_net_output_bytes": st["total_net_output_bytes"],
        "total_net_repl_input_bytes": 0,
        "total_net_repl_output_bytes": 0,
        "instantaneous_input_kbps": f"{el.rate(NET_INPUT) / 1024:.2f}",
        "instantaneous_output_kbps": f"{el.rate(NET_OUTPUT) / 1024:.2f}",
        "instantaneous_input_repl_kbps": "0.00",
        "instantaneous_output_repl_kbps": "0.00",
        "rejected_connections": st["rejected_connections"],
        "sync_full": 0,
        "sync_partial_ok": 0,
        "sync_partial_err": 0,
        "expired_subkeys": st["expired_subkeys"],  # hash fields (storage/hashes.py)
        "expired_subkeys_active": st["expired_subkeys_active"],
        "expired_keys": st["expired_keys"],
        "expired_keys_active": st["expired_keys_active"],
        "expired_stale_perc": "0.00",
        "expired_time_cap_reached_count": 0,
        "expire_cycle_cpu_milliseconds": 0,
        "evicted_keys": st["evicted_keys"],
        "evicted_clients": st["evicted_clients"],
        "evicted_scripts": s.scripting.evicted_scripts,
        "total_eviction_exceeded_time": int(s.memory.exceeded_total * 1000),
        "current_eviction_exceeded_time": s.memory.current_exceeded_ms(),
        "keyspace_hits": s.keyspace.access.hits,
        "keyspace_misses": s.keyspace.access.misses,
        "pubsub_channels": len(s.pubsub.channels),
        "pubsub_patterns": len(s.pubsub.patterns),
        "pubsubshard_channels": len(s.pubsub.shard_channels),
        "latest_fork_usec": st["latest_fork_usec"],
        "total_forks": st["total_forks"],
        "migrate_cached_sockets": len(s.migrate_sockets),
        "slave_expires_tracked_keys": 0,
        "active_defrag_hits": 0,
        "active_defrag_misses": 0,
        "active_defrag_key_hits": 0,
        "active_defrag_key_misses": 0,
        "total_active_defrag_time": 0,
        "current_active_defrag_time": 0,
        **s.tracking.info_fields(),
        "unexpected_error_replies": 0,
        "total_error_replies": st["total_error_replies"],
        "dump_payload_sanitizations": 0,
        "total_reads_processed": st["total_reads_processed"],
        "total_writes_processed": st["total_writes_processed"],
        "io_threaded_reads_processed": 0,
        "io_threaded_writes_processed": 0,
        "io_threaded_total_prefetch_batches": 0,
        "io_threaded_total_prefetch_entries": 0,
        "client_query_buffer_limit_disconnections": st["client_query_buffer_limit_disconnections"],
        "client_output_buffer_limit_disconnections": st["client_output_buffer_limit_disconnections"],
        "reply_buffer_shrinks": 0,
        "reply_buffer_expands": 0,
        "eventloop_cycles": el.cycles,
        "eventloop_duration_sum": el.duration_us,
        "eventloop_duration_cmd_sum": _command_usec(s),
        "instantaneous_eventloop_cycles_per_sec": el.rate(EL_CYCLE),
        "instantaneous_eventloop_duration_usec": el.rate(EL_DURATION),
        "acl_access_denied_auth": st["acl_access_denied_auth"],
        "acl_access_denied_cmd": st["acl_access_denied_cmd"],
        "acl_access_denied_key": st["acl_access_denied_key"],
        "acl_access_denied_channel": st["acl_access_denied_channel"],
        "acl_access_denied_tls_cert": 0,  # no user is ever authenticated by its certificate
    }


def _replication(s: Server) -> dict[str, Any]:
    """A master with no replica (Redis's replication section then): the offset counts the
    commands the AOF logged (Redis advances it by one per propagated command when there is
    no backlog, for WAITAOF), and no backlog exists (none is made until a replica connects)."""
    config = s.config
    out: dict[str, Any] = {"role": "master", "connected_slaves": 0}
    if config.min_replicas_to_write and config.min_replicas_max_lag:
        out["min_slaves_good_slaves"] = 0  # a replica is never good: none connects
    out.update({
        "master_failover_state": "no-failover",
        "master_replid": s.run_id,
        "master_replid2": "0" * 40,
        "master_repl_offset": s.repl.master_repl_offset,
        "second_repl_offset": -1,
        "repl_backlog_active": 0,
        "repl_backlog_size": config.repl_backlog_size,
        "repl_backlog_first_byte_offset": 0,
        "repl_backlog_histlen": 0,
    })
    return out


def _cpu(s: Server) -> dict[str, Any]:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    thread = time.thread_time()  # the event loop's thread: Redis's main thread
    return {
        "used_cpu_sys": f"{ru.ru_stime:.6f}",
        "used_cpu_user": f"{ru.ru_utime:.6f}",
        "used_cpu_sys_children": f"{children.ru_stime:.6f}",
        "used_cpu_user_children": f"{children.ru_utime:.6f}",
        "used_cpu_sys_main_thread": f"{ru.ru_stime:.6f}",
        "used_cpu_user_main_thread": f"{thread:.6f}",
    }


def _hotkeys(s: Server) -> dict[str, Any]:
    return dict(s.hotkeys.info())  # empty until the first HOTKEYS START


def _commandstats(s: Server) -> dict[str, Any]:
    out: dict[str, Any] = {}

    def add(c: Command) -> None:
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


def _latencystats(s: Server) -> dict[str, Any]:
    """``latency_percentiles_usec_<command>`` for each command with calls recorded, the
    configured percentiles (cmdlatency.py); nothing while latency-tracking is off."""
    out: dict[str, Any] = {}
    if not s.config.latency_tracking:
        return out
    percentiles = s.config.latency_tracking_info_percentiles
    for c in s.table.values():
        for row in (c, *c.subcommands.values()):
            if has_samples(row):
                line = percentiles_line(row.name, row.hist, row.hist_slow, percentiles)
                name, _, value = line.partition(":")
                out[name] = value
    return out


def _errorstats(s: Server) -> dict[str, Any]:
    return {f"errorstat_{code}": f"count={n}" for code, n in sorted(s.error_stats.items())}


def _cluster(s: Server) -> dict[str, Any]:
    return {"cluster_enabled": 0}


def _keyspace(s: Server) -> dict[str, Any]:
    out = {}
    now = s.keyspace.clock.now_ms()
    for db in s.keyspace.dbs:
        if len(db):
            expires = db.expires
            ttls = [when - now for when in expires.values() if when > now] if expires else []
            avg_ttl = sum(ttls) // len(ttls) if ttls else 0
            out[f"db{db.id}"] = (f"keys={len(db)},expires={len(expires)},avg_ttl={avg_ttl},"
                                 f"subexpiry={count_subexpiry(db) if db.subexpires else 0}")
    return out




# INFO keysizes: the types it reports, by memsize kind (strings' memory histogram is left
# out, as Redis leaves it out to avoid confusion with their length histogram).
_KEYSIZES = ((KIND_STRING, "strings_sizes", None), (KIND_LIST, "lists_items", "lists_sizes"),
             (KIND_SET, "sets_items", "sets_sizes"), (KIND_ZSET, "zsets_items", "zsets_sizes"),
             (KIND_HASH, "hashes_items", "hashes_sizes"))


def _bin_label(i: int) -> str:
    """A keysizes bin's label: 0, 1, 2, 4 ... 512, 1K ... 512K, 1M ... (Redis's powers of 2)."""
    if i == 0:
        return "0"
    n = 1 << (i - 1)
    for unit in ("", "K", "M", "G", "T", "P", "E"):
        if n < 1024:
            return f"{n}{unit}"
        n >>= 10
    return f"{n}E"


def _histogram(counts: list[int]) -> str:
    return ",".join(f"{_bin_label(i)}={n}" for i, n in enumerate(counts) if n)


def _keysizes(s: Server) -> dict[str, Any]:
    out: dict[str, Any] = {}
    memory = s.config.key_memory_histograms
    s.keyspace.settle()
    for db in s.keyspace.dbs:
        if not len(db):
            continue
        for kind, items, _ in _KEYSIZES:
            counts = db.keysizes[kind]
            if any(counts):
                out[f"db{db.id}_distrib_{items}"] = _histogram(counts)
        if not memory:
            continue
        by_kind: dict[int, list[int]] = {}
        for size, kb in zip(db.sizes, db.kinds, strict=True):
            if kb != NO_KIND:
                hist = by_kind.setdefault(kb >> 8, [0] * 64)
                hist[size.bit_length()] += 1
        for kind, _, sizes in _KEYSIZES:
            if sizes is not None and kind in by_kind:
                out[f"db{db.id}_distrib_{sizes}"] = _histogram(by_kind[kind])
    return out


def _human(n: int | float) -> str:
    """Bytes as Redis's ``bytesToHuman``: 996.38K, 1.11M, 0B."""
    if n < 1024:
        return f"{int(n)}B"
    for unit in ("K", "M", "G", "T", "P"):
        n /= 1024
        if n < 1024 or unit == "P":
            return f"{n:.2f}{unit}"
    return f"{n:.2f}P"


def _debug(s: Server) -> dict[str, Any]:
    """INFO DEBUG, shown only when asked for by name. The allocator_*_lua fields are jemalloc's
    view of Redis's Lua arena; Sluice reports the Lua runtimes' memory as allocated and
    active, with nothing resident apart or fragmented."""
    el = s.el_stats
    lua = sum(s.scripting.vm_memory())
    return {
        "eventloop_duration_aof_sum": el.aof_us,
        "eventloop_duration_cron_sum": el.cron_us,
        "eventloop_duration_max": el.max_us,
        "eventloop_cmd_per_cycle_max": el.max_commands,
        "allocator_allocated_lua": lua,
        "allocator_active_lua": lua,
        "allocator_resident_lua": 0,
        "allocator_frag_bytes_lua": 0,
    }


FIELDS: dict[str, Callable[[Server], dict[str, Any]]] = {
    "server": _server,
    "clients": _clients,
    "memory": _memory,
    "persistence": _persistence,
    "threads": _threads,
    "stats": _stats,
    "replication": _replication,
    "cpu": _cpu,
    "hotkeys": _hotkeys,
    "commandstats": _commandstats,
    "errorstats": _errorstats,
    "latencystats": _latencystats,
    "cluster": _cluster,
    "keyspace": _keyspace,
    "keysizes": _keysizes,
    "debug": _debug,
}
"""Each section's fields; modules has none."""


def info_section(server: Server, name: str) -> dict[str, Any]:
    """The fields of one INFO section, in Redis's order ({} for an empty section)."""
    fields_of = FIELDS.get(name)
    return fields_of(server) if fields_of is not None else {}


def reset_stats(server: Server) -> None:
    """CONFIG RESETSTAT: INFO stats, command stats and error stats start from zero."""
    server.stats.clear()
    server.error_stats.clear()
    server.errors_enabled = True
    server.el_stats.reset()
    server.script_support.command_usec = 0
    server.scripting.evicted_scripts = 0
    access = server.keyspace.access
    access.hits = access.misses = 0
    server.memory.exceeded_total = 0.0
    server.memory.peak = server.memory.used()
    server.commands_base = -sum(c.commands_processed for c in server.clients.values())
    # The persistence section's counters Redis resets as well.
    if server.persistence is not None:
        server.persistence.reset_stats()
    if server.aof is not None:
        server.aof.reset_stats()
    for c in server.table.values():
        for row in (c, *c.subcommands.values()):
            row.calls = row.usec = row.rejected_calls = row.failed_calls = 0
            if row.hist is not DISCARD:
                row.hist, row.hist_slow = new_histogram(), {}
    server.paused_histograms.clear()
