"""The rest of Redis 8.6's configuration: the parameters of ``config.c`` that the main table
(``config_table.py``) does not hold, so a redis.conf (the one Redis ships, or one of a dev
stack) starts Sluice, and CONFIG GET / SET / REWRITE know every name Redis knows, with its
kind, default, bounds, flags and aliases.

Each group says what the settings do in Sluice:

* **used**: ``active-expire-effort`` (keys the expiry cycle may visit), ``oom-score-adj`` / ``oom-score-adj-values`` (the
  process's and its fork children's ``/proc/self/oom_score_adj``), ``syslog-enabled`` /
  ``-ident`` / ``-facility`` (log to syslog), ``supervised`` (systemd's and upstart's
  readiness), ``shutdown-on-sigint`` / ``-sigterm`` (what a signal's shutdown does),
  ``activedefrag`` (refused, as Redis refuses it without jemalloc), ``cluster-enabled`` (only
  ``no``), ``sanitize-dump-payload`` (accepted: Sluice always decodes a RESTORE payload
  whole, which checks what ``yes`` asks Redis to check);
* **kept, no effect**: replication (Sluice has no replicas: a master with none ignores them
  too; ``bind-source-addr`` is the address replication connects from), cluster (no cluster
  mode), active defragmentation and jemalloc (CPython's allocator),
  TLS for replication and cluster links, crash reports, I/O threads (one event loop), and
  the process title (CPython cannot rename its process).

Hidden parameters (Redis's HIDDEN_CONFIG) are answered only when named, as in Redis. Those
Redis compiles only into its test builds (``client-default-resp``, ``req-res-logfile``) are
left out, as a release build leaves them out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sluice.commands.errors import ConfigError
from sluice.protocol import string2ll

from .config_table import HIDDEN, IMMUTABLE, SENSITIVE, Param

_INT_MAX = 2**31 - 1
_UINT_MAX = 2**32 - 1
_LONG_MAX = 2**63 - 1
_ULLONG_MAX = 2**64 - 1


def _flags_enum(names: tuple[tuple[str, int], ...], check: Any = None) -> tuple[Any, Any]:
    """Parser and renderer of a multi-argument enum whose values are bit flags
    (``MULTI_ARG_CONFIG``: ``shutdown-on-sigterm nosave now``); Redis renders the name of an
    exact value, else the names of its bits in table order."""
    by_name = dict(names)

    def parse(args: list[bytes]) -> int:
        words = [w.decode(errors="replace").lower() for a in args for w in a.split()]
        if not words:
            raise ConfigError("argument(s) must be one of the following: "
                              + ", ".join(n for n, _ in names))
        value = 0
        for w in words:
            if w not in by_name:
                raise ConfigError("argument(s) must be one of the following: "
                                  + ", ".join(n for n, _ in names))
            value |= by_name[w]
        if check is not None:
            check(value)
        return value

    def render(value: int) -> bytes:
        for name, bits in names:
            if bits == value:
                return name.encode()
        parts, left = [], value
        for name, bits in names:
            if bits and bits == left & bits:
                parts.append(name)
                left &= ~bits
        return (" ".join(parts) if parts and not left else "unknown").encode()

    return parse, render


# shutdown-on-sigint / -sigterm: SHUTDOWN's flags for a signal's shutdown
SHUTDOWN_SAVE, SHUTDOWN_NOSAVE, SHUTDOWN_NOW, SHUTDOWN_FORCE = 1, 2, 4, 8


def _check_shutdown(value: int) -> None:
    if value & SHUTDOWN_SAVE and value & SHUTDOWN_NOSAVE:
        raise ConfigError("shutdown options SAVE and NOSAVE can't be used simultaneously")


_parse_shutdown, _render_shutdown = _flags_enum(
    (("default", 0), ("save", SHUTDOWN_SAVE), ("nosave", SHUTDOWN_NOSAVE), ("now", SHUTDOWN_NOW),
     ("force", SHUTDOWN_FORCE)), _check_shutdown)
_parse_slot_stats, _render_slot_stats = _flags_enum(
    (("no", 0), ("yes", 7), ("cpu", 1), ("net", 2), ("mem", 4)))


def _parse_oom_values(args: list[bytes]) -> tuple[int, int, int]:
    """oom-score-adj-values: the master's, a replica's and a fork child's adjustment."""
    words = b" ".join(args).split()
    if len(words) != 3:
        raise ConfigError("wrong number of arguments")
    values = []
    for w in words:
        v = string2ll(w)
        if v is None or not -2000 <= v <= 2000:
            raise ConfigError("Invalid oom-score-adj-values, elements must be between -2000 and "
                              "2000.")
        values.append(v)
    return values[0], values[1], values[2]


def _render_oom_values(value: tuple[int, int, int]) -> bytes:
    return b"%d %d %d" % value


def _parse_activedefrag(args: list[bytes]) -> bool:
    if len(args) != 1 or args[0].lower() not in (b"yes", b"no"):
        raise ConfigError("argument must be 'yes' or 'no'")
    if args[0].lower() == b"yes":  # Redis's answer when it is built without its jemalloc
        raise ConfigError("-DISABLED Active defragmentation cannot be enabled: it requires a "
                          "Redis server compiled with a modified Jemalloc like the one shipped "
                          "by default with the Redis source distribution")
    return False


def _parse_cluster_enabled(args: list[bytes]) -> bool:
    if len(args) != 1 or args[0].lower() not in (b"yes", b"no"):
        raise ConfigError("argument must be 'yes' or 'no'")
    if args[0].lower() == b"yes":
        raise ConfigError("Sluice has no cluster mode: cluster-enabled must be 'no'")
    return False


def expand_title(template: str, values: Mapping[str, str]) -> str | None:
    """A proc-title-template expanded as Redis's ``sdstemplate``: ``{name}`` takes
    ``values[name]``, ``{{`` is a literal brace; None when a placeholder is unclosed or
    unknown. Blanks at either end are trimmed, as Redis trims the title."""
    out: list[str] = []
    i = 0
    while (sv := template.find("{", i)) >= 0:
        out.append(template[i:sv])
        if sv + 1 == len(template):
            return None
        if template[sv + 1] == "{":
            out.append("{")
            i = sv + 2
            continue
        ev = template.find("}", sv + 1)
        value = values.get(template[sv + 1:ev]) if ev >= 0 else None
        if value is None:
            return None
        out.append(value)
        i = ev + 1
    out.append(template[i:])
    return "".join(out).strip(" ")


# What validation expands with: Redis passes an empty title, and standalone has no mode.
_TITLE_PROBE = {"title": "", "server-mode": "", "listen-addr": "*:0", "port": "0",
                "tls-port": "0", "unixsocket": "-", "config-file": "-"}


def _parse_title(args: list[bytes]) -> str:
    """proc-title-template: valid when it expands, to something, with an empty {title}
    (Redis's ``validateProcTitleTemplate``)."""
    text = b" ".join(args).decode(errors="replace")
    if not expand_title(text, _TITLE_PROBE):
        raise ConfigError("template format is invalid or contains unknown variables")
    return text


_BOOL = "bool"

REDIS_PARAMS: list[Param] = [
    # -- used ------------------------------------------------------------------------------
    Param("active-expire-effort", "int", 1, 1, 10),
    Param("oom-score-adj", "enum", "no", choices=("no", "yes", "relative", "absolute")),
    Param("oom-score-adj-values", "special", (0, 200, 800), parse=_parse_oom_values,
          render=_render_oom_values),
    Param("syslog-enabled", _BOOL, False, flags=IMMUTABLE),
    Param("syslog-ident", "string", "redis", flags=IMMUTABLE),
    Param("syslog-facility", "enum", "local0", flags=IMMUTABLE,
          choices=("user", "local0", "local1", "local2", "local3", "local4", "local5",
                   "local6", "local7")),
    Param("supervised", "enum", "no", flags=IMMUTABLE, choices=("upstart", "systemd", "auto",
                                                                "no")),
    Param("shutdown-on-sigint", "special", 0, parse=_parse_shutdown, render=_render_shutdown),
    Param("shutdown-on-sigterm", "special", 0, parse=_parse_shutdown, render=_render_shutdown),
    Param("shutdown-timeout", "int", 10, 0, _INT_MAX),  # waits for replicas: none here
    Param("activedefrag", "special", False, parse=_parse_activedefrag,
          render=lambda v: b"yes" if v else b"no"),
    Param("cluster-enabled", "special", False, flags=IMMUTABLE, parse=_parse_cluster_enabled,
          render=lambda v: b"yes" if v else b"no"),
    Param("sanitize-dump-payload", "enum", "no", choices=("no", "yes", "clients")),
    # -- kept, no effect: the process and the allocator ------------------------------------
    Param("always-show-logo", _BOOL, False, flags=IMMUTABLE),
    Param("set-proc-title", _BOOL, True, flags=IMMUTABLE),
    Param("proc-title-template", "special", "{title} {listen-addr} {server-mode}",
          parse=_parse_title, render=lambda v: v.encode()),
    Param("activerehashing", _BOOL, True),
    Param("dynamic-hz", _BOOL, True),
    Param("jemalloc-bg-thread", _BOOL, True),
    Param("disable-thp", _BOOL, True, flags=IMMUTABLE),
    Param("crash-log-enabled", _BOOL, True),
    Param("crash-memcheck-enabled", _BOOL, True),
    Param("use-exit-on-panic", _BOOL, False, flags=HIDDEN),
    Param("watchdog-period", "int", 0, 0, _INT_MAX, flags=HIDDEN),
    Param("hide-user-data-from-log", _BOOL, False),
    Param("ignore-warnings", "string", ""),
    Param("locale-collate", "string", ""),
    Param("io-threads", "int", 1, 1, 128, flags=IMMUTABLE),
    Param("prefetch-batch-max-size", "int", 16, 0, 128, flags=HIDDEN),
    Param("lookahead", "int", 16, 1, _INT_MAX),
    Param("max-new-connections-per-cycle", "int", 10, 1, 1000),
    Param("max-new-tls-connections-per-cycle", "int", 1, 1, 1000),
    Param("socket-mark-id", "int", 0, 0, _UINT_MAX, flags=IMMUTABLE),
    Param("lazyexpire-nested-arbitrary-keys", _BOOL, True, flags=HIDDEN),
    Param("aof-disable-auto-gc", _BOOL, False, flags=HIDDEN),
    Param("loading-process-events-interval-bytes", "int", 512 * 1024, 1024, _INT_MAX,
          flags=HIDDEN),
    Param("active-defrag-cycle-min", "int", 1, 1, 99),
    Param("active-defrag-cycle-max", "int", 25, 1, 99),
    Param("active-defrag-threshold-lower", "int", 10, 0, 1000),
    Param("active-defrag-threshold-upper", "int", 100, 0, 1000),
    Param("active-defrag-max-scan-fields", "int", 1000, 1, _LONG_MAX),
    Param("active-defrag-ignore-bytes", "memory", 100 << 20, 1, _LONG_MAX),
    # -- kept, no effect: replication (no replica ever connects) ---------------------------
    Param("masterauth", "string", "", flags=SENSITIVE),
    Param("bind-source-addr", "string", ""),
    Param("masteruser", "string", "", flags=SENSITIVE),
    Param("repl-disable-tcp-nodelay", _BOOL, False),
    Param("repl-diskless-sync", _BOOL, True),
    Param("repl-diskless-sync-delay", "int", 5, 0, _INT_MAX),
    Param("repl-diskless-sync-max-replicas", "int", 0, 0, _INT_MAX),
    Param("repl-diskless-load", "enum", "disabled",
          choices=("disabled", "on-empty-db", "swapdb", "flushdb")),
    Param("repl-rdb-channel", _BOOL, True, flags=HIDDEN),
    Param("repl-timeout", "int", 60, 1, _INT_MAX),
    Param("repl-ping-replica-period", "int", 10, 1, _INT_MAX,
          aliases=("repl-ping-slave-period",)),
    Param("replica-lazy-flush", _BOOL, False, aliases=("slave-lazy-flush",)),
    Param("replica-serve-stale-data", _BOOL, True, aliases=("slave-serve-stale-data",)),
    Param("replica-read-only", _BOOL, True, aliases=("slave-read-only",)),
    Param("replica-ignore-maxmemory", _BOOL, True, aliases=("slave-ignore-maxmemory",)),
    Param("replica-announced", _BOOL, True),
    Param("replica-ignore-disk-write-errors", _BOOL, False),
    Param("replica-priority", "int", 100, 0, _INT_MAX, aliases=("slave-priority",)),
    Param("replica-announce-ip", "string", "", aliases=("slave-announce-ip",)),
    Param("replica-announce-port", "int", 0, 0, 65535, aliases=("slave-announce-port",)),
    Param("replica-full-sync-buffer-limit", "memory", 0, 0, _LONG_MAX),
    Param("propagation-error-behavior", "enum", "ignore",
          choices=("ignore", "panic", "panic-on-replicas")),
    Param("tls-replication", _BOOL, False),
    # -- kept, no effect: cluster mode (Sluice is standalone only) -------------------------
    Param("cluster-config-file", "string", "nodes.conf", flags=IMMUTABLE),
    Param("cluster-port", "int", 0, 0, 65535, flags=IMMUTABLE),
    Param("cluster-node-timeout", "int", 15000, 0, _LONG_MAX),
    Param("cluster-ping-interval", "int", 0, 0, _LONG_MAX, flags=HIDDEN),
    Param("cluster-require-full-coverage", _BOOL, True),
    Param("cluster-replica-no-failover", _BOOL, False, aliases=("cluster-slave-no-failover",)),
    Param("cluster-replica-validity-factor", "int", 10, 0, _INT_MAX,
          aliases=("cluster-slave-validity-factor",)),
    Param("cluster-migration-barrier", "int", 1, 0, _INT_MAX),
    Param("cluster-allow-replica-migration", _BOOL, True),
    Param("cluster-allow-reads-when-down", _BOOL, False),
    Param("cluster-allow-pubsubshard-when-down", _BOOL, True),
    Param("cluster-announce-ip", "string", ""),
    Param("cluster-announce-hostname", "string", ""),
    Param("cluster-announce-human-nodename", "string", ""),
    Param("cluster-announce-port", "int", 0, 0, 65535),
    Param("cluster-announce-bus-port", "int", 0, 0, 65535),
    Param("cluster-announce-tls-port", "int", 0, 0, 65535),
    Param("cluster-preferred-endpoint-type", "enum", "ip",
          choices=("ip", "hostname", "unknown-endpoint")),
    Param("cluster-link-sendbuf-limit", "memory", 0, 0, _ULLONG_MAX),
    Param("cluster-compatibility-sample-ratio", "int", 0, 0, 100),
    Param("cluster-slot-stats-enabled", "special", 0, parse=_parse_slot_stats,
          render=_render_slot_stats),
    Param("cluster-slot-migration-max-archived-tasks", "int", 32, 1, _INT_MAX, flags=HIDDEN),
    Param("cluster-slot-migration-handoff-max-lag-bytes", "memory", 1 << 20, 0, _LONG_MAX),
    Param("cluster-slot-migration-write-pause-timeout", "int", 10_000, 0, _LONG_MAX),
    Param("cluster-slot-migration-sync-buffer-drain-timeout", "int", 60_000, 0, _LONG_MAX,
          flags=HIDDEN),
    Param("tls-cluster", _BOOL, False),
    # -- kept, no effect: TLS for outgoing links (Sluice opens none but MIGRATE's, plain) --
    Param("tls-auth-clients-user", "enum", "off", choices=("CN", "off")),
    Param("tls-client-cert-file", "string", ""),
    Param("tls-client-key-file", "string", ""),
    Param("tls-client-key-file-pass", "string", "", flags=SENSITIVE),
    Param("tls-session-cache-size", "int", 20 * 1024, 0, _INT_MAX),
    Param("tls-session-cache-timeout", "int", 300, 0, _INT_MAX),
    # -- the AOF -------------------------------------------------------------------------
    Param("aof-load-corrupt-tail-max-size", "int", 0, 0, _LONG_MAX),
]
