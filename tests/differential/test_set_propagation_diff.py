"""What set and sorted-set writes log to the AOF: Sluice against redis-server 8.6.3.

Both servers run with ``appendonly yes``; after each command, the commands appended to each
one's incremental AOF file are compared. Redis logs effects, not requests where they
differ: SPOP as the SREMs of what it popped (or DEL when it took everything), ZMPOP and the
blocking pops as ZPOPMIN/ZPOPMAX with the count they popped, BZPOPMIN as ZPOPMIN; reads
(SRANDMEMBER, ZRANDMEMBER, SINTERCARD ...) and writes that change nothing log nothing; STORE
commands log themselves. Several effects of one command are written as a transaction
(MULTI ... EXEC), as Redis 7+ propagates them. The members an SPOP logs are random, so for
SPOP the SREMs are checked against the members it returned.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sluice.storage.aof import parse_commands
from tests.differential.test_sets_diff import parse
from tests.support import ProcessServer, RawClient, require_redis_server, wait_until

pytestmark = [pytest.mark.differential, pytest.mark.timeout(120)]

SETUP = [("SADD", "st", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12"),
         ("SADD", "sl", "a", "b", "c"), ("ZADD", "zz", "1", "a", "2", "b", "3", "c", "4", "d")]

CASES: list[tuple[Any, ...]] = [
    ("SADD", "st", "1", "99"), ("SADD", "st", "1"), ("SREM", "st", "1", "nope"),
    ("SMOVE", "st", "sl", "2"), ("SMOVE", "st", "sl", "nope"),
    ("SINTERSTORE", "d", "st", "sl"), ("SUNIONSTORE", "d", "st", "sl"),
    ("SDIFFSTORE", "d", "st", "st"), ("SRANDMEMBER", "st", "3"), ("SINTERCARD", "1", "st"),
    ("SPOP", "sl", "5"),  # everything: DEL
    ("ZADD", "zz", "5", "e"), ("ZADD", "zz", "NX", "9", "a"), ("ZINCRBY", "zz", "0.5", "a"),
    ("ZREM", "zz", "a", "nope"), ("ZREMRANGEBYSCORE", "zz", "2", "3"),
    ("ZPOPMIN", "zz"), ("ZPOPMAX", "zz", "10"), ("ZADD", "zz", "1", "a", "2", "b", "3", "c"),
    ("ZMPOP", "2", "nope", "zz", "MIN", "COUNT", "2"), ("ZMPOP", "1", "zz", "MAX", "COUNT", "9"),
    ("ZADD", "zz", "1", "a", "2", "b"), ("BZPOPMIN", "nope", "zz", "0"),
    ("BZMPOP", "0", "1", "zz", "MAX", "COUNT", "5"), ("ZADD", "zz", "1", "a", "2", "b"),
    ("ZUNIONSTORE", "u", "2", "zz", "st", "WEIGHTS", "2", "1"),
    ("ZRANGESTORE", "u", "zz", "0", "0"), ("ZINTERSTORE", "u", "1", "nope"),
    ("ZRANDMEMBER", "zz", "2"), ("ZRANGE", "zz", "0", "-1"),
]


class AofSide:
    """One server with an AOF, and the commands its incremental file has gained."""

    def __init__(self, kind: str, tmp: Path) -> None:
        d = tmp / kind
        d.mkdir()
        self.dir = d
        self.server = ProcessServer(kind, ["--dir", str(d), "--appendonly", "yes",
                                           "--appendfsync", "always"], cwd=str(d)).start()
        self.client = RawClient(self.server.port)
        wait_until(lambda: self._incr() is not None, what="the AOF's incremental file")
        self.seen = len(self._commands())

    def _incr(self) -> Path | None:
        files = sorted((self.dir / "appendonlydir").glob("*.incr.aof"))
        return files[-1] if files else None

    def _commands(self) -> list[list[bytes]]:
        path = self._incr()
        assert path is not None
        return [argv for argv, _ in parse_commands(path.read_bytes())]

    def logged(self) -> list[list[bytes]]:
        """The commands logged since the last call, SELECTs left out."""
        commands = self._commands()
        new, self.seen = commands[self.seen:], len(commands)
        return [c for c in new if c[0].upper() != b"SELECT"]

    def close(self) -> None:
        self.client.close()
        self.server.stop()


@pytest.fixture(scope="module")
def sides(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[AofSide, AofSide]]:
    require_redis_server()
    tmp = tmp_path_factory.mktemp("propagation")
    pair = AofSide("sluice", tmp), AofSide("redis", tmp)
    for side in pair:
        for argv in SETUP:
            side.client.call(*argv)
        side.logged()
    yield pair
    for side in pair:
        side.close()


def test_writes_log_what_redis_logs(sides: tuple[AofSide, AofSide]) -> None:
    for argv in CASES:
        replies = [side.client.call(*argv) for side in sides]
        ours, theirs = (side.logged() for side in sides)
        if argv[0] == "SPOP":  # all of a set: in each server's own order
            assert sorted(parse(replies[0])) == sorted(parse(replies[1])), argv
        elif argv[0] not in ("SRANDMEMBER", "ZRANDMEMBER"):
            assert replies[0] == replies[1], argv
        assert ours == theirs, argv


def test_spop_logs_the_srems_of_what_it_popped(sides: tuple[AofSide, AofSide]) -> None:
    for side in sides:
        side.client.call("SADD", "p", *[f"m{i}" for i in range(3000)])
        side.logged()
    for argv in (("SPOP", "p"), ("SPOP", "p", "1500"), ("SPOP", "p", "1490")):
        shapes = []
        for side in sides:
            popped = parse(side.client.call(*argv))
            popped = popped if isinstance(popped, list) else [popped]
            logged = side.logged()
            if len(logged) > 1:  # several effects of one command: one transaction
                assert logged[0] == [b"MULTI"] and logged[-1] == [b"EXEC"]
                logged = logged[1:-1]
            assert all(c[:2] == [b"SREM", b"p"] for c in logged)
            assert [len(c) - 2 for c in logged] == [min(1024, len(popped) - i)
                                                   for i in range(0, len(popped), 1024)]
            assert sorted(m for c in logged for m in c[2:]) == sorted(popped)
            shapes.append(len(logged))
        assert shapes[0] == shapes[1]
