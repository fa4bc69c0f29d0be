"""sluice-check-aof and sluice-check-rdb: reports, exit codes, --fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from sluice.storage import rdb
from sluice.storage.aof import Manifest, encode_command
from sluice.storage.keyspace import Keyspace
from sluice.tools.check_aof import main as check_aof
from sluice.tools.check_rdb import main as check_rdb

CMDS = b"".join(encode_command(c) for c in ([b"SELECT", b"0"], [b"SET", b"a", b"1"],
                                            [b"SET", b"b", b"2"]))


def _aof_dir(tmp_path: Path, tail: bytes) -> Path:
    d = tmp_path / "appendonlydir"
    d.mkdir()
    ks = Keyspace(16)
    ks[0].set(b"base", b"x")
    (d / "appendonly.aof.1.base.rdb").write_bytes(b"".join(rdb.dump_keyspace(ks, aof_base=True)))
    (d / "appendonly.aof.1.incr.aof").write_bytes(CMDS + tail)
    m = Manifest()
    m.new_base("appendonly.aof", rdb=True)
    m.new_incr("appendonly.aof")
    (d / "appendonly.aof.manifest").write_bytes(m.format())
    return d / "appendonly.aof.manifest"


def test_valid_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert check_aof([str(_aof_dir(tmp_path, b""))]) == 0
    out = capsys.readouterr().out
    assert "Start to check BASE AOF (RDB format)." in out
    assert "RDB preamble is OK, proceeding with AOF tail..." in out
    assert "All AOF files and manifest are valid" in out


def test_torn_tail_is_reported_then_fixed(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    manifest = _aof_dir(tmp_path, b"*3\r\n$3\r\nSET\r\n$1\r\nc")
    with pytest.raises(SystemExit) as e:
        check_aof([str(manifest)])
    assert e.value.code == 1
    out = capsys.readouterr().out
    assert f"ok_up_to={len(CMDS)}," in out and "Use the --fix option" in out
    assert check_aof(["--fix", "--yes", str(manifest)]) == 0
    assert "Successfully truncated AOF appendonly.aof.1.incr.aof" in capsys.readouterr().out
    assert (manifest.parent / "appendonly.aof.1.incr.aof").read_bytes() == CMDS
    assert check_aof([str(manifest)]) == 0


def test_fix_asks_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                        capsys: pytest.CaptureFixture[str]) -> None:
    manifest = _aof_dir(tmp_path, b"*1\r\n")
    monkeypatch.setattr("sys.stdin", __import__("io").StringIO("n\n"))
    with pytest.raises(SystemExit):
        check_aof(["--fix", str(manifest)])
    assert "Aborting..." in capsys.readouterr().out
    assert (manifest.parent / "appendonly.aof.1.incr.aof").read_bytes() == CMDS + b"*1\r\n"


def test_corruption_is_a_format_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifest = _aof_dir(tmp_path, b"garbage")
    with pytest.raises(SystemExit):
        check_aof([str(manifest)])
    assert "AOF appendonly.aof.1.incr.aof format error" in capsys.readouterr().out


def test_check_rdb(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ks = Keyspace(16)
    ks[2].set(b"k", b"v" * 100)
    path = tmp_path / "dump.rdb"
    data = b"".join(rdb.dump_keyspace(ks))
    path.write_bytes(data)
    assert check_rdb([str(path)]) == 0
    out = capsys.readouterr().out
    assert "Selecting DB ID 2" in out and "Checksum OK" in out and "[info] 1 keys read" in out
    path.write_bytes(data[:-3])
    assert check_rdb([str(path)]) == 1
    assert "RDB ERROR DETECTED" in capsys.readouterr().out
