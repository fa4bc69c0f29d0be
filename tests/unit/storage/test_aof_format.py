"""The AOF file format: encoding, the offset-aware parser, the manifest (storage/aof.py)."""

from __future__ import annotations

import pytest

from sluice.storage import aof
from sluice.storage.aof import (
    AofCorrupt,
    AofTruncated,
    Manifest,
    ManifestError,
    analyze,
    encode_command,
    parse_commands,
)

COMMANDS = [
    [b"SELECT", b"0"],
    [b"SET", b"k", b"v"],
    [b"RPUSH", b"l", b"a", b"", b"with\r\nnewline"],
    [b"MULTI"],
    [b"INCR", b"c"],
    [b"EXEC"],
    [b"XADD", b"s", b"1-1", b"f", b"\x00\xff" * 40],
]
DATA = b"".join(encode_command(c) for c in COMMANDS)


def test_encoding_is_what_redis_writes() -> None:
    assert encode_command([b"SET", b"k", b"v"]) == b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n"
    assert aof.encode_select(3) == b"*2\r\n$6\r\nSELECT\r\n$1\r\n3\r\n"
    assert aof.encode_select(123) == encode_command([b"SELECT", b"123"])


def test_parse_yields_commands_with_end_offsets() -> None:
    got = list(parse_commands(DATA))
    assert [argv for argv, _ in got] == COMMANDS
    ends = [end for _, end in got]
    expected, pos = [], 0
    for c in COMMANDS:
        pos += len(encode_command(c))
        expected.append(pos)
    assert ends == expected


def test_annotations_are_skipped() -> None:
    data = b"#TS:1700000000\r\n" + encode_command([b"SET", b"a", b"1"])
    assert [a for a, _ in parse_commands(data)] == [[b"SET", b"a", b"1"]]


def test_every_cut_is_a_truncation_at_the_last_whole_command() -> None:
    """Cutting anywhere inside the last commands is a torn tail, never corruption."""
    boundaries = [0]
    for _, end in parse_commands(DATA):
        boundaries.append(end)
    for cut in range(len(DATA)):
        if cut in boundaries:
            assert analyze(DATA[:cut]).error is None
            continue
        with pytest.raises(AofTruncated) as info:
            list(parse_commands(DATA[:cut]))
        assert info.value.offset == max(b for b in boundaries if b <= cut), cut


@pytest.mark.parametrize("garbage", [b"garbage", b"+OK\r\n", b"*-1\r\n", b"*1\r\n:1\r\n",
                                     b"*1\r\n$1\r\nab\r\n", b"*1_0\r\n", b"*1\r\n$+1\r\na\r\n",
                                     b"*1\n$1\r\na\r\n"])
def test_corruption_is_not_mistaken_for_a_torn_tail(garbage: bytes) -> None:
    data = encode_command([b"SET", b"a", b"1"]) + garbage + encode_command([b"SET", b"b", b"2"])
    with pytest.raises(AofCorrupt) as info:
        list(parse_commands(data))
    assert info.value.offset == len(encode_command([b"SET", b"a", b"1"]))


def test_analyze_reports_open_multi_as_invalid_up_to_the_multi() -> None:
    head = encode_command([b"SET", b"a", b"1"])
    data = head + encode_command([b"MULTI"]) + encode_command([b"INCR", b"c"])
    result = analyze(data)
    assert result.open_multi and not result.valid
    assert result.ok_up_to == len(head)


def test_manifest_round_trip_and_names() -> None:
    m = Manifest()
    m.new_base("appendonly.aof", rdb=True)
    m.new_incr("appendonly.aof")
    text = m.format()
    assert text == (b"file appendonly.aof.1.base.rdb seq 1 type b\n"
                    b"file appendonly.aof.1.incr.aof seq 1 type i\n")
    back = Manifest.parse(text.decode())
    assert back.base is not None and back.base.name == "appendonly.aof.1.base.rdb"
    assert [i.name for i in back.incrs] == ["appendonly.aof.1.incr.aof"]
    back.new_base("appendonly.aof", rdb=False)
    assert back.base is not None and back.base.name == "appendonly.aof.2.base.aof"
    assert [h.type for h in back.history] == ["h"]


def test_manifest_quotes_odd_names() -> None:
    m = Manifest()
    m.new_base("my file.aof", rdb=False)
    text = m.format().decode()
    assert text.startswith('file "my file.aof.1.base.aof" seq 1')
    assert Manifest.parse(text).base.name == "my file.aof.1.base.aof"  # type: ignore[union-attr]


@pytest.mark.parametrize("text,message", [
    ("", "Found an empty AOF manifest"),
    ("file a seq 1\n", "Invalid AOF manifest file format"),
    ("file dir/a seq 1 type b\n", "File can't be a path, just a filename"),
    ("file a seq 1 type b\nfile b seq 2 type b\n", "Found duplicate base file information"),
    ("file a seq 2 type i\nfile b seq 1 type i\n", "Found a non-monotonic sequence number"),
    ("file a seq 1 type x\n", "Unknown AOF file type"),
])
def test_manifest_errors_use_redis_wording(text: str, message: str) -> None:
    with pytest.raises(ManifestError, match=message):
        Manifest.parse(text)


def test_manifest_comments_are_ignored() -> None:
    m = Manifest.parse("# hello\nfile a.1.incr.aof seq 1 type i\n")
    assert [i.seq for i in m.incrs] == [1]


def test_write_durably_leaves_no_temp_file_when_it_fails(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import os

    import pytest

    from sluice.storage.aof import write_durably

    target = tmp_path / "taken"
    target.mkdir()  # renaming a file onto a directory fails
    with pytest.raises(OSError):
        write_durably(str(target), b"user default on nopass ~* +@all\n")
    assert sorted(os.listdir(tmp_path)) == ["taken"]
    ok = tmp_path / "users.acl"
    write_durably(str(ok), b"x\n")
    assert ok.read_bytes() == b"x\n" and sorted(os.listdir(tmp_path)) == ["taken", "users.acl"]
