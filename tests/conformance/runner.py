"""Run one unit of Redis's Tcl suite against a server, test by test, within a time limit.

``run_unit`` starts a fresh server (Sluice or the reference redis-server) on a free port,
starts one Tcl test client in external mode (``--host/--port``) or in the suite's own
server-spawning mode, plays the test server for it (see ``tcl.py``), and returns every
test's outcome. It never hangs: a unit is stopped when it runs past its wall-clock limit or
when no test reports for ``stall`` seconds, and the test in progress is named. Everything it
starts (the server, the Tcl client and what the client spawns, one process group) is stopped
before it returns.

The suite runs from a throw-away directory per unit: ``tests/`` holds links to the suite's
files (kept by ``tests/build_reference_redis.py`` in ``.cache/``) but a ``tmp/`` of its own,
and ``src/redis-server`` is the reference binary or, for Sluice, a shim that starts
``sluice.server`` (``shim.py``), so the tests that run ``src/redis-server`` themselves test
the server under test.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from tests.conformance.tcl import PacketReader, packet

ROOT = Path(__file__).resolve().parents[2]
# Tags the external mode cannot serve (FIELD_NOTES: how 8.6.3's 2,330 were counted).
EXTERNAL_DENY = ("needs:debug", "needs:repl", "needs:save", "needs:config-maxmemory")
SPAWN_DENY = ("needs:repl",)

# Units that take minutes on Sluice today (measured 2026-11-24: a CLIENT PAUSE left behind
# by a failing scripting test, a reply that never comes): started first, so that two workers
# finish together. Only an ordering hint.
SLOW_FIRST = ("unit/pause", "unit/protocol", "unit/scripting", "unit/tracking",
              "unit/type/stream", "unit/type/list")


@dataclasses.dataclass(slots=True)
class Outcome:
    """One test's result. ``key`` is unique in its unit: the name, with `` #n`` appended for
    the n-th (n >= 2) test of the same name, counted in the order the unit runs them."""

    key: str
    status: str  # ok | err | skip | stalled
    detail: str = ""
    ms: int = 0  # wall-clock time from its start to its result


@dataclasses.dataclass(slots=True)
class UnitRun:
    unit: str
    outcomes: list[Outcome] = dataclasses.field(default_factory=list)
    seconds: float = 0.0
    stopped: str = ""  # why the unit ended early: a limit, an exception, a server that died
    errors: list[str] = dataclasses.field(default_factory=list)  # failures outside any test
    dropped: list[str] = dataclasses.field(default_factory=list)  # config Sluice refused

    def keys(self, status: str) -> list[str]:
        return [o.key for o in self.outcomes if o.status == status]

    @property
    def passed(self) -> int:
        return sum(o.status == "ok" for o in self.outcomes)

    @property
    def failed(self) -> int:
        return sum(o.status in ("err", "stalled") for o in self.outcomes)


class Target:
    """How to start the server under test (external mode) and what ``src/redis-server`` is."""

    name = ""

    def command(self, port: int, workdir: Path) -> list[str]:
        raise NotImplementedError

    def install_binary(self, src: Path) -> None:
        raise NotImplementedError

    def env(self) -> dict[str, str]:
        return dict(os.environ)


class SluiceTarget(Target):
    name = "sluice"

    def command(self, port: int, workdir: Path) -> list[str]:
        return [sys.executable, "-m", "sluice.server", "--port", str(port),
                "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                "--enable-debug-command", "yes"]

    def install_binary(self, src: Path) -> None:
        shim = src / "redis-server"
        shim.write_text(f"#!/bin/sh\nexec '{sys.executable}' -m tests.conformance.shim \"$@\"\n")
        shim.chmod(0o755)

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        path = env.get("PYTHONPATH", "")
        env["PYTHONPATH"] = f"{ROOT}{os.pathsep}{path}" if path else str(ROOT)
        return env


class RedisTarget(Target):
    name = "redis"

    def __init__(self, binary: str) -> None:
        self.binary = binary

    def command(self, port: int, workdir: Path) -> list[str]:
        return [self.binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                "--appendonly", "no", "--enable-debug-command", "yes"]

    def install_binary(self, src: Path) -> None:
        (src / "redis-server").symlink_to(self.binary)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def make_rundir(suite: Path, target: Target) -> Path:
    """A directory to run the suite from: links to the suite, a tmp/ and a src/ of its own."""
    run = Path(tempfile.mkdtemp(prefix="sluice-tcl-"))
    (run / "tests").mkdir()
    for entry in (suite / "tests").iterdir():
        if entry.name != "tmp":
            (run / "tests" / entry.name).symlink_to(entry)
    (run / "tests" / "tmp").mkdir()
    (run / "src").mkdir()
    target.install_binary(run / "src")
    for tool in ("redis-cli", "redis-benchmark", "redis-check-aof", "redis-check-rdb"):
        found = shutil.which(tool)
        if found:
            (run / "src" / tool).symlink_to(found)
    return run


def _wait_ping(port: int, proc: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited at start (status {proc.returncode})")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                s.sendall(b"PING\r\n")
                if s.recv(64).startswith(b"+PONG"):
                    return
        except OSError:
            pass
        time.sleep(0.05)
    raise RuntimeError("server did not answer PING")


def _kill_group(proc: subprocess.Popen[bytes] | None) -> None:
    """Stop a process we started in a session of its own, and everything it started."""
    if proc is None:
        return
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(5)
            break
        except subprocess.TimeoutExpired:
            continue


def _stop_server(proc: subprocess.Popen[bytes] | None) -> None:
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        _kill_group(proc)


@dataclasses.dataclass(slots=True)
class Options:
    limit: float = 600.0   # wall-clock seconds for the whole unit
    stall: float = 120.0   # seconds without any report from the client
    spawn: bool = False    # the suite's server-spawning mode instead of external mode
    baseport: int = 21111  # spawning mode: the ports its servers may use
    portcount: int = 1000
    keep: bool = False     # keep the run directory (logs) for a look afterwards
    extra: tuple[str, ...] = ()  # more test_helper.tcl options (--skiptest, --only: triage)
    cancel: threading.Event | None = None  # set: stop the unit at once (the session ends)
    # The ratchet: once every one of these tests has reported, a unit that makes no progress
    # for ``settle`` seconds is stopped (a hang after the last ledger test costs little).
    watch: frozenset[str] = frozenset()
    settle: float = 10.0


def tcl_command(unit: str, client_port: int, port: int, opts: Options) -> list[str]:
    deny = SPAWN_DENY if opts.spawn else EXTERNAL_DENY
    # --durable: an error outside an assertion fails its test instead of ending the unit.
    # (With spawned servers, an error in a start_server block outside any test still ends
    # the unit: 8.6.3's start_server then pops its server twice, "key pid not known".)
    cmd = ["tclsh", "tests/test_helper.tcl", "--client", str(client_port),
           "--tags", " ".join("-" + t for t in deny), "--durable"]
    if opts.spawn:
        cmd += ["--baseport", str(opts.baseport), "--portcount", str(opts.portcount)]
    else:
        cmd += ["--host", "127.0.0.1", "--port", str(port)]
    return cmd + list(opts.extra)


def run_all(suite: Path, units: list[str], target: Target, opts: Options, jobs: int,
            progress: Callable[[UnitRun], None] | None = None,
            watch: Mapping[str, set[str]] | None = None) -> list[UnitRun]:
    """Every unit, ``jobs`` at a time; the spawning mode gets disjoint port ranges.
    ``watch``: per unit, the tests after which a stalled unit may stop early (the ledger)."""
    slots = list(range(jobs))
    results: list[UnitRun] = []
    units = sorted(units, key=lambda u: u not in SLOW_FIRST)  # stable: the rest keep order

    def one(unit: str) -> UnitRun:
        if opts.cancel is not None and opts.cancel.is_set():
            return UnitRun(unit, stopped="cancelled")
        slot = slots.pop()
        try:
            mine = dataclasses.replace(opts, baseport=opts.baseport + slot * opts.portcount,
                                       watch=frozenset((watch or {}).get(unit, ())))
            return run_unit(suite, unit, target, mine)
        finally:
            slots.append(slot)

    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        for done in concurrent.futures.as_completed([pool.submit(one, u) for u in units]):
            run = done.result()
            results.append(run)
            if progress:
                progress(run)
    return sorted(results, key=lambda r: r.unit)


def run_unit(suite: Path, unit: str, target: Target, opts: Options | None = None) -> UnitRun:
    """One unit; run again once if its Tcl client was killed by a signal we did not send
    (the machines are shared: a neighbour's stray kill is not Sluice's doing)."""
    result = _run_unit(suite, unit, target, opts or Options())
    if result.stopped.startswith("the Tcl client exited (status -"):
        again = _run_unit(suite, unit, target, opts or Options())
        again.errors.append(f"first attempt: {result.stopped}; run again")
        return again
    return result


def _run_unit(suite: Path, unit: str, target: Target, opts: Options) -> UnitRun:
    result = UnitRun(unit)
    run = make_rundir(suite, target)
    server: subprocess.Popen[bytes] | None = None
    client: subprocess.Popen[bytes] | None = None
    listener = socket.socket()
    start = time.monotonic()
    try:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        port = 0
        if not opts.spawn:
            port = free_port()
            data = run / "server"
            data.mkdir()
            with (run / "server.log").open("wb") as log:
                server = subprocess.Popen(target.command(port, data), cwd=data, stdout=log,
                                          stderr=subprocess.STDOUT, env=target.env(),
                                          start_new_session=True)
            _wait_ping(port, server, 30)
        cmd = tcl_command(unit, listener.getsockname()[1], port, opts)
        env = {**target.env(), "SLUICE_SHIM_REPORT": str(run / "shim-report.txt")}
        with (run / "tcl.log").open("wb") as log:
            client = subprocess.Popen(cmd, cwd=run, stdout=log, stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL, env=env,
                                      start_new_session=True)
        _converse(listener, client, server, unit, result, opts, start)
    except RuntimeError as e:
        result.stopped = str(e)
    finally:
        listener.close()
        _kill_group(client)
        _stop_server(server)
        result.seconds = time.monotonic() - start
        report = run / "shim-report.txt"
        if report.exists():
            result.dropped = sorted(set(report.read_text().splitlines()))
        if result.stopped and (run / "server.log").exists():
            tail = (run / "server.log").read_text(errors="replace")[-2000:]
            if tail.strip():
                result.errors.append("server log (end):\n" + tail)
        if opts.keep:
            print(f"{unit}: run directory kept in {run}", file=sys.stderr)
        else:
            shutil.rmtree(run, ignore_errors=True)
    return result


def _converse(listener: socket.socket, client: subprocess.Popen[bytes],
              server: subprocess.Popen[bytes] | None, unit: str, result: UnitRun,
              opts: Options, start: float) -> None:
    """Serve one test client until its unit is done, it dies, or a limit is reached."""
    listener.settimeout(30)
    try:
        conn, _ = listener.accept()
    except TimeoutError:
        raise RuntimeError("the Tcl test client did not connect") from None
    reader = PacketReader()
    seen: dict[str, int] = {}
    current = ""  # the test in progress, from its "testing" packet
    began = 0.0   # when it began
    last = time.monotonic()
    with conn:
        while True:
            now = time.monotonic()
            if opts.cancel is not None and opts.cancel.is_set():
                result.stopped = "cancelled"
                return
            if (opts.watch and now - last > opts.settle
                    and opts.watch <= {o.key for o in result.outcomes}):
                if current:
                    result.outcomes.append(Outcome(_key(seen, current), "stalled",
                                                   f"no progress for {opts.settle:.0f} s"))
                result.stopped = (f"stopped after its ledger tests: no progress for "
                                  f"{opts.settle:.0f} s" + (f" in {current!r}" if current else ""))
                return
            if now - start > opts.limit or now - last > opts.stall:
                limit = (f"unit limit of {opts.limit:.0f} s" if now - start > opts.limit
                         else f"no progress for {opts.stall:.0f} s")
                if current:
                    result.outcomes.append(Outcome(_key(seen, current), "stalled", limit))
                    result.stopped = f"{limit}: stopped in {current!r}"
                else:
                    result.stopped = f"{limit}, between tests"
                return
            if server is not None and server.poll() is not None:
                if current:
                    result.outcomes.append(Outcome(_key(seen, current), "stalled",
                                                   "the server exited"))
                result.stopped = f"the server exited (status {server.returncode})"
                return
            ready, _, _ = select.select([conn], [], [], 0.5)
            if not ready:
                continue
            data = conn.recv(65536)
            for status, payload, _ in reader.feed(data, eof=not data):
                last = time.monotonic()
                if status == "ready":
                    conn.sendall(packet("run", unit))
                elif status == "testing":
                    current, began = payload, last
                elif status == "ok":
                    result.outcomes.append(Outcome(_key(seen, payload), "ok",
                                                   ms=int((last - began) * 1000)))
                    current = ""
                elif status == "err":
                    head = f"{current} in tests/{unit}.tcl"
                    if current and payload.startswith(head):
                        result.outcomes.append(Outcome(_key(seen, current), "err",
                                                       _durable(payload[len(head):]),
                                                       int((last - began) * 1000)))
                        current = ""
                    else:  # --durable: an error in a start_server block, outside any test
                        result.errors.append(_durable(payload))
                elif status == "skip":
                    result.outcomes.append(Outcome(_key(seen, payload), "skip"))
                elif status == "exception":
                    if current:
                        result.outcomes.append(Outcome(_key(seen, current), "err", payload))
                    result.stopped = "exception: " + payload.splitlines()[0][:300]
                    result.errors.append(payload)
                    return
                elif status == "done":
                    return
            if not data:
                result.stopped = f"the Tcl client exited (status {client.wait()})"
                if current:
                    result.outcomes.append(Outcome(_key(seen, current), "stalled",
                                                   "the Tcl client exited"))
                return


def _durable(text: str) -> str:
    """An error's text as ``--durable`` reports it, without its first line when that is the
    message cut short (the suite drops 10 characters, the length of ``assertion:``) before
    the full Tcl backtrace."""
    lines = text.strip().splitlines()
    if len(lines) >= 2 and lines[0] and lines[1].endswith(lines[0]):
        lines = lines[1:]
    return "\n".join(lines)


def _key(seen: dict[str, int], name: str) -> str:
    n = seen.get(name, 0) + 1
    seen[name] = n
    return name if n == 1 else f"{name} #{n}"
