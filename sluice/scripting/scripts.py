"""EVAL's script cache: SHA1 -> compiled body, and the shebang flags (Redis's eval.c).

Scripts added by EVAL are kept in an LRU of 500 (older ones are evicted, counted in INFO
``evicted_scripts``); SCRIPT LOAD's are never evicted. The cache lives as long as the eval
runtime: SCRIPT FLUSH drops both.
"""

from __future__ import annotations

import collections
from typing import Protocol

from .convert import LuaValue
from .engine import LuaEngine, sha1hex
from .run import ALLOW_CROSS_SLOT, EVAL_COMPAT_MODE, FLAG_NAMES

LRU_LENGTH = 500


class ScriptCompileError(Exception):
    """A body that does not compile, or a bad shebang; ``message`` is Redis's error."""

    def __init__(self, message: bytes) -> None:
        super().__init__(message)
        self.message = message


class EvalScript:
    """A cached script: its body, SHA1, shebang flags and compiled function."""

    __slots__ = ("body", "sha", "flags", "fn", "evictable")

    def __init__(self, body: bytes, sha: bytes, flags: int, fn: LuaValue,
                 evictable: bool) -> None:
        self.body = body
        self.sha = sha              # lower-case hex SHA1 of the body
        self.flags = flags          # SCRIPT_FLAG_* from the shebang, or EVAL_COMPAT_MODE
        self.fn = fn                # the compiled chunk (in the eval engine)
        self.evictable = evictable  # added by EVAL (in the LRU), not SCRIPT LOAD


def split_args(line: bytes) -> list[bytes] | None:
    """Redis's sdssplitargs: words split on blanks, "double" quotes with escapes (\\n,
    \\xHH ...) and 'single' quotes; None on unbalanced quotes."""
    out: list[bytes] = []
    i, n = 0, len(line)
    while True:
        while i < n and line[i] in b" \n\r\t\x0b\x0c":
            i += 1
        if i >= n:
            return out
        cur = bytearray()
        inq = insq = False
        while True:
            if inq:
                if i >= n:
                    return None
                c = line[i]
                if c == 92 and i + 3 < n and line[i + 1] == 120 and _ishex(line[i + 2]) \
                        and _ishex(line[i + 3]):
                    cur.append(int(line[i + 2:i + 4], 16))
                    i += 3
                elif c == 92 and i + 1 < n:
                    i += 1
                    cur.append({110: 10, 114: 13, 116: 9, 98: 8, 97: 7}.get(line[i], line[i]))
                elif c == 34:
                    if i + 1 < n and line[i + 1] not in b" \n\r\t\x0b\x0c":
                        return None
                    inq = False
                    i += 1
                    break
                else:
                    cur.append(c)
            elif insq:
                if i >= n:
                    return None
                c = line[i]
                if c == 92 and i + 1 < n and line[i + 1] == 39:
                    i += 1
                    cur.append(39)
                elif c == 39:
                    if i + 1 < n and line[i + 1] not in b" \n\r\t\x0b\x0c":
                        return None
                    insq = False
                    i += 1
                    break
                else:
                    cur.append(c)
            else:
                if i >= n:
                    break
                c = line[i]
                if c in b" \n\r\t\x0b\x0c":
                    break
                if c == 34:
                    inq = True
                elif c == 39:
                    insq = True
                else:
                    cur.append(c)
            i += 1
        out.append(bytes(cur))


def _ishex(c: int) -> bool:
    return 48 <= c <= 57 or 65 <= c <= 70 or 97 <= c <= 102


def extract_shebang(body: bytes) -> tuple[int, int]:
    """(script flags, length of the shebang line) as evalExtractShebangFlags; no shebang is
    EVAL_COMPAT_MODE. Raises ScriptCompileError with Redis's message."""
    if not body.startswith(b"#!"):
        return EVAL_COMPAT_MODE, 0
    end = body.find(b"\n")
    if end < 0:
        raise ScriptCompileError(b"ERR Invalid script shebang")
    parts = split_args(body[:end])
    if not parts:
        raise ScriptCompileError(b"ERR Invalid engine in script shebang")
    if parts[0] != b"#!lua":
        raise ScriptCompileError(b"ERR Unexpected engine in script shebang: " + parts[0])
    flags = 0
    for part in parts[1:]:
        if not part.startswith(b"flags="):
            raise ScriptCompileError(b"ERR Unknown lua shebang option: " + part)
        for name in part[6:].split(b","):
            for bit, fname in FLAG_NAMES:
                if name == fname:
                    flags |= bit
                    break
            else:
                raise ScriptCompileError(b"ERR Unexpected flag in script shebang: " + name)
    return flags, end


class ScriptsOwner(Protocol):
    """What the cache needs of its owner (``runner.Scripting``)."""

    evicted_scripts: int  # INFO evicted_scripts

    @property
    def eval_engine(self) -> LuaEngine: ...  # compiles the bodies
    def reset_eval(self) -> None: ...  # SCRIPT FLUSH: a fresh runtime


class EvalScripts:
    """EVAL's cache: SHA1 -> script; the LRU of EVAL bodies (SCRIPT LOAD's stay)."""

    __slots__ = ("owner", "cache", "lru", "memory")

    def __init__(self, owner: ScriptsOwner) -> None:
        self.owner = owner
        self.cache: dict[bytes, EvalScript] = {}
        self.lru: collections.OrderedDict[bytes, None] = collections.OrderedDict()
        self.memory = 0  # INFO used_memory_scripts_eval

    def get(self, sha: bytes) -> EvalScript | None:
        s = self.cache.get(sha)
        if s is None and len(sha) == 40:
            s = self.cache.get(sha.lower())
        return s

    def get_body(self, body: bytes) -> EvalScript | None:
        """The cached script with this body, if any."""
        return self.cache.get(sha1hex(body))

    @staticmethod
    def shebang_flags(body: bytes) -> int:
        """The flags a body declares (EVAL_COMPAT_MODE: none); ScriptCompileError."""
        return extract_shebang(body)[0]

    def touch(self, sha: bytes) -> None:
        if sha in self.lru:
            self.lru.move_to_end(sha)

    def create(self, body: bytes, from_eval: bool) -> EvalScript:
        """luaCreateFunction: the script of ``body``, compiled if new."""
        sha = sha1hex(body)
        script = self.cache.get(sha)
        if script is not None:  # SCRIPT LOAD of an EVAL'd body leaves it evictable, as Redis
            return script
        flags, shebang_len = extract_shebang(body)
        # A shebang line is skipped but its newline kept, so line numbers stay right.
        fn, err = self.owner.eval_engine.compile(body[shebang_len:])
        if fn is None:
            raise ScriptCompileError(b"ERR Error compiling script (new function): " + err)
        if from_eval:
            while len(self.lru) >= LRU_LENGTH:
                oldest, _ = self.lru.popitem(last=False)
                old = self.cache.pop(oldest, None)
                if old is not None:
                    self.memory -= len(old.body) + 40
                self.owner.evicted_scripts += 1
            self.lru[sha] = None
        script = self.cache[sha] = EvalScript(body, sha, flags, fn, from_eval)
        self.memory += len(body) + 40
        return script

    def flush(self) -> None:
        self.cache = {}
        self.lru = collections.OrderedDict()
        self.memory = 0
        self.owner.reset_eval()


__all__ = ["ALLOW_CROSS_SLOT", "EvalScript", "EvalScripts", "ScriptCompileError",
           "extract_shebang"]
