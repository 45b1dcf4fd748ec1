"""The local engine: numpy over the in-memory CSR arrays (:class:`~dprelease.data.transactions.TransactionDB`)
and the encoded table. Every pass is the package's existing exact computation, block by block where it
was already (:mod:`dprelease.data.passes`)."""

from __future__ import annotations

import numpy as np

from ..data.transactions import TransactionDB
from . import kernels
from .base import LengthSummary, LevelOp, Partitioner, TableData, TableSplitter, TransactionData, ValueCounts

__all__ = ["LocalTransactions", "LocalPartitioner", "as_transaction_data", "read_parquet_transactions", "LocalTable",
           "LocalTableSplitter"]


class LocalTransactions(TransactionData):
    """A :class:`TransactionDB` behind the engine interface."""

    engine_name = "local"

    def __init__(self, db: TransactionDB):
        self.db = db
        self.n_items = int(db.n_items)
        self._summary: LengthSummary | None = None

    def summary(self) -> LengthSummary:
        if self._summary is None:
            self._summary = LengthSummary(self.db.n_records, int(self.db.offsets[-1]), max_length(self.db))
        return self._summary

    def item_supports(self) -> np.ndarray:
        return self.db.item_supports()

    def pair_supports(self, items: np.ndarray) -> np.ndarray:
        from ..data.passes import pair_supports

        return pair_supports(self.db, np.asarray(items, dtype=np.int64))

    def pair_counts(self, items: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        a, b, c = kernels.pair_counts(self.db, np.asarray(items, dtype=np.int64))
        return a, b, c

    def basis_bin_counts(self, bases: list[tuple[int, ...]]) -> list[np.ndarray]:
        from ..data.passes import basis_bin_counts

        return basis_bin_counts(self.db, bases)

    def itemset_supports(self, itemsets: list[tuple[int, ...]]) -> np.ndarray:
        from ..itemsets.exact import itemset_supports

        return itemset_supports(self.db, itemsets)

    def record_mask_counts(self) -> np.ndarray:
        return np.bincount(self.db.bitmasks(), minlength=1 << self.n_items)

    def partitioner(self) -> "LocalPartitioner":
        return LocalPartitioner(self.db)

    def run_pass(self, kernel, *extra) -> kernels.Partial:
        """The kernel block by block (views of the CSR arrays, ``PASS_ROWS`` records each): its temporaries are
        bounded by a block, and the integer partials add up to what Spark's tasks return."""
        total = kernels.merge([])
        for block in record_views(self.db, PASS_ROWS):
            total = kernels.merge([total, kernel(block, *extra)])  # one block's partial at a time beside the sum
        return total


PASS_ROWS = 1 << 16  # records per block of a local kernel pass (as a Spark Arrow batch)
LENGTH_ROWS = 1 << 20  # records per block of max_length (an int64 length each: 8 MB)


def max_length(db: TransactionDB) -> int:
    """The longest record's length (0 without records), block by block: no N-sized array of lengths."""
    longest = 0
    for lo in range(0, db.n_records, LENGTH_ROWS):
        longest = max(longest, int(np.diff(db.offsets[lo : min(db.n_records, lo + LENGTH_ROWS) + 1]).max()))
    return longest


def record_views(db: TransactionDB, rows: int):
    """Consecutive blocks of ``rows`` records as databases sharing ``db``'s item array (each counts toward the
    running step's progress bar: stderr, terminals only)."""
    from .. import progress

    for lo in range(0, db.n_records, rows):
        hi = min(db.n_records, lo + rows)
        yield db.view(lo, hi)
        progress.advance(hi - lo)


class LocalPartitioner(Partitioner):
    """Partitions as arrays of row ids (int32 when N < 2^31), reordered by child mask at each level."""

    def __init__(self, db: TransactionDB):
        self.db = db
        dtype = np.int32 if db.n_records < 2**31 else np.int64
        self._rows: dict[int, np.ndarray] = {0: np.flatnonzero(db.lengths > 0).astype(dtype)}
        self._split: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

    def level_counts(self, ops: list[LevelOp]) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        from ..setvalued.diffpart import child_masks_range, group_by_mask

        out: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._split = {}
        for op in ops:
            rows = self._rows.pop(op.pid, None)
            if rows is None or rows.size == 0:
                out[op.pid] = (np.zeros(0, np.int64), np.zeros(0, np.int64))
                continue
            nonempty, sizes, rows_sorted, bounds = group_by_mask(child_masks_range(self.db, rows, op.lo, op.hi,
                                                                                   op.span), rows)
            del rows
            self._split[op.pid] = (nonempty, rows_sorted, bounds)
            out[op.pid] = (nonempty.astype(np.int64), sizes.astype(np.int64))
        self._rows = {}  # every partition of the level was listed; any other is gone
        return out

    def route(self, moves: list[tuple[int, int, int]]) -> None:
        for parent, mask, child in moves:
            nonempty, rows_sorted, bounds = self._split[parent]
            j = int(np.searchsorted(nonempty, mask))
            self._rows[child] = rows_sorted[bounds[j] : bounds[j + 1]]
        self._split = {}

    def close(self) -> None:
        self._rows = {}
        self._split = {}


def as_transaction_data(db: TransactionDB | TransactionData) -> TransactionData:
    """``db`` behind the engine interface (a :class:`TransactionDB` runs on the local engine)."""
    if isinstance(db, TransactionData):
        return db
    if isinstance(db, TransactionDB):
        return LocalTransactions(db)
    raise TypeError(f"expected a TransactionDB or TransactionData, got {type(db).__name__}")


def read_parquet_transactions(path: str, universe) -> TransactionDB:
    """A Parquet file (or directory of them) with a list-of-items column, as CSR arrays (batch by batch)."""
    import pyarrow.dataset as ds

    from ..data.transactions import CSRBuilder
    from ..errors import InputError
    from .spark import ERROR_MARK, _map_labels, parquet_items_column

    try:
        dataset = ds.dataset(path, format="parquet")
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: cannot read as Parquet ({exc})") from None
    column = parquet_items_column(dataset.schema, str(path))
    builder = CSRBuilder()
    for batch in dataset.to_batches(columns=[column]):
        try:
            lengths, items = _map_labels(batch.column(0), universe, str(path))
        except ValueError as exc:
            raise InputError(str(exc).replace(ERROR_MARK, "")) from None
        builder.add(lengths, items)
    if builder.n_records == 0:
        raise InputError(f"{path}: no transactions")
    return builder.finish(universe.size)


class LocalTable(TableData):
    """An :class:`~dprelease.data.table.EncodedTable` behind the engine interface (DiffGen's engine path;
    ``diffgen`` given an EncodedTable itself uses its in-memory partition tree, the same counts)."""

    engine_name = "local"

    def __init__(self, table):
        self.table = table
        self.schema = table.schema

    @property
    def n_records(self) -> int:
        return self.table.n_records

    def splitter(self) -> "LocalTableSplitter":
        return LocalTableSplitter(self.table)


class LocalTableSplitter(TableSplitter):
    """Each record's partition id in one int64 array; every pass is the kernel over the whole table."""

    def __init__(self, table):
        self.table = table
        self.n_classes = table.schema.n_classes
        self.pid = np.zeros(table.n_records, dtype=np.int64)

    def _column(self, j: int) -> np.ndarray:
        return np.asarray(self.table.columns[j], dtype=np.float64)

    def value_counts(self, attrs: list[int]) -> dict[int, ValueCounts]:
        y = self.table.y
        parts = [kernels.value_class_counts(np.full(y.size, j, np.int64), self._column(j), y, self.n_classes)
                 for j in attrs]
        return kernels.decode_value_counts(kernels.merge(parts), self.n_classes)

    def split(self, leaves: np.ndarray, attr: int, m: int, child_of_leaf: np.ndarray | None,
              split: float | None, first: int) -> dict[int, ValueCounts]:
        col = self._column(attr)
        rows, k, new = kernels.table_children(self.pid, col, leaves, m, child_of_leaf, split, first)
        self.pid[rows] = new
        part = kernels.value_class_counts(k, col[rows], self.table.y[rows], self.n_classes)
        return kernels.decode_value_counts(part, self.n_classes)

    def leaf_class_counts(self, leaves: np.ndarray) -> np.ndarray:
        return _leaf_class_table(kernels.merge([(self.pid, self.table.y.astype(np.int64),
                                                 np.ones(self.pid.size, np.int64))]), leaves, self.n_classes)


def _leaf_class_table(part: kernels.Partial, leaves: np.ndarray, n_classes: int) -> np.ndarray:
    """(pid, class, count) rows as a len(leaves) x classes table (zeros for empty leaves)."""
    pid, cls, c = part
    leaves = np.asarray(leaves, dtype=np.int64)
    out = np.zeros((leaves.size, n_classes), dtype=np.int64)
    if pid.size == 0 or leaves.size == 0:
        return out
    order = np.argsort(leaves, kind="stable")
    at = np.minimum(np.searchsorted(leaves[order], pid), leaves.size - 1)
    hit = leaves[order][at] == pid
    np.add.at(out, (order[at[hit]], cls[hit]), c[hit])
    return out
