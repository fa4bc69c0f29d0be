"""Administration, introspection and CLIENT commands against the reference redis-server.

Error replies and deterministic replies are compared byte for byte, RESP2 and RESP3. Where the
output cannot be identical (HELP wording, INFO values, timestamps) the shape is compared:
HELP layout, INFO section and field names, MONITOR lines without time and port, slow log
entries without IDs and durations.
"""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import hiredis
import pytest

from sluice.server.config import Config
from tests.build_reference_redis import suite_dir
from tests.support import (
    ProcessServer,
    RawClient,
    ThreadedServer,
    free_port,
    require_redis_server,
    resp_frame_end,
    running,
    wait_until,
)

pytestmark = pytest.mark.differential

SAME_REPLY = [
    # COMMAND
    ["COMMAND", "COUNT", "x"], ["COMMAND", "INFO", "nosuch"], ["COMMAND", "INFO", "client|id"],
    ["COMMAND", "INFO", "CLIENT|UNBLOCK", "nosuch", "client|pause"],
    ["COMMAND", "DOCS", "nosuch"], ["COMMAND", "GETKEYS"],
    ["COMMAND", "GETKEYS", "nosuch", "a"], ["COMMAND", "GETKEYS", "client", "kill", "x"],
    ["COMMAND", "GETKEYS", "client", "nosuch", "x"], ["COMMAND", "GETKEYS", "eval", "s", "0"],
    ["COMMAND", "GETKEYS", "eval", "s", "2", "a"], ["COMMAND", "GETKEYS", "eval", "s", "1", "k", "a"],
    ["COMMAND", "GETKEYSANDFLAGS", "eval_ro", "s", "1", "k"],
    ["COMMAND", "GETKEYS", "fcall", "f", "x"], ["COMMAND", "LIST", "FILTERBY"],
    ["COMMAND", "LIST", "FILTERBY", "aclcat", "nosuch"], ["COMMAND", "LIST", "FILTERBY", "module", "m"],
    ["COMMAND", "LIST", "FILTERBY", "foo", "bar"], ["COMMAND", "LIST", "x", "y", "z"],
    ["COMMAND", "NOSUCH"], ["COMMAND", "HELP", "x"],
    # CONFIG
    ["CONFIG"], ["CONFIG", "GET"], ["CONFIG", "GET", "nosuch"], ["CONFIG", "GET", "maxclients"],
    ["CONFIG", "GET", "slowlog-max-len"], ["CONFIG", "SET", "hz"],
    ["CONFIG", "SET", "hz", "10", "maxclients"], ["CONFIG", "SET", "nosuch", "1"],
    ["CONFIG", "SET", "hz", "abc"], ["CONFIG", "SET", "hz", "10", "hz", "11"],
    ["CONFIG", "SET", "dir", "/tmp"], ["CONFIG", "SET", "enable-debug-command", "yes"],
    ["CONFIG", "SET", "enable-protected-configs", "yes"], ["CONFIG", "SET", "maxclients", "0"],
    ["CONFIG", "SET", "proto-max-bulk-len", "10"], ["CONFIG", "SET", "appendonly", "maybe"],
    ["CONFIG", "SET", "maxmemory", "10x"], ["CONFIG", "SET", "save", "1 2 3"],
    ["CONFIG", "SET", "timeout", "-1"], ["CONFIG", "SET", "slowlog-log-slower-than", "-5"],
    ["CONFIG", "SET", "client-output-buffer-limit", "normal 1 2"],
    ["CONFIG", "REWRITE"], ["CONFIG", "RESETSTAT", "x"], ["CONFIG", "NOSUCH"],
    ["CONFIG", "GET", "server_cpulist"], ["CONFIG", "GET", "bio_cpulist"],
    ["CONFIG", "SET", "server_cpulist", "0"], ["CONFIG", "SET", "bgsave_cpulist", "0-1"],
    ["CONFIG", "SET", "aof_rewrite_cpulist", ""],
    ["CONFIG", "SET", "list-compress-depth", "-1"], ["CONFIG", "SET", "list-compress-depth", "x"],
    ["CONFIG", "SET", "list-compress-depth", "2147483648"],
    ["CONFIG", "SET", "daemonize", "yes"], ["CONFIG", "SET", "daemonize", "no"],
    ["CONFIG", "GET", "daemonize"], ["CONFIG", "GET", "key-load-delay"],
    ["CONFIG", "GET", "key-load-*"], ["CONFIG", "SET", "key-load-delay", "x"],
    ["CONFIG", "GET", "lua-*"], ["CONFIG", "GET", "lua-enable-deprecated-api"],
    ["CONFIG", "GET", "replicaof"], ["CONFIG", "GET", "slaveof"],  # (*of: in hash order)
    ["CONFIG", "SET", "replicaof", "no one"], ["CONFIG", "SET", "slaveof", "127.0.0.1 1"],
    ["CONFIG", "SET", "maxmemory-clients", "200%"], ["CONFIG", "SET", "maxmemory-clients", "-1%"],
    ["CONFIG", "SET", "maxmemory-clients", "1.5%"], ["CONFIG", "SET", "maxmemory-clients", "%"],
    ["CONFIG", "SET", "key-load-delay", "-2147483649"],
    # SLOWLOG, LATENCY, SHUTDOWN, MONITOR
    ["SLOWLOG"], ["SLOWLOG", "GET", "x"], ["SLOWLOG", "GET", "-2"], ["SLOWLOG", "GET", "1", "2"],
    ["SLOWLOG", "LEN", "x"], ["SLOWLOG", "NOSUCH"], ["LATENCY", "HISTORY", "nosuch"],
    ["LATENCY", "RESET", "a", "b"], ["LATENCY", "GRAPH", "command"], ["LATENCY", "NOSUCH"],
    ["LATENCY", "LATEST", "x"], ["SHUTDOWN", "bogus"], ["SHUTDOWN", "abort"],
    ["SHUTDOWN", "nosave", "save"], ["SHUTDOWN", "nosave", "abort"], ["MONITOR", "x"],
    # CLIENT
    ["CLIENT"], ["CLIENT", "KILL", "1.2.3.4:5"], ["CLIENT", "KILL", "ID"],
    ["CLIENT", "KILL", "ID", "abc"], ["CLIENT", "KILL", "ID", "0"], ["CLIENT", "KILL", "ID", "99999"],
    ["CLIENT", "KILL", "TYPE", "bogus"], ["CLIENT", "KILL", "TYPE", "master"],
    ["CLIENT", "KILL", "SKIPME", "maybe"], ["CLIENT", "KILL", "USER", "nosuchuser"],
    ["CLIENT", "KILL", "ADDR", "1.2.3.4:5"], ["CLIENT", "KILL", "LADDR", "1.2.3.4:5"],
    ["CLIENT", "KILL", "bogus", "x"], ["CLIENT", "KILL", "ID", "1", "ID"],
    ["CLIENT", "NO-EVICT"], ["CLIENT", "NO-EVICT", "maybe"], ["CLIENT", "NO-EVICT", "on"],
    ["CLIENT", "REPLY", "maybe"], ["CLIENT", "PAUSE"], ["CLIENT", "PAUSE", "abc"],
    ["CLIENT", "PAUSE", "-1"], ["CLIENT", "PAUSE", "10", "bogus"],
    ["CLIENT", "PAUSE", "10", "write", "x"], ["CLIENT", "UNPAUSE"], ["CLIENT", "UNPAUSE", "x"],
    ["CLIENT", "CACHING", "yes"], ["CLIENT", "CACHING", "maybe"], ["CLIENT", "GETREDIR"],
    ["CLIENT", "TRACKINGINFO"], ["CLIENT", "TRACKING", "off"], ["CLIENT", "TRACKING", "maybe"],
    ["CLIENT", "HELP", "x"], ["CLIENT", "INFO", "x"], ["CLIENT", "ID", "x"],
    ["CLIENT", "GETNAME"], ["CLIENT", "SETNAME"], ["CLIENT", "SETNAME", ""],
    ["CLIENT", "SETNAME", "a b"], ["CLIENT", "LIST", "TYPE"], ["CLIENT", "LIST", "ID"],
    ["CLIENT", "LIST", "ID", "0"], ["CLIENT", "LIST", "ID", "abc"], ["CLIENT", "LIST", "bogus"],
    ["CLIENT", "LIST", "TYPE", "bogus"], ["CLIENT", "UNBLOCK", "abc"],
    ["CLIENT", "UNBLOCK", "1", "bogus"], ["CLIENT", "UNBLOCK", "99999"], ["CLIENT", "NOSUCH"],
    # scripting (only what does not need a script engine), DEBUG refused, DPING
    ["SCRIPT"], ["SCRIPT", "FLUSH"], ["SCRIPT", "FLUSH", "bogus"], ["SCRIPT", "FLUSH", "async"],
    ["SCRIPT", "FLUSH", "sync", "async"], ["FUNCTION"], ["FUNCTION", "FLUSH"],
    ["FUNCTION", "FLUSH", "bogus"], ["FUNCTION", "FLUSH", "a", "b"], ["EVAL"], ["EVAL", "x"],
    ["FCALL_RO", "f"], ["DEBUG"], ["DEBUG", "SLEEP", "0"], ["DPING"],
    # newer than 7.0: COMMAND GETKEYS arity -3 (7.2), CLIENT KILL MAXAGE (7.4), NO-TOUCH (7.2)
    ["COMMAND", "GETKEYS", "get"], ["CLIENT", "KILL", "MAXAGE", "100000"], ["CLIENT", "NO-TOUCH", "on"],
    ["CLIENT", "KILL", "MAXAGE", "str"], ["CLIENT", "KILL", "MAXAGE", "9999999999999999999"],
    ["CLIENT", "KILL", "MAXAGE", "-1"], ["CLIENT", "KILL", "MAXAGE", "0"],
    ["CLIENT", "KILL", "MAXAGE", "05"], ["CLIENT", "KILL", "ID", "abc", "MAXAGE", "-1"],
    ["CLIENT", "KILL", "MAXAGE", "-1", "ID", "abc"],
]



@pytest.mark.parametrize("argv", SAME_REPLY, ids=[" ".join(a) or "''" for a in SAME_REPLY])
def test_same_reply(raw_pair: Any, argv: list[str]) -> None:
    ours, theirs = raw_pair
    assert ours.call(*argv) == theirs.call(*argv)


# -- DEBUG, on servers that allow it ---------------------------------------------------------------


@pytest.fixture(scope="module")
def debug_servers() -> Iterator[tuple[int, int]]:
    require_redis_server()
    ours = ThreadedServer(["enable-debug-command yes"]).start()
    theirs = ProcessServer("redis", ["--enable-debug-command", "yes"]).start()
    yield ours.port, theirs.port
    ours.stop()
    theirs.stop()


DEBUG_CASES = [["DEBUG", "PROTOCOL", t] for t in (
    "string", "integer", "double", "bignum", "null", "array", "set", "map", "attrib", "push",
    "verbatim", "true", "false", "bogus")] + [
    ["DEBUG", "NOSUCH"], ["DEBUG", "OBJECT", "nokey"], ["DEBUG", "OBJECT"], ["DEBUG", "LOG"],
    ["DEBUG", "LOG", "hello"], ["DEBUG", "SLEEP", "0"], ["DEBUG", "SLEEP", "abc"],
    ["DEBUG", "SET-ACTIVE-EXPIRE", "1"], ["DEBUG", "SET-ACTIVE-EXPIRE"],
    ["DEBUG", "ERROR", "foo bar"], ["DEBUG", "ERROR", "WRONGTYPE custom"], ["DEBUG", "help", "x"],
    ["DEBUG", "JMAP"], ["DEBUG", "PROTOCOL"], ["DEBUG", "PROTOCOL", "string", "x"],
    ["DEBUG", "REPLYBUFFER", "peak-reset-time", "never"],
    ["DEBUG", "REPLYBUFFER", "PEAK-RESET-TIME", "100"],
    ["DEBUG", "REPLYBUFFER", "peak-reset-time", "soon"],
    ["DEBUG", "REPLYBUFFER", "peak-reset-time", "reset"],
    ["DEBUG", "REPLYBUFFER", "resizing", "0"], ["DEBUG", "REPLYBUFFER", "resizing", "x"],
    ["DEBUG", "REPLYBUFFER", "resizing", "1"], ["DEBUG", "REPLYBUFFER", "bogus", "1"],
    ["DEBUG", "REPLYBUFFER", "resizing"], ["DEBUG", "REPLY-COPY-AVOIDANCE", "0"],
]


def _exchange(port: int, protocol: int, argv: list[str]) -> bytes:
    """Send one command and read everything it answers (an attribute or a push is not one
    reply, so this reads until the server goes quiet after PING's answer)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        if protocol == 3:
            sock.sendall(b"HELLO 3\r\n")
            _read_until_frame(sock)  # HELLO's reply
        parts = [a.encode() for a in argv]
        sock.sendall(b"*%d\r\n" % len(parts) + b"".join(b"$%d\r\n%s\r\n" % (len(p), p)
                                                        for p in parts) + b"PING\r\n")
        return _read_until(sock, b"+PONG\r\n")[: -len(b"+PONG\r\n")]
    finally:
        sock.close()


def _read_until_frame(sock: socket.socket) -> bytes:
    data = b""
    while not data or resp_frame_end(data, 0) != len(data):
        chunk = sock.recv(65536)
        assert chunk, data
        data += chunk
    return data


def _read_until(sock: socket.socket, end: bytes) -> bytes:
    data = b""
    while not data.endswith(end):
        chunk = sock.recv(65536)
        assert chunk, data
        data += chunk
    return data


@pytest.mark.parametrize("protocol", [2, 3])
@pytest.mark.parametrize("argv", DEBUG_CASES, ids=[" ".join(a) for a in DEBUG_CASES])
def test_debug(debug_servers: tuple[int, int], argv: list[str], protocol: int) -> None:
    ours, theirs = debug_servers
    assert _exchange(ours, protocol, argv) == _exchange(theirs, protocol, argv)


# -- shapes ------------------------------------------------------------------------------------------


def _parse(data: bytes) -> Any:
    reader = hiredis.Reader()
    reader.feed(data)
    return reader.gets()


@pytest.mark.parametrize("name", ["COMMAND", "CONFIG", "SLOWLOG", "LATENCY", "CLIENT"])
def test_help_shape(raw_pair: Any, name: str) -> None:
    head = re.compile(rb"\+%s <subcommand> \[<arg> \[value\] \[opt\] \.\.\.\]\. Subcommands are:"
                      % name.encode())
    for client in raw_pair:
        raw = client.call(name, "HELP")
        lines = raw.split(b"\r\n")
        count = int(lines[0][1:])
        assert lines[0][:1] == b"*" and len(lines) == count + 2  # simple strings only
        assert all(line.startswith(b"+") for line in lines[1:-1])
        assert head.fullmatch(lines[1])
        assert lines[-3] == b"+HELP" and lines[-2].startswith(b"+    Print")


def _info_fields(client: RawClient, *sections: str) -> dict[str, list[str]]:
    text = _parse(client.call("INFO", *sections)).decode()
    out: dict[str, list[str]] = {}
    current = ""
    for line in text.split("\r\n"):
        if line.startswith("# "):
            current = line[2:]
            out[current] = []
        elif line:
            out[current].append(line.split(":", 1)[0])
    return out


@pytest.mark.parametrize("sections", [[], ["all"], ["everything"], ["keyspace", "server"],
                                      ["default", "commandstats"], ["nosuch"], ["debug"],
                                      ["everything", "debug"]])
def test_info_sections_and_fields(raw_pair: Any, sections: list[str]) -> None:
    ours, theirs = (_info_fields(c, *sections) for c in raw_pair)
    assert list(ours) == list(theirs)
    for section, names in theirs.items():
        if section in ("Commandstats", "Errorstats", "Latencystats", "Keyspace", "Keysizes"):
            continue  # per-run content
        if section == "Modules":
            continue  # Redis 8 lists its built-in vectorset module; Sluice has no modules
        missing = [n for n in names if n not in ours[section]]
        assert not missing, f"{section}: {missing}"
        # Redis's fields keep their order among ours (Sluice adds sluice_version).
        assert [n for n in ours[section] if n in names] == names, section


def test_config_get_defaults(raw_pair: Any) -> None:
    names = ["maxclients", "timeout", "tcp-keepalive", "hz", "slowlog-log-slower-than",
             "slowlog-max-len", "latency-monitor-threshold", "proto-max-bulk-len",
             "client-query-buffer-limit", "databases", "stream-node-max-entries",
             "stream-node-max-bytes", "list-max-listpack-size", "list-max-ziplist-size",
             "appendfsync", "enable-debug-command", "enable-protected-configs",
             "client-output-buffer-limit", "loglevel", "list-compress-depth"]
    ours, theirs = (_parse(c.call("CONFIG", "GET", *names)) for c in raw_pair)
    as_dict = [dict(zip(r[::2], r[1::2], strict=True)) if isinstance(r, list) else r
               for r in (ours, theirs)]
    assert as_dict[0] == as_dict[1]


def test_config_get_star_names_only_redis_parameters(raw_pair: Any) -> None:
    """Sluice's own settings (metrics-port) and hidden ones are left out of patterns, as
    Redis leaves out its hidden ones: a tool that walks ``CONFIG GET *`` and sets each back
    (Redis's "CONFIG sanity" test) meets only Redis's parameters."""
    def names(*patterns: str, c: Any = raw_pair[0]) -> list[bytes]:
        reply = _parse(c.call("CONFIG", "GET", *patterns))
        return list(reply) if isinstance(reply, dict) else reply[::2]

    ours, theirs = names("*"), names("*", c=raw_pair[1])
    assert set(ours) <= set(theirs), sorted(set(ours) - set(theirs))
    # and every parameter of Redis's own (not its vectorset module's: Sluice has no modules)
    assert set(theirs) - set(ours) == {b"vset-force-single-threaded-execution"}
    assert b"metrics-port" not in ours and b"key-load-delay" not in ours
    assert names("metrics-port") == [b"metrics-port"]
    assert sorted(names("*of")) == sorted(names("*of", c=raw_pair[1])) == [b"replicaof",
                                                                          b"slaveof"]
    assert b"metrics-port" not in names("metrics-*", "*-port")


def test_every_default_as_redis(raw_pair: Any) -> None:
    """CONFIG GET *: the same value for every parameter both servers have, but those that
    name the server's own place (its directory, port, pid file, the addresses the test
    servers bind; Sluice's default bind is redis.conf's, README "Quick start")."""
    own = {b"dir", b"port", b"pidfile", b"logfile", b"unixsocket", b"bind"}
    got = []
    for c in raw_pair:
        reply = _parse(c.call("CONFIG", "GET", "*"))
        got.append(reply if isinstance(reply, dict) else dict(zip(reply[::2], reply[1::2],
                                                                   strict=True)))
    ours, theirs = got
    differ = {k: (ours[k], theirs[k]) for k in ours.keys() & theirs.keys()
              if k not in own and ours[k] != theirs[k]}
    assert differ == {}


def test_a_redis_conf_starts_sluice(tmp_path: Path) -> None:
    """The redis.conf Redis ships (with the 8.6.3 tarball the reference is built from):
    every directive it sets is one Sluice takes, so a dev stack's config file starts it."""
    require_redis_server()
    shipped = suite_dir() / "redis.conf"
    if not shipped.exists():
        pytest.fail(f"the reference's redis.conf is missing: {shipped}")
    conf = tmp_path / "redis.conf"
    text = shipped.read_text()
    # where the server runs and listens: ours (it daemonizes and writes its pid file else)
    text = re.sub(r"^(daemonize|pidfile|dir|port|logfile) .*$", "", text, flags=re.M)
    conf.write_text(text + f"\ndir {tmp_path}\nport {free_port()}\n")
    config = Config()
    config.load_file(str(conf))
    assert config.appendfsync == "everysec" and config.supervised == "no"


def test_latency_histogram_as_redis(raw_pair: Any) -> None:
    """The same commands, calls and shape (cumulative counts at Redis's levels) as
    redis-server after the same calls; the times themselves differ."""
    # HdrHistogram's highest equivalent value of 1,024 ns << k (2 significant figures: the
    # range at that value is 8 ns << k), in microseconds: 1, 2, 4, 8, 16, 33, 66, 132 ...
    levels = {((1024 << k) + (8 << k) - 1) // 1000 for k in range(21)}
    seen = []
    for c in raw_pair:
        c.call("CONFIG", "RESETSTAT")
        for argv in (["SET", "a", "b"], ["SET", "c", "d"], ["GET", "a"], ["CLIENT", "ID"],
                     ["CLIENT", "GETNAME"]):
            c.call(*argv)
        got = {}
        for args in ([], ["set", "get"], ["client"], ["client|id", "nosuch", "set"], ["nosuch"]):
            reply = _parse(c.call("LATENCY", "HISTOGRAM", *args))
            pairs = reply.items() if isinstance(reply, dict) else zip(reply[::2], reply[1::2], strict=True)
            entries = {}
            for name, record in pairs:
                record = record if isinstance(record, dict) else dict(zip(record[::2], record[1::2], strict=True))
                cdf = record[b"histogram_usec"]
                cdf = list(cdf.items()) if isinstance(cdf, dict) else list(zip(cdf[::2], cdf[1::2], strict=True))
                assert {level for level, _ in cdf} <= levels, cdf
                counts = [n for _, n in cdf]
                assert counts == sorted(counts) and counts[-1] == record[b"calls"]
                entries[name] = record[b"calls"]
            got[" ".join(args)] = entries
        seen.append(got)
    assert seen[0] == seen[1]
    assert seen[0]["client"] == {b"client|id": 1, b"client|getname": 1}


def _latencystats(c: Any) -> dict[bytes, bytes]:
    text = _parse(c.call("INFO", "latencystats"))
    text = text.data if hasattr(text, "data") else text  # RESP3: a verbatim string
    return dict(line.split(b":", 1) for line in text.split(b"\r\n")
                if line.startswith(b"latency_percentiles_usec_"))


def test_info_latencystats_as_redis(raw_pair: Any) -> None:
    """The same lines (commands, subcommands, percentile names; values are the servers'
    own times) after the same calls, for default and configured percentiles, with
    latency-tracking off and on again, and after CONFIG RESETSTAT (Tcl info's latencystats
    tests); CONFIG SET's errors for bad percentiles, byte for byte."""
    value = re.compile(rb"^(p[0-9.]+=\d+\.\d{3})(,p[0-9.]+=\d+\.\d{3})*$")
    seen = []
    for c in raw_pair:
        steps = []
        c.call("CONFIG", "RESETSTAT")
        c.call("CONFIG", "SET", "latency-tracking", "no")
        c.call("SET", "a", "b")
        steps.append(_latencystats(c))
        c.call("CONFIG", "SET", "latency-tracking", "yes")
        for argv in (["SET", "a", "b"], ["GET", "a"], ["CLIENT", "ID"]):
            c.call(*argv)
        steps.append(_latencystats(c))
        steps.append(c.call("CONFIG", "SET", "latency-tracking-info-percentiles", "0.0 50 100"))
        steps.append(c.call("CONFIG", "GET", "latency-tracking-info-percentiles"))
        steps.append(_latencystats(c))
        for bad in ("10.0 50.0 a", "10.0 50.0 101.0", "-1"):
            steps.append(c.call("CONFIG", "SET", "latency-tracking-info-percentiles", bad))
        steps.append(c.call("CONFIG", "SET", "latency-tracking-info-percentiles", ""))
        steps.append(_latencystats(c))
        c.call("CONFIG", "SET", "latency-tracking-info-percentiles", "50 99 99.9")
        c.call("CONFIG", "RESETSTAT")
        steps.append(_latencystats(c))
        seen.append(steps)
    ours, theirs = seen
    for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        if isinstance(a, dict):
            assert {k: re.sub(rb"=\d+\.\d{3}", b"=_", v) for k, v in a.items()} == \
                {k: re.sub(rb"=\d+\.\d{3}", b"=_", v) for k, v in b.items()}, (i, a, b)
            assert all(value.match(v) or v == b"" for v in a.values()), a
        else:
            assert a == b, (i, a, b)
    assert ours[0] == {}
    assert set(ours[1]) >= {b"latency_percentiles_usec_set", b"latency_percentiles_usec_get",
                            b"latency_percentiles_usec_client|id"}
    assert ours[1][b"latency_percentiles_usec_get"].startswith(b"p50=")


def test_tot_cmds_counts_a_scripts_commands_for_its_caller(raw_pair: Any) -> None:
    """EVAL, the PING it runs, then CLIENT INFO: three commands for the caller's tot-cmds."""
    deltas = []
    for c in raw_pair:
        def tot_cmds(c: Any = c) -> int:
            info = _parse(c.call("CLIENT", "INFO"))
            return int(re.search(rb"tot-cmds=(\d+)", bytes(info)).group(1))  # type: ignore[union-attr]

        before = tot_cmds()
        c.call("EVAL", "redis.call('ping') redis.call('set', 'k', 'v') return 1", "0")
        deltas.append(tot_cmds() - before)
    assert deltas == [4, 4]


def test_debug_object_sees_a_logically_expired_key(debug_servers: tuple[int, int]) -> None:
    """DEBUG OBJECT looks the key up as it is stored (Redis's dbFind): an expired key not yet
    deleted is still described, nothing is deleted or counted; EXISTS then deletes it
    (Tcl scripting "Script delete the expired key")."""
    outcomes = []
    for port in debug_servers:
        c = RawClient(port)
        c.call("FLUSHALL")
        c.call("DEBUG", "SET-ACTIVE-EXPIRE", "0")
        c.call("SET", "key", "value", "PX", "1")
        c.call("DEBUG", "SLEEP", "0.01")  # the server's own clock moves past the expiry
        fields = ("keyspace_hits", "keyspace_misses", "expired_keys")
        before = [_info_value(c, "stats", f) for f in fields]
        described = c.call("DEBUG", "OBJECT", "key")
        counters = [_info_value(c, "stats", f) == was for f, was in zip(fields, before, strict=True)]
        outcomes.append((described[:12], c.call("DBSIZE"), counters,
                         c.call("EVAL", "return redis.call('EXISTS', KEYS[1])", "1", "key"),
                         c.call("DBSIZE")))
        c.call("DEBUG", "SET-ACTIVE-EXPIRE", "1")
        c.close()
    assert outcomes[0] == outcomes[1] == (b"+Value at:0x", b":1\r\n", [True] * 3, b":0\r\n",
                                          b":0\r\n")


def test_list_compress_depth_is_kept(raw_pair: Any) -> None:
    """Redis's list units set it first thing: it must be a known, settable parameter."""
    for c in raw_pair:
        assert c.call("CONFIG", "SET", "list-compress-depth", "2") == b"+OK\r\n"
    replies = [[c.call("CONFIG", "GET", "list-compress-depth"),
                c.call("RPUSH", "lcd", *"abcdefgh"), c.call("LRANGE", "lcd", "1", "-2"),
                c.call("CONFIG", "SET", "list-compress-depth", "0"), c.call("DEL", "lcd")]
               for c in raw_pair]
    assert replies[0] == replies[1]
    assert replies[0][0].endswith(b"\r\n$19\r\nlist-compress-depth\r\n$1\r\n2\r\n")


def test_client_info_fields(raw_pair: Any) -> None:
    """CLIENT INFO and this connection's CLIENT LIST line: Redis's fields in Redis's order."""
    names = []
    for c in raw_pair:
        own = str(_parse(c.call("CLIENT", "ID")))
        names.append([[f.split("=", 1)[0] for f in _parse(reply).decode().split()]
                      for reply in (c.call("CLIENT", "INFO"), c.call("CLIENT", "LIST", "ID", own))])
    assert names[0] == names[1]


def test_the_running_commands_bytes_show_in_its_qbuf(raw_pair: Any) -> None:
    """While a command runs, Redis's query buffer still holds it (it is trimmed once the
    read's requests have run): CLIENT INFO shows qbuf=26 for its own 26 bytes, and an
    idle connection holds no buffer at all (qbuf=0 qbuf-free=0); Tcl introspection's CLIENT
    LIST and querybuf's reusable-buffer test check both."""
    seen = []
    for c in raw_pair:
        idle = RawClient(c.sock.getpeername()[1], 2)
        idle.call("CLIENT", "SETNAME", "idle")
        info = _parse(c.call("CLIENT", "INFO")).decode()
        idle_line = next(line for line in _parse(c.call("CLIENT", "LIST")).decode().splitlines()
                         if "name=idle" in line)
        seen.append((re.search(r"qbuf=\d+", info)[0],  # type: ignore[index]
                     re.search(r"qbuf=\d+ qbuf-free=\d+", idle_line)[0]))  # type: ignore[index]
        idle.close()
    assert seen[0] == seen[1] == ("qbuf=26", "qbuf=0 qbuf-free=0")


def test_client_counters(raw_pair: Any) -> None:
    """tot-net-in, tot-cmds and total_commands_processed count the same things: EXEC's
    commands but not their queueing, not refused commands, the running command's input."""
    seen = []
    for c in raw_pair:
        before = _info_value(c, "stats", "total_commands_processed")
        c.send_raw(b"PING\r\nMULTI\r\nSET k v\r\nGET k\r\nEXEC\r\nNOSUCH\r\nGET\r\n")
        c.read_replies(7)
        info = dict(f.split("=", 1) for f in _parse(c.call("CLIENT", "INFO")).decode().split())
        after = _info_value(c, "stats", "total_commands_processed")
        seen.append((info["tot-net-in"], info["tot-cmds"], int(after) - int(before)))
    assert seen[0] == seen[1]


def _info_value(client: RawClient, section: str, name: str) -> str:
    for line in _parse(client.call("INFO", section)).decode().split("\r\n"):
        if line.startswith(name + ":"):
            return line.split(":", 1)[1]
    raise AssertionError(f"no {name} in INFO {section}")


def test_monitor_lines(sluice: ThreadedServer, reference: Any) -> None:
    outputs = []
    for port in (sluice.port, reference.port):
        mon = socket.create_connection(("127.0.0.1", port), timeout=10)
        mon.sendall(b"MONITOR\r\n")
        assert mon.recv(5) == b"+OK\r\n"
        client = RawClient(port)
        for argv in (["SET", 'q"\\\x00\xff\n\r\t\x07\x08 é', "v"], ["CONFIG", "GET", "hz"],
                     ["AUTH", "a", "b"], ["HELLO", "2", "AUTH", "u", "p", "SETNAME", "n"],
                     ["NOSUCH"], ["GET"], ["MULTI"], ["SET", "a", "1"], ["EXEC"],
                     ["SELECT", "2"], ["PING"], ["SELECT", "0"]):
            client.call(*[a.encode("utf-8") for a in argv])
        client.call("DEL", "q\"", "a")
        lines = _read_until(mon, b'"DEL" "q\\"" "a"\r\n').split(b"\r\n")
        client.close()
        mon.close()
        outputs.append([re.sub(rb"^\+\d+\.\d{6} \[(\d+) [\d.]+:\d+\]", rb"[\1]", line)
                        for line in lines])
    assert outputs[0] == outputs[1]


def test_monitor_shows_a_blocked_command_once(sluice: ThreadedServer, reference: Any) -> None:
    """A blocking command appears when it first runs; serving it (Sluice re-runs it, as Redis
    7.2 does) or timing it out adds no line."""
    outputs = []
    for port in (sluice.port, reference.port):
        mon = socket.create_connection(("127.0.0.1", port), timeout=10)
        mon.sendall(b"MONITOR\r\n")
        assert mon.recv(5) == b"+OK\r\n"
        admin, waiter = RawClient(port), RawClient(port)
        waiter.send("BLPOP", "l", "5")
        wait_until(lambda admin=admin: b"blocked_clients:1\r" in admin.call("INFO", "clients"),
                   what="the BLPOP to block")
        admin.call("RPUSH", "l", "x")
        assert waiter.read_reply() == b"*2\r\n$1\r\nl\r\n$1\r\nx\r\n"
        assert waiter.call("XREAD", "BLOCK", "10", "STREAMS", "s", "$") == b"*-1\r\n"
        admin.call("DEL", "end")
        lines = _read_until(mon, b'"DEL" "end"\r\n').split(b"\r\n")
        for c in (admin, waiter):
            c.close()
        mon.close()
        outputs.append([re.sub(rb"^\+\d+\.\d{6} \[(\d+) [\d.]+:\d+\]", rb"[\1]", line)
                        for line in lines if b'"INFO"' not in line])
    assert outputs[0] == outputs[1]
    assert sum(b'"BLPOP"' in line for line in outputs[0]) == 1


def test_slowlog_entries(raw_pair: Any) -> None:
    ours, theirs = raw_pair
    entries = []
    for c in (ours, theirs):
        c.call("CONFIG", "SET", "slowlog-log-slower-than", "0")
        try:
            c.call("SLOWLOG", "RESET")
            c.call("ECHO", "x" * 300)
            c.call("DEL", *[f"k{i}" for i in range(40)])
            c.call("AUTH", "user", "password")
            c.call("CLIENT", "SETNAME", "slow-one")
            c.call("PING")
        finally:
            c.call("CONFIG", "SET", "slowlog-log-slower-than", "10000")
        got = _parse(c.call("SLOWLOG", "GET", "-1"))
        entries.append([(e[3], e[5]) for e in got])  # arguments and client name
        c.call("CLIENT", "SETNAME", "")
    assert entries[0] == entries[1]


def test_slowlog_has_a_served_blocking_command_once(sluice: ThreadedServer,
                                                     reference: Any) -> None:
    """One entry when it is done, not one per run (Sluice runs a served command twice)."""
    logged = []
    for port in (sluice.port, reference.port):
        admin, waiter = RawClient(port), RawClient(port)
        admin.call("CONFIG", "SET", "slowlog-log-slower-than", "0")
        try:
            admin.call("SLOWLOG", "RESET")
            waiter.send("BLPOP", "l", "5")
            wait_until(lambda admin=admin: b"blocked_clients:1\r" in admin.call("INFO", "clients"),
                       what="the BLPOP to block")
            admin.call("RPUSH", "l", "x")
            waiter.read_reply()
        finally:
            admin.call("CONFIG", "SET", "slowlog-log-slower-than", "10000")
        got = _parse(admin.call("SLOWLOG", "GET", "-1"))
        logged.append([e[3] for e in got if e[3][0] != b"INFO"])
        for c in (admin, waiter):
            c.close()
    assert logged[0] == logged[1]
    assert [argv[0] for argv in logged[0]].count(b"BLPOP") == 1


def test_commandstats_and_errorstats(raw_pair: Any) -> None:
    results = []
    for c in raw_pair:
        c.call("CONFIG", "RESETSTAT")
        c.call("GET")
        c.call("CLIENT", "ID", "x")
        c.call("CLIENT", "NOSUCH")
        c.call("NOSUCH")
        c.call("SET", "k", "v")
        c.call("INCR", "k")
        text = _parse(c.call("INFO", "commandstats", "errorstats")).decode()
        results.append(sorted(re.sub(r"usec=\d+,usec_per_call=[\d.]+", "usec", line)
                              for line in text.split("\r\n") if line and "info" not in line))
    assert results[0] == results[1]


def test_errorstats_stop_at_128_codes(raw_pair: Any) -> None:
    """A script inventing error codes fills errorstats up to 128; the next new code empties
    it (freed in the background: 128 lazyfreed objects) and leaves ERRORSTATS_DISABLED=1,
    after which nothing is counted there until CONFIG RESETSTAT (Tcl info "errorstats: limit
    errors will not increase indefinitely")."""
    script = "return redis.error_reply(string.format('%s my error message', ARGV[1]))"
    results = []
    for c in raw_pair:
        c.call("CONFIG", "RESETSTAT")
        for j in range(1, 131):
            c.call("EVAL", script, "0", str(j))
        # Redis counts the table once its background thread has freed it
        wait_until(lambda c=c: _info_value(c, "memory", "lazyfreed_objects") != "0",
                   what="the table freed")
        stopped = (_parse(c.call("INFO", "errorstats")),
                   _info_value(c, "memory", "lazyfreed_objects"),
                   _info_value(c, "stats", "total_error_replies"))
        c.call("CONFIG", "RESETSTAT")
        c.call("EVAL", script, "0", "again")
        results.append((stopped, _parse(c.call("INFO", "errorstats"))))
    assert results[0] == results[1]
    assert b"errorstat_ERRORSTATS_DISABLED:count=1" in results[0][0][0]
    assert results[0][0][1:] == ("128", "130")


def test_getkeys_of_commands_we_share(raw_pair: Any) -> None:
    ours, theirs = raw_pair
    ours_commands = set(_parse(ours.call("COMMAND", "LIST")))
    cases = [["SET", "a", "b"], ["MSET", "a", "1", "b", "2"], ["GETEX", "a", "PERSIST"],
             ["RENAME", "a", "b"], ["COPY", "a", "b", "DB", "1"], ["LMOVE", "a", "b", "LEFT",
                                                                   "RIGHT"],
             ["BLPOP", "a", "b", "0"], ["LMPOP", "2", "a", "b", "LEFT"], ["LMPOP", "0", "a", "LEFT"],
             ["BLMPOP", "0", "2", "a", "b", "LEFT"], ["OBJECT", "ENCODING", "a"],
             ["XREAD", "COUNT", "2", "STREAMS", "s1", "s2", "0", "0"],
             ["XREADGROUP", "GROUP", "g", "c", "STREAMS", "s1", "0"],
             ["XGROUP", "CREATE", "s", "g", "$"], ["XINFO", "STREAM", "s"], ["XADD", "s", "*", "f", "v"],
             ["EVAL", "s", "2", "a", "b", "x"], ["FCALL", "f", "1", "a"], ["EXISTS", "a", "b", "c"],
             ["SET", "a", "b", "NX", "GET"], ["BITFIELD", "a", "GET", "u8", "0"],
             ["BITFIELD", "a", "SET", "u8", "0", "1"],
             # keynum with keystep 2 (8.4's MSETEX); SET and DELEX conditions read the value
             ["MSETEX", "2", "k1", "v1", "k2", "v2", "EX", "10"],
             ["MSETEX", "3", "k1", "v1", "k2", "v2", "k3", "v3", "KEEPTTL"],
             ["MSETEX", "2", "k1", "v1", "k2"], ["MSETEX", "3", "k1", "v1", "k2", "v2"],
             ["SET", "a", "b", "IFEQ", "b"], ["SET", "a", "b", "EX", "IFDNE"],
             ["SET", "a", "b", "IFNE", "c", "GET"], ["DELEX", "a"], ["DELEX", "a", "IFDEQ", "d"],
             ["DELEX", "a", "bogus", "v"], ["LMPOP", "3", "a", "b", "c", "RIGHT"],
             ["ZUNION", "2", "a", "b"], ["SINTERCARD", "2", "a", "b"]]
    compared = 0
    for argv in cases:
        if argv[0].lower().encode() not in ours_commands:
            continue
        for sub in ("GETKEYS", "GETKEYSANDFLAGS"):
            assert ours.call("COMMAND", sub, *argv) == theirs.call("COMMAND", sub, *argv), argv
        compared += 1
    assert compared >= 3


def _affinity_of_both(args: list[str]) -> list[tuple[set[int], dict[str, str]]]:
    """Start Sluice and redis-server with ``args``; each one's CPUs and its cpulist config."""
    seen = []
    for kind in ("sluice", "redis"):
        if kind == "redis":
            require_redis_server()
        with running(ProcessServer(kind, args)) as server:
            assert server.proc is not None
            config = server.client().config_get("*_cpulist")
            seen.append((os.sched_getaffinity(server.proc.pid), config))
    return seen


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="Linux only")
def test_server_cpulist_pins_the_server_as_in_redis() -> None:
    cpu = max(os.sched_getaffinity(0))
    seen = _affinity_of_both(["--server_cpulist", str(cpu), "--bgsave_cpulist", "0-1023:2"])
    assert seen[0] == seen[1]
    assert seen[0][0] == {cpu}


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="Linux only")
@pytest.mark.parametrize("cpulist", [
    "{lo}-{hi}:{step}",  # a stride that skips all but the first
    "{hi},",  # a trailing comma: the whole list is refused
    "{lo}-{hi}:3,x",  # a good item, then a bad one: refused
    "{hi}:2",  # a stride without a range
    "{lo}-4000000000",  # past CPU_SETSIZE
    "5000",  # no such CPU: the kernel refuses, the server runs unpinned
])
def test_odd_cpulists_have_the_same_effect_as_in_redis(cpulist: str) -> None:
    cpus = os.sched_getaffinity(0)
    lo, hi = min(cpus), max(cpus)
    value = cpulist.format(lo=lo, hi=hi, step=max(hi - lo, 1))
    ours, theirs = _affinity_of_both(["--server_cpulist", value])
    assert ours == theirs, value
