"""Engines for the data passes (issue 11, section 2): ``local`` (numpy, in memory) and ``spark`` (pyspark).

:mod:`dprelease.engine.base` defines the interface; :func:`open_transactions` / :func:`open_table` read an
input on the chosen engine. pyspark is imported only when the Spark engine is used (``dprelease[spark]``).
"""

from __future__ import annotations

from .base import LengthSummary, LevelOp, Partitioner, TableData, TransactionData
from .local import LocalTransactions, as_transaction_data

__all__ = ["ENGINES", "DEFAULT_MASTER", "TransactionData", "TableData", "Partitioner", "LevelOp", "LengthSummary",
           "LocalTransactions", "as_transaction_data"]

ENGINES = ("local", "spark")
DEFAULT_MASTER = "local[*]"
