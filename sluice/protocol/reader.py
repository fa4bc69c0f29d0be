"""Request reader: bytes from a client in, argument lists (``list[bytes]``) out.

Two parsers share one contract and one test suite:

* ``PureRequestParser`` follows Redis's ``processInlineBuffer`` / ``processMultibulkBuffer``
  (networking.c) step for step: the same limits, the same ``string2ll`` number rules, the same
  ``Protocol error: ...`` texts. It parses inline commands (telnet, redis-cli in some modes) with
  the quoting rules of ``sdssplitargs``.
* ``RequestReader`` is what connections use. Multibulk requests from authenticated clients go
  through ``hiredis.Reader`` (C, ~10x faster). hiredis accepts exactly the request encodings
  Redis accepts (it shares ``string2ll``), but words its errors differently, ignores
  ``proto-max-bulk-len`` and cannot parse inline commands. So the reader keeps the raw chunks
  hiredis has not finished with; when hiredis fails, or the pending part grows large, those
  chunks are replayed through the pure parser, which then either produces Redis's exact error
  or carries on parsing where hiredis stopped. Inline input, and every client that has not
  authenticated yet (Redis limits those to 10 arguments and 16 KB bulks), use the pure parser.

Invariant: requests come out in order and exactly once, whichever parser produced them.

This module imports nothing of Sluice's.
"""

from __future__ import annotations

import re
from itertools import chain

import hiredis

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
# A bulk length with as many digits as ``proto-max-bulk-len`` in a partial request: hiredis
# would wait for its data, but a length over the limit must be refused as soon as its header
# arrives (Redis does), so the pure parser checks it. Only the partial request at the end of
# the input is searched (a pipeline's requests are not), and a match inside a value only
# costs that request the slower parser.
_BIG_BULK: dict[int, re.Pattern[bytes]] = {}


def _big_bulk(max_bulk_len: int) -> re.Pattern[bytes]:
    digits = len(str(max_bulk_len))
    found = _BIG_BULK.get(digits)
    if found is None:
        found = _BIG_BULK[digits] = re.compile(rb"\$[0-9]{%d}" % digits)
    return found

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
    """Redis's request parser, in Python. Feed bytes, then call ``get()`` until it returns None."""

    __slots__ = ("buf", "pos", "max_bulk_len", "auth_required", "_mbulk", "_bulklen", "_args",
                 "_req_start")

    def __init__(self, max_bulk_len: int = PROTO_MAX_BULK_LEN, auth_required: bool = False):
        self.buf = bytearray()
        self.pos = 0
        self.max_bulk_len = max_bulk_len
        self.auth_required = auth_required
        self._mbulk = 0  # arguments still expected by the current multibulk request
        self._bulklen = -1  # length of the bulk being read, -1 while reading its header
        self._args: list[bytes] = []
        self._req_start = 0  # where the multibulk request being read starts in buf

    def feed(self, data: bytes) -> None:
        self.buf += data

    def pending(self) -> int:
        """Bytes received and not yet consumed."""
        return len(self.buf) - self.pos

    def held(self) -> int:
        """Bytes of input this parser holds: what is not parsed yet, and the arguments of
        the request it is reading (memory accounting: Redis counts them with the client)."""
        return len(self.buf) - self.pos + sum(map(len, self._args))

    def idle(self) -> bool:
        """True when no partial request is buffered."""
        return self.pos >= len(self.buf) and self._mbulk == 0

    def partial_multibulk(self, max_len: int) -> bytes | None:
        """The raw bytes of the multibulk request being read, if the buffer holds only it and
        they are at most ``max_len`` bytes (checked before copying: this runs on every chunk
        of a request, and copying a large one each time made big requests quadratic).

        Its headers so far have passed this parser's checks.
        """
        if self._mbulk == 0 or len(self.buf) - self._req_start > max_len:
            return None
        return bytes(self.buf[self._req_start :])

    def get(self) -> list[bytes] | None:
        """The next complete request, or None when more bytes are needed."""
        while True:
            if self._mbulk == 0:
                if self.pos >= len(self.buf):
                    self._compact()
                    return None
                if self.buf[self.pos] == 42:  # '*'
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

    def _compact(self) -> None:
        if self.pos:
            del self.buf[: self.pos]
            self.pos = 0

    def _inline(self) -> list[bytes] | None:
        buf, pos = self.buf, self.pos
        nl = buf.find(b"\n", pos)
        if nl < 0:
            if len(buf) - pos > PROTO_INLINE_MAX_SIZE:
                raise ProtocolError("Protocol error: too big inline request")
            return None
        end = nl - 1 if nl > pos and buf[nl - 1] == 13 else nl
        args = split_inline_args(bytes(buf[pos:end]))
        if args is None:
            raise ProtocolError("Protocol error: unbalanced quotes in request")
        self.pos = nl + 1
        return args

    def _line(self, too_big: str) -> bytes | None:
        """The header line at ``pos`` without its CRLF, or None if incomplete."""
        buf, pos = self.buf, self.pos
        cr = buf.find(b"\r", pos)
        if cr < 0:
            if len(buf) - pos > PROTO_INLINE_MAX_SIZE:
                raise ProtocolError(f"Protocol error: too big {too_big} count string")
            return None
        if cr - pos > len(buf) - pos - 2:
            return None
        return bytes(buf[pos:cr])

    def _multibulk_header(self) -> bool | None:
        line = self._line("mbulk")
        if line is None:
            return None
        ll = string2ll(line[1:])
        if ll is None or ll > _INT_MAX:
            raise ProtocolError("Protocol error: invalid multibulk length")
        if ll > UNAUTH_MAX_MULTIBULK and self.auth_required:
            raise ProtocolError("Protocol error: unauthenticated multibulk length")
        self._req_start = self.pos
        self.pos += len(line) + 2
        if ll <= 0:
            return False
        self._mbulk = ll
        self._args = []
        return True

    def _multibulk_body(self) -> list[bytes] | None:
        buf = self.buf
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
                self.pos += len(line) + 2
                self._bulklen = ll
            start = self.pos
            if len(buf) - start < self._bulklen + 2:
                return None
            self._args.append(bytes(buf[start : start + self._bulklen]))
            self.pos = start + self._bulklen + 2
            self._bulklen = -1
            self._mbulk -= 1
        args, self._args = self._args, []
        if self.pos > 65536:
            self._compact()
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

    While hiredis parses, ``_chunks`` keeps the raw input since the last known request
    boundary. Where a batch of requests does not end on a boundary, their encoded length
    says exactly where the partial request starts; the consumed chunks are dropped, so
    memory stays bounded and a replay through the pure parser only ever re-reads one partial
    request.
    """

    __slots__ = ("_hi", "_chunks", "_pending", "_held", "_held_bytes", "_pure", "_error",
                 "max_bulk_len", "auth_required", "_suspect", "_big_bulk")

    def __init__(self, max_bulk_len: int = PROTO_MAX_BULK_LEN, auth_required: bool = False):
        self._hi = hiredis.Reader()
        self._chunks: list[bytes] = []  # raw input since the last known request boundary
        self._pending = 0  # total length of _chunks
        self._held: list[list[bytes]] = []  # taken but not run (put_back): they come first
        self._held_bytes = 0  # their encoded length
        self._pure: PureRequestParser | None = None
        self._error: ProtocolError | None = None  # met by the pure parser after a batch
        self.max_bulk_len = max_bulk_len
        self.auth_required = auth_required
        self._suspect = False  # input not given to hiredis (a huge count): replay it
        self._big_bulk = _big_bulk(max_bulk_len)

    def feed(self, data: bytes) -> None:
        if self._pure is not None:
            self._pure.feed(data)
        elif self._pending == 0 and (self.auth_required or data[:1] != b"*"):
            self._pure = PureRequestParser(self.max_bulk_len, self.auth_required)
            self._pure.feed(data)
        else:
            chunks = self._chunks
            if _HUGE_COUNT.search(data) or (
                    chunks and _HUGE_COUNT.search(chunks[-1][-8:] + data[:8])):
                self._suspect = True  # never let hiredis see it (see _HUGE_COUNT)
            elif not self._suspect:
                self._hi.feed(data)
            chunks.append(data)
            self._pending += len(data)

    def pending(self) -> int:
        """Bytes of requests not yet run (the query buffer size): input not parsed yet, and
        requests put back."""
        pending = self._pure.pending() if self._pure is not None else self._pending
        return pending + self._held_bytes

    def held(self) -> int:
        """Bytes the reader keeps (memory accounting): input not run yet, and the arguments
        of a request read in part."""
        pending = self._pure.held() if self._pure is not None else self._pending
        return pending + self._held_bytes

    def set_limits(self, *, auth_required: bool | None = None,
                   max_bulk_len: int | None = None) -> None:
        """Change the limits for the requests still to come (AUTH succeeded, RESET, or
        CONFIG SET proto-max-bulk-len): Redis checks them as it parses, so they apply at once."""
        if auth_required is not None:
            self.auth_required = auth_required
        if max_bulk_len is not None:
            self.max_bulk_len = max_bulk_len
            self._big_bulk = _big_bulk(max_bulk_len)
        if self._pure is not None:
            self._pure.auth_required = self.auth_required
            self._pure.max_bulk_len = self.max_bulk_len

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
        self._batch_end(batch)
        if self._pending and (self._pending > _SHADOW_THRESHOLD or self._big_bulk.search(
                self._chunks[0] if len(self._chunks) == 1 else _join(self._chunks))):
            self._to_pure([])  # one large partial request: check its headers now
            return batch or self._take_pure()
        return batch

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
        """hiredis wants more input: forget the input it has finished with.

        ``has_data()`` is false both at a request boundary and when hiredis has consumed the
        start of a request (its type byte, or whole elements) into its own state, so it
        cannot say where the partial request starts. Each served request has exactly one
        valid encoding, so their encoded lengths do: all input is consumed exactly when they
        add up to it (the common case: a read that ends on a boundary).
        """
        if not served:
            return
        consumed = batch_encoded_len(served)
        chunks = self._chunks
        if consumed == self._pending:
            chunks.clear()
            self._pending = 0
            return
        rest = (chunks[0] if len(chunks) == 1 else b"".join(chunks))[consumed:]
        self._chunks = [rest] if rest else []
        self._pending = len(rest)

    def _to_pure(self, served: list[list[bytes]]) -> None:
        """Hand the input after ``served`` to the pure parser, which words errors as Redis
        does and checks the limits hiredis ignores."""
        consumed = batch_encoded_len(served)
        pure = PureRequestParser(self.max_bulk_len, self.auth_required)
        pure.feed(b"".join(self._chunks)[consumed:])
        self._hi = hiredis.Reader()
        self._chunks = []
        self._pending = 0
        self._pure = pure

    def _hand_back(self, pure: PureRequestParser) -> None:
        """The pure parser waits for the rest of a small multibulk request: let hiredis
        take it from here, so one odd chunk does not keep a pipeline on the slow path."""
        raw = pure.partial_multibulk(_SHADOW_THRESHOLD // 2)
        if raw is None or _HUGE_COUNT.search(raw):
            return
        self._pure = None
        self._hi = hiredis.Reader()
        self._hi.feed(raw)
        self._chunks = [raw]
        self._pending = len(raw)
