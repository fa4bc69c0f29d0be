"""MEMORY USAGE, STATS, DOCTOR, MALLOC-STATS, PURGE and HELP (Redis's ``memoryCommand``,
``objectComputeSize`` and ``getMemoryOverheadData`` in ``object.c``).

The numbers are Sluice's accounting (``storage/memsize.py``, ``server/memory.py``): what the
server holds beyond the Python interpreter, estimated from CPython's object sizes and kept
at every write. MEMORY USAGE of a key is its share of the keyspace (its entries in the slot
tables, the key and the value, and its TTL) as ``used_memory`` counts it; with ``SAMPLES n``
other than the default 5 a collection is measured again on ``n`` elements (0: all of them),
as Redis samples. MEMORY STATS has Redis's fields, in its order; the allocator fields speak
of pymalloc, which keeps no statistics of its own, so they repeat the estimate and RSS.
MEMORY DOCTOR runs Redis's checks (peak, fragmentation, client buffers) over these numbers
and words its report in Sluice's terms; MALLOC-STATS describes pymalloc and the collector;
PURGE runs the cyclic collector and hands free heap pages back to the system
(``malloc_trim``, where the C library has it).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import sys
from typing import Any

from sluice.protocol import OK, Double, Map, SimpleString, Verbatim
from sluice.storage.memsize import EXPIRE_OVERHEAD, KEY_OVERHEAD, LIST_SLOT, bytes_size
from sluice.storage.valuesize import sampled_size

from .args import Args
from .context import Command, Context, Reply
from .errors import SYNTAX, CommandError
from .spec import LOADING, READONLY, RO, STALE, A, cmd, key_at

_HELP = [SimpleString(line) for line in (
    b"MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    b"DOCTOR",
    b"    Return memory problems reports.",
    b"MALLOC-STATS",
    b"    Return internal statistics report from the memory allocator.",
    b"PURGE",
    b"    Attempt to purge dirty pages for reclamation by the allocator.",
    b"STATS",
    b"    Return information about the memory usage of the server.",
    b"USAGE <key> [SAMPLES <count>]",
    b"    Return memory in bytes used by <key> and its value. Nested values are",
    b"    sampled up to <count> times (default: 5, 0 means sample all).",
    b"HELP",
    b"    Print this help.",
)]
DEFAULT_SAMPLES = 5  # OBJ_COMPUTE_SIZE_DEF_SAMPLES


def memory_usage(ctx: Context, args: Args) -> Reply:
    key = args.next_key()
    samples = DEFAULT_SAMPLES
    while args:
        if args.next_upper() == b"SAMPLES" and args:
            samples = args.next_int()
            if samples < 0:
                raise CommandError(SYNTAX)
        else:
            raise CommandError(SYNTAX)
    db = ctx.db
    value = db.find(key)  # Redis's dbFind: no touch, no keyspace hit or miss
    if value is None:
        return None
    if samples == DEFAULT_SAMPLES or type(value) is bytes:
        return db.key_size(key)  # what used_memory counts for it
    ttl = EXPIRE_OVERHEAD if db.get_expire(key) is not None else 0
    return KEY_OVERHEAD + bytes_size(len(key)) + sampled_size(value, samples) + ttl


def _rss() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * 4096
    except OSError:
        return 0


def _overhead_data(ctx: Context) -> dict[str, Any]:
    """``getMemoryOverheadData``, in Sluice's terms."""
    server = ctx.server
    memory = server.memory
    used = memory.refresh()
    peak = max(memory.peak, used)
    startup = memory.startup
    keyspace = server.keyspace
    keys = sum(len(db) for db in keyspace.dbs)
    overhead = memory.overhead()
    dataset = max(0, used - overhead)
    net = used - startup
    rss = _rss()
    return {"peak": peak, "used": used, "startup": startup, "keys": keys,
            "overhead": overhead, "dataset": dataset,
            "dataset_perc": 100.0 * dataset / net if net > 0 else 0.0,
            "peak_perc": 100.0 * used / peak if peak else 100.0, "rss": rss,
            "frag": rss / used if used else 0.0, "frag_bytes": rss - used}


def memory_stats(ctx: Context) -> Reply:
    m = _overhead_data(ctx)
    memory = ctx.server.memory
    stats: dict[bytes, Reply] = {
        b"peak.allocated": m["peak"],
        b"total.allocated": m["used"],
        b"startup.allocated": m["startup"],
        b"replication.backlog": 0,
        b"replica.fullsync.buffer": 0,
        b"clients.slaves": 0,
        b"clients.normal": memory.clients_mem,
        b"cluster.links": 0,
        b"aof.buffer": memory.aof_mem,
        b"lua.caches": 0,
        b"functions.caches": 0,
        b"script.VMs": 0,
    }
    for db in ctx.server.keyspace.dbs:
        if len(db):
            stats[b"db.%d" % db.id] = Map({
                b"overhead.hashtable.main": len(db) * KEY_OVERHEAD,
                b"overhead.hashtable.expires": len(db.expires) * EXPIRE_OVERHEAD,
            })
    keys = m["keys"]
    stats.update({
        b"overhead.db.hashtable.lut": sum(len(db.keys_at) * LIST_SLOT
                                          for db in ctx.server.keyspace.dbs),
        b"overhead.db.hashtable.rehashing": 0,  # Python's dicts resize at once
        b"overhead.total": m["overhead"],
        b"db.dict.rehashing.count": 0,
        b"keys.count": keys,
        b"keys.bytes-per-key": m["dataset"] // keys if keys else 0,
        b"dataset.bytes": m["dataset"],
        b"dataset.percentage": Double(m["dataset_perc"]),
        b"peak.percentage": Double(m["peak_perc"]),
        b"allocator.allocated": m["used"],
        b"allocator.active": m["used"],
        b"allocator.resident": m["rss"],
        b"allocator.muzzy": 0,
        b"allocator-fragmentation.ratio": Double(1.0),
        b"allocator-fragmentation.bytes": 0,
        b"allocator-rss.ratio": Double(m["frag"]),
        b"allocator-rss.bytes": m["frag_bytes"],
        b"rss-overhead.ratio": Double(1.0),
        b"rss-overhead.bytes": 0,
        b"fragmentation": Double(m["frag"]),
        b"fragmentation.bytes": m["frag_bytes"],
    })
    return Map(stats)


def memory_doctor(ctx: Context) -> Reply:
    m = _overhead_data(ctx)
    clients = len(ctx.server.clients) or 1
    if m["used"] < 5 * 1024 * 1024:
        text = ("Sluice holds less than 5 MB besides the interpreter: too little for the memory "
                "checks to say anything. Run them again once it holds some data.\n")
        return Verbatim(text.encode())
    issues = []
    if m["peak"] / m["used"] > 1.5:
        issues.append("Peak: the server once held more than 150% of what it holds now. "
                      "Python keeps freed memory for reuse, so RSS stays near the peak until "
                      "new data fills it; MEMORY PURGE hands free heap pages back.")
    if m["frag"] > 1.4 and m["frag_bytes"] > 10 << 20:
        issues.append("RSS: the process is more than 1.4 times what the server counts (the "
                      "interpreter itself, a past peak, or allocator fragmentation). "
                      "used_memory leaves out the interpreter's own 30-40 MB.")
    if ctx.server.memory.clients_mem / clients > 200 * 1024:
        issues.append("Client buffers: over 200 KB per connection on average (slow Pub/Sub "
                      "readers, big replies, deep pipelines); CLIENT LIST shows which.")
    if not issues:
        text = "Sluice's memory doctor found no issue in what it accounts for.\n"
    else:
        text = "Sluice's memory doctor found:\n\n" + "".join(f" * {i}\n\n" for i in issues)
    return Verbatim(text.encode())


def memory_malloc_stats(ctx: Context) -> Reply:
    counts = gc.get_count()
    lines = [
        "___ Sluice (CPython) allocator statistics ___",
        f"Python: {sys.version.split()[0]}, allocator: pymalloc",
        f"allocated blocks: {sys.getallocatedblocks()}",
        f"gc generation counts: {counts[0]} {counts[1]} {counts[2]}",
        f"gc collections: {' '.join(str(g['collections']) for g in gc.get_stats())}",
        f"rss: {_rss()}",
        "--- End Sluice allocator statistics ---",
    ]
    return Verbatim(("\n".join(lines) + "\n").encode())


_libc: Any = None


def memory_purge(ctx: Context) -> Reply:
    """Collect cycles, then return free heap pages to the system where glibc can."""
    global _libc
    gc.collect()
    if _libc is None:
        name = ctypes.util.find_library("c")
        try:
            _libc = ctypes.CDLL(name) if name else False
        except OSError:
            _libc = False
    trim = getattr(_libc, "malloc_trim", None) if _libc else None
    if trim is not None:
        trim(0)
    return OK


def memory_stats_(ctx: Context, args: Args) -> Reply:
    return memory_stats(ctx)


def memory_doctor_(ctx: Context, args: Args) -> Reply:
    return memory_doctor(ctx)


def memory_malloc_stats_(ctx: Context, args: Args) -> Reply:
    return memory_malloc_stats(ctx)


def memory_purge_(ctx: Context, args: Args) -> Reply:
    return memory_purge(ctx)


def memory_help(ctx: Context, args: Args) -> Reply:
    return _HELP


_NONDET = ("nondeterministic_output",)
_ALL_SHARDS = ("nondeterministic_output", "request_policy:all_shards",
               "response_policy:special")

COMMANDS: tuple[Command, ...] = (
    #   name                   arity  flags             acl     keys            handler
    cmd("memory",                 -2, 0,                A.NONE, None,           None,
        "A container for memory diagnostics commands.", since="4.0.0", group="server",
        complexity="Depends on subcommand.", syntax="<subcommand> [<arg> ...]"),
    cmd("memory|usage",           -3, READONLY,         A.NONE, key_at(2, RO),  memory_usage,
        "Estimates the memory usage of a key.", since="4.0.0", group="server",
        complexity="O(N) where N is the number of samples.", syntax="key [SAMPLES count]"),
    cmd("memory|stats",            2, 0,                A.NONE, None,           memory_stats_,
        "Returns details about memory usage.", since="4.0.0", group="server",
        tips=_ALL_SHARDS),
    cmd("memory|doctor",           2, 0,                A.NONE, None,           memory_doctor_,
        "Outputs a memory problems report.", since="4.0.0", group="server",
        tips=_ALL_SHARDS),
    cmd("memory|malloc-stats",     2, 0,                A.NONE, None,           memory_malloc_stats_,
        "Returns the allocator statistics.", since="4.0.0", group="server",
        complexity="Depends on how much memory is allocated, could be slow", tips=_ALL_SHARDS),
    cmd("memory|purge",            2, 0,                A.NONE, None,           memory_purge_,
        "Asks the allocator to release memory.", since="4.0.0", group="server",
        complexity="Depends on how much memory is allocated, could be slow",
        tips=("request_policy:all_shards", "response_policy:all_succeeded")),
    cmd("memory|help",             2, LOADING | STALE,  A.NONE, None,           memory_help,
        "Returns helpful text about the different subcommands.", since="4.0.0",
        group="server"),
)
