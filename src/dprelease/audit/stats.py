"""Clopper-Pearson bounds on the privacy loss of one event (docs/audit.md, "Statistics").

For an event E observed ``a`` times in ``n`` runs on D and ``b`` times in ``m`` runs on D', the
privacy loss ln(P[E|D] / P[E|D']) is at least ln(p_lo) - ln(q_hi), where p_lo is a one-sided lower
Clopper-Pearson bound on P[E|D] and q_hi a one-sided upper bound on P[E|D'], each at level ``level``;
by the union bound the difference is a lower bound with confidence at least 1 - 2*level.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import betaincinv  # scipy.stats would take seconds to import

__all__ = ["cp_lower", "cp_upper", "detectable_epsilon", "expected_log_ratio_bound", "log_ratio_lower_bound",
           "smoothed_log_ratio"]


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


def expected_log_ratio_bound(p: float, q: float, n: float, level: float) -> float:
    """The bound :func:`log_ratio_lower_bound` gives when the counts are their expectations n*p and n*q.

    Clopper-Pearson bounds are Beta quantiles, which take fractional counts; ``-inf`` when p is 0.
    """
    if p <= 0.0:
        return -math.inf
    p_lo = float(betaincinv(n * p, n - n * p + 1.0, level))
    q_hi = 1.0 if q >= 1.0 else float(betaincinv(n * q + 1.0, n - n * q, 1.0 - level))
    return math.log(p_lo) - math.log(q_hi) if p_lo > 0 else -math.inf


def detectable_epsilon(p: float, n: float, level: float, claim: float) -> float:
    """The audit's power for an event seen with rate ``p`` on the side in the numerator of its direction.

    The smallest true loss e such that an event with rate p on that side and p * exp(-e) on the other
    would give, at the expected counts of ``n`` runs per side, a lower bound above ``claim``:
    solves ``expected_log_ratio_bound(p, p * exp(-e), n, level) = claim`` (the left side grows with e).
    ``inf`` when even an event that never happens on the other side would not be flagged (p * n too small).
    """
    if not (p > 0.0 and n > 0):
        return math.inf
    if expected_log_ratio_bound(p, 0.0, n, level) <= claim:
        return math.inf
    lo, hi = 0.0, 1.0
    while expected_log_ratio_bound(p, p * math.exp(-hi), n, level) <= claim:
        lo, hi = hi, 2.0 * hi
        if hi > 1e3:
            return math.inf
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if expected_log_ratio_bound(p, p * math.exp(-mid), n, level) > claim:
            hi = mid
        else:
            lo = mid
    return hi
