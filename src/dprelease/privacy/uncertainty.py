"""Error bars of released values, from public quantities only.

Every noisy value a release publishes was drawn with a noise scale that is a function of public inputs (epsilon,
the budget split, the structure the algorithm chose from noisy values). So the uncertainty of a released value is
post-processing of what the release already paid for: these functions read scales, never data.

The formulas (level ``L``, alpha = 1 - L; 95 % unless said otherwise):

* Laplace(b): sd = sqrt(2) b; the central interval is value +- b ln(1/alpha) (exact: P(|X| > t) = exp(-t/b)).
* Discrete Laplace(b) (the integer counts), t = exp(-1/b): Var = 2t/(1-t)^2 (a little below 2 b^2);
  P(|X| > k) = 2 t^(k+1)/(1+t), so the half-width is the least integer k with that tail <= alpha (exact).
* A weighted sum of independent Laplace or discrete Laplace terms: sd = sqrt(sum w_i^2 Var_i); half-width
  z sd with z = ln(1/alpha)/sqrt(2), the ratio of a single Laplace's half-width to its sd (2.12 at 95 %, where
  a normal has 1.96). A sum of Laplace terms is a normal scale mixture whose mixing variance is less spread
  than a single term's, so its tail at z sd lies between the normal's and the single Laplace's: this is a
  stated approximation, checked by simulation in the tests. Sums of integers round the half-width up to an
  integer (an integer error within the interval is within the rounded one).
* A value clamped at a lower bound ``L`` the true value respects (a count at 0): released v = max(L, v_raw), so
  [max(L, v - h), v + h] holds the true value whenever [v_raw - h, v_raw + h] does (v = L means v_raw <= L).

What the intervals do NOT account for is said beside them: values released only when their noisy value passed a
threshold (a selection effect), and structure (records stopped early, generalized, spread uniformly in a box)
add error that noise-only intervals ignore; their coverage is measured (docs/accuracy.md), not promised.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

__all__ = ["LEVEL", "Estimate", "Intervals", "laplace_sd", "laplace_half_width", "dlap_variance", "dlap_sd",
           "dlap_half_width", "sum_multiplier", "sum_sd", "sum_half_width", "count_intervals", "sum_estimate",
           "manifest_section"]

LEVEL = 0.95  # the level of every interval dprelease publishes


def _alpha(level: float) -> float:
    if not 0.0 < level < 1.0:
        raise ValueError(f"an interval level must lie in (0, 1), got {level!r}")
    return 1.0 - level


@dataclass(frozen=True)
class Estimate:
    """One answer with its uncertainty: ``value``, standard deviation ``sd`` of its noise, an interval
    [``low``, ``high``] at ``level``, and ``label``: what the interval means and what it ignores."""

    value: float
    sd: float
    low: float
    high: float
    level: float = LEVEL
    label: str = ""
    # where structure makes [low, high] wider than the noise alone: the noise-only interval around the value
    noise_low: float | None = None
    noise_high: float | None = None

    def covers(self, truth: float) -> bool:
        """Whether ``truth`` lies in the interval (for measuring coverage)."""
        return bool(self.low <= truth <= self.high)


@dataclass(frozen=True, eq=False)
class Intervals:
    """Per-value uncertainty of a release's direct noisy values, as arrays (no pandas): ``value``, ``sd``,
    ``low``, ``high`` (same length), the ``level`` and ``label`` (what the intervals account for)."""

    value: np.ndarray
    sd: np.ndarray
    low: np.ndarray
    high: np.ndarray
    level: float = LEVEL
    label: str = ""

    def __len__(self) -> int:
        return int(np.asarray(self.value).size)

    def covers(self, truth: np.ndarray) -> np.ndarray:
        """Per value: whether ``truth`` lies in its interval."""
        truth = np.asarray(truth, dtype=np.float64)
        return np.asarray((self.low <= truth) & (truth <= self.high), dtype=bool)


def laplace_sd(scale: float) -> float:
    """The standard deviation of Laplace(b): sqrt(2) b."""
    return math.sqrt(2.0) * float(scale)


def laplace_half_width(scale: float, level: float = LEVEL) -> float:
    """Half-width of the central interval of Laplace(b): b ln(1/alpha) (2.996 b at 95 %)."""
    return float(scale) * math.log(1.0 / _alpha(level))


def dlap_variance(scale: float) -> float:
    """Variance of the discrete Laplace of scale b: 2t/(1-t)^2 with t = exp(-1/b)."""
    if scale <= 0:
        return 0.0
    t = math.exp(-1.0 / float(scale))
    return 2.0 * t / (1.0 - t) ** 2


def dlap_sd(scale: float) -> float:
    """Standard deviation of the discrete Laplace of scale b."""
    return math.sqrt(dlap_variance(scale))


def dlap_half_width(scale: float, level: float = LEVEL) -> int:
    """The least integer k with P(|X| > k) = 2 t^(k+1)/(1+t) <= alpha, X ~ DLap(b), t = exp(-1/b)."""
    alpha = _alpha(level)
    if scale <= 0:
        return 0
    log_t = -1.0 / float(scale)
    need = math.log(alpha * (1.0 + math.exp(log_t)) / 2.0) / log_t  # k + 1 >= need
    return max(0, math.ceil(need - 1e-12) - 1)


def sum_multiplier(level: float = LEVEL) -> float:
    """z = ln(1/alpha)/sqrt(2): a sum's half-width in units of its sd (a single Laplace's ratio)."""
    return math.log(1.0 / _alpha(level)) / math.sqrt(2.0)


def sum_sd(scales: Sequence[float] | np.ndarray, weights: Sequence[float] | np.ndarray | None = None, *,
           discrete: bool = True) -> float:
    """sd of sum_i w_i X_i, X_i independent (discrete) Laplace of scale b_i."""
    b = np.asarray(scales, dtype=np.float64).ravel()
    w = np.ones_like(b) if weights is None else np.asarray(weights, dtype=np.float64).ravel()
    if discrete:
        t = np.exp(-1.0 / np.where(b > 0, b, np.inf))
        var = np.where(b > 0, 2.0 * t / (1.0 - t) ** 2, 0.0)
    else:
        var = 2.0 * b**2
    return float(math.sqrt(float(np.sum(w**2 * var))))


def sum_half_width(scales: Sequence[float] | np.ndarray, weights: Sequence[float] | np.ndarray | None = None, *,
                   discrete: bool = True, integer: bool = False, level: float = LEVEL) -> float:
    """Half-width of the interval of a weighted sum of independent (discrete) Laplace terms: exact for one term
    of weight 1, else z sd (:func:`sum_multiplier`); rounded up to an integer for integer sums."""
    b = np.asarray(scales, dtype=np.float64).ravel()
    w = np.ones_like(b) if weights is None else np.asarray(weights, dtype=np.float64).ravel()
    if b.size == 1 and float(w[0]) == 1.0:
        return float(dlap_half_width(float(b[0]), level)) if discrete else laplace_half_width(float(b[0]), level)
    half = sum_multiplier(level) * sum_sd(b, w, discrete=discrete)
    return float(math.ceil(half - 1e-9)) if integer else half


def count_intervals(values: np.ndarray, scale: float | np.ndarray, *, discrete: bool = True,
                    lower: float | None = 0.0, level: float = LEVEL, label: str = "") -> Intervals:
    """Per-value intervals of counts each carrying one (discrete) Laplace draw of ``scale`` (one scale, or one
    per value), clamped at ``lower`` (None: not clamped): [max(lower, v - h), v + h]."""
    v = np.asarray(values, dtype=np.float64).ravel()
    b = np.broadcast_to(np.asarray(scale, dtype=np.float64), v.shape)
    uniq, inverse = np.unique(b, return_inverse=True)
    if discrete:
        sd_u = np.asarray([dlap_sd(float(s)) for s in uniq])
        half_u = np.asarray([float(dlap_half_width(float(s), level)) for s in uniq])
    else:
        sd_u = np.asarray([laplace_sd(float(s)) for s in uniq])
        half_u = np.asarray([laplace_half_width(float(s), level) for s in uniq])
    sd = sd_u[inverse.reshape(-1)] if v.size else np.zeros(0)
    half = half_u[inverse.reshape(-1)] if v.size else np.zeros(0)
    low = v - half
    if lower is not None:
        low = np.maximum(low, float(lower))
    return Intervals(v, sd, low, v + half, level, label)


def sum_estimate(value: float, scales: Sequence[float] | np.ndarray, weights: Sequence[float] | np.ndarray | None
                 = None, *, discrete: bool = True, integer: bool = False, lower: float | None = 0.0,
                 level: float = LEVEL, label: str = "") -> Estimate:
    """An estimate of a weighted sum of noisy values: the sum's sd and interval, clamped at ``lower``."""
    sd = sum_sd(scales, weights, discrete=discrete)
    half = sum_half_width(scales, weights, discrete=discrete, integer=integer, level=level) if len(
        np.atleast_1d(np.asarray(scales))) else 0.0
    low = value - half if lower is None else max(float(lower), value - half)
    return Estimate(float(value), sd, float(low), float(value + half), level, label)


def manifest_section(*, accounts_for: str, formula: str, ignores: str | None = None, columns: Sequence[str] = (),
                     level: float = LEVEL, **facts: object) -> dict[str, object]:
    """The manifest's ``uncertainty`` section: the level, the noise the intervals account for, the formula,
    what they ignore, and where they are written (all public)."""
    section: dict[str, object] = {"level": level, "accounts_for": accounts_for, "formula": formula}
    if ignores:
        section["ignores"] = ignores
    if columns:
        section["columns"] = list(columns)
    section.update(facts)
    return section


def shifted_clamp_intervals(values: np.ndarray, shift: np.ndarray | float, scale: float, *, level: float = LEVEL,
                            label: str = "") -> Intervals:
    """Intervals of counts released as round(max(0, x - d)) from x = count + DLap(b) (Norm-Sub: one public shift
    d per group, itself a function of the noisy values): x lies within 0.5 of v + d when v > 0, and below d + 0.5
    when v = 0, so [v + d - h - 0.5, v + d + h + 0.5] (low 0 where v = 0, and never below 0) holds the count
    whenever x's own interval does. The interval is not centred on the value: the shift moved the value."""
    v = np.asarray(values, dtype=np.float64).ravel()
    d = np.broadcast_to(np.asarray(shift, dtype=np.float64).ravel() if np.ndim(shift) else np.asarray(shift), v.shape)
    h = float(dlap_half_width(scale, level))
    low = np.where(v > 0, np.maximum(v + d - h - 0.5, 0.0), 0.0)
    high = np.maximum(v + d + h + 0.5, 0.0)
    return Intervals(v, np.full(v.shape, dlap_sd(scale)), low, high, level, label)
