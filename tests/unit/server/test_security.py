"""Which peers protected mode and the ``local`` settings call local (Redis 8.6's rule), and
which insecure-configuration warning a server logs once ready."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from sluice.server.security import (
    INSECURE_ANYWHERE,
    INSECURE_INTERFACE,
    INSECURE_LOCAL,
    insecure_config_warning,
    is_local_address,
    is_local_peer,
)


@pytest.mark.parametrize(("ip", "local"), [
    ("127.0.0.1", True), ("127.0.0.2", True), ("127.255.255.254", True), ("::1", True),
    ("128.0.0.1", False), ("10.0.0.1", False), ("::ffff:127.0.0.1", False), ("::2", False),
    ("1127.0.0.1", False), ("0.0.0.0", False),
])
def test_local_addresses(ip: str, local: bool) -> None:
    assert is_local_address(ip) is local


class _Transport:
    def __init__(self, family: int, peer: Any) -> None:
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        self.peer = peer

    def get_extra_info(self, name: str) -> Any:
        return {"socket": self.sock, "peername": self.peer}.get(name)


def test_unix_peers_are_local_and_tcp_peers_by_address() -> None:
    unix = _Transport(socket.AF_UNIX, "")
    remote = _Transport(socket.AF_INET, ("192.0.2.7", 5000))
    loop2 = _Transport(socket.AF_INET, ("127.0.0.2", 5000))
    try:
        assert is_local_peer(unix) and is_local_peer(loop2) and not is_local_peer(remote)
    finally:
        for t in (unix, remote, loop2):
            t.sock.close()


# each case was run on redis-server 8.6.3 and its log read
@pytest.mark.parametrize(("default_open", "protected", "bind", "expected"), [
    (True, False, ["*"], INSECURE_ANYWHERE),
    (True, False, ["0.0.0.0"], INSECURE_ANYWHERE),
    (True, False, ["-0.0.0.0"], INSECURE_ANYWHERE),
    (True, False, ["::*"], INSECURE_ANYWHERE),
    (True, False, ["::"], INSECURE_ANYWHERE),
    (True, False, ["*", "-::*"], INSECURE_ANYWHERE),
    (True, False, ["127.0.0.1", "::*"], INSECURE_ANYWHERE),
    (True, False, ["127.0.0.1"], INSECURE_INTERFACE),
    (True, False, ["127.0.0.1", "-::1"], INSECURE_INTERFACE),
    (True, True, ["*"], INSECURE_LOCAL),
    (True, True, ["127.0.0.1"], INSECURE_LOCAL),
    (False, False, ["*"], None),
    (False, True, ["127.0.0.1"], None),
])
def test_insecure_config_warning(default_open: bool, protected: bool, bind: list[str],
                                 expected: str | None) -> None:
    assert insecure_config_warning(default_open, protected, bind) == expected
