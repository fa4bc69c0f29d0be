"""A SparkSession set up for the known traps of local runs, with the data source registered.

- ``SPARK_LOCAL_IP=127.0.0.1``: otherwise Spark binds to whatever the host name resolves to.
- ``PYSPARK_PYTHON`` / ``PYSPARK_DRIVER_PYTHON``: the interpreter running us (the venv), or
  the workers start a system Python that has neither pyspark's deps nor this package.
- ``PYTHONPATH`` gains the directory holding the ``sluice`` package, so Python workers can
  unpickle the data source even when the package is not installed (a source checkout).
- ``spark.ui.enabled=false`` on request (tests), and few shuffle partitions for small data.
- ``spark.log.level``: Spark's log level from the start (ERROR by default), not INFO.

Under ``spark-submit`` the JVM starts before this code runs, so the first two must be given
on its command line (``SPARK_LOCAL_IP=127.0.0.1 spark-submit --conf spark.log.level=WARN
...``, see docs/pipeline.md).

Environment variables already set by the user win, except that PYTHONPATH is only extended.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])
LOG4J2_PROPERTIES = str(Path(__file__).resolve().with_name("log4j2.properties"))
JAVA_OPTIONS = f"-Dlog4j2.configurationFile={LOG4J2_PROPERTIES}"


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
    log_level: str = "ERROR",
) -> Any:
    """Get or create a SparkSession and register :class:`SluiceDataSource` on it.

    ``log_level`` is Spark's, from the context's start (``spark.log.level``), so its INFO
    lines never reach the terminal; ``"OFF"`` also hides a failed task's logged traceback.
    """
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
        .config("spark.log.level", log_level)
    )
    conf = dict(conf or {})
    # Read by the JVM's launcher (pyspark passes the builder's settings to it), so the
    # start-up INFO lines never appear; under spark-submit the JVM already runs (see below).
    conf.setdefault("spark.driver.extraJavaOptions", JAVA_OPTIONS)
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(log_level)
    spark.dataSource.register(SluiceDataSource)
    return spark


def submit_args() -> list[str]:
    """The ``spark-submit`` flags that give a job the defaults of :func:`local_session`
    (``SPARK_LOCAL_IP`` and ``PYSPARK_PYTHON`` are environment variables: set them too)."""
    return [
        "--driver-java-options", JAVA_OPTIONS,
        "--conf", "spark.log.level=WARN",
        "--conf", "spark.ui.showConsoleProgress=false",
        "--conf", "spark.sql.session.timeZone=UTC",
    ]


def main(argv: list[str] | None = None) -> int:
    """``python -m sluice.pipeline.session --submit-args | --archive-script``: print what a
    ``spark-submit`` command line needs (see docs/pipeline.md)."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m sluice.pipeline.session")
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--submit-args", action="store_true",
                      help="spark-submit flags with local_session()'s defaults")
    what.add_argument("--archive-script", action="store_true",
                      help="the path of the archive job, for spark-submit")
    args = parser.parse_args(argv)
    if args.submit_args:
        print(" ".join(submit_args()))  # for $(...) in a shell: no quoting, no spaces
    else:
        print(str(Path(__file__).resolve().with_name("archive.py")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
