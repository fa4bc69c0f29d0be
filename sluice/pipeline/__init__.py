"""Sluice data pipeline: a PySpark data source for streams, a sink, and an archival job.

Importing this package needs neither pyspark nor Java: the Spark-facing names are resolved on
first use through module ``__getattr__``, so ``import sluice`` (and the server) stay free of
Spark. Install the ``spark`` extra for the rest.

- :class:`SluiceDataSource` -- ``spark.dataSource.register(SluiceDataSource)``, format ``sluice``
- :func:`archive` -- the archival job (also the ``sluice-archive`` command)
- :func:`local_session` -- a SparkSession configured for this machine's known traps
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_LAZY = {
    "SluiceDataSource": "sluice.pipeline.source",
    "archive": "sluice.pipeline.archive",
    "local_session": "sluice.pipeline.session",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'sluice.pipeline' has no attribute {name!r}")
    return getattr(import_module(module), name)
