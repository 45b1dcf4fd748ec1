"""The partition tree and Link index of DiffGen section 4.3 (shared with TDS).

* A *cut value* is a taxonomy node (categorical) or an interval ``[lo, hi)`` (numeric);
  ``∪Cut_i`` holds one cut value per root-to-leaf path of every attribute.
* The *partition tree* (Figure 2): every leaf partition is one generalized record
  (a cut value per attribute) and holds its records. Records live in one
  permutation array ``rec``; every partition owns a contiguous slice of it and its
  children own sub-slices, so refining a leaf only reorders that leaf's slice.
* ``link[v]``: the leaf partitions whose generalized record contains ``v`` (Link_v).

:meth:`PartitionTree.specialize` refines the leaves on Link_v in one vectorised
scan of D_v (the only scan of records per specialization) and hands back the
records of each child value, from which the caller collects the counts that
score the new candidates (section 4.3, "Perform Specialization", "Update Score").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..data.table import EncodedTable, TableSchema

__all__ = ["CutValue", "PartitionTree", "SplitIntervals", "split_intervals", "split_intervals_from_counts",
           "generalize", "cut_label", "ordered_cut"]


@dataclass(frozen=True, slots=True)
class CutValue:
    """A value of ∪Cut: attribute index; taxonomy node (categorical, else -1); covered range ``[lo, hi)``.

    For a categorical value ``lo, hi`` are the leaf codes it covers; for a numeric one, the interval.
    """

    attr: int
    node: int
    lo: float
    hi: float


def cut_label(schema: TableSchema, value: CutValue) -> str:
    """Human-readable label: the taxonomy node's name, or ``[lo, hi)`` for an interval (a comma, not a
    hyphen, separates the bounds: ``[-10000, -998)`` cannot be misread, ``[-10000--998)`` could)."""
    a = schema.attributes[value.attr]
    if a.kind == "categorical":
        return a.taxonomy.labels[value.node]
    fmt = (lambda x: str(int(x))) if a.integer else (lambda x: f"{x:.6g}")
    return f"[{fmt(value.lo)}, {fmt(value.hi)})"


@dataclass(frozen=True, eq=False)
class SplitIntervals:
    """Split points of a numeric value grouped into intervals of equal score (eq. 6).

    Split ``s`` sends ``x < s`` left. Integer attributes: ``s`` in ``low[g] .. high[g]`` (whole numbers),
    ``measure`` = how many; otherwise ``s`` in ``(low[g], high[g])`` and ``measure`` = its length.
    ``left[g]`` holds the class counts left of any split of group g; ``total`` those of D_v.
    """

    low: np.ndarray
    high: np.ndarray
    measure: np.ndarray
    left: np.ndarray
    total: np.ndarray
    integer: bool


def split_intervals(values: np.ndarray, y: np.ndarray, n_classes: int, lo: float, hi: float,
                    integer: bool) -> SplitIntervals:
    """Group every split point of ``[lo, hi)`` by the records it sends left (section 4.3: one sort of D_v).

    Integer attributes with a modest range use a counting pass instead of the sort.
    """
    n = values.size
    span = hi - lo
    if integer and n and span * n_classes <= max(1 << 22, 8 * n):
        dense = np.bincount((values - lo).astype(np.int64) * n_classes + y,
                            minlength=int(span) * n_classes).reshape(int(span), n_classes)
        present = np.flatnonzero(dense.any(axis=1))
        u = lo + present.astype(np.float64)
        per_value = dense[present]
        cum_u = np.cumsum(per_value, axis=0)
        total = cum_u[-1].copy()
        left = np.concatenate([np.zeros((1, n_classes), dtype=np.int64), cum_u], axis=0)  # left of u[g]
    else:
        order = np.argsort(values, kind="stable")
        v = values[order]
        yy = y[order]
        cum = np.zeros((n + 1, n_classes), dtype=np.int64)
        for c in range(n_classes):
            np.cumsum(yy == c, out=cum[1:, c])
        if n:
            u, first = np.unique(v, return_index=True)
        else:
            u, first = np.zeros(0), np.zeros(0, dtype=np.int64)
        left = cum[np.concatenate([first, [n]]).astype(np.int64)]
        total = cum[n].copy()
    return _intervals(u, left, total, lo, hi, integer)


def split_intervals_from_counts(u: np.ndarray, per_value: np.ndarray, lo: float, hi: float,
                                integer: bool) -> SplitIntervals:
    """:func:`split_intervals` from the class counts of each distinct value (``u`` ascending, ``per_value``
    n_u x classes): what an engine's grouped count returns. The same intervals, bit for bit."""
    per_value = np.asarray(per_value, dtype=np.int64)
    left = np.zeros((u.size + 1, per_value.shape[1]), dtype=np.int64)
    np.cumsum(per_value, axis=0, out=left[1:])
    return _intervals(np.asarray(u, dtype=np.float64), left, left[-1].copy(), lo, hi, integer)


def _intervals(u: np.ndarray, left: np.ndarray, total: np.ndarray, lo: float, hi: float,
               integer: bool) -> SplitIntervals:
    """The equal-score intervals between the distinct values ``u``; ``left[g]``: class counts below ``u[g]``."""
    a = np.concatenate([[lo], u])  # split s in (a[g], b[g]] sends exactly the values < u[g] left
    b = np.concatenate([u, [hi]])
    if integer:
        low = a + 1
        high = np.concatenate([u, [hi - 1]])
        measure = np.maximum(0.0, high - low + 1)
    else:
        low, high = a, b
        measure = np.maximum(0.0, b - a)
    keep = measure > 0
    return SplitIntervals(low[keep], high[keep], measure[keep], left[keep], total, integer)


class PartitionTree:
    """Leaf partitions over a slice-owning record permutation, with Link_v (section 4.3, Figure 2)."""

    _holds_records = True

    def __init__(self, table: EncodedTable):
        self.table = table
        self.schema = table.schema
        d = len(self.schema.attributes)
        n = table.n_records
        # the record permutation (an engine's tree keeps the records with the engine: see engine_tree.py)
        self.rec = np.arange(n, dtype=np.int64) if self._holds_records else np.zeros(0, dtype=np.int64)
        self.values: list[CutValue] = []
        self.cut: list[list[int]] = [[] for _ in range(d)]  # active cut value ids per attribute
        root_gen = []
        for j, a in enumerate(self.schema.attributes):
            if a.kind == "categorical":
                cv = CutValue(j, 0, float(a.taxonomy.lo[0]), float(a.taxonomy.hi[0]))
            else:
                cv = CutValue(j, -1, a.lo, a.hi)
            root_gen.append(self._add_value(cv))
        self.start = np.zeros(1, dtype=np.int64)
        self.end = np.full(1, n, dtype=np.int64)
        self.parent = np.full(1, -1, dtype=np.int64)
        self.gen = np.asarray([root_gen], dtype=np.int64)  # generalized record of every partition
        self.is_leaf = np.ones(1, dtype=bool)
        self.link: dict[int, np.ndarray] = {v: np.zeros(1, dtype=np.int64) for v in root_gen}

    def _add_value(self, cv: CutValue) -> int:
        self.values.append(cv)
        vid = len(self.values) - 1
        self.cut[cv.attr].append(vid)
        return vid

    # -- queries -------------------------------------------------------------------------------
    @property
    def n_partitions(self) -> int:
        return int(self.start.size)

    def leaves(self) -> np.ndarray:
        return np.flatnonzero(self.is_leaf)

    def cut_values(self) -> list[int]:
        return [v for vs in self.cut for v in vs]

    def positions(self, parts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Positions in ``rec`` of the given partitions' records (concatenated), and each one's partition rank."""
        lengths = self.end[parts] - self.start[parts]
        total = int(lengths.sum())
        if total == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        rank = np.repeat(np.arange(parts.size, dtype=np.int64), lengths)
        offsets = np.repeat(self.start[parts] - np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths)
        return np.arange(total, dtype=np.int64) + offsets, rank

    def records_of(self, value: int) -> np.ndarray:
        """D_v: the records generalized to ``value`` (through Link_v)."""
        pos, _ = self.positions(self.link[value])
        return self.rec[pos]

    def child_index(self, value: int, records: np.ndarray, split: float | None = None) -> tuple[np.ndarray, list[CutValue]]:
        """For records in D_v: the index of the child of ``value`` each falls in, and the child cut values."""
        cv = self.values[value]
        a = self.schema.attributes[cv.attr]
        col = self.table.columns[cv.attr]
        if a.kind == "categorical":
            tax = a.taxonomy
            kids = [CutValue(cv.attr, c, float(tax.lo[c]), float(tax.hi[c])) for c in tax.children[cv.node]]
            return tax.child_of_leaf(cv.node)[col[records]], kids
        if split is None:
            raise ValueError("a numeric value needs its split point")
        kids = [CutValue(cv.attr, -1, cv.lo, float(split)), CutValue(cv.attr, -1, float(split), cv.hi)]
        return (col[records] >= split).astype(np.int64), kids

    def root_records(self) -> np.ndarray:
        """Every record (the record set of the top values)."""
        return np.arange(self.table.n_records, dtype=np.int64)

    def value_split_intervals(self, value: int, records: np.ndarray) -> SplitIntervals:
        """Eq. 6's intervals of numeric ``value`` over its records D_v (``records``)."""
        cv = self.values[value]
        a = self.schema.attributes[cv.attr]
        return split_intervals(self.table.columns[cv.attr][records], self.table.y[records], self.schema.n_classes,
                               cv.lo, cv.hi, a.integer)

    def category_table(self, value: int, records: np.ndarray) -> np.ndarray:
        """|D_c^cls| for c in child(v), from the records of D_v (collected in the specialization scan)."""
        k, kids = self.child_index(value, records)
        n_cls = self.schema.n_classes
        return np.bincount(k * n_cls + self.table.y[records], minlength=len(kids) * n_cls).reshape(len(kids), n_cls)

    # -- the one operation that scans records -------------------------------------------------
    def specialize(self, value: int, split: float | None = None) -> tuple[list[int], list[np.ndarray]]:
        """Specialize ``value -> child(value)`` on every leaf of Link_v in one scan of D_v.

        Returns the new cut value ids and, for each, its records D_c (for the caller's counts).
        """
        leaves = self.link.pop(value)
        cv = self.values[value]
        self.cut[cv.attr].remove(value)
        pos, rank = self.positions(leaves)
        r = self.rec[pos]
        k, kids = self.child_index(value, r, split)
        m = len(kids)
        n_leaves = leaves.size
        sizes = np.bincount(rank * m + k, minlength=n_leaves * m).reshape(n_leaves, m)
        lengths = sizes.sum(axis=1)
        leaf_begin = np.concatenate([[0], np.cumsum(lengths)[:-1]])  # where each leaf starts within pos
        key_start = np.concatenate([[0], np.cumsum(sizes.ravel())[:-1]])
        # Counting sort (stable) of the scanned records by (leaf, child): each leaf's records stay in its
        # own slice, grouped by child. One cumulative count per child over D_v, no comparison sort.
        n_scan = r.size
        onehot = np.zeros((n_scan + 1, m), dtype=np.int32)
        onehot[np.arange(1, n_scan + 1), k] = 1
        before_p = np.cumsum(onehot, axis=0, dtype=np.int32)  # before_p[p, i]: child-i records before p
        before_leaf = before_p[leaf_begin]  # ... before each leaf's first record
        occ = before_p[np.arange(n_scan), k] - before_leaf[rank, k]  # rank of p among its leaf's child-k records
        dest = key_start[rank * m + k] + occ
        child_records = [r[k == i] for i in range(m)]
        new_r = np.empty_like(r)
        new_r[dest] = r
        self.rec[pos] = new_r
        starts = self.start[leaves][:, None] + np.concatenate(
            [np.zeros((n_leaves, 1), dtype=np.int64), np.cumsum(sizes, axis=1)[:, :-1]], axis=1)
        return self._grow(value, leaves, kids, starts, sizes), child_records

    def _grow(self, value: int, leaves: np.ndarray, kids: list[CutValue], starts: np.ndarray,
              sizes: np.ndarray) -> list[int]:
        """The bookkeeping of a specialization (no records): new values and leaves, gen, Link.

        ``value`` is already off the cut; leaf ``leaves[r]``'s child k becomes partition
        ``n_partitions + r * m + k``, at ``starts[r, k]`` with ``sizes[r, k]`` records.
        """
        cv = self.values[value]
        m = len(kids)
        n_leaves = leaves.size
        child_ids = [self._add_value(kc) for kc in kids]
        first = self.n_partitions
        new = first + np.arange(n_leaves * m, dtype=np.int64)
        old_gen = self.gen[leaves]
        gen = np.repeat(old_gen, m, axis=0)
        gen[:, cv.attr] = np.tile(np.asarray(child_ids, dtype=np.int64), n_leaves)
        self.start = np.concatenate([self.start, starts.ravel()])
        self.end = np.concatenate([self.end, (starts + sizes).ravel()])
        self.parent = np.concatenate([self.parent, np.repeat(leaves, m)])
        self.gen = np.concatenate([self.gen, gen])
        self.is_leaf[leaves] = False
        self.is_leaf = np.concatenate([self.is_leaf, np.ones(new.size, dtype=bool)])
        # Link_c for the new values; for every other attribute's value x on a retired leaf,
        # Link_x drops the retired leaves and gains their children.
        new_by_leaf = new.reshape(n_leaves, m)
        for i, c in enumerate(child_ids):
            self.link[c] = new_by_leaf[:, i].copy()
        for j in range(gen.shape[1]):
            if j == cv.attr:
                continue
            col = old_gen[:, j]
            for x in self.cut[j]:
                hit = col == x
                if hit.any():
                    old = self.link[x]
                    self.link[x] = np.concatenate([old[self.is_leaf[old]], new_by_leaf[hit].ravel()])
        return child_ids

    # -- the release ---------------------------------------------------------------------------
    def leaf_class_counts(self) -> tuple[np.ndarray, np.ndarray]:
        """(leaf partition ids, exact class counts per leaf): the contingency table before noise."""
        leaves = self.leaves()
        pos, rank = self.positions(leaves)
        n_cls = self.schema.n_classes
        counts = np.bincount(rank * n_cls + self.table.y[self.rec[pos]], minlength=leaves.size * n_cls)
        return leaves, counts.reshape(leaves.size, n_cls)


def ordered_cut(tree_values: list[CutValue], cut_ids: list[int]) -> list[int]:
    """Cut value ids of one attribute in domain order (by covered range): a function of the cut only."""
    return sorted(cut_ids, key=lambda v: (tree_values[v].lo, tree_values[v].hi))


def generalize(table: EncodedTable, cut: list[list[CutValue]]) -> np.ndarray:
    """Map every record to the index of its cut value in each attribute's ordered cut (n x d int64).

    ``cut[j]`` must cover attribute j's domain (categorical: disjoint leaf ranges; numeric: intervals).
    """
    out = np.empty((table.n_records, len(cut)), dtype=np.int64)
    for j, values in enumerate(cut):
        a = table.schema.attributes[j]
        col = table.columns[j]
        if a.kind == "categorical":
            leaf_to = np.full(a.taxonomy.n_leaves, -1, dtype=np.int64)
            for i, cv in enumerate(values):
                leaf_to[int(cv.lo):int(cv.hi)] = i
            out[:, j] = leaf_to[col]
        else:
            los = np.asarray([cv.lo for cv in values])
            out[:, j] = np.searchsorted(los, col, side="right") - 1
    return out
