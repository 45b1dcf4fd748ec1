"""The partition tree and Link index of DiffGen section 4.3 (shared with TDS).

* A *cut value* is a taxonomy node (categorical) or an interval ``[lo, hi)`` (numeric);
  ``∪Cut_i`` holds one cut value per root-to-leaf path of every attribute.
* The *partition tree* (Figure 2): every leaf partition is one generalized record
  (a cut value per attribute) and holds its records: one int32 array ``pid`` gives the
  leaf of every record, so refining leaves rewrites ``pid`` on their records only.
* ``link[v]``: the leaf partitions whose generalized record contains ``v`` (Link_v), read off
  the generalized records when asked.

:meth:`PartitionTree.specialize` refines the leaves on Link_v in one vectorised
scan of D_v and hands back the records of each child value (TDS, DiffGen+);
:meth:`PartitionTree.specialize_counts` (DiffGen) refines them the same way but hands
the counts that score the new candidates (section 4.3, "Update Score") from the
counts of v itself: D_c is every record whose value of c's attribute lies in c's range.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np

from ..data.cut import CutValue, cut_label, generalize
from ..data.table import EncodedTable

__all__ = ["CutValue", "PartitionTree", "SplitIntervals", "split_intervals", "split_intervals_from_counts",
           "generalize", "cut_label", "ordered_cut"]


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


class _RowIds:
    """``rec[rows] is rows``: records are addressed by their row number, so :meth:`PartitionTree.positions`
    returns row ids and ``tree.rec[pos]`` (the old slice-permutation idiom of its callers) is the identity."""

    __slots__ = ()

    def __getitem__(self, rows):
        return rows


class _Links:
    """Link_x for every cut value x (section 4.3): the leaf partitions whose generalized record holds x, in
    ascending partition id (the order an incrementally kept Link has). Read off ``gen`` when asked and cached
    until the next specialization, instead of being rewritten for every attribute at every specialization."""

    def __init__(self, tree: "PartitionTree"):
        self._ref = weakref.ref(tree)  # no reference cycle: the tree's arrays go as soon as the tree does
        self._cache: dict[int, np.ndarray] = {}

    @property
    def _tree(self) -> "PartitionTree":
        return self._ref()

    def _active(self, x) -> bool:
        t = self._tree
        return isinstance(x, (int, np.integer)) and 0 <= x < len(t.values) and x in t.cut[t.values[x].attr]

    def __contains__(self, x) -> bool:
        return self._active(x)

    def __getitem__(self, x) -> np.ndarray:
        if not self._active(x):
            raise KeyError(x)
        got = self._cache.get(int(x))
        if got is None:
            t = self._tree
            leaves = t._leaf_ids()
            got = leaves[t.gen[leaves, t.values[x].attr] == x]
            self._cache[int(x)] = got
        return got

    def pop(self, x) -> np.ndarray:
        got = self[x]
        self._cache.pop(int(x), None)
        return got

    def clear(self) -> None:
        self._cache.clear()

    def __iter__(self):
        return iter(self._tree.cut_values())

    def __len__(self) -> int:
        return len(self._tree.cut_values())

    def keys(self) -> list[int]:
        return self._tree.cut_values()

    def items(self):
        return [(x, self[x]) for x in self._tree.cut_values()]


class PartitionTree:
    """Leaf partitions over one per-record partition id array, with Link_v (section 4.3, Figure 2).

    ``pid[r]`` is the leaf partition of record r (int32); refining the leaves of Link_v rewrites ``pid`` for
    D_v only. ``start``/``end`` are offsets of a virtual ordering (each leaf's children cut its range in
    child order), kept so that ``end - start`` is a partition's size; no record permutation is held.
    """

    _holds_records = True

    def __init__(self, table: EncodedTable):
        self.table = table
        self.schema = table.schema
        d = len(self.schema.attributes)
        n = table.n_records
        # the leaf of every record (an engine's tree keeps the records with the engine: see engine_tree.py)
        self.pid = np.zeros(n if self._holds_records else 0, dtype=np.int32)
        self.rec = _RowIds() if self._holds_records else np.zeros(0, dtype=np.int64)
        # cut value id -> (distinct values, class counts per value) of its attribute over D_v, from the scan
        # that made the value (what value_split_intervals and category_table need when given no records)
        self._counts: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self.values: list[CutValue] = []
        self.cut: list[list[int]] = [[] for _ in range(d)]  # active cut value ids per attribute
        root_gen = []
        for j, a in enumerate(self.schema.attributes):
            if a.kind == "categorical":
                cv = CutValue(j, 0, float(a.taxonomy.lo[0]), float(a.taxonomy.hi[0]))
            else:
                cv = CutValue(j, -1, a.lo, a.hi)
            root_gen.append(self._add_value(cv))
        self._roots = set(root_gen)
        self.start = np.zeros(1, dtype=np.int64)
        self.end = np.full(1, n, dtype=np.int64)
        self.parent = np.full(1, -1, dtype=np.int64)
        self.gen = np.asarray([root_gen], dtype=np.int32)  # generalized record of every partition (value ids)
        self.is_leaf = np.ones(1, dtype=bool)
        self._bufs: dict[str, np.ndarray] = {}
        self._leaf_cache: np.ndarray | None = None
        self.link = _Links(self)

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
        return self._leaf_ids().copy()

    def cut_values(self) -> list[int]:
        return [v for vs in self.cut for v in vs]

    def _select(self, parts: np.ndarray) -> tuple[np.ndarray | None, np.ndarray | None]:
        """The records of leaf partitions ``parts`` (ascending row ids; None: every record) and each one's
        rank in ``parts`` (int32; None: all 0)."""
        parts = np.asarray(parts, dtype=np.int64)
        n = self.pid.size
        covered = int((self.end[parts] - self.start[parts]).sum())
        if covered == n and parts.size == 1:
            return None, None
        lut = np.full(self.n_partitions, -1, dtype=np.int32)
        lut[parts] = np.arange(parts.size, dtype=np.int32)
        rank = lut[self.pid]
        if covered == n:
            return None, rank
        rows = np.flatnonzero(rank >= 0)
        return rows, rank[rows]

    def positions(self, parts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Row ids of the given leaf partitions' records (ascending), and each one's partition rank in ``parts``.

        (``tree.rec[pos]`` is ``pos``: see :class:`_RowIds`.)"""
        rows, rank = self._select(parts)
        n = self.pid.size
        if rows is None:
            rows = np.arange(n, dtype=np.int64)
        return rows, (np.zeros(rows.size, dtype=np.int64) if rank is None else rank.astype(np.int64))

    def records_of(self, value: int) -> np.ndarray:
        """D_v: the records generalized to ``value`` (through Link_v)."""
        pos, _ = self.positions(self.link[value])
        return pos

    def _children(self, value: int, split: float | None) -> tuple[list[CutValue], np.ndarray | None]:
        """The child cut values of ``value`` and, for a categorical one, the child index of every leaf code."""
        cv = self.values[value]
        a = self.schema.attributes[cv.attr]
        if a.kind == "categorical":
            tax = a.taxonomy
            kids = [CutValue(cv.attr, c, float(tax.lo[c]), float(tax.hi[c])) for c in tax.children[cv.node]]
            return kids, tax.child_of_leaf(cv.node)
        if split is None:
            raise ValueError("a numeric value needs its split point")
        return [CutValue(cv.attr, -1, cv.lo, float(split)), CutValue(cv.attr, -1, float(split), cv.hi)], None

    def child_index(self, value: int, records: np.ndarray, split: float | None = None) -> tuple[np.ndarray, list[CutValue]]:
        """For records in D_v: the index of the child of ``value`` each falls in, and the child cut values."""
        cv = self.values[value]
        col = self.table.columns[cv.attr]
        kids, lut = self._children(value, split)
        if lut is not None:
            return lut[col[records]], kids
        return (col[records] >= split).astype(np.int64), kids

    def root_records(self) -> None:
        """The records of the top values: None, read as "every record" by :meth:`value_split_intervals` and
        :meth:`category_table` (no index array of D is built)."""
        return None

    def _column_counts(self, value: int, records: np.ndarray | None) -> tuple[np.ndarray, np.ndarray] | None:
        if records is not None:
            return None
        if value in self._counts:
            return self._counts[value]
        if value in self._roots:
            cv = self.values[value]
            self._counts[value] = _value_counts(self.table.columns[cv.attr], self.table.y, self.schema.n_classes,
                                                self.schema.attributes[cv.attr], cv.lo, cv.hi)
            return self._counts[value]
        raise ValueError(f"no records and no counts for cut value {value}")

    def value_split_intervals(self, value: int, records: np.ndarray | None = None) -> SplitIntervals:
        """Eq. 6's intervals of numeric ``value`` over its records D_v (``records``; None: from the counts of
        the scan that made ``value``, or every record for a top value)."""
        cv = self.values[value]
        a = self.schema.attributes[cv.attr]
        counts = self._column_counts(value, records)
        if counts is None:
            return split_intervals(self.table.columns[cv.attr][records], self.table.y[records],
                                   self.schema.n_classes, cv.lo, cv.hi, a.integer)
        u, per_value = counts
        return split_intervals_from_counts(u, per_value, cv.lo, cv.hi, a.integer)

    def category_table(self, value: int, records: np.ndarray | None = None) -> np.ndarray:
        """|D_c^cls| for c in child(v), from the records of D_v (None: from the counts of the scan)."""
        counts = self._column_counts(value, records)
        n_cls = self.schema.n_classes
        if counts is None:
            k, kids = self.child_index(value, records)
            return np.bincount(k * n_cls + self.table.y[records], minlength=len(kids) * n_cls).reshape(len(kids), n_cls)
        cv = self.values[value]
        tax = self.schema.attributes[cv.attr].taxonomy
        u, per_value = counts
        table = np.zeros((len(tax.children[cv.node]), n_cls), dtype=np.int64)
        np.add.at(table, tax.child_of_leaf(cv.node)[u.astype(np.int64)], per_value)
        return table

    # -- the one operation that scans records -------------------------------------------------
    def _scan(self, value: int, split: float | None):
        """Move the records of Link_v's leaves to their children (rewrites ``pid`` on D_v only)."""
        leaves = self.link.pop(value)
        cv = self.values[value]
        self.cut[cv.attr].remove(value)
        self._counts.pop(value, None)
        kids, lut = self._children(value, split)
        m = len(kids)
        n_leaves = leaves.size
        rows, rank = self._select(leaves)
        col = self.table.columns[cv.attr]
        vals = col if rows is None else col[rows]
        if lut is not None:
            k = lut.astype(np.int32)[vals]
        else:
            k = (vals >= split).view(np.int8)
        first = self.n_partitions
        if rank is None:
            key = k.astype(np.int32)
        else:
            key = rank * np.int32(m)
            key += k
        del rank
        sizes = np.bincount(key, minlength=n_leaves * m).reshape(n_leaves, m)
        key += np.int32(first)
        if rows is None:
            self.pid = key
        else:
            self.pid[rows] = key
        del key
        starts = self.start[leaves][:, None] + np.concatenate(
            [np.zeros((n_leaves, 1), dtype=np.int64), np.cumsum(sizes, axis=1)[:, :-1]], axis=1)
        child_ids = self._grow(value, leaves, kids, starts, sizes)
        return child_ids, rows, vals, k

    def specialize(self, value: int, split: float | None = None) -> tuple[list[int], list[np.ndarray]]:
        """Specialize ``value -> child(value)`` on every leaf of Link_v in one scan of D_v.

        Returns the new cut value ids and, for each, its records D_c (row ids, ascending).
        """
        child_ids, rows, _, k = self._scan(value, split)
        out = []
        for i in range(len(child_ids)):
            hit = np.flatnonzero(k == i)
            out.append(hit if rows is None else rows[hit])
        return child_ids, out

    def specialize_counts(self, value: int, split: float | None = None) -> tuple[list[int], list[None]]:
        """:meth:`specialize` without the record lists. Per new value c it keeps the class counts of each
        distinct value of the attribute over D_c, which :meth:`value_split_intervals` and
        :meth:`category_table` then read when given no records (as an engine's tree does).

        No record is read for them: D_c is every record whose value of c's attribute lies in c's range (a cut
        covers its attribute's domain once), so c's counts are the slice of v's (in the end, of the top
        value's, counted over D once) between c's bounds. The scan of D_v only moves records to their leaves.
        """
        if not self._holds_records:
            return self.specialize(value, split)
        u, per_value = self._column_counts(value, None)
        child_ids, _, _, _ = self._scan(value, split)
        for c in child_ids:
            kc = self.values[c]
            lo, hi = np.searchsorted(u, [kc.lo, kc.hi], side="left")
            self._counts[c] = (u[lo:hi], per_value[lo:hi])
        return child_ids, [None] * len(child_ids)

    def _grow(self, value: int, leaves: np.ndarray, kids: list[CutValue], starts: np.ndarray,
              sizes: np.ndarray) -> list[int]:
        """The bookkeeping of a specialization (no records): new values and leaves, gen (Link follows from it).

        ``value`` is already off the cut; leaf ``leaves[r]``'s child k becomes partition
        ``n_partitions + r * m + k``, at ``starts[r, k]`` with ``sizes[r, k]`` records.
        """
        cv = self.values[value]
        m = len(kids)
        n_leaves = leaves.size
        child_ids = [self._add_value(kc) for kc in kids]
        gen = np.repeat(self.gen[leaves], m, axis=0)
        gen[:, cv.attr] = np.tile(np.asarray(child_ids, dtype=np.int32), n_leaves)
        self._extend("start", starts.ravel())
        self._extend("end", (starts + sizes).ravel())
        self._extend("parent", np.repeat(np.asarray(leaves, dtype=np.int64), m))
        self._extend("gen", gen)
        self.is_leaf[leaves] = False
        self._extend("is_leaf", np.ones(n_leaves * m, dtype=bool))
        self._leaf_cache = None
        self.link.clear()
        return child_ids

    def _extend(self, name: str, rows: np.ndarray) -> None:
        """Append rows to a per-partition array kept as a view of a buffer grown by half (no copy per round)."""
        cur = getattr(self, name)
        n, need = cur.shape[0], cur.shape[0] + rows.shape[0]
        buf = self._bufs.get(name)
        if buf is None or buf.shape[0] < need:
            buf = np.empty((max(need, n + n // 2, 16),) + cur.shape[1:], dtype=cur.dtype)
            buf[:n] = cur
            self._bufs[name] = buf
        buf[n:need] = rows
        setattr(self, name, buf[:need])

    def _leaf_ids(self) -> np.ndarray:
        if self._leaf_cache is None:
            self._leaf_cache = np.flatnonzero(self.is_leaf)
        return self._leaf_cache

    # -- the release ---------------------------------------------------------------------------
    def leaf_class_counts(self) -> tuple[np.ndarray, np.ndarray]:
        """(leaf partition ids, exact class counts per leaf): the contingency table before noise."""
        leaves = self.leaves()
        n_cls = self.schema.n_classes
        counts = np.bincount(self.pid * n_cls + self.table.y, minlength=self.n_partitions * n_cls)
        return leaves, counts.reshape(self.n_partitions, n_cls)[leaves]


def _value_counts(values: np.ndarray, y: np.ndarray, n_classes: int, attribute, lo: float, hi: float
                  ) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values of an attribute over some records (ascending, float64 for a numeric attribute, leaf
    codes for a categorical one) and the class counts of each: one counting pass where the domain is modest
    (leaf codes; an integer range), else one sort (``np.unique``). :func:`split_intervals_from_counts` makes
    the same intervals from them as :func:`split_intervals` from the records."""
    if attribute.kind == "categorical":
        size = attribute.taxonomy.n_leaves
        dense = np.bincount(values * n_classes + y, minlength=size * n_classes).reshape(size, n_classes)
        present = np.flatnonzero(dense.any(axis=1))
        return present, dense[present]
    base = float(np.floor(lo))
    span = int(np.ceil(hi) - base)
    if attribute.integer and span * n_classes <= max(1 << 22, 8 * values.size):
        idx = values.astype(np.int64)
        idx -= int(base)
        idx *= n_classes
        idx += y
        dense = np.bincount(idx, minlength=span * n_classes).reshape(span, n_classes)
        del idx
        present = np.flatnonzero(dense.any(axis=1))
        return base + present.astype(np.float64), dense[present]
    u, inv = np.unique(values, return_inverse=True)
    per_value = np.bincount(inv.reshape(-1) * n_classes + y, minlength=u.size * n_classes).reshape(u.size, n_classes)
    return u.astype(np.float64), per_value


def ordered_cut(tree_values: list[CutValue], cut_ids: list[int]) -> list[int]:
    """Cut value ids of one attribute in domain order (by covered range): a function of the cut only."""
    return sorted(cut_ids, key=lambda v: (tree_values[v].lo, tree_values[v].hi))
