"""ACL against redis-server 7.0.15: SETUSER errors, GETUSER / LIST output, ACL CAT, DRYRUN, and
every denial message, in RESP2 and RESP3.

Sluice follows the newest documented Redis (7.2+) where 7.0 differs, and the comparisons
normalise exactly those differences, nothing else:

* NOPERM texts: 7.0 "this user has no permissions to run the 'x' command" / "... access one of
  the keys used as arguments"; 7.2+ "User u has no permissions to run the 'x' command" /
  "No permissions to access a key". DRYRUN: "This user ..." vs "User u ...".
* the ``sanitize-payload`` flag, shown by 7.2+ in ACL LIST and GETUSER flags.
* command rules: 7.0 prints a recomputed rule set, 7.2+ the rules in the order given. Output
  is compared only for rule sets both print the same way; everything else is compared by
  effect (DRYRUN over a matrix of commands).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import hiredis
import pytest

from tests.support import (
    ProcessServer,
    RawClient,
    ThreadedServer,
    require_redis_server,
    wait_until,
)

pytestmark = pytest.mark.differential


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[ThreadedServer, ProcessServer]]:
    require_redis_server()
    ours = ThreadedServer().start()
    theirs = ProcessServer("redis").start()
    yield ours, theirs
    ours.stop()
    theirs.stop()


class Pair:
    """The same commands to both servers; replies parsed, normalised and compared."""

    def __init__(self, ours: ThreadedServer, theirs: ProcessServer, protocol: int) -> None:
        self.protocol = protocol
        self.a = RawClient(ours.port, protocol)
        self.b = RawClient(theirs.port, protocol)
        self.clients = [(self.a, self.b)]
        self.users: set[str] = set()

    def raw(self, *cmd: Any) -> tuple[bytes, bytes]:
        return self.a.call(*cmd), self.b.call(*cmd)

    def same(self, *cmd: Any) -> Any:
        """Both replies, normalised, must be equal; returns ours (parsed)."""
        ours, theirs = self.raw(*cmd)
        if ours == theirs:
            return parse(ours, self.protocol)
        pa, pb = norm(parse(ours, self.protocol)), norm(parse(theirs, self.protocol))
        assert pa == pb, f"{cmd}: sluice {ours!r} != redis {theirs!r}"
        return pa

    def setuser(self, name: str, *rules: str) -> Any:
        self.users.add(name)
        return self.same("ACL", "SETUSER", name, *rules)

    def login(self, user: str, password: str) -> tuple[RawClient, RawClient]:
        a = RawClient(self.a.sock.getpeername()[1], self.protocol)
        b = RawClient(self.b.sock.getpeername()[1], self.protocol)
        for c in (a, b):
            c.call("AUTH", user, password)
        self.clients.append((a, b))
        return a, b

    def close(self) -> None:
        if self.users:
            self.raw("ACL", "DELUSER", *self.users)
        for a, b in self.clients:
            a.close()
            b.close()


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def pair(request: pytest.FixtureRequest, servers: tuple[ThreadedServer, ProcessServer]
         ) -> Iterator[Pair]:
    p = Pair(*servers, request.param)
    yield p
    p.close()


def parse(raw: bytes, protocol: int) -> Any:
    reader = hiredis.Reader(notEnoughData=None)
    reader.feed(raw)
    got = reader.gets()
    if isinstance(got, hiredis.ReplyError):
        return ("error", str(got).encode())
    return got


_NORMS = [
    (rb"NOPERM this user has no permissions to run the '([^']*)' command", rb"NOPERM <cmd \1>"),
    (rb"NOPERM User \S+ has no permissions to run the '([^']*)' command", rb"NOPERM <cmd \1>"),
    (rb"NOPERM this user has no permissions to access one of the keys used as arguments",
     b"NOPERM <key>"),
    (rb"NOPERM No permissions to access a key", b"NOPERM <key>"),
    (rb"NOPERM this user has no permissions to access one of the channels used as arguments",
     b"NOPERM <channel>"),
    (rb"NOPERM No permissions to access a channel", b"NOPERM <channel>"),
    (rb"^(This user|User \S+) has no permissions", b"<who> has no permissions"),
    (rb" sanitize-payload", b""),
    (rb"HELLO <proto> AUTH", b"HELLO AUTH"),  # 7.0 -> 7.2+ NOAUTH wording
    (rb"^    Prints this help\.$", b"    Print this help."),  # 7.0 -> 7.2+ help footer
]


def norm(value: Any) -> Any:
    if isinstance(value, bytes):
        for pat, rep in _NORMS:
            value = re.sub(pat, rep, value)
        return value
    if isinstance(value, tuple):
        return tuple(norm(v) for v in value)
    if isinstance(value, list):
        return [norm(v) for v in value if v != b"sanitize-payload"]
    if isinstance(value, dict):
        return {norm(k): norm(v) for k, v in value.items()}
    return value


# -- SETUSER errors ----------------------------------------------------------------------------

BAD_RULES = [
    ["%RR~a"], ["%~a"], ["%X~a"], ["~a b"], ["~*", "~a"], ["allkeys", "~a"], ["&*", "&a"],
    ["allchannels", "&b"], ["+nosuch"], ["+@nosuch"], ["-nosuch"], ["-@nosuch"],
    ["+client|nosuch"], ["+client|"], ["+get|"], ["-select|0"], ["+client|id|x"],
    ["#abc"], ["#" + "A" * 64], ["!" + "a" * 63], ["<nosuchpass"], ["!" + "0" * 64],
    ["(+get ~a"], ["(on)"], ["(>pass)"], ["(+get", "~a"], ["bogus"], ["on", "bogus", "+get"],
    ["(+get) ()"], ["+@all", "-@nosuch"], ["&a b"], ["~\x00"], ["+client|list|x"],
]


@pytest.mark.parametrize("rules", BAD_RULES, ids=[" ".join(r) for r in BAD_RULES])
def test_setuser_errors(pair: Pair, rules: list[str]) -> None:
    pair.setuser("bad", *rules)
    pair.same("ACL", "GETUSER", "bad")


def test_setuser_username_with_space(pair: Pair) -> None:
    pair.same("ACL", "SETUSER", "a b", "on")
    pair.same("ACL", "SETUSER", "a\x00b", "on")


# -- GETUSER / LIST output ---------------------------------------------------------------------

SAME_OUTPUT = [
    [], ["on"], ["off"], ["on", "nopass"], ["on", ">p1", ">p2", ">p1"], ["on", ">p1", "<p1"],
    ["nopass", ">x"], [">x", "resetpass"], ["+@all"], ["allcommands"], ["nocommands"],
    ["-@all"], ["+@all", "-get"], ["+@all", "-@dangerous"], ["-@all", "+get"],
    ["~k*"], ["%R~r*", "%W~w*"], ["%R~a", "%W~a"], ["%RW~a"], ["%wr~b", "%R~c"], ["~a", "~a"],
    ["allkeys"], ["~*"], ["~a", "resetkeys", "~b"], ["&ch*"], ["&a", "&a", "&b"],
    ["allchannels"], ["&x", "resetchannels"], ["+@read"], ["-@all", "+@read"],
    ["+@all", "-@write"], ["(+get ~a)"], ["(+get ~a)", "(+set ~b)", "clearselectors"],
    ["(~a +get)", "(%R~b +@read)"], ["reset"], ["on", "+get", "reset"],
    ["skip-sanitize-payload", "sanitize-payload"], [""],
    ["#" + "a" * 64, "!" + "a" * 64],
]


@pytest.mark.parametrize("rules", SAME_OUTPUT, ids=[" ".join(r) or "none" for r in SAME_OUTPUT])
def test_getuser_and_list(pair: Pair, rules: list[str]) -> None:
    pair.setuser("u1", *rules)
    pair.same("ACL", "GETUSER", "u1")
    pair.same("ACL", "LIST")
    pair.same("ACL", "USERS")


def test_getuser_missing_and_default(pair: Pair) -> None:
    pair.same("ACL", "GETUSER", "nosuchuser")
    pair.same("ACL", "GETUSER", "default")
    pair.same("ACL", "WHOAMI")


def test_skip_sanitize_payload_flag(pair: Pair) -> None:
    pair.setuser("u2", "skip-sanitize-payload", "on")
    ours, theirs = pair.raw("ACL", "GETUSER", "u2")
    assert b"skip-sanitize-payload" in ours and b"skip-sanitize-payload" in theirs


# -- DRYRUN: permissions by effect -------------------------------------------------------------

USERS = {
    "reader": ["on", "nopass", "-@all", "+@read", "~*"],
    "writer": ["on", "nopass", "+@all", "-@read", "~w:*"],
    "rk": ["on", "nopass", "+@all", "%R~r:*", "%W~w:*", "~rw:*"],
    "noadmin": ["on", "nopass", "+@all", "-@admin", "-@dangerous", "allkeys"],
    "sel": ["on", "nopass", "-@all", "+get", "~a:*", "(+set ~b:*)", "(+@string %R~c:*)"],
    "firstarg": ["on", "nopass", "-@all", "+select|0", "+client|getname", "+client|id"],
    "conn": ["on", "nopass", "-@all", "+@connection", "-ping"],
    "kp": ["on", "nopass", "+@all", "~a[bc]?:*", "~x\\*y", "~[^q]*z"],
}

DRY = [
    ["get", "x"], ["get", "r:1"], ["get", "w:1"], ["get", "rw:1"], ["set", "r:1", "v"],
    ["set", "w:1", "v"], ["set", "rw:1", "v"], ["set", "a:1", "v"], ["set", "b:1", "v"],
    ["get", "a:1"], ["get", "b:1"], ["get", "c:1"], ["set", "c:1", "v"], ["append", "c:1", "v"],
    ["strlen", "c:1"], ["mget", "r:1", "w:1"], ["mget", "rw:1", "r:2"], ["mset", "w:1", "v", "r:1", "v"],
    ["del", "w:1"], ["del", "r:1"], ["exists", "r:1"], ["exists", "x"], ["type", "w:1"],
    ["rename", "rw:1", "w:1"], ["copy", "r:1", "w:1"], ["lpush", "w:l", "v"], ["lrange", "r:l", "0", "1"],
    ["select", "0"], ["select", "1"], ["ping"], ["echo", "x"], ["client", "id"],
    ["client", "getname"], ["client", "list"], ["flushall"], ["dbsize"], ["keys", "*"],
    ["config", "get", "port"], ["acl", "whoami"], ["acl", "list"], ["info"], ["auth", "a", "b"],
    ["hello"], ["get", "abq:1"], ["get", "acc:1"], ["get", "ab:1"], ["get", "x*y"], ["get", "xzy"],
    ["get", "az"], ["get", "qz"], ["get", "qqz"], ["multi"], ["exec"], ["watch", "r:1"],
]


@pytest.fixture
def dry_users(pair: Pair) -> Pair:
    for name, rules in USERS.items():
        pair.setuser(name, *rules)
    return pair


@pytest.mark.parametrize("user", list(USERS))
def test_dryrun_matrix(dry_users: Pair, user: str) -> None:
    ours = _all_commands(dry_users.a, dry_users.protocol)
    for argv in DRY:
        if argv[0].encode() not in ours:
            continue  # a command family Sluice doesn't have yet
        dry_users.same("ACL", "DRYRUN", user, *argv)


def test_dryrun_errors(dry_users: Pair) -> None:
    dry_users.same("ACL", "DRYRUN", "nouser", "get", "x")
    dry_users.same("ACL", "DRYRUN", "reader", "nocmd", "x")
    dry_users.same("ACL", "DRYRUN", "reader", "get")
    dry_users.same("ACL", "DRYRUN", "reader", "get", "a", "b")
    dry_users.same("ACL", "DRYRUN", "reader", "client", "nosuch")
    dry_users.same("ACL", "DRYRUN", "reader", "client")
    dry_users.same("ACL", "DRYRUN", "reader")


# -- denials over a live connection ------------------------------------------------------------


def test_denials_on_the_wire(pair: Pair) -> None:
    pair.setuser("alice", "on", ">pw", "-@all", "+get", "+set", "+multi", "+exec", "~k:*",
                 "+acl|whoami", "+client|id")
    a, b = pair.login("alice", "pw")

    def both(*cmd: str) -> None:
        ours, theirs = a.call(*cmd), b.call(*cmd)
        assert norm(parse(ours, pair.protocol)) == norm(parse(theirs, pair.protocol)), cmd

    for cmd in (["GET", "k:1"], ["GET", "other"], ["SET", "other", "v"], ["DEL", "k:1"],
                ["ACL", "WHOAMI"], ["ACL", "LIST"], ["CLIENT", "ID"], ["CLIENT", "LIST"],
                ["PING"], ["MULTI"], ["GET", "other"], ["SET", "k:1", "v"], ["EXEC"],
                ["MULTI"], ["SET", "k:1", "v"], ["EXEC"], ["NOSUCH"], ["GET"]):
        if cmd == ["CLIENT", "ID"]:
            assert parse(a.call(*cmd), pair.protocol) and parse(b.call(*cmd), pair.protocol)
            continue
        both(*cmd)


def test_auth_errors(pair: Pair) -> None:
    pair.same("AUTH", "nopassconfigured")
    pair.same("AUTH", "nouser", "x")
    pair.same("AUTH", "a", "b", "c")
    pair.setuser("offuser", "off", ">pw", "+@all")
    pair.same("AUTH", "offuser", "pw")
    pair.same("AUTH", "offuser", "bad")
    pair.same("HELLO", "2", "AUTH", "offuser", "pw")
    pair.same("HELLO", "2", "AUTH", "nouser", "pw", "SETNAME", "x")
    pair.same("HELLO", "2", "FOO")
    pair.same("HELLO", "2", "AUTH", "onlyuser")
    pair.setuser("onuser", "on", ">pw", "+@all")
    pair.same("AUTH", "onuser", "pw")
    pair.same("ACL", "WHOAMI")
    pair.same("AUTH", "onuser", "bad")
    pair.same("ACL", "WHOAMI")  # a failed AUTH keeps the current user


def test_noauth_with_requirepass(servers: tuple[ThreadedServer, ProcessServer]) -> None:
    """NOAUTH and friends for a client that has not authenticated (default has a password)."""
    ours, theirs = servers
    p = Pair(ours, theirs, 2)
    try:
        p.same("ACL", "SETUSER", "default", ">secret")
        a, b = RawClient(ours.port), RawClient(theirs.port)
        p.clients.append((a, b))
        for cmd in (["GET", "x"], ["ACL", "WHOAMI"], ["PING"], ["HELLO", "3"],
                    ["HELLO", "2", "AUTH", "default", "bad"], ["AUTH", "bad"],
                    ["AUTH", "default", "bad"], ["NOSUCH"], ["QUIT", "x"]):
            assert norm(parse(a.call(*cmd), 2)) == norm(parse(b.call(*cmd), 2)), cmd
    finally:
        p.same("ACL", "SETUSER", "default", "nopass")
        p.close()


# -- ACL CAT, LOG, misc ------------------------------------------------------------------------


def test_cat_lists(pair: Pair) -> None:
    cats = pair.same("ACL", "CAT")
    assert len(cats) == 21
    ours_all = _all_commands(pair.a, pair.protocol)
    theirs_all = _all_commands(pair.b, pair.protocol)
    for cat in cats:
        ours = set(parse(pair.a.call("ACL", "CAT", cat), pair.protocol))
        theirs = set(parse(pair.b.call("ACL", "CAT", cat), pair.protocol))
        # The same commands, among those both servers have (Sluice has a few from Redis 8).
        common = ours_all & theirs_all
        assert ours & common == theirs & common, (cat, (ours ^ theirs) & common)
    pair.same("ACL", "CAT", "nosuchcategory")
    pair.same("ACL", "CAT", "READ", "extra")


def _all_commands(client: RawClient, protocol: int) -> set[bytes]:
    """Every command and subcommand name the server has: each is @fast or @slow."""
    return (set(parse(client.call("ACL", "CAT", "fast"), protocol))
            | set(parse(client.call("ACL", "CAT", "slow"), protocol)))


def test_misc_errors(pair: Pair) -> None:
    for cmd in (["ACL"], ["ACL", "NOSUCH"], ["ACL", "DELUSER", "default"],
                ["ACL", "DELUSER", "nouser", "default"], ["ACL", "DELUSER", "nouser"],
                ["ACL", "LOAD"], ["ACL", "SAVE"], ["ACL", "LOG", "x"], ["ACL", "LOG", "1", "2"],
                ["ACL", "GENPASS", "0"], ["ACL", "GENPASS", "4097"], ["ACL", "GENPASS", "x"],
                ["ACL", "GENPASS", "1", "2"], ["ACL", "HELP"], ["ACL", "HELP", "x"],
                ["ACL", "WHOAMI", "x"], ["ACL", "USERS", "x"], ["ACL", "SETUSER"],
                ["ACL", "GETUSER"], ["ACL", "LOG", "RESET"], ["ACL", "LOG", "-5"]):
        pair.same(*cmd)
    for bits, length in (("1", 1), ("4", 1), ("5", 2), ("256", 64), ("4096", 1024)):
        a, b = pair.raw("ACL", "GENPASS", bits)
        assert len(parse(a, 2)) == len(parse(b, 2)) == length


def test_acl_log_entries(pair: Pair) -> None:
    pair.same("ACL", "LOG", "RESET")
    pair.setuser("logger", "on", ">pw", "-@all", "+get", "~k")
    a, b = pair.login("logger", "pw")
    for c in (a, b):
        c.call("GET", "nokey")
        c.call("SET", "k", "v")
        c.call("GET", "nokey")
        c.call("MULTI")
        c.call("GET", "other")
        c.call("AUTH", "logger", "wrong")
    ours = parse(pair.a.call("ACL", "LOG"), pair.protocol)
    theirs = parse(pair.b.call("ACL", "LOG"), pair.protocol)
    assert len(ours) == len(theirs) == 5

    def fields(entry: Any) -> dict[bytes, Any]:
        d = entry if isinstance(entry, dict) else dict(zip(entry[::2], entry[1::2], strict=True))
        return {k: d[k] for k in (b"count", b"reason", b"context", b"object", b"username")}

    assert [fields(e) for e in ours] == [fields(e) for e in theirs]
    keys_7_0 = {b"count", b"reason", b"context", b"object", b"username", b"age-seconds",
                b"client-info"}
    e0 = ours[0] if isinstance(ours[0], dict) else dict(zip(ours[0][::2], ours[0][1::2], strict=True))
    # 7.2+ adds entry-id, timestamp-created, timestamp-last-updated (the newest documented).
    assert set(e0) == keys_7_0 | {b"entry-id", b"timestamp-created", b"timestamp-last-updated"}
    a1, b1 = pair.raw("ACL", "LOG", "1")
    assert len(parse(a1, pair.protocol)) == len(parse(b1, pair.protocol)) == 1
    pair.same("ACL", "LOG", "0")


def test_a_blocked_command_is_checked_again_when_rerun(pair: Pair) -> None:
    """Permissions taken away while a client waits apply to the re-run a write triggers: the
    reader gets NOPERM, not the entry (Redis re-runs blocked commands through
    processCommand), and the entry stays unread."""
    pair.raw("DEL", "s")
    pair.same("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    pair.setuser("bob", "on", ">pw", "+@all", "~*")
    a, b = pair.login("bob", "pw")
    for c in (a, b):
        c.send("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
    for c in (pair.a, pair.b):
        wait_until(lambda c=c: b"blocked_clients:1" in c.call("INFO", "clients"))
    pair.setuser("bob", "-xreadgroup")
    pair.same("XADD", "s", "1-1", "f", "v")
    ours, theirs = a.read_reply(), b.read_reply()
    assert norm(parse(ours, pair.protocol)) == norm(parse(theirs, pair.protocol))
    assert ours.startswith(b"-NOPERM")
    pair.same("XPENDING", "s", "g")


def _entry(raw: Any) -> dict[bytes, Any]:
    return raw if isinstance(raw, dict) else dict(zip(raw[::2], raw[1::2], strict=True))


def _cmd_field(client_info: bytes) -> bytes:
    return next(f for f in client_info.split() if f.startswith(b"cmd="))


def test_acl_log_client_info_names_the_command_the_client_sent(pair: Pair) -> None:
    """A denial inside EXEC or inside a script is logged with the client info of the
    network client running it, whose command is EXEC or EVAL (Redis's current_client and
    lastcmd), not the denied command or the script's own client."""
    pair.same("ACL", "LOG", "RESET")
    pair.setuser("ant", "on", ">pw", "+@all", "~*")
    a, b = pair.login("ant", "pw")
    for c in (a, b):
        c.call("MULTI")
        c.call("INCR", "object:1")
    pair.setuser("ant", "-incr")
    for c in (a, b):
        c.call("EXEC")
        c.call("EVAL", "redis.call('incr','foo')", "0")
    logs = [parse(c.call("ACL", "LOG"), pair.protocol) for c in (pair.a, pair.b)]
    for log in logs:
        lua, multi = _entry(log[0]), _entry(log[1])
        assert (lua[b"context"], multi[b"context"]) == (b"lua", b"multi")
        assert _cmd_field(lua[b"client-info"]) == b"cmd=eval"
        assert _cmd_field(multi[b"client-info"]) == b"cmd=exec"
        assert b"addr=lua" not in lua[b"client-info"]


def test_lowering_acllog_max_len_keeps_the_log_until_the_next_entry(pair: Pair) -> None:
    pair.same("ACL", "LOG", "RESET")
    pair.setuser("few", "on", ">pw", "-@all")
    a, b = pair.login("few", "pw")
    for command in (["GET", "a"], ["INCR", "b"], ["LLEN", "c"]):  # three distinct entries
        for c in (a, b):
            c.call(*command)
    try:
        pair.same("CONFIG", "SET", "acllog-max-len", "1")
        assert [len(parse(c.call("ACL", "LOG"), pair.protocol)) for c in (pair.a, pair.b)] \
            == [3, 3]
        for c in (a, b):
            c.call("DECR", "d")  # the next entry trims the log to the new length
        assert [len(parse(c.call("ACL", "LOG"), pair.protocol)) for c in (pair.a, pair.b)] \
            == [1, 1]
    finally:
        pair.same("CONFIG", "SET", "acllog-max-len", "128")


def test_a_rejected_rerun_counts_no_time(pair: Pair) -> None:
    """A blocked BLPOP whose user loses the command before the re-run: one rejected call,
    no completed call and no microseconds in commandstats, on both servers."""
    pair.same("CONFIG", "RESETSTAT")
    pair.setuser("blocker", "on", ">pw", "+@all", "~*")
    a, b = pair.login("blocker", "pw")
    for c in (a, b):
        c.send("BLPOP", "list1", "0")
    for c in (pair.a, pair.b):
        wait_until(lambda c=c: b"blocked_clients:1" in c.call("INFO", "clients"))
    pair.setuser("blocker", "-blpop")
    pair.raw("RPUSH", "list1", "v")
    for c in (a, b):
        assert c.read_reply().startswith(b"-NOPERM")
    stats = [c.call("INFO", "commandstats") for c in (pair.a, pair.b)]
    for text in stats:
        line = re.search(rb"cmdstat_blpop:(\S+)", text)
        assert line is not None
        assert re.match(rb"calls=0,usec=0,usec_per_call=0\.00,rejected_calls=1,failed_calls=0$",
                        line[1]), line[1]
    pair.raw("DEL", "list1")


def test_a_subscriber_revoking_its_own_channel_gets_its_reply_then_is_closed(
        servers: tuple[ThreadedServer, ProcessServer]) -> None:
    replies = []
    for server in servers:
        admin = RawClient(server.port)
        admin.call("ACL", "SETUSER", "psuser", "on", ">pspass", "+@all", "~*",
                   "resetchannels", "&foo:1")
        sub = RawClient(server.port, 3)
        sub.call("AUTH", "psuser", "pspass")
        sub.call("SUBSCRIBE", "foo:1")
        got = sub.call("ACL", "SETUSER", "psuser", "resetchannels")
        sub.sock.settimeout(5)
        replies.append((got, sub.sock.recv(100)))  # b"": closed after the reply
        admin.call("ACL", "DELUSER", "psuser")
        admin.close()
        sub.close()
    assert replies[0] == replies[1] == (b"+OK\r\n", b"")
