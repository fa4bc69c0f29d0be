"""``oom-score-adj`` and ``oom-score-adj-values``: how willing Linux's OOM killer is to pick
the server, and its fork children (BGSAVE, BGREWRITEAOF), as Redis's ``setOOMScoreAdj``.

``no`` leaves ``/proc/self/oom_score_adj`` alone (and puts back the value the process had, if
Sluice changed it). ``yes`` / ``relative`` add the class's value to that original value;
``absolute`` writes the class's value. The classes are the master (Sluice is always one),
a replica and a fork child, in the order of ``oom-score-adj-values`` (``0 200 800`` by
default: a child goes first, so a BGSAVE is killed before the server). The result is kept
within -1000..1000. Lowering the score needs privileges (CAP_SYS_RESOURCE): the write then
fails, and CONFIG SET says so, as Redis does.
"""

from __future__ import annotations

import logging

log = logging.getLogger("sluice")

MASTER, REPLICA, BGCHILD = 0, 1, 2
PATH = "/proc/self/oom_score_adj"


class OomScore:
    """The process's own score, remembered before the first change."""

    __slots__ = ("adjusted", "base", "path")

    def __init__(self, path: str = PATH) -> None:
        self.adjusted = False  # Sluice has written a score: ``base`` is the original one
        self.base = 0
        self.path = path

    def apply(self, mode: str, values: tuple[int, int, int], process_class: int = MASTER) -> bool:
        """Set the score ``mode`` and ``values`` give this process class; False (logged) if
        the file cannot be read or written."""
        if mode != "no":
            if not self.adjusted:
                try:
                    with open(self.path) as f:
                        self.base = int(f.read().strip() or 0)
                except (OSError, ValueError) as e:
                    log.warning("Unable to read oom_score_adj: %s", e)
                    return False
                self.adjusted = True
            value = values[process_class]
            if mode in ("yes", "relative"):
                value += self.base
            value = min(max(value, -1000), 1000)
        elif self.adjusted:
            self.adjusted = False
            value = self.base
        else:
            return True
        try:
            with open(self.path, "w") as f:
                f.write(f"{value}\n")
        except OSError as e:
            log.warning("Unable to write oom_score_adj: %s", e.strerror or e)
            return False
        return True
