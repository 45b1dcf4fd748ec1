"""The local engine: numpy over the in-memory CSR arrays (:class:`~dprelease.data.transactions.TransactionDB`)
and the encoded table (:class:`~dprelease.data.table.EncodedTable`). Every pass is the package's exact
computation, block by block where the temporaries would otherwise grow with the data
(:mod:`dprelease.data.passes`, :mod:`dprelease.engine.kernels`)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, overload

import numpy as np

from ..data.table import EncodedTable
from ..data.transactions import TransactionDB, spans
from . import kernels
from .base import (
    BoxDomain, Candidates, GroupCounts, Kernel, LengthSummary, LevelOp, Partitioner, RegionRecords, TableData,
    TableSplitter, TransactionData, ValueCounts,
)
from .supports import and_supports, bit_columns, itemset_supports, pair_matrix, project

__all__ = ["LocalTransactions", "LocalPartitioner", "LocalCandidates", "as_transaction_data", "unwrap", "LocalTable",
           "LocalTableSplitter", "LocalRegions", "record_views", "max_length", "PASS_ROWS", "LENGTH_ROWS"]

ENUMERATION_PER_WORD = 1  # level 2: enumerate the pairs while they are at most as many as the AND-ed words
MERGE_BLOCKS = 8  # block partials held before they are added to the running sum (exact integer sums)
PASS_ROWS = 1 << 16  # records per block of a local kernel pass (as a Spark Arrow batch)
LENGTH_ROWS = 1 << 20  # records per block of max_length (an int64 length each: 8 MB)
FOCUS_SHARE = 0.6  # LocalTransactions.focused: the largest share of the occurrences worth a projection

_NO_MASKS = np.zeros(0, dtype=np.int64)


class LocalTransactions(TransactionData):
    """A :class:`TransactionDB` behind the engine interface."""

    engine_name = "local"

    def __init__(self, db: TransactionDB):
        self.db = db
        self.n_items = int(db.n_items)
        self._summary: LengthSummary | None = None
        self._item_supports: np.ndarray | None = None
        # the last projection onto a set of items, per block: PrivBasis asks for the records' m and then for the
        # pair sums over the same items, and the records do not change
        self._projection: tuple[bytes, list[tuple[np.ndarray, np.ndarray]]] | None = None
        # inside :meth:`focused`: (the focused items, sorted; the records holding one of them, projected onto them)
        self._focus: tuple[np.ndarray, TransactionDB] | None = None
        self._focusing = False  # inside a focused() block (its projection may have been replaced already)

    def summary(self) -> LengthSummary:
        if self._summary is None:
            self._summary = LengthSummary(self.db.n_records, int(self.db.offsets[-1]), max_length(self.db))
        return self._summary

    @property
    def n_records(self) -> int:
        return int(self.db.n_records)

    def item_supports(self) -> np.ndarray:
        if self._item_supports is None:  # the records do not change: one count serves every caller
            self._item_supports = self.db.item_supports()
        return self._item_supports.copy()

    @contextmanager
    def focused(self, items: np.ndarray) -> Iterator[None]:
        """The records holding one of ``items``, projected onto them once (one pass over every occurrence); inside
        the block, a pass over a subset of ``items`` (candidates, projections, basis bins) reads that projection,
        a fraction of the data, instead of the whole. Not kept when the items hold more than ``FOCUS_SHARE`` of
        the occurrences: the projection would cost about what it saves. The passes' results are unchanged: a
        record without any of the items adds nothing to them but its count, which comes from the whole data."""
        items = np.unique(np.asarray(items, dtype=np.int64))
        held = int(self.item_supports()[items].sum()) if items.size else 0
        if 0 < held <= FOCUS_SHARE * int(self.db.offsets[-1]):
            self._focus = (items, project(self.db, items, 1))
        self._focusing = True
        try:
            yield
        finally:
            self._focus = None
            self._projection = None
            self._focusing = False

    def _source(self, items: np.ndarray) -> tuple[TransactionDB, np.ndarray]:
        """Where a pass over ``items`` (sorted) reads its records: the focused projection with the items' ids
        there when it holds all of them (the ids keep the items' order), else the whole data with the items."""
        if self._focus is not None:
            focus, projected = self._focus
            at = _positions(focus, items)
            if at is not None:
                return projected, at
        return self.db, items

    def _projected_blocks(self, items: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per block of ``PASS_ROWS`` records, its :func:`~dprelease.engine.kernels.projection` onto ``items``
        (sorted), kept for the next call with the same items. Records outside the focus hold none of them.

        Built from the focus, it replaces the focus: the passes inside a focus narrow as an algorithm goes
        (PrivBasis: the top-k's base items, then F, whose projection serves its pair sums, lengths and basis
        bins), and holding both doubled the memory of PrivBasis's last steps (10M kosarak-like records: about
        210 MB of focus beside 255 MB of projection). A later pass over items outside ``items`` reads the whole
        data: the same results (a cache only), more time."""
        key = items.tobytes()
        if self._projection is None or self._projection[0] != key:
            db, ids = self._source(items)
            self._projection = (key, [kernels.projection(block, ids) for block in record_views(db, PASS_ROWS)])
            if db is not self.db:
                self._focus = None
        return self._projection[1]

    def bounded_item_sums(self, ell: int) -> np.ndarray:
        """Only the long records (|t| > ell) are passed over: each block's dense digit table is added into one,
        and the records of weight 1 come from the item supports (one count each, digit 3 = 2^21). Exact
        integers throughout: the same totals, and floats, as the keyed partials :meth:`run_pass` would merge."""
        ell = int(ell)
        lengths = self.db.lengths
        long_rec = lengths > ell
        supports = self.item_supports()
        table = np.zeros((self.n_items, 4), dtype=np.int64)
        rows = np.flatnonzero(long_rec)
        for lo in range(0, rows.size, PASS_ROWS):
            # a block of long records' entries (a gather index over them only, not a flag per entry of every
            # record; a block at a time, so the index is bounded by the block, as a pass's temporaries are)
            block_rows = rows[lo : lo + PASS_ROWS]
            offsets = np.zeros(block_rows.size + 1, dtype=np.int64)
            np.cumsum(lengths[block_rows], out=offsets[1:])
            block = TransactionDB(offsets, self.db.items[spans(self.db.offsets[block_rows] - self.db.offsets[0],
                                                               lengths[block_rows])], self.n_items)
            table += kernels.bounded_item_digit_table(block, ell)
            supports -= np.bincount(block.items, minlength=self.n_items)
        table[:, 3] += supports << kernels.UNIT_SHIFT
        out = np.zeros(self.n_items, dtype=np.float64)
        held = np.flatnonzero(table.any(axis=1))
        out[held] = kernels.nearest_floats(table[held])
        return out

    def _merged(self, parts: Iterator[kernels.Partial]) -> kernels.Partial:
        """Block partials added up as :meth:`run_pass` adds them."""
        total = kernels.merge([])
        pending: list[kernels.Partial] = []
        for part in parts:
            pending.append(part)
            if len(pending) == MERGE_BLOCKS:
                total = kernels.merge([total, *pending])
                pending = []
        return kernels.merge([total, *pending])

    def projected_length_histogram(self, items: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        blocks = self._projected_blocks(np.sort(np.asarray(items, np.int64)))
        m, _, counts = self._merged(kernels.projected_length_histogram_of(bm) for _, bm in blocks)
        return m, counts

    def bounded_pair_sums(self, items: np.ndarray, ell: int) -> np.ndarray:
        items = np.asarray(items, dtype=np.int64)
        n_pairs = items.size * (items.size - 1) // 2
        if self.db.n_records == 0 or items.size < 2:
            return np.zeros(n_pairs, dtype=np.float64)
        blocks = self._projected_blocks(items)
        part = self._merged(kernels.bounded_pair_digits_of(cols, bm, items.size, int(ell)) for cols, bm in blocks)
        if not self._focusing:  # inside a focus, the basis bins may still read it; else its memory is freed
            self._projection = None
        return kernels.exact_sums(part, n_pairs)

    def _bins_from_projection(self, bases: list[tuple[int, ...]], union: np.ndarray) -> list[np.ndarray] | None:
        """The basis bins from the kept projection (PrivBasis's F, whose items hold every basis) when it holds
        ``union``: its blocks are the records reduced to F's positions (a fraction of the data), and the
        records holding none of F fall in bin 0."""
        from ..data.passes import MAX_MASK_GROUPS, bins_by_masks, mask_groups

        if self._projection is None:
            return None
        items = np.frombuffer(self._projection[0], dtype=np.int64)
        if _positions(items, union) is None:
            return None
        local = [np.searchsorted(items, np.asarray(b, dtype=np.int64)) for b in bases]
        groups = mask_groups(local)
        if len(groups) > MAX_MASK_GROUPS:
            return None
        blocks = self._projection[1]
        return bins_by_masks(lambda: iter(blocks), int(items.size), local, groups, self.db.n_records)

    def pair_supports(self, items: np.ndarray) -> np.ndarray:
        from ..data.passes import pair_supports

        return pair_supports(self.db, np.asarray(items, dtype=np.int64))

    def pair_counts(self, items: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        a, b, c = kernels.pair_counts(self.db, np.asarray(items, dtype=np.int64))
        return a, b, c

    def basis_bin_counts(self, bases: list[tuple[int, ...]]) -> list[np.ndarray]:
        from ..data.passes import basis_bin_counts

        if bases:
            union = np.unique(np.concatenate([np.asarray(b, dtype=np.int64) for b in bases]))
            held = self._bins_from_projection(bases, union)
            if held is not None:
                return held
            db, ids = self._source(union)
            if db is not self.db:  # the ids keep the order of the items, so each basis's bits are unchanged
                local = [tuple(ids[np.searchsorted(union, b)].tolist()) for b in bases]
                return basis_bin_counts(db, local, n_records=self.db.n_records)
        return basis_bin_counts(self.db, bases)

    def itemset_supports(self, itemsets: list[tuple[int, ...]]) -> np.ndarray:
        return itemset_supports(self.db, itemsets)

    def record_mask_counts(self) -> np.ndarray:
        return np.bincount(self.db.bitmasks(), minlength=1 << self.n_items)

    def partitioner(self) -> "LocalPartitioner":
        return LocalPartitioner(self.db)

    def candidates(self, base_items: np.ndarray) -> "LocalCandidates":
        base_items = np.asarray(base_items, dtype=np.int64)
        return LocalCandidates(self.db, base_items, self._source(base_items))

    def run_pass(self, kernel: Kernel, *extra: Any) -> kernels.Partial:
        """The kernel block by block (views of the CSR arrays, ``PASS_ROWS`` records each): its temporaries are
        bounded by a block, and the integer partials add up to what Spark's tasks return (a few blocks' partials
        are held beside the sum: one sort per batch)."""
        return self._merged(kernel(block, *extra) for block in record_views(self.db, PASS_ROWS))


def _positions(held: np.ndarray, items: np.ndarray) -> np.ndarray | None:
    """The positions of ``items`` in ``held`` (both sorted), or None when ``held`` lacks one of them (or either
    is empty)."""
    if held.size == 0 or items.size == 0:
        return None
    at = np.minimum(np.searchsorted(held, items), held.size - 1)
    return at if np.array_equal(held[at], items) else None


def max_length(db: TransactionDB) -> int:
    """The longest record's length (0 without records), block by block: no N-sized array of lengths."""
    longest = 0
    for lo in range(0, db.n_records, LENGTH_ROWS):
        longest = max(longest, int(np.diff(db.offsets[lo : min(db.n_records, lo + LENGTH_ROWS) + 1]).max()))
    return longest


def record_views(db: TransactionDB, rows: int) -> Iterator[TransactionDB]:
    """Consecutive blocks of ``rows`` records as databases sharing ``db``'s item array (each counts toward the
    running step's progress bar: stderr, terminals only)."""
    from .. import progress

    for lo in range(0, db.n_records, rows):
        hi = min(db.n_records, lo + rows)
        yield db.view(lo, hi)
        progress.advance(hi - lo)


class LocalPartitioner(Partitioner):
    """Partitions as arrays of row ids (int32 when N < 2^31), reordered by child mask when they are counted."""

    def __init__(self, db: TransactionDB):
        self.db = db
        dtype = np.int32 if db.n_records < 2**31 else np.int64
        self._rows: dict[int, np.ndarray] = {0: np.flatnonzero(db.lengths > 0).astype(dtype)}
        self._split: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

    def level_counts(self, ops: list[LevelOp]) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        out: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._split = {}
        for op in ops:
            rows = self._rows.pop(op.pid, None)
            if rows is None or rows.size == 0:
                out[op.pid] = (_NO_MASKS, _NO_MASKS)
                continue
            masks = kernels.child_masks_range(self.db, rows, op.lo, op.hi, op.span)
            if op.leaf:  # leaf partitions are not partitioned again: their records are not needed
                nonempty, sizes, _, _ = kernels.group_by_mask(masks)
            else:
                nonempty, sizes, rows_sorted, bounds = kernels.group_by_mask(masks, rows)
                assert rows_sorted is not None
                self._split[op.pid] = (nonempty, rows_sorted, bounds)
            del rows, masks
            out[op.pid] = (nonempty.astype(np.int64, copy=False), sizes.astype(np.int64, copy=False))
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


class LocalCandidates(Candidates):
    """A level's candidates counted in memory over the records holding two base items or more, reduced to the
    base items (:func:`~dprelease.engine.supports.project`; no other record holds a candidate), built once.
    Level 2 (pairs of base items) by enumerating the pairs that occur
    (:func:`~dprelease.engine.supports.pair_matrix`: work grows with them, not with candidates x records)
    where that is the cheaper (sparse records); otherwise, and at later levels, by AND-ing packed bit columns:
    one per base item, and one per generator (the AND of its items' columns), kept from level to level,
    built only when needed."""

    def __init__(self, db: TransactionDB, base_items: np.ndarray,
                 source: tuple[TransactionDB, np.ndarray] | None = None):
        self.db = db
        self.base_items = np.asarray(base_items, dtype=np.int64)
        # where the records are projected from: (records, the base items' ids there, in the same order)
        self._source = source if source is not None else (db, self.base_items)
        self._projected: TransactionDB | None = None
        self._columns: np.ndarray | None = None
        self._generators: np.ndarray | None = None
        self._advances: list[np.ndarray] = []  # generator steps not applied to the bit columns yet
        self._have = np.zeros(0, dtype=bool)  # which base items' columns are built

    def _records(self) -> TransactionDB:
        if self._projected is None:
            records, ids = self._source
            self._projected = project(records, ids, 2)
        return self._projected

    def _built(self, pairs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The base items' bit columns and the generators' for counting ``pairs``. A column is built when first
        needed: by a generator (its items) or a candidate (its added item). Every item of a later level's
        generator or candidate is one of these, so the other base items' columns are never built."""
        if self._columns is None or self._generators is None:
            projected = self._records()
            first = self._advances[0][:, 0] if self._advances else pairs[:, 0]  # rows of single-item generators
            self._columns = np.zeros((projected.n_items, -(-projected.n_records // 64)), dtype=np.uint64)
            self._have = np.zeros(projected.n_items, dtype=bool)
            self._generators = self._columns
        else:
            first = pairs[:0, 0]
        # one pass over the records for every column this level needs
        self._add_columns(np.concatenate([first, *[step[:, 1] for step in [*self._advances, pairs]]]))
        columns, gen_bits = self._columns, self._generators
        for pairs in self._advances:
            nxt = np.empty((pairs.shape[0], columns.shape[1]), dtype=np.uint64)  # row by row: no second temporary
            for r, (g, c) in enumerate(pairs.tolist()):
                np.bitwise_and(gen_bits[g], columns[c], out=nxt[r])
            gen_bits = nxt
        self._advances = []
        self._generators = gen_bits
        return columns, gen_bits

    def supports(self, generators: list[tuple[int, ...]], pairs: np.ndarray) -> np.ndarray:
        if self._generators is None and not self._advances and generators and len(generators[0]) == 1:
            projected = self._records()
            m = projected.lengths
            occurring = int((m * (m - 1) // 2).sum())  # pairs that occur in the records: enumeration's work
            and_words = pairs.shape[0] * -(-projected.n_records // 64)  # the bit columns' work
            if occurring <= ENUMERATION_PER_WORD * and_words:  # sparse records (dense ones: the columns)
                row = np.searchsorted(self.base_items, np.asarray([g[0] for g in generators], dtype=np.int64))
                matrix = pair_matrix(projected)
                out: np.ndarray = matrix[row[pairs[:, 0]], pairs[:, 1]].astype(np.int64)
                return out
        columns, gen_bits = self._built(pairs)
        return and_supports(gen_bits, columns, pairs)

    def _add_columns(self, rows: np.ndarray) -> None:
        """Build the bit columns of the base items at ``rows`` not built yet."""
        assert self._columns is not None
        missing = np.unique(rows)
        missing = missing[~self._have[missing]]
        if missing.size:
            self._columns[missing], _ = bit_columns(self._records(), missing)
            self._have[missing] = True

    def advance(self, pairs: np.ndarray) -> None:
        self._advances.append(np.asarray(pairs, dtype=np.int64).reshape(-1, 2))


def as_transaction_data(db: TransactionDB | TransactionData) -> TransactionData:
    """``db`` behind the engine interface (a :class:`TransactionDB` runs on the local engine)."""
    if isinstance(db, TransactionData):
        return db
    if isinstance(db, TransactionDB):
        return LocalTransactions(db)
    raise TypeError(f"expected a TransactionDB or TransactionData, got {type(db).__name__}")


@overload
def unwrap(data: TransactionDB | TransactionData) -> TransactionDB | TransactionData: ...


@overload
def unwrap(data: EncodedTable | TableData) -> EncodedTable | TableData: ...


def unwrap(data: Any) -> Any:
    """The in-memory object behind ``data`` when it runs on the local engine (its :class:`TransactionDB` or
    :class:`EncodedTable`), so that an algorithm can take its in-memory path; else ``data`` (another engine,
    whose passes are asked of the engine)."""
    if isinstance(data, LocalTransactions):
        return data.db
    if isinstance(data, LocalTable):
        return data.table
    return data


class LocalTable(TableData):
    """An :class:`~dprelease.data.table.EncodedTable` behind the engine interface (DiffGen's engine path;
    ``diffgen`` given an EncodedTable itself uses its in-memory partition tree, the same counts)."""

    engine_name = "local"

    def __init__(self, table: EncodedTable):
        self.table = table
        self.schema = table.schema

    @property
    def n_records(self) -> int:
        return self.table.n_records

    def splitter(self) -> "LocalTableSplitter":
        return LocalTableSplitter(self.table)

    def regions(self, domain: BoxDomain) -> "LocalRegions":
        return LocalRegions([self.table.y, *self.table.columns], domain)


class LocalTableSplitter(TableSplitter):
    """Each record's partition id in one int64 array; every pass is the kernel over the whole table."""

    def __init__(self, table: EncodedTable):
        self.table = table
        self.n_classes = int(table.schema.n_classes)
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
        return leaf_class_table(kernels.merge([(self.pid, self.table.y.astype(np.int64),
                                                np.ones(self.pid.size, np.int64))]), leaves, self.n_classes)


def leaf_class_table(part: kernels.Partial, leaves: np.ndarray, n_classes: int) -> np.ndarray:
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


class LocalRegions(RegionRecords):
    """RPS's records as in-memory columns: per level, one gather of the split values, one grouped count (a
    bincount when the keys are dense, else one sort of int64 keys) and one routing pass.

    ``columns[j]`` holds every record's value in dimension j. Lattice dimensions are held as int32 offsets from
    the domain's lower end (one conversion at the start)."""

    def __init__(self, columns: Sequence[np.ndarray], domain: BoxDomain):
        self.domain = domain
        self.columns: list[np.ndarray] = []
        for j, c in enumerate(columns):
            c = np.asarray(c)
            if domain.integer[j] and domain.hi[j] - domain.lo[j] < 2**31:
                self.columns.append((c - domain.lo[j]).astype(np.int32))
            else:
                self.columns.append(c.astype(np.float64, copy=False) - (domain.lo[j] if domain.integer[j] else 0.0))
        n = int(self.columns[0].size) if self.columns else 0
        self.rec = np.arange(n, dtype=np.int64)
        self.reg = np.zeros(n, dtype=np.int32)
        self._cache: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None  # (region_dim, record dims, values)

    def sizes(self, n_regions: int) -> np.ndarray:
        return np.bincount(self.reg, minlength=n_regions).astype(np.int64)

    def _offset(self, j: int) -> float:
        return float(self.domain.lo[j]) if self.domain.integer[j] else 0.0

    def _level(self, region_dim: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per active record: the dimension its region splits (-1: none) and its value there (offset for lattices)."""
        if self._cache is not None and self._cache[0] is region_dim:
            return self._cache[1], self._cache[2]
        dims = region_dim[self.reg]
        present = np.unique(region_dim[region_dim >= 0]).tolist()
        if len(present) == 1 and bool((dims == present[0]).all()):
            col = self.columns[present[0]]
            values = col if self.rec.size == col.size else col[self.rec]
        else:
            wide = any(self.columns[j].dtype != np.int32 for j in present)
            values = np.zeros(self.rec.size, dtype=np.float64 if wide else np.int32)
            for j in present:
                m = dims == j
                values[m] = self.columns[j][self.rec[m]]
        self._cache = (region_dim, dims, values)
        return dims, values

    def value_counts(self, region_dim: np.ndarray) -> GroupCounts:
        dims, values = self._level(region_dim)
        present = np.unique(region_dim[region_dim >= 0]).tolist()
        parts = []
        for j in present:
            m = dims == j
            everyone = bool(m.all())
            reg = self.reg if everyone else self.reg[m]
            v = values if everyone else values[m]
            lattice = self.columns[j].dtype == np.int32
            span = float(self.domain.hi[j] - self.domain.lo[j]) if self.domain.integer[j] else 0.0
            r, val, cnt = _group(reg, v, span, lattice, region_dim.size)
            parts.append((r, val + self._offset(j), cnt))
        if not parts:
            empty = np.zeros(0, dtype=np.int64)
            return GroupCounts(empty, np.zeros(0), empty)
        region = np.concatenate([p[0] for p in parts])
        value = np.concatenate([p[1] for p in parts])
        count = np.concatenate([p[2] for p in parts])
        if len(parts) > 1:
            order = np.lexsort((value, region))
            region, value, count = region[order], value[order], count[order]
        return GroupCounts(region, value, count)

    def route(self, region_dim: np.ndarray, pivots: np.ndarray, child_base: np.ndarray) -> None:
        dims, values = self._level(region_dim)
        # pivots in the engine's units: lattice values are offsets from the domain's lower end
        d = np.maximum(region_dim, 0)
        local = pivots - np.where(region_dim >= 0, self.domain.lo[d] * self.domain.integer[d], 0.0)
        local = local.astype(np.int32) if values.dtype == np.int32 else local
        base = child_base.astype(np.int32)[self.reg]
        keep = None if (child_base >= 0).all() else base >= 0
        new_reg = base + (values >= local[self.reg])
        if keep is None:
            self.reg = new_reg.astype(np.int32, copy=False)
        else:
            self.rec, self.reg = self.rec[keep], new_reg[keep].astype(np.int32, copy=False)
        self._cache = None


def _group(reg: np.ndarray, v: np.ndarray, span: float, lattice: bool, n_regions: int
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct (region, value) pairs with counts, sorted; lattice keys by bincount or one int64 sort.

    ``v`` holds lattice offsets in [0, span) (int32) or real values."""
    if reg.size == 0:
        e = np.zeros(0, dtype=np.int64)
        return e, np.zeros(0), e
    if lattice:
        width = int(span)
        key = reg.astype(np.int64) * width + v.astype(np.int64, copy=False)
        n_keys = n_regions * width
        if n_keys <= max(4 * reg.size, 1 << 20):
            counts = np.bincount(key, minlength=n_keys)
            uniq = np.flatnonzero(counts)
            cnt = counts[uniq]
        else:
            key = np.sort(key)
            first = np.ones(key.size, dtype=bool)
            first[1:] = key[1:] != key[:-1]
            starts = np.flatnonzero(first)
            uniq = key[starts]
            cnt = np.diff(np.append(starts, key.size))
        return uniq // width, (uniq % width).astype(np.float64), cnt.astype(np.int64)
    order = np.lexsort((v, reg))
    r, vv = reg[order], v[order]
    first = np.ones(r.size, dtype=bool)
    first[1:] = (r[1:] != r[:-1]) | (vv[1:] != vv[:-1])
    starts = np.flatnonzero(first)
    return r[starts].astype(np.int64), vv[starts].astype(np.float64), np.diff(np.append(starts, r.size)).astype(np.int64)
