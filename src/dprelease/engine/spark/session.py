"""The Spark session, and the one way a job's result comes back to the driver.

:func:`session` reuses an active session (``spark-submit``, tests), else starts one on ``--spark-master``
(default ``local[*]``). Executors must be able to import dprelease (installed on every worker, or shipped with
``--py-files``); ``PYSPARK_PYTHON`` defaults to this interpreter. An executor's input error travels to the
driver marked with :data:`ERROR_MARK` and :func:`collect` re-raises it as one :class:`InputError` line.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from ...errors import InputError, ParameterError

__all__ = ["ERROR_MARK", "BATCH_ROWS", "session", "stop_session", "collect"]

ERROR_MARK = "DPRELEASE_INPUT_ERROR: "  # an executor's input error, re-raised as InputError on the driver
BATCH_ROWS = 65536  # records per Arrow batch handed to a kernel


def _require_pyspark() -> None:
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise ParameterError("--engine spark needs pyspark: pip install 'dprelease[spark]' "
                             "(and Java 17 on the machine)") from None


def session(master: str | None = None) -> Any:
    """The active SparkSession, or a new one on ``master`` (default ``local[*]``)."""
    _require_pyspark()
    import warnings

    from pyspark.sql import SparkSession

    # pyspark 4.3 warns that it does not fully support pandas 3; no pandas path of pyspark is used here
    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas", category=FutureWarning)

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder: Any = SparkSession.builder.appName("dprelease")
    if master and not os.environ.get("DPRELEASE_UNDER_SPARK_SUBMIT"):
        builder = builder.master(master)
    conf = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.execution.arrow.maxRecordsPerBatch": str(BATCH_ROWS),
        "spark.sql.shuffle.partitions": "8",  # the shuffled data are aggregates, not records
        "spark.sql.adaptive.enabled": "true",
        "spark.python.worker.reuse": "true",
    }
    for key, value in conf.items():
        builder = builder.config(key, value)
    try:
        spark = builder.getOrCreate()
    except Exception as exc:  # no Java, a bad master URL, ...
        raise ParameterError(f"--engine spark: cannot start Spark on {master!r}: {str(exc).splitlines()[0]}") from None
    # FATAL: a task's input error is re-raised here as one line (InputError), without Spark's stack traces
    spark.sparkContext.setLogLevel("FATAL")
    return spark


def stop_session() -> None:
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        active.stop()


def collect(df: Any) -> Any:
    """``df.toArrow()``, with an executor's input error re-raised as :class:`InputError`."""
    try:
        return df.toArrow()
    except Exception as exc:
        text = str(exc)
        if ERROR_MARK in text:
            message = text.split(ERROR_MARK, 1)[1].splitlines()[0]
            raise InputError(message) from None
        raise
