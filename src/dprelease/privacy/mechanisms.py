"""Mechanisms: each one charges its own epsilon to a budget scope, then draws noise.

The order is always *charge, then draw*: a spend that would overshoot the total
raises :class:`~dprelease.errors.BudgetExceededError` before any noise exists.

Sensitivities are L1 sensitivities under add/remove-one-record neighbours. A
vector of counts over *disjoint* subsets of the records (partitions, histogram
bins, leaf x class cells) has L1 sensitivity 1, so one charge of epsilon covers
the whole vector.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..errors import ParameterError
from .accountant import BudgetScope
from .noise import NoiseSource, geometric_from_discrete_laplace, sequential_gumbel_rounds

__all__ = [
    "noisy_counts",
    "noisy_values",
    "ThresholdRelease",
    "threshold_counts",
    "discrete_laplace_tail",
    "zero_cell_threshold",
    "exponential_mechanism",
    "exponential_top_k",
    "uniform_choice",
    "exponential_mechanism_disjoint",
    "laplace_top_k_implicit",
    "exponential_top_k_implicit",
    "selection_scale",
]


def noisy_counts(
    counts: np.ndarray,
    epsilon: float,
    *,
    scope: BudgetScope,
    noise: NoiseSource,
    label: str,
    sensitivity: int = 1,
) -> np.ndarray:
    """Integer counts plus exact discrete Laplace noise of scale sensitivity/epsilon (int64)."""
    counts = np.asarray(counts, dtype=np.int64)
    scope.spend(epsilon, label)
    return counts + noise.discrete_laplace(sensitivity / epsilon, counts.size).reshape(counts.shape)


def noisy_values(
    values: np.ndarray,
    epsilon: float,
    *,
    scope: BudgetScope,
    noise: NoiseSource,
    label: str,
    sensitivity: float,
) -> np.ndarray:
    """Real values plus floating-point-safe Laplace noise of scale sensitivity/epsilon.

    The true values go into the noise source's measurement (:meth:`NoiseSource.add_laplace`): in secure
    mode OpenDP adds the noise and rounds, so outputs lie on one lattice whatever the true value.
    """
    values = np.asarray(values, dtype=np.float64)
    scope.spend(epsilon, label)
    return noise.add_laplace(values, sensitivity / epsilon)


# Private switch (tests / the audit's broken fixture only): 1e-12 restores the pre-fix rule of issue 8 defect 9
# (generated cells with k = ceil(threshold - 1e-12), real cells with >= threshold). 0.0 = one exact rule.
_THRESHOLD_SLACK = 0.0


def discrete_laplace_tail(epsilon: float, threshold: float, sensitivity: int = 1) -> tuple[int, float]:
    """For X ~ DLap(scale=sensitivity/epsilon): the least integer k >= threshold and log P(X >= k).

    P(X >= k) = t^k / (1 + t) with t = exp(-epsilon/sensitivity), for k >= 1, so ``threshold`` must be > 0.
    ``k = ceil(threshold)`` exactly (no slack): an integer count c passes ``c >= threshold`` iff ``c >= k``,
    the one comparison rule :func:`threshold_counts` applies to real and generated cells alike (issue 8,
    defect 9: a slack of 1e-12 let a generated cell pass with count n at a threshold in (n, n + 1e-12]).
    """
    threshold = float(threshold)
    if not (threshold > 0.0 and math.isfinite(threshold)):
        raise ParameterError(f"a count threshold must be a finite number > 0, got {threshold!r}")
    k = max(1, math.ceil(threshold - _THRESHOLD_SLACK))
    log_t = -epsilon / sensitivity
    return k, k * log_t - math.log1p(math.exp(log_t))


def zero_cell_threshold(n_cells: int, epsilon: float, expected: float) -> float:
    """A threshold at which at most about ``expected`` of ``n_cells`` zero-count cells pass.

    With DLap(1/epsilon) noise, P(X >= k) <= exp(-epsilon * k), so k >= ln(n_cells/expected)/epsilon
    keeps the expected number of passing empty cells <= ``expected``. It uses public inputs only,
    so raising a threshold to it changes no mechanism's privacy.
    """
    return math.log(n_cells / expected) / epsilon


@dataclass(frozen=True, slots=True)
class ThresholdRelease:
    """Noisy counts of explicit cells and of the implicit all-zero cells that passed the threshold.

    ``explicit`` holds a noisy count for every explicit cell; ``passed`` marks those
    >= threshold. ``zero_passed`` holds the noisy counts of the implicit zero cells
    that passed (their identities are chosen by the caller uniformly at random).
    """

    explicit: np.ndarray
    passed: np.ndarray
    zero_passed: np.ndarray


# threshold_counts refuses (from public inputs) when more cells than this are expected to pass.
MAX_EXPECTED_GENERATED = float(1 << 26)


def threshold_counts(
    counts: np.ndarray,
    n_implicit_zeros: int,
    epsilon: float,
    threshold: float,
    *,
    scope: BudgetScope,
    noise: NoiseSource,
    label: str,
) -> ThresholdRelease:
    """Noisy counts of disjoint cells, thresholded, with test-and-generate for zero cells.

    Equivalent to adding DLap(1/epsilon) to every one of ``len(counts) +
    n_implicit_zeros`` disjoint cells and keeping those >= ``threshold``, without
    enumerating the zero cells (DiffPart, Procedure 1 lines 11-17): the number of
    zero cells that pass is Binomial(n, P(X >= k)); each passing value is k plus a
    Geometric draw (the discrete Laplace tail is memoryless).
    """
    counts = np.asarray(counts, dtype=np.int64)
    n_implicit = int(n_implicit_zeros)
    if n_implicit < 0:
        raise ParameterError(f"the number of implicit zero cells must be >= 0, got {n_implicit}")
    k, log_q = discrete_laplace_tail(epsilon, threshold)  # validates the threshold
    q = math.exp(log_q)
    expected = (counts.size + n_implicit) * q  # cells x P(a zero cell passes): public inputs only
    if expected > MAX_EXPECTED_GENERATED:
        raise ParameterError(
            f"test-and-generate would release about {expected:.3g} cells of {counts.size + n_implicit:.3g} "
            f"(threshold {threshold:.4g} at epsilon {epsilon:.4g}); raise the threshold or lower the fan-out")
    explicit = noisy_counts(counts, epsilon, scope=scope, noise=noise, label=label)
    # one rule: an integer passes iff it is >= k = ceil(threshold), as generated cells do
    passed = explicit >= (threshold if _THRESHOLD_SLACK else k)
    n_pass = noise.binomial(n_implicit, q) if n_implicit > 0 else 0
    if n_pass:
        tail = geometric_from_discrete_laplace(noise.discrete_laplace(1.0 / epsilon, n_pass))
        zero_values = k + tail
    else:
        zero_values = np.zeros(0, dtype=np.int64)
    return ThresholdRelease(explicit, passed, zero_values.astype(np.int64))


def selection_scale(epsilon: float, sensitivity: float, *, monotonic: bool = False, rounds: int = 1) -> float:
    """The Gumbel scale b of an exponential mechanism that is epsilon-DP over ``rounds`` rounds (epsilon/rounds each).

    P(i) ~ exp(q_i / b) is (2*Delta/b)-DP (Delta/b for monotone scores; McSherry-Talwar), so
    b = 2*Delta*rounds/epsilon. Computed in exact rational arithmetic and rounded *up* to a float, so that
    2*Delta*rounds/b <= epsilon holds exactly (the safe side).
    """
    target = Fraction(sensitivity) * (1 if monotonic else 2) * int(rounds) / Fraction(epsilon)
    b = float(target)
    if Fraction(b) < target:
        b = math.nextafter(b, math.inf)
    return b


def exponential_mechanism(
    scores: np.ndarray,
    epsilon: float,
    *,
    sensitivity: float,
    scope: BudgetScope,
    noise: NoiseSource,
    label: str,
    monotonic: bool = False,
    log_base_measure: np.ndarray | None = None,
) -> int:
    """Pick index i with probability proportional to mu_i * exp(epsilon * score_i / (2 * sensitivity)).

    Secure mode samples this law exactly (OpenDP's Gumbel report-noisy-max, scale b = 2*sensitivity/epsilon,
    with b * log mu_i folded into the score); seeded mode uses float Gumbel-max in log space,
    argmax(score_i/b + log mu_i + G_i). Either way no exponential is formed (no overflow at N = 10^6).
    ``monotonic=True`` uses epsilon/sensitivity, valid only when every score moves in the same direction
    between neighbours (the paper must justify it). ``log_base_measure`` is a data-independent log weight
    (e.g. log interval length, DiffGen eq. 6).
    """
    scores = np.asarray(scores, dtype=np.float64)
    base = None if log_base_measure is None else np.asarray(log_base_measure, dtype=np.float64)
    if scores.size == 0:
        raise ValueError("exponential mechanism over an empty candidate set")
    if base is not None and base.shape != scores.shape:
        raise ValueError("log_base_measure must have one entry per score")
    scale = selection_scale(epsilon, sensitivity, monotonic=monotonic)
    scope.spend(epsilon, label)
    return noise.gumbel_argmax(scores, scale, base)


def exponential_top_k(
    scores: np.ndarray,
    k: int,
    epsilon: float,
    *,
    sensitivity: float,
    scope: BudgetScope,
    noise: NoiseSource,
    label: str,
    monotonic: bool = False,
) -> np.ndarray:
    """k distinct indices, as k rounds of the exponential mechanism without replacement, each with epsilon/k.

    One-shot Gumbel top-k with per-round epsilon/k (scale b = 2*sensitivity*k/epsilon) has exactly the
    distribution of the k sequential rounds; the total charge is ``epsilon``. Returned in pick order.
    Secure mode: OpenDP's exact noisy top-k with Gumbel noise.
    """
    scores = np.asarray(scores, dtype=np.float64)
    k = int(min(k, scores.size))
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    scale = selection_scale(epsilon, sensitivity, monotonic=monotonic, rounds=k)
    scope.spend(epsilon, label)
    return noise.gumbel_top_k(scores, k, scale)


def uniform_choice(n: int, noise: NoiseSource) -> int:
    """A data-independent uniform choice in range(n); costs no budget."""
    return int(noise.integers(n, 1)[0])


def exponential_mechanism_disjoint(
    score_blocks: list[np.ndarray],
    epsilon: float,
    *,
    sensitivity: float,
    scope: BudgetScope,
    noise: NoiseSource,
    label: str,
    log_base_measures: list[np.ndarray | None] | None = None,
) -> list[int]:
    """One exponential-mechanism choice per block, where the blocks score *disjoint* sets of records.

    Parallel composition: a record moves the scores of one block only, so the
    joint choice is the exponential mechanism over the product space with the
    summed score (sensitivity unchanged) and one charge of ``epsilon`` covers all
    blocks (DiffGen Theorem 4.1, Line 9: the two children of a numeric value).
    The caller guarantees disjointness. Returns one index per block (Gumbel-max).
    """
    if not score_blocks:
        return []
    measures = log_base_measures or [None] * len(score_blocks)
    if len(measures) != len(score_blocks):
        raise ValueError("one log base measure (or None) per block")
    blocks: list[tuple[np.ndarray, np.ndarray | None]] = []
    for scores, base in zip(score_blocks, measures):
        scores = np.asarray(scores, dtype=np.float64)
        if scores.size == 0:
            raise ValueError("exponential mechanism over an empty candidate set")
        base_arr = None if base is None else np.asarray(base, dtype=np.float64)
        if base_arr is not None and base_arr.shape != scores.shape:
            raise ValueError("log_base_measure must have one entry per score")
        blocks.append((scores, base_arr))
    scale = selection_scale(epsilon, sensitivity)
    scope.spend(epsilon, label)
    return [noise.gumbel_argmax(scores, scale, base_arr) for scores, base_arr in blocks]


# --- Top-k selection over explicit candidates plus many implicit ones sharing one score (TF, Bhaskar et al.) --
# Appended for the TF baseline of PrivBasis (section 3). The implicit candidates are never enumerated: the
# largest noisy values among n i.i.d. draws come from the top order statistics of n uniforms,
# log F_(1) = log(U_1)/n, log F_(j) = log F_(j-1) + log(U_j)/(n-j+1) (exact, in log space).


# Secure mode draws every implicit candidate's Laplace noise with OpenDP up to this many candidates.
MAX_MATERIALIZED_IMPLICIT = 1 << 16


def _top_order_log_cdf(n: int, k: int, noise: NoiseSource) -> np.ndarray:
    """log CDF values of the k largest of n i.i.d. continuous draws, in decreasing order."""
    k = int(min(k, n))
    if k <= 0:
        return np.zeros(0, dtype=np.float64)
    u = noise.uniform(k)
    denom = float(n) - np.arange(k, dtype=np.float64)
    return np.cumsum(np.log(u) / denom)


def _select_top(explicit_keys: np.ndarray, implicit_keys: np.ndarray, k: int) -> tuple[np.ndarray, int]:
    keyed = np.concatenate([explicit_keys, implicit_keys])
    k = int(min(k, keyed.size))
    if k <= 0:
        return np.zeros(0, dtype=np.int64), 0
    top = np.argpartition(-keyed, k - 1)[:k]
    top = top[np.argsort(-keyed[top], kind="stable")]
    n_exp = explicit_keys.size
    return top[top < n_exp].astype(np.int64), int((top >= n_exp).sum())


def laplace_top_k_implicit(
    explicit_scores: np.ndarray,
    n_implicit: int,
    implicit_score: float,
    k: int,
    epsilon: float,
    *,
    sensitivity: float,
    scope: BudgetScope,
    noise: NoiseSource,
    label: str,
) -> tuple[np.ndarray, int]:
    """Report-noisy-top-k: Laplace(sensitivity/epsilon) on every score, keep the k largest.

    ``n_implicit`` further candidates all score ``implicit_score``; only the top k of their noisy
    values are drawn (inverse Laplace survival of the uniform order statistics), which has the same
    joint law as drawing all of them. Returns (explicit indices selected, in rank order; number of
    implicit candidates selected). Charges ``epsilon`` once.
    """
    explicit_scores = np.asarray(explicit_scores, dtype=np.float64)
    n_implicit = int(n_implicit)
    scope.spend(epsilon, label)
    scale = sensitivity / epsilon
    ex = noise.add_laplace(explicit_scores, scale)
    if noise.exact_selection and n_implicit <= MAX_MATERIALIZED_IMPLICIT:
        # Secure mode, few implicit candidates: noise every one of them with the same float-safe sampler.
        return _select_top(ex, noise.add_laplace(np.full(n_implicit, float(implicit_score)), scale), k)
    # Known limit (docs/privacy.md): the implicit order statistics are floats computed from secure uniforms.
    log_f = _top_order_log_cdf(n_implicit, k, noise)
    surv = -np.expm1(log_f)  # P(X > x) for the order statistic
    with np.errstate(divide="ignore"):
        x = np.where(surv <= 0.5, -scale * np.log(2.0 * surv), scale * (math.log(2.0) + log_f))
    return _select_top(ex, implicit_score + x, k)


def exponential_top_k_implicit(
    explicit_scores: np.ndarray,
    n_implicit: int,
    implicit_score: float,
    k: int,
    epsilon: float,
    *,
    sensitivity: float,
    scope: BudgetScope,
    noise: NoiseSource,
    label: str,
    monotonic: bool = False,
) -> tuple[np.ndarray, int]:
    """:func:`exponential_top_k` (k rounds without replacement, epsilon/k each, total ``epsilon``) over
    explicit candidates plus ``n_implicit`` candidates sharing ``implicit_score``; the implicit Gumbel keys
    are the top order statistics of n Gumbels. Returns (explicit indices, number of implicit selected)."""
    explicit_scores = np.asarray(explicit_scores, dtype=np.float64)
    n_implicit = int(n_implicit)
    k = int(min(k, explicit_scores.size + n_implicit))
    if k <= 0:
        return np.zeros(0, dtype=np.int64), 0
    scale = selection_scale(epsilon, sensitivity, monotonic=monotonic, rounds=k)
    scope.spend(epsilon, label)
    if noise.exact_selection:
        return sequential_gumbel_rounds(noise, explicit_scores, k, scale, n_implicit, float(implicit_score))
    ex = explicit_scores / scale + noise.gumbel(explicit_scores.size)
    log_f = _top_order_log_cdf(n_implicit, k, noise)
    im = float(implicit_score) / scale - np.log(-log_f)
    return _select_top(ex, im, k)
