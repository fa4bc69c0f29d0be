"""``sluice-server [/path/to/sluice.conf] [options] [-]``: start a server.

Mirrors redis-server's command line (``main`` in Redis's server.c): an optional config file
first, ``-`` (first or last) to read more configuration from standard input, then
``--directive value`` pairs applied after both; ``-h``/``--help`` prints the usage and
``-v``/``--version`` the version, as the first argument. redis-server's own tools
(``--test-memory``, ``--check-system``) and Sentinel mode are refused with a line saying so.

Logs have redis-server's shape (``pid:M 24 Nov 2026 23:35:29.004 * message``, with ``*``
for notice, ``#`` for warnings) and so does a stop: SIGTERM or SIGINT logs the signal, the
AOF fsync, the final snapshot and "Sluice is now ready to exit, bye bye...", so a log tells a
clean stop from a crash. uvloop is used when installed (``pip install sluice[fast]``).
"""

from __future__ import annotations

import asyncio
import logging
import logging.handlers
import os
import signal
import sys
import time
from typing import TextIO

from sluice import REDIS_VERSION, __version__

from . import affinity
from .app import Server
from .config import Config, ConfigError
from .loading import LoadError
from .supervised import Supervisor

log = logging.getLogger("sluice")

USAGE = """\
Usage: sluice-server [/path/to/sluice.conf] [options] [-]
       sluice-server - (read config from stdin)
       sluice-server -v or --version
       sluice-server -h or --help

Options are redis.conf directives, each as --name followed by its value(s); they apply
after the config file and after standard input.

Examples:
       sluice-server (run the server with default conf)
       echo 'appendonly yes' | sluice-server -
       sluice-server /etc/sluice/sluice.conf
       sluice-server --port 7777
       sluice-server --port 7777 --save "" --appendonly yes --dir /var/lib/sluice
       sluice-server /etc/sluice/sluice.conf --loglevel verbose -
"""

# redis-server features that are not a configuration: refused by name, with what to do.
REFUSED = {
    "--test-memory": "Sluice has no memory tester (redis-server --test-memory); "
                     "use memtester or memtest86 instead.",
    "--check-system": "Sluice has no --check-system; redis-server's checks (clock source, "
                      "overcommit, THP) apply to redis-server's allocator, not to Python.",
    "--sentinel": "Sluice has no Sentinel mode; run redis-sentinel against it if you need "
                  "failover (Sluice has no replication yet either).",
}


def version_line() -> str:
    """``-v``: Sluice's version and the Redis release whose behaviour it follows."""
    bits = 64 if sys.maxsize > 2**32 else 32
    py = ".".join(map(str, sys.version_info[:3]))
    return f"Sluice server v={__version__} redis_version={REDIS_VERSION} python={py} bits={bits}"


def build_config(argv: list[str], stdin: TextIO | None = None) -> Config:
    """Config file, then standard input (``-``), then ``--name value`` options, as Redis
    applies them: the last word on a directive wins."""
    config = Config()
    options = list(argv)
    from_stdin = False
    if options and options[0] == "-":
        from_stdin, options = True, options[1:]
    elif options and not options[0].startswith("-"):
        config.load_file(options[0])
        options = options[1:]
    if options and options[-1] == "-":
        from_stdin, options = True, options[:-1]
    if from_stdin:
        config.load_text((stdin or sys.stdin).read().splitlines())
    config.load_argv(options)
    return config


def _install_loop() -> str:
    """uvloop when installed, unless ``SLUICE_LOOP=asyncio`` (benchmarks compare both)."""
    if os.environ.get("SLUICE_LOOP") == "asyncio":
        return "asyncio"
    try:
        import uvloop
    except ImportError:
        return "asyncio"
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    return "uvloop"


class RedisStyleFormatter(logging.Formatter):
    """``pid:M 24 Nov 2026 23:35:29.004 * text``: redis-server's log line (``serverLogRaw``)."""

    MARKS = {logging.DEBUG: ".", logging.INFO: "*", logging.WARNING: "#",
             logging.ERROR: "#", logging.CRITICAL: "#"}

    def format(self, record: logging.LogRecord) -> str:
        stamp = time.strftime("%d %b %Y %H:%M:%S", time.localtime(record.created))
        millis = int(record.msecs)
        line = (f"{record.process}:M {stamp}.{millis:03d} "
                f"{self.MARKS.get(record.levelno, '*')} {record.getMessage()}")
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


def setup_logging(config: Config, syslog_address: str = "/dev/log") -> None:
    """The log file (or stderr), and syslog too when ``syslog-enabled`` says so: each line as
    ``<ident>[<pid>]: <text>`` with ``syslog-facility``, as Redis's openlog/syslog."""
    levels = {"debug": logging.DEBUG, "verbose": logging.INFO, "notice": logging.INFO,
              "warning": logging.WARNING, "nothing": logging.CRITICAL}
    handler: logging.Handler = (logging.FileHandler(config.in_dir(config.logfile)) if config.logfile
                                else logging.StreamHandler())  # stderr: the stream tests and tools watch
    handler.setFormatter(RedisStyleFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(levels[config.loglevel])
    if config.syslog_enabled:
        try:
            to_syslog = logging.handlers.SysLogHandler(
                syslog_address, facility=logging.handlers.SysLogHandler.facility_names[
                    config.syslog_facility])
        except OSError as e:  # no syslog daemon here (a container): say so, log on
            log.warning("Can't log to syslog at %s: %s", syslog_address, e.strerror or e)
            return
        to_syslog.setFormatter(logging.Formatter(
            f"{config.syslog_ident}[{os.getpid()}]: %(message)s"))
        root.addHandler(to_syslog)


def _insist(server: Server) -> None:
    """A second SIGINT while a shutdown is under way: exit now, as Redis's "You insist"
    (the temp file of a final save in progress is removed; the exit status says it was not
    a clean stop)."""
    log.warning("You insist... exiting now.")
    try:
        os.unlink(os.path.join(server.config.dir, f"temp-{os.getpid()}.rdb"))
    except OSError:
        pass
    os._exit(1)


async def _run(server: Server) -> None:
    await server.start()
    server.supervisor.ready()

    def on_signal(signum: int, _frame: object) -> None:
        # A plain Python handler, not the loop's: it also runs while the loop is busy in a
        # final save, which a second SIGINT must be able to cut short. It only sets the
        # request; the cron carries it out (as Redis's handler and serverCron).
        name = signal.Signals(signum).name
        if signum == signal.SIGINT and (server.shutdown_asap is not None or server.stopping):
            _insist(server)
        log.warning("Received %s scheduling shutdown...", name)
        server.signal_shutdown(name)

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        await server.serve_forever()
    finally:
        try:
            await server.shutdown()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] in ("-v", "--version"):
        print(version_line())
        return 0
    if args and args[0] in ("-h", "--help"):
        sys.stderr.write(USAGE)  # as redis-server: usage on stderr, exit status 1
        return 1
    for arg in args:
        if arg.lower() in REFUSED:
            print(f"sluice-server: {arg}: {REFUSED[arg.lower()]}", file=sys.stderr)
            return 1
    try:
        config = build_config(args)
    except ConfigError as e:
        print(str(e).lstrip("\n"), file=sys.stderr)
        return 1
    setup_logging(config)
    if args and "-" in (args[0], args[-1]):
        log.info("Reading config from stdin")
    loop_name = _install_loop()
    log.info("Sluice version=%s, redis_version=%s, pid=%d, just started (event loop: %s)",
             __version__, REDIS_VERSION, os.getpid(), loop_name)
    log.info("Configuration loaded" if config.config_file or args else
             "No config file specified, using the default config. In order to specify a "
             "config file use sluice-server /path/to/sluice.conf")
    if not config.save and not config.appendonly:
        log.info("Persistence is off (save \"\" and appendonly no): the data is lost when "
                 "the server stops")
    try:
        server = Server(config)  # users, aclfile, rename-command are checked here
    except ConfigError as e:
        log.error("%s", e)
        return 1
    server.loop_name = loop_name
    server.cpus_at_start = affinity.pin_main_thread(config)
    server.supervisor = Supervisor(config.supervised)
    server.supervisor.loading()
    try:
        asyncio.run(_run(server))
    except ConfigError as e:  # TLS settings, checked when the listener opens
        log.error("%s", e)
        return 1
    except OSError as e:
        log.error("%s", e)
        return 1
    except LoadError as e:  # the data on disk can't be loaded safely: say where, exit 1
        log.error("%s", e)
        return 1
    log.warning("Sluice is now ready to exit, bye bye...")
    return 0


if __name__ == "__main__":
    sys.exit(main())
