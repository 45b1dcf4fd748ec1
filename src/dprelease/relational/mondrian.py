"""Mondrian multidimensional k-anonymity (LeFevre, DeWitt and Ramakrishnan, ICDE 2006): RPS's baseline.

NOT differentially private: every cut reads the raw data and the group sizes are exact. It is here only to
reproduce RPS's comparison (Qardaji & Li, section 4: "our method outperforms the Mondrian algorithm, which
satisfies the weaker k-anonymity").

Strict top-down partitioning of the predictors (the quasi-identifier; the class is the sensitive attribute
and is kept as it is): a partition is cut on the dimension of widest normalised range of its records (range
of the values present / width of the public domain), at the median, if both halves keep at least k
records; otherwise the next widest dimension is tried; a partition with no allowable cut is a final group.
Categorical values are ordered by their taxonomy leaves in depth-first order (as RPS orders them).

The published table generalizes each group to its bounding box (the min..max of every predictor over its
records). :func:`expand` turns it into a synthetic table with the same uniform rule as RPS: each record keeps
its class and draws every predictor uniformly inside its group's box.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..data.table import EncodedTable
from ..errors import ParameterError
from ..privacy import NoiseSource
from ..release import build_manifest, records_run_start
from ..release.table import SyntheticTable

__all__ = ["MondrianGroups", "mondrian", "expand", "mondrian_release"]


@dataclass(frozen=True, eq=False)
class MondrianGroups:
    """Final groups: ``lo[g], hi[g]`` the inclusive bounding box of group g over the predictors (value space:
    leaf codes for categorical attributes), and each record's group ``group[i]`` (exact, NOT DP)."""

    table: EncodedTable
    k: int
    lo: np.ndarray
    hi: np.ndarray
    group: np.ndarray
    manifest: dict[str, object] = field(default_factory=dict)

    @property
    def n_groups(self) -> int:
        return int(self.lo.shape[0])

    @property
    def sizes(self) -> np.ndarray:
        return np.bincount(self.group, minlength=self.n_groups)


def _widths(table: EncodedTable) -> np.ndarray:
    out = []
    for a in table.schema.attributes:
        out.append(float(a.taxonomy.n_leaves - 1) if a.kind == "categorical" else float(a.hi - a.lo))
    return np.maximum(np.asarray(out), 1e-12)


def _cut(values: np.ndarray, k: int) -> float | None:
    """A median split value s (left: v <= s) leaving at least k records on each side, or None."""
    n = values.size
    v = np.sort(values)
    med = v[(n - 1) // 2]
    left = int(np.searchsorted(v, med, side="right"))  # v <= med
    if left >= k and n - left >= k:
        return float(med)
    left2 = int(np.searchsorted(v, med, side="left"))  # v < med goes left: split value just below med
    if left2 >= k and n - left2 >= k:
        return float(v[left2 - 1])
    return None


@records_run_start
def mondrian(table: EncodedTable, k: int) -> MondrianGroups:
    """Strict multidimensional Mondrian on the predictors; every final group has at least k records."""
    k = int(k)
    if k < 1:
        raise ParameterError(f"-k must be at least 1, got {k}")
    n = table.n_records
    if n < k:
        raise ParameterError(f"the table has fewer records than k = {k}")
    cols = [np.asarray(c, dtype=np.float64) for c in table.columns]
    widths = _widths(table)
    group = np.empty(n, dtype=np.int64)
    boxes_lo: list[np.ndarray] = []
    boxes_hi: list[np.ndarray] = []
    stack = [np.arange(n, dtype=np.int64)]
    while stack:
        rows = stack.pop()
        sub = np.stack([c[rows] for c in cols])
        mins, maxs = sub.min(axis=1), sub.max(axis=1)
        done = True
        if rows.size >= 2 * k:
            for j in np.argsort(-(maxs - mins) / widths, kind="stable").tolist():
                if maxs[j] == mins[j]:
                    break
                s = _cut(sub[j], k)
                if s is None:
                    continue
                left = sub[j] <= s
                stack.append(rows[~left])
                stack.append(rows[left])
                done = False
                break
        if done:
            group[rows] = len(boxes_lo)
            boxes_lo.append(mins)
            boxes_hi.append(maxs)
    lo = np.asarray(boxes_lo)
    hi = np.asarray(boxes_hi)
    # Number the groups by their boxes (canonical order), not by discovery order.
    order = np.lexsort(np.hstack([lo, hi]).T[::-1])
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    manifest = {"parameters": {"k": k, "quasi_identifier": [a.name for a in table.schema.attributes],
                               "cut": "median of the widest normalised range, strict"},
                "privacy_model": f"{k}-anonymity (NOT differential privacy)"}
    return MondrianGroups(table, k, lo[order], hi[order], rank[group], manifest)


def expand(groups: MondrianGroups, rng: np.random.Generator) -> EncodedTable:
    """The synthetic table: every record keeps its class and draws each predictor uniformly in its group's box.

    Rows are sorted by group (canonical order), then class, then the drawn values (never by input order).
    """
    table = groups.table
    g = groups.group
    cols = []
    for j, a in enumerate(table.schema.attributes):
        lo, hi = groups.lo[g, j], groups.hi[g, j]
        u = rng.random(g.size)
        if a.kind == "categorical" or a.integer:
            v = lo + np.minimum(np.floor(u * (hi - lo + 1)), hi - lo)
            cols.append(v.astype(np.int64) if a.kind == "categorical" else v)
        else:
            cols.append(lo + u * (hi - lo))
    order = np.lexsort(tuple(cols[::-1]) + (table.y, g))
    return EncodedTable(table.schema, tuple(c[order] for c in cols), table.y[order])


@records_run_start
def mondrian_release(table: EncodedTable, k: int, *, noise: NoiseSource) -> SyntheticTable:
    """Mondrian's groups expanded to a synthetic table (uniform draws from ``noise``), with its manifest: a
    k-anonymous release, NOT differentially private."""
    groups = mondrian(table, k)
    seed = noise.integers(2**62, 2)
    synth = expand(groups, np.random.Generator(np.random.PCG64([int(s) for s in seed])))
    schema = table.schema
    manifest = build_manifest(
        "mondrian", epsilon=None, parameters=groups.manifest["parameters"], noise=noise, accountant=None,
        domain=schema.describe(), release={"records": synth.n_records, "groups": groups.n_groups,
                                           "columns": [a.name for a in schema.attributes] + [schema.class_attribute.name]},
        notes=["LeFevre, DeWitt and Ramakrishnan, Mondrian multidimensional k-anonymity, ICDE 2006",
               "records keep their class; predictors drawn uniformly in their group's bounding box"],
        privacy={"model": f"{groups.k}-anonymity", "differentially_private": False,
                 "warning": "exact group sizes and data-dependent cuts: NOT differential privacy"})
    return SyntheticTable(schema, synth, manifest)
