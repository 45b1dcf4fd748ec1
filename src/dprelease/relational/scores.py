"""Score functions of DiffGen section 4.2 (and TDS's InfoGain/AnonyLoss), on class-count tables.

A candidate ``v`` is scored from ``T[c, cls] = |D_c^cls|`` for ``c in child(v)``:

* ``Max(D, v) = sum_c max_cls |D_c^cls|`` (eq. 4), sensitivity 1;
* ``InfoGain(D, v) = H_v(D) - sum_c |D_c|/|D_v| H_c(D)`` (eq. 3), in bits,
  sensitivity ``log2 |classes|`` (the paper's range argument).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["SCORES", "entropy_rows", "max_score", "info_gain", "score_table", "score_sensitivity",
           "split_scores"]

SCORES = ("max", "infogain")


def entropy_rows(counts: np.ndarray) -> np.ndarray:
    """Class entropy (bits) of each row of a count matrix; 0 for an empty row."""
    counts = np.asarray(counts, dtype=np.float64)
    n = counts.sum(axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(n > 0, counts / np.where(n > 0, n, 1.0), 0.0)
        terms = np.where(p > 0, -p * np.log2(np.where(p > 0, p, 1.0)), 0.0)
    return terms.sum(axis=-1)


def max_score(table: np.ndarray) -> float:
    """Eq. 4: the sum over children of the largest class count."""
    table = np.asarray(table)
    return float(table.max(axis=-1).sum()) if table.size else 0.0


def info_gain(table: np.ndarray) -> float:
    """Eq. 3: entropy of the parent minus the size-weighted entropy of the children (bits)."""
    table = np.asarray(table, dtype=np.float64)
    n = table.sum()
    if n <= 0:
        return 0.0
    parent = float(entropy_rows(table.sum(axis=0)))
    child = float((table.sum(axis=1) * entropy_rows(table)).sum() / n)
    return max(0.0, parent - child)


def score_table(table: np.ndarray, score: str) -> float:
    return max_score(table) if score == "max" else info_gain(table)


def score_sensitivity(score: str, n_classes: int) -> float:
    """Delta u: 1 for Max; log2 |Omega(A^cls)| for InfoGain (section 4.2)."""
    return 1.0 if score == "max" else math.log2(n_classes)


def split_scores(left: np.ndarray, total: np.ndarray, score: str) -> np.ndarray:
    """Scores of many binary splits at once: ``left[j]`` are the class counts left of split j."""
    left = np.asarray(left, dtype=np.float64)
    right = np.asarray(total, dtype=np.float64)[None, :] - left
    if score == "max":
        return left.max(axis=1) + right.max(axis=1)
    n = float(np.sum(total))
    if n <= 0:
        return np.zeros(left.shape[0])
    parent = float(entropy_rows(np.asarray(total, dtype=np.float64)))
    cond = (left.sum(1) * entropy_rows(left) + right.sum(1) * entropy_rows(right)) / n
    return np.maximum(0.0, parent - cond)
