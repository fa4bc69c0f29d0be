"""The append-only file format: RESP-encoded commands, Redis 7's multi-part layout, parsing.

Role: everything about AOF *files* that does not need a running server: encoding a command
the way Redis logs it, the manifest (``appendonly.aof.manifest``) that names the base file and
the incremental files, a parser that walks commands with their byte offsets and tells a torn
tail (a short read at end of file) from corruption (bytes that cannot be a command), and the
analysis ``sluice-check-aof`` prints. The server side (buffering, fsync policies, rewrite)
lives in ``sluice.server.persistence``.

Mirrors Redis 7.0's ``aof.c`` (``catAppendOnlyGenericCommand``, ``aofInfoFormat``,
``aofLoadManifestFromFile``, ``getNewBaseFileNameAndMarkPreAsHistory``, ``getNewIncrAofName``,
``loadSingleAppendOnlyFile``) and ``redis-check-aof.c``. Names of files are Redis's, so a
directory written by Sluice can be handed to redis-server and back:

    appendonlydir/appendonly.aof.1.base.rdb   (or .base.aof without the RDB preamble)
    appendonlydir/appendonly.aof.1.incr.aof
    appendonlydir/appendonly.aof.manifest     "file <name> seq <n> type b|h|i" per line

Invariants:
- A manifest has at most one base, incremental files in strictly increasing ``seq`` order,
  and names that are plain file names (never paths).
- ``parse_commands`` yields a command only when it is complete; the offset it yields is the
  byte just after it, so "valid up to" is always the end of a whole command.
- Lines starting with ``#`` between commands are annotations (``#TS:<unix>`` timestamps) and
  are skipped, as Redis does.

Imports nothing of Sluice's.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

BASE, HISTORY, INCR = "b", "h", "i"
RDB_MAGIC = b"REDIS"


def encode_command(argv: Sequence[bytes]) -> bytes:
    """``*<n>\\r\\n`` then ``$<len>\\r\\n<arg>\\r\\n`` per argument (what Redis writes)."""
    out = [b"*%d\r\n" % len(argv)]
    for a in argv:
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


SELECT_CACHE = [encode_command([b"SELECT", str(i).encode()]) for i in range(16)]


def encode_select(db: int) -> bytes:
    return SELECT_CACHE[db] if db < 16 else encode_command([b"SELECT", str(db).encode()])


# -- parsing ----------------------------------------------------------------------------------


class AofError(Exception):
    """A file that cannot be loaded as it is. ``offset``: the end of the last whole command."""

    def __init__(self, offset: int, reason: str, line: int = 0) -> None:
        super().__init__(reason)
        self.offset = offset
        self.reason = reason
        self.line = line


class AofTruncated(AofError):
    """The file ends inside a command (a torn write): the tail can be cut at ``offset``."""


class AofCorrupt(AofError):
    """Bytes that are not a command: refusing is the only safe answer."""


def _number(line: bytes) -> int:
    """Strict decimal (Python's ``int`` would take ``+1``, `` 1`` and ``1_0``)."""
    if not line.isdigit() or len(line) > 18:
        return -1
    return int(line)


def parse_commands(data: bytes, pos: int = 0) -> Iterator[tuple[list[bytes], int]]:
    """Yield ``(argv, end_offset)`` for every command of ``data`` from ``pos``.

    Raises ``AofTruncated`` when the data ends inside a command and ``AofCorrupt`` when a
    byte cannot belong to a command; both carry the offset after the last whole command.
    """
    n = len(data)
    find = data.find
    while pos < n:
        start = pos
        first = data[pos]
        if first == 0x23:  # '#': an annotation line
            nl = find(b"\n", pos)
            if nl < 0:
                raise AofTruncated(start, "annotation without end of line")
            pos = nl + 1
            continue
        if first != 0x2A:  # '*'
            raise AofCorrupt(start, f"expected '*' at offset {start}, got {data[pos : pos + 1]!r}")
        nl = find(b"\n", pos)
        if nl < 0:
            raise AofTruncated(start, "short read in a multibulk header")
        argc = _number(data[pos + 1 : nl].rstrip(b"\r"))
        if argc < 1 or data[nl - 1] != 0x0D:
            raise AofCorrupt(start, f"invalid multibulk length at offset {pos}")
        pos = nl + 1
        argv: list[bytes] = []
        for _ in range(argc):
            if pos >= n:
                raise AofTruncated(start, "short read before an argument")
            if data[pos] != 0x24:  # '$'
                raise AofCorrupt(
                    start, f"expected '$' at offset {pos}, got {data[pos : pos + 1]!r}"
                )
            nl = find(b"\n", pos)
            if nl < 0:
                raise AofTruncated(start, "short read in a bulk length")
            size = _number(data[pos + 1 : nl].rstrip(b"\r"))
            if size < 0 or data[nl - 1] != 0x0D:
                raise AofCorrupt(start, f"invalid bulk length at offset {pos}")
            pos = nl + 1
            end = pos + size
            if end + 2 > n:
                raise AofTruncated(start, "short read in an argument")
            if data[end : end + 2] != b"\r\n":
                raise AofCorrupt(start, f"expected \\r\\n at offset {end}")
            argv.append(data[pos:end])
            pos = end + 2
        yield argv, pos


@dataclass
class Analysis:
    """What ``sluice-check-aof`` reports for one file of commands."""

    size: int
    ok_up_to: int
    ok_up_to_line: int
    commands: int
    error: AofError | None = None
    open_multi: bool = False  # ends inside MULTI without EXEC (Redis treats it as truncated)

    @property
    def valid(self) -> bool:
        return self.error is None and not self.open_multi


def analyze(data: bytes, start: int = 0) -> Analysis:
    """Walk every command; report where the file stops being valid and why."""
    ok = start
    commands = 0
    multi_at = -1
    error: AofError | None = None
    try:
        for argv, end in parse_commands(data, start):
            name = argv[0].lower()
            if name == b"multi":
                if multi_at >= 0:
                    raise AofCorrupt(ok, "unexpected MULTI inside MULTI")
                multi_at = ok
            elif name == b"exec":
                if multi_at < 0:
                    raise AofCorrupt(ok, "unexpected EXEC without MULTI")
                multi_at = -1
            ok = end
            commands += 1
    except AofError as e:
        error = e
    if multi_at >= 0:
        ok = multi_at
    return Analysis(len(data), ok, data.count(b"\n", 0, ok), commands, error, multi_at >= 0)


# -- the manifest -----------------------------------------------------------------------------


class ManifestError(Exception):
    pass


@dataclass
class AofInfo:
    name: str
    seq: int
    type: str  # BASE | HISTORY | INCR


def _needs_quotes(name: str) -> bool:
    return any(c in name for c in " \t\r\n\"'\\") or not name.isprintable()


def _quote(name: str) -> str:
    out = ['"']
    for ch in name.encode(errors="surrogateescape"):
        c = chr(ch)
        if c in '\\"':
            out.append("\\" + c)
        elif c == "\n":
            out.append("\\n")
        elif c == "\r":
            out.append("\\r")
        elif c == "\t":
            out.append("\\t")
        elif 32 <= ch < 127:
            out.append(c)
        else:
            out.append(f"\\x{ch:02x}")
    out.append('"')
    return "".join(out)


def _split_line(line: str) -> list[str]:
    """Split a manifest line into words, with Redis's ``sdssplitargs`` quoting rules."""
    words: list[str] = []
    i, n = 0, len(line)
    while i < n:
        while i < n and line[i] in " \t":
            i += 1
        if i >= n:
            break
        if line[i] == '"':
            i += 1
            buf = bytearray()
            while True:
                if i >= n:
                    raise ManifestError("Invalid AOF manifest file format")
                c = line[i]
                if c == "\\" and i + 1 < n:
                    nxt = line[i + 1]
                    if nxt == "x" and i + 3 < n:
                        buf.append(int(line[i + 2 : i + 4], 16))
                        i += 4
                        continue
                    buf += {"n": b"\n", "r": b"\r", "t": b"\t", "b": b"\b", "a": b"\a"}.get(
                        nxt, nxt.encode()
                    )
                    i += 2
                    continue
                if c == '"':
                    i += 1
                    break
                buf += c.encode(errors="surrogateescape")
                i += 1
            words.append(buf.decode(errors="surrogateescape"))
        else:
            j = i
            while j < n and line[j] not in " \t":
                j += 1
            words.append(line[i:j])
            i = j
    return words


@dataclass
class Manifest:
    """The list of files that together make the AOF (``aofManifest`` in Redis)."""

    base: AofInfo | None = None
    incrs: list[AofInfo] = field(default_factory=list)
    history: list[AofInfo] = field(default_factory=list)
    base_seq: int = 0  # highest base sequence number used so far
    incr_seq: int = 0  # highest incremental sequence number used so far

    @classmethod
    def parse(cls, text: str) -> Manifest:
        m = cls()
        lines = text.splitlines(keepends=True)
        if not lines:
            raise ManifestError("Found an empty AOF manifest")
        for raw in lines:
            if raw.startswith("#"):
                continue
            line = raw.strip(" \t\r\n")
            if not line:
                raise ManifestError("Invalid AOF manifest file format")
            words = _split_line(line)
            if len(words) < 6 or len(words) % 2:
                raise ManifestError("Invalid AOF manifest file format")
            name, seq, kind = "", 0, ""
            for k in range(0, len(words), 2):
                key, value = words[k].lower(), words[k + 1]
                if key == "file":
                    name = value
                    if os.path.basename(name) != name:
                        raise ManifestError("File can't be a path, just a filename")
                elif key == "seq":
                    seq = int(value) if value.isdigit() else 0
                elif key == "type":
                    kind = value[:1]
            if not name or not seq or not kind:
                raise ManifestError("Invalid AOF manifest file format")
            info = AofInfo(name, seq, kind)
            if kind == BASE:
                if m.base is not None:
                    raise ManifestError("Found duplicate base file information")
                m.base = info
                m.base_seq = seq
            elif kind == HISTORY:
                m.history.append(info)
            elif kind == INCR:
                if seq <= m.incr_seq:
                    raise ManifestError("Found a non-monotonic sequence number")
                m.incrs.append(info)
                m.incr_seq = seq
            else:
                raise ManifestError("Unknown AOF file type")
        return m

    def format(self) -> bytes:
        lines = []
        for info in ([self.base] if self.base else []) + self.history + self.incrs:
            name = _quote(info.name) if _needs_quotes(info.name) else info.name
            lines.append(f"file {name} seq {info.seq} type {info.type}\n")
        return "".join(lines).encode(errors="surrogateescape")

    def files(self) -> list[AofInfo]:
        """The files to load, in order: the base, then the incremental files."""
        return ([self.base] if self.base else []) + list(self.incrs)

    def new_base(self, filename: str, rdb: bool) -> AofInfo:
        """Name the next base; the current base and incremental files become history."""
        if self.base is not None:
            self.history.append(AofInfo(self.base.name, self.base.seq, HISTORY))
        self.base_seq += 1
        self.base = AofInfo(
            f"{filename}.{self.base_seq}.base.{'rdb' if rdb else 'aof'}", self.base_seq, BASE
        )
        return self.base

    def new_incr(self, filename: str) -> AofInfo:
        self.incr_seq += 1
        info = AofInfo(f"{filename}.{self.incr_seq}.incr.aof", self.incr_seq, INCR)
        self.incrs.append(info)
        return info

    def copy(self) -> Manifest:
        return Manifest(
            AofInfo(self.base.name, self.base.seq, self.base.type) if self.base else None,
            [AofInfo(i.name, i.seq, i.type) for i in self.incrs],
            [AofInfo(i.name, i.seq, i.type) for i in self.history],
            self.base_seq,
            self.incr_seq,
        )


def manifest_name(filename: str) -> str:
    return filename + ".manifest"


def write_durably(path: str, data: bytes) -> None:
    """Write ``path`` through a temp file: fsync, rename, fsync the directory."""
    directory = os.path.dirname(path) or "."
    tmp = os.path.join(directory, "temp-" + os.path.basename(path))
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):  # a failed write leaves the old file, no debris
            os.unlink(tmp)
        raise
    fsync_dir(directory)


def fsync_dir(directory: str) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
