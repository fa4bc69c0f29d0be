"""The ``save`` directive at start, as redis-server 8.6.3 reads it (each case was run on it):
the first ``save`` line, in the file or on the command line, replaces the defaults, later
ones add to it, and ``save ""`` clears; CONFIG SET replaces."""

from __future__ import annotations

import pytest

from sluice.server.config import Config

DEFAULTS = b"3600 1 300 100 60 10000"


@pytest.mark.parametrize(("file_lines", "argv", "expected"), [
    ([], [], DEFAULTS),
    (["save 100 100"], [], b"100 100"),
    (["save 900 1"], ["--save", "100", "100"], b"900 1 100 100"),
    (["save 900 1"], ["--save", ""], b""),
    (["save 900 1"], ["--save"], b""),
    (['save ""', "save 900 1"], [], b"900 1"),
    (["save 900 1", 'save ""', "save 5 5"], [], b"5 5"),
    (["save 900 1 300 10", "save 60 1000"], [], b"900 1 300 10 60 1000"),
    ([], ["--save", "10 1", "--save", "20 2"], b"10 1 20 2"),
])
def test_save_lines_at_start(file_lines: list[str], argv: list[str], expected: bytes) -> None:
    config = Config()
    config.load_text(file_lines)
    config.load_argv(argv)
    assert config.get_bytes("save") == expected


def test_config_set_replaces() -> None:
    config = Config()
    config.load_text(["save 900 1"])
    config.set_many([(b"save", [b"10 1"])])
    assert config.get_bytes("save") == b"10 1"
    config.set_many([(b"save", [b"20 2"])])
    assert config.get_bytes("save") == b"20 2"
