"""PrivTree split decisions: parameters, charge-before-draw, the split law, and the privacy bound on paths."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dprelease.errors import BudgetExceededError, ParameterError
from dprelease.privacy import BudgetAccountant, SeededNoise
from dprelease.privacy.noise import NoiseSource
from dprelease.privacy.accountant import epsilon_of, privtree_theorem_epsilon
from dprelease.privacy.privtree import PrivTreeSplitter, privtree_epsilon, privtree_scale


def _log_tail(lam: float, k: int) -> float:
    """log P(X >= k) for X ~ DLap(lam) (integer k): t^k/(1+t) for k >= 1, 1 - t^(1-k)/(1+t) for k <= 0."""
    t = math.exp(-1.0 / lam)
    if k >= 1:
        return k * math.log(t) - math.log1p(t)
    return math.log1p(-(t ** (1 - k)) / (1 + t))


def _log_split(lam: float, delta: int, theta: int, count: int, depth: int, split: bool) -> float:
    biased = max(count - depth * delta, theta - delta)
    lp = _log_tail(lam, theta - biased)  # P(biased + X >= theta)
    return lp if split else math.log1p(-math.exp(lp))


@pytest.mark.parametrize("eps,beta", [(0.2, 2.0), (0.5, 2.0), (1.0, 3.0), (4.0, 1.5), (0.05, 16.0)])
def test_scale_meets_the_budget(eps, beta):
    lam, delta = privtree_scale(eps, beta)
    assert delta == max(1, math.ceil(lam * math.log(beta)))
    assert privtree_epsilon(lam, delta) <= eps * (1 + 1e-12)
    # and it is tight: a 1% smaller scale would overspend (with the smooth bound it was solved for)
    assert (1 + math.exp(-1 / (0.99 * lam)) * beta / (beta - 1)) / (0.99 * lam) > eps


@pytest.mark.parametrize("eps,beta,theta", [(0.4, 2.0, 0), (1.0, 2.0, 3), (0.3, 4.0, -2), (2.0, 1.5, 0)])
def test_worst_path_loss_is_within_epsilon(eps, beta, theta):
    """Exact log-ratio of every decision sequence on a record's path (D' = D + the record) stays <= eps.

    Paths: counts non-increasing with depth, placed around the threshold where the ratio is largest.
    """
    lam, delta = privtree_scale(eps, beta)
    rng = np.random.default_rng(7)
    worst = 0.0
    for _ in range(400):
        depth_max = int(rng.integers(1, 25))
        start = int(rng.integers(-3 * delta, (depth_max + 3) * delta + 10)) + theta
        drops = rng.integers(0, 2 * delta + 2, depth_max)
        counts = np.maximum(start - np.cumsum(drops), 0)
        # output: split at depths 1..k-1, then fail at depth k (or split all the way)
        for k in range(1, depth_max + 2):
            for direction in (1, -1):
                total = 0.0
                for d in range(1, min(k, depth_max) + 1):
                    split = d < k
                    c = int(counts[d - 1])
                    a = _log_split(lam, delta, theta, c + 1, d, split)
                    b = _log_split(lam, delta, theta, c, d, split)
                    total += (a - b) * direction
                worst = max(worst, total)
    assert worst <= eps * (1 + 1e-9)
    assert worst > 0.5 * eps  # the paths reach the regime where the bound matters


def test_split_law_matches_the_closed_form():
    """Seeded: the rate of splits of a depth-2 cell with count c matches P(max(c-2d, th-d) + DLap >= th) (5 s.e.)."""
    acc = BudgetAccountant(1.0)
    sp = PrivTreeSplitter(1.0, beta=2.0, theta=0, scope=acc.root(), noise=SeededNoise(3), label="t")
    n = 20_000
    counts = np.repeat(np.array([0, 2 * sp.delta - 2, 2 * sp.delta, 2 * sp.delta + 3]), n)
    sp.test(np.zeros(1, dtype=np.int64), depth=1)
    got = sp.test(counts, depth=2).reshape(4, n).mean(axis=1)
    for c, rate in zip([0, 2 * sp.delta - 2, 2 * sp.delta, 2 * sp.delta + 3], got.tolist()):
        p = math.exp(_log_split(sp.lam, sp.delta, 0, c, 2, True))
        assert abs(rate - p) <= 5 * math.sqrt(p * (1 - p) / n) + 1e-9, (c, rate, p)
    # an empty cell splits with probability t^delta/(1+t) <= 1/(beta (1+t)) < 1/beta, t = e^(-1/lam)
    t = math.exp(-1 / sp.lam)
    assert math.exp(_log_split(sp.lam, sp.delta, 0, 0, 5, True)) <= 1 / (2.0 * (1 + t)) + 1e-12


class _Exploding(NoiseSource):
    mode = "exploding"

    def discrete_laplace(self, scale, size):
        raise AssertionError("noise drawn before the budget was charged")

    laplace = uniform = integers = binomial = discrete_laplace


def test_charges_once_before_drawing_and_refuses_overspend():
    acc = BudgetAccountant(1.0)
    scope = acc.root()
    scope.spend(0.7, "earlier", mechanism="reserved")
    with pytest.raises(BudgetExceededError):
        PrivTreeSplitter(0.5, beta=2.0, scope=scope, noise=_Exploding(), label="tree")
    sp = PrivTreeSplitter(0.3, beta=2.0, scope=scope, noise=SeededNoise(0), label="tree")
    for d in range(1, 6):
        sp.test(np.arange(10), depth=d)
    assert acc.spent == pytest.approx(1.0) and acc.n_spends == 2  # one charge for every depth


@pytest.mark.parametrize("kwargs", [{"beta": 1.0}, {"beta": float("inf")}, {"theta": 0.5}, {"epsilon": 0.0},
                                    {"epsilon": float("nan")}])
def test_parameter_errors(kwargs):
    args = {"epsilon": 1.0, "beta": 2.0, "theta": 0} | kwargs
    with pytest.raises(ParameterError):
        PrivTreeSplitter(args.pop("epsilon"), scope=BudgetAccountant(5.0).root(), noise=SeededNoise(0), label="t",
                         **args)
    with pytest.raises(ParameterError):
        privtree_epsilon(0.0, 1)
    with pytest.raises(ParameterError):
        privtree_epsilon(1.0, 0)


def test_depths_must_be_tested_in_order():
    sp = PrivTreeSplitter(1.0, beta=2.0, scope=BudgetAccountant(1.0).root(), noise=SeededNoise(0), label="t")
    sp.test(np.zeros(2, dtype=np.int64), depth=1)
    with pytest.raises(ValueError):
        sp.test(np.zeros(2, dtype=np.int64), depth=1)


# --- the typed ledger event, and the constants against the paper's theorem -----------------------------------

@pytest.mark.parametrize("eps,beta", [(0.05, 2.0), (0.5, 2.0), (1.0, 3.0), (4.0, 1.5), (50.0, 2.0), (0.3, 16.0)])
def test_the_charge_is_a_typed_privtree_event_that_rederives(eps, beta):
    """Was an untyped spend (mechanism "unspecified", no parameters): epsilon_of could not re-derive it."""
    acc = BudgetAccountant(eps)
    sp = PrivTreeSplitter(eps, beta=beta, theta=0, scope=acc.root(), noise=SeededNoise(0), label="tree")
    (entry,) = acc.ledger
    assert (entry.mechanism, entry.scale, entry.depth_bias, entry.beta, entry.sensitivity) == (
        "privtree", sp.lam, sp.delta, beta, 1.0)
    derived = epsilon_of(entry)
    assert derived is not None and derived <= eps and derived == pytest.approx(eps, rel=1e-12)
    assert derived == privtree_theorem_epsilon(sp.lam, beta)
    # the exact sum with the integer delta is never above the charge
    assert privtree_epsilon(sp.lam, sp.delta) <= derived


def test_epsilon_of_a_privtree_event_whose_delta_misses_the_theorem_is_the_exact_sum():
    """delta < lam ln beta: the geometric ratio e^(-delta/lam) is above 1/beta, so the beta form would understate;
    epsilon_of returns the sum itself, and spend refuses a charge below it (before anything is charged)."""
    lam, beta = 10.0, 2.0  # lam ln beta = 6.93
    exact = privtree_epsilon(lam, 3)
    assert exact > privtree_theorem_epsilon(lam, beta)
    acc = BudgetAccountant(5.0)
    root = acc.root()
    with pytest.raises(ValueError, match="guarantee epsilon"):
        root.spend(privtree_theorem_epsilon(lam, beta), "t", mechanism="privtree", sensitivity=1.0, scale=lam,
                   depth_bias=3, beta=beta)
    assert acc.ledger == [] and acc.spent == 0.0
    root.spend(exact, "t", mechanism="privtree", sensitivity=1.0, scale=lam, depth_bias=3, beta=beta)
    assert epsilon_of(acc.ledger[0]) == exact


@pytest.mark.parametrize("eps", [0.05, 0.5, 1.0, 2.0])
@pytest.mark.parametrize("beta", [2.0, 4.0])
def test_constants_against_the_papers_theorem(eps, beta):
    """PrivTree (SIGMOD 2016), Theorem 3.1: with delta = lam ln beta, lam >= (2 beta - 1)/(beta - 1) / eps
    suffices (continuous Laplace, real counts). The code's discrete variant charges
    (1/lam)(1 + e^(-1/lam) beta/(beta - 1)), below the paper's (2 beta - 1)/((beta - 1) lam) for the same lam,
    so it needs a smaller lam; its delta = ceil(lam ln beta) is at least the paper's."""
    lam, delta = privtree_scale(eps, beta)
    paper_lam = (2 * beta - 1) / ((beta - 1) * eps)
    assert lam < paper_lam
    assert privtree_theorem_epsilon(lam, beta) < (2 * beta - 1) / ((beta - 1) * lam)
    assert privtree_theorem_epsilon(paper_lam, beta) < eps  # the paper's parameters fit in the code's budget
    assert delta == max(1, math.ceil(lam * math.log(beta))) >= lam * math.log(beta)


@pytest.mark.parametrize("eps,beta,min_share", [(0.1, 2.0, 0.8), (0.1, 4.0, 0.9), (1.0, 2.0, 0.75), (2.0, 4.0, 0.85)])
def test_the_worst_path_reaches_most_of_the_charge(eps, beta, min_share):
    """The proof's extreme path: one record in cells of constant count c = theta + (D - 1) delta at depths 1..D, so
    the biased counts are theta + (D - 1 - d) delta: theta, theta + delta, ... above the threshold and one at
    theta - delta, every one split. Its exact log-ratio is below the exact sum and the charge, and reaches most
    of them (the constant is neither wrong nor loose)."""
    lam, delta = privtree_scale(eps, beta)
    theta, depth = 0, 80
    c = theta + (depth - 1) * delta
    loss = sum(_log_split(lam, delta, theta, c + 1, d, True) - _log_split(lam, delta, theta, c, d, True)
               for d in range(1, depth + 1))
    assert loss <= privtree_epsilon(lam, delta) <= privtree_theorem_epsilon(lam, beta) <= eps
    assert loss >= min_share * eps


class _Preset(NoiseSource):
    mode = "preset"

    def __init__(self, draws):
        self.draws = np.asarray(draws, dtype=np.int64)

    def discrete_laplace(self, scale, size):
        assert size == self.draws.size
        return self.draws

    def laplace(self, scale, size):
        raise AssertionError("only discrete Laplace draws")

    uniform = integers = binomial = laplace


def test_the_biased_count_and_threshold_are_the_papers():
    """Algorithm 2 of the paper: b = max(c - depth*delta, theta_p - delta), split iff b + noise > theta_p, root at
    depth 0. The code (first tested depth 1, >= for integer noise) is that test with theta_p = theta + delta and
    depth_p = depth - 1, on the same noise."""
    rng = np.random.default_rng(3)
    for theta in (-2, 0, 5):
        acc = BudgetAccountant(10.0)
        sp = PrivTreeSplitter(1.0, beta=2.0, theta=theta, scope=acc.root(), noise=SeededNoise(0), label="t")
        for depth in range(1, 8):
            counts = rng.integers(0, 12 * sp.delta, 400)
            noise = rng.integers(-4 * sp.delta, 4 * sp.delta, 400)
            sp._noise = _Preset(noise)
            got = sp.test(counts, depth)
            theta_p, depth_p = theta + sp.delta, depth - 1
            paper = np.maximum(counts - depth_p * sp.delta, theta_p - sp.delta) + noise >= theta_p
            assert (got == paper).all()
