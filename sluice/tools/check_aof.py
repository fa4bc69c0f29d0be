"""``sluice-check-aof [--fix] <file.manifest|file.aof>``: check (and repair) an AOF.

Mirrors ``redis-check-aof`` (7.0): a manifest is checked file by file (the base, in RDB or
RESP form, then the incremental files); a single file is checked as an old-style AOF. Output
lines and exit codes follow redis-check-aof so scripts written for it keep working. ``--fix``
truncates the *last* file at the end of its last whole command, after asking (answer ``y``);
an error in any other file cannot be fixed by truncation and is reported as such.
"""

from __future__ import annotations

import os
import sys

from sluice.storage import aof as fmt
from sluice.storage import rdb


def _check_file(path: str, label: str, fix: bool, last: bool, answer: str | None) -> str:
    """Check one file; returns 'valid', 'empty', 'fixed' or exits 1."""
    name = os.path.basename(path)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        print(f"Cannot open file {path}: {e.strerror}, aborting...")
        sys.exit(1)
    if not data:
        return "empty"
    start = 0
    if data[:5] == fmt.RDB_MAGIC:
        stats = rdb.LoadStats()
        try:
            start = rdb.parse(data, None, stats, lambda off, what: print(f"[offset {off}] {what}"))
        except rdb.RdbError as e:
            print(f"--- RDB ERROR DETECTED ---\n[additional info] {e}")
            print("RDB preamble of AOF file is not sane, aborting.")
            sys.exit(1)
        print(f"[offset {start}] \\o/ RDB looks OK! \\o/")
        print("RDB preamble is OK, proceeding with AOF tail...")
    result = fmt.analyze(data, start)
    if isinstance(result.error, fmt.AofCorrupt):
        print(f"AOF {label} format error")
    elif result.error is not None:
        print(f"0x{result.error.offset:16x}: {result.error.reason}")
    elif result.open_multi:
        print(f"0x{result.ok_up_to:16x}: Reached EOF before reading EXEC for MULTI")
    diff = len(data) - result.ok_up_to
    line = result.ok_up_to_line + (1 if start and result.ok_up_to == start else 0)
    print(f"AOF analyzed: filename={label}, size={len(data)}, ok_up_to={result.ok_up_to}, "
          f"ok_up_to_line={line}, diff={diff}")
    if diff == 0:
        return "valid"
    if not fix:
        print(f"AOF {label} is not valid. Use the --fix option to try fixing it.")
        sys.exit(1)
    if not last:
        print(f"Failed to truncate AOF {label} because it is not the last file")
        sys.exit(1)
    print(f"This will shrink the AOF {label} from {len(data)} bytes, with {diff} bytes, "
          f"to {result.ok_up_to} bytes")
    print("Continue? [y/N]: ", end="", flush=True)
    reply = answer if answer is not None else sys.stdin.readline()
    if reply.strip().lower()[:1] != "y":
        print("Aborting...")
        sys.exit(1)
    try:
        os.truncate(path, result.ok_up_to)
    except OSError:
        print(f"Failed to truncate AOF {label}")
        sys.exit(1)
    del name
    return "fixed"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    fix = "--fix" in args
    yes = "--yes" in args  # non-interactive --fix (Sluice addition, for scripts and tests)
    files = [a for a in args if not a.startswith("--")]
    if len(files) != 1:
        print("Usage: sluice-check-aof [--fix] [--yes] <file.manifest|file.aof>")
        return 1
    path = files[0]
    answer = "y" if yes else None
    if not path.endswith(".manifest"):
        print("Start checking Old-Style AOF")
        if _check_file(path, path, fix, True, answer) == "fixed":
            print(f"Successfully truncated AOF {path}")
        else:
            print(f"AOF {path} is valid")
        return 0
    directory = os.path.dirname(path) or "."
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            manifest = fmt.Manifest.parse(f.read())
    except (OSError, fmt.ManifestError) as e:
        print(f"Invalid AOF manifest file format: {e}")
        return 1
    print("Start checking Multi Part AOF")
    files_ = manifest.files()
    for i, info in enumerate(files_):
        if info.type == fmt.BASE and i == 0:
            fpath = os.path.join(directory, info.name)
            with open(fpath, "rb") as f:
                kind = "RDB" if f.read(5) == fmt.RDB_MAGIC else "RESP"
            print(f"Start to check BASE AOF ({kind} format).")
            what = "BASE AOF"
        else:
            if i == (1 if manifest.base else 0):
                print("Start to check INCR files.")
            what = "INCR AOF"
        status = _check_file(os.path.join(directory, info.name), info.name, fix,
                             i == len(files_) - 1, answer)
        if status == "fixed":
            print(f"Successfully truncated AOF {info.name}")
        else:
            print(f"{what} {info.name} is {status}")
    print("All AOF files and manifest are valid")
    return 0


if __name__ == "__main__":
    sys.exit(main())
