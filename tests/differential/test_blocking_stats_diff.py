"""Blocking commands in INFO commandstats and errorstats, against redis-server.

A blocking command is one call, counted when it is done: served (Sluice runs it again, as
Redis 7.2 does), timed out, or ended by CLIENT UNBLOCK (ERROR also counts as failed and in
errorstats, and CLIENT UNBLOCK as failed for having sent an error). Blocking, or a re-run that
blocks again, is not a call; a client that disconnects while blocked is not counted at all.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.support import ProcessServer, RawClient, ThreadedServer, command_counts, wait_until

pytestmark = pytest.mark.differential


def _blocked(admin: RawClient, n: int) -> None:
    wait_until(lambda: b"blocked_clients:%d\r" % n in admin.call("INFO", "clients"),
               what=f"{n} blocked clients")


def _conversation(port: int) -> tuple[list[bytes], dict[str, str], list[str]]:
    admin = RawClient(port)
    admin.call("FLUSHALL")
    admin.call("CONFIG", "RESETSTAT")
    a, b, gone = RawClient(port), RawClient(port), RawClient(port)
    a_id = int(a.call("CLIENT", "ID")[1:-2])
    replies = [a.call("BLPOP", "l", "0.01")]  # times out
    a.send("BLPOP", "l", "0")
    _blocked(admin, 1)
    admin.call("RPUSH", "l", "x")  # served
    replies.append(a.read_reply())
    admin.call("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    for client, name in ((a, "c1"), (b, "c2")):
        client.send("XREADGROUP", "GROUP", "g", name, "BLOCK", "0", "STREAMS", "s", ">")
    _blocked(admin, 2)
    admin.call("XADD", "s", "1-1", "f", "v")  # serves c1; c2 waits on
    replies.append(a.read_reply())
    admin.call("XADD", "s", "1-2", "f", "v")
    replies.append(b.read_reply())
    a.send("BLMOVE", "l", "d", "LEFT", "RIGHT", "0")
    _blocked(admin, 1)
    replies.append(admin.call("CLIENT", "UNBLOCK", str(a_id)))  # as a timeout
    replies.append(a.read_reply())
    a.send("XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    _blocked(admin, 1)
    replies.append(admin.call("CLIENT", "UNBLOCK", str(a_id), "ERROR"))
    replies.append(a.read_reply())
    gone.send("BRPOP", "l", "0")
    _blocked(admin, 1)
    gone.close()  # never answered: not a call
    _blocked(admin, 0)
    errors = re.findall(r"errorstat_[^\r]*", admin.call("INFO", "errorstats").decode())
    for client in (a, b, admin):
        client.close()
    counts = command_counts(port)
    del counts["info"]  # polled until the clients block: any number of times
    return replies, counts, errors


def test_blocking_commands_are_counted_once_when_done(sluice: ThreadedServer,
                                                      reference: ProcessServer) -> None:
    ours, theirs = _conversation(sluice.port), _conversation(reference.port)
    # Two places where 7.0.15 differed and current Redis agrees with us: a BLMOVE unblocked by
    # CLIENT UNBLOCK ... TIMEOUT got its timeout reply and is not failed; a client freed while
    # blocked is not counted (Redis PR #11970: "when a blocked client is freed, the call and
    # duration are always discarded").
    assert ours == theirs
    counts: dict[str, Any] = ours[1]
    assert counts["blpop"].startswith("calls=2,") and counts["xreadgroup"].startswith("calls=2,")
    assert "brpop" not in counts  # the one whose client went away
    assert counts["xread"] == "calls=1,rejected_calls=0,failed_calls=1"
