"""``include`` in a config file, as redis-server 8.6.3 reads it (each case run on it): the
included directives apply in place, so a later line wins; a pattern includes its matches in
name order and may match nothing; a plain name that does not open stops the start."""

from __future__ import annotations

from pathlib import Path

import pytest

from sluice.server.config import Config, ConfigError


def _load(tmp_path: Path, main: str, **files: str) -> Config:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    path = tmp_path / "main.conf"
    path.write_text(main.replace("DIR", str(tmp_path)))
    config = Config()
    config.load_file(str(path))
    return config


def test_included_lines_apply_in_place(tmp_path: Path) -> None:
    first = _load(tmp_path, "maxclients 10\ninclude DIR/inc.conf\n", **{"inc.conf": "maxclients 20\n"})
    assert first.maxclients == 20
    second = _load(tmp_path, "include DIR/inc.conf\nmaxclients 10\n")
    assert second.maxclients == 10
    assert second.config_file == str(tmp_path / "main.conf")  # CONFIG REWRITE's file


def test_a_pattern_includes_its_matches_in_name_order(tmp_path: Path) -> None:
    (tmp_path / "conf.d").mkdir()
    (tmp_path / "conf.d" / "b.conf").write_text("hz 30\n")
    (tmp_path / "conf.d" / "a.conf").write_text("hz 20\nmaxclients 7\n")
    config = _load(tmp_path, "include DIR/conf.d/*.conf\ninclude DIR/empty.d/*.conf\n")
    assert (config.hz, config.maxclients) == (30, 7)


def test_a_missing_file_stops_the_start(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="Fatal error, can't open config file '.*nowhere.conf': "
                                          "No such file or directory"):
        _load(tmp_path, "include DIR/nowhere.conf\n")


def test_an_error_in_an_included_file_is_reported(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="Bad directive"):
        _load(tmp_path, "include DIR/bad.conf\n", **{"bad.conf": "no-such-directive 1\n"})
