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
from .accountant import BudgetScope, check_epsilon, check_sensitivity, round_up
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
    "laplace_scale",
]


def _check(name: str, epsilon: float, sensitivity: float) -> tuple[float, float]:
    """Validate a mechanism's epsilon and sensitivity where they enter (ParameterError naming the mechanism)."""
    return check_epsilon(epsilon, f"{name}: epsilon"), check_sensitivity(sensitivity, f"{name}: sensitivity")


def laplace_scale(epsilon: float, sensitivity: float) -> float:
    """The (discrete) Laplace scale sensitivity/epsilon, in exact rationals rounded up: sensitivity/scale <= epsilon.

    >>> laplace_scale(0.5, 1)
    2.0
    >>> 1 / laplace_scale(0.1, 1) <= 0.1
    True
    """
    return round_up(Fraction(sensitivity) / Fraction(epsilon))


def noisy_counts(
    counts: np.ndarray,
    epsilon: float,
    *,
    scope: BudgetScope,
    noise: NoiseSource,
    label: str,
    sensitivity: int = 1,
) -> np.ndarray:
    """Integer counts plus exact discrete Laplace noise of scale sensitivity/epsilon (int64).

    ``sensitivity`` is the L1 sensitivity of the whole vector (1 for counts of disjoint cells).

    >>> from dprelease.privacy import BudgetAccountant, SeededNoise
    >>> acc = BudgetAccountant(1.0)
    >>> noisy_counts([10, 0, 3], 1.0, scope=acc.root(), noise=SeededNoise(0), label="cells").dtype
    dtype('int64')
    >>> acc.ledger[0].mechanism, acc.ledger[0].scale
    ('discrete_laplace', 1.0)
    """
    eps, sens = _check("noisy_counts", epsilon, sensitivity)
    counts = np.asarray(counts, dtype=np.int64)
    scale = laplace_scale(eps, sens)
    scope.spend(eps, label, mechanism="discrete_laplace", sensitivity=sens, scale=scale)
    out: np.ndarray = counts + noise.discrete_laplace(scale, counts.size).reshape(counts.shape)
    return out


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

    >>> from dprelease.privacy import BudgetAccountant, SecureNoise
    >>> acc = BudgetAccountant(1.0)
    >>> out = noisy_values([0.5, 2.0], 1.0, sensitivity=2.0, scope=acc.root(), noise=SecureNoise(), label="v")
    >>> out.shape, acc.ledger[0].scale
    ((2,), 2.0)
    """
    eps, sens = _check("noisy_values", epsilon, sensitivity)
    values = np.asarray(values, dtype=np.float64)
    scale = laplace_scale(eps, sens)
    scope.spend(eps, label, mechanism="laplace", sensitivity=sens, scale=scale)
    return noise.add_laplace(values, scale)


# Private switch (tests / the audit's broken fixture only): 1e-12 restores an old, broken rule
# (generated cells with k = ceil(threshold - 1e-12), real cells with >= threshold). 0.0 = one exact rule.
_THRESHOLD_SLACK = 0.0


def discrete_laplace_tail(epsilon: float, threshold: float, sensitivity: int = 1) -> tuple[int, float]:
    """For X ~ DLap(scale=sensitivity/epsilon): the least integer k >= threshold and log P(X >= k).

    P(X >= k) = t^k / (1 + t) with t = exp(-1/scale), for k >= 1, so ``threshold`` must be > 0; the scale is
    :func:`laplace_scale`, the one the noise is drawn with. ``k = ceil(threshold)`` exactly (no slack): an
    integer count c passes ``c >= threshold`` iff ``c >= k``, the one comparison rule :func:`threshold_counts`
    applies to real and generated cells alike (a slack of 1e-12 once let a generated cell pass
    with count n at a threshold in (n, n + 1e-12]).

    >>> k, log_q = discrete_laplace_tail(1.0, 2.0000000000000004)
    >>> k
    3
    """
    eps, sens = _check("discrete_laplace_tail", epsilon, sensitivity)
    threshold = float(threshold)
    if not (threshold > 0.0 and math.isfinite(threshold)):
        raise ParameterError(f"a count threshold must be a finite number > 0, got {threshold!r}")
    k = max(1, math.ceil(threshold - _THRESHOLD_SLACK))
    log_t = -1.0 / laplace_scale(eps, sens)
    return k, k * log_t - math.log1p(math.exp(log_t))


def zero_cell_threshold(n_cells: int, epsilon: float, expected: float) -> float:
    """A threshold at which at most about ``expected`` of ``n_cells`` zero-count cells pass.

    With DLap(1/epsilon) noise, P(X >= k) <= exp(-epsilon * k), so k >= ln(n_cells/expected)/epsilon
    keeps the expected number of passing empty cells <= ``expected``. It uses public inputs only,
    so raising a threshold to it changes no mechanism's privacy.
    """
    eps = check_epsilon(epsilon, "zero_cell_threshold: epsilon")
    exp_ = check_epsilon(expected, "zero_cell_threshold: expected")
    if int(n_cells) != n_cells or int(n_cells) < 1:
        raise ParameterError(f"zero_cell_threshold: n_cells must be a whole number >= 1, got {n_cells!r}")
    return math.log(int(n_cells) / exp_) / eps


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
    eps = check_epsilon(epsilon, "threshold_counts: epsilon")
    counts = np.asarray(counts, dtype=np.int64)
    if int(n_implicit_zeros) != n_implicit_zeros or int(n_implicit_zeros) < 0:
        raise ParameterError(f"threshold_counts: the number of implicit zero cells must be a whole number >= 0, "
                             f"got {n_implicit_zeros!r}")
    n_implicit = int(n_implicit_zeros)
    k, log_q = discrete_laplace_tail(eps, threshold)  # validates the threshold
    q = math.exp(log_q)
    expected = (counts.size + n_implicit) * q  # cells x P(a zero cell passes): public inputs only
    if expected > MAX_EXPECTED_GENERATED:
        raise ParameterError(
            f"test-and-generate would release about {expected:.3g} cells of {counts.size + n_implicit:.3g} "
            f"(threshold {threshold:.4g} at epsilon {eps:.4g}); raise the threshold or lower the fan-out")
    explicit = noisy_counts(counts, eps, scope=scope, noise=noise, label=label)
    # one rule: an integer passes iff it is >= k = ceil(threshold), as generated cells do
    passed = explicit >= (threshold if _THRESHOLD_SLACK else k)
    n_pass = noise.binomial(n_implicit, q) if n_implicit > 0 else 0
    if n_pass:
        # the same scale as the explicit noise: X | X >= k is k + Geometric(t) (memoryless tail)
        tail = geometric_from_discrete_laplace(noise.discrete_laplace(laplace_scale(eps, 1), n_pass))
        zero_values = k + tail
    else:
        zero_values = np.zeros(0, dtype=np.int64)
    return ThresholdRelease(explicit, passed, zero_values.astype(np.int64))


def selection_scale(epsilon: float, sensitivity: float, *, monotonic: bool = False, rounds: int = 1) -> float:
    """The Gumbel scale b of an exponential mechanism that is epsilon-DP over ``rounds`` rounds (epsilon/rounds each).

    P(i) ~ exp(q_i / b) is (2*Delta/b)-DP (Delta/b for monotone scores; McSherry-Talwar), so
    b = 2*Delta*rounds/epsilon. Computed in exact rational arithmetic and rounded *up* to a float, so that
    2*Delta*rounds/b <= epsilon holds exactly (the safe side).

    >>> selection_scale(1.0, 1.0)
    2.0
    >>> selection_scale(0.5, 1.0, monotonic=True, rounds=4)
    8.0
    """
    eps, sens = _check("exponential mechanism", epsilon, sensitivity)
    if int(rounds) != rounds or int(rounds) < 1:
        raise ParameterError(f"exponential mechanism: rounds must be a whole number >= 1, got {rounds!r}")
    return round_up(Fraction(sens) * (1 if monotonic else 2) * int(rounds) / Fraction(eps))


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
    scale = selection_scale(epsilon, sensitivity, monotonic=monotonic)  # validates epsilon and sensitivity
    scores = _scores(scores)
    base = None if log_base_measure is None else np.asarray(log_base_measure, dtype=np.float64)
    if base is not None and base.shape != scores.shape:
        raise ParameterError("exponential mechanism: log_base_measure must have one entry per score")
    scope.spend(epsilon, label, mechanism="exponential", sensitivity=float(sensitivity), scale=scale,
                monotonic=monotonic)
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
    _check("exponential_top_k", epsilon, sensitivity)
    if int(k) != k or int(k) < 0:
        raise ParameterError(f"exponential_top_k: k must be a whole number >= 0, got {k!r}")
    scores = _scores(scores, allow_empty=True)
    k = int(min(int(k), scores.size))
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    scale = selection_scale(epsilon, sensitivity, monotonic=monotonic, rounds=k)
    scope.spend(epsilon, label, mechanism="exponential", sensitivity=float(sensitivity), scale=scale, rounds=k,
                monotonic=monotonic)
    return noise.gumbel_top_k(scores, k, scale)


def _scores(scores: np.ndarray, allow_empty: bool = False) -> np.ndarray:
    out = np.asarray(scores, dtype=np.float64).reshape(-1)
    if out.size == 0 and not allow_empty:
        raise ParameterError("exponential mechanism over an empty candidate set")
    if np.isnan(out).any() or np.isposinf(out).any():
        raise ParameterError("exponential mechanism: every score must be a number below +inf")
    return out


def uniform_choice(n: int, noise: NoiseSource) -> int:
    """A data-independent uniform choice in range(n); costs no budget."""
    if int(n) != n or int(n) < 1:
        raise ParameterError(f"uniform_choice: n must be a whole number >= 1, got {n!r}")
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
    scale = selection_scale(epsilon, sensitivity)  # validates epsilon and sensitivity
    if not score_blocks:
        return []
    measures = log_base_measures or [None] * len(score_blocks)
    if len(measures) != len(score_blocks):
        raise ParameterError("exponential mechanism: one log base measure (or None) per block")
    blocks: list[tuple[np.ndarray, np.ndarray | None]] = []
    for scores, base in zip(score_blocks, measures):
        scores = _scores(scores)
        base_arr = None if base is None else np.asarray(base, dtype=np.float64)
        if base_arr is not None and base_arr.shape != scores.shape:
            raise ParameterError("exponential mechanism: log_base_measure must have one entry per score")
        blocks.append((scores, base_arr))
    scope.spend(epsilon, label, mechanism="exponential", sensitivity=float(sensitivity), scale=scale)
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


def _implicit_args(name: str, explicit_scores: np.ndarray, n_implicit: int, implicit_score: float, k: int
                   ) -> tuple[np.ndarray, int, int]:
    scores = _scores(explicit_scores, allow_empty=True)
    if int(n_implicit) != n_implicit or int(n_implicit) < 0:
        raise ParameterError(f"{name}: n_implicit must be a whole number >= 0, got {n_implicit!r}")
    if not math.isfinite(float(implicit_score)):
        raise ParameterError(f"{name}: implicit_score must be a finite number, got {implicit_score!r}")
    if int(k) != k or int(k) < 0:
        raise ParameterError(f"{name}: k must be a whole number >= 0, got {k!r}")
    return scores, int(n_implicit), int(k)


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
    eps, sens = _check("laplace_top_k_implicit", epsilon, sensitivity)
    explicit_scores, n_implicit, k = _implicit_args("laplace_top_k_implicit", explicit_scores, n_implicit,
                                                    implicit_score, k)
    scale = laplace_scale(eps, sens)
    scope.spend(eps, label, mechanism="laplace", sensitivity=sens, scale=scale)
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
    _check("exponential_top_k_implicit", epsilon, sensitivity)
    explicit_scores, n_implicit, k = _implicit_args("exponential_top_k_implicit", explicit_scores, n_implicit,
                                                    implicit_score, k)
    k = int(min(k, explicit_scores.size + n_implicit))
    if k <= 0:
        return np.zeros(0, dtype=np.int64), 0
    scale = selection_scale(epsilon, sensitivity, monotonic=monotonic, rounds=k)
    scope.spend(epsilon, label, mechanism="exponential", sensitivity=float(sensitivity), scale=scale, rounds=k,
                monotonic=monotonic)
    if noise.exact_selection:
        return sequential_gumbel_rounds(noise, explicit_scores, k, scale, n_implicit, float(implicit_score))
    ex = explicit_scores / scale + noise.gumbel(explicit_scores.size)
    log_f = _top_order_log_cdf(n_implicit, k, noise)
    im = float(implicit_score) / scale - np.log(-log_f)
    return _select_top(ex, im, k)
