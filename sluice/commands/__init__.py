"""The command table: every family module's ``COMMANDS`` rows, collected in one dict.

A family module (``strings.py``, ``streams.py`` ...) ends with a ``COMMANDS`` tuple of
``spec.cmd(...)`` rows. ``load_table`` imports each module of this package, and attaches
``parent|sub`` rows to their parent's ``subcommands``. Handlers are typed against
``context.Context`` (what a handler may use; the server's client implements it), and no module
here imports ``sluice.server``. Each call returns fresh copies of the rows, so two servers in
one process (tests) never share INFO commandstats.
"""

from __future__ import annotations

import copy
import importlib
import pkgutil

from .cmdlatency import new_histogram
from .context import Command

_NOT_FAMILIES = {"spec", "args", "errors", "docs", "context", "reply"}


def load_table() -> dict[bytes, Command]:
    """name (lower-case bytes) -> its row, for every top-level command."""
    rows: list[Command] = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name in _NOT_FAMILIES or info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        # A copy per table: each server keeps its own command statistics.
        rows.extend(_fresh(row) for row in getattr(module, "COMMANDS", ()))
    table: dict[bytes, Command] = {}
    subs: list[Command] = []
    for row in rows:
        if "|" in row.name:
            subs.append(row)
        else:
            if row.name_bytes in table:
                raise ValueError(f"command {row.name} declared twice")
            table[row.name_bytes] = row
    for row in subs:
        parent_name, sub = row.name.split("|", 1)
        parent = table[parent_name.encode()]
        row.parent = parent
        row.first_arg = 2
        parent.subcommands[sub.encode()] = row
    return table


def _fresh(row: Command) -> Command:
    out = copy.copy(row)
    out.subcommands = {}
    out.parent = None
    out.calls = out.usec = out.rejected_calls = out.failed_calls = 0
    out.hist, out.hist_slow = new_histogram(), {}  # its own (copy.copy would share them)
    return out
