"""sluice-healthcheck: alive means the server answers, with or without a password."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from sluice.tools.healthcheck import check, server_address
from tests.support import ThreadedServer, free_port


def test_a_plain_server_is_alive(sluice: ThreadedServer) -> None:
    assert check("127.0.0.1", sluice.port) == (True, "+PONG")


def test_a_password_does_not_make_it_unhealthy(make_server: Callable[..., ThreadedServer]) -> None:
    server = make_server("requirepass s3cret")
    alive, said = check("127.0.0.1", server.port)
    assert alive and said.startswith("-NOAUTH")
    assert check("127.0.0.1", server.port, password="s3cret") == (True, "+PONG")
    alive, said = check("127.0.0.1", server.port, password="wrong")
    assert not alive and said.startswith("-WRONGPASS")


def test_an_acl_user_without_ping_is_still_alive(
        make_server: Callable[..., ThreadedServer]) -> None:
    server = make_server("user default on nopass ~* -@all +get")
    alive, said = check("127.0.0.1", server.port)
    assert alive and said.startswith("-NOPERM")


def test_nothing_listening_is_not_alive() -> None:
    alive, said = check("127.0.0.1", free_port(), timeout=1)
    assert not alive and said.startswith("cannot connect")


def test_the_port_comes_from_pid_1s_command_line(tmp_path: Path) -> None:
    conf = tmp_path / "s.conf"
    conf.write_text("port 7001\nbind 10.1.2.3\n")
    cmdline = tmp_path / "cmdline"
    cmdline.write_bytes(b"\0".join([b"/opt/venv/bin/python", b"/opt/venv/bin/sluice-server",
                                    str(conf).encode(), b"--port", b"7002", b""]))
    assert server_address(str(cmdline)) == ("10.1.2.3", 7002, "")
    cmdline.write_bytes(b"sluice-server\0--bind\0* -::*\0--unixsocket\0/tmp/s.sock\0")
    assert server_address(str(cmdline)) == ("127.0.0.1", 6379, "/tmp/s.sock")
    cmdline.write_bytes(b"nginx\0-g\0daemon off;\0")
    assert server_address(str(cmdline)) == ("127.0.0.1", 6379, "")
    assert server_address(str(tmp_path / "missing")) == ("127.0.0.1", 6379, "")
