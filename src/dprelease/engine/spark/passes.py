"""One data pass on Spark: Arrow batches as CSR blocks, a kernel per block, partials summed by key.

Every pass is a ``mapInArrow`` job whose tasks run the numpy kernels of :mod:`dprelease.engine.kernels` on their
Arrow batches (a list column *is* a CSR block: offsets and values, zero-copy) and emit partial ``(k0, k1, count)``
rows; the partials are added up by key (:func:`reduce_partials`) and the driver gets only those sums, sorted by
key. So the executors return exact aggregates, never noise and never records.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np

from ...data.transactions import TransactionDB
from .. import kernels
from .session import collect

__all__ = ["AGG_SCHEMA", "batch_db", "list_column", "accumulate", "reduce_partials", "LevelCache"]

AGG_SCHEMA = "k0 long, k1 long, c long"
_COMPACT_ROWS = 1 << 20  # partial rows a task holds before adding equal keys
_DIRECT_TASKS = 16  # up to this many tasks per pass, the driver adds their partials (no shuffle stage)


def batch_db(column: Any, n_items: int) -> TransactionDB:
    """A list<int> Arrow column (one batch) as a CSR block, without copying the item ids."""
    offsets = np.asarray(column.offsets, dtype=np.int64)
    values = column.values.to_numpy(zero_copy_only=False)
    start, end = int(offsets[0]), int(offsets[-1])
    return TransactionDB(offsets - start, np.asarray(values[start:end], dtype=np.int32), n_items)


def list_column(lengths: np.ndarray, items: np.ndarray) -> Any:
    """Records (lengths, item ids) as an Arrow list<int32> column."""
    import pyarrow as pa

    offsets = np.zeros(lengths.size + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), pa.array(items.astype(np.int32), pa.int32()))


def _partial_batch(part: kernels.Partial) -> Any:
    import pyarrow as pa

    k0, k1, c = part
    return pa.RecordBatch.from_arrays([pa.array(k0, pa.int64()), pa.array(k1, pa.int64()), pa.array(c, pa.int64())],
                                      names=["k0", "k1", "c"])


def accumulate(blocks: Iterable[tuple[Any, ...]], kernel: Callable[..., kernels.Partial]) -> Iterator[Any]:
    """Run ``kernel(*args)`` on each block of a task and emit the task's summed partials (one Arrow batch)."""
    parts: list[kernels.Partial] = []
    held = 0
    for args in blocks:
        part = kernel(*args)
        parts.append(part)
        held += part[0].size
        if held > _COMPACT_ROWS:
            parts = [kernels.merge(parts)]
            held = parts[0][0].size
    merged = kernels.merge(parts)
    if merged[0].size:
        yield _partial_batch(merged)


def reduce_partials(partials: Any) -> kernels.Partial:
    """The partials of a pass (a DataFrame of ``AGG_SCHEMA``) summed by key, sorted. With few tasks the driver adds
    them itself (one stage, no shuffle: it holds at most _DIRECT_TASKS x the distinct keys); with more, Spark adds
    them (groupBy), so what reaches the driver does not grow with the number of tasks, hence with N."""
    from pyspark.sql import functions as F

    if partials.rdd.getNumPartitions() <= _DIRECT_TASKS:
        table = collect(partials)
        total = kernels.merge([])
        for batch in table.to_batches():  # a running sum: one task's partial at a time beside it
            total = kernels.merge([total, (batch.column(0).to_numpy().astype(np.int64),
                                           batch.column(1).to_numpy().astype(np.int64),
                                           batch.column(2).to_numpy().astype(np.int64))])
        del table
        return total
    table = collect(partials.groupBy("k0", "k1").agg(F.sum("c").alias("c")))
    k0 = table.column("k0").to_numpy().astype(np.int64)
    k1 = table.column("k1").to_numpy().astype(np.int64)
    c = table.column("c").to_numpy().astype(np.int64)
    order = np.lexsort((k1, k0))
    return k0[order], k1[order], c[order]


class LevelCache:
    """The cached DataFrame of the current level of a level-by-level pass (DiffPart's partitioner, DiffGen's
    splitter, RPS's regions); the caller releases the previous level's cache once the new one is in use."""

    df: Any
    _cached: Any = None

    def _persist_level(self, df: Any) -> Any:
        """Cache ``df`` as the current level; returns the previous level's cache (to unpersist later)."""
        old = self._cached
        self.df = df.persist()
        self._cached = self.df
        return old

    def close(self) -> None:
        if self._cached is not None:
            try:
                self._cached.unpersist()
            except Exception:
                pass
            self._cached = None
