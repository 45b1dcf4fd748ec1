"""Coverage of the error bars a release ships: the share of true values inside the published 95 % intervals.

Custodian-side (it reads the raw data). One function per kind of value:

* direct noisy values: every released count against the true count of the same cell -- PrivBasis/TF itemset
  counts (:func:`itemset_rows_coverage`), Basic's cells, all 2^|I| - 1 of them (:func:`basic_cells_coverage`),
  DiffGen's leaf x class counts (:func:`generalized_cells_coverage`), RPS's leaf counts
  (:func:`rps_leaves_coverage`), degree histograms and cumulative counts (:func:`degree_bins_coverage`);
* derived answers: itemset counts on a set-valued release (:func:`itemset_count_coverage`) and range counts on a
  table release (:func:`range_coverage`), over random queries.

Each returns ``{"values": n, "coverage": share inside, "mean_width": mean interval width}``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..data.table import EncodedTable
from ..data.transactions import TransactionDB
from ..privacy.uncertainty import Estimate, Intervals

__all__ = ["summary", "itemset_rows_coverage", "basic_cells_coverage", "generalized_cells_coverage",
           "rps_leaves_coverage", "random_itemsets", "itemset_count_coverage", "range_coverage",
           "estimates_summary", "setvalued_coverage", "table_coverage", "degree_bins_coverage", "degree_ranks_coverage",
           "degree_truth", "leaf_truth"]


def summary(covered: np.ndarray, width: np.ndarray, truth: np.ndarray | None = None) -> dict[str, float]:
    covered = np.asarray(covered, dtype=bool)
    out = {"values": int(covered.size), "coverage": float(covered.mean()) if covered.size else float("nan"),
           "mean_width": float(np.mean(width)) if covered.size else float("nan")}
    if truth is not None:
        out["mean_truth"] = float(np.mean(truth)) if covered.size else float("nan")
    return out


def estimates_summary(estimates: list[Estimate], truth: np.ndarray, *, noise_only: bool = False
                      ) -> dict[str, float]:
    """Coverage of estimates' intervals (``noise_only``: of their noise-only intervals, where they have one)."""
    def ends(e: Estimate) -> tuple[float, float]:
        if noise_only and e.noise_low is not None and e.noise_high is not None:
            return e.noise_low, e.noise_high
        return e.low, e.high

    pairs = np.asarray([ends(e) for e in estimates], dtype=np.float64).reshape(-1, 2)
    truth = np.asarray(truth, dtype=np.float64)
    return summary((pairs[:, 0] <= truth) & (truth <= pairs[:, 1]), pairs[:, 1] - pairs[:, 0], truth)


def _of(intervals: Intervals | None, truth: np.ndarray) -> dict[str, float]:
    if intervals is None:
        return {"values": 0, "coverage": float("nan"), "mean_width": float("nan")}
    return summary(intervals.covers(truth), intervals.high - intervals.low, truth)


def itemset_rows_coverage(db: TransactionDB, release: Any) -> dict[str, float]:
    """An itemset release's rows (PrivBasis, TF): each count's interval against the itemset's true support."""
    from ..itemsets.exact import itemset_supports

    truth = itemset_supports(db, [tuple(s) for s in release.itemsets]).astype(np.float64)
    return _of(release.intervals(), truth)


def basic_cells_coverage(db: TransactionDB, release: Any) -> dict[str, float]:
    """Basic: every cell of the 2^|I| - 1 (an unreleased cell was released as 0, interval [0, h])."""
    from ..engine.local import as_transaction_data
    from ..privacy.uncertainty import count_intervals

    truth = np.asarray(as_transaction_data(db).record_mask_counts()[1:], dtype=np.float64)
    bits = 1 << np.arange(release.universe.size, dtype=np.int64)
    masks = np.asarray([int(np.sum(bits[np.asarray(s, dtype=np.int64)])) for s in release.itemsets], dtype=np.int64)
    values = np.zeros(truth.size)
    values[masks - 1] = np.asarray(release.counts, dtype=np.float64)
    return _of(count_intervals(values, float(release.cell_scale), lower=0.0), truth)


def generalized_cells_coverage(table: EncodedTable, release: Any) -> dict[str, float]:
    """DiffGen: each leaf x class count against the true number of records in that cell."""
    cells = release.generalize(table)  # n x d cut indices of every raw record
    lookup = {tuple(row): i for i, row in enumerate(np.asarray(release.cells).tolist())}
    rows = np.asarray([lookup.get(tuple(r), -1) for r in cells.tolist()], dtype=np.int64)
    n_cls = release.schema.n_classes
    ok = rows >= 0
    truth = np.bincount(rows[ok] * n_cls + np.asarray(table.y)[ok], minlength=release.cells.shape[0] * n_cls)
    return _of(release.intervals(), truth.astype(np.float64))


def leaf_truth(table: EncodedTable, release: Any) -> np.ndarray:
    """The true number of records in each leaf box of a synthetic table's ``leaves`` (RPS)."""
    from ..relational.rps import table_domain, table_points
    from .ranges import RangeWorkload, answer, points_data

    domain = table_domain(table.schema)
    lo, hi = np.asarray(release.leaves.lo, dtype=np.float64), np.asarray(release.leaves.hi, dtype=np.float64)
    work = RangeWorkload(np.full(lo.shape[0], lo.shape[1]), lo, hi, np.ones(lo.shape, dtype=bool))
    return np.asarray(answer(points_data(table_points(table), domain), work), dtype=np.float64)


def rps_leaves_coverage(table: EncodedTable, release: Any) -> dict[str, float]:
    """RPS: each leaf's count against the true number of records in its box."""
    return _of(release.intervals(), leaf_truth(table, release))


def random_itemsets(db: TransactionDB, n: int, rng: np.random.Generator, max_length: int = 3
                    ) -> list[tuple[int, ...]]:
    """Random queries that occur in the data: a random record's random subset of 1..max_length items (evaluation
    only: it reads the raw data)."""
    offsets = np.asarray(db.offsets, dtype=np.int64)
    lengths = np.diff(offsets)
    rows = np.flatnonzero(lengths > 0)
    out: list[tuple[int, ...]] = []
    for r in rng.choice(rows, size=n).tolist():
        items = np.asarray(db.items[offsets[r]:offsets[r + 1]], dtype=np.int64)
        k = int(rng.integers(1, min(max_length, items.size) + 1))
        out.append(tuple(sorted(rng.choice(items, size=k, replace=False).tolist())))
    return out


def itemset_count_coverage(db: TransactionDB, release: Any, queries: list[tuple[int, ...]]) -> dict[str, float]:
    """Derived: ``release.count(itemset)`` against the true support, over ``queries``."""
    from ..itemsets.exact import itemset_supports

    truth = itemset_supports(db, queries).astype(np.float64)
    return estimates_summary([release.count(q) for q in queries], truth)


def range_coverage(table: EncodedTable, release: Any, n_queries: int, seed: int) -> dict[str, dict[str, float]]:
    """Derived: range counts on a table release (DiffGen's cells or RPS's leaves as boxes) against the true counts,
    over :func:`dprelease.evaluation.ranges.make_range_workload`'s random queries: the published interval
    (``"interval"``) and the noise-only one around the uniform-spreading value (``"noise_only"``)."""
    from ..relational.rps import table_domain, table_points
    from ..release.queries import box_query, generalized_count
    from ..release.table import GeneralizedTable
    from .ranges import answer, make_range_workload, points_data

    domain = table_domain(table.schema)
    work = make_range_workload(domain, n_queries, seed=seed)
    truth = answer(points_data(table_points(table), domain), work)
    estimates = []
    for q in range(work.n_queries):
        dims = box_query(table.schema, work.lo[q], work.hi[q])
        estimates.append(generalized_count(release, dims) if isinstance(release, GeneralizedTable)
                         else release.count_query(dims))
    return {"interval": estimates_summary(estimates, truth),
            "noise_only": estimates_summary(estimates, truth, noise_only=True)}


def setvalued_coverage(db: TransactionDB, release: Any, n_queries: int, seed: int) -> dict[str, object] | None:
    """``evaluate counting``'s coverage: Basic's cells (direct) or ``count(itemset)`` over random itemsets of the
    data (derived); None when the release states no noise scale."""
    if release.cell_scale is None and getattr(release, "pair_sd", None) is None:
        return None
    if str(release.manifest.get("algorithm", "")).lower() == "basic":
        return {"kind": "direct: every cell", **basic_cells_coverage(db, release)}
    queries = random_itemsets(db, int(min(n_queries, 1000)), np.random.default_rng(seed))
    return {"kind": "derived: count(itemset) over random itemsets of 1-3 items of random records",
            **itemset_count_coverage(db, release, queries)}


def table_coverage(table: EncodedTable, release: Any, n_queries: int, seed: int) -> dict[str, object] | None:
    """``evaluate ranges``' coverage for a table read back with its error bars (a generalized table's cells, a
    synthetic table's leaves) and its range counts; None for a table without them (Mondrian, TDS)."""
    if getattr(release, "intervals", lambda: None)() is None:
        return None
    cells = (rps_leaves_coverage(table, release) if getattr(release, "leaves", None) is not None
             else generalized_cells_coverage(table, release))
    return {"cells": cells, "ranges": range_coverage(table, release, int(min(n_queries, 1000)), seed)}


def degree_bins_coverage(true_degrees: np.ndarray, release: Any) -> dict[str, float]:
    """A degree release's counts (nodes per degree range, or cumulative/tail counts) against the true counts of
    the given degrees (the raw graph's: with theta at or above the largest degree the projection keeps every
    edge, so they are the counts the noise was added to)."""
    if release.intervals() is None or release.bins is None:
        return {"values": 0, "coverage": float("nan"), "mean_width": float("nan")}
    return _of(release.intervals(), degree_truth(true_degrees, release))


def degree_truth(true_degrees: np.ndarray, release: Any) -> np.ndarray:
    """What each of a degree release's intervals estimates, from the given degrees: the nodes in each degree
    range (:attr:`bins`), or, for Hay's release (bins None), line i's i-th of the m largest degrees, zero-padded."""
    deg = np.sort(np.asarray(true_degrees, dtype=np.int64))
    if release.bins is None:
        m = int(np.asarray(release.degrees).size)
        top = deg[-m:] if deg.size >= m else np.concatenate([np.zeros(m - deg.size, dtype=np.int64), deg])
        return top.astype(np.float64)
    bins = np.asarray(release.bins, dtype=np.int64)
    return (np.searchsorted(deg, bins[:, 1], side="right")
            - np.searchsorted(deg, bins[:, 0], side="left")).astype(np.float64)


def degree_ranks_coverage(true_degrees: np.ndarray, release: Any) -> dict[str, float]:
    """Hay's release: line i against the i-th of the m largest true degrees (zero-padded), the value its noise was
    added to (with theta at or above the largest degree the projection keeps every edge)."""
    errors = release.intervals()
    if errors is None or release.bins is not None:
        return {"values": 0, "coverage": float("nan"), "mean_width": float("nan")}
    return _of(errors, degree_truth(true_degrees, release))
