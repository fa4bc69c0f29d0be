"""The conformance ledger and the reference's counts: files in the repo, one test a line.

``passing.txt`` lists the Tcl tests Sluice passes (the ratchet: each must keep passing), and
``reference.txt`` the tests redis-server passes run the same way, with its version, so
``make test`` compares with it without running the reference again. A line is
``unit<TAB>key``: the unit (``unit/type/stream``) and the test's key, its name made unique in
the unit (`` #2`` for the second test of the same name, in the order the unit runs them;
see ``runner.Outcome``). Tabs and newlines inside names are written as ``\\t`` and ``\\n``.
Lines are sorted; ``#`` lines are comments.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
LEDGER = HERE / "passing.txt"
REFERENCE = HERE / "reference.txt"
SPAWN_REFERENCE = HERE / "reference-spawn.txt"

Entries = dict[str, set[str]]  # unit -> keys


def _escape(key: str) -> str:
    return key.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"t": "\t", "n": "\n"}.get(m.group(1), m.group(1)),
                  text)


def read(path: Path) -> tuple[Entries, dict[str, str]]:
    """The entries of a ledger file and its ``# name: value`` header fields."""
    entries: Entries = defaultdict(set)
    fields: dict[str, str] = {}
    if not path.exists():
        return entries, fields
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            m = re.match(r"#\s*([a-z-]+):\s*(.*)$", line)
            if m:
                fields[m.group(1)] = m.group(2).strip()
            continue
        if not line.strip():
            continue
        unit, _, key = line.partition("\t")
        entries[unit].add(_unescape(key))
    return entries, fields


def write(path: Path, entries: Entries, header: list[str]) -> None:
    lines = [f"# {h}" if h else "#" for h in header]
    for unit in sorted(entries):
        lines += [f"{unit}\t{_escape(key)}" for key in sorted(entries[unit])]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def count(entries: Entries) -> int:
    return sum(len(keys) for keys in entries.values())


LEDGER_HEADER = [
    "The Tcl tests of Redis's own suite that Sluice passes (tests/conformance).",
    "make test fails when one of them fails; make conformance lists tests that newly pass,",
    "make conformance UPDATE=1 adds them (a test enters only after passing twice in a row).",
    "The ledger only grows: UPDATE never drops an entry unless FORCE=1 is given too.",
    "Format: unit<TAB>test name (a repeated name gets ' #n' in the order its unit runs it).",
]
