"""Helpers shared by the stream command modules (``streams.py``, ``stream_info.py`` and the
consumer-group commands).

Role: the pieces every stream handler needs and that must behave the same everywhere:

- ``get_stream``: the stream under a key, ``None`` if absent, WRONGTYPE otherwise.
- ``entry_reply`` / ``entries_reply``: the ``[id, [f1, v1, ...]]`` shape Redis's
  ``streamReplyWithRange`` sends. An entry whose fields are ``None`` (deleted while pending,
  XREADGROUP history) is sent as a null array: ``*-1`` in RESP2, ``_`` in RESP3.
- ``range_reply``: the same shape for a range of a stream (XRANGE, XREVRANGE, XREAD), rendered
  straight from the stream's nodes into RESP (one ``%`` per entry, through a template per set
  of field names; entries are arrays of bulk strings, the same in RESP2 and RESP3).
- ``parse_count``: COUNT for XREAD / XREADGROUP (negative means no limit, as Redis clamps).
- ``parse_block_timeout``: BLOCK milliseconds of XREAD / XREADGROUP.
- ``parse_policy``: KEEPREF | DELREF | ACKED (Redis 8.2) as the storage's ``RefPolicy``.
- ``ReplyBudget`` / ``parse_reply_cap``: XREAD / XREADGROUP ``MAXCOUNT`` and ``MAXSIZE``
  (Redis 8.10, from the redis.io pages; no 8.10 server here): a cap on the entries and on the
  bytes of the whole reply, across streams, never below one entry.
- ``TrimArgs`` / ``parse_add_or_trim`` / ``trim_and_rewrite``: Redis's
  ``streamParseAddOrTrimArgsOrReply`` shared by XADD and XTRIM, with the Redis 8.2 reference
  policies and the Redis 8.6 idempotent-production options of XADD (IDMPAUTO pid | IDMP pid
  iid), and the rewrite of an approximate trim into an exact one for the AOF
  (``streamRewriteApproxSpecifier`` / ``streamRewriteTrimArgument``).

Invariants: argument checks run in Redis's order so the same error wins; nothing here builds
a reply for a whole command. A command replayed from the AOF (``ctx.kind == "aof"``, Redis's
``mustObeyClient``) trims without LIMIT, may carry LIMIT after ``=``, and may combine IDMP with
the explicit ID the original XADD generated, because that is what we log.

Mirrors ``t_stream.c``: ``streamParseAddOrTrimArgsOrReply``, ``streamReplyWithRange``'s
per-entry shape, ``lookupKeyRead`` + ``checkType``. The 8.2/8.6 options follow Redis's test
suite and the redis.io pages (their C source was not available to compare with).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sluice.protocol import NULL_ARRAY, Raw, string2ll
from sluice.storage.stream import ACKED, DELREF, KEEPREF, RefPolicy, Stream, default_trim_limit
from sluice.storage.stream_node import Node
from sluice.storage.streamid import format_id, parse_strict_id, parse_xadd_id

from . import errors as E
from .args import parse_int
from .context import Context
from .errors import CommandError

__all__ = [
    "ReplyBudget",
    "TrimArgs",
    "entries_reply",
    "entry_reply",
    "get_stream",
    "new_stream",
    "parse_ids_block",
    "parse_add_or_trim",
    "parse_block_timeout",
    "parse_count",
    "parse_policy",
    "parse_reply_cap",
    "range_reply",
    "render_entries",
    "trim_and_rewrite",
]


LLONG_MAX = (1 << 63) - 1
_POLICIES: dict[bytes, RefPolicy] = {b"KEEPREF": KEEPREF, b"DELREF": DELREF, b"ACKED": ACKED}


def get_stream(ctx: Context, key: bytes) -> Stream | None:
    """The stream stored at ``key`` (an access), None if absent; WRONGTYPE for other types."""
    return ctx.db.get_typed(key, Stream)  # type: ignore[no-any-return]


def entry_reply(sid: int, fields: list[bytes] | None) -> list[Any]:
    """One entry as ``[id, [f1, v1, ...]]``; a deleted entry's fields are a null array."""
    return [format_id(sid), NULL_ARRAY if fields is None else fields]


def entries_reply(entries: Sequence[tuple[int, list[bytes] | None]]) -> list[Any]:
    """A list of entries as ``streamReplyWithRange`` sends them."""
    return [[format_id(sid), NULL_ARRAY if f is None else f] for sid, f in entries]


def range_reply(stream: Stream, start: int, end: int, count: int = 0, rev: bool = False) -> Raw:
    """``entries_reply(stream.range(start, end, count, rev))``, already encoded.

    O(log N + M): M entries rendered by their nodes (``Node.render``) with no list per entry.
    """
    return render_entries(stream.spans(start, end, count, rev), rev)


def render_entries(spans: list[tuple[Node, int, int]], rev: bool = False) -> Raw:
    """The entries of ``Stream.spans`` as ``entries_reply`` would encode them."""
    out = [b""]
    for node, lo, hi in spans:
        node.render(lo, hi, rev, entry_template, out)
    out[0] = b"*%d\r\n" % (len(out) - 1)
    return Raw(b"".join(out))


_TEMPLATES: dict[tuple[bytes, ...], bytes] = {}
_TEMPLATES_MAX = 1024  # field-name sets are client data: the cache is bounded


def entry_template(names: tuple[bytes, ...]) -> bytes:
    """The RESP of one entry with these field names, as a ``%`` template taking
    ``(len(id), id, len(v1), v1, ...)``: ``*2 $id *2n $f1 $v1 ...``."""
    template = _TEMPLATES.get(names)
    if template is None:
        parts = [b"*2\r\n$%%d\r\n%%b\r\n*%d\r\n" % (2 * len(names))]
        for name in names:
            # A name is data, not format: its '%' signs are doubled.
            parts.append(b"$%d\r\n%b\r\n$%%d\r\n%%b\r\n" % (len(name), name.replace(b"%", b"%%")))
        template = b"".join(parts)
        if len(_TEMPLATES) >= _TEMPLATES_MAX:
            _TEMPLATES.clear()
        _TEMPLATES[names] = template
    return template


def parse_reply_cap(raw: bytes, error: str) -> int:
    """MAXCOUNT / MAXSIZE: a positive integer, else ``error`` (also for a non-number)."""
    n = string2ll(raw)
    if n is None or n <= 0:
        raise CommandError(error)
    return n


def _bulk_size(n: int) -> int:
    return n + len(b"%d" % n) + 5  # $<n>\r\n<bytes>\r\n


class ReplyBudget:
    """What is left of XREAD / XREADGROUP's MAXCOUNT and MAXSIZE while the reply is built.

    The pages' rules (Redis 8.10): MAXCOUNT caps the entries of the whole reply, filling
    streams in the order named; MAXSIZE caps its bytes; at least one entry is always
    returned (the byte budget is only enforced once one entry is in); whichever bound is
    reached first wins; an entry that does not fit is neither sent nor (XREADGROUP) added to
    the PEL, and it ends the reply: later streams get nothing.

    Bytes are counted as our RESP2 encoding spells them: each entry, plus each served
    stream's ``[key, entries]`` header. Redis measures its own reply buffer; the page does not
    say more, so the two may differ by the few bytes of the headers (not known).
    """

    __slots__ = ("count_left", "maxsize", "used", "emitted", "header", "closed")

    def __init__(self, maxcount: int, maxsize: int) -> None:
        self.count_left = maxcount or -1  # -1: no MAXCOUNT
        self.maxsize = maxsize  # 0: no MAXSIZE
        self.used = 0  # bytes counted so far
        self.emitted = 0  # entries in the reply so far
        self.header = 0  # bytes of the current stream's header, until its first entry
        self.closed = False  # an entry did not fit: nothing more goes in

    def begin_stream(self, key: bytes) -> None:
        """A stream is about to be served: its header counts with its first entry."""
        self.header = 4 + _bulk_size(len(key)) + 8  # *2, the key, *<n> (n up to 6 digits)

    def per_stream(self, count: int) -> int:
        """COUNT for the next stream (0: no limit) under what is left of MAXCOUNT; -1: none.
        With MAXSIZE alone it is bounded too: an entry takes at least 20 bytes (``*2``, an ID,
        one field and value), so no more than ``maxsize // 20 + 1`` can fit, and a read
        never plans a range longer than that."""
        if self.closed or self.count_left == 0:
            return -1
        n = count
        if self.count_left > 0:
            n = self.count_left if not n else min(n, self.count_left)
        if self.maxsize:
            fit = max(self.maxsize - self.used, 0) // 20 + 1
            n = fit if not n else min(n, fit)
        return n

    def fits(self, sid: int, fields: list[bytes] | None, extra: int = 0) -> bool:
        """May this entry go in? If so it is counted. ``extra``: bytes beyond id + fields
        (XREADGROUP CLAIM's idle time and delivery count)."""
        if self.closed or self.count_left == 0:
            return False
        if self.maxsize:
            size = 4 + _bulk_size(len(format_id(sid))) + extra + self.header
            if fields is None:
                size += 5  # *-1
            else:
                size += len(b"*%d\r\n" % len(fields)) + sum(_bulk_size(len(f)) for f in fields)
            if self.emitted and self.used + size > self.maxsize:
                self.closed = True
                return False
            self.used += size
            self.header = 0
        self.emitted += 1
        if self.count_left > 0:
            self.count_left -= 1
        return True

    def fitting(self, spans: list[tuple[Node, int, int]]) -> int:
        """How many of the live entries in ``spans`` (``Stream.spans``) fit, in order."""
        n = 0
        for node, lo, hi in spans:
            data = node.data
            for i in range(lo, hi):
                if data[i] is not None:
                    if not self.fits(node.id_at(i), node.fields_at(i)):
                        return n
                    n += 1
        return n


def parse_count(raw: bytes) -> int:
    """COUNT of XREAD / XREADGROUP: an integer; negative (and 0) mean no limit -> 0."""
    n = parse_int(raw)
    return n if n > 0 else 0


def parse_block_timeout(raw: bytes, now_ms: int) -> int:
    """BLOCK of XREAD / XREADGROUP: whole milliseconds, 0 = forever (getTimeoutFromObject).

    A deadline past the largest 64-bit value is "timeout is out of range", as Redis 7.2+
    says; 7.0 wrapped around and blocked instead.
    """
    ms = string2ll(raw)
    if ms is None:
        raise CommandError(E.TIMEOUT_NOT_INTEGER)
    if ms < 0:
        raise CommandError(E.NOT_POSITIVE_TIMEOUT)
    if ms > 0 and ms > LLONG_MAX - now_ms:
        raise CommandError(E.TIMEOUT_OUT_OF_RANGE)
    return ms


def parse_policy(arg: bytes) -> RefPolicy | None:
    """KEEPREF / DELREF / ACKED (any case) as a storage policy, None for anything else."""
    if 5 <= len(arg) <= 7:
        return _POLICIES.get(arg.upper())
    return None


def new_stream(ctx: Context) -> Stream:
    """A stream a command creates: its IDMP settings come from stream-idmp-duration and
    stream-idmp-maxsize, as Redis 8.6's streamNew takes them."""
    stream = Stream()
    cfg = ctx.server.config
    stream.idmp.duration, stream.idmp.maxsize = cfg.stream_idmp_duration, cfg.stream_idmp_maxsize
    return stream


def parse_ids_block(argv: list[bytes], start: int) -> tuple[RefPolicy, list[bytes]]:
    """``[KEEPREF | DELREF | ACKED] IDS numids id ...`` of XDELEX and XACKDEL, from ``start``:
    the policy and the ID arguments, not yet parsed.

    Redis 8.2's rules: the policy at most once, a missing IDS block is its own error, a later
    IDS block replaces an earlier one. The IDs are parsed by the caller once the key (and the
    group) exist, all of them before anything changes: for a missing key every ID is -1,
    whatever it looks like.
    """
    policy: RefPolicy | None = None
    ids: list[bytes] | None = None
    argc = len(argv)
    i = start
    while i < argc:
        opt = argv[i]
        if opt.upper() == b"IDS" and i + 1 < argc:
            n = parse_int(argv[i + 1], E.NUMIDS_NOT_POSITIVE)
            if n <= 0:
                raise CommandError(E.NUMIDS_NOT_POSITIVE)
            if n > argc - i - 2:
                raise CommandError(E.NUMIDS_MISMATCH)
            ids = argv[i + 2 : i + 2 + n]
            i += 2 + n
            continue
        found = parse_policy(opt)
        if found is None or policy is not None:
            raise CommandError(E.SYNTAX)
        policy = found
        i += 1
    if ids is None:
        raise CommandError(E.IDS_REQUIRED)
    return policy or KEEPREF, ids


class TrimArgs:
    """Parsed options of XADD / XTRIM (Redis's ``streamAddTrimArgs``)."""

    __slots__ = (
        "strategy", "threshold", "approx", "limit", "threshold_idx", "policy", "no_mkstream",
        "id_idx", "id_spec", "idmp_pid", "idmp_iid", "idmp_idx",
    )

    def __init__(self) -> None:
        self.strategy: str | None = None  # "MAXLEN" | "MINID" | None (no trimming)
        self.threshold = 0  # the MAXLEN count or the MINID ID
        self.approx = False  # "~" given
        self.limit = 0  # entries the trim may delete at most; 0 = no cap
        self.threshold_idx = 0  # argv index of the threshold (rewritten for the AOF)
        self.policy: RefPolicy = KEEPREF  # 8.2 reference policy for trimmed entries
        self.no_mkstream = False  # XADD NOMKSTREAM
        self.id_idx = 0  # XADD: argv index of the ID ("*" included)
        self.id_spec: tuple[int, bool] | None = None  # XADD: parse_xadd_id's result
        self.idmp_pid: bytes | None = None  # XADD IDMP / IDMPAUTO producer ID
        self.idmp_iid: bytes | None = None  # XADD IDMP idempotent ID (None for IDMPAUTO)
        self.idmp_idx = 0  # argv index of the IDMP / IDMPAUTO keyword


def parse_add_or_trim(ctx: Context, argv: list[bytes], xadd: bool) -> TrimArgs:
    """Parse the options of XADD (up to and including the ID) or XTRIM, in Redis's order.

    ``argv`` is the whole command. For XADD the result's ``id_idx`` is where the ID is and
    the fields follow it. Raises CommandError with Redis's text.
    """
    t = TrimArgs()
    limit_given = False
    policy_given = False
    argc = len(argv)
    i = 2
    while i < argc:
        moreargs = argc - 1 - i
        opt = argv[i]
        lopt = opt.lower()
        if xadd and opt == b"*":
            t.id_idx = i  # fast path for the common auto-ID case: id_spec stays None
            break
        if (lopt == b"maxlen" or lopt == b"minid") and moreargs:
            if t.strategy is not None:
                raise CommandError(E.STREAM_MAXLEN_AND_MINID)
            t.approx = False
            nxt = argv[i + 1]
            if moreargs >= 2 and (nxt == b"~" or nxt == b"="):
                t.approx = nxt == b"~"
                i += 1
            i += 1
            if lopt == b"maxlen":
                t.threshold = parse_int(argv[i])
                if t.threshold < 0:
                    raise CommandError(E.STREAM_MAXLEN_NEGATIVE)
                t.strategy = "MAXLEN"
            else:
                t.threshold = parse_strict_id(argv[i])
                t.strategy = "MINID"
            t.threshold_idx = i
        elif lopt == b"limit" and moreargs:
            t.limit = parse_int(argv[i + 1])
            if t.limit < 0:
                raise CommandError(E.STREAM_LIMIT_NEGATIVE)
            limit_given = True
            i += 1
        elif xadd and lopt == b"nomkstream":
            t.no_mkstream = True
        elif not policy_given and (policy := parse_policy(opt)) is not None:
            # Redis 8.2: a second policy is not an option (XADD reads it as the ID).
            t.policy = policy
            policy_given = True
        elif xadd and lopt == b"idmpauto" and moreargs:
            if t.idmp_pid is not None:
                raise CommandError(E.IDMP_TWICE)
            if not argv[i + 1]:
                raise CommandError(E.IDMPAUTO_EMPTY_PID)
            t.idmp_pid, t.idmp_idx = argv[i + 1], i
            i += 1
        elif xadd and lopt == b"idmp" and moreargs >= 2:
            if t.idmp_pid is not None:
                raise CommandError(E.IDMP_TWICE)
            if not argv[i + 1]:
                raise CommandError(E.IDMP_EMPTY_PID)
            if not argv[i + 2]:
                raise CommandError(E.IDMP_EMPTY_IID)
            t.idmp_pid, t.idmp_iid, t.idmp_idx = argv[i + 1], argv[i + 2], i
            i += 2
        elif xadd:
            t.id_spec = parse_xadd_id(opt)  # no more options: this is the ID
            t.id_idx = i
            if t.idmp_pid is not None and t.id_spec is not None and ctx.kind != "aof":
                raise CommandError(E.IDMP_EXPLICIT_ID)
            break
        else:
            raise CommandError(E.SYNTAX)
        i += 1
    if xadd and not t.id_idx:
        t.id_idx = argc  # ran out of arguments: the field count check reports it
    if limit_given and t.limit and t.strategy is None:
        raise CommandError(E.STREAM_LIMIT_WITHOUT_STRATEGY)
    if not xadd and t.strategy is None:
        raise CommandError(E.XTRIM_WITHOUT_STRATEGY)
    obey = ctx.kind == "aof"
    if obey:
        t.limit = 0  # the logged trim is exact: never cut it short on replay
    elif limit_given:
        if not t.approx:
            raise CommandError(E.STREAM_LIMIT_WITHOUT_APPROX)
    elif t.approx:
        t.limit = default_trim_limit(ctx.server.config.stream_node_max_entries)
    else:
        t.limit = 0
    return t


def trim_and_rewrite(stream: Stream, t: TrimArgs, logged: list[bytes]) -> int:
    """Trim ``stream`` as ``t`` says; returns the entries deleted.

    For an approximate trim, ``logged`` (the argv that goes to the AOF) gets ``=`` and the
    exact threshold the trim ended at: the stream's length for MAXLEN, the first ID still
    stored (tombstones count) for MINID, as Redis rewrites it.
    """
    strategy = t.strategy
    assert strategy is not None
    deleted = stream.trim(strategy, t.threshold, t.approx, t.limit, t.policy)  # type: ignore[arg-type]
    if t.approx:
        logged[t.threshold_idx - 1] = b"="
        if strategy == "MAXLEN":
            logged[t.threshold_idx] = b"%d" % stream.length
        else:
            # An empty stream gives the largest ID, as streamGetEdgeID does: replay empties it.
            logged[t.threshold_idx] = format_id(stream.first_stored_id())
    return deleted
