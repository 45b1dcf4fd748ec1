"""PrivTree split decisions: parameters, charge-before-draw, the split law, and the privacy bound on paths."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dprelease.errors import BudgetExceededError, ParameterError
from dprelease.privacy import BudgetAccountant, SeededNoise
from dprelease.privacy.noise import NoiseSource
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
