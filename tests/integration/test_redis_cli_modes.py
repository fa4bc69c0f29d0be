"""redis-cli's non-interactive modes against Sluice, compared with a real redis-server.

Each invocation runs against both servers, starting from an empty keyspace with the same data,
and the output (stdout, stderr, exit status) must be the same where it is deterministic:
``--pipe`` mass insertion (the protocol and inline forms), ``-3`` RESP3 output of HELLO and
XINFO, stdin that is not a terminal (errors printed on stdout), ``--raw`` / ``--no-raw`` /
``--csv`` XRANGE, ``--scan --pattern`` (keys compared as sets: SCAN order is the server's), and
``-r 3 -i 0``. redis-cli 7.0 is the Debian redis-tools one that ``make test`` installs.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import redis

from tests.support import ProcessServer, ThreadedServer

pytestmark = [pytest.mark.timeout(60), pytest.mark.differential]

REDIS_CLI = shutil.which("redis-cli") or ""
# XINFO STREAM fields of current Redis (8.x idempotent production) that 7.0 does not report.
IDMP_FIELDS = ("idmp-duration", "idmp-maxsize", "pids-tracked", "iids-tracked", "iids-added",
               "iids-duplicates")


@dataclass(frozen=True)
class Run:
    status: int
    out: str
    err: str


@pytest.fixture(scope="module", autouse=True)
def _need_redis_cli() -> None:
    if not REDIS_CLI:
        if os.environ.get("CI") == "true":
            pytest.fail("redis-cli is required (make test installs redis-tools)")
        pytest.skip("redis-cli not installed")


@pytest.fixture
def servers(sluice: ThreadedServer, reference: ProcessServer) -> Iterator[tuple[int, int]]:
    """(sluice port, redis port), both empty before and after the test."""
    ports = (sluice.port, reference.port)
    for port in ports:
        redis.Redis(port=port).flushall()
    yield ports
    for port in ports:
        redis.Redis(port=port).flushall()


def cli(port: int, *args: str, stdin: bytes | None = None) -> Run:
    done = subprocess.run([REDIS_CLI, "-p", str(port), *args], input=stdin, capture_output=True,
                          timeout=40, env={**os.environ, "HOME": "/nonexistent"})
    return Run(done.returncode, done.stdout.decode("utf-8", "replace"),
               done.stderr.decode("utf-8", "replace"))


def both(ports: tuple[int, int], *args: str, stdin: bytes | None = None) -> Run:
    """Run on Sluice and on redis-server; the runs must be identical. Returns Sluice's."""
    ours, theirs = (cli(port, *args, stdin=stdin) for port in ports)
    assert ours == theirs, args
    return ours


def load(ports: tuple[int, int], *commands: tuple[str | bytes, ...]) -> None:
    for port in ports:
        client = redis.Redis(port=port)
        for command in commands:
            client.execute_command(*command)


def resp(*args: str) -> bytes:
    parts = [a.encode() for a in args]
    return b"*%d\r\n" % len(parts) + b"".join(b"$%d\r\n%s\r\n" % (len(p), p) for p in parts)


def mass_insertion(n: int, errors_at: tuple[int, ...], inline: bool) -> bytes:
    """``n`` commands as the Redis "mass insertion" page generates them."""
    out = bytearray()
    for i in range(n):
        if i in errors_at:
            argv: tuple[str, ...] = ("INCR", "key:0")  # "value 0": not an integer
        else:
            argv = [("SET", f"key:{i}", f"value{i}"), ("INCR", "counter"),
                    ("RPUSH", "list", str(i)), ("XADD", "events", "*", "n", str(i))][i % 4]
        out += (" ".join(argv).encode() + b"\r\n") if inline else resp(*argv)
    return bytes(out)


@pytest.mark.parametrize("inline", [False, True], ids=["protocol", "inline"])
def test_pipe_mass_insertion(servers: tuple[int, int], inline: bool) -> None:
    data = mass_insertion(10_000, errors_at=(5001, 7001), inline=inline)
    run = both(servers, "--pipe", stdin=data)
    assert run.out == ("All data transferred. Waiting for the last reply...\n"
                       "Last reply received from server.\n"
                       "errors: 2, replies: 10000\n")
    # Error replies are printed on stderr, and any error makes the exit status 1.
    assert run.err == "ERR value is not an integer or out of range\n" * 2
    assert run.status == 1
    for port in servers:
        r = redis.Redis(port=port)
        assert (r.dbsize(), r.get("counter"), r.llen("list"), r.xlen("events")) == (
            2503, b"2498", 2500, 2500)


def test_pipe_clean_run_exits_zero(servers: tuple[int, int]) -> None:
    run = both(servers, "--pipe", stdin=b"".join(resp("SET", f"k{i}", "v") for i in range(500)))
    assert run.out.endswith("errors: 0, replies: 500\n")
    assert (run.status, run.err) == (0, "")


def test_resp3_hello(servers: tuple[int, int]) -> None:
    # The connection id is the only difference: masked in each output format.
    mask = re.compile(r'("?id"?(?: => \(integer\) |,| |\n\s*\d+\) \(integer\) ))\d+')
    for args in (("-3", "--no-raw", "HELLO"), ("-3", "HELLO"), ("-3", "--csv", "HELLO"),
                 ("-3", "--no-raw", "HELLO", "2"), ("--no-raw", "HELLO", "3")):
        ours, theirs = (cli(port, *args) for port in servers)
        assert ours.status == theirs.status == 0
        # Up to the modules list: redis-server 8.6 lists its built-in vectorset module.
        assert (mask.sub(r"\1N", ours.out).partition("modules")[0]
                == mask.sub(r"\1N", theirs.out).partition("modules")[0]), args
        assert mask.sub(r"\1N", ours.out) != ours.out, f"id not masked in {ours.out!r}"
    assert cli(servers[0], "-3", "--no-raw", "HELLO").out.splitlines()[:3] == [
        '1# "server" => "redis"', '2# "version" => "8.6.3"', '3# "proto" => (integer) 3']


def without_idmp(text: str) -> str:
    """XINFO STREAM output minus the 8.x fields, with map entry numbers taken out."""
    keep = [line for line in text.splitlines()
            if not re.match(rf'\s*(\d+# )?"?({"|".join(IDMP_FIELDS)})"? ', line)]
    return "\n".join(re.sub(r"^\s*\d+# ", "# ", line) for line in keep)


def test_resp3_xinfo_stream(servers: tuple[int, int]) -> None:
    load(servers, ("XADD", "s", "1-1", "temp", "19.8", "sensor", "a b"),
         ("XADD", "s", "2-0", "temp", "20", "sensor", "b"),
         ("XGROUP", "CREATE", "s", "g", "0"),
         ("XREADGROUP", "GROUP", "g", "alice", "COUNT", "1", "STREAMS", "s", ">"))
    for args in (("-3", "--no-raw", "XINFO", "STREAM", "s"), ("-3", "XINFO", "STREAM", "s")):
        ours, theirs = (cli(port, *args) for port in servers)
        assert (ours.status, ours.err) == (theirs.status, theirs.err) == (0, "")
        # Current Redis's idempotency fields are there; the rest is what Redis 7.0 prints.
        for field in IDMP_FIELDS:
            assert f"{field}" in ours.out
        assert without_idmp(ours.out) == without_idmp(theirs.out), args
    out = cli(servers[0], "-3", "--no-raw", "XINFO", "STREAM", "s").out
    assert '# "first-entry" => \n    1) "1-1"\n    2) 1) "temp"\n       2) "19.8"' in out
    # Maps nested in arrays: XINFO GROUPS and CONSUMERS (idle times masked).
    assert both(servers, "-3", "--no-raw", "XINFO", "GROUPS", "s").out == (
        '1) 1# "name" => "g"\n'
        '   2# "consumers" => (integer) 1\n'
        '   3# "pending" => (integer) 1\n'
        '   4# "last-delivered-id" => "1-1"\n'
        '   5# "entries-read" => (integer) 1\n'
        '   6# "lag" => (integer) 1\n')
    both(servers, "-3", "--no-raw", "XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", ">")
    both(servers, "-3", "--no-raw", "XPENDING", "s", "g")
    both(servers, "-3", "--no-raw", "XREAD", "STREAMS", "s", "0")


def test_stdin_not_a_tty_prints_errors_on_stdout(servers: tuple[int, int]) -> None:
    script = (b"SET a 1\nINCR a\nLPUSH a x\nNOSUCH cmd\nXADD s 1-0 f v\nXADD s 1-0 f v\n"
              b"GET a\nXRANGE s - +\n\"SET\" \"b c\" \"d\\x41\"\nGET \"b c\"\nBLPOP nolist 0.01\n")
    run = both(servers, stdin=script)
    assert run.out == (
        "OK\n2\nWRONGTYPE Operation against a key holding the wrong kind of value\n\n"
        "ERR unknown command 'NOSUCH', with args beginning with: 'cmd' \n\n"
        "1-0\nERR The ID specified in XADD is equal or smaller than the target stream top item"
        "\n\n2\n1-0\nf\nv\nOK\ndA\n\n")
    assert (run.status, run.err) == (0, "")
    # The same script with --no-raw: the (error), (integer) and (nil) decorations.
    run = both(servers, "--no-raw", stdin=b"FLUSHALL\n" + script)
    assert "(error) WRONGTYPE Operation against a key holding the wrong kind of value\n" in run.out
    assert run.out.endswith("(nil)\n")
    # -x: the last argument read from stdin, byte for byte.
    assert both(servers, "-x", "SET", "k", stdin=b"hello\nworld").out == "OK\n"
    assert both(servers, "GET", "k").out == "hello\nworld\n"


def test_xrange_raw_no_raw_and_csv(servers: tuple[int, int]) -> None:
    load(servers, ("XADD", "s", "1-1", "temp", "19.8", "name", "a b"),
         ("XADD", "s", "2-0", "bin", b"\x01\xff\""))
    assert both(servers, "--no-raw", "XRANGE", "s", "-", "+").out == (
        '1) 1) "1-1"\n'
        '   2) 1) "temp"\n'
        '      2) "19.8"\n'
        '      3) "name"\n'
        '      4) "a b"\n'
        '2) 1) "2-0"\n'
        '   2) 1) "bin"\n'
        '      2) "\\x01\\xff\\""\n')
    raw = both(servers, "--raw", "XRANGE", "s", "-", "+")
    assert raw.out == '1-1\ntemp\n19.8\nname\na b\n2-0\nbin\n\x01\ufffd"\n'
    both(servers, "--csv", "XRANGE", "s", "-", "+")
    assert both(servers, "--no-raw", "XRANGE", "s", "5", "+").out == "(empty array)\n"
    assert both(servers, "--raw", "XRANGE", "s", "5", "+").out == "\n"
    assert both(servers, "--no-raw", "XREVRANGE", "s", "+", "-", "COUNT", "1").out.startswith(
        '1) 1) "2-0"\n')


def test_scan_pattern(servers: tuple[int, int]) -> None:
    for port in servers:
        pipe = redis.Redis(port=port).pipeline(transaction=False)
        for i in range(300):
            pipe.set(f"user:{i}", "x").set(f"other:{i}", "x")
        pipe.xadd("user:events", {"a": "b"}).rpush("user:queue", "x")
        pipe.execute()
    expected = {f"user:{i}" for i in range(300)} | {"user:events", "user:queue"}
    # (redis-cli 7.0 has no --count for --scan; -i 0 is its only other scan option.)
    for args in (("--scan", "--pattern", "user:*"), ("--scan", "--pattern", "user:*", "-i", "0")):
        ours, theirs = (cli(port, *args) for port in servers)
        assert (ours.status, ours.err) == (theirs.status, theirs.err) == (0, "")
        assert sorted(ours.out.splitlines()) == sorted(theirs.out.splitlines())
        assert set(ours.out.splitlines()) == expected
        assert len(ours.out.splitlines()) == len(expected), "a key reported twice"
    assert len(cli(servers[0], "--scan").out.splitlines()) == 602
    assert cli(servers[0], "--scan", "--pattern", "user:1?9").out.count("\n") == 10


def test_repeat_with_zero_interval(servers: tuple[int, int]) -> None:
    assert both(servers, "-r", "3", "-i", "0", "INCR", "x").out == "1\n2\n3\n"
    assert both(servers, "--no-raw", "-r", "2", "-i", "0", "INCR", "x").out == (
        "(integer) 4\n(integer) 5\n")
    for port in servers:  # generated IDs follow each server's clock: checked one by one
        out = cli(port, "-r", "2", "-i", "0", "XADD", "s", "*", "n", "1").out
        first, second = (tuple(map(int, i.split("-"))) for i in out.split())
        assert first < second
    # Errors on stdout, each followed by an empty line (raw output, not a terminal).
    assert both(servers, "-r", "3", "-i", "0", "LPUSH", "x", "y").out == (
        "WRONGTYPE Operation against a key holding the wrong kind of value\n\n" * 3)
