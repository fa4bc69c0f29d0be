"""Progress of a job in phases (sluice-archive: count, read/write, verify, trim).

``Phases`` shows one row per phase with rows done, rows/s and time, drawn by rich on a
terminal (``mode="live"``), as one line per finished phase in a log (``"lines"``), or not at
all (``"off"``). A phase's total may be an estimate: it is shown with ``~`` and grows if the
rows pass it, and the phase ends on the exact count.

``ProgressListener`` is the driver's end of the reading tasks' progress datagrams (see
``reader.read_partition``): a UDP socket on a free port and a thread adding up the row counts,
so rows/s is live while Spark reads, not known only when a task ends. Datagrams may be lost or
doubled by a retried task: the count is for display only; the job's results come from Spark's
observed metrics.
"""

from __future__ import annotations

import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
)
from rich.text import Text

MODES = ("live", "lines", "off")


def format_rate(rows: int, seconds: float) -> str:
    rate = rows / seconds if seconds > 0 else 0.0
    return f"{rows:,} rows  {rate:,.0f} rows/s  {seconds:,.1f} s"


class _RowsColumn(ProgressColumn):
    def render(self, task: Task) -> Text:
        if not task.fields.get("rate", True) and not task.completed:
            return Text("")  # a phase without rows (starting Spark)
        done = f"{int(task.completed):,}"
        if task.total is None:
            return Text(f"{done} rows")
        mark = "~" if task.fields.get("estimated") and not task.finished else ""
        return Text(f"{done} / {mark}{int(task.total):,} rows")


class _RateColumn(ProgressColumn):
    def render(self, task: Task) -> Text:
        if not task.fields.get("rate", True):
            return Text("")
        if task.finished:
            elapsed = task.finished_time or 0.0
            rate = task.completed / elapsed if elapsed > 0 else 0.0
        else:
            rate = task.speed or 0.0
        return Text(f"{rate:,.0f} rows/s")


class Phase:
    """One phase: ``advance(n)`` / ``set(done)`` rows; ``total`` may be raised later."""

    def __init__(self, phases: Phases, name: str, total: int | None, estimated: bool,
                 task: Any, rate: bool = True) -> None:
        self.phases, self.name, self.total, self.estimated = phases, name, total, estimated
        self.rate = rate  # rows/s means something (not for a plan's estimates)
        self.task = task
        self.rows = 0
        self.started = time.monotonic()
        self.note = ""
        self.finished = False

    def advance(self, rows: int) -> None:
        self.set(self.rows + rows)

    def set(self, rows: int, total: int | None = None) -> None:
        self.rows = rows
        if total is not None:
            self.total = total
        elif self.total is not None and rows > self.total:
            # An estimate that was low: no total until the phase ends (rich then shows a
            # moving bar), rather than a bar stuck at 100% while rows still come.
            self.total = None
        self.phases.refresh(self)

    def finish(self, rows: int | None = None, note: str = "") -> None:
        """The exact count: the bar ends at it, whatever the estimate said (once)."""
        if self.finished:
            return
        self.finished = True
        if rows is not None:
            self.rows = rows
        self.total, self.estimated, self.note = self.rows, False, note
        self.phases.refresh(self, finished=True)


class Phases:
    def __init__(self, mode: str = "live", stream: TextIO | None = None) -> None:
        if mode not in MODES:
            raise ValueError(f"progress mode must be one of {', '.join(MODES)}")
        self.mode = mode
        self.stream = stream or sys.stderr
        self._progress: Progress | None = None
        if mode == "live":
            self._progress = Progress(
                TextColumn("{task.description:<10}"),
                BarColumn(bar_width=30),
                _RowsColumn(),
                _RateColumn(),
                TimeElapsedColumn(),
                console=Console(file=self.stream),
                refresh_per_second=4,
                speed_estimate_period=5.0,
            )

    @classmethod
    def auto(cls, progress: bool | str | None, stream: TextIO | None = None,
             log_lines: bool = False) -> Phases:
        """``True``/``"live"``: live rows; ``None``: live on a terminal, otherwise lines
        (``log_lines``) or nothing; ``False``/``"off"``: nothing."""
        out = stream or sys.stderr
        if isinstance(progress, str):
            return cls(progress, out)
        if progress is None:
            tty = out.isatty()
            return cls("live" if tty else ("lines" if log_lines else "off"), out)
        return cls("live" if progress else "off", out)

    def __enter__(self) -> Phases:
        if self._progress is not None:
            self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()

    @contextmanager
    def phase(self, name: str, total: int | None = None, estimated: bool = False,
              rate: bool = True) -> Iterator[Phase]:
        task = None
        if self._progress is not None:
            task = self._progress.add_task(name, total=total, estimated=estimated, rate=rate)
        phase = Phase(self, name, total, estimated, task, rate)
        yield phase
        phase.finish()

    def refresh(self, phase: Phase, finished: bool = False) -> None:
        if self._progress is not None and phase.task is not None:
            self._progress.update(phase.task, completed=phase.rows, total=phase.total,
                                  estimated=phase.estimated)
            if finished:
                self._progress.stop_task(phase.task)
        elif finished and self.mode == "lines":
            seconds = time.monotonic() - phase.started
            note = f"  ({phase.note})" if phase.note else ""
            if phase.rate:
                done = format_rate(phase.rows, seconds)
            elif phase.rows:
                done = f"{phase.rows:,} rows  {seconds:,.1f} s"
            else:
                done = f"{seconds:,.1f} s"
            self.stream.write(f"{phase.name:<10} {done}{note}\n")
            self.stream.flush()


class ProgressListener:
    """UDP datagrams ``b"<rows>"`` from reading tasks, summed by a daemon thread."""

    def __init__(self, host: str = "127.0.0.1",
                 on_rows: Callable[[int], None] | None = None) -> None:
        self.on_rows = on_rows  # called with the running total after each datagram
        family = socket.getaddrinfo(host, 0, type=socket.SOCK_DGRAM)[0][0]
        self.sock = socket.socket(family, socket.SOCK_DGRAM)
        self.sock.bind((host, 0))
        self.sock.settimeout(0.2)
        self.rows = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sluice-progress", daemon=True)
        self._thread.start()

    @property
    def address(self) -> str:
        host, port = self.sock.getsockname()[:2]
        return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                data = self.sock.recv(64)
            except TimeoutError:
                continue
            except OSError:
                return
            if data.isdigit():
                self.rows += int(data)
                if self.on_rows is not None:
                    self.on_rows(self.rows)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)
        self.sock.close()

    def __enter__(self) -> ProgressListener:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
