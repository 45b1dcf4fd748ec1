"""Set-valued data on Spark: a cached DataFrame with one ``items array<int>`` column of item ids (sorted, distinct
per record), and DiffPart's partitioner over it. Each pass is one job (:mod:`.passes`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from ...data.transactions import TransactionDB
from ...errors import ParameterError
from .. import kernels
from ..base import Kernel, LengthSummary, LevelOp, Partitioner, TransactionData
from .passes import AGG_SCHEMA, LevelCache, accumulate, batch_db, list_column, reduce_partials
from .session import session

__all__ = ["SparkTransactions", "SparkPartitioner", "lookup"]


class SparkTransactions(TransactionData):
    """Set-valued data as a Spark DataFrame with one ``items array<int>`` column (item ids)."""

    engine_name = "spark"

    def __init__(self, df: Any, n_items: int):
        self.df = df
        self.n_items = int(n_items)
        self._summary: LengthSummary | None = None
        self._supports: np.ndarray | None = None
        self._lengths: tuple[np.ndarray, np.ndarray] | None = None

    @classmethod
    def from_db(cls, db: TransactionDB, master: str | None = None, partitions: int = 2) -> "SparkTransactions":
        """A local database as a Spark DataFrame (tests and examples)."""
        import pyarrow as pa

        spark = session(master)
        lengths = db.lengths
        table = pa.table({"items": list_column(lengths[lengths > 0], db.items)})
        df = spark.createDataFrame(table).repartition(partitions)
        return cls(df.persist(), db.n_items)

    def run_pass(self, kernel: Kernel, *extra: Any) -> kernels.Partial:
        """One pass: ``kernel(block, *extra)`` on every block, partials summed by key."""
        n_items = self.n_items

        def task(batches: Iterator[Any]) -> Iterator[Any]:
            return accumulate(((batch_db(b.column(0), n_items), *extra) for b in batches), kernel)

        return reduce_partials(self.df.mapInArrow(task, AGG_SCHEMA))

    def length_histogram(self) -> tuple[np.ndarray, np.ndarray]:
        if self._lengths is None:
            lengths, _, counts = self.run_pass(kernels.length_histogram)
            self._lengths = (lengths, counts)
        return self._lengths[0].copy(), self._lengths[1].copy()

    def summary(self) -> LengthSummary:
        if self._summary is None:
            lengths, counts = self.length_histogram()
            self._summary = LengthSummary(int(counts.sum()), int((lengths * counts).sum()),
                                          int(lengths.max()) if lengths.size else 0)
        return self._summary

    def item_supports(self) -> np.ndarray:
        if self._supports is None:
            self._supports = kernels.dense(self.run_pass(kernels.item_supports), self.n_items)
        return self._supports.copy()

    def pair_supports(self, items: np.ndarray) -> np.ndarray:
        items = np.asarray(items, dtype=np.int64)
        return kernels.dense(self.run_pass(kernels.pair_supports, items), items.size * items.size).reshape(
            items.size, items.size)

    def pair_counts(self, items: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.run_pass(kernels.pair_counts, np.asarray(items, dtype=np.int64))

    def basis_bin_counts(self, bases: list[tuple[int, ...]]) -> list[np.ndarray]:
        if not bases:
            return []
        sizes = [1 << len(b) for b in bases]
        flat = kernels.dense(self.run_pass(kernels.basis_bins, [tuple(b) for b in bases]), sum(sizes))
        # records of a block without any basis item are counted in bin 0 by the kernel, so the sums are exact
        return np.split(flat, np.cumsum(sizes)[:-1])

    def itemset_supports(self, itemsets: list[tuple[int, ...]]) -> np.ndarray:
        if not itemsets:
            return np.zeros(0, dtype=np.int64)
        lengths = np.fromiter((len(s) for s in itemsets), dtype=np.int64, count=len(itemsets))
        flat = np.fromiter((i for s in itemsets for i in s), dtype=np.int64, count=int(lengths.sum()))
        return self.flat_supports(flat, lengths)

    def flat_supports(self, items: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        items, lengths = np.asarray(items, dtype=np.int64), np.asarray(lengths, dtype=np.int64)
        out = kernels.dense(self.run_pass(kernels.itemset_supports, items, lengths), lengths.size)
        if (lengths == 0).any():  # blocks hold only non-empty records: the empty set counts every one of them
            out[lengths == 0] = self.n_records
        return out

    def record_mask_counts(self) -> np.ndarray:
        if self.n_items > 30:
            raise ParameterError("record bitmasks need a universe of at most 30 items")
        return kernels.dense(self.run_pass(kernels.record_masks), 1 << self.n_items)

    def partitioner(self) -> "SparkPartitioner":
        return SparkPartitioner(self)

    def close(self) -> None:
        try:
            self.df.unpersist()
        except Exception:  # the session may be gone already
            pass


def lookup(parent: np.ndarray, mask: np.ndarray, pid: np.ndarray, masks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Index in the sorted (parent, mask) table of each (pid, masks) pair, and whether it is there."""
    parents = np.unique(parent)
    p_at = np.minimum(np.searchsorted(parents, pid), parents.size - 1)
    found = parents[p_at] == pid
    # wide enough for the records' masks too: a mask with a bit above the table's would spill into the parent's
    # rank and could match another parent's cell
    bits = max(int(mask.max()).bit_length(), int(masks.max()).bit_length() if masks.size else 0, 1)
    if parents.size < (1 << max(62 - bits, 0)):  # one int64 key (rank of the parent, mask)
        table_key = np.searchsorted(parents, parent).astype(np.int64) << bits | mask
        key = p_at.astype(np.int64) << bits | masks
        at = np.minimum(np.searchsorted(table_key, key), table_key.size - 1)
        return at, found & (table_key[at] == key)
    index = {(int(a), int(b)): j for j, (a, b) in enumerate(zip(parent.tolist(), mask.tolist()))}
    at = np.array([index.get((int(a), int(b)), -1) for a, b in zip(pid.tolist(), masks.tolist())], np.int64)
    return np.maximum(at, 0), at >= 0


OpTable = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]  # (pid, lo, hi, span) of a level's ops, by pid


class SparkPartitioner(LevelCache, Partitioner):
    """Records as (pid, items) rows, cached per level; a level's counts and its routing are one job each."""

    def __init__(self, data: SparkTransactions):
        from pyspark.sql import functions as F

        self.data = data
        self.df = data.df.select(F.lit(0).cast("long").alias("pid"), "items")
        self._ops: OpTable | None = None
        self._cached = None

    def level_counts(self, ops: list[LevelOp]) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        ops = sorted(ops, key=lambda op: op.pid)
        table: OpTable = (np.array([o.pid for o in ops], np.int64), np.array([o.lo for o in ops], np.int64),
                          np.array([o.hi for o in ops], np.int64), np.array([o.span for o in ops], np.int64))
        self._ops = table
        n_items = self.data.n_items

        def kernel(db: TransactionDB, pids: np.ndarray) -> kernels.Partial:
            rows, pid, masks = kernels.level_masks(db, pids, *table)
            return pid, masks, np.ones(rows.size, np.int64)

        def task(batches: Iterator[Any]) -> Iterator[Any]:
            return accumulate(((batch_db(b.column(1), n_items), b.column(0).to_numpy()) for b in batches), kernel)

        pid, mask, count = reduce_partials(self.df.mapInArrow(task, AGG_SCHEMA))
        out = {op.pid: (np.zeros(0, np.int64), np.zeros(0, np.int64)) for op in ops}
        if pid.size:
            bounds = np.flatnonzero(np.r_[True, pid[1:] != pid[:-1], True])
            for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
                out[int(pid[a])] = (mask[a:b], count[a:b])
        return out

    def route(self, moves: list[tuple[int, int, int]]) -> None:
        import pyarrow as pa

        if self._ops is None:
            raise RuntimeError("route() before level_counts()")
        table = self._ops
        moves = sorted(moves)
        parent = np.array([m[0] for m in moves], np.int64)
        mask = np.array([m[1] for m in moves], np.int64)
        child = np.array([m[2] for m in moves], np.int64)
        n_items = self.data.n_items

        def task(batches: Iterator[Any]) -> Iterator[Any]:
            for b in batches:
                db = batch_db(b.column(1), n_items)
                pids = b.column(0).to_numpy()
                listed = np.isin(pids, table[0])
                if not listed.all():  # partitions not counted this time keep their records as they are
                    yield b.filter(pa.array(~listed))
                rows, pid, masks = kernels.level_masks(db, pids, *table)
                if parent.size == 0 or rows.size == 0:
                    continue
                at, found = lookup(parent, mask, pid, masks)
                keep = rows[found]
                if keep.size == 0:
                    continue
                sub = db.subset(keep)
                yield pa.RecordBatch.from_arrays(
                    [pa.array(child[at[found]], pa.int64()), list_column(sub.lengths, sub.items)],
                    names=["pid", "items"])

        old = self._persist_level(self.df.mapInArrow(task, "pid long, items array<int>"))
        self._ops = None
        if old is not None:
            old.unpersist()
