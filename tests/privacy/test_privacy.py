"""Privacy core: accountant, samplers (statistical tests, fixed seeds, stated tolerances), mechanisms."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dprelease.errors import BudgetExceededError, ParameterError
from dprelease.privacy import (
    BudgetAccountant,
    SecureNoise,
    SeededNoise,
    discrete_laplace_tail,
    exponential_mechanism,
    exponential_top_k,
    noisy_counts,
    threshold_counts,
)
from dprelease.privacy.noise import NoiseSource, geometric_from_discrete_laplace

# Tolerance for randomised tests: a test fails only if its p-value is below ALPHA. With fixed
# seeds the outcome is deterministic; for the secure source the false-failure rate is ALPHA.
ALPHA = 1e-6


class ExplodingNoise(NoiseSource):
    """Fails the test if any noise is drawn (checks the charge-before-draw order)."""

    mode = "exploding"

    def discrete_laplace(self, scale, size):
        raise AssertionError("noise drawn before the budget check")

    laplace = uniform = integers = binomial = gumbel = discrete_laplace  # type: ignore[assignment]


# --- accountant -------------------------------------------------------------------------------

def test_sequential_spends_add_up():
    acc = BudgetAccountant(1.0)
    root = acc.root()
    root.spend(0.25, "a", mechanism="reserved")
    root.spend(0.5, "b", mechanism="reserved")
    assert acc.spent == pytest.approx(0.75)
    assert acc.remaining == pytest.approx(0.25)
    with pytest.raises(BudgetExceededError):
        root.spend(0.3, "c", mechanism="reserved")
    assert acc.spent == pytest.approx(0.75)  # the refused spend left no trace
    assert [e.label for e in acc.ledger] == ["a", "b"]


def test_parallel_branches_take_the_max():
    acc = BudgetAccountant(1.0)
    root = acc.root()
    root.spend(0.5, "split", mechanism="reserved")
    left, right = root.branch(), root.branch()
    left.spend(0.5, "left leaf", mechanism="reserved")
    right.spend(0.25, "right", mechanism="reserved")
    right.branch().spend(0.25, "right leaf", mechanism="reserved")
    assert acc.spent == pytest.approx(1.0)
    with pytest.raises(BudgetExceededError):
        left.spend(1e-3, "over", mechanism="reserved")
    with pytest.raises(RuntimeError):
        root.spend(0.1, "after branching", mechanism="reserved")


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf"), "x"])
def test_bad_epsilon_is_a_parameter_error(bad):
    with pytest.raises(ParameterError):
        BudgetAccountant(bad)


def test_mechanism_checks_budget_before_drawing_noise():
    acc = BudgetAccountant(1.0)
    scope = acc.root()
    scope.spend(0.9, "earlier", mechanism="reserved")
    with pytest.raises(BudgetExceededError):
        noisy_counts(np.array([5, 6]), 0.2, scope=scope, noise=ExplodingNoise(), label="too much")
    with pytest.raises(BudgetExceededError):
        exponential_mechanism(np.array([1.0, 2.0]), 0.2, sensitivity=1, scope=scope, noise=ExplodingNoise(), label="x")


# --- samplers -----------------------------------------------------------------------------------

def _dlap_pmf(values: np.ndarray, scale: float) -> np.ndarray:
    t = math.exp(-1.0 / scale)
    return (1 - t) / (1 + t) * np.power(t, np.abs(values))


def _chi_square_discrete(sample: np.ndarray, pmf, support: np.ndarray) -> float:
    """p-value of a chi-square goodness-of-fit test; the tails beyond the support are pooled."""
    observed = np.array([(sample == v).sum() for v in support] + [(~np.isin(sample, support)).sum()])
    probs = pmf(support)
    expected = np.append(probs, max(1.0 - probs.sum(), 0.0)) * sample.size
    keep = expected > 5
    obs, exp = observed[keep], expected[keep]
    exp = exp * obs.sum() / exp.sum()
    return float(stats.chisquare(obs, exp).pvalue)


@pytest.mark.parametrize("source", [SeededNoise(12345), SecureNoise()], ids=["seeded", "secure"])
@pytest.mark.parametrize("scale", [0.5, 2.0, 10.0])
def test_discrete_laplace_matches_its_pmf(source, scale):
    sample = source.discrete_laplace(scale, 20_000)
    assert sample.dtype == np.int64
    support = np.arange(-int(8 * scale) - 2, int(8 * scale) + 3)
    assert _chi_square_discrete(sample, lambda v: _dlap_pmf(v, scale), support) > ALPHA
    t = math.exp(-1 / scale)
    var = 2 * t / (1 - t) ** 2
    # the sample variance is within 6 standard errors of the exact variance
    assert abs(sample.var() - var) < 6 * math.sqrt(2 * var**2 * 3 / sample.size) + 6 * var / math.sqrt(sample.size)


@pytest.mark.parametrize("source", [SeededNoise(7), SecureNoise()], ids=["seeded", "secure"])
def test_continuous_laplace_matches_cdf(source):
    sample = source.laplace(3.0, 20_000)
    assert stats.kstest(sample, stats.laplace(scale=3.0).cdf).pvalue > ALPHA


@pytest.mark.parametrize("source", [SeededNoise(3), SecureNoise()], ids=["seeded", "secure"])
def test_uniform_integers_and_gumbel(source):
    u = source.uniform(20_000)
    assert ((u > 0) & (u < 1)).all()
    assert stats.kstest(u, "uniform").pvalue > ALPHA
    ints = source.integers(7, 21_000)
    assert stats.chisquare(np.bincount(ints, minlength=7)).pvalue > ALPHA
    assert stats.kstest(source.gumbel(20_000), stats.gumbel_r.cdf).pvalue > ALPHA


@pytest.mark.parametrize("source", [SeededNoise(5), SecureNoise()], ids=["seeded", "secure"])
def test_binomial_mean_and_variance(source):
    n, p = 1000, 0.03
    draws = np.array([source.binomial(n, p) for _ in range(3000)])
    assert abs(draws.mean() - n * p) < 6 * math.sqrt(n * p * (1 - p) / draws.size)
    assert source.binomial(0, 0.5) == 0 and source.binomial(10, 0.0) == 0


def test_geometric_map_is_exact():
    noise = SeededNoise(11)
    scale = 1.7
    g = geometric_from_discrete_laplace(noise.discrete_laplace(scale, 30_000))
    t = math.exp(-1 / scale)
    support = np.arange(0, 30)
    assert _chi_square_discrete(g, lambda v: (1 - t) * np.power(t, v), support) > ALPHA


def test_discrete_laplace_tail_formula():
    eps, thr = 0.8, 2.3
    k, log_q = discrete_laplace_tail(eps, thr)
    assert k == 3
    t = math.exp(-eps)
    assert math.exp(log_q) == pytest.approx(t**3 / (1 + t))
    sample = SeededNoise(2).discrete_laplace(1 / eps, 200_000)
    assert (sample >= 3).mean() == pytest.approx(t**3 / (1 + t), abs=0.003)


def test_threshold_counts_agrees_with_brute_force():
    """Test-and-generate over implicit zeros has the same law as noising every zero cell."""
    eps, thr, n_zero = 0.7, 2.5, 400
    noise = SeededNoise(99)
    passed_counts, passed_values = [], []
    for _ in range(400):
        acc = BudgetAccountant(eps)
        res = threshold_counts(np.array([10, 0]), n_zero, eps, thr, scope=acc.root(), noise=noise, label="t")
        assert acc.spent == pytest.approx(eps)
        passed_counts.append(res.zero_passed.size)
        passed_values.extend(res.zero_passed.tolist())
        assert (res.zero_passed >= 3).all()
    brute = SeededNoise(100).discrete_laplace(1 / eps, 400 * n_zero)
    brute_pass = brute[brute >= thr]
    assert np.mean(passed_counts) == pytest.approx(brute_pass.size / 400, rel=0.06)
    assert np.mean(passed_values) == pytest.approx(brute_pass.mean(), rel=0.05)


# --- exponential mechanism ---------------------------------------------------------------------

def test_exponential_mechanism_distribution():
    scores = np.array([0.0, 1.0, 2.0, 4.0])
    eps, sens = 1.0, 1.0
    noise = SeededNoise(21)
    picks = np.array([
        exponential_mechanism(scores, eps, sensitivity=sens, scope=BudgetAccountant(eps).root(), noise=noise, label="x")
        for _ in range(20_000)
    ])
    w = np.exp(eps * scores / (2 * sens))
    expected = w / w.sum() * picks.size
    assert stats.chisquare(np.bincount(picks, minlength=4), expected).pvalue > ALPHA


def test_exponential_mechanism_log_space_at_large_n():
    """Scores of size N = 10^6 would overflow exp(); the log-space mechanism must not."""
    n = 1_000_000
    scores = np.array([n * 0.50, n * 0.52, n * 0.9999, n * 1.0])
    with np.errstate(over="raise", invalid="raise"):
        pick = exponential_mechanism(scores, 1.0, sensitivity=1, scope=BudgetAccountant(1.0).root(),
                                     noise=SeededNoise(1), label="x")
    assert pick == 3  # exp((1.0 - 0.9999) * 10^6 / 2) = exp(50): the top score wins essentially always


def test_base_measure_weights_the_choice():
    # equal scores, base weights 1:3 -> picks in ratio 1:3
    noise = SeededNoise(8)
    picks = np.array([
        exponential_mechanism(np.zeros(2), 1.0, sensitivity=1, scope=BudgetAccountant(1.0).root(), noise=noise,
                              label="x", log_base_measure=np.log([1.0, 3.0]))
        for _ in range(8000)
    ])
    assert stats.chisquare(np.bincount(picks, minlength=2), [2000, 6000]).pvalue > ALPHA


def test_top_k_charges_total_and_matches_sequential_first_pick():
    scores = np.array([1.0, 3.0, 5.0, 2.0])
    eps, k = 2.0, 2
    noise = SeededNoise(4)
    firsts = []
    for _ in range(10_000):
        acc = BudgetAccountant(eps)
        picks = exponential_top_k(scores, k, eps, sensitivity=1, scope=acc.root(), noise=noise, label="top")
        assert acc.spent == pytest.approx(eps)
        assert len(set(picks.tolist())) == k
        firsts.append(picks[0])
    w = np.exp((eps / k) * scores / 2)
    assert stats.chisquare(np.bincount(firsts, minlength=4), w / w.sum() * len(firsts)).pvalue > ALPHA
