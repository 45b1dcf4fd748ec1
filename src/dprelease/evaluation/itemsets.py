"""Utility of published top-k itemsets (PrivBasis section 5), for the custodian: these read the raw data.

* FNR = (false negatives) / k against the exact top k (tie rule of
  :func:`dprelease.itemsets.exact.top_k_itemsets`), as the paper.
* Tie-aware recall with tolerance tau (counts): let c_k be the exact support of the k-th most frequent
  itemset. A published itemset is a *hit* when its exact support is at least max(1, c_k - tau); the recall is
  min(k, hits) / k. With tau = 0 and no ties at c_k it equals 1 - FNR; when many itemsets tie at (or lie
  within tau of) c_k, publishing any of them is not a miss. On dense data (mushroom: eight itemsets share
  c_k at k = 100) the FNR counts a tied itemset the tie rule happened to leave out as a miss; this does not.
  A natural tau is the noise standard deviation of the k-th published count (``count_noise_sd_at_k`` in a
  PrivBasis manifest): an itemset within the noise scale of f_k cannot be told apart from the k-th.
* Median relative error over the published itemsets of |nf(X) - f(X)| / f(X) (infinite when f(X) = 0).

An empty release scores FNR 1, recall 0 and a median relative error of NaN (nothing to measure).
"""

from __future__ import annotations

import numpy as np

from ..data.transactions import TransactionDB
from ..itemsets.exact import itemset_supports, top_k_itemsets

__all__ = ["itemset_metrics", "tie_aware_recall"]


def tie_aware_recall(published_supports: np.ndarray, kth_count: int, k: int, tolerance: float = 0.0) -> float:
    """min(k, #published with support >= max(1, c_k - tolerance)) / k (module docstring)."""
    if tolerance < 0 or not np.isfinite(tolerance):
        raise ValueError(f"tolerance must be a finite number >= 0, got {tolerance}")
    level = max(1.0, float(kth_count) - float(tolerance))
    hits = int(np.count_nonzero(np.asarray(published_supports, dtype=np.float64) >= level))
    return min(k, hits) / k


def itemset_metrics(raw: TransactionDB, published: list[tuple[int, ...]], frequencies: np.ndarray, k: int,
                    true_top: list[tuple[tuple[int, ...], int]] | None = None, *,
                    tolerance: float = 0.0) -> dict[str, float]:
    """FNR, tie-aware recall (with ``tolerance`` in counts), median relative error, published size.

    ``true_top`` (the exact top k with supports, as :func:`top_k_itemsets` returns it) may be passed to
    avoid mining again. Duplicated published itemsets count once.
    """
    true_top = true_top if true_top is not None else top_k_itemsets(raw, k)
    truth = {s for s, _ in true_top}
    kth = int(true_top[-1][1]) if true_top else 0
    unique = list(dict.fromkeys(published))
    fnr = (len(truth) - len(truth & set(unique))) / k
    if unique:
        supports = itemset_supports(raw, list(published))
        f = supports / raw.n_records
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = np.where(f > 0, np.abs(np.asarray(frequencies, dtype=np.float64) - f) / np.where(f > 0, f, 1.0),
                           np.inf)
        mre = float(np.median(rel))
        once = dict(zip(published, supports.tolist()))
        recall = tie_aware_recall(np.asarray(list(once.values())), kth, k, tolerance)
    else:
        mre = float("nan")
        recall = 0.0
    return {"fnr": float(fnr), "tie_aware_recall": float(recall), "tolerance": float(tolerance),
            "median_relative_error": mre, "published": float(len(published))}
