"""The append-only file at run time: ``server.aof`` (installed when ``appendonly yes``).

Role: turn every write into RESP commands, get them to disk with the configured fsync policy,
and rewrite the AOF in the background. The hook interface is what ``dispatch.py`` and
``app.py`` call:

* ``feed(db_id, argvs)`` after a command changed the dataset (``ctx.rewrite_argv`` gives the
  effect to log instead of the request; relative expiries are made absolute here as a safety
  net). A ``SELECT`` is prepended when the database changes, as Redis's ``feedAppendOnlyFile``.
* ``begin_multi(db)`` / ``end_multi()`` around EXEC: ``MULTI`` is written lazily, before the
  first command EXEC actually logs, once a second one comes (a transaction that logs one
  command logs it bare, as Redis 7+), and ``EXEC`` only if ``MULTI`` was.
* ``commit()`` from ``Server.write_replies`` at the end of each loop iteration, before any
  reply of it is written (Redis's ``beforeSleep``: ``flushAppendOnlyFile``, then
  ``handleClientsWithPendingWrites``). ``always``: group commit, one ``write`` + one
  ``fsync`` for every command of the iteration. So no reply leaves before its command is on
  disk, and 50 clients cost one fsync, not fifty. ``everysec`` / ``no``: the same, with a
  write and no fsync: one ``write`` per iteration, and no reply before its command is in
  the kernel (a crash of the process loses nothing acknowledged; a crash of the machine up
  to a second, or what the OS held).
* ``cron()`` (``hz`` times a second): ``everysec`` fsyncs in a worker thread at most once a
  second; failed writes are retried; the automatic rewrite is started; a finished rewrite
  child is reaped.
* ``shutdown()``: write and fsync what is buffered.

Disk errors (``ENOSPC``, ``EIO``): the unwritten buffer is kept (a partial write is cut back
with ``ftruncate``), ``server.disk_error`` is set so dispatch refuses writes with Redis's
``MISCONF Errors writing to the AOF file: ...``, and with ``always`` the replies of the failed
batch stay held: nothing the disk does not have is ever acknowledged. The cron retries; when a
write and fsync succeed the error clears and the held replies go out. (Redis exits instead
under ``always``; holding is kinder and loses nothing.)

Rewrite (``BGREWRITEAOF`` and ``auto-aof-rewrite-percentage``) follows Redis 7: flush, open a
new incremental file and persist the manifest naming it, then ``fork()``: the child writes the
new base from its copy-on-write view of the keyspace while the parent keeps appending to the
new incremental file. When the child exits 0 the base is renamed into place, a manifest naming
only the new base and the incremental files opened since the fork is persisted, and the old
files are deleted. A failed rewrite leaves the old manifest, which is still complete.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import errno
import gc
import logging
import os
import time
from typing import TYPE_CHECKING, Any

from sluice.storage import aof as fmt
from sluice.storage.aof import AofInfo, Manifest, encode_command, encode_select

from . import affinity, rewrite
from .oom_score import BGCHILD

if TYPE_CHECKING:
    from .app import Server
    from .client import Client

log = logging.getLogger("sluice")

_MULTI = encode_command([b"MULTI"])
_EXEC = encode_command([b"EXEC"])


# Commands whose logged form may carry a relative expiry (see _absolute).
_RELATIVE = frozenset((b"expire", b"pexpire", b"expireat", b"setex", b"psetex", b"set",
                       b"getex"))


def _absolute(argv: list[bytes], now_ms: int) -> list[bytes]:
    """Relative expiries as absolute ones (Redis logs PEXPIREAT and SET ... PXAT)."""
    name = argv[0].lower()
    try:
        if name in (b"expire", b"pexpire") and len(argv) >= 3:
            n = int(argv[2])
            when = now_ms + (n * 1000 if name == b"expire" else n)
            return [b"PEXPIREAT", argv[1], b"%d" % when, *argv[3:]]
        if name == b"expireat" and len(argv) >= 3:
            return [b"PEXPIREAT", argv[1], b"%d" % (int(argv[2]) * 1000), *argv[3:]]
        if name in (b"setex", b"psetex") and len(argv) == 4:
            n = int(argv[2])
            when = now_ms + (n * 1000 if name == b"setex" else n)
            return [b"SET", argv[1], argv[3], b"PXAT", b"%d" % when]
        if name == b"set" and len(argv) > 3:
            out = list(argv[:3])
            i = 3
            while i < len(argv):
                opt = argv[i].upper()
                if opt in (b"EX", b"PX", b"EXAT") and i + 1 < len(argv):
                    n = int(argv[i + 1])
                    when = {b"EX": now_ms + n * 1000, b"PX": now_ms + n, b"EXAT": n * 1000}[opt]
                    out += [b"PXAT", b"%d" % when]
                    i += 2
                    continue
                out.append(argv[i])
                i += 1
            return out
        if name == b"getex" and len(argv) >= 3:
            opt = argv[2].upper()
            if opt == b"PERSIST":
                return [b"PERSIST", argv[1]]
            if opt in (b"EX", b"PX", b"EXAT", b"PXAT") and len(argv) >= 4:
                n = int(argv[3])
                when = {b"EX": now_ms + n * 1000, b"PX": now_ms + n, b"EXAT": n * 1000,
                        b"PXAT": n}[opt]
                return [b"PEXPIREAT", argv[1], b"%d" % when]
    except ValueError:
        pass
    return argv


class AppendOnlyFile:
    """The AOF of one server: the manifest, the open incremental file, the write buffer."""

    def __init__(self, server: Server, directory: str, manifest: Manifest) -> None:
        self.server = server
        self.config = server.config
        self.directory = directory  # <dir>/<appenddirname>
        self.manifest = manifest
        self.buf = bytearray()  # commands not yet written
        self.selected_db = -1  # the db the file's last SELECT chose (-1: none yet)
        self.multi_db: int | None = None  # EXEC began; MULTI not written yet
        self.multi_open = False  # MULTI written, EXEC not yet
        self.multi_mark = -1  # in a transaction: where its MULTI goes if a second command comes
        self.fd = -1  # the incremental file we append to
        self.incr_size = 0  # its size as far as our writes are concerned
        self.base_size = 0
        self.current_size = 0  # base + incremental files: aof_current_size
        self.rewrite_base_size = 0  # aof_current_size after the last rewrite
        self.held: list[Client] = []  # clients whose replies wait for a failed write
        self.unsynced = False  # written but not fsynced
        self.last_fsync = time.monotonic()
        self.fsync_in_flight = False
        self.delayed_fsync = 0
        self.write_error: OSError | None = None
        self.fsync_error: OSError | None = None
        # rewrite state
        self.child_pid = 0
        self.child_temp = ""
        self.child_started = 0.0
        self.rewrite_first_incr = 0  # index in manifest.incrs of the first file to keep
        self.rewrite_scheduled = False
        self.awaiting_base = False  # switched on at run time: no complete manifest yet
        self.last_rewrite_time = -1
        self.last_rewrite_ok = True
        self.rewrites = 0
        self.rewrite_failures = 0
        self.last_ts = 0  # aof-timestamp-enabled: the last #TS annotation written
        # One background thread, FIFO like Redis's bio: an fsync queued before the close of
        # the same file descriptor always runs first.
        self.bio = concurrent.futures.ThreadPoolExecutor(
            1, thread_name_prefix="sluice-bio", initializer=affinity.pin_bio_thread,
            initargs=(server.config.bio_cpulist, server.cpus_at_start))
        self.write = os.write  # replaceable by tests (fault injection)
        self.fsync = os.fsync
        # WAITAOF (replication.py): every command logged advances server.repl's
        # master_repl_offset by one, as Redis's with no backlog; the offset of what is
        # written, and of what is fsynced (held back while the first base of an AOF switched
        # on at run time is written, as Redis's fsynced_reploff_pending).
        self.repl = server.repl
        self.written_reploff = self.fsynced_pending = self.repl.master_repl_offset
        self.repl.set_fsynced(self.fsynced_pending)

    # -- opening --------------------------------------------------------------------------

    def path(self, name: str) -> str:
        return os.path.join(self.directory, name)

    def open_incr(self, info: AofInfo) -> None:
        fd = os.open(self.path(info.name), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        if self.fd >= 0:
            self._close_later(self.fd)
        self.fd = fd
        start = self.server.latency.start()
        self.incr_size = os.fstat(fd).st_size
        self.server.latency.end("aof-fstat", start)
        self.selected_db = -1

    def _close_later(self, fd: int) -> None:
        """An old incremental file: fsync and close it off the loop (Redis's bio close)."""
        def work() -> None:
            try:
                if self.config.appendfsync != "no":
                    os.fsync(fd)
            finally:
                os.close(fd)

        loop = self.server.loop
        if loop is not None and loop.is_running():
            loop.run_in_executor(self.bio, work)
        else:
            work()

    def recompute_sizes(self) -> None:
        base = self.manifest.base
        self.base_size = self._file_size(base.name) if base else 0
        incrs = sum(self._file_size(i.name) for i in self.manifest.incrs)
        self.current_size = self.base_size + incrs

    def _file_size(self, name: str) -> int:
        """The size of one AOF file, 0 if it is not there (a stat: LATENCY's aof-fstat)."""
        start = self.server.latency.start()
        try:
            return os.stat(self.path(name)).st_size
        except FileNotFoundError:
            return 0
        finally:
            self.server.latency.end("aof-fstat", start)

    def persist_manifest(self, manifest: Manifest | None = None) -> None:
        m = manifest or self.manifest
        fmt.write_durably(self.path(fmt.manifest_name(self.config.appendfilename)), m.format())

    # -- the hooks dispatch calls --------------------------------------------------------------

    def feed(self, db_id: int, argvs: list[list[bytes]]) -> None:
        buf = self.buf
        if self.config.aof_timestamp_enabled:
            ts = int(time.time())
            if ts != self.last_ts:  # Redis's "#TS:<unix time>" annotation, once a second
                buf += b"#TS:%d\r\n" % ts
                self.last_ts = ts
        if self.multi_db is not None:
            # The transaction's first command: MULTI is written before it only when a second
            # one follows (Redis 7's propagatePendingCommands logs a lone command bare). It
            # goes before the SELECT too: Redis propagates MULTI with no database of its own.
            self.multi_mark = len(buf)
            if self.selected_db != self.multi_db:
                buf += encode_select(self.multi_db)
                self.selected_db = self.multi_db
            self.multi_db = None
        elif self.multi_mark >= 0 and not self.multi_open:
            self._open_multi()
        if db_id != self.selected_db:
            buf += encode_select(db_id)
            self.selected_db = db_id
        self.repl.master_repl_offset += len(argvs)
        for i, argv in enumerate(argvs):
            if i and self.multi_mark >= 0 and not self.multi_open:
                self._open_multi()
            if argv[0].lower() in _RELATIVE:
                argv = _absolute(argv, self.server.keyspace.clock.now_ms())
            buf += b"*%d\r\n" % len(argv)
            for arg in argv:
                buf += b"$%d\r\n" % len(arg)
                buf += arg
                buf += b"\r\n"

    def _open_multi(self) -> None:
        """A second command in the transaction: MULTI goes in before the first."""
        self.buf[self.multi_mark:self.multi_mark] = _MULTI
        self.multi_open = True
        self.repl.master_repl_offset += 1

    def begin_multi(self, db_id: int) -> None:
        self.multi_db = db_id

    def end_multi(self) -> None:
        self.multi_db = None
        self.multi_mark = -1
        if self.multi_open:
            self.buf += _EXEC
            self.multi_open = False
            self.repl.master_repl_offset += 1

    def commit(self) -> bool:
        """Group commit, at the end of a loop iteration: one ``write`` (and with ``always``
        one ``fsync``) for every command of the iteration, before any of their replies go
        out. False: the batch is not on disk, so its replies wait (``held``) until the
        cron's retry works."""
        if (not self.buf or self.fd < 0 or self.write_error is not None
                or self.fsync_error is not None):
            if (not self.buf and self.unsynced and self.fd >= 0 and self.fsync_error is None
                    and self.config.appendfsync == "always" and not self._skip_fsync()):
                # switched to ``always`` with writes not yet fsynced: now (Redis's
                # flushAppendOnlyFile does it with an empty buffer too)
                self._try_fsync()
            return True  # nothing new, shut down meanwhile, or the cron's retry owns it
        always = self.config.appendfsync == "always"
        if self._try_write() and (not always or self._skip_fsync() or self._try_fsync()):
            return True
        self.held.extend(self.server.pending_writes)
        self.server.pending_writes = []
        return False

    # -- writing ----------------------------------------------------------------------------

    def _try_write(self) -> bool:
        buf = self.buf
        if not buf:
            return True
        written = 0
        data = bytes(buf)  # a copy: no buffer exports pin ``buf`` if a write raises
        start = self.server.latency.start()
        try:
            while written < len(data):
                written += self.write(self.fd, data[written:] if written else data)
        except OSError as e:
            self._write_latency(start)
            if written:
                try:  # cut the partial command off, as Redis does, so the file stays parseable
                    os.ftruncate(self.fd, self.incr_size)
                    written = 0
                except OSError:
                    pass
            del buf[:written]
            self.incr_size += written
            self.current_size += written
            self._set_write_error(e)
            return False
        self._write_latency(start)
        self.incr_size += written
        self.current_size += written
        buf.clear()
        self.unsynced = True
        self.written_reploff = self.repl.master_repl_offset
        if self.write_error is not None:
            log.warning("AOF write error looks solved, Redis can write again.")
            self.write_error = None
            self._update_disk_error()
        return True

    def _write_latency(self, start: int) -> None:
        """LATENCY's samples of one write of the buffer, as flushAppendOnlyFile takes them:
        ``aof-write``, and by what else was using the disk, one of ``-pending-fsync``,
        ``-active-child`` and ``-alone``."""
        latency = self.server.latency
        if not start:
            return
        ms = latency.end("aof-write", start)
        if self.fsync_in_flight:
            latency.sample("aof-write-pending-fsync", ms)
        elif self._child_active():
            latency.sample("aof-write-active-child", ms)
        else:
            latency.sample("aof-write-alone", ms)

    def _child_active(self) -> bool:
        """A fork child (this AOF's rewrite, or a BGSAVE) is writing."""
        p = getattr(self.server, "persistence", None)
        return bool(self.child_pid or (p is not None and p.child_pid))

    def _skip_fsync(self) -> bool:
        """no-appendfsync-on-rewrite: no fsync while a child writes (durability traded away)."""
        return self.config.no_appendfsync_on_rewrite and self._child_active()

    def _try_fsync(self) -> bool:
        start = self.server.latency.start()
        try:
            self.fsync(self.fd)
        except OSError as e:
            self.fsync_error = e
            self._update_disk_error()
            log.warning("Can't persist append only file to disk. fsync: %s", e.strerror)
            return False
        if start and self.config.appendfsync == "always":
            self.server.latency.end("aof-fsync-always", start)
        self.unsynced = False
        self.last_fsync = time.monotonic()
        if self.fsync_error is not None:
            self.fsync_error = None
            self._update_disk_error()
        self._fsynced(self.written_reploff)
        return True

    def _fsynced(self, offset: int) -> None:
        """The file is fsynced up to ``offset``: WAITAOF clients waiting for it are answered
        (unless the first base is still being written: then when it is installed)."""
        if offset > self.fsynced_pending:
            self.fsynced_pending = offset
            if not self.awaiting_base:
                self.repl.set_fsynced(offset)

    def _set_write_error(self, e: OSError) -> None:
        if self.write_error is None:
            if e.errno == errno.ENOSPC:
                log.warning("Error writing to the AOF file: No space left on device")
            else:
                log.warning("Error writing to the AOF file: %s", e.strerror)
        self.write_error = e
        self._update_disk_error()

    def _update_disk_error(self) -> None:
        p = getattr(self.server, "persistence", None)
        if p is not None:
            p.refresh_disk_error()
        else:
            self.server.disk_error = self.disk_error()

    def disk_error(self) -> str | None:
        """Redis's MISCONF text while a write or fsync error stands, else None."""
        err = self.write_error or self.fsync_error
        if err is None:
            return None
        return f"MISCONF Errors writing to the AOF file: {err.strerror or os.strerror(err.errno or 0)}"

    def _background_fsync(self) -> None:
        self.fsync_in_flight = True
        self.unsynced = False
        fd = self.fd
        offset = self.written_reploff

        def done(fut: asyncio.Future[None]) -> None:
            self.fsync_in_flight = False
            exc = fut.exception()
            if isinstance(exc, OSError):
                self.fsync_error = exc
                self.unsynced = True
                self._update_disk_error()
            else:
                self.last_fsync = time.monotonic()
                if self.fsync_error is not None:
                    self.fsync_error = None
                    self._update_disk_error()
                self._fsynced(offset)
                self.server.before_return()  # WAITAOF clients it answered

        self.server.loop.run_in_executor(self.bio, self.fsync, fd).add_done_callback(done)

    def retry_after_error(self) -> None:
        """Cron: try again to write (and fsync) what a disk error left behind."""
        if self.write_error is None and self.fsync_error is None:
            return
        if not self._try_write():
            return
        if (self.config.appendfsync == "always" or self.fsync_error is not None) \
                and not self._try_fsync():
            return
        if self.held:
            pending = self.server.pending_writes
            for c in self.held:
                if not c.closed:
                    pending.append(c)
            self.held = []

    def cron(self) -> None:
        self.retry_after_error()
        if self.buf and self.config.appendfsync != "always":
            self._try_write()
        if (self.config.appendfsync == "everysec" and self.unsynced and not self.fsync_in_flight
                and time.monotonic() - self.last_fsync >= 1.0 and not self._skip_fsync()):
            self._background_fsync()
        elif self.fsync_in_flight and time.monotonic() - self.last_fsync >= 2.0:
            self.delayed_fsync += 1
        self.reap_child()
        if not self.child_pid:
            if self.rewrite_scheduled:
                self.rewrite_scheduled = False
                self.start_rewrite()
            else:
                self._maybe_auto_rewrite()

    def flush_and_sync(self) -> None:
        """Write and fsync everything now (shutdown, before a rewrite, DEBUG RELOAD)."""
        if self._try_write() and self.unsynced and self.config.appendfsync != "no":
            self._try_fsync()

    def shutdown(self) -> None:
        self.flush_and_sync()
        if self.fsync_in_flight or self.unsynced:
            try:
                os.fsync(self.fd)
            except OSError as e:
                log.warning("Error syncing the AOF on shutdown: %s", e.strerror)
        if self.awaiting_base and self.child_pid:
            # The first base is being written: wait for it rather than leave an AOF
            # directory without a complete manifest.
            with _suppress():
                _, status = os.waitpid(self.child_pid, 0)
                self.child_pid = 0
                if os.waitstatus_to_exitcode(status) == 0 and self._install_rewrite():
                    log.info("Initial AOF base written before exit")
        self.kill_child()
        self.bio.shutdown(wait=True)
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    # -- rewrite ---------------------------------------------------------------------------

    def _maybe_auto_rewrite(self) -> None:
        pct = self.config.auto_aof_rewrite_percentage
        if not pct or self.current_size < self.config.auto_aof_rewrite_min_size:
            return
        base = self.rewrite_base_size or 1
        growth = (self.current_size - base) * 100 // base
        if growth >= pct:
            log.info("Starting automatic rewriting of AOF on %d%% growth", growth)
            self.start_rewrite()

    def start_rewrite(self) -> str | None:
        """BGREWRITEAOF: returns an error text, or None when the child is running."""
        if self.child_pid:
            return "ERR Background append only file rewriting already in progress"
        snapshots = getattr(self.server, "persistence", None)
        if (snapshots is not None and snapshots.child_pid) or self.multi_open \
                or self.multi_db is not None or self.multi_mark >= 0:
            # A BGSAVE child runs, or we are inside EXEC (the file switch must not split a
            # MULTI/EXEC block): the cron starts the rewrite as soon as it can.
            self.rewrite_scheduled = True
            return None
        self.flush_and_sync()
        if self.buf:
            # The buffer could not be written. Its commands are already in memory, so the
            # child's base would hold them and the new incremental file would replay them a
            # second time: no rewrite until the disk takes writes again.
            return "ERR Can't rewrite the append only file while writes to it are failing"
        new = self.manifest.copy()
        info = new.new_incr(self.config.appendfilename)
        try:
            fd = os.open(self.path(info.name), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            os.close(fd)
            if not self.awaiting_base:  # else the manifest waits for the first base
                self.persist_manifest(new)
        except OSError as e:
            log.warning("Can't open the append-only file for rewrite: %s", e.strerror)
            self.last_rewrite_ok = False
            return f"ERR Can't open the append-only file: {e.strerror}"
        self.manifest = new
        self.open_incr(info)
        self.rewrite_first_incr = len(new.incrs) - 1
        self.child_temp = self.path(f"temp-rewriteaof-bg-{os.getpid()}.aof")
        use_rdb = self.config.aof_use_rdb_preamble
        pid = fork_writer(self.server, lambda: rewrite.write_aof_base(
            self.server, self.child_temp, use_rdb), "aof_rewrite_cpulist")
        if pid < 0:
            self.last_rewrite_ok = False
            return "ERR Can't fork"
        self.child_pid = pid
        self.child_started = time.monotonic()
        log.info("Background append only file rewriting started by pid %d", pid)
        return None

    def reap_child(self) -> None:
        if not self.child_pid:
            return
        result = reap_writer(self.child_pid, self.child_started)
        if result is None:
            return
        self.child_pid = 0
        ok, self.last_rewrite_time = result
        if ok and self._install_rewrite():
            self.last_rewrite_ok = True
            self.rewrites += 1
            self.rewrite_failures = 0
            log.info("Background AOF rewrite finished successfully")
        else:
            self.last_rewrite_ok = False
            self.rewrite_failures += 1
            log.warning("Background AOF rewrite terminated with error")
            with _suppress():
                os.unlink(self.child_temp)
            if self.awaiting_base:  # the AOF is not usable without a base: try again
                self.rewrite_scheduled = True

    def _install_rewrite(self) -> bool:
        new = self.manifest.copy()
        base = new.new_base(self.config.appendfilename, self.config.aof_use_rdb_preamble)
        old = new.history + new.incrs[: self.rewrite_first_incr]
        new.incrs = new.incrs[self.rewrite_first_incr :]
        new.history = []
        try:
            start = self.server.latency.start()
            os.replace(self.child_temp, self.path(base.name))
            self.server.latency.end("aof-rename", start)
            self.persist_manifest(new)
        except OSError as e:
            log.warning("Error installing the rewritten AOF: %s", e.strerror)
            return False
        self.manifest = new
        if self.awaiting_base:  # now what was fsynced counts (Redis: once AOFRW is done)
            self.awaiting_base = False
            self.repl.set_fsynced(self.fsynced_pending)
        for info in old:
            if info.name != base.name:
                with _suppress():
                    os.unlink(self.path(info.name))
        self.recompute_sizes()
        self.rewrite_base_size = self.current_size
        return True

    def kill_child(self) -> None:
        if self.child_pid:
            log.info("Killing running AOF rewrite child: %d", self.child_pid)
            with _suppress():
                os.kill(self.child_pid, 9)
                os.waitpid(self.child_pid, 0)
            with _suppress():
                os.unlink(self.child_temp)
            self.child_pid = 0

    def reset_stats(self) -> None:
        """CONFIG RESETSTAT: the counters Redis zeroes (aof_rewrites and its failures,
        aof_delayed_fsync)."""
        self.rewrites = self.rewrite_failures = self.delayed_fsync = 0

    def info_fields(self) -> dict[str, Any]:
        return {
            "aof_enabled": 1,
            "aof_rewrite_in_progress": int(bool(self.child_pid)),
            "aof_rewrite_scheduled": int(self.rewrite_scheduled),
            "aof_last_rewrite_time_sec": self.last_rewrite_time,
            "aof_current_rewrite_time_sec": int(time.monotonic() - self.child_started)
            if self.child_pid else -1,
            "aof_last_bgrewrite_status": "ok" if self.last_rewrite_ok else "err",
            "aof_rewrites": self.rewrites,
            "aof_rewrites_consecutive_failures": self.rewrite_failures,
            "aof_last_write_status": "err" if self.write_error or self.fsync_error else "ok",
            "aof_last_cow_size": 0,
            "module_fork_in_progress": 0,
            "module_fork_last_cow_size": 0,
            "aof_current_size": self.current_size,
            "aof_base_size": self.base_size,
            "aof_pending_rewrite": int(self.rewrite_scheduled),
            "aof_buffer_length": len(self.buf),
            "aof_pending_bio_fsync": int(self.fsync_in_flight),
            "aof_delayed_fsync": self.delayed_fsync,
        }


class _suppress:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return exc[0] is not None and issubclass(exc[0], OSError)  # type: ignore[arg-type]


def reap_writer(pid: int, started: float) -> tuple[bool, int] | None:
    """Non-blocking wait for a ``fork_writer`` child: None while it runs, else whether it
    succeeded and how many seconds it took (a child we cannot wait for counts as failed)."""
    try:
        done, status = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        done, status = pid, 1 << 8
    if done == 0:
        return None
    return os.waitstatus_to_exitcode(status) == 0, int(time.monotonic() - started)


def fork_writer(server: Server, work: Any, pin: str = "") -> int:
    """Fork a child that runs ``work()`` on a copy-on-write view of the keyspace and exits.
    The child first pins itself as the CPU-list setting named ``pin`` says (bgsave_cpulist,
    aof_rewrite_cpulist; affinity.py).

    The parent's stall is the ``fork()`` itself (page tables). ``gc.freeze()`` keeps the
    collector from touching (and so copying) every object in either process meanwhile.
    Returns the child's pid, or -1.
    """
    gc.freeze()
    start = time.perf_counter_ns()
    try:
        pid = os.fork()
    except OSError as e:
        gc.unfreeze()
        log.warning("Can't fork: %s", e.strerror)
        return -1
    if pid == 0:  # the child: no event loop, no logging (locks may be held), just the file
        code = 1
        try:
            gc.disable()
            if server.config.oom_score_adj != "no":  # a child is the OOM killer's first pick
                server.oom.apply(server.config.oom_score_adj, server.config.oom_score_adj_values,
                                 BGCHILD)
            if pin:
                affinity.pin_child(getattr(server.config, pin))
            work()
            code = 0
        except BaseException:  # noqa: BLE001
            import traceback

            traceback.print_exc()
        finally:
            os._exit(code)
    usec = (time.perf_counter_ns() - start) // 1000
    gc.unfreeze()
    server.stats["total_forks"] += 1  # INFO total_forks (Redis counts every fork it makes)
    server.stats["latest_fork_usec"] = usec  # the parent's stall, as Redis's stat_fork_time
    server.latency.sample("fork", usec // 1000)
    return pid
