"""Start-up loading: replay the AOF through the command handlers, or load the RDB snapshot.

Role: Redis's ``loadDataFromDisk`` / ``loadAppendOnlyFiles`` / ``loadSingleAppendOnlyFile``.
With ``appendonly yes`` the AOF wins (the RDB file is not read), as in Redis. Each file named
by the manifest is loaded in order: a base in RDB format (``REDIS`` magic) through the RDB
reader, then commands, run by their handlers on a fake client whose replies are discarded
(``REPLY OFF``), so loading applies exactly the code paths that produced the log. MULTI/EXEC
blocks are applied only when their EXEC is read.

Torn tails: only the *last* file may end inside a command (a crash mid-write). With
``aof-load-truncated yes`` it is cut at the end of the last whole command (or before an
unterminated MULTI) with the byte offset logged, and loading goes on; with ``no`` start-up
is refused with the file, the offset and the remedy. Bytes that cannot be a command are
corruption wherever they are: refused with file, offset, and a hint to run the checker.
"""

from __future__ import annotations

import logging
import mmap
import os
import time
from typing import TYPE_CHECKING, Any

from sluice.commands.args import Args
from sluice.commands.errors import CommandError
from sluice.scripting.functions import LibraryError
from sluice.storage import aof as fmt
from sluice.storage import rdb
from sluice.storage.hashes import Hash
from sluice.storage.keyspace import WrongTypeError
from sluice.storage.lists import DEFAULT_FILL, ListValue
from sluice.storage.load_limits import loading_with
from sluice.storage.rdb import debug_delay
from sluice.storage.stream_errors import StreamError

from .client import REPLY_OFF, Client
from .dispatch import lookup

if TYPE_CHECKING:
    from sluice.commands.context import Command

    from .app import Server

log = logging.getLogger("sluice")


class LoadError(Exception):
    """The data on disk cannot be loaded safely; the message says where and what to do."""


class _Mapped:
    """A read-only view of a file (mmap when non-empty)."""

    def __init__(self, path: str) -> None:
        self.f = open(path, "rb")  # noqa: SIM115 - closed in close()
        size = os.fstat(self.f.fileno()).st_size
        self.data: Any = (mmap.mmap(self.f.fileno(), 0, access=mmap.ACCESS_READ)
                          if size else b"")

    def close(self) -> None:
        if isinstance(self.data, mmap.mmap):
            self.data.close()
        self.f.close()


class Replayer:
    """Runs logged commands on a fake client (no replies, no propagation)."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.client = Client(server, 0, None)
        self.client.reply_mode = REPLY_OFF
        self.client.kind = "aof"
        self.multi: list[tuple[Command, list[bytes]]] | None = None
        self.commands = 0
        self.errors = 0

    def run(self, argv: list[bytes], filename: str) -> None:
        name = argv[0].lower()
        if name == b"multi":
            self.multi = []
            return
        if name == b"exec" and self.multi is not None:
            queued, self.multi = self.multi, None
            for cmd, args in queued:
                self._call(cmd, args)
            return
        found = lookup(self.server.table, argv)
        if isinstance(found, CommandError):
            raise LoadError(
                f"Unknown command '{argv[0].decode(errors='replace')}' reading the append only "
                f"file {filename}" if found.message.startswith(b"ERR unknown command")
                else f"{found.message.decode(errors='replace')} reading the append only file "
                f"{filename}")
        if self.multi is not None:
            self.multi.append((found, argv))
        else:
            self._call(found, argv)

    def _call(self, cmd: Command, argv: list[bytes]) -> None:
        client = self.client
        client.argv = argv
        client.cmd = cmd
        self.commands += 1
        try:
            cmd.handler(client, Args(argv, 2 if cmd.parent else 1))  # type: ignore[misc]  # a row lookup found
        except (CommandError, WrongTypeError, StreamError) as e:
            self.errors += 1
            log.debug("AOF command %r failed on load: %s", argv[:2], e)


def load_aof(server: Server, directory: str, manifest: fmt.Manifest) -> int:
    """Load every file of the manifest; returns the number of keys loaded. Raises LoadError."""
    files = manifest.files()
    replayer = Replayer(server)
    truncated_ok = server.config.aof_load_truncated
    hint = (f"make a backup of your AOF file, then use sluice-check-aof --fix "
            f"{fmt.manifest_name(server.config.appendfilename)}")
    for i, info in enumerate(files):
        last = i == len(files) - 1
        path = os.path.join(directory, info.name)
        if not os.path.exists(path):
            if info.type == fmt.BASE or not last:
                raise LoadError(f"The AOF file {info.name} doesn't exist")
            continue
        started = time.monotonic()
        mapped = _Mapped(path)
        try:
            data = mapped.data
            pos = 0
            if len(data) >= 5 and data[:5] == fmt.RDB_MAGIC:
                try:
                    stats = rdb.LoadStats()
                    with loading_with(server.config):
                        pos = rdb.load_into(data, server.keyspace,
                                            server.keyspace.clock.now_ms(), stats,
                                            key_delay_us=server.config.key_load_delay)
                    load_functions(server, stats.functions)
                except rdb.RdbError as e:
                    raise LoadError(f"Error reading the RDB base file {info.name}, AOF loading "
                                    f"aborted: {e}") from None
                refill_lists(server)
            valid = pos
            multi_at = -1
            delay = server.config.key_load_delay
            try:
                for argv, end in fmt.parse_commands(data, pos):
                    if delay:  # as Redis's loadSingleAppendOnlyFile, per command
                        debug_delay(delay)
                    head = argv[0].lower()
                    if head == b"multi":
                        multi_at = valid
                    elif head == b"exec":
                        multi_at = -1
                    replayer.run(argv, info.name)
                    valid = end
                if replayer.multi is not None:
                    log.warning("Revert incomplete MULTI/EXEC transaction in AOF file %s",
                                info.name)
                    raise fmt.AofTruncated(multi_at, "unterminated MULTI")
            except fmt.AofCorrupt as e:
                # aof-load-corrupt-tail-max-size (Redis 8): bytes that are not a command, in
                # the last few bytes of the last file (a crash mid-write), are cut off like
                # a torn tail; a transaction they end inside goes with them.
                cut = multi_at if replayer.multi is not None else valid
                limit = server.config.aof_load_corrupt_tail_max_size
                if not (limit and len(data) - cut < limit):
                    raise LoadError(
                        f"Bad file format reading the append only file {info.name} at offset "
                        f"{e.offset} ({e.reason}): {hint}. Alternatively you can set the "
                        f"'aof-load-corrupt-tail-max-size' configuration option to "
                        f"{len(data) - cut + 1} and restart the server.") from None
                if not last:
                    raise LoadError(f"Fatal error: the truncated file is not the last file "
                                    f"({info.name}, valid up to offset {cut})") from None
                replayer.multi = None
                log.warning("!!! Warning: corrupt AOF file tail!!!")
                log.warning("!!! Truncating the AOF %s at offset %d (remaining %d) !!!",
                            info.name, cut, len(data) - cut)
                mapped.close()
                os.truncate(path, cut)
                log.warning("AOF %s loaded anyway because aof-load-corrupt-tail-max-size is "
                            "enabled", info.name)
            except fmt.AofTruncated as e:
                if replayer.multi is not None:  # torn inside a transaction: drop all of it
                    e.offset = multi_at
                replayer.multi = None
                if not last:
                    raise LoadError(f"Fatal error: the truncated file is not the last file "
                                    f"({info.name}, valid up to offset {e.offset})") from None
                if not truncated_ok:
                    raise LoadError(
                        f"Unexpected end of file reading the append only file {info.name} "
                        f"(valid up to offset {e.offset} of {len(data)}). You can: 1) Make a "
                        f"backup of your AOF file, then use sluice-check-aof --fix "
                        f"<filename.manifest>. 2) Alternatively you can set the "
                        f"'aof-load-truncated' configuration option to yes and restart the "
                        f"server.") from None
                log.warning("!!! Warning: short read while loading the AOF file %s!!!", info.name)
                log.warning("!!! Truncating the AOF %s at offset %d !!!", info.name, e.offset)
                mapped.close()
                os.truncate(path, e.offset)
                log.warning("AOF %s loaded anyway because aof-load-truncated is enabled",
                            info.name)
        finally:
            mapped.close()
        log.info("DB loaded from %s file %s: %.3f seconds",
                 "base" if info.type == fmt.BASE else "incr", info.name,
                 time.monotonic() - started)
    return sum(len(db) for db in server.keyspace.dbs)


def refill_lists(server: Server) -> None:
    """Lists come out of the RDB reader shaped for the default ``list-max-listpack-size``;
    Redis loads with its current setting, so apply the server's (nothing to do by default).
    Hashes get the encoding their ``hash-max-listpack-*`` settings give (``Hash.refit``)."""
    cfg = server.config
    fill = cfg.list_max_listpack_size
    entries, max_value = cfg.hash_max_listpack_entries, cfg.hash_max_listpack_value
    for db in server.keyspace.dbs:
        for value in db.data.values():
            kind = type(value)
            if kind is Hash:
                value.refit(entries, max_value)
            elif kind is ListValue and fill != DEFAULT_FILL:
                value.refill(fill)


def load_functions(server: Server, codes: list[bytes], policy: bytes = b"FLUSH") -> None:
    """The function libraries an RDB carried (rdbFunctionLoad: compiled without a time
    limit; a library that fails to load fails the load, as in Redis). ``policy`` is FUNCTION
    RESTORE's: APPEND fails on a library already there, REPLACE takes its place."""
    if not codes:
        return
    try:
        server.scripting.functions.restore_codes(codes, policy)
    except LibraryError as e:
        raise rdb.RdbError("Failed loading library: " + e.message.decode(errors="replace")
                           ) from None


def load_rdb_file(server: Server, path: str, functions_policy: bytes = b"FLUSH") -> int:
    """Load a snapshot into the keyspace; returns keys loaded. Raises LoadError."""
    mapped = _Mapped(path)
    stats = rdb.LoadStats()
    try:
        with loading_with(server.config):
            rdb.load_into(mapped.data, server.keyspace, server.keyspace.clock.now_ms(), stats,
                          key_delay_us=server.config.key_load_delay)
        load_functions(server, stats.functions, functions_policy)
        refill_lists(server)
        if server.persistence is not None:
            server.persistence.keys_expired_on_load = stats.expired
    except rdb.RdbError as e:
        raise LoadError(f"Short read or OOM loading DB. Unrecoverable error, aborting now. "
                        f"({os.path.basename(path)}: {e}; run sluice-check-rdb on it)") from None
    finally:
        mapped.close()
    return sum(len(db) for db in server.keyspace.dbs)
