"""Function libraries (Redis's functions.c): load, delete, flush, list, dump and restore.

A library is its code (``#!lua name=<lib>`` then Lua), run once at load time against the
load-time API; the functions it registers are kept by name (case-insensitive across all
libraries, as Redis's ``functions`` dict). DUMP is each library as an
``RDB_OPCODE_FUNCTION2`` record (the code as an RDB string), then the RDB version (2 bytes,
little endian) and a CRC64 (8 bytes): the payload Redis 8.6 writes, so dumps move between
Redis and Sluice. The same records are what the RDB file carries.
"""

from __future__ import annotations

import struct
from typing import Protocol

from sluice.storage.rdb_codec import RdbError, Reader, crc64, enc_string

from .convert import LuaValue
from .engine import LuaEngine
from .run import FLAG_NAMES
from .scripts import split_args

OPCODE_FUNCTION2 = 245
OPCODE_FUNCTION_PRE_GA = 246
LOAD_TIMEOUT_MS = 500
RDB_VERSION = 13


class LibraryError(Exception):
    """A library that cannot be loaded, restored or deleted; ``message`` is Redis's error."""

    def __init__(self, message: bytes) -> None:
        super().__init__(message)
        self.message = message


class Function:
    """A registered function (functionInfo)."""

    __slots__ = ("name", "fn", "desc", "flags", "library")

    def __init__(self, name: bytes, fn: LuaValue, desc: bytes | None, flags: int,
                 library: Library) -> None:
        self.name = name        # as registered (FCALL finds it case-insensitively)
        self.fn = fn            # the Lua callback (in the functions engine)
        self.desc = desc        # its description, if given
        self.flags = flags      # SCRIPT_FLAG_*
        self.library = library  # the library that registered it

    @property
    def flag_names(self) -> list[bytes]:
        return [n for bit, n in FLAG_NAMES if self.flags & bit]


class Library:
    """A loaded library (functionLibInfo)."""

    __slots__ = ("name", "engine", "code", "functions")

    def __init__(self, name: bytes, code: bytes) -> None:
        self.name = name        # from ``#!lua name=<lib>``
        self.engine = b"LUA"
        self.code = code        # as loaded, metadata line included
        self.functions: dict[bytes, Function] = {}  # by name, in registration order


def parse_metadata(code: bytes) -> tuple[bytes, bytes, bytes]:
    """(engine, library name, body) from ``#!<engine> name=<lib>``; functionExtractLibMetaData."""
    if not code.startswith(b"#!"):
        raise LibraryError(b"ERR Missing library metadata")
    end = code.find(b"\n")
    if end < 0:
        raise LibraryError(b"ERR Invalid library metadata")
    parts = split_args(code[:end])
    if not parts:
        raise LibraryError(b"ERR Invalid library metadata")
    engine = parts[0][2:]
    name: bytes | None = None
    for part in parts[1:]:
        if part[:5].lower() == b"name=":
            if name is not None:
                raise LibraryError(b"ERR Invalid metadata value, name argument was given "
                                   b"multiple times")
            name = part[5:]
            continue
        raise LibraryError(b"ERR Invalid metadata value given: " + part)
    if name is None:
        raise LibraryError(b"ERR Library name was not given")
    return engine, name, code[end:]


def _valid_name(name: bytes) -> bool:
    return bool(name) and all(c == 95 or 48 <= c <= 57 or 65 <= c <= 90 or 97 <= c <= 122
                              for c in name)


class LibrariesOwner(Protocol):
    """What the libraries need of their owner (``runner.Scripting``)."""

    @property
    def function_engine(self) -> LuaEngine: ...  # runs library code
    def reset_functions(self) -> None: ...  # FUNCTION FLUSH: a fresh runtime


class FunctionLibraries:
    """Every library and, across them, every function by lower-case name."""

    __slots__ = ("host", "libraries", "functions")

    def __init__(self, host: LibrariesOwner) -> None:
        self.host = host
        self.libraries: dict[bytes, Library] = {}
        self.functions: dict[bytes, Function] = {}  # lower-case name -> function

    def find(self, name: bytes) -> Function | None:
        return self.functions.get(name.lower())

    def _compile(self, code: bytes, timeout_ms: int) -> Library:
        engine_name, name, body = parse_metadata(code)
        if not _valid_name(name):
            raise LibraryError(b"ERR Library names can only contain letters, numbers, or "
                               b"underscores(_) and must be at least one character long")
        if engine_name.upper() != b"LUA":
            raise LibraryError(b"ERR Engine '" + engine_name + b"' not found")
        registered, err = self.host.function_engine.load_library(body, timeout_ms)
        if registered is None:
            raise LibraryError(b"ERR " + err)
        if not registered:
            raise LibraryError(b"ERR No functions registered")
        lib = Library(name, code)
        for fname, fn, desc, flags in registered:
            lib.functions[fname] = Function(fname, fn, desc, flags, lib)
        return lib

    def load(self, code: bytes, replace: bool, timeout_ms: int = LOAD_TIMEOUT_MS) -> bytes:
        """FUNCTION LOAD: the library's name; LibraryError with Redis's message."""
        engine_name, name, _ = parse_metadata(code)
        if _valid_name(name) and engine_name.upper() != b"LUA":
            raise LibraryError(b"ERR Engine '" + engine_name + b"' not found")
        old = self.libraries.get(name)
        if old is not None and not replace and _valid_name(name):
                raise LibraryError(b"ERR Library '" + name + b"' already exists")
        lib = self._compile(code, timeout_ms)
        old = self.libraries.get(lib.name)
        if old is not None and not replace:
            raise LibraryError(b"ERR Library '" + lib.name + b"' already exists")
        for fname in lib.functions:
            other = self.functions.get(fname.lower())
            if other is not None and other.library is not old:
                raise LibraryError(b"ERR Function " + fname + b" already exists")
        if old is not None:
            self._unlink(old)
        self._link(lib)
        return lib.name

    def _link(self, lib: Library) -> None:
        self.libraries[lib.name] = lib
        for fname, f in lib.functions.items():
            self.functions[fname.lower()] = f

    def _unlink(self, lib: Library) -> None:
        del self.libraries[lib.name]
        for fname in lib.functions:
            self.functions.pop(fname.lower(), None)

    def delete(self, name: bytes) -> None:
        lib = self.libraries.get(name)
        if lib is None:
            raise LibraryError(b"ERR Library not found")
        self._unlink(lib)

    def flush(self) -> None:
        self.libraries = {}
        self.functions = {}
        self.host.reset_functions()

    # -- DUMP / RESTORE / RDB ------------------------------------------------------------

    def records(self) -> bytes:
        """The RDB function records (rdbSaveFunctions)."""
        return b"".join(bytes((OPCODE_FUNCTION2,)) + enc_string(lib.code, compress=True)
                        for lib in self.libraries.values())

    def dump(self) -> bytes:
        body = self.records() + struct.pack("<H", RDB_VERSION)
        return body + struct.pack("<Q", crc64(body))

    def restore(self, payload: bytes, policy: bytes) -> None:
        """FUNCTION RESTORE with policy FLUSH, APPEND or REPLACE."""
        if len(payload) < 10:
            raise LibraryError(b"ERR DUMP payload version or checksum are wrong")
        version = struct.unpack_from("<H", payload, len(payload) - 10)[0]
        crc = struct.unpack_from("<Q", payload, len(payload) - 8)[0]
        if version > RDB_VERSION or (crc and crc != crc64(payload[:-8])):
            raise LibraryError(b"ERR DUMP payload version or checksum are wrong")
        codes: list[bytes] = []
        r = Reader(payload, 0, len(payload) - 10)
        try:
            while r.pos < r.end:
                op = r.byte()
                if op == OPCODE_FUNCTION_PRE_GA:
                    raise LibraryError(b"ERR Pre-GA function format not supported")
                if op != OPCODE_FUNCTION2:
                    raise LibraryError(b"ERR given type is not a function")
                codes.append(r.string())
        except RdbError as e:
            raise LibraryError(b"ERR can not read data type") from e
        self.restore_codes(codes, policy)

    def restore_codes(self, codes: list[bytes], policy: bytes) -> None:
        """Compile every library first (no time limit, as rdbFunctionLoad), then apply."""
        new: dict[bytes, Library] = {}
        for code in codes:
            try:
                lib = self._compile(code, 0)
            except LibraryError as e:
                raise e
            if lib.name in new:
                raise LibraryError(b"ERR Library " + lib.name + b" already exists")
            new[lib.name] = lib
        new_functions: dict[bytes, Function] = {}
        for lib in new.values():
            for fname, f in lib.functions.items():
                if fname.lower() in new_functions:
                    raise LibraryError(b"ERR Function " + fname + b" already exists")
                new_functions[fname.lower()] = f
        if policy == b"FLUSH":
            self.libraries = new
            self.functions = new_functions
            return
        replace = policy == b"REPLACE"
        removed: list[Library] = []
        for name in new:
            old = self.libraries.get(name)
            if old is not None:
                if not replace:
                    for lib in removed:
                        self._link(lib)
                    raise LibraryError(b"ERR Library " + name + b" already exists")
                self._unlink(old)
                removed.append(old)
        for fname in new_functions:
            if fname in self.functions:
                for lib in removed:
                    self._link(lib)
                raise LibraryError(b"ERR Function " + new_functions[fname].name
                                   + b" already exists")
        for lib in new.values():
            self._link(lib)
