"""EVAL's script cache: SHA1 -> compiled body, and the shebang flags (Redis's eval.c).

Scripts added by EVAL are kept in an LRU of 500 (older ones are evicted, counted in INFO
``evicted_scripts``); SCRIPT LOAD's are never evicted. The cache lives as long as the eval
runtime: SCRIPT FLUSH drops both.
"""

from __future__ import annotations

import collections
from typing import Any

from .engine import ALLOW_CROSS_SLOT, EVAL_COMPAT_MODE, FLAG_NAMES, sha1hex

LRU_LENGTH = 500


class ScriptCompileError(Exception):
    def __init__(self, message: bytes) -> None:
        super().__init__(message)
        self.message = message


class EvalScript:
    __slots__ = ("body", "flags", "fn", "evictable")

    def __init__(self, body: bytes, flags: int, fn: Any, evictable: bool) -> None:
        self.body = body
        self.flags = flags
        self.fn = fn
        self.evictable = evictable


def extract_shebang(body: bytes) -> tuple[int, int]:
    """(script flags, length of the shebang line) as evalExtractShebangFlags; no shebang is
    EVAL_COMPAT_MODE. Raises ScriptCompileError with Redis's message."""
    if not body.startswith(b"#!"):
        return EVAL_COMPAT_MODE, 0
    end = body.find(b"\n")
    if end < 0:
        raise ScriptCompileError(b"ERR Invalid script shebang")
    parts = body[:end].split()
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


class EvalScripts:
    def __init__(self, host: Any) -> None:
        self.host = host
        self.cache: dict[bytes, EvalScript] = {}
        self.lru: collections.OrderedDict[bytes, None] = collections.OrderedDict()
        self.memory = 0

    def get(self, sha: bytes) -> EvalScript | None:
        s = self.cache.get(sha)
        if s is None and len(sha) == 40:
            s = self.cache.get(sha.lower())
        return s

    def touch(self, sha: bytes) -> None:
        if sha in self.lru:
            self.lru.move_to_end(sha)

    def create(self, body: bytes, from_eval: bool) -> bytes:
        """luaCreateFunction: the SHA of ``body``, compiling it if new."""
        sha = sha1hex(body)
        if sha in self.cache:
            return sha
        flags, shebang_len = extract_shebang(body)
        engine = self.host.eval_engine
        # A shebang line is skipped but its newline kept, so line numbers stay right.
        fn, err = engine.compile(body[shebang_len:])
        if fn is None:
            raise ScriptCompileError(b"ERR Error compiling script (new function): " + err)
        if from_eval:
            while len(self.lru) >= LRU_LENGTH:
                oldest, _ = self.lru.popitem(last=False)
                old = self.cache.pop(oldest, None)
                if old is not None:
                    self.memory -= len(old.body) + 40
                self.host.evicted_scripts += 1
            self.lru[sha] = None
        self.cache[sha] = EvalScript(body, flags, fn, from_eval)
        self.memory += len(body) + 40
        return sha

    def flush(self) -> None:
        self.cache = {}
        self.lru = collections.OrderedDict()
        self.memory = 0
        self.host.reset_eval()


__all__ = ["ALLOW_CROSS_SLOT", "EvalScript", "EvalScripts", "ScriptCompileError",
           "extract_shebang"]
