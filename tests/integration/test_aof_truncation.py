"""Truncation: cut the AOF at every byte offset of its last commands and load it.

With ``aof-load-truncated yes`` the server must start with exactly the commands that are
whole (a transaction whose EXEC was cut is dropped entirely) and the file must be cut back to
that point; with ``no`` it must refuse, naming the file and the offset. Never garbage.

Loading runs the real start-up path (``Persistence.load`` on a ``Server``) without opening a
socket, so every offset is cheap to try.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sluice.server.app import Server
from sluice.server.config import Config
from sluice.server.loading import LoadError
from sluice.server.snapshot import Persistence
from sluice.storage.aof import Manifest, encode_command, parse_commands


def _tail_commands() -> list[list[bytes]]:
    return [
        [b"SET", b"a", b"1"],
        [b"MULTI"],
        [b"SET", b"t1", b"x"],
        [b"RPUSH", b"t2", b"y", b"z"],
        [b"EXEC"],
        [b"SET", b"b", b"2" * 40],
        [b"SELECT", b"2"],
        [b"SET", b"c", b"3"],
    ]


def _expected(whole: int) -> dict[tuple[int, bytes], object]:
    """The dataset after the first ``whole`` tail commands (transactions all or nothing)."""
    state: dict[tuple[int, bytes], object] = {(0, b"base"): b"0"}
    cmds = _tail_commands()[:whole]
    names = [c[0] for c in cmds]
    if b"MULTI" in names and b"EXEC" not in names:
        cmds = cmds[: names.index(b"MULTI")]
    db = 0
    for c in cmds:
        if c[0] == b"SET":
            state[db, c[1]] = c[2]
        elif c[0] == b"RPUSH":
            state[db, c[1]] = list(c[2:])
        elif c[0] == b"SELECT":
            db = int(c[1])
    return state


def _config(dir_: Path, truncated: str) -> Config:
    config = Config()
    config.load_text([f"dir {dir_}", "appendonly yes", f"aof-load-truncated {truncated}",
                      'save ""'])
    return config


def _load(dir_: Path, truncated: str) -> dict[tuple[int, bytes], object]:
    server = Server(_config(dir_, truncated))
    p = Persistence(server)
    server.persistence = p
    try:
        p.load()
        state: dict[tuple[int, bytes], object] = {}
        for db in server.keyspace.dbs:
            for key, value in db.data.items():
                state[db.id, key] = value if isinstance(value, bytes) else list(value)
        return state
    finally:
        if server.aof is not None:
            server.aof.shutdown()


@pytest.fixture(scope="module")
def original(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, int]:
    """An AOF directory made by the server, with the tail commands appended to its incr file."""
    dir_ = tmp_path_factory.mktemp("aof")
    server = Server(_config(dir_, "yes"))
    p = Persistence(server)
    server.persistence = p
    p.load()
    server.keyspace[0].set(b"base", b"0")
    server.aof.shutdown()
    m = Manifest.parse((dir_ / "appendonlydir" / "appendonly.aof.manifest").read_text())
    incr = m.incrs[-1].name
    path = dir_ / "appendonlydir" / incr
    head = encode_command([b"SELECT", b"0"]) + encode_command([b"SET", b"base", b"0"])
    path.write_bytes(head + b"".join(encode_command(c) for c in _tail_commands()))
    return dir_, incr, len(head)


def test_every_cut_loads_whole_commands_or_refuses(original: tuple[Path, str, int],
                                                   tmp_path: Path) -> None:
    src, incr, start = original
    data = (src / "appendonlydir" / incr).read_bytes()
    boundaries = [start] + [end for _, end in parse_commands(data, start)]
    multi_at = boundaries[1]  # offset of MULTI
    exec_end = boundaries[5]  # end of EXEC
    for cut in range(start, len(data) + 1):
        whole = sum(1 for b in boundaries[1:] if b <= cut)
        work = tmp_path / f"cut{cut}"
        shutil.copytree(src, work)
        path = work / "appendonlydir" / incr
        path.write_bytes(data[:cut])
        clean = cut in boundaries and not multi_at < cut < exec_end
        expected_size = cut if clean else (multi_at if multi_at < cut < exec_end
                                           else max(b for b in boundaries if b <= cut))
        if clean:
            assert _load(work, "no") == _expected(whole), cut
        else:
            with pytest.raises(LoadError, match=rf"{incr} \(valid up to offset "
                                                rf"{expected_size} "):
                _load(work, "no")
            assert path.stat().st_size == cut  # refused: the file is left alone
        assert _load(work, "yes") == _expected(whole), cut
        assert path.stat().st_size == expected_size, cut
        shutil.rmtree(work)


def test_a_torn_file_that_is_not_the_last_is_fatal(original: tuple[Path, str, int],
                                                  tmp_path: Path) -> None:
    src, incr, _ = original
    work = tmp_path / "w"
    shutil.copytree(src, work)
    d = work / "appendonlydir"
    data = (d / incr).read_bytes()
    (d / incr).write_bytes(data[:-3])
    (d / "appendonly.aof.9.incr.aof").write_bytes(encode_command([b"SET", b"z", b"1"]))
    manifest = d / "appendonly.aof.manifest"
    manifest.write_text(manifest.read_text() + "file appendonly.aof.9.incr.aof seq 9 type i\n")
    with pytest.raises(LoadError, match="the truncated file is not the last file"):
        _load(work, "yes")


def _corrupt_config(dir_: Path, limit: int) -> Config:
    config = _config(dir_, "no")
    config.load_text([f"aof-load-corrupt-tail-max-size {limit}"])
    return config


def _load_with(config: Config) -> dict[tuple[int, bytes], object]:
    server = Server(config)
    p = Persistence(server)
    server.persistence = p
    try:
        p.load()
        return {(db.id, key): value if isinstance(value, bytes) else list(value)
                for db in server.keyspace.dbs for key, value in db.data.items()}
    finally:
        if server.aof is not None:
            server.aof.shutdown()


@pytest.mark.parametrize("where", ["after the last command", "inside the transaction"])
def test_a_small_corrupt_tail_is_cut_when_allowed(original: tuple[Path, str, int],
                                                  tmp_path: Path, where: str) -> None:
    """aof-load-corrupt-tail-max-size (Redis 8): garbage at the end of the last file, fewer
    bytes than the setting, is cut off (a transaction it ends inside goes with it) and the
    server starts; more bytes than the setting, or the setting at 0, refuses, naming it."""
    src, incr, start = original
    data = (src / "appendonlydir" / incr).read_bytes()
    boundaries = [start] + [end for _, end in parse_commands(data, start)]
    keep = len(data) if where == "after the last command" else boundaries[3]  # MULTI, 2 cmds
    garbage = b"!!garbage written by a crash!!"
    for limit, loads in ((0, False), (len(garbage), False), (len(garbage) + 1, True)):
        work = tmp_path / f"{limit}"
        shutil.copytree(src, work)
        path = work / "appendonlydir" / incr
        path.write_bytes(data[:keep] + garbage)
        if not loads:
            with pytest.raises(LoadError, match=rf"'aof-load-corrupt-tail-max-size' configuration "
                                                rf"option to {len(data[:keep]) - (boundaries[1] if keep != len(data) else keep) + len(garbage) + 1} "):
                _load_with(_corrupt_config(work, limit))
            assert path.stat().st_size == keep + len(garbage)  # refused: left alone
            continue
        whole = sum(1 for b in boundaries[1:] if b <= keep)
        if where == "inside the transaction":
            # the cut includes the torn transaction: it may be more than the garbage
            with pytest.raises(LoadError):
                _load_with(_corrupt_config(work, limit))
            big = keep - boundaries[1] + len(garbage) + 1
            assert _load_with(_corrupt_config(work, big)) == _expected(whole)
            assert path.stat().st_size == boundaries[1]
        else:
            assert _load_with(_corrupt_config(work, limit)) == _expected(whole)
            assert path.stat().st_size == keep
