"""Unit tests of the conformance harness: the Tcl wire, the ledger, the ratchet's verdict,
and reading the Debian mirror from apt's configuration."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests import build_reference_redis as build
from tests.conformance import ledger, report
from tests.conformance.__main__ import update_ledger
from tests.conformance.runner import Outcome, UnitRun, _durable, _key
from tests.conformance.tcl import PacketReader, packet, split_list

TRICKY = [
    "plain",
    "two words",
    "",
    "braces {inside} here",
    "unbalanced { brace",
    "closing } only",
    'a "quoted" word',
    "back\\slash",
    "new\nline and\ttab",
    "dollar $x and [cmd]",
    "trailing backslash\\",
    "#hash first",
    "ends with space ",
]


def test_split_list_of_simple_forms() -> None:
    assert split_list("ok {Test name (1)} 12") == ["ok", "Test name (1)", "12"]
    assert split_list('err "a \\"b\\" c" 0') == ["err", 'a "b" c', "0"]
    assert split_list("a\\ b {x {y} z}") == ["a b", "x {y} z"]
    assert split_list("  ") == []
    with pytest.raises(ValueError):
        split_list("{unclosed")


@pytest.mark.skipif(not shutil.which("tclsh"), reason="needs tclsh")
def test_split_list_reads_what_tcl_writes() -> None:
    """Tcl quotes each tricky string its own way (braces, backslashes); we read them back."""
    script = "puts -nonewline [list " + " ".join(_tcl_literal(s) for s in TRICKY) + "]"
    out = subprocess.run(["tclsh"], input=script.encode(), capture_output=True, check=True)
    assert split_list(out.stdout.decode()) == TRICKY


def _tcl_literal(s: str) -> str:
    """``s`` as a double-quoted Tcl word with every special character escaped."""
    out = []
    for ch in s:
        if ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch in '\\"$[]{}':
            out.append("\\" + ch)
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def test_packets_survive_crlf_and_split_reads() -> None:
    """A Tcl socket writes \\n as \\r\\n; the length counts characters after translation."""
    payload = "err {Name in tests/unit/x.tcl\nExpected 1} 0"
    wire = f"{len(payload)}\n{payload}".replace("\n", "\r\n").encode()
    wire += packet("ok", "second one", "3").replace(b"\n", b"\r\n")
    reader = PacketReader()
    got = []
    for i in range(len(wire)):  # one byte at a time: a \r may end a read
        got += list(reader.feed(wire[i:i + 1]))
    assert got == [("err", "Name in tests/unit/x.tcl\nExpected 1", "0"),
                   ("ok", "second one", "3")]


def test_repeated_names_get_stable_keys() -> None:
    seen: dict[str, int] = {}
    assert [_key(seen, n) for n in ["a", "b", "a", "a"]] == ["a", "b", "a #2", "a #3"]


def test_durable_error_text_keeps_the_full_message() -> None:
    cut = "command 'sadd'\nERR unknown command 'sadd'\n    while executing"
    assert _durable(cut) == "ERR unknown command 'sadd'\n    while executing"
    assert _durable("Expected 1 to be 2 (context)") == "Expected 1 to be 2 (context)"


def test_ledger_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "passing.txt"
    entries = {"unit/b": {"x #2", "tab\there", "new\nline", "back\\n"}, "unit/a": {"y"}}
    ledger.write(path, entries, ["header", "version: 8.6.3"])
    back, fields = ledger.read(path)
    assert dict(back) == entries
    assert fields == {"version": "8.6.3"}
    lines = path.read_text().splitlines()
    assert lines[2].startswith("unit/a\t") and lines == sorted(lines[:2]) + sorted(lines[2:])


def _run(unit: str, ok: list[str], err: tuple[str, ...] = ()) -> UnitRun:
    return UnitRun(unit, [Outcome(k, "ok") for k in ok]
                   + [Outcome(k, "err", "Expected 1\nto be 2") for k in err])


def test_judge_names_regressions_and_new_passes() -> None:
    runs = [_run("unit/a", ["t1", "t3"], ("t2",)), _run("unit/b", [])]
    verdict = report.judge(runs, {"unit/a": {"t1", "t2"}, "unit/b": {"gone"}})
    assert verdict.regressions == {"unit/a": ["t2"], "unit/b": ["gone"]}
    assert verdict.new == {"unit/a": ["t3"]}
    text = report.explain(runs[0], ["t2"]) + report.explain(runs[1], ["gone"])
    assert "[unit/a] t2: err" in text and "Expected 1" in text
    assert "[unit/b] gone: never reached" in text


def test_update_adds_only_steady_passes_and_never_drops_unforced(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "passing.txt"
    monkeypatch.setattr(ledger, "LEDGER", path)
    ledger.write(path, {"unit/a": {"old"}, "unit/z": {"other"}}, [])
    first = [_run("unit/a", ["old", "steady", "flaky"])]
    second = [_run("unit/a", ["old", "steady"])]
    assert update_ledger(first, second, force=False) == 0
    assert dict(ledger.read(path)[0]) == {"unit/a": {"old", "steady"}, "unit/z": {"other"}}
    assert "flaky (passed in one of two runs, not added): [unit/a] flaky" in capsys.readouterr().out

    lost = [_run("unit/a", ["steady", "newer"])]
    assert update_ledger(lost, lost, force=False) == 1  # a regression: kept, status 1
    assert "kept, but it did not pass: [unit/a] old" in capsys.readouterr().out
    assert dict(ledger.read(path)[0])["unit/a"] == {"old", "steady", "newer"}
    assert update_ledger(lost, lost, force=True) == 0
    assert "dropped (FORCE): [unit/a] old" in capsys.readouterr().out
    assert dict(ledger.read(path)[0]) == {"unit/a": {"steady", "newer"}, "unit/z": {"other"}}


def test_readme_rewrite_touches_only_the_marked_part(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(f"before\n{report.BEGIN}\nold table\n{report.END}\nafter\n")
    assert report.rewrite_readme("| new |", readme)
    assert readme.read_text() == f"before\n{report.BEGIN}\n| new |\n{report.END}\nafter\n"
    (tmp_path / "plain.md").write_text("no markers\n")
    assert not report.rewrite_readme("x", tmp_path / "plain.md")


def test_mirrors_come_from_apt_configuration(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SLUICE_DEBIAN_MIRROR", raising=False)
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list.d" / "debian.sources").write_text(
        "Types: deb\n# a comment\nURIs: http://mirror.example/debian/\n"
        "  http://second.example/debian\nSuites: bookworm\n\n"
        "Enabled: no\nTypes: deb\nURIs: http://disabled.example/debian\n\n"
        "Types: deb-src\nURIs: http://src.example/debian\n")
    (tmp_path / "sources.list.d" / "extra.list").write_text(
        "deb [arch=amd64 signed-by=/k.gpg] https://third.example/debian bookworm main\n"
        "# deb http://commented.example/debian bookworm main\n")
    (tmp_path / "sources.list").write_text("deb http://mirror.example/debian bookworm main\n")
    assert build.apt_mirrors(tmp_path) == [
        "http://mirror.example/debian", "http://second.example/debian",
        "http://src.example/debian", "https://third.example/debian"]
    monkeypatch.setenv("SLUICE_DEBIAN_MIRROR", "http://env.example/debian")
    assert build.apt_mirrors(tmp_path)[0] == "http://env.example/debian"


def test_no_mirror_host_is_written_in_the_build_script() -> None:
    text = Path(build.__file__).read_text()
    assert "debian.org" not in text and "http://" not in text.replace('"http://", ', "")


def test_build_progress_counts_compiler_runs() -> None:
    log = (b"    \x1b[34mCC\x1b[0m \x1b[33madlist.o\x1b[0m\n"
           b"gcc -std=gnu11 -O2 -c -o src/jemalloc.o src/jemalloc.c\n"
           b"    \x1b[34mLINK\x1b[0m \x1b[33mredis-server\x1b[0m\n")
    assert build._compiled(log) == 2
