"""Request reader: bytes from a client in, argument lists (``list[bytes]``) out.

Two parsers share one contract and one test suite:

* ``PureRequestParser`` follows Redis's ``processInlineBuffer`` / ``processMultibulkBuffer``
  (networking.c) step for step: the same limits, the same ``string2ll`` number rules, the same
  ``Protocol error: ...`` texts. It parses inline commands (telnet, redis-cli in some modes) with
  the quoting rules of ``sdssplitargs``.
* ``RequestReader`` is what connections use. Multibulk requests from authenticated clients go
  through ``hiredis.Reader`` (C, ~10x faster). hiredis accepts exactly the request encodings
  Redis accepts (it shares ``string2ll``), but words its errors differently, ignores
  ``proto-max-bulk-len`` and cannot parse inline commands. So the query buffer keeps the raw
  input hiredis has not finished with; when hiredis fails, the pending part grows large, or a
  big argument begins, that input is parsed again, in place, by the pure parser, which then
  either produces Redis's exact error or carries on parsing where hiredis stopped. Inline input, and every client that has not
  authenticated yet (Redis limits those to 10 arguments and 16 KB bulks), use the pure parser.

Invariant: requests come out in order and exactly once, whichever parser produced them.

This module imports nothing of Sluice's.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from itertools import chain

import hiredis

from .querybuf import (
    MIN_READ,
    PROTO_IOBUF_LEN,
    PROTO_MBULK_BIG_ARG,
    PROTO_RESIZE_THRESHOLD,
    WASTE_THRESHOLD,
    QueryBuffer,
)

PROTO_INLINE_MAX_SIZE = 64 * 1024
PROTO_MAX_BULK_LEN = 512 * 1024 * 1024
UNAUTH_MAX_MULTIBULK = 10
UNAUTH_MAX_BULK = 16384
_INT_MAX = 2**31 - 1
_LLONG_MAX = 2**63 - 1
# Pending hiredis input larger than this is checked against the limits by the pure parser.
_SHADOW_THRESHOLD = 64 * 1024
# An array header of a million elements or more. hiredis allocates the whole list when it
# reads the header (``*2147483647`` is 16 GB of slots, and seconds of CPU to free when the
# client goes away), so input that contains one goes through the pure parser, which, like
# Redis, refuses counts over INT_MAX and collects elements only as they arrive.
_HUGE_COUNT = re.compile(rb"\*[0-9]{7}")
# A bulk header the pure parser must see in a partial request, where hiredis would wait for
# the data: a length over ``proto-max-bulk-len`` (refused as soon as its header arrives, as
# Redis does), or one of ``PROTO_MBULK_BIG_ARG`` bytes or more (a big argument: its buffer is
# made for it, and read into in place). Only the partial request at the end of the input is
# searched (a pipeline's requests are not), and a match inside a value only costs that
# request the slower parser. This finds headers of five digits or more, with their length.
_LONG_BULK = re.compile(rb"\$([0-9]{5,})")
_ANY_BULK = re.compile(rb"\$([0-9]+)")
# Python's regex engine scans at about a nanosecond a byte, even for a literal first byte,
# and a region searched can be a large value's first megabyte. In a region longer than
# _SCAN, the first byte is found with ``find`` (memchr, memory speed) and the pattern tried
# there; after _FEW tries the regex scans the rest (a region dense with that byte).
_SCAN = 4096
_FEW = 8


def _matches(pattern: re.Pattern[bytes], lead: bytes, data: bytearray, start: int,
             end: int) -> Iterator[re.Match[bytes]]:
    """The matches of ``pattern``, which begins with the byte ``lead``, in data[start:end]."""
    if end - start <= _SCAN:
        yield from pattern.finditer(data, start, end)
        return
    i = data.find(lead, start, end)
    tries = 0
    while i >= 0:
        if tries == _FEW:
            yield from pattern.finditer(data, i, end)
            return
        if (m := pattern.match(data, i, end)) is not None:
            yield m
        tries += 1
        i = data.find(lead, i + 1, end)


def _huge_count(data: bytearray, start: int, end: int) -> bool:
    if end - start <= _SCAN:  # every read of an unpipelined client: one regex call
        return _HUGE_COUNT.search(data, start, end) is not None
    return next(_matches(_HUGE_COUNT, b"*", data, start, end), None) is not None


_join = b"".join


class ProtocolError(Exception):
    """Broken framing. ``str(exc)`` is the text after ``-ERR`` (``Protocol error: ...``)."""


def string2ll(s: bytes) -> int | None:
    """Redis's strict integer parse (util.c ``string2ll``); ``None`` when not a valid long long.

    No sign but ``-``, no spaces, no leading zeros, no ``_``: Python's ``int()`` accepts all
    of those, so it is only used after the shape has been checked.
    """
    n = len(s)
    if n == 0 or n > 20:
        return None
    if n == 1:
        return s[0] - 48 if 48 <= s[0] <= 57 else None
    neg = s[0] == 45  # '-'
    digits = s[1:] if neg else s
    if not digits.isdigit() or not digits.isascii() or digits[0] == 48:
        return None
    value = int(digits)
    if neg:
        return -value if value <= _LLONG_MAX + 1 else None
    return value if value <= _LLONG_MAX else None


def split_inline_args(line: bytes) -> list[bytes] | None:
    """Split an inline request like Redis's ``sdssplitargs``; ``None`` for unbalanced quotes.

    Double quotes allow ``\\n \\r \\t \\b \\a \\\\ \\"`` and ``\\xHH`` escapes; single quotes
    only ``\\'``. A closing quote must be followed by a space or the end of the line.
    """
    args: list[bytes] = []
    i, n = 0, len(line)
    space = b" \n\r\t\v\f"
    while True:
        while i < n and line[i] in space:
            i += 1
        if i >= n:
            return args
        cur = bytearray()
        inq = insq = False
        done = False
        while not done:
            if inq:
                if i >= n:
                    return None
                c = line[i]
                if (
                    c == 92  # backslash
                    and i + 3 < n
                    and line[i + 1] == 120  # 'x'
                    and _is_hex(line[i + 2])
                    and _is_hex(line[i + 3])
                ):
                    cur.append(int(line[i + 2 : i + 4], 16))
                    i += 3
                elif c == 92 and i + 1 < n:
                    i += 1
                    cur.append(_ESCAPES.get(line[i], line[i]))
                elif c == 34:  # closing "
                    if i + 1 < n and line[i + 1] not in space:
                        return None
                    done = True
                else:
                    cur.append(c)
            elif insq:
                if i >= n:
                    return None
                c = line[i]
                if c == 92 and i + 1 < n and line[i + 1] == 39:
                    i += 1
                    cur.append(39)
                elif c == 39:  # closing '
                    if i + 1 < n and line[i + 1] not in space:
                        return None
                    done = True
                else:
                    cur.append(c)
            else:
                if i >= n:
                    done = True
                    break
                c = line[i]
                if c in space:
                    done = True
                elif c == 34:
                    inq = True
                elif c == 39:
                    insq = True
                else:
                    cur.append(c)
            if i < n:
                i += 1
        args.append(bytes(cur))


_ESCAPES = {ord("n"): 10, ord("r"): 13, ord("t"): 9, ord("b"): 8, ord("a"): 7}


def _is_hex(c: int) -> bool:
    return 48 <= c <= 57 or 97 <= c <= 102 or 65 <= c <= 70


class PureRequestParser:
    """Redis's request parser, in Python. Feed bytes, then call ``get()`` until it returns None.

    It parses in place from a ``QueryBuffer`` (``qb.start`` is Redis's ``qb_pos``), shared
    with the ``RequestReader`` that hands it input; alone it keeps one of its own.
    """

    __slots__ = ("qb", "max_bulk_len", "auth_required", "_mbulk", "_bulklen", "_args",
                 "_req_start")

    def __init__(self, max_bulk_len: int = PROTO_MAX_BULK_LEN, auth_required: bool = False,
                 qb: QueryBuffer | None = None):
        self.qb = qb if qb is not None else QueryBuffer(0)
        self.max_bulk_len = max_bulk_len
        self.auth_required = auth_required
        self._mbulk = 0  # arguments still expected by the current multibulk request
        self._bulklen = -1  # length of the bulk being read, -1 while reading its header
        self._args: list[bytes] = []
        # Where the multibulk request being read starts in the buffer (to hand it back to
        # hiredis), or -1 once a big argument dropped its start.
        self._req_start = -1

    def feed(self, data: bytes) -> None:
        self.shifted(self.qb.write(data, self.keep_from()))

    def keep_from(self) -> int:
        """The first byte of the buffer still needed: the start of a request being read
        (while it may be handed back), else the first byte not parsed."""
        if self._mbulk and self._req_start >= 0:
            return self._req_start
        return self.qb.start

    def shifted(self, shift: int) -> None:
        """The buffer's content moved ``shift`` bytes to the front."""
        if shift and self._req_start >= 0:
            self._req_start -= shift

    def pending(self) -> int:
        """Bytes received and not yet consumed."""
        return self.qb.end - self.qb.start

    def held(self) -> int:
        """Bytes of input this parser holds: what is not parsed yet, and the arguments of
        the request it is reading (memory accounting: Redis counts them with the client)."""
        return self.qb.end - self.qb.start + sum(map(len, self._args))

    def idle(self) -> bool:
        """True when no partial request is buffered."""
        return self.qb.start >= self.qb.end and self._mbulk == 0

    def request_start(self, max_len: int) -> int | None:
        """Where the multibulk request being read starts in the buffer, if the buffer holds
        only it and it is at most ``max_len`` bytes. Its headers so far passed our checks."""
        if self._mbulk == 0 or self._req_start < 0 or self.qb.end - self._req_start > max_len:
            return None
        return self._req_start

    def bulk_missing(self) -> int:
        """Bytes a big argument being read still lacks (its CRLF included), else 0: reads
        then take exactly that, so the argument ends where the buffer does."""
        bulklen = self._bulklen
        if bulklen < PROTO_MBULK_BIG_ARG or not self._mbulk:
            return 0
        return max(bulklen + 2 - (self.qb.end - self.qb.start), 0)

    def bulk_end(self) -> int:
        """The buffer size a bulk being read needs (to its CRLF), else 0."""
        if self._bulklen < 0 or not self._mbulk:
            return 0
        return self.qb.start + self._bulklen + 2

    def get(self) -> list[bytes] | None:
        """The next complete request, or None when more bytes are needed."""
        qb = self.qb
        while True:
            if self._mbulk == 0:
                if qb.start >= qb.end:
                    qb.start = qb.end = 0  # all consumed: the next read lands at the front
                    return None
                if qb.data[qb.start] == 42:  # '*'
                    started = self._multibulk_header()
                    if started is None:
                        return None
                    if not started:
                        continue  # *0, *-1: nothing to run
                else:
                    args = self._inline()
                    if args is None:
                        return None
                    if not args:
                        continue
                    return args
            args = self._multibulk_body()
            if args is None:
                return None
            return args

    def _inline(self) -> list[bytes] | None:
        qb = self.qb
        buf, pos = qb.data, qb.start
        nl = buf.find(b"\n", pos, qb.end)
        if nl < 0:
            if qb.end - pos > PROTO_INLINE_MAX_SIZE:
                raise ProtocolError("Protocol error: too big inline request")
            return None
        end = nl - 1 if nl > pos and buf[nl - 1] == 13 else nl
        args = split_inline_args(bytes(qb.view[pos:end]))
        if args is None:
            raise ProtocolError("Protocol error: unbalanced quotes in request")
        qb.start = nl + 1
        return args

    def _line(self, too_big: str) -> bytes | None:
        """The header line at ``start`` without its CRLF, or None if incomplete."""
        qb = self.qb
        pos, end = qb.start, qb.end
        cr = qb.data.find(b"\r", pos, end)
        if cr < 0:
            if end - pos > PROTO_INLINE_MAX_SIZE:
                raise ProtocolError(f"Protocol error: too big {too_big} count string")
            return None
        if cr > end - 2:
            return None
        return bytes(qb.view[pos:cr])

    def _multibulk_header(self) -> bool | None:
        line = self._line("mbulk")
        if line is None:
            return None
        ll = string2ll(line[1:])
        if ll is None or ll > _INT_MAX:
            raise ProtocolError("Protocol error: invalid multibulk length")
        if ll > UNAUTH_MAX_MULTIBULK and self.auth_required:
            raise ProtocolError("Protocol error: unauthenticated multibulk length")
        qb = self.qb
        self._req_start = qb.start
        qb.start += len(line) + 2
        if ll <= 0:
            return False
        self._mbulk = ll
        self._args = []
        return True

    def _multibulk_body(self) -> list[bytes] | None:
        qb = self.qb
        while self._mbulk:
            if self._bulklen == -1:
                line = self._line("bulk")
                if line is None:
                    return None
                if line[:1] != b"$":
                    got = line[:1].decode("latin-1") if line else "\r"
                    raise ProtocolError(f"Protocol error: expected '$', got '{got}'")
                ll = string2ll(line[1:])
                if ll is None or ll < 0 or ll > self.max_bulk_len:
                    raise ProtocolError("Protocol error: invalid bulk length")
                if ll > UNAUTH_MAX_BULK and self.auth_required:
                    raise ProtocolError("Protocol error: unauthenticated bulk length")
                qb.start += len(line) + 2
                self._bulklen = ll
                if ll >= PROTO_MBULK_BIG_ARG and qb.end - qb.start <= ll + 2:
                    # A big argument, and the buffer holds nothing after it: move it to the
                    # front and make room for all of it now (Redis's big-arg path). The
                    # request's start is gone, so it can no longer be handed back.
                    self._req_start = -1
                    qb.compact(qb.start)
                    qb.make_room(ll + 2 - qb.end, 0, greedy=False)
                    if qb.peak < ll + 2:
                        qb.peak = ll + 2
            start = qb.start
            if qb.end - start < self._bulklen + 2:
                return None
            self._args.append(bytes(qb.view[start : start + self._bulklen]))
            qb.start = start + self._bulklen + 2
            self._bulklen = -1
            self._mbulk -= 1
        args, self._args = self._args, []
        return args


def encoded_len(req: list[bytes]) -> int:
    """Length of a request's multibulk encoding (there is exactly one valid encoding)."""
    total = 3 + len(b"%d" % len(req))
    for a in req:
        n = len(a)
        total += n + (_BULK_OVERHEAD[n] if n < _SMALL_BULK else 5 + len(b"%d" % n))
    return total


def batch_encoded_len(reqs: list[list[bytes]]) -> int:
    """``sum(map(encoded_len, reqs))``, with the per-argument work done in C.

    This runs for every batch a client sends, so it takes no Python-level step per argument:
    the argument lengths become one ``bytes`` (each under 256), ``translate`` turns each into
    its ``$<n>\r\n`` + ``\r\n`` overhead, and the same table gives each request's
    ``*<n>\r\n`` header (two bytes shorter). A longer argument, or a request of 256 or more
    arguments, falls back to ``encoded_len``, as do small batches (an unpipelined client's
    one request), for which those passes cost more than a loop in Python.
    """
    if len(reqs) < 8:
        return sum(map(encoded_len, reqs))
    try:
        lens = bytes(map(len, _flatten(reqs)))
        counts = bytes(map(len, reqs))
    except ValueError:
        return sum(map(encoded_len, reqs))
    return (sum(lens) + sum(lens.translate(_OVERHEAD)) + sum(counts.translate(_OVERHEAD))
            - 2 * len(counts))


_SMALL_BULK = 4096
_BULK_OVERHEAD = [5 + len(str(n)) for n in range(_SMALL_BULK)]  # "$<n>\r\n" + "\r\n"
_OVERHEAD = bytes(_BULK_OVERHEAD[:256])  # the same, as a translate table for n < 256
_flatten = chain.from_iterable


class RequestReader:
    """The per-connection reader: hiredis for multibulk, the pure parser for everything else.

    Input lands in a ``QueryBuffer`` (querybuf.py: the reusable one while a read is being
    served, else the client's private one). While hiredis parses, ``qb.start`` is the last
    known request boundary and ``qb.data[start:end]`` the raw input after it: where a batch
    of requests does not end on a boundary, their encoded length says exactly where the
    partial request starts, so a replay through the pure parser only ever re-reads one
    partial request, in place.

    The event loop reads through ``get_buffer`` / ``received`` / ``end_read`` (an
    ``asyncio.BufferedProtocol``); ``feed`` copies bytes in, for callers that have them.
    """

    __slots__ = ("_hi", "_qb", "_lent", "_held", "_held_bytes", "_pure", "_error",
                 "max_bulk_len", "auth_required", "_suspect", "_serving")

    def __init__(self, max_bulk_len: int = PROTO_MAX_BULK_LEN, auth_required: bool = False):
        self._hi = hiredis.Reader()
        self._qb: QueryBuffer | None = None  # the buffer holding this client's input
        self._lent = False  # _qb is the reusable buffer, for the read being served
        self._held: list[list[bytes]] = []  # taken but not run (put_back): they come first
        self._held_bytes = 0  # their encoded length
        self._pure: PureRequestParser | None = None
        self._error: ProtocolError | None = None  # met by the pure parser after a batch
        self.max_bulk_len = max_bulk_len
        self.auth_required = auth_required
        self._suspect = False  # input not given to hiredis (a huge count): replay it
        # While a read is served (``received`` to ``end_read``): the input it began with,
        # what Redis's query buffer holds until its requests have all run (-1: no read).
        self._serving = -1

    # -- reading ------------------------------------------------------------------------------

    def get_buffer(self) -> memoryview:
        """Where the next read goes (``BufferedProtocol.get_buffer``): the reusable buffer
        when this client holds none, else the free part of its own, made to have room: a
        big argument's missing bytes exactly, otherwise at least ``MIN_READ`` bytes."""
        global _reusable
        qb = self._qb
        if qb is None:
            qb = _reusable
            if qb is None:
                qb = QueryBuffer(PROTO_IOBUF_LEN)
            else:
                _reusable = None
            self._qb = qb
            self._lent = True
            return qb.view
        pure = self._pure
        missing = pure.bulk_missing() if pure is not None else 0
        if missing:
            self._make_room(missing, greedy=False)
            end = qb.end
            if qb.peak < end + missing:
                qb.peak = end + missing
            return qb.view[end : end + missing]
        if len(qb.data) - qb.end < MIN_READ:
            small = len(qb.data) < PROTO_IOBUF_LEN  # first room: exactly one read's worth
            self._make_room(PROTO_IOBUF_LEN, greedy=not small)
            if small and qb.peak < qb.end + PROTO_IOBUF_LEN:
                qb.peak = qb.end + PROTO_IOBUF_LEN
        return qb.view[qb.end :]

    def received(self, n: int) -> None:
        """``n`` bytes were read into the buffer ``get_buffer`` returned."""
        qb = self._qb
        assert qb is not None
        pos = qb.end
        qb.end = pos + n
        if qb.end > qb.peak:
            qb.peak = qb.end
        self._ingest(pos, n)
        self._serving = qb.end - qb.start + self._held_bytes

    def end_read(self) -> bool:
        """The read has been served: give the reusable buffer back if it holds nothing
        unparsed, else keep it as this client's own (Redis's ``resetReusableQueryBuf``).
        Returns whether the client now holds a buffer of its own (for the cron to trim)."""
        global _reusable
        self._serving = -1
        if not self._lent:
            return self._qb is not None
        self._lent = False
        qb = self._qb
        assert qb is not None
        pure = self._pure
        if qb.start >= qb.end and not self._suspect and (pure is None or pure.idle()):
            self._qb = None
            if _reusable is None and len(qb.data) == PROTO_IOBUF_LEN:
                qb.start = qb.end = qb.peak = 0
                _reusable = qb
            return False
        qb.peak = qb.end
        return True

    def feed(self, data: bytes) -> None:
        """Take bytes read elsewhere (a copy into this client's own buffer)."""
        if not data:
            return
        qb = self._qb
        if qb is None:
            qb = self._qb = QueryBuffer(max(PROTO_IOBUF_LEN, len(data)))
        pos = qb.end
        shift = qb.write(data, self._keep_from())
        if shift and self._pure is not None:
            self._pure.shifted(shift)
        self._ingest(pos - shift, len(data))

    def _ingest(self, pos: int, n: int) -> None:
        """``qb.data[pos:pos + n]`` arrived: start the parser it needs, or give it to hiredis."""
        if self._pure is not None:
            return  # it parses from the buffer
        qb = self._qb
        assert qb is not None
        data = qb.data
        if pos == qb.start and (self.auth_required or data[pos] != 42):  # not '*'
            self._pure = PureRequestParser(self.max_bulk_len, self.auth_required, qb)
        elif _huge_count(data, max(pos - 8, qb.start), pos + n):
            self._suspect = True  # never let hiredis see it (see _HUGE_COUNT)
        elif not self._suspect:
            self._hi.feed(data, pos, n)  # type: ignore[arg-type]  # any buffer, in C

    def _keep_from(self) -> int:
        assert self._qb is not None
        return self._pure.keep_from() if self._pure is not None else self._qb.start

    def _make_room(self, n: int, *, greedy: bool) -> None:
        qb = self._qb
        assert qb is not None
        shift = qb.make_room(n, self._keep_from(), greedy=greedy)
        if shift and self._pure is not None:
            self._pure.shifted(shift)

    # -- what it holds ------------------------------------------------------------------------

    def pending(self) -> int:
        """Bytes of requests not yet run (``qbuf``): input not parsed yet, and requests put
        back."""
        qb = self._qb
        return (qb.end - qb.start if qb is not None else 0) + self._held_bytes

    def shown(self) -> int:
        """``qbuf`` as CLIENT LIST shows it: while a read is served, all the input it began
        with (Redis trims its query buffer only once the read's requests have run, so the
        running command is still in it); else what is pending."""
        return self._serving if self._serving >= 0 else self.pending()

    def free(self) -> int:
        """Room after the input in the buffer this client reads into (``qbuf-free``; while a
        read is served, after the input it began with, as ``shown``)."""
        qb = self._qb
        if qb is None:
            return 0
        if self._serving >= 0:
            return max(len(qb.data) - self._serving, 0)
        return len(qb.data) - qb.end

    def buffer_size(self) -> int:
        """The capacity of this client's own query buffer (0 while it holds none)."""
        qb = self._qb
        return len(qb.data) if qb is not None and not self._lent else 0

    def held(self) -> int:
        """Bytes the reader keeps (memory accounting): its own query buffer, the arguments
        of a request read in part, requests put back."""
        qb = self._qb
        size = self._held_bytes
        if qb is not None:
            size += qb.end - qb.start if self._lent else len(qb.data)
        if self._pure is not None:
            size += sum(map(len, self._pure._args))
        return size

    def resize(self, idle_seconds: int) -> bool:
        """The cron's look at this client's own buffer (``clientsCronResizeQueryBuffer``):
        free it when idle over 2 s with nothing in it, trim it to its content when idle
        with a partial request, and trim it to its recent peak when it is more than twice
        that and over ``PROTO_RESIZE_THRESHOLD``. Returns whether it still holds one."""
        qb = self._qb
        if qb is None or self._lent:
            return False
        pure = self._pure
        if len(qb.data) - qb.end > WASTE_THRESHOLD:
            if idle_seconds > 2:
                if qb.start >= qb.end and not self._suspect and (pure is None or pure.idle()):
                    self._qb = None
                    return False
                self._compact()
                qb.reallocate(qb.end)
            elif len(qb.data) > PROTO_RESIZE_THRESHOLD and len(qb.data) // 2 > qb.peak:
                self._compact()
                size = max(qb.end, qb.peak, pure.bulk_end() if pure is not None else 0)
                qb.reallocate(size)
        qb.peak = max(qb.end, pure.bulk_end() if pure is not None else 0)
        return True

    def _compact(self) -> None:
        qb = self._qb
        assert qb is not None
        shift = qb.compact(self._keep_from())
        if shift and self._pure is not None:
            self._pure.shifted(shift)

    def set_limits(self, *, auth_required: bool | None = None,
                   max_bulk_len: int | None = None) -> None:
        """Change the limits for the requests still to come (AUTH succeeded, RESET, or
        CONFIG SET proto-max-bulk-len): Redis checks them as it parses, so they apply at once."""
        if auth_required is not None:
            self.auth_required = auth_required
        if max_bulk_len is not None:
            self.max_bulk_len = max_bulk_len
        if self._pure is not None:
            self._pure.auth_required = self.auth_required
            self._pure.max_bulk_len = self.max_bulk_len

    # -- parsing ------------------------------------------------------------------------------

    def take(self) -> list[list[bytes]]:
        """Every complete request buffered, in order; ``[]`` when none is complete.

        Raises ``ProtocolError`` on broken framing, but only once the requests before it
        have been taken. Hands out whole batches so that running a pipeline costs no call
        per request; requests taken but not run go back with ``put_back``.
        """
        held = self._held
        if held:
            self._held = []
            self._held_bytes = 0
            return held
        if self._pure is not None:
            return self._take_pure()
        if self._suspect:
            self._suspect = False
            self._to_pure([])
            return self._take_pure()
        qb = self._qb
        if qb is None:
            return []
        batch: list[list[bytes]] = []
        gets = self._hi.gets
        try:
            while (req := gets()) is not False:
                if req:  # None and [] come from *-1 and *0, which Redis ignores
                    # Elements that are not bulk strings (``:1``, ``*``, ``$-1``) make join
                    # fail; the pure parser then words the error.
                    _join(req)
                    batch.append(req)
        except (hiredis.ProtocolError, TypeError):
            self._to_pure(batch)  # the pure parser finds the error after these requests
            return batch or self._take_pure()
        if batch:
            self._batch_end(batch)
        if qb.start < qb.end and (qb.end - qb.start > _SHADOW_THRESHOLD
                                  or self._long_bulk(qb.data, qb.start, qb.end)):
            self._to_pure([])  # one large partial request: check its headers now
            return batch or self._take_pure()
        return batch

    def _long_bulk(self, data: bytearray, start: int, end: int) -> bool:
        """Whether ``data[start:end]`` holds a bulk header the pure parser must see now: a
        big argument, or a length over ``proto-max-bulk-len`` (see ``_LONG_BULK``)."""
        limit = min(self.max_bulk_len, PROTO_MBULK_BIG_ARG - 1)
        pattern = _LONG_BULK if limit >= 9999 else _ANY_BULK  # a small proto-max-bulk-len
        # A length of more digits than any limit has is over it (and int() of a long run of
        # digits is slow, then refused past sys.get_int_max_str_digits()).
        return any(len(m[1]) > 18 or int(m[1]) > limit
                   for m in _matches(pattern, b"$", data, start, end))

    def put_back(self, requests: list[list[bytes]]) -> None:
        """Requests from ``take`` that were not run (the client blocked, or must wait for
        its output to drain): the next ``take`` returns them first. They count as pending
        input, as the unparsed bytes they came from did."""
        if requests:
            self._held = requests
            self._held_bytes = batch_encoded_len(requests)

    def _take_pure(self) -> list[list[bytes]]:
        """Requests from the pure parser (inline input, unauthenticated clients, and input
        hiredis failed on). Before authentication one at a time: AUTH changes the limits
        for the request after it. An error met after some requests is raised by the next
        call, once those have run."""
        pure = self._pure
        assert pure is not None
        if self._error is not None:
            error, self._error = self._error, None
            raise error
        batch: list[list[bytes]] = []
        try:
            while (args := pure.get()) is not None:
                batch.append(args)
                if self.auth_required:
                    return batch
        except ProtocolError as e:
            if not batch:
                raise
            self._error = e
            return batch
        if pure.idle():
            self._pure = None  # back to the fast path for the next chunk
        elif not self.auth_required:
            self._hand_back(pure)
        return batch

    def _batch_end(self, served: list[list[bytes]]) -> None:
        """hiredis wants more input: move the boundary past the requests it served.

        ``has_data()`` is false both at a request boundary and when hiredis has consumed the
        start of a request (its type byte, or whole elements) into its own state, so it
        cannot say where the partial request starts. Each served request has exactly one
        valid encoding, so their encoded lengths do: all input is consumed exactly when they
        add up to it (the common case: a read that ends on a boundary).
        """
        qb = self._qb
        assert qb is not None
        qb.start += batch_encoded_len(served)
        if qb.start >= qb.end:
            qb.start = qb.end = 0

    def _to_pure(self, served: list[list[bytes]]) -> None:
        """Hand the input after ``served`` to the pure parser, which words errors as Redis
        does and checks the limits hiredis ignores. It parses in place."""
        qb = self._qb
        assert qb is not None
        qb.start += batch_encoded_len(served)
        self._pure = PureRequestParser(self.max_bulk_len, self.auth_required, qb)
        self._hi = hiredis.Reader()

    def _hand_back(self, pure: PureRequestParser) -> None:
        """The pure parser waits for the rest of a small multibulk request: let hiredis
        take it from here, so one odd chunk does not keep a pipeline on the slow path."""
        start = pure.request_start(_SHADOW_THRESHOLD // 2)
        qb = pure.qb
        if start is None or _huge_count(qb.data, start, qb.end):
            return
        self._pure = None
        self._hi = hiredis.Reader()
        self._hi.feed(qb.data, start, qb.end - start)  # type: ignore[arg-type]
        qb.start = start


# The reusable query buffer: the one a client without its own reads into (querybuf.py).
_reusable: QueryBuffer | None = None
