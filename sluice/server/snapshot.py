"""Persistence as a whole: ``server.persistence`` (always installed by ``Server.start``).

Role: start-up loading (AOF when ``appendonly yes``, else the RDB file), RDB snapshots (SAVE,
BGSAVE in a forked child, the ``save <seconds> <changes>`` schedule, save on shutdown, DEBUG
RELOAD), switching the AOF on and off at run time, the ``MISCONF`` state that dispatch checks
(``server.disk_error``), and INFO persistence with Redis's field names.

Mirrors Redis 7.0's ``rdbSave`` / ``rdbSaveBackground`` / ``backgroundSaveDoneHandler``
(rdb.c), the save-point check of ``serverCron``, ``prepareForShutdown``,
``writeCommandsDeniedByDiskError`` and ``startAppendOnly`` / ``stopAppendOnly`` (aof.c).

Invariants:
- At most one fork child at a time (BGSAVE or AOF rewrite); a BGREWRITEAOF asked for while a
  BGSAVE runs is scheduled, as in Redis.
- Snapshot files are written to ``temp-<pid>.rdb``, fsynced, renamed over ``dbfilename``,
  and the directory fsynced: a crash leaves the old snapshot or the new one, never half.
"""

from __future__ import annotations

import logging
import os
import time
from typing import TYPE_CHECKING, Any

from sluice.commands.errors import SHUTDOWN_FAILED
from sluice.storage import aof as fmt

from . import rewrite
from .loading import LoadError, load_aof, load_rdb_file
from .persistence import AppendOnlyFile, fork_writer, reap_writer

if TYPE_CHECKING:
    from .app import Server

log = logging.getLogger("sluice")

BGSAVE_RETRY_DELAY = 5  # seconds before a failed BGSAVE is retried by the schedule
RDB_ERROR = (
    "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist "
    "to disk. Commands that may modify the data set are disabled, because this instance is "
    "configured to report errors during writes if RDB snapshotting fails "
    "(stop-writes-on-bgsave-error option). Please check the Redis logs for details about the "
    "RDB error."
)


class Persistence:
    def __init__(self, server: Server) -> None:
        self.server = server
        self.config = server.config
        self.child_pid = 0  # BGSAVE child
        self.child_started = 0.0
        self.dirty_at_fork = 0
        self.last_bgsave_ok = True
        self.last_bgsave_try = 0.0
        self.last_bgsave_time = -1
        self.rdb_saves = 0
        self.rdb_failures = 0  # BGSAVEs failed since the last that worked (INFO)
        self.keys_loaded = 0
        self.keys_expired_on_load = 0
        self.loading = False
        self.shut_down = False
        self.bgsave_scheduled = False  # BGSAVE SCHEDULE while an AOF rewrite runs
        self.offline_rewrite_scheduled = False  # BGREWRITEAOF that waits, appendonly no
        # BGREWRITEAOF with appendonly no: (pid, temp file, new manifest, files to delete)
        self.offline_rewrite: tuple[int, str, fmt.Manifest, list[str]] | None = None
        self.offline_rewrites = 0
        self.offline_rewrite_ok = True
        self.config.on_change("appendonly", self._appendonly_changed)

    # -- paths ----------------------------------------------------------------------------

    @property
    def rdb_path(self) -> str:
        directory: str = self.config.dir
        return os.path.join(directory, self.config.dbfilename)

    @property
    def aof_dir(self) -> str:
        directory: str = self.config.dir
        return os.path.join(directory, self.config.appenddirname)

    # -- start-up ---------------------------------------------------------------------------

    def load(self) -> None:
        """Load the dataset from disk as redis-server does at start. Raises LoadError."""
        server = self.server
        started = time.monotonic()
        self.loading = True
        try:
            if self.config.appendonly:
                server.aof = self.open_aof(load=True)
                what = "append only file"
            elif os.path.exists(self.rdb_path):
                self.keys_loaded = load_rdb_file(server, self.rdb_path)
                what = "disk"
            else:
                return
        finally:
            self.loading = False
            server.dirty = 0
        log.info("DB loaded from %s: %.3f seconds", what, time.monotonic() - started)

    def open_aof(self, load: bool) -> AppendOnlyFile:
        """Open (and with ``load``, replay) the AOF; create it when there is none."""
        directory = self.aof_dir
        name = self.config.appendfilename
        mpath = os.path.join(directory, fmt.manifest_name(name))
        old_style = os.path.join(self.config.dir, name)
        if not os.path.exists(mpath) and os.path.exists(old_style):
            self._upgrade_old_style(old_style, directory, mpath)
        if os.path.exists(mpath):
            with open(mpath, encoding="utf-8", errors="surrogateescape") as f:
                try:
                    manifest = fmt.Manifest.parse(f.read())
                except fmt.ManifestError as e:
                    raise LoadError(f"{e} ({mpath})") from None
            if load:
                self.keys_loaded = load_aof(self.server, directory, manifest)
            aof = AppendOnlyFile(self.server, directory, manifest)
            if not manifest.incrs:
                info = manifest.new_incr(name)
                aof.open_incr(info)
                aof.persist_manifest()
            else:
                aof.open_incr(manifest.incrs[-1])
        else:
            # No AOF yet: write a base from what we hold (empty at start), an empty
            # incremental file, then the manifest naming both, as Redis 7 does.
            os.makedirs(directory, exist_ok=True)
            manifest = fmt.Manifest()
            aof = AppendOnlyFile(self.server, directory, manifest)
            base = manifest.new_base(name, self.config.aof_use_rdb_preamble)
            tmp = aof.path("temp-" + base.name)
            rewrite.write_aof_base(self.server, tmp, self.config.aof_use_rdb_preamble)
            os.replace(tmp, aof.path(base.name))
            aof.open_incr(manifest.new_incr(name))
            aof.persist_manifest()
        aof.recompute_sizes()
        aof.rewrite_base_size = aof.current_size
        return aof

    def _upgrade_old_style(self, old_style: str, directory: str, mpath: str) -> None:
        """A Redis 6 ``appendonly.aof`` in ``dir``: move it into the directory as the base,
        as Redis 7 does at start (the file keeps its name; the manifest makes it seq 1)."""
        name = self.config.appendfilename
        log.warning("Creating AOF base file %s on server start (upgrade from a single file)",
                    name)
        os.makedirs(directory, exist_ok=True)
        manifest = fmt.Manifest(fmt.AofInfo(name, 1, fmt.BASE), base_seq=1)
        os.replace(old_style, os.path.join(directory, name))
        fmt.fsync_dir(self.config.dir)
        fmt.write_durably(mpath, manifest.format())

    def _appendonly_changed(self, on: bool) -> None:
        server = self.server
        if on and server.aof is None:
            server.aof = self._start_aof()
        elif not on and server.aof is not None:
            server.aof.shutdown()
            server.aof = None
            self.refresh_disk_error()
            server.repl.aof_stopped()  # WAITAOF clients asking for a local fsync: an error

    def _start_aof(self) -> AppendOnlyFile:
        """CONFIG SET appendonly yes, as Redis's ``startAppendOnly``: a background rewrite
        writes the first base while commands go to a new incremental file; the manifest
        naming both is persisted only when the base is complete (until then the directory's
        old manifest, if any, is left as it was)."""
        directory = self.aof_dir
        os.makedirs(directory, exist_ok=True)
        mpath = os.path.join(directory, fmt.manifest_name(self.config.appendfilename))
        manifest = fmt.Manifest()
        if os.path.exists(mpath):  # keep numbering after the old files (they get replaced)
            try:
                with open(mpath, encoding="utf-8", errors="surrogateescape") as f:
                    manifest = fmt.Manifest.parse(f.read())
            except (OSError, fmt.ManifestError) as e:
                log.warning("Ignoring the old AOF manifest %s: %s", mpath, e)
        aof = AppendOnlyFile(self.server, directory, manifest)
        aof.awaiting_base = True
        self.server.repl.set_fsynced(0)  # until the first base is written (Redis: 0, not -1)
        client = self.server.current_client
        if self.child_pid:
            log.info("AOF was enabled but there is already another background operation. An "
                     "AOF background was scheduled to start when possible.")
            aof.rewrite_scheduled = True
        elif client is not None and client.in_exec:  # no fork inside a transaction
            log.info("AOF was enabled during a transaction. An AOF background was scheduled "
                     "to start when possible.")
            aof.rewrite_scheduled = True
        else:
            err = aof.start_rewrite()
            if err:
                log.warning("Can't start the first AOF rewrite (%s): retrying from the cron",
                            err)
                aof.rewrite_scheduled = True
        return aof

    # -- snapshots --------------------------------------------------------------------------

    def save(self) -> bool:
        """Write the snapshot in the loop (SAVE, FLUSHALL, SHUTDOWN, DEBUG RELOAD). True on
        success, which also clears a failed BGSAVE's status; a failure leaves it as it was
        (Redis's rdbSave)."""
        tmp = os.path.join(self.config.dir, f"temp-{os.getpid()}.rdb")
        try:
            rewrite.write_file(tmp, rewrite.rdb_chunks(self.server))
            os.replace(tmp, self.rdb_path)
            fmt.fsync_dir(self.config.dir)
        except (OSError, TypeError) as e:
            log.warning("Failed opening the temp RDB file %s (in server root dir %s) for saving:"
                        " %s", os.path.basename(tmp), self.config.dir, e)
            try:
                os.unlink(tmp)
            except OSError:
                pass
            return False
        log.info("DB saved on disk")
        self.server.dirty = 0
        self.server.lastsave = int(time.time())
        self.last_bgsave_ok = True
        self.refresh_disk_error()
        return True

    def bgsave(self) -> str | None:
        """BGSAVE: fork a child that writes the snapshot. Returns an error text or None."""
        if self.child_pid:
            return "ERR Background save already in progress"
        if (self.server.aof is not None and self.server.aof.child_pid) or self.offline_rewrite:
            return ("ERR Another child process is active (AOF?): can't BGSAVE right now. Use "
                    "BGSAVE SCHEDULE in order to schedule a BGSAVE whenever possible.")
        cfg, server = self.config, self.server
        path = self.rdb_path

        def work() -> None:
            tmp = os.path.join(cfg.dir, f"temp-{os.getpid()}.rdb")
            rewrite.write_file(tmp, rewrite.rdb_chunks(server))
            os.replace(tmp, path)
            fmt.fsync_dir(cfg.dir)

        self.last_bgsave_try = time.time()
        pid = fork_writer(self.server, work, "bgsave_cpulist")
        if pid < 0:
            self.last_bgsave_ok = False
            self.refresh_disk_error()
            return "ERR Can't fork"
        self.child_pid = pid
        self.child_started = time.monotonic()
        self.dirty_at_fork = self.server.dirty
        log.info("Background saving started by pid %d", pid)
        return None

    def reap_child(self) -> None:
        if not self.child_pid:
            return
        pid = self.child_pid
        result = reap_writer(pid, self.child_started)
        if result is None:
            return
        self.child_pid = 0
        ok, self.last_bgsave_time = result
        if ok:
            log.info("Background saving terminated with success")
            self.server.dirty -= self.dirty_at_fork
            self.server.lastsave = int(time.time())
            self.last_bgsave_ok = True
            self.rdb_saves += 1
            self.rdb_failures = 0
        else:
            log.warning("Background saving error")
            self.last_bgsave_ok = False
            self.rdb_failures += 1
            try:
                os.unlink(os.path.join(self.config.dir, f"temp-{pid}.rdb"))
            except OSError:
                pass
        self.refresh_disk_error()
        aof = self.server.aof
        if aof is not None and aof.rewrite_scheduled and not aof.child_pid:
            aof.rewrite_scheduled = False
            aof.start_rewrite()

    def rewrite_offline(self) -> str | None:
        """BGREWRITEAOF with ``appendonly no``: as Redis 7, write a new base (and a manifest
        naming only it) in a child, so the directory is ready for ``appendonly yes``."""
        if self.offline_rewrite is not None:
            return "ERR Background append only file rewriting already in progress"
        if self.child_pid:  # BGREWRITEAOF schedules this case; the cron never reaches it
            return "ERR Background save already in progress"
        directory = self.aof_dir
        name = self.config.appendfilename
        mpath = os.path.join(directory, fmt.manifest_name(name))
        manifest = fmt.Manifest()
        try:
            os.makedirs(directory, exist_ok=True)
            if os.path.exists(mpath):
                with open(mpath, encoding="utf-8", errors="surrogateescape") as f:
                    manifest = fmt.Manifest.parse(f.read())
        except (OSError, fmt.ManifestError) as e:
            return f"ERR Can't rewrite the append only file: {e}"
        new = manifest.copy()
        new.new_base(name, self.config.aof_use_rdb_preamble)
        old = [i.name for i in new.history + new.incrs]
        new.history, new.incrs = [], []
        temp = os.path.join(directory, f"temp-rewriteaof-bg-{os.getpid()}.aof")
        use_rdb = self.config.aof_use_rdb_preamble
        pid = fork_writer(self.server, lambda: rewrite.write_aof_base(self.server, temp,
                                                                      use_rdb),
                          "aof_rewrite_cpulist")
        if pid < 0:
            return "ERR Can't fork"
        self.offline_rewrite = (pid, temp, new, old)
        return None

    def _reap_offline_rewrite(self) -> None:
        if self.offline_rewrite is None:
            return
        pid, temp, manifest, old = self.offline_rewrite
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done, status = pid, 1 << 8
        if done == 0:
            return
        self.offline_rewrite = None
        directory = self.aof_dir
        try:
            if os.waitstatus_to_exitcode(status) != 0:
                raise OSError(0, "the child failed")
            assert manifest.base is not None
            os.replace(temp, os.path.join(directory, manifest.base.name))
            fmt.write_durably(os.path.join(directory, fmt.manifest_name(
                self.config.appendfilename)), manifest.format())
        except OSError as e:
            log.warning("Background AOF rewrite terminated with error: %s", e.strerror)
            self.offline_rewrite_ok = False
            try:
                os.unlink(temp)
            except OSError:
                pass
            return
        for name in old:
            if manifest.base is not None and name != manifest.base.name:
                try:
                    os.unlink(os.path.join(directory, name))
                except OSError:
                    pass
        self.offline_rewrite_ok = True
        self.offline_rewrites += 1
        log.info("Background AOF rewrite finished successfully")

    def cron(self) -> None:
        self.reap_child()
        self._reap_offline_rewrite()
        aof = self.server.aof
        if aof is not None:
            aof.cron()
        if self.child_pid or (aof is not None and aof.child_pid) or self.offline_rewrite:
            return
        if self.bgsave_scheduled:
            self.bgsave_scheduled = False
            self.bgsave()
            return
        if self.offline_rewrite_scheduled:
            self.offline_rewrite_scheduled = False
            if aof is None:  # appendonly yes meanwhile: that rewrite is the AOF's own
                self.rewrite_offline()
            return
        now = time.time()
        dirty = self.server.dirty
        for seconds, changes in self.config.save:
            if (dirty >= changes and now - self.server.lastsave > seconds
                    and (self.last_bgsave_ok or now - self.last_bgsave_try > BGSAVE_RETRY_DELAY)):
                log.info("%d changes in %d seconds. Saving...", changes, seconds)
                self.bgsave()
                break

    def after_flushall(self) -> None:
        """FLUSHALL: a snapshot being written holds the old data: stop it; with save points,
        write the empty one now, so a crash does not bring the data back (as Redis)."""
        self.kill_bgsave()
        if self.config.save:
            self.save()

    def kill_bgsave(self) -> None:
        """Stop a BGSAVE child, and drop what it wrote."""
        if self.child_pid:
            pid, self.child_pid = self.child_pid, 0
            try:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
            except OSError:
                pass
            start = self.server.latency.start()
            try:
                os.unlink(os.path.join(self.config.dir, f"temp-{pid}.rdb"))
            except OSError:
                pass
            self.server.latency.end("rdb-unlink-temp-file", start)

    def shutdown(self, save: bool | None = None, force: bool = False,
                 last: bool = False) -> str | None:
        """Before exit (Redis's prepareForShutdown): stop the fork children, sync the AOF,
        save if configured (or asked). Returns an error text when the server must not exit
        and goes on serving: the first base of an AOF switched on at run time is still
        being written, or the final snapshot failed (``force`` exits anyway). ``last``: the
        process ends whatever this says (an embedded server's stop): nothing is refused,
        and the first base of a new AOF is waited for rather than lost."""
        if self.shut_down:
            return None
        force = force or last
        supervisor = self.server.supervisor
        if self.child_pid:
            log.warning("There is a child saving an .rdb. Killing it!")
            self.kill_bgsave()
        aof = self.server.aof
        if aof is not None and aof.child_pid and not (last and aof.awaiting_base):
            if aof.awaiting_base:  # without it the AOF directory holds no data set
                if not force:
                    log.warning("Writing initial AOF, can't exit.")
                    supervisor.notify("STATUS=Writing initial AOF, can't exit.\n")
                    return SHUTDOWN_FAILED
                log.warning("Writing initial AOF. Exit anyway.")
            log.warning("There is a child rewriting the AOF. Killing it!")
            aof.kill_child()
        if aof is not None:
            log.info("Calling fsync() on the AOF file.")
            aof.flush_and_sync()
        if save or (save is None and self.config.save):
            log.info("Saving the final RDB snapshot before exiting.")
            supervisor.notify("STATUS=Saving the final RDB snapshot\n")
            if not self.save():
                if not force:
                    log.warning("Error trying to save the DB, can't exit.")
                    supervisor.notify("STATUS=Error trying to save the DB, can't exit.\n")
                    return SHUTDOWN_FAILED
                log.warning("Error trying to save the DB. Exit anyway.")
        if aof is not None:
            aof.shutdown()
        self.shut_down = True
        return None

    def shutdown_save(self, save: bool | None, force: bool = False) -> str | None:
        """For SHUTDOWN [SAVE|NOSAVE] [FORCE]: None means go ahead; a text is the error."""
        return self.shutdown(save, force)

    def debug_reload(self, save: bool = True, flush: bool = True,
                     merge: bool = False) -> str | None:
        """DEBUG RELOAD: save (unless NOSAVE), empty the data set and the function libraries
        (unless NOFLUSH), load the snapshot back. A key loaded over one still there replaces
        it (what Redis's MERGE allows; without MERGE Redis stops on a duplicate key); a
        library already there fails the load unless MERGE, as in Redis. Returns an error text
        or None."""
        if save and not self.save():
            return "ERR"
        if flush:
            for db in self.server.keyspace.dbs:
                db.flush()
            self.server.scripting.functions.flush()
        try:
            load_rdb_file(self.server, self.rdb_path,
                          b"FLUSH" if flush else b"REPLACE" if merge else b"APPEND")
        except LoadError as e:
            log.warning("DEBUG RELOAD: %s", e)
            return "ERR Error trying to load the RDB dump, check server logs."
        self.server.dirty = 0
        return None

    def debug_loadaof(self) -> str | None:
        """DEBUG LOADAOF: write what the AOF buffers, empty the data set, and load the AOF
        files the manifest on disk names. Returns an error text or None."""
        aof = self.server.aof
        if aof is not None:
            aof.flush_and_sync()
        for db in self.server.keyspace.dbs:
            db.flush()
        mpath = os.path.join(self.aof_dir, fmt.manifest_name(self.config.appendfilename))
        try:
            with open(mpath, encoding="utf-8", errors="surrogateescape") as f:
                manifest = fmt.Manifest.parse(f.read())
            load_aof(self.server, self.aof_dir, manifest)
        except (OSError, fmt.ManifestError, LoadError) as e:
            log.warning("DEBUG LOADAOF: %s", e)
            return "ERR Error trying to load the AOF files, check server logs."
        self.server.dirty = 0
        log.info("Append Only File loaded by DEBUG LOADAOF")
        return None

    # -- state for dispatch and INFO ---------------------------------------------------------

    def refresh_disk_error(self) -> None:
        if self.config.stop_writes_on_bgsave_error and self.config.save \
                and not self.last_bgsave_ok:
            self.server.disk_error = RDB_ERROR
            return
        aof = self.server.aof
        self.server.disk_error = aof.disk_error() if aof is not None else None

    def reset_stats(self) -> None:
        """CONFIG RESETSTAT: the snapshot counters Redis zeroes."""
        self.rdb_saves = self.rdb_failures = self.offline_rewrites = 0

    def info_fields(self) -> dict[str, Any]:
        s = self.server
        fields: dict[str, Any] = {
            "loading": int(self.loading),
            "async_loading": 0,
            "current_cow_peak": 0,
            "current_cow_size": 0,
            "current_cow_size_age": 0,
            "current_fork_perc": "0.00",
            "current_save_keys_processed": 0,
            "current_save_keys_total": 0,
            "rdb_changes_since_last_save": s.dirty,
            "rdb_bgsave_in_progress": int(bool(self.child_pid)),
            "rdb_last_save_time": s.lastsave,
            "rdb_last_bgsave_status": "ok" if self.last_bgsave_ok else "err",
            "rdb_last_bgsave_time_sec": self.last_bgsave_time,
            "rdb_current_bgsave_time_sec": int(time.monotonic() - self.child_started)
            if self.child_pid else -1,
            "rdb_saves": self.rdb_saves,
            "rdb_saves_consecutive_failures": self.rdb_failures,
            "rdb_last_cow_size": 0,
            "rdb_last_load_keys_expired": self.keys_expired_on_load,
            "rdb_last_load_keys_loaded": self.keys_loaded,
        }
        if s.aof is not None:
            fields.update(s.aof.info_fields())
        else:
            fields.update({
                "aof_enabled": 0,
                "aof_rewrite_in_progress": int(self.offline_rewrite is not None),
                "aof_rewrite_scheduled": int(self.offline_rewrite_scheduled),
                "aof_last_rewrite_time_sec": -1, "aof_current_rewrite_time_sec": -1,
                "aof_last_bgrewrite_status": "ok" if self.offline_rewrite_ok else "err",
                "aof_rewrites": self.offline_rewrites,
                "aof_rewrites_consecutive_failures": 0, "aof_last_write_status": "ok",
                "aof_last_cow_size": 0, "module_fork_in_progress": 0,
                "module_fork_last_cow_size": 0,
            })
        return fields
