"""Configuration: one table of parameters drives the config file, the command line,
CONFIG GET / SET / REWRITE and the values the server reads (``config.port`` ...).

Mirrors Redis's ``config.c`` standard configs: each ``Param`` has a kind (bool, int, memory,
enum, string, special), a default, bounds, and flags (immutable at run time, protected by
``enable-protected-configs``). Values are kept as attributes named like the directive with
``-`` turned into ``_``, so the hot path reads ``config.proto_max_bulk_len`` directly.

Start-up follows redis-server: ``sluice-server [/path/to/sluice.conf] [--name value ...]``;
command-line directives are applied after the file. An unknown or malformed directive stops
start-up with Redis's message naming the line.
"""

from __future__ import annotations

import fnmatch
import glob
import logging
import os
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from sluice.commands.args import parse_memory as parse_memory  # re-exported: its old home
from sluice.commands.errors import ConfigError as ConfigError  # re-exported: its old home
from sluice.protocol import split_inline_args

from .config_redis import REDIS_PARAMS
from .config_rewrite import rewrite_file
from .config_table import HIDDEN, IMMUTABLE, MULTI, PARAMS, PROTECTED, Param

log = logging.getLogger("sluice")


class Config:
    """Current values as attributes, plus the machinery to read and change them."""

    if TYPE_CHECKING:
        # The parameters' attributes are set from the PARAMS table (``add``); each has the
        # type of its Param's parser, which the table, not this class, declares.
        def __getattr__(self, name: str) -> Any: ...

        def __setattr__(self, name: str, value: Any) -> None: ...

    def __init__(self, params: Iterable[Param] = ()) -> None:
        self._params: dict[str, Param] = {}
        self._listeners: dict[str, list[Callable[[Any], None]]] = {}
        self.config_file: str | None = None
        self._save_loaded = False  # a 'save' directive was read at start
        for p in [*PARAMS, *REDIS_PARAMS, *params]:
            self.add(p)

    def add(self, param: Param) -> None:
        """Register a parameter (families with settings of their own call this)."""
        self._params[param.name] = param
        for alias in param.aliases:
            self._params[alias] = param
        value = param.default
        setattr(self, param.attr, value.copy() if hasattr(value, "copy") else value)

    def on_change(self, name: str, fn: Callable[[Any], None]) -> None:
        """Call ``fn(new_value)`` after ``name`` changes (applies a setting at run time)."""
        self._listeners.setdefault(name, []).append(fn)

    def param(self, name: str) -> Param | None:
        return self._params.get(name.lower())

    def in_dir(self, path: str) -> str:
        """A file setting's path as Redis opens it: Redis chdir()s into ``dir``, so a relative
        ``aclfile``, ``logfile`` or ``unixsocket`` is taken from there (an absolute one as is)."""
        return os.path.join(self.dir, path)

    def names(self) -> list[str]:
        return sorted({p.name for p in self._params.values() if not p.flags & MULTI})

    def get_bytes(self, name: str) -> bytes:
        p = self._params[name]
        return p.to_bytes(getattr(self, p.attr))

    def get_matching(self, patterns: Iterable[bytes]) -> dict[bytes, bytes]:
        """CONFIG GET: every parameter matching any glob pattern (aliases included)."""
        out: dict[bytes, bytes] = {}
        for pat in patterns:
            text = pat.decode(errors="replace").lower()
            for name, p in self._params.items():
                if p.flags & MULTI:
                    continue
                if name == text or (not p.flags & HIDDEN and fnmatch.fnmatchcase(name, text)):
                    if name.encode() in out:
                        continue
                    out[name.encode()] = p.to_bytes(getattr(self, p.attr))
        return out

    def set_many(self, pairs: list[tuple[bytes, list[bytes]]], *, at_start: bool = False,
                 protected_ok: bool = False) -> None:
        """Apply several settings atomically: all are validated before any changes."""
        staged: list[tuple[Param, Any]] = []
        seen: set[str] = set()
        for raw_name, args in pairs:
            name = raw_name.decode(errors="replace").lower()
            p = self._params.get(name)
            if p is None:
                raise ConfigError(f"Unknown option or number of arguments for CONFIG SET - '{name}'")
            if p.name in seen:
                raise ConfigError(f"CONFIG SET failed (possibly related to argument '{name}') - duplicate parameter")
            seen.add(p.name)
            if p.flags & MULTI and not at_start:
                raise ConfigError(f"Unknown option or number of arguments for CONFIG SET - '{name}'")
            if not at_start:
                if p.flags & IMMUTABLE:
                    raise ConfigError(f"CONFIG SET failed (possibly related to argument '{name}') - can't set immutable config")
                if p.flags & PROTECTED and not protected_ok:
                    raise ConfigError(f"CONFIG SET failed (possibly related to argument '{name}') - can't set protected config")
            try:
                staged.append((p, p.convert(args)))
            except ConfigError as e:
                if at_start:
                    raise
                raise ConfigError(f"CONFIG SET failed (possibly related to argument '{name}') - {e}") from None
        before = [(p, getattr(self, p.attr)) for p, _ in staged]
        for p, value in staged:
            if p.flags & MULTI:
                value = getattr(self, p.attr) + value  # each directive line adds
            elif at_start and p.name == "save":
                # at start the first 'save' line (file or command line) replaces the
                # defaults, later ones add to it, and 'save ""' clears (Redis's
                # setConfigSaveOption); CONFIG SET replaces
                if value and self._save_loaded:
                    value = self.save + value
                self._save_loaded = True
            setattr(self, p.attr, value)
        if not at_start:
            for p, value in staged:
                try:
                    for fn in self._listeners.get(p.name, ()):
                        fn(value)
                except ConfigError as e:
                    self._roll_back(before)
                    raise ConfigError(f"CONFIG SET failed (possibly related to argument "
                                      f"'{p.name}') - {e}") from None

    def _roll_back(self, before: list[tuple[Param, Any]]) -> None:
        """An apply failed: every value of the CONFIG SET goes back, and is applied again
        (Redis's ``restoreBackupConfig``: what applied, and what failed half-way, such as
        listeners closed before new ones could bind)."""
        for p, old in before:
            setattr(self, p.attr, old)
        for p, old in before:
            for fn in self._listeners.get(p.name, ()):
                try:
                    fn(old)
                except ConfigError:  # Redis logs it and goes on: nothing better to do
                    log.warning("Failed applying restored configuration '%s'", p.name)

    # -- files and the command line --------------------------------------------------------

    def load_file(self, path: str) -> None:
        try:
            with open(path, encoding="utf-8", errors="surrogateescape") as f:
                lines = f.read().splitlines()
        except OSError as e:  # Redis's words, the path as the user gave it
            raise ConfigError(
                f"Fatal error, can't open config file '{path}': {e.strerror}") from None
        self.config_file = os.path.abspath(path)
        self.load_text(lines)

    def load_text(self, lines: list[str], depth: int = 0) -> None:
        for lineno, line in enumerate(lines, 1):
            stripped = line.strip()
            if not stripped or stripped.startswith("#"):
                continue
            args = split_inline_args(stripped.encode(errors="surrogateescape"))
            if args is None:
                raise ConfigError(_fatal(lineno, line, "Unbalanced quotes in configuration line"))
            if not args:
                continue
            if args[0].lower() == b"include" and len(args) == 2:
                self._include(args[1].decode(errors="surrogateescape"), depth)
                continue
            try:
                self.set_many([(args[0], args[1:])], at_start=True)
            except ConfigError as e:
                msg = str(e)
                if msg.startswith("Unknown option"):
                    msg = "Bad directive or wrong number of arguments"
                raise ConfigError(_fatal(lineno, line, msg)) from None

    def _include(self, pattern: str, depth: int) -> None:
        """``include <file>``: its directives apply here, in place. A pattern with ``*``,
        ``?`` or ``[`` includes every match, in name order, and may match nothing (an empty
        conf.d); a plain name must open. Nested includes stop at a depth of 16."""
        if depth >= 16:
            raise ConfigError(f"Fatal error, include nesting too deep at '{pattern}'")
        if any(c in pattern for c in "*?["):
            paths = sorted(glob.glob(pattern))
        else:
            paths = [pattern]
        for path in paths:
            try:
                with open(path, encoding="utf-8", errors="surrogateescape") as f:
                    lines = f.read().splitlines()
            except OSError as e:
                raise ConfigError(
                    f"Fatal error, can't open config file '{path}': {e.strerror}") from None
            self.load_text(lines, depth + 1)

    def load_argv(self, argv: list[str]) -> None:
        """``--port 7000 --save ""``: each ``--name`` starts a directive, as redis-server.

        As in redis-server's ``main``: an argument right after a bare ``--name`` is its value
        even when it starts with ``--`` (``--requirepass --secret``); ``--save`` with nothing
        after it, or followed by another ``--name``, means ``save ""``; ``"--port 7000"`` as
        one argument is a whole directive; ``loglevel verbose`` before any ``--name`` is the
        first directive (redis-server's "wrong usage that we support anyway").
        """
        lines: list[str] = []
        awaiting_value = False  # the last --name has no value yet
        for i, arg in enumerate(argv):
            if not awaiting_value and arg.startswith("--") and len(arg) > 2:
                lines.append(arg[2:])
                awaiting_value = len(arg[2:].split()) == 1
                if awaiting_value and arg.lower() == "--save" and (
                        i == len(argv) - 1 or argv[i + 1].startswith("--")):
                    lines[-1] += ' ""'
                    awaiting_value = False
            elif not lines and arg.startswith("-"):  # redis-server: a bad directive '"-x"'
                raise ConfigError(f"Invalid argument '{arg}': options are --name value pairs "
                                  "(sluice-server --help shows the usage)")
            else:  # a value; before any --name it starts the first line, as redis-server's
                quoted = '"' + arg.replace("\\", "\\\\").replace('"', '\\"') + '"'
                if lines:
                    lines[-1] += " " + quoted
                else:
                    lines.append(quoted)
                awaiting_value = False
        self.load_text(lines)

    def rewrite(self, users: list[str] | None, force_all: bool = False) -> None:
        """CONFIG REWRITE (config_rewrite.py): the config file brought up to date; ``users``
        are the ACL's ``user`` lines (None: an aclfile keeps them). Raises ConfigError
        without a config file, OSError when the file cannot be written."""
        if not self.config_file:
            raise ConfigError("The server is running without a config file")
        params = list(self._params.values())
        values = {p.name: getattr(self, p.attr) for p in params}
        rewrite_file(self.config_file, params, values, users, force_all)


def _fatal(lineno: int, line: str, reason: str) -> str:
    return (
        "\n*** FATAL CONFIG FILE ERROR (Sluice) ***\n"
        f"Reading the configuration file, at line {lineno}\n"
        f">>> '{line.strip()}'\n{reason}"
    )
