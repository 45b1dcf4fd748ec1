"""Engines for the data passes: ``local`` (numpy, in memory) and ``spark`` (pyspark).

:mod:`dprelease.engine.base` defines the interface an algorithm is written against (:class:`TransactionData`,
:class:`TableData` and the level-by-level partitioners); :func:`open_transactions` / :func:`open_table` read an
input on the chosen engine and are the one place an engine is chosen by name. pyspark is imported only when the
Spark engine is used (``dprelease[spark]``).

Module map: :mod:`.base` (the interface), :mod:`.kernels` (exact aggregates over one block of records, and the
record-level helpers the algorithms share with the executors), :mod:`.supports` (itemset supports over an
in-memory database), :mod:`.local` (the local engine), :mod:`.spark` (the Spark engine: session, readers,
transactions, tables).
"""

from __future__ import annotations

import os

from ..data.table import EncodedTable, TableSchema
from ..data.transactions import TransactionDB
from ..data.universe import Universe
from ..errors import ParameterError
from .base import LengthSummary, LevelOp, Partitioner, RegionRecords, TableData, TransactionData
from .local import LocalTable, LocalTransactions, as_transaction_data, unwrap

__all__ = ["ENGINES", "DEFAULT_MASTER", "TransactionData", "TableData", "Partitioner", "LevelOp", "LengthSummary",
           "RegionRecords", "LocalTransactions", "LocalTable", "as_transaction_data", "unwrap", "in_memory",
           "open_transactions", "open_table"]

ENGINES = ("local", "spark")
DEFAULT_MASTER = "local[*]"


def _check(engine: str) -> None:
    if engine not in ENGINES:
        raise ParameterError(f"--engine must be one of {', '.join(ENGINES)}, got {engine!r}")


def in_memory(engine: str) -> bool:
    """Whether ``engine`` holds the records in this process's memory (``local``). Only such an engine can derive a
    universe from the data (which reads every record here) and run the algorithms' in-memory paths: the loops
    that count one partition at a time, every DiffGen method, DiffPart-Prefix streams."""
    _check(engine)
    return engine == "local"


def open_transactions(source: str | os.PathLike[str] | TransactionDB | TransactionData, universe: Universe, *,
                      engine: str = "local", master: str | None = None) -> TransactionData:
    """Set-valued data on ``engine``, over the declared ``universe``.

    ``source`` is a path (FIMI text, ``.gz`` too, or Parquet: a ``*.parquet`` file or a directory of them, with
    one list-of-items column) or records already read (a :class:`TransactionDB`, or another engine's data, moved
    to ``engine`` when it is in memory). ``master`` is the Spark master URL (``--spark-master``; default: the
    active session's, else ``local[*]``). Returns :class:`~dprelease.engine.local.LocalTransactions` or
    :class:`~dprelease.engine.spark.SparkTransactions`; :func:`unwrap` gives the in-memory database behind the
    former. Bad input raises :class:`~dprelease.errors.InputError` naming the file.
    """
    _check(engine)
    if isinstance(source, LocalTransactions):
        source = source.db
    if isinstance(source, TransactionData):
        if source.engine_name != engine:
            raise ParameterError(f"data on the {source.engine_name} engine cannot move to the {engine} engine")
        data = source
    elif isinstance(source, TransactionDB):
        if in_memory(engine):
            data = LocalTransactions(source)
        else:
            from .spark import SparkTransactions

            data = SparkTransactions.from_db(source, master)
    elif in_memory(engine):
        from ..data.parquet import is_parquet, read_parquet_transactions

        if is_parquet(source):
            db = read_parquet_transactions(source, universe)
        else:
            from ..data.io import read_transactions

            db, _ = read_transactions(source, universe)
        data = LocalTransactions(db)
    else:
        from .spark import read_transactions as read_on_spark

        data = read_on_spark(str(source), universe, master)
    if data.n_items != universe.size:
        raise ParameterError(f"the data hold {data.n_items} item ids and the universe {universe.size} items")
    return data


def open_table(source: str | os.PathLike[str] | EncodedTable | TableData, schema: TableSchema, *,
               engine: str = "local", master: str | None = None) -> TableData:
    """A table on ``engine``, encoded with the declared ``schema``.

    ``source`` is a path (CSV with a header row, or headerless with the schema's ``columns``; Parquet; an Adult
    directory holding adult.data and adult.test) or a table already encoded (:class:`EncodedTable`). Returns
    :class:`~dprelease.engine.local.LocalTable` or :class:`~dprelease.engine.spark.SparkTable`; :func:`unwrap`
    gives the :class:`EncodedTable` behind the former. Rows holding a ``missing`` token are dropped on either.
    """
    _check(engine)
    if isinstance(source, LocalTable):
        source = source.table
    if isinstance(source, TableData):
        if source.engine_name != engine:
            raise ParameterError(f"a table on the {source.engine_name} engine cannot move to the {engine} engine")
        return source
    if isinstance(source, EncodedTable):
        if in_memory(engine):
            return LocalTable(source)
        from .spark import SparkTable

        return SparkTable.from_encoded(source, master)
    if in_memory(engine):
        from ..data.table import read_table

        return LocalTable(read_table(source, schema))
    from .spark import read_table as read_on_spark

    return read_on_spark(str(source), schema, master)
