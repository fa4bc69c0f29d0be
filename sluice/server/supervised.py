"""``supervised``: telling a service manager how start-up and shutdown go, as Redis's
``redisIsSupervised`` / ``redisCommunicateSystemd`` do.

* ``systemd``: sd_notify messages on the datagram socket named by ``NOTIFY_SOCKET``
  (``@name`` is Linux's abstract namespace): ``STATUS=`` lines while loading, ``READY=1``
  once the listeners are open (so ``Type=notify`` units start dependents only then),
  ``STOPPING=1`` when a shutdown begins. The protocol is a few bytes on a socket, so no
  libsystemd is needed.
* ``upstart``: the process stops itself (SIGSTOP) once ready, which upstart's ``expect stop``
  takes as the signal, and forgets ``UPSTART_JOB``.
* ``auto``: upstart if ``UPSTART_JOB`` is set, else systemd if ``NOTIFY_SOCKET`` is.
* ``no``: nothing.
"""

from __future__ import annotations

import logging
import os
import signal
import socket

log = logging.getLogger("sluice")


class Supervisor:
    """The service manager this process reports to, if any (``mode``: systemd, upstart or
    none, as ``supervised`` and the environment decide)."""

    __slots__ = ("mode", "_address")

    def __init__(self, setting: str, env: dict[str, str] | None = None) -> None:
        env = dict(os.environ) if env is None else env
        mode = setting
        if mode == "auto":
            mode = "upstart" if env.get("UPSTART_JOB") else (
                "systemd" if env.get("NOTIFY_SOCKET") else "no")
        self._address = ""
        if mode == "systemd":
            path = env.get("NOTIFY_SOCKET", "")
            if not path:
                log.warning("systemd supervision requested, but NOTIFY_SOCKET not found!")
                mode = "no"
            else:
                self._address = "\0" + path[1:] if path.startswith("@") else path
                log.info("Supervised by systemd. Please make sure you set appropriate values "
                         "for TimeoutStartSec and TimeoutStopSec in your service unit.")
        elif mode == "upstart" and not env.get("UPSTART_JOB"):
            log.warning("upstart supervision requested, but UPSTART_JOB not found!")
            mode = "no"
        self.mode = mode

    def notify(self, message: str) -> None:
        """One sd_notify message (systemd only; anything else ignores it)."""
        if self.mode != "systemd":
            return
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
                s.sendto(message.encode(), self._address)
        except OSError as e:
            log.warning("Can't send notification to systemd: %s", e.strerror or e)

    def loading(self) -> None:
        self.notify("STATUS=Sluice is loading...\n")

    def ready(self) -> None:
        if self.mode == "systemd":
            self.notify("STATUS=Ready to accept connections\n")
            self.notify("READY=1\n")
        elif self.mode == "upstart":
            log.info("supervised by upstart, will stop to signal readiness.")
            os.environ.pop("UPSTART_JOB", None)
            os.kill(os.getpid(), signal.SIGSTOP)

    def stopping(self) -> None:
        self.notify("STOPPING=1\n")
