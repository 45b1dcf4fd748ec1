"""TDS, top-down specialization for k-anonymity (Fung, Wang and Yu, ICDE 2005 / TKDE 2007): DiffGen's baseline.

NOT differentially private: every choice reads the raw data and the counts are
exact. It is here only to reproduce DiffGen's comparison (section 5, Figure 4).

From the most general cut, repeatedly specialize the valid, beneficial candidate
with the highest ``Score(v) = InfoGain(v) / (AnonyLoss(v) + 1)``, where
``AnonyLoss(v) = A - A_v`` is the drop in anonymity (the smallest non-empty
generalized group over all predictors taken as one QID) that specializing v
would cause. Valid: ``A_v >= k``. Beneficial: ``InfoGain(v) > 0``. Numeric
values split at the point of highest InfoGain (the midpoint of its interval), as
TDS builds its numeric taxonomies on the fly. Stops when no candidate is valid
and beneficial. Uses the same partition tree and Link index as DiffGen.
"""

from __future__ import annotations

import numpy as np

from ..data.table import EncodedTable
from ..errors import ParameterError
from ..release import build_manifest, records_run_start
from ..release.table import GeneralizedTable
from .diffgen import _category_table, _ordered_cells, _splittable
from .partition import PartitionTree, cut_label, split_intervals
from .scores import info_gain, split_scores

__all__ = ["tds"]


def _best_split(tree: PartitionTree, v: int, records: np.ndarray) -> tuple[float, np.ndarray] | None:
    cv = tree.values[v]
    a = tree.schema.attributes[cv.attr]
    col = tree.table.columns[cv.attr]
    iv = split_intervals(col[records], tree.table.y[records], tree.schema.n_classes, cv.lo, cv.hi, a.integer)
    # Only splits that separate records (groups strictly inside the data range) can be beneficial.
    n = records.size
    inner = (iv.left.sum(1) > 0) & (iv.left.sum(1) < n)
    if not inner.any():
        return None
    gains = np.where(inner, split_scores(iv.left, iv.total, "infogain"), -1.0)
    g = int(np.argmax(gains))
    if a.integer:
        s = float(iv.low[g] + (iv.measure[g] - 1) // 2)
    else:
        s = float((iv.low[g] + iv.high[g]) / 2.0)
    left = iv.left[g]
    return s, np.stack([left, iv.total - left])


@records_run_start
def tds(table: EncodedTable, k: int = 5, *, max_rounds: int | None = None) -> GeneralizedTable:
    """Top-down specialization to a k-anonymous generalized table with exact counts (not DP)."""
    k = int(k)
    if k < 1:
        raise ParameterError(f"-k must be at least 1, got {k}")
    if table.n_records < k:
        raise ParameterError(f"the table has {table.n_records} records, fewer than k = {k}")
    schema = table.schema
    tree = PartitionTree(table)
    info: dict[int, tuple[float | None, float]] = {}  # value -> (split, InfoGain)

    def add_candidate(v: int, records: np.ndarray) -> None:
        if not _splittable(tree, v):
            return
        if schema.attributes[tree.values[v].attr].kind == "numeric":
            best = _best_split(tree, v, records)
            if best is not None:
                info[v] = (best[0], info_gain(best[1]))
        else:
            info[v] = (None, info_gain(_category_table(tree, v, records)))

    everything = np.arange(table.n_records, dtype=np.int64)
    for j in range(len(schema.attributes)):
        add_candidate(tree.cut[j][0], everything)

    trace = []
    rounds = 0
    while max_rounds is None or rounds < max_rounds:
        leaves = tree.leaves()
        sizes = tree.end[leaves] - tree.start[leaves]
        nonempty = sizes > 0
        anonymity = int(sizes[nonempty].min())
        size_of = np.zeros(tree.n_partitions, dtype=np.int64)
        size_of[leaves] = sizes
        best, best_score = None, -np.inf
        for v, (split, gain) in info.items():
            if gain <= 0:
                continue
            link = tree.link[v]
            pos, rank = tree.positions(link)
            kk, kids = tree.child_index(v, tree.rec[pos], split)
            m = len(kids)
            groups = np.bincount(rank * m + kk, minlength=link.size * m)
            new_min = int(groups[groups > 0].min()) if (groups > 0).any() else np.iinfo(np.int64).max
            others = np.ones(tree.n_partitions, dtype=bool)
            others[link] = False
            rest = size_of[others & (size_of > 0)]
            a_v = min(new_min, int(rest.min()) if rest.size else np.iinfo(np.int64).max)
            if a_v < k:
                continue
            sc = gain / (anonymity - a_v + 1)
            if sc > best_score:
                best, best_score = v, sc
        if best is None:
            break
        split, gain = info.pop(best)
        trace.append((rounds + 1, cut_label(schema, tree.values[best]), schema.attributes[tree.values[best].attr].name,
                      split))
        kids, recs = tree.specialize(best, split)
        for c, r in zip(kids, recs):
            add_candidate(c, r)
        rounds += 1

    leaves, exact = tree.leaf_class_counts()
    cut, cells, order = _ordered_cells(tree, leaves)
    exact = exact[order]
    keep = exact.sum(axis=1) > 0  # k-anonymity concerns the groups that exist
    release = GeneralizedTable(schema, cut, cells[keep], exact[keep], {}, trace, None)
    release.manifest.update(build_manifest(
        "tds", epsilon=None, parameters={"k": k, "score": "InfoGain/(AnonyLoss+1)", "specializations": rounds},
        noise=None, accountant=None, domain=schema.describe(), release=release.facts(),
        privacy={"model": f"{k}-anonymity", "differentially_private": False,
                 "warning": "exact counts and data-dependent choices: NOT differential privacy"},
        notes=["Fung, Wang and Yu, Anonymizing classification data for privacy preservation, TKDE 2007"]))
    return release
