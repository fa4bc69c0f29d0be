"""The options of SSCAN and ZSCAN: ``[MATCH pattern] [COUNT count]``, and NOVALUES refused.

(HSCAN takes the same options plus NOVALUES and parses them in ``hashes.py``; with
``is_hash=True`` this parser would serve it too.)

Mirrors the option loop of Redis's ``scanGenericCommand`` (db.c) for a key's collection: the
options are read after the cursor has been parsed and the key found (a missing key answers
an empty scan without looking at them), in any order, a later one overriding an earlier;
COUNT must be a positive integer (else ``syntax error``); MATCH ``*`` matches everything;
NOVALUES is HSCAN's only (others get its error); anything else is a syntax error.
"""

from __future__ import annotations

from collections.abc import Callable

from sluice.storage.glob import compile_pattern

from .args import Args, parse_int
from .errors import NOVALUES_ONLY_HSCAN, SYNTAX, CommandError


def parse_scan_options(args: Args, is_hash: bool = False
                       ) -> tuple[int, Callable[[bytes], bool] | None, bool]:
    """``(count, matcher or None, novalues)`` from the arguments after the cursor."""
    count = 10
    match: Callable[[bytes], bool] | None = None
    novalues = False
    argv = args.argv
    i = args.pos
    n = len(argv)
    while i < n:
        opt = argv[i].lower()
        left = n - i
        if opt == b"count" and left >= 2:
            count = parse_int(argv[i + 1])
            if count < 1:
                raise CommandError(SYNTAX)
            i += 2
        elif opt == b"match" and left >= 2:
            pattern = argv[i + 1]
            match = None if pattern == b"*" else compile_pattern(pattern)
            i += 2
        elif opt == b"novalues":
            if not is_hash:
                raise CommandError(NOVALUES_ONLY_HSCAN)
            novalues = True
            i += 1
        else:
            raise CommandError(SYNTAX)
    args.pos = n
    return count, match, novalues

