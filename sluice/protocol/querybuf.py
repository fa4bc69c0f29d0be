"""A client's query buffer: where the socket's bytes land and requests are parsed from.

Sluice manages it as Redis does (networking.c ``readQueryFromClient``, server.c
``clientsCronResizeQueryBuffer``), because that is what keeps idle connections cheap and
large values to one copy:

* A client reads into one **reusable** buffer of ``PROTO_IOBUF_LEN`` bytes, shared by every
  connection (the event loop runs one read at a time). When a read leaves nothing unparsed,
  the buffer goes back for the next client, so ten thousand idle connections hold no input
  buffer at all.
* When a read ends inside a request, the client keeps the buffer as its **private** one, and
  a new reusable buffer is made for the others. The rest of the request is read after the
  part already there.
* A **big argument** (a bulk of ``PROTO_MBULK_BIG_ARG`` bytes or more) gets a buffer sized
  for it as soon as its header is read, and reads take exactly what it still lacks: its
  bytes arrive in place, with no reallocation and no copy until the argument is made.
* A private buffer shrinks in the server's cron: freed when idle for over 2 s with nothing
  in it, trimmed to its content when idle with a partial request, and trimmed to its recent
  peak when it is more than twice that peak.

``CLIENT LIST`` reports ``qbuf`` (bytes not parsed yet) and ``qbuf-free`` (capacity after
them) of the buffer a client holds; memory accounting counts its capacity.

This module imports nothing of Sluice's.
"""

from __future__ import annotations

PROTO_IOBUF_LEN = 16 * 1024  # the reusable buffer, and the first room of a private one
PROTO_MBULK_BIG_ARG = 32 * 1024  # a bulk this long gets a buffer sized for it
PROTO_RESIZE_THRESHOLD = 32 * 1024  # below this a private buffer is not trimmed to its peak
MAX_PREALLOC = 1024 * 1024  # growth doubles below this size, and adds this much above it
MIN_READ = 4096  # a private buffer with less free room than this grows before a read
WASTE_THRESHOLD = 4096  # the cron leaves a buffer alone unless this much of it is free


class QueryBuffer:
    """A bytearray of fixed capacity: ``data[start:end]`` is input not consumed yet.

    The capacity is ``len(data)``; growing replaces ``data`` (never resized in place, so a
    memoryview handed to the event loop for a read stays valid). ``peak`` is the most it has
    held since the cron last looked.
    """

    __slots__ = ("data", "start", "end", "peak", "view")

    def __init__(self, capacity: int) -> None:
        self.data = bytearray(capacity)
        self.view = memoryview(self.data)
        self.start = 0
        self.end = 0
        self.peak = 0

    @property
    def capacity(self) -> int:
        return len(self.data)

    def compact(self, keep_from: int) -> int:
        """Move ``data[keep_from:end]`` to the front; return how far it moved."""
        if keep_from == 0:
            return 0
        n = self.end - keep_from
        if n:
            self.view[:n] = self.view[keep_from : self.end]
        self.start -= keep_from
        self.end = n
        return keep_from

    def reallocate(self, capacity: int) -> None:
        """Replace the storage with one of ``capacity`` bytes (at least ``end``)."""
        data = bytearray(capacity)
        end = self.end
        if end:
            data[:end] = self.view[:end]
        self.data = data
        self.view = memoryview(data)

    def make_room(self, n: int, keep_from: int, *, greedy: bool) -> int:
        """Make ``n`` bytes free after ``end``, first dropping what is before ``keep_from``.

        Greedy growth (sds's ``sdsMakeRoomFor``) doubles the needed size below
        ``MAX_PREALLOC`` and adds ``MAX_PREALLOC`` above it; non-greedy growth takes exactly
        what is needed (a big argument, whose length is known). Returns the shift of the
        content, which positions into the buffer must follow.
        """
        if len(self.data) - self.end >= n:
            return 0
        shift = self.compact(keep_from)
        need = self.end + n
        if need > len(self.data):
            if greedy:
                need = need * 2 if need < MAX_PREALLOC else need + MAX_PREALLOC
            self.reallocate(need)
        return shift

    def write(self, chunk: bytes | bytearray | memoryview, keep_from: int) -> int:
        """Append ``chunk`` (greedy growth); returns the shift as ``make_room`` does."""
        n = len(chunk)
        shift = self.make_room(n, keep_from, greedy=True)
        end = self.end
        self.view[end : end + n] = chunk
        self.end = end + n
        if self.end > self.peak:
            self.peak = self.end
        return shift
