"""The ``sluice-archive`` command's entry point: it names the extra to install when pyspark,
pyarrow, redis-py or rich is missing, where importing the job would fail with a traceback.

Kept apart from :mod:`sluice.pipeline.errors`, which the job's modules import (an import of
the job from there would make a cycle).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from sluice.pipeline.errors import describe


def archive_main(argv: Sequence[str] | None = None) -> int:
    try:
        from sluice.pipeline.archive import main
    except ModuleNotFoundError as exc:
        print(f"sluice-archive: error: {describe(exc)}", file=sys.stderr)
        return 1
    return main(argv)


if __name__ == "__main__":
    sys.exit(archive_main())
