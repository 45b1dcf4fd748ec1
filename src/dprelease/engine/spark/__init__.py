"""The Spark engine: the data passes as pyspark jobs (``pip install 'dprelease[spark]'``, Java 17).

Records live in a cached Spark DataFrame, parsed once by the local readers' parsers on the executors
(:mod:`.readers`). Every pass is one job whose tasks run the numpy kernels of :mod:`dprelease.engine.kernels` on
their Arrow batches and return partial counts by key, summed before they reach the driver (:mod:`.passes`). So
the executors return exact aggregates, never noise and never records; the mechanisms and the accountant run on
the driver, as with the local engine, and a seeded run draws the same noise from the same counts in the same
order. :mod:`.session` sets up Spark; :mod:`.transactions` holds set-valued data and DiffPart's partitioner;
:mod:`.tables` holds tables, DiffGen's splitter and RPS's regions.

pyspark is imported only inside the functions that need it: importing this package does not need it.
"""

from __future__ import annotations

from .readers import read_table, read_transactions
from .session import ERROR_MARK, session, stop_session
from .tables import SparkRegions, SparkTable, SparkTableSplitter
from .transactions import SparkPartitioner, SparkTransactions

__all__ = ["session", "stop_session", "ERROR_MARK", "read_transactions", "read_table", "SparkTransactions",
           "SparkPartitioner", "SparkTable", "SparkTableSplitter", "SparkRegions"]
