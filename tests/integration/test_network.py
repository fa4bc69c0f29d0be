"""Network exposure: protected mode, bind with several addresses and IPv6, ``port 0``, the Unix
socket, TLS (trustme certificates; redis-py ``ssl=True`` and redis-cli ``--tls``),
rename-command, and the protected-command / protected-config gates."""

from __future__ import annotations

import os
import shutil
import socket
import ssl
import stat
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from sluice.server.app import Server
from sluice.server.config import ConfigError
from tests.support import ProcessServer, ThreadedServer, free_port, require_redis_server

pytestmark = pytest.mark.timeout(60)

Make = Callable[..., ThreadedServer]


class ListeningServer(ThreadedServer):
    """A threaded server that opens the listeners its config asks for (no test socket)."""

    async def _main(self) -> None:
        self.server = Server(self.config, self.clock)
        await self.server.start()
        self.port = self.server.port
        self._ready.set()
        try:
            await self.server.serve_forever()
        finally:
            await self.server.shutdown()


@pytest.fixture
def listening() -> Iterator[Callable[..., ListeningServer]]:
    started: list[ListeningServer] = []

    def factory(*lines: str) -> ListeningServer:
        s = ListeningServer(list(lines)).start()
        started.append(s)
        return s

    yield factory
    for s in started:
        s.stop()


def no_retry(**kw: object) -> redis.Redis:
    return redis.Redis(retry=Retry(NoBackoff(), 0), socket_timeout=10, **kw)


def from_addr(port: int, source: str, data: bytes = b"*1\r\n$4\r\nPING\r\n") -> bytes:
    """Connect from ``source`` to 127.0.0.1."""
    s = socket.socket()
    s.settimeout(10)
    s.bind((source, 0))
    s.connect(("127.0.0.1", port))
    s.sendall(data)
    out = b""
    while True:
        try:
            chunk = s.recv(65536)
        except (ConnectionResetError, TimeoutError):
            break
        if not chunk:
            break
        out += chunk
        if out.endswith(b"\r\n") and not out.startswith(b"-DENIED"):
            break
    s.close()
    return out


# -- protected mode ----------------------------------------------------------------------------


@pytest.fixture
def remote_127_0_0_2(monkeypatch: pytest.MonkeyPatch) -> None:
    """Have the in-process server take 127.0.0.2 for a remote peer.

    Redis 8.6 (and Sluice) call all of 127.0.0.0/8 local, and these tests talk only to the
    loopback interface; so the rule is narrowed here to give them a non-local peer. The rule
    itself is checked against redis-server below."""
    from sluice.server import security

    monkeypatch.setattr(security, "is_local_address", lambda ip: ip in ("127.0.0.1", "::1"))


@pytest.mark.usefixtures("remote_127_0_0_2")
def test_protected_mode_denies_non_local_peers(make_server: Make) -> None:
    s = make_server()
    denied = from_addr(s.port, "127.0.0.2")
    assert denied.startswith(b"-DENIED Redis is running in protected mode because protected mode "
                             b"is enabled and no password is set for the default user.")
    assert b"4) Set up an authentication password for the default user." in denied
    assert from_addr(s.port, "127.0.0.1") == b"+PONG\r\n"
    assert no_retry(port=s.port).info("stats")["rejected_connections"] == 1


@pytest.mark.usefixtures("remote_127_0_0_2")
def test_protected_mode_off_when_default_has_a_password(make_server: Make) -> None:
    s = make_server()
    r = no_retry(port=s.port)
    r.execute_command("ACL", "SETUSER", "default", ">pw")
    assert from_addr(s.port, "127.0.0.2").startswith(b"-NOAUTH")
    r.execute_command("ACL", "SETUSER", "default", "nopass")
    assert from_addr(s.port, "127.0.0.2").startswith(b"-DENIED")
    r.execute_command("ACL", "SETUSER", "default", "off")  # 'off nopass' is still protected
    assert from_addr(s.port, "127.0.0.2").startswith(b"-DENIED")
    r.execute_command("ACL", "SETUSER", "default", "on")


@pytest.mark.usefixtures("remote_127_0_0_2")
def test_protected_mode_no(make_server: Make) -> None:
    s = make_server("protected-mode no")
    assert from_addr(s.port, "127.0.0.2") == b"+PONG\r\n"


@pytest.mark.differential
def test_every_127_address_is_local_as_in_redis(make_server: Make) -> None:
    """Protected mode lets 127.0.0.2 in, as redis-server 8.6 does (its connSocketIsLocal takes
    127.0.0.0/8; 7.0 took only 127.0.0.1 and refused it with DENIED)."""
    require_redis_server()
    ours = from_addr(make_server().port, "127.0.0.2")
    ref = ProcessServer("redis").start()
    try:
        theirs = from_addr(ref.port, "127.0.0.2")
    finally:
        ref.stop()
    assert ours == theirs == b"+PONG\r\n"


# -- bind, IPv6, port 0, Unix socket ----------------------------------------------------------


def test_bind_several_addresses_and_ipv6(listening: Callable[..., ListeningServer]) -> None:
    port = free_port()
    s = listening(f"port {port}", "bind 127.0.0.1 ::1 -192.0.2.123")
    assert no_retry(host="127.0.0.1", port=port).ping()
    assert no_retry(host="::1", port=port).ping()
    assert s.server is not None and len(s.server.listeners) == 2  # the '-' address was skipped
    with pytest.raises(redis.ConnectionError):
        no_retry(host="127.0.0.2", port=port).ping()  # not bound there


def test_bind_failure_names_the_address() -> None:
    with pytest.raises(OSError, match="Could not create server TCP listening socket 192.0.2.123"):
        ListeningServer([f"port {free_port()}", "bind 192.0.2.123"]).start()


def test_port_0_and_unix_socket(listening: Callable[..., ListeningServer], tmp_path: Path) -> None:
    path = tmp_path / "sluice.sock"
    s = listening("port 0", f"unixsocket {path}", "unixsocketperm 700")
    assert s.server is not None and len(s.server.listeners) == 1  # no TCP at all
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o700
    r = no_retry(unix_socket_path=str(path))
    assert r.ping() and r.set("k", "v")
    # A Unix socket peer is local: protected mode never refuses it.
    assert r.client_info()["addr"]
    s.stop()
    assert not path.exists()  # removed at shutdown, as Redis does


def test_unixsocketperm_is_octal() -> None:
    with pytest.raises(ConfigError, match="argument couldn't be parsed into an integer"):
        ThreadedServer(["unixsocketperm 800"]).start()


# -- TLS ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    trustme = pytest.importorskip("trustme")
    d = tmp_path_factory.mktemp("tls")
    ca = trustme.CA()
    server = ca.issue_cert("127.0.0.1", "localhost")
    client = ca.issue_cert("client@example.com")
    files = {"ca": d / "ca.pem", "cert": d / "server.pem", "key": d / "server.key",
             "ccert": d / "client.pem", "ckey": d / "client.key"}
    ca.cert_pem.write_to_path(str(files["ca"]))
    server.cert_chain_pems[0].write_to_path(str(files["cert"]))
    server.private_key_pem.write_to_path(str(files["key"]))
    client.cert_chain_pems[0].write_to_path(str(files["ccert"]))
    client.private_key_pem.write_to_path(str(files["ckey"]))
    return {k: str(v) for k, v in files.items()}


def tls_lines(certs: dict[str, str], port: int, *extra: str) -> list[str]:
    return [f"tls-port {port}", f"tls-cert-file {certs['cert']}",
            f"tls-key-file {certs['key']}", f"tls-ca-cert-file {certs['ca']}", *extra]


def test_tls_with_client_certificates(make_server: Make, certs: dict[str, str]) -> None:
    port = free_port()
    make_server(*tls_lines(certs, port))
    r = no_retry(port=port, ssl=True, ssl_ca_certs=certs["ca"], ssl_certfile=certs["ccert"],
                 ssl_keyfile=certs["ckey"], protocol=3)
    assert r.set("k", "v") and r.get("k") == b"v"
    with pytest.raises(redis.ConnectionError):
        no_retry(port=port, ssl=True, ssl_ca_certs=certs["ca"]).ping()  # no client cert
    plain = socket.create_connection(("127.0.0.1", port), timeout=10)
    plain.sendall(b"*1\r\n$4\r\nPING\r\n")  # not TLS: the handshake fails, nothing answers
    try:
        assert plain.recv(100) == b""
    except ConnectionResetError:
        pass


def test_tls_auth_clients_no_and_optional(make_server: Make, certs: dict[str, str]) -> None:
    port = free_port()
    make_server(*tls_lines(certs, port, "tls-auth-clients no"))
    assert no_retry(port=port, ssl=True, ssl_ca_certs=certs["ca"]).ping()
    port2 = free_port()
    make_server(*tls_lines(certs, port2, "tls-auth-clients optional"))
    assert no_retry(port=port2, ssl=True, ssl_ca_certs=certs["ca"]).ping()
    assert no_retry(port=port2, ssl=True, ssl_ca_certs=certs["ca"], ssl_certfile=certs["ccert"],
                    ssl_keyfile=certs["ckey"]).ping()


def test_tls_protocols(make_server: Make, certs: dict[str, str]) -> None:
    port = free_port()
    make_server(*tls_lines(certs, port, "tls-auth-clients no", "tls-protocols TLSv1.3"))
    ctx = ssl.create_default_context(cafile=certs["ca"])
    ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    with pytest.raises(ssl.SSLError), socket.create_connection(("127.0.0.1", port)) as s, \
            ctx.wrap_socket(s, server_hostname="127.0.0.1"):
        pass
    ctx13 = ssl.create_default_context(cafile=certs["ca"])
    with socket.create_connection(("127.0.0.1", port)) as s, \
            ctx13.wrap_socket(s, server_hostname="127.0.0.1") as t:
        assert t.version() == "TLSv1.3"
        t.sendall(b"*1\r\n$4\r\nPING\r\n")
        assert t.recv(100) == b"+PONG\r\n"


@pytest.mark.parametrize("lines, message", [
    (["tls-port 1"], "No tls-cert-file configured!"),
    (["tls-port 1", "tls-cert-file x"], "No tls-key-file configured!"),
    (["tls-port 1", "tls-cert-file x", "tls-key-file y"], "Either tls-ca-cert-file or"),
    (["tls-port 1", "tls-cert-file x", "tls-key-file y", "tls-auth-clients no",
      "tls-protocols TLSv9"], "Invalid tls-protocols specified"),
    (["tls-port 1", "tls-cert-file /nonexistent", "tls-key-file y", "tls-auth-clients no"],
     "Failed to load certificate"),
])
def test_tls_configuration_errors(lines: list[str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ThreadedServer(lines).start()


@pytest.mark.skipif(not shutil.which("redis-cli"), reason="redis-cli not installed")
def test_redis_cli_tls(make_server: Make, certs: dict[str, str]) -> None:
    port = free_port()
    make_server(*tls_lines(certs, port))
    out = subprocess.run(["redis-cli", "-p", str(port), "--tls", "--cacert", certs["ca"],
                          "--cert", certs["ccert"], "--key", certs["ckey"], "PING"],
                         capture_output=True, text=True, timeout=20, check=False)
    assert out.stdout.strip() == "PONG", out.stderr


# -- rename-command, protected commands and configs -------------------------------------------


def test_rename_command(make_server: Make) -> None:
    s = make_server("rename-command flushall \"\"", "rename-command dbsize size2")
    r = no_retry(port=s.port)
    with pytest.raises(redis.ResponseError, match="unknown command 'FLUSHALL'"):
        r.execute_command("FLUSHALL")
    with pytest.raises(redis.ResponseError, match="unknown command 'dbsize'"):
        r.execute_command("dbsize")
    assert r.execute_command("SIZE2") == 0
    # ACL rules keep using the original names.
    r.acl_setuser("u", enabled=True, nopass=True, commands=["+dbsize"], keys=["*"])
    u = no_retry(port=s.port, username="u", password="x")
    assert u.execute_command("size2") == 0


@pytest.mark.parametrize("lines, message", [
    (["rename-command nosuch x"], "No such command in rename-command"),
    (["rename-command get set"], "Target command name already exists"),
    (["rename-command get"], "Bad directive or wrong number of arguments"),
])
def test_rename_command_errors(lines: list[str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ThreadedServer(lines).start()


@pytest.mark.usefixtures("remote_127_0_0_2")
def test_debug_needs_enable_debug_command(make_server: Make) -> None:
    s = make_server()
    assert s.server is not None
    if b"debug" not in s.server.table:
        pytest.skip("DEBUG is not in the command table yet")
    r = no_retry(port=s.port)
    with pytest.raises(redis.ResponseError, match="DEBUG command not allowed. If the "
                       "enable-debug-command option is set to \"local\", you can run it from a "
                       "local connection"):
        r.execute_command("DEBUG", "HELP")
    local = make_server("enable-debug-command local")
    assert no_retry(port=local.port).execute_command("DEBUG", "HELP")
    assert from_addr(local.port, "127.0.0.2", b"*2\r\n$5\r\nDEBUG\r\n$4\r\nHELP\r\n") \
        .startswith(b"-DENIED")  # protected mode first; see below with a password
    pw = make_server("enable-debug-command local", "requirepass p")
    got = from_addr(pw.port, "127.0.0.2",
                    b"*2\r\n$4\r\nAUTH\r\n$1\r\np\r\n*2\r\n$5\r\nDEBUG\r\n$4\r\nHELP\r\n")
    assert got.startswith(b"+OK\r\n-ERR DEBUG command not allowed.")
    with pytest.raises(redis.ResponseError, match="can't set immutable config"):
        r.config_set("enable-debug-command", "yes")


def test_protected_configs(make_server: Make, tmp_path: Path) -> None:
    s = make_server()
    assert s.server is not None
    if b"config" not in s.server.table:
        pytest.skip("CONFIG is not in the command table yet")
    r = no_retry(port=s.port)
    with pytest.raises(redis.ResponseError, match="can't set protected config"):
        r.config_set("dir", str(tmp_path))
    ok = make_server("enable-protected-configs yes")
    assert no_retry(port=ok.port).config_set("dir", str(tmp_path))
