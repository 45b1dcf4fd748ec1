"""The cut of a generalized table (DiffGen, TDS): one cut value per attribute path, and records mapped onto it.

* A *cut value* is a taxonomy node (categorical) or an interval ``[lo, hi)`` (numeric);
  ``∪Cut_i`` holds one cut value per root-to-leaf path of every attribute (DiffGen section 4.3).
* :func:`cut_label` names a cut value as a release writes it; :func:`generalize` maps records onto a cut.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .table import EncodedTable, TableSchema

__all__ = ["CutValue", "cut_label", "generalize"]


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
