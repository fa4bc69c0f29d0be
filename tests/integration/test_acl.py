"""ACL over real sockets: AUTH and HELLO AUTH, every denial (NOAUTH, WRONGPASS, NOPERM) in RESP2
and RESP3, ACL LOG, live connections when a user changes or goes, the aclfile and ``user``
directives, requirepass, pre-auth limits, and redis-cli --user/--pass."""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from sluice.commands.errors import (
    ACL_NO_FILE,
    AUTH_NOT_CONFIGURED,
    NOAUTH,
    NOPERM_CMD,
    NOPERM_EXEC,
    NOPERM_EXEC_REASONS,
    NOPERM_KEY,
    WRONGPASS,
)
from sluice.server.config import ConfigError
from tests.support import ThreadedServer

pytestmark = pytest.mark.timeout(60)

Make = Callable[..., ThreadedServer]


def client(s: ThreadedServer, **kw: object) -> redis.Redis:
    """A redis-py client that fails at once (its default retries back off for seconds)."""
    return s.client(retry=Retry(NoBackoff(), 0), **kw)


def _err(text: str | bytes) -> str:
    """An error text as redis-py shows it (without the code for ERR)."""
    t = text.decode() if isinstance(text, bytes) else text
    return t.removeprefix("ERR ")


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def proto(request: pytest.FixtureRequest) -> int:
    return int(request.param)


def raw(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=10)


def recv_all(sock: socket.socket) -> bytes:
    """Everything until the server closes the connection."""
    out = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return out
        out += chunk


def send(sock: socket.socket, *args: bytes | str) -> None:
    parts = [a if isinstance(a, bytes) else a.encode() for a in args]
    sock.sendall(b"*%d\r\n" % len(parts) + b"".join(b"$%d\r\n%s\r\n" % (len(p), p) for p in parts))


def reply(sock: socket.socket) -> bytes:
    data = b""
    while not data.endswith(b"\r\n"):
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


# -- authentication ----------------------------------------------------------------------------


def test_requirepass_is_the_default_users_password(make_server: Make, proto: int) -> None:
    s = make_server("requirepass secret")
    with pytest.raises(redis.AuthenticationError):
        client(s, protocol=proto).ping()
    sock = raw(s.port)
    send(sock, "GET", "x")
    assert reply(sock) == b"-" + NOAUTH.encode() + b"\r\n"
    send(sock, "AUTH", "wrong")
    assert reply(sock) == b"-" + WRONGPASS.encode() + b"\r\n"
    send(sock, "AUTH", "secret")
    assert reply(sock) == b"+OK\r\n"
    assert client(s, password="secret", protocol=proto).ping()
    assert client(s, username="default", password="secret", protocol=proto).ping()
    admin = client(s, password="secret", protocol=proto)
    assert admin.acl_getuser("default")["passwords"]
    assert s.server is not None and s.server.acl is None  # an unrestricted default: no check


def test_auth_not_configured(make_server: Make) -> None:
    s = make_server()
    r = client(s)
    with pytest.raises(redis.AuthenticationError, match=_err(AUTH_NOT_CONFIGURED)):
        r.execute_command("AUTH", "x")
    assert r.execute_command("AUTH", "default", "x")  # nopass: any password works


def test_users_and_denials(make_server: Make, proto: int) -> None:
    s = make_server()
    admin = client(s, protocol=proto)
    assert admin.acl_setuser("alice", enabled=True, passwords=["+pw"], keys=["k:*"],
                             commands=["+get", "+set", "+client|setinfo", "+multi", "+exec"])
    assert s.server is not None and s.server.acl is not None  # now a user is restricted
    a = client(s, username="alice", password="pw", protocol=proto)
    assert a.set("k:1", "v") and a.get("k:1") == b"v"
    with pytest.raises(redis.exceptions.NoPermissionError, match=_err(NOPERM_KEY[7:])):
        a.get("other")
    with pytest.raises(redis.exceptions.NoPermissionError,
                       match=_err(NOPERM_CMD[7:] % (b"alice", b"del"))):
        a.delete("k:1")
    with pytest.raises(redis.AuthenticationError):
        client(s, username="alice", password="bad", protocol=proto).ping()
    with pytest.raises(redis.AuthenticationError):
        client(s, username="nobody", password="pw", protocol=proto).ping()
    log = admin.acl_log()
    reasons = [(e["reason"], e["object"]) for e in log]
    assert ("auth", "HELLO") in reasons or ("auth", "AUTH") in reasons
    assert ("command", "del") in reasons and ("key", "other") in reasons
    entry = next(e for e in log if e["reason"] == "key")
    assert entry["username"] == "alice" and entry["context"] == "toplevel"
    cinfo = entry["client-info"]  # redis-py parses it into a dict in one protocol only
    if isinstance(cinfo, str):
        cinfo = dict(kv.split("=", 1) for kv in cinfo.split())
    assert cinfo["user"] == "alice" and cinfo["cmd"] == "get"
    assert {"entry-id", "timestamp-created", "timestamp-last-updated"} <= set(entry)
    info = admin.info("stats")
    assert info["acl_access_denied_key"] >= 1 and info["acl_access_denied_cmd"] >= 1
    assert info["acl_access_denied_auth"] >= 1
    assert admin.acl_deluser("alice") == 1
    assert s.server.acl is None  # back to the free path


def test_log_groups_similar_events(make_server: Make) -> None:
    s = make_server()
    admin = client(s)
    admin.acl_setuser("bob", enabled=True, nopass=True, commands=["+get"], keys=["a"])
    b = raw(s.port)
    send(b, "AUTH", "bob", "x")
    assert reply(b) == b"+OK\r\n"
    for _ in range(3):
        send(b, "GET", "zzz")
        assert reply(b).startswith(b"-NOPERM")
    log = admin.acl_log()
    assert len(log) == 1 and log[0]["count"] == 3
    assert admin.acl_log_reset() and admin.acl_log() == []


def test_multi_denials(make_server: Make) -> None:
    s = make_server()
    admin = client(s)
    admin.acl_setuser("m", enabled=True, nopass=True, keys=["*"],
                      commands=["+multi", "+exec", "+get", "+set"])
    c = raw(s.port)
    send(c, "AUTH", "m", "x")
    assert reply(c) == b"+OK\r\n"
    send(c, "MULTI")
    assert reply(c) == b"+OK\r\n"
    send(c, "SET", "k", "v")
    assert reply(c) == b"+QUEUED\r\n"
    send(c, "GET", "k")
    assert reply(c) == b"+QUEUED\r\n"
    # The rules change between queueing and EXEC: EXEC re-checks each command.
    admin.acl_setuser("m", commands=["-set"])
    send(c, "EXEC")
    got = c.recv(65536)
    reason = NOPERM_EXEC % NOPERM_EXEC_REASONS[1]
    assert got == b"*2\r\n-" + reason.encode() + b"\r\n$-1\r\n"
    log = admin.acl_log()
    assert log[0]["context"] == "multi" and log[0]["object"] == "set"
    send(c, "MULTI")
    reply(c)
    send(c, "SET", "k", "v")  # refused while queueing: EXEC aborts
    assert reply(c).startswith(b"-NOPERM")
    send(c, "EXEC")
    assert reply(c).startswith(b"-EXECABORT")


def test_setuser_applies_to_live_connections(make_server: Make) -> None:
    s = make_server()
    admin = client(s)
    admin.acl_setuser("live", enabled=True, nopass=True, keys=["*"], commands=["+get"])
    c = raw(s.port)
    send(c, "AUTH", "live", "x")
    assert reply(c) == b"+OK\r\n"
    send(c, "GET", "k")
    assert reply(c) == b"$-1\r\n"
    admin.acl_setuser("live", commands=["-get"])
    send(c, "GET", "k")
    assert reply(c).startswith(b"-NOPERM User live has no permissions to run the 'get'")
    admin.acl_setuser("live", enabled=False)  # off: existing connections keep working
    admin.acl_setuser("live", commands=["+get"])
    send(c, "GET", "k")
    assert reply(c) == b"$-1\r\n"


def test_deluser_closes_its_connections(make_server: Make) -> None:
    s = make_server()
    admin = client(s)
    admin.acl_setuser("gone", enabled=True, nopass=True, keys=["*"], commands=["+@all"])
    victims = [raw(s.port) for _ in range(3)]
    for v in victims:
        send(v, "AUTH", "gone", "x")
        assert reply(v) == b"+OK\r\n"
    bystander = raw(s.port)
    send(bystander, "PING")
    assert reply(bystander) == b"+PONG\r\n"
    # A victim deleting its own user gets the reply, then the connection closes.
    send(victims[0], "ACL", "DELUSER", "gone")
    assert recv_all(victims[0]) == b":1\r\n"
    for v in victims[1:]:
        assert recv_all(v) == b""
    send(bystander, "PING")
    assert reply(bystander) == b"+PONG\r\n"


def test_reset_and_pre_auth_limits(make_server: Make) -> None:
    s = make_server("requirepass pw")
    c = raw(s.port)
    send(c, "AUTH", "pw")
    assert reply(c) == b"+OK\r\n"
    send(c, "MSET", *["k", "v"] * 10)  # 21 arguments: fine once authenticated
    assert reply(c) == b"+OK\r\n"
    send(c, "SET", "big", "x" * 20000)
    assert reply(c) == b"+OK\r\n"
    send(c, "RESET")  # back to the unauthenticated default user, and its limits
    assert reply(c) == b"+RESET\r\n"
    send(c, "GET", "k")
    assert reply(c) == b"-" + NOAUTH.encode() + b"\r\n"
    send(c, "MSET", *["k", "v"] * 10)
    assert recv_all(c) == b"-ERR Protocol error: unauthenticated multibulk length\r\n"
    d = raw(s.port)
    d.sendall(b"*2\r\n$4\r\nAUTH\r\n$20000\r\n")
    assert recv_all(d) == b"-ERR Protocol error: unauthenticated bulk length\r\n"


def test_hello_auth(make_server: Make) -> None:
    s = make_server("requirepass pw")
    c = raw(s.port)
    send(c, "HELLO", "3")
    assert reply(c).startswith(b"-NOAUTH HELLO must be called with the client already auth")
    send(c, "HELLO", "3", "AUTH", "default", "bad", "SETNAME", "x")
    assert reply(c) == b"-" + WRONGPASS.encode() + b"\r\n"
    send(c, "HELLO", "3", "AUTH", "default", "pw", "SETNAME", "bad name")
    assert reply(c).startswith(b"-ERR Client names cannot contain spaces")
    send(c, "GET", "x")
    assert reply(c) == b"-" + NOAUTH.encode() + b"\r\n"  # options are checked before AUTH
    send(c, "HELLO", "3", "AUTH", "default", "pw", "SETNAME", "me")
    assert reply(c).startswith(b"%7\r\n")
    send(c, "CLIENT", "GETNAME")
    assert reply(c) == b"$2\r\nme\r\n"


# -- configuration: user directives, aclfile ---------------------------------------------------


def test_user_directives(make_server: Make, proto: int) -> None:
    s = make_server("user default on nopass ~* &* +@all",
                    "user ops on >opspass ~ops:* (+get ~cache:*) -@all +set")
    r = client(s, username="ops", password="opspass", protocol=proto)
    assert r.set("ops:1", "v")
    with pytest.raises(redis.exceptions.NoPermissionError):
        r.set("cache:1", "v")
    assert r.get("cache:1") is None
    admin = client(s, protocol=proto)
    assert _text(admin.acl_list()[1]) == ("user ops on sanitize-payload #" + _sha("opspass")
                                   + " ~ops:* resetchannels -@all +set"
                                   + " (~cache:* resetchannels -@all +get)")
    with pytest.raises(redis.ResponseError, match=re.escape(_err(ACL_NO_FILE))):
        admin.acl_save()


def _text(v: str | bytes) -> str:
    return v.decode() if isinstance(v, bytes) else v


def _sha(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()


@pytest.mark.parametrize("lines, message", [
    (["user alice on bogus"], "Error in user declaration 'bogus': Syntax error"),
    (["user alice on (+get"], "Unmatched parenthesis"),
    (["user alice on +nosuchcmd"], "Error loading ACL rule '+nosuchcmd'"),
    (["user a on", "user a off"], "Duplicate user found"),
    (["aclfile /nonexistent/users.acl"], "Error loading ACLs, opening file"),
    (["aclfile /tmp/x.acl", "user a on"], "not both"),
])
def test_bad_user_configuration_stops_startup(lines: list[str], message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace("+", r"\+")):
        ThreadedServer(lines).start()


def test_aclfile_load_and_save(make_server: Make, tmp_path: Path) -> None:
    path = tmp_path / "users.acl"
    path.write_text("user default on nopass ~* &* +@all\n"
                    "user reader on #" + _sha("rpw") + " ~* resetchannels -@all +@read\n"
                    "\n"
                    "user writer on >wpw ~w:* +@all -@dangerous\n")
    s = make_server(f"aclfile {path}")
    admin = client(s)
    assert admin.acl_users() == ["default", "reader", "writer"]
    rd = client(s, username="reader", password="rpw")
    assert rd.get("x") is None
    with pytest.raises(redis.exceptions.NoPermissionError):
        rd.set("x", "1")
    # A new user, saved, then the file edited by hand and reloaded.
    admin.acl_setuser("temp", enabled=True, nopass=True, commands=["+ping"])
    assert admin.acl_save()
    saved = path.read_text().splitlines()
    assert saved[0] == "user default on nopass sanitize-payload ~* &* +@all"
    assert any(line.startswith("user temp on nopass sanitize-payload") for line in saved)
    assert "wpw" not in path.read_text()  # passwords only as hashes
    wconn = raw(s.port)
    send(wconn, "AUTH", "writer", "wpw")
    assert reply(wconn) == b"+OK\r\n"
    rconn = raw(s.port)
    send(rconn, "AUTH", "reader", "rpw")
    assert reply(rconn) == b"+OK\r\n"
    path.write_text("\n".join(line for line in saved if not line.startswith("user writer")) + "\n")
    assert admin.acl_load()
    assert "writer" not in admin.acl_users()
    assert recv_all(wconn) == b""  # its user is gone: disconnected
    send(rconn, "GET", "x")  # still there: rebound to the reloaded definition
    assert reply(rconn) == b"$-1\r\n"
    # A broken file changes nothing and says why.
    path.write_text("user ok on nopass +@all\nuser bad on +nosuch\nnot a user line\n")
    with pytest.raises(redis.ResponseError) as e:
        admin.acl_load()
    msg = str(e.value)
    assert f"{path}:2: Error in applying operation '+nosuch': Unknown command or category name in ACL. " in msg
    assert f"{path}:3 should start with user keyword followed by the username. " in msg
    assert msg.endswith("WARNING: ACL errors detected, no change to the previously active ACL "
                        "rules was performed")
    assert "temp" in admin.acl_users()


def test_config_rewrite_keeps_users(make_server: Make, tmp_path: Path) -> None:
    s = make_server()
    assert s.server is not None
    if b"config" not in s.server.table:
        pytest.skip("CONFIG is not in the command table yet")
    conf = tmp_path / "sluice.conf"
    conf.write_text("port 0\n")
    s.server.config.config_file = str(conf)
    admin = client(s)
    admin.acl_setuser("kept", enabled=True, passwords=["+k"], commands=["+get"], keys=["a*"])
    admin.config_rewrite()
    text = conf.read_text()
    assert "user kept on sanitize-payload #" + _sha("k") + " ~a* resetchannels -@all +get" in text
    again = ThreadedServer(text.splitlines()).start()
    try:
        assert client(again, username="kept", password="k").get("a1") is None
    finally:
        again.stop()


# -- redis-cli ---------------------------------------------------------------------------------


@pytest.mark.skipif(not shutil.which("redis-cli"), reason="redis-cli not installed")
def test_redis_cli_user_pass(make_server: Make) -> None:
    s = make_server()
    client(s).acl_setuser("cli", enabled=True, passwords=["+clipw"], keys=["*"],
                           commands=["+@all"])

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["redis-cli", "-p", str(s.port), "--no-auth-warning", *args],
                              capture_output=True, text=True, timeout=20, check=False)

    assert cli("--user", "cli", "--pass", "clipw", "ACL", "WHOAMI").stdout.strip() == "cli"
    bad = cli("--user", "cli", "--pass", "bad", "ACL", "WHOAMI")
    # As with redis-server: the failed AUTH is reported, the session stays the default user's.
    assert "WRONGPASS" in bad.stderr and bad.stdout.strip() == "default"



def test_rules_and_passwords_stay_out_of_the_slowlog(make_server: Make) -> None:
    s = make_server("slowlog-log-slower-than 0")
    assert s.server is not None
    if b"slowlog" not in s.server.table:
        pytest.skip("SLOWLOG is not in the command table yet")
    r = client(s)
    r.execute_command("ACL", "SETUSER", "sl", "on", ">topsecret", "+@all")
    r.execute_command("ACL", "GETUSER", "sl")
    r.execute_command("AUTH", "sl", "topsecret")
    logged = repr(r.execute_command("SLOWLOG", "GET", "10"))
    assert "topsecret" not in logged and "(redacted)" in logged


def test_config_set_requirepass_and_pubsub_default(make_server: Make) -> None:
    s = make_server("acl-pubsub-default allchannels")
    assert s.server is not None
    if b"config" not in s.server.table:
        pytest.skip("CONFIG is not in the command table yet")
    r = client(s)
    r.execute_command("ACL", "SETUSER", "ch", "on")
    assert _text(r.acl_list()[0]).endswith("&* -@all")  # new users get all channels
    assert r.config_set("requirepass", "newpass")
    assert r.ping()  # this connection stays authenticated
    with pytest.raises(redis.AuthenticationError):
        client(s).ping()
    assert client(s, password="newpass").ping()
    assert r.config_set("requirepass", "")
    assert client(s).ping()  # back to nopass


def test_a_relative_aclfile_is_read_from_dir(make_server: Make, tmp_path: Path) -> None:
    """redis-server chdir()s into ``dir``: ``aclfile users.acl`` is ``<dir>/users.acl`` at
    start and for ACL SAVE, whatever directory the server started in."""
    (tmp_path / "users.acl").write_text("user default on nopass ~* &* +@all\nuser ro on nopass +get\n")
    s = make_server(f"dir {tmp_path}", "aclfile users.acl")
    admin = client(s)
    assert admin.acl_users() == ["default", "ro"]
    admin.acl_setuser("new", enabled=True, nopass=True)
    assert admin.acl_save()
    assert "user new on" in (tmp_path / "users.acl").read_text()
