"""A one-line terminal progress bar: rows done, rows/s, elapsed; silent when not a TTY.

``Progress`` polls a callable (e.g. a Spark accumulator's value) from a daemon thread and
redraws one line with ``\\r``; it never blocks the job and draws nothing when the stream is
not a terminal, so logs and CI output stay clean.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import TextIO


def format_rate(rows: int, seconds: float) -> str:
    rate = rows / seconds if seconds > 0 else 0.0
    return f"{rows:,} rows  {rate:,.0f} rows/s  {seconds:,.1f} s"


class Progress:
    def __init__(
        self,
        label: str,
        current: Callable[[], int],
        total: int | None = None,
        stream: TextIO | None = None,
        interval: float = 0.5,
        enabled: bool | None = None,
    ) -> None:
        self.label, self.current, self.total = label, current, total
        self.stream = stream or sys.stderr
        self.interval = interval
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.started = time.monotonic()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Progress:
        self.started = time.monotonic()
        if self.enabled:
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
            self.draw()
            self.stream.write("\n")
            self.stream.flush()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.draw()

    def draw(self) -> None:
        rows = self.current()
        elapsed = time.monotonic() - self.started
        bar = ""
        if self.total:
            filled = min(20, int(20 * rows / self.total))
            bar = "[" + "#" * filled + "." * (20 - filled) + f"] of ~{self.total:,}  ~"
        self.stream.write(f"\r{self.label} {bar}{format_rate(rows, elapsed)}\033[K")
        self.stream.flush()
