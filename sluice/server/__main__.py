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


def setup_logging(config: Config) -> None:
    levels = {"debug": logging.DEBUG, "verbose": logging.INFO, "notice": logging.INFO,
              "warning": logging.WARNING, "nothing": logging.CRITICAL}
    handler: logging.Handler = (logging.FileHandler(config.logfile) if config.logfile
                                else logging.StreamHandler())  # stderr: the stream tests and tools watch
    handler.setFormatter(RedisStyleFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(levels[config.loglevel])


async def _run(server: Server) -> None:
    await server.start()
    loop = asyncio.get_running_loop()
    signalled: list[str] = []

    def on_signal(sig: signal.Signals) -> None:
        if signalled:  # a second signal while stopping: Redis's "You insist" habit
            log.warning("Received %s during shutdown, still stopping cleanly...", sig.name)
            return
        signalled.append(sig.name)
        log.warning("Received %s scheduling shutdown...", sig.name)
        server.request_shutdown()

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, on_signal, sig)
    try:
        await server.serve_forever()
    finally:
        if signalled:  # SHUTDOWN logs this line itself
            log.warning("User requested shutdown...")
        await server.shutdown()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)


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
