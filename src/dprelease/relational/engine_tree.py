"""DiffGen's partition tree with its records on an engine (``diffgen --engine spark``).

The bookkeeping of section 4.3 (the cut, leaf partitions, their generalized records, Link_v) is the
in-memory :class:`~dprelease.relational.partition.PartitionTree`'s, run on the driver; the records stay with
the engine (:class:`~dprelease.engine.base.TableData`), each tagged with its leaf partition. A
specialization is one engine pass ("Perform Specialization": the records of Link_v's leaves move to their
child partitions) that also returns, per new child value c, the class counts of each distinct value of the
attribute over D_c ("Update Score": the inputs of eq. 5's table for a categorical c and eq. 6's intervals for a
numeric one); the top values' counts come from one pass over D; line 12's leaf x class counts are a last pass.
These are exact aggregates only; noise and the mechanisms stay in :func:`~dprelease.relational.diffgen.diffgen`,
which sees the same numbers as with the in-memory tree (:func:`split_intervals_from_counts` builds the same
intervals, bit for bit) and so draws the same noise in the same order.
"""

from __future__ import annotations

import numpy as np

from ..engine.base import TableData, ValueCounts
from .partition import CutValue, PartitionTree, SplitIntervals, split_intervals_from_counts

__all__ = ["EngineTree"]


class EngineTree(PartitionTree):
    """A :class:`PartitionTree` whose record passes run on an engine; "records" arguments are unused."""

    _holds_records = False

    def __init__(self, data: TableData):
        super().__init__(data)  # type: ignore[arg-type]  # only .schema and .n_records are read
        self.data = data
        self.splitter = data.splitter()
        self._counts: dict[int, ValueCounts] = {}  # cut value id -> its attribute's value counts over D_v
        self._root_done = False

    def _empty(self) -> ValueCounts:
        return np.zeros(0, dtype=np.float64), np.zeros((0, self.schema.n_classes), dtype=np.int64)

    def root_records(self) -> None:  # type: ignore[override]
        """One pass over D: every attribute's value x class counts (the top values' D_v is D)."""
        if not self._root_done:
            d = len(self.schema.attributes)
            counts = self.splitter.value_counts(list(range(d)))
            for j in range(d):
                self._counts[self.cut[j][0]] = counts.get(j, self._empty())
            self._root_done = True
        return None

    def value_split_intervals(self, value: int, records: object = None) -> SplitIntervals:
        cv = self.values[value]
        u, per_value = self._counts.get(value, self._empty())
        return split_intervals_from_counts(u, per_value, cv.lo, cv.hi, self.schema.attributes[cv.attr].integer)

    def category_table(self, value: int, records: object = None) -> np.ndarray:
        cv = self.values[value]
        tax = self.schema.attributes[cv.attr].taxonomy
        u, per_value = self._counts.get(value, self._empty())
        table = np.zeros((len(tax.children[cv.node]), self.schema.n_classes), dtype=np.int64)
        np.add.at(table, tax.child_of_leaf(cv.node)[u.astype(np.int64)], per_value)
        return table

    def _kids(self, value: int, split: float | None) -> tuple[list[CutValue], np.ndarray | None]:
        cv = self.values[value]
        a = self.schema.attributes[cv.attr]
        if a.kind == "categorical":
            tax = a.taxonomy
            return ([CutValue(cv.attr, c, float(tax.lo[c]), float(tax.hi[c])) for c in tax.children[cv.node]],
                    tax.child_of_leaf(cv.node))
        if split is None:
            raise ValueError("a numeric value needs its split point")
        return [CutValue(cv.attr, -1, cv.lo, float(split)), CutValue(cv.attr, -1, float(split), cv.hi)], None

    def specialize(self, value: int, split: float | None = None) -> tuple[list[int], list[None]]:  # type: ignore[override]
        """One engine pass: records of Link_v's leaves move to their children; the children's value counts."""
        leaves = self.link.pop(value)
        cv = self.values[value]
        self.cut[cv.attr].remove(value)
        kids, lut = self._kids(value, split)
        m = len(kids)
        per_child = self.splitter.split(leaves, cv.attr, m, lut, split, self.n_partitions)
        zeros = np.zeros((leaves.size, m), dtype=np.int64)  # no record slices: the engine holds the records
        child_ids = self._grow(value, leaves, kids, zeros, zeros)
        self._counts.pop(value, None)
        for k, c in enumerate(child_ids):
            self._counts[c] = per_child.get(k, self._empty())
        return child_ids, [None] * m

    def leaf_class_counts(self) -> tuple[np.ndarray, np.ndarray]:
        leaves = self.leaves()
        return leaves, self.splitter.leaf_class_counts(leaves)

    def close(self) -> None:
        self.splitter.close()
