"""A SparkSession set up for the known traps of local runs, with the data source registered.

- ``SPARK_LOCAL_IP=127.0.0.1``: otherwise Spark binds to whatever the host name resolves to.
- ``PYSPARK_PYTHON`` / ``PYSPARK_DRIVER_PYTHON``: the interpreter running us (the venv), or
  the workers start a system Python that has neither pyspark's deps nor this package.
- ``PYTHONPATH`` gains the directory holding the ``sluice`` package, so Python workers can
  unpickle the data source even when the package is not installed (a source checkout).
- ``spark.ui.enabled=false`` on request (tests), and few shuffle partitions for small data.

Environment variables already set by the user win, except that PYTHONPATH is only extended.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])


def prepare_environment() -> None:
    """Set the process environment the JVM and its Python workers inherit."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if PACKAGE_ROOT not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([PACKAGE_ROOT, *paths])


def local_session(
    master: str | None = "local[2]",
    app_name: str = "sluice",
    ui: bool = True,
    conf: dict[str, str] | None = None,
) -> Any:
    """Get or create a SparkSession and register :class:`SluiceDataSource` on it."""
    prepare_environment()
    from pyspark.sql import SparkSession

    from sluice.pipeline.source import SluiceDataSource

    builder = SparkSession.builder
    if master is not None and "PYSPARK_GATEWAY_PORT" not in os.environ:
        # Under spark-submit (which sets PYSPARK_GATEWAY_PORT) its --master decides.
        builder = builder.master(master)
    builder = (
        builder.appName(app_name)
        .config("spark.ui.enabled", "true" if ui else "false")
        .config("spark.ui.showConsoleProgress", "true" if ui else "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.session.timeZone", "UTC")
    )
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    spark.dataSource.register(SluiceDataSource)
    return spark
