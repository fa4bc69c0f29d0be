"""``sluice-check-rdb <dump.rdb>``: walk an RDB file and report like ``redis-check-rdb``.

Exit status 0 when the file loads (magic, version, every opcode and value, CRC-64 footer),
1 otherwise, with the offset and reason of the first problem.
"""

from __future__ import annotations

import sys

from sluice.storage import rdb


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("Usage: sluice-check-rdb <rdb-file-name>")
        return 1
    try:
        with open(args[0], "rb") as f:
            data = f.read()
    except OSError as e:
        print(f"Cannot open file {args[0]}: {e.strerror}")
        return 1
    return 0 if rdb.check(data, print) else 1


if __name__ == "__main__":
    sys.exit(main())
