"""The configuration table: every parameter Sluice knows, with its kind, default, bounds and
flags (Redis's ``standardConfig`` table in ``config.c``), and the parsers of the special ones.

``config.Config`` reads it: the config file, the command line, CONFIG GET / SET / REWRITE.
The parameters Redis 8.6 has and Sluice has no use for are listed too (``config_redis.py``),
so a redis.conf starts Sluice and CONFIG GET * shows what it shows on Redis.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sluice.commands.args import parse_memory
from sluice.commands.cmdlatency import format_percentile
from sluice.commands.errors import ConfigError
from sluice.commands.keyevents import INVALID_CLASS, format_classes, parse_classes
from sluice.storage.scores import string2d

from .acl_user import parse_user_directive

# HIDDEN: left out of CONFIG GET's patterns (answered only when named), as Redis's
# HIDDEN_CONFIG; Sluice's own settings are hidden too, so that a tool that walks
# ``CONFIG GET *`` (Redis's "CONFIG sanity" test sets each back to its value) sees only
# Redis's. SENSITIVE: a secret (Redis's SENSITIVE_CONFIG), shown by CONFIG GET all the same.
IMMUTABLE, PROTECTED, HIDDEN, SENSITIVE = 1, 2, 4, 16
# A directive that may repeat in the config file (``user``, ``rename-command``); each line adds
# to a list. Not a CONFIG GET/SET parameter, as in Redis.
MULTI = 8

def _parse_bool(value: bytes) -> bool:
    v = value.lower()
    if v == b"yes":
        return True
    if v == b"no":
        return False
    raise ConfigError("argument must be 'yes' or 'no'")


@dataclass(slots=True)
class Param:
    name: str
    kind: str  # bool | int | memory | enum | string | special
    default: Any
    lo: int = 0
    hi: int = 2**63 - 1
    choices: tuple[str, ...] = ()
    flags: int = 0
    parse: Callable[[list[bytes]], Any] | None = None  # special kinds
    render: Callable[[Any], bytes] | None = None
    aliases: tuple[str, ...] = ()

    @property
    def attr(self) -> str:
        return self.name.replace("-", "_")

    def convert(self, args: list[bytes]) -> Any:
        if self.parse is not None:
            return self.parse(args)
        if len(args) != 1:
            raise ConfigError("wrong number of arguments")
        raw = args[0]
        if self.kind == "bool":
            return _parse_bool(raw)
        if self.kind in ("int", "memory"):
            if self.kind == "memory":
                n = parse_memory(raw)
            else:
                try:
                    n = int(raw)
                except ValueError:
                    raise ConfigError("argument couldn't be parsed into an integer") from None
            if not self.lo <= n <= self.hi:
                raise ConfigError(f"argument must be between {self.lo} and {self.hi} inclusive")
            return n
        if self.kind == "enum":
            v = raw.decode(errors="replace").lower()
            if v not in self.choices:
                raise ConfigError(f"argument(s) must be one of the following: {', '.join(self.choices)}")
            return v
        return raw.decode(errors="surrogateescape")

    def to_bytes(self, value: Any) -> bytes:
        if self.render is not None:
            return self.render(value)
        if self.kind == "bool":
            return b"yes" if value else b"no"
        if isinstance(value, int):
            return str(value).encode()
        return str(value).encode(errors="surrogateescape")


def _parse_save(args: list[bytes]) -> list[tuple[int, int]]:
    joined = b" ".join(args).split()
    if joined in ([], [b""]):
        return []
    if len(joined) % 2:
        raise ConfigError("Invalid save parameters")
    out = []
    for i in range(0, len(joined), 2):
        try:
            out.append((int(joined[i]), int(joined[i + 1])))
        except ValueError:
            raise ConfigError("Invalid save parameters") from None
    return out


def _render_save(value: list[tuple[int, int]]) -> bytes:
    return " ".join(f"{s} {c}" for s, c in value).encode()


def _parse_list(args: list[bytes]) -> list[str]:
    return [w.decode() for a in args for w in a.split()]


def _render_list(value: list[str]) -> bytes:
    return " ".join(value).encode()


def _parse_percentiles(args: list[bytes]) -> list[float]:
    """latency-tracking-info-percentiles: doubles in [0, 100], or "" for none."""
    words = b" ".join(args).split()
    out = []
    for w in words:
        p = string2d(w)
        if p is None or p != p:
            raise ConfigError("Invalid latency-tracking-info-percentiles parameters")
        if not 0.0 <= p <= 100.0:
            raise ConfigError("latency-tracking-info-percentiles parameters should sit between "
                              "[0.0,100.0]")
        out.append(p)
    return out


def _render_percentiles(value: list[float]) -> bytes:
    return " ".join(format_percentile(p) for p in value).encode()


def _parse_obuf(args: list[bytes]) -> dict[str, tuple[int, int, int]]:
    words = b" ".join(args).split()
    if len(words) % 4:
        raise ConfigError("Wrong number of arguments in buffer limit configuration.")
    out = dict(DEFAULT_OBUF)
    for i in range(0, len(words), 4):
        cls = words[i].decode().lower()
        if cls == "slave":
            cls = "replica"
        if cls not in ("normal", "replica", "pubsub"):
            raise ConfigError("Invalid client class specified in buffer limit configuration.")
        try:
            hard, soft = parse_memory(words[i + 1]), parse_memory(words[i + 2])
            secs = int(words[i + 3])
        except (ConfigError, ValueError):
            raise ConfigError("Error in hard, soft or soft_seconds setting in buffer limit configuration.") from None
        out[cls] = (hard, soft, secs)
    return out


def _render_obuf(value: dict[str, tuple[int, int, int]]) -> bytes:
    return " ".join(
        f"{cls if cls != 'replica' else 'slave'} {h} {s} {t}" for cls, (h, s, t) in value.items()
    ).encode()


def _parse_rename(args: list[bytes]) -> list[list[bytes]]:
    if len(args) != 2:
        raise ConfigError("Bad directive or wrong number of arguments")
    return [list(args)]


def _render_words(value: list[list[bytes]]) -> bytes:
    return b"\n".join(b" ".join(words) for words in value)


def _parse_replicaof(args: list[bytes]) -> str:
    """Only "not a replica": Sluice has no replication, so a config naming a master is
    refused at start rather than ignored (CONFIG SET replicaof is immutable, as in Redis)."""
    if not b"".join(args).strip():
        return ""
    if len(args) == 1:  # 'replicaof "no one"': one argument holding both (as Redis takes it)
        args = args[0].split()
    if len(args) != 2:  # Redis's loader knows the directive with two arguments only
        raise ConfigError("Unknown option or number of arguments for replicaof")
    if [w.lower() for w in args] == [b"no", b"one"]:
        return ""
    port = args[1]
    if not port.isdigit() or int(port) > 65535:  # Redis checks it before anything else
        raise ConfigError("Invalid master port")
    raise ConfigError("Sluice has no replication: replicaof must be 'no one'")


def _parse_octal(args: list[bytes]) -> int:
    if len(args) != 1:
        raise ConfigError("wrong number of arguments")
    try:
        n = int(args[0], 8)
    except ValueError:
        raise ConfigError("argument couldn't be parsed into an integer") from None
    if not 0 <= n <= 0o777:
        raise ConfigError("argument must be between 0 and 777 inclusive")
    return n


# maxmemory-policy's values, in Redis's order (its error message lists them so).
MAXMEMORY_POLICIES = ("volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl",
                      "volatile-lrm", "allkeys-lru", "allkeys-lfu", "allkeys-random",
                      "allkeys-lrm", "noeviction")


def _parse_notify(args: list[bytes]) -> int:
    if len(args) != 1:
        raise ConfigError("wrong number of arguments")
    flags = parse_classes(args[0])
    if flags < 0:
        raise ConfigError(INVALID_CLASS)
    return flags


def _parse_maxmemory_clients(args: list[bytes]) -> int:
    """Bytes, or a percentage of maxmemory kept negative (Redis's PERCENT_CONFIG)."""
    if len(args) != 1:
        raise ConfigError("wrong number of arguments")
    raw = args[0].strip()
    if raw.endswith(b"%"):
        digits = raw[:-1]
        if not digits.isdigit():
            raise ConfigError("argument must be a memory or percent value")
        if int(digits) > 100:
            raise ConfigError("percentage argument must be less or equal to 100")
        return -int(digits)
    try:
        return parse_memory(raw)
    except ConfigError:
        raise ConfigError("argument must be a memory or percent value") from None


def _render_maxmemory_clients(value: int) -> bytes:
    return b"%d%%" % -value if value < 0 else b"%d" % value


DEFAULT_OBUF = {"normal": (0, 0, 0), "replica": (256 << 20, 64 << 20, 60), "pubsub": (32 << 20, 8 << 20, 60)}

PARAMS: list[Param] = [
    Param("port", "int", 6379, 0, 65535),
    Param("bind", "special", ["127.0.0.1", "-::1"], parse=_parse_list, render=_render_list),
    Param("protected-mode", "bool", True),
    Param("requirepass", "string", "", flags=SENSITIVE),
    Param("maxclients", "int", 10000, 1, 2**32 - 1),
    Param("timeout", "int", 0, 0, 2**31 - 1),
    Param("tcp-keepalive", "int", 300, 0, 2**31 - 1),
    Param("tcp-backlog", "int", 511, 0, 2**31 - 1, flags=IMMUTABLE),
    Param("databases", "int", 16, 1, 2**31 - 1, flags=IMMUTABLE),
    Param("loglevel", "enum", "notice", choices=("debug", "verbose", "notice", "warning", "nothing")),
    Param("logfile", "string", "", flags=IMMUTABLE),
    Param("pidfile", "string", ""),
    # Shown absolute, as Redis shows its working directory (it chdir()s into ``dir``).
    Param("dir", "string", ".", flags=PROTECTED,
          render=lambda v: os.path.abspath(v).encode(errors="surrogateescape")),
    Param("dbfilename", "string", "dump.rdb", flags=PROTECTED),
    Param("proto-max-bulk-len", "memory", 512 * 1024 * 1024, 1024 * 1024),
    Param("client-query-buffer-limit", "memory", 1024 * 1024 * 1024, 1024 * 1024),
    Param("client-output-buffer-limit", "special", dict(DEFAULT_OBUF), parse=_parse_obuf,
          render=_render_obuf),
    Param("hz", "int", 10, 0, 2**31 - 1),  # clamped to 1..500 where used
    Param("busy-reply-threshold", "int", 5000, 0, 2**63 - 1, aliases=("lua-time-limit",)),
    Param("lua-enable-deprecated-api", "bool", False, flags=IMMUTABLE | HIDDEN),  # hidden in Redis
    Param("stream-node-max-entries", "int", 100, 0, 2**63 - 1),
    Param("stream-node-max-bytes", "memory", 4096, 0, 2**63 - 1),
    Param("stream-idmp-duration", "int", 100, 1, 86400),  # a new stream's IDMP settings (8.6)
    Param("stream-idmp-maxsize", "int", 100, 1, 10000),
    # The Prometheus endpoint (metrics.py): Sluice's own, so hidden from patterns.
    Param("metrics-port", "int", 0, 0, 65535, flags=IMMUTABLE | HIDDEN),
    # Always a master (CONFIG GET answers "", as a master's Redis does).
    Param("replicaof", "special", "", flags=IMMUTABLE, parse=_parse_replicaof,
          render=lambda v: b"", aliases=("slaveof",)),
    # A master's replication settings. With no replica ever connected they change what
    # Redis with no replicas does too: min-replicas-* refuse writes (-NOREPLICAS, no replica
    # being good), the backlog size is what INFO shows (no backlog exists until a replica
    # connects, and none ever does here). CONFIG SET clamps the size to 16 KB (Redis's
    # resizeReplicationBacklog).
    Param("min-replicas-to-write", "int", 0, 0, 2**31 - 1, aliases=("min-slaves-to-write",)),
    Param("min-replicas-max-lag", "int", 10, 0, 2**31 - 1, aliases=("min-slaves-max-lag",)),
    Param("repl-backlog-size", "memory", 1024 * 1024, 1, 2**63 - 1),
    Param("repl-backlog-ttl", "int", 3600, 0, 2**63 - 1),
    # Sluice runs in the foreground (a supervisor or container runs it): only ``no``.
    Param("daemonize", "enum", "no", choices=("no",), flags=IMMUTABLE),
    Param("list-max-listpack-size", "int", -2, -(2**31), 2**31 - 1, aliases=("list-max-ziplist-size",)),
    # Quicklist nodes to leave uncompressed at each end. Sluice never compresses list nodes
    # (an encoding detail no reply shows); the setting is kept so that configs and clients
    # that set it work, as Redis's own list units do first thing.
    Param("list-compress-depth", "int", 0, 0, 2**31 - 1),
    Param("hash-max-listpack-entries", "int", 512, 0, 2**63 - 1, aliases=("hash-max-ziplist-entries",)),
    Param("hash-max-listpack-value", "memory", 64, 0, 2**63 - 1, aliases=("hash-max-ziplist-value",)),
    # set and sorted set encodings (sluice/storage/sets.py, zsets.py); LONG_MAX as in Redis
    Param("set-max-intset-entries", "int", 512, 0, 2**63 - 1),
    Param("set-max-listpack-entries", "int", 128, 0, 2**63 - 1),
    Param("set-max-listpack-value", "int", 64, 0, 2**63 - 1),
    Param("zset-max-listpack-entries", "int", 128, 0, 2**63 - 1,
          aliases=("zset-max-ziplist-entries",)),
    Param("zset-max-listpack-value", "memory", 64, 0, 2**63 - 1,
          aliases=("zset-max-ziplist-value",)),
    Param("hll-sparse-max-bytes", "memory", 3000, 0, 2**63 - 1),  # sparse HLL size limit
    Param("slowlog-log-slower-than", "int", 10000, -1, 2**63 - 1),
    Param("slowlog-max-len", "int", 128, 0, 2**63 - 1),
    Param("latency-monitor-threshold", "int", 0, 0, 2**63 - 1),
    Param("enable-debug-command", "enum", "no", choices=("no", "yes", "local"),
          flags=IMMUTABLE),
    Param("enable-protected-configs", "enum", "no", choices=("no", "yes", "local"),
          flags=IMMUTABLE),
    # MODULE LOAD / LOADEX / UNLOAD (Sluice cannot load modules: they fail when allowed)
    Param("enable-module-command", "enum", "no", choices=("no", "yes", "local"),
          flags=IMMUTABLE),
    # Redis's built-in save points (server.h), which redis-server uses without a config file.
    Param("save", "special", [(3600, 1), (300, 100), (60, 10000)], parse=_parse_save,
          render=_render_save),
    # security (sluice/server/acl.py, tls.py, security.py; docs/security.md)
    Param("aclfile", "string", "", flags=IMMUTABLE),
    Param("acllog-max-len", "int", 128, 0, 2**63 - 1),
    Param("acl-pubsub-default", "enum", "resetchannels", choices=("allchannels", "resetchannels")),
    Param("user", "special", [], flags=MULTI, parse=parse_user_directive, render=_render_words),
    Param("rename-command", "special", [], flags=MULTI, parse=_parse_rename, render=_render_words),
    Param("unixsocket", "string", "", flags=IMMUTABLE),
    Param("unixsocketperm", "special", 0, flags=IMMUTABLE, parse=_parse_octal,
          render=lambda v: b"%o" % v),
    Param("tls-port", "int", 0, 0, 65535, flags=IMMUTABLE),
    Param("tls-cert-file", "string", ""),
    Param("tls-key-file", "string", ""),
    Param("tls-key-file-pass", "string", "", flags=SENSITIVE),
    Param("tls-ca-cert-file", "string", ""),
    Param("tls-ca-cert-dir", "string", ""),
    Param("tls-dh-params-file", "string", ""),
    Param("tls-auth-clients", "enum", "yes", choices=("no", "yes", "optional")),
    Param("tls-protocols", "string", ""),
    Param("tls-ciphers", "string", ""),
    Param("tls-ciphersuites", "string", ""),
    Param("tls-prefer-server-ciphers", "bool", False),
    Param("tls-session-caching", "bool", True),
    Param("appendonly", "bool", False),
    Param("appendfsync", "enum", "everysec", choices=("always", "everysec", "no")),
    Param("appendfilename", "string", "appendonly.aof", flags=IMMUTABLE),
    Param("appenddirname", "string", "appendonlydir", flags=IMMUTABLE),
    # persistence (sluice/server/persistence.py, snapshot.py; docs/persistence.md)
    Param("aof-load-truncated", "bool", True),
    Param("aof-use-rdb-preamble", "bool", True),
    Param("aof-timestamp-enabled", "bool", False),
    Param("aof-rewrite-incremental-fsync", "bool", True),
    Param("no-appendfsync-on-rewrite", "bool", False),
    Param("auto-aof-rewrite-percentage", "int", 100, 0, 2**31 - 1),
    Param("auto-aof-rewrite-min-size", "memory", 64 * 1024 * 1024, 0, 2**63 - 1),
    Param("rdbcompression", "bool", True),
    Param("rdbchecksum", "bool", True, flags=IMMUTABLE),
    Param("rdb-save-incremental-fsync", "bool", True),
    Param("rdb-del-sync-files", "bool", False),
    Param("stop-writes-on-bgsave-error", "bool", True),
    # memory, eviction, keyspace notifications, client-side caching (sluice/server/memory.py,
    # notify.py, tracking.py; docs/memory.md)
    Param("maxmemory", "memory", 0, 0, 2**64 - 1),
    Param("maxmemory-policy", "enum", "noeviction", choices=MAXMEMORY_POLICIES),
    Param("maxmemory-samples", "int", 5, 1, 64),
    Param("maxmemory-eviction-tenacity", "int", 10, 0, 100),
    Param("maxmemory-clients", "special", 0, parse=_parse_maxmemory_clients,
          render=_render_maxmemory_clients),
    Param("lfu-log-factor", "int", 10, 0, 2**31 - 1),
    Param("lfu-decay-time", "int", 1, 0, 2**31 - 1),
    Param("key-memory-histograms", "bool", False),
    Param("lazyfree-lazy-eviction", "bool", False),
    Param("lazyfree-lazy-expire", "bool", False),
    Param("lazyfree-lazy-server-del", "bool", False),
    Param("lazyfree-lazy-user-del", "bool", False),
    Param("lazyfree-lazy-user-flush", "bool", False),
    Param("notify-keyspace-events", "special", 0, parse=_parse_notify, render=format_classes),
    Param("tracking-table-max-keys", "int", 1_000_000, 0, 2**63 - 1),
    Param("latency-tracking", "bool", True),  # per-command histograms (cmdlatency.py)
    Param("latency-tracking-info-percentiles", "special", [50.0, 99.0, 99.9],
          parse=_parse_percentiles, render=_render_percentiles),
    # Microseconds to wait after each key an RDB load reads, and before each key a save
    # (SAVE, BGSAVE, an AOF rewrite) writes: debugging aids, hidden as in Redis, that make a
    # load or a fork child slow enough to watch; a negative value waits one microsecond
    # once in that many keys.
    Param("key-load-delay", "int", 0, -(2**31), 2**31 - 1, flags=HIDDEN),
    Param("rdb-key-save-delay", "int", 0, -(2**31), 2**31 - 1, flags=HIDDEN),
    # CPU affinity (sluice/server/affinity.py); Redis 8 spells them with hyphens, and still
    # takes the underscores of redis.conf's examples
    Param("server-cpulist", "string", "", flags=IMMUTABLE, aliases=("server_cpulist",)),
    Param("bio-cpulist", "string", "", flags=IMMUTABLE, aliases=("bio_cpulist",)),
    Param("aof-rewrite-cpulist", "string", "", flags=IMMUTABLE, aliases=("aof_rewrite_cpulist",)),
    Param("bgsave-cpulist", "string", "", flags=IMMUTABLE, aliases=("bgsave_cpulist",)),
]
