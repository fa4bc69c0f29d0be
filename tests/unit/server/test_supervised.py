"""supervised and syslog-enabled: the messages a service manager and syslog get
(server/supervised.py, server/__main__.py's setup_logging)."""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from sluice.server.__main__ import setup_logging
from sluice.server.config import Config
from sluice.server.supervised import Supervisor


@pytest.fixture
def listener(tmp_path: Path) -> Iterator[tuple[str, socket.socket]]:
    path = str(tmp_path / "notify")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(path)
    s.settimeout(5)
    yield path, s
    s.close()


def test_systemd_hears_loading_ready_and_stopping(listener: tuple[str, socket.socket]) -> None:
    path, s = listener
    sup = Supervisor("systemd", {"NOTIFY_SOCKET": path})
    assert sup.mode == "systemd"
    sup.loading()
    sup.ready()
    sup.stopping()
    got = [s.recv(100) for _ in range(4)]
    assert got == [b"STATUS=Sluice is loading...\n", b"STATUS=Ready to accept connections\n",
                   b"READY=1\n", b"STOPPING=1\n"]


def test_auto_detects_the_manager_from_the_environment(listener: tuple[str, socket.socket]
                                                       ) -> None:
    path, _ = listener
    assert Supervisor("auto", {"NOTIFY_SOCKET": path}).mode == "systemd"
    assert Supervisor("auto", {"UPSTART_JOB": "sluice"}).mode == "upstart"
    assert Supervisor("auto", {}).mode == "no"
    assert Supervisor("systemd", {}).mode == "no"  # asked, but nothing to talk to
    Supervisor("no", {"NOTIFY_SOCKET": path}).ready()  # not supervised: sends nothing


def test_syslog_gets_each_line_with_ident_pid_and_facility(
        listener: tuple[str, socket.socket]) -> None:
    path, s = listener
    config = Config()
    config.load_text(["syslog-enabled yes", "syslog-ident sluicetest", "syslog-facility local3"])
    root = logging.getLogger()
    before = list(root.handlers), root.level
    try:
        setup_logging(config, syslog_address=path)
        logging.getLogger("sluice").warning("hello syslog")
        # <priority> = facility local3 (19) * 8 + warning (4)
        assert s.recv(200) == f"<156>sluicetest[{os.getpid()}]: hello syslog\x00".encode()
    finally:
        for h in list(root.handlers):
            root.removeHandler(h)
            h.close()
        for h in before[0]:
            root.addHandler(h)
        root.setLevel(before[1])
