"""``src/redis-server`` for the Tcl suite when Sluice is under test: start ``sluice.server``.

    python -m tests.conformance.shim [config-file] [--directive value ...]

Given a config file first (the suite's server-spawning mode writes one per server from
``tests/assets/default.conf`` and the test's overrides), it passes the file on when Sluice
accepts every directive in it (so CONFIG REWRITE updates the file the suite restarts from);
otherwise it keeps the directives Sluice accepts in a copy and drops the others (each is
appended to ``$SLUICE_SHIM_REPORT``, so a run can list the settings Sluice lacks). It prints
the two log lines the suite waits for before it connects (`` PID: <pid>`` ... ``Server
initialized``: ``wait_server_started`` in ``tests/support/server.tcl``) and replaces itself
with Sluice, same pid, its log on stdout, where the suite looks for ``Ready to accept``.

Without a config file (the suite's command-line tests: ``exec src/redis-server --port``) the
arguments go to Sluice unchanged, so its own errors are what the tests see.
"""

from __future__ import annotations

import os
import sys
import time


def _log(line: str) -> None:
    stamp = time.strftime("%d %b %Y %H:%M:%S")
    sys.stdout.write(f"{os.getpid()}:M {stamp}.000 * {line}\n")


def accepted_lines(lines: list[str]) -> tuple[list[str], list[str]]:
    """(the config lines Sluice accepts, one after the other; ``directive: why`` for the
    lines it refuses)."""
    from sluice.server.config import Config, ConfigError

    config = Config()
    kept: list[str] = []
    refused: list[str] = []
    for line in lines:
        words = line.split(None, 1)
        if not words or words[0].startswith("#"):
            continue
        try:
            config.load_text([line])
        except ConfigError as e:
            why = str(e).strip().splitlines()[-1]
            refused.append(f"{words[0].lower()}: {why} ({line.strip()[:80]})")
            continue
        kept.append(line)
    return kept, refused


def main(argv: list[str]) -> None:
    if argv and not argv[0].startswith("--") and os.path.isfile(argv[0]):
        with open(argv[0], encoding="utf-8", errors="surrogateescape") as f:
            kept, refused = accepted_lines(f.read().splitlines())
        report = os.environ.get("SLUICE_SHIM_REPORT")
        if report and refused:
            with open(report, "a", encoding="utf-8") as f:
                f.writelines(r + "\n" for r in refused)
        if refused:  # Sluice gets the lines it takes; otherwise the file itself, which
            # CONFIG REWRITE then updates for the suite's restart_server to read
            filtered = argv[0] + ".sluice"
            with open(filtered, "w", encoding="utf-8", errors="surrogateescape") as f:
                f.writelines(line + "\n" for line in kept)
            argv = [filtered, *argv[1:]]
        for r in refused:
            _log(f"shim: dropped directive {r}")
        _log(f"Sluice (redis-server shim) started, PID: {os.getpid()}")
        _log("Server initialized")
        sys.stdout.flush()
        os.dup2(1, 2)
    os.execv(sys.executable, [sys.executable, "-m", "sluice.server", *argv])


if __name__ == "__main__":
    main(sys.argv[1:])
