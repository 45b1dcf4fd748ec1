"""Clopper-Pearson bounds on the privacy loss of one event (docs/audit.md, "Statistics").

For an event E observed ``a`` times in ``n`` runs on D and ``b`` times in ``m`` runs on D', the
privacy loss ln(P[E|D] / P[E|D']) is at least ln(p_lo) - ln(q_hi), where p_lo is a one-sided lower
Clopper-Pearson bound on P[E|D] and q_hi a one-sided upper bound on P[E|D'], each at level ``level``;
by the union bound the difference is a lower bound with confidence at least 1 - 2*level.
"""

from __future__ import annotations

import numpy as np
from scipy.special import betaincinv  # scipy.stats would take seconds to import

__all__ = ["cp_lower", "cp_upper", "log_ratio_lower_bound", "smoothed_log_ratio"]


def cp_lower(successes: np.ndarray, trials: int, level: float) -> np.ndarray:
    """One-sided lower Clopper-Pearson bound: P[p < bound] <= ``level`` (0 when there is no success)."""
    x = np.asarray(successes, dtype=np.float64)
    out = np.zeros(x.shape, dtype=np.float64)
    pos = x > 0
    out[pos] = betaincinv(x[pos], trials - x[pos] + 1.0, level)  # Beta(x, n-x+1).ppf(level)
    return out


def cp_upper(successes: np.ndarray, trials: int, level: float) -> np.ndarray:
    """One-sided upper Clopper-Pearson bound: P[p > bound] <= ``level`` (1 when every trial succeeded)."""
    x = np.asarray(successes, dtype=np.float64)
    out = np.ones(x.shape, dtype=np.float64)
    below = x < trials
    out[below] = betaincinv(x[below] + 1.0, trials - x[below], 1.0 - level)  # Beta(x+1, n-x).ppf(1-level)
    return out


def log_ratio_lower_bound(a: np.ndarray, n: int, b: np.ndarray, m: int, level: float) -> np.ndarray:
    """Lower confidence bound (confidence >= 1 - 2*level) on ln(P[E|D]/P[E|D']) from counts a/n on D, b/m on D'.

    -inf where ``a`` is 0 (nothing can be concluded in this direction).
    """
    p_lo = cp_lower(a, n, level)
    q_hi = cp_upper(b, m, level)
    with np.errstate(divide="ignore"):
        return np.log(p_lo) - np.log(q_hi)


def smoothed_log_ratio(a: np.ndarray, n: int, b: np.ndarray, m: int) -> np.ndarray:
    """Point estimate ln((a + 1/2)/(n + 1)) - ln((b + 1/2)/(m + 1)), finite for every count (tie-breaker)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    return np.log((a + 0.5) / (n + 1.0)) - np.log((b + 0.5) / (m + 1.0))
