"""One line for a failure, saying what is wrong and what to do: the pipeline commands'
error handling (``sluice-archive``, ``python -m sluice.pipeline.stream_job``).

``describe(exc)`` turns the failures a user meets (server down, port closed, wrong password,
missing permission, a key that is not a stream, a bad duration, Spark or Java missing) into
one line; it answers None for anything else, which ``run_cli`` reports as unexpected, with
``--debug`` to see the traceback. Spark wraps errors raised in its Python workers in Java
exceptions whose text carries the Python traceback; the last Python error named in that text
is described the same way.

Nothing here imports redis or pyspark: they are recognised by class name, so this module also
words the error of an install without the ``spark`` extra.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn
from urllib.parse import urlsplit

EXTRA = "pip install 'sluice[spark]'"


class PipelineError(Exception):
    """A problem the user can fix; the message says what is wrong and what to do."""


def where(url: str | None) -> str:
    """``host:port/db`` of a URL, without credentials."""
    if not url:
        return "the server"
    parts = urlsplit(url)
    host = parts.hostname or "127.0.0.1"
    port = parts.port or 6379
    db = parts.path.lstrip("/") or "0"
    return f"{host}:{port}/{db}"


def _first_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[0] if lines else ""


# "redis.exceptions.ConnectionError: Error 111 ..." as the last line of a Python traceback
# inside a Java exception's text; Java's own exceptions (org., java., scala.) are skipped.
_WRAPPED = re.compile(r"^\s*((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception)): (.+)$", re.M)
_JAVA = ("org.", "java.", "scala.", "py4j.", "com.", "io.netty.")


def describe(exc: BaseException, url: str | None = None) -> str | None:
    name = type(exc).__name__
    module = type(exc).__module__
    text = str(exc)
    if isinstance(exc, PipelineError):
        return text
    if isinstance(exc, ModuleNotFoundError) and (exc.name or "").split(".")[0] in (
            "pyspark", "pyarrow", "redis", "rich", "py4j"):
        return f"the pipeline needs the spark extra ({exc.name} is missing): {EXTRA}"
    if module.startswith("redis"):
        return _describe_redis(name, _first_line(text), url)
    if name == "VerificationError":
        return f"{text}. Run the archive again: it starts over from the last commit."
    if module.startswith(("pyspark", "py4j")):
        return _describe_spark(name, text, url)
    if isinstance(exc, ValueError):
        return _first_line(text)
    if isinstance(exc, OSError) and exc.filename:
        return f"{exc.strerror or text}: {exc.filename} (check the paths given)"
    return None


def _describe_redis(name: str, message: str, url: str | None) -> str | None:
    at = where(url)
    if name in ("AuthenticationError", "AuthenticationWrongNumberOfArgsError") or \
            message.startswith(("WRONGPASS", "NOAUTH", "invalid username-password")):
        return (f"{at} refused the login ({message}): put the right user and password in "
                "--url, as redis://user:password@host:port/db")
    if name == "TimeoutError":
        return (f"{at} did not answer in time ({message}): check that it is up and not "
                "overloaded")
    if name == "ConnectionError" or "Connection refused" in message:
        return (f"cannot connect to {at} ({message}): is the server running there? "
                "Check --url")
    if name == "NoPermissionError" or message.startswith("NOPERM"):
        return (f"{at} refused a command ({message}): give the user of --url the stream "
                "commands it needs (+@stream, +@read, +xtrim for the archive)")
    if message.startswith("WRONGTYPE"):
        return (f"a key in --streams is not a stream ({message}): list only stream keys, "
                "or check the database in --url")
    if name in ("ResponseError", "ReadOnlyError", "BusyLoadingError", "OutOfMemoryError"):
        return f"{at} answered an error: {message}"
    return None


def _describe_spark(name: str, text: str, url: str | None) -> str | None:
    if "JAVA_GATEWAY_EXITED" in text or "Java gateway process exited" in text:
        return ("Spark could not start Java: install a Java 17+ runtime and set JAVA_HOME "
                "(or put java on PATH)")
    wrapped = [(n, m) for n, m in _WRAPPED.findall(text) if not n.startswith(_JAVA)]
    if wrapped:
        inner, message = wrapped[-1]
        inner_name = inner.rsplit(".", 1)[-1]
        if inner.startswith("redis.exceptions."):
            return _describe_redis(inner_name, message.strip(), url)
        return f"{message.strip()} (in a Spark task)"
    return None


class Parser(argparse.ArgumentParser):
    """argparse, with a usage mistake in one line (the usage is one ``--help`` away)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (--help shows the usage)\n")


def run_cli(prog: str, parser: argparse.ArgumentParser,
            body: Callable[[argparse.Namespace], int], argv: Sequence[str] | None) -> int:
    """Parse, run ``body``; a failure is one line on stderr and exit status 1 (130 for
    Ctrl-C), unless ``--debug`` asks for the traceback."""
    parser.add_argument("--debug", action="store_true",
                        help="show the full traceback (and Spark's logs) on failure")
    args = parser.parse_args(argv)
    try:
        return body(args)
    except KeyboardInterrupt:
        if args.debug:
            raise
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        if args.debug:
            raise
        line = describe(exc, getattr(args, "url", None))
        if line is None:
            line = (f"unexpected {type(exc).__name__}: {_first_line(str(exc))} (run again "
                    "with --debug for the traceback, and report it if it looks like a bug)")
        print(f"{prog}: error: {line}", file=sys.stderr)
        return 1
