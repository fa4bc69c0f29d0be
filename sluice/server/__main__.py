"""``sluice-server [/path/to/sluice.conf] [--name value ...]``: start a server.

Mirrors redis-server's command line: an optional config file, then ``--directive value``
pairs applied after it. uvloop is used when installed (``pip install sluice[fast]``).
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys

from . import affinity
from .app import Server
from .config import Config, ConfigError
from .loading import LoadError


def build_config(argv: list[str]) -> Config:
    config = Config()
    if argv and not argv[0].startswith("--"):
        config.load_file(argv[0])
        argv = argv[1:]
    config.load_argv(argv)
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


async def _run(server: Server) -> None:
    await server.start()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, server.request_shutdown)
    try:
        await server.serve_forever()
    finally:
        await server.shutdown()


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] in ("-v", "--version"):
        from sluice import __version__

        print(f"Sluice server v={__version__} (Redis-compatible 7.0)")
        return 0
    try:
        config = build_config(args)
    except (ConfigError, OSError) as e:
        print(str(e), file=sys.stderr)
        return 1
    levels = {"debug": logging.DEBUG, "verbose": logging.INFO, "notice": logging.INFO,
              "warning": logging.WARNING, "nothing": logging.CRITICAL}
    handler: logging.Handler = (logging.FileHandler(config.logfile) if config.logfile
                                else logging.StreamHandler())
    logging.basicConfig(level=levels[config.loglevel], handlers=[handler],
                        format="%(process)d:M %(asctime)s %(levelname).1s %(message)s")
    loop_name = _install_loop()
    logging.getLogger("sluice").info("Sluice starting (event loop: %s)", loop_name)
    try:
        server = Server(config)  # users, aclfile, rename-command are checked here
    except ConfigError as e:
        logging.getLogger("sluice").error("%s", e)
        return 1
    server.loop_name = loop_name
    server.cpus_at_start = affinity.pin_main_thread(config)
    try:
        asyncio.run(_run(server))
    except ConfigError as e:  # TLS settings, checked when the listener opens
        logging.getLogger("sluice").error("%s", e)
        return 1
    except OSError as e:
        logging.getLogger("sluice").error("%s", e)
        return 1
    except LoadError as e:  # the data on disk can't be loaded safely: say where, exit 1
        logging.getLogger("sluice").error("%s", e)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
