"""Selection mechanisms against their closed forms (chi-square), on the seeded and the secure (exact) source.

Secure mode used float Gumbel-max; it now samples the exponential mechanism's law exactly
(OpenDP's Gumbel report-noisy-max / noisy top-k). Each test fails only if its p-value is below ALPHA
(seeded: deterministic; secure: false-failure rate ALPHA per test).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from dprelease.privacy import (
    BudgetAccountant,
    SecureNoise,
    SeededNoise,
    exponential_mechanism,
    exponential_mechanism_disjoint,
    exponential_top_k,
    exponential_top_k_implicit,
    laplace_top_k_implicit,
)
from dprelease.privacy.mechanisms import selection_scale

ALPHA = 1e-6
SOURCES = [pytest.param(lambda: SeededNoise(31), id="seeded"), pytest.param(SecureNoise, id="secure")]


def _scope(eps: float):
    return BudgetAccountant(eps).root()


def _fit(observed_labels: list, probs: dict) -> float:
    """p-value of a chi-square test of the labels against ``probs`` (label -> probability)."""
    labels = list(probs)
    counts = np.array([sum(1 for x in observed_labels if x == lab) for lab in labels], dtype=float)
    assert counts.sum() == len(observed_labels), "an outcome outside the support"
    expected = np.array([probs[lab] for lab in labels]) * len(observed_labels)
    return float(stats.chisquare(counts, expected).pvalue)


def _em_probs(scores, eps, sens, monotonic=False, base=None) -> np.ndarray:
    logw = eps * np.asarray(scores, float) / (sens if monotonic else 2 * sens)
    if base is not None:
        logw = logw + np.log(base)
    w = np.exp(logw - logw.max())
    return w / w.sum()


def test_selection_scale_is_rounded_to_the_safe_side():
    from fractions import Fraction

    for eps, sens, mono, rounds in [(0.1, 1.0, False, 1), (1 / 3, 2.0, True, 7), (0.7, 0.3, False, 100)]:
        b = selection_scale(eps, sens, monotonic=mono, rounds=rounds)
        exact = Fraction(sens) * (1 if mono else 2) * rounds / Fraction(eps)
        assert Fraction(b) >= exact and float(exact) == pytest.approx(b, rel=1e-15)


@pytest.mark.parametrize("make", SOURCES)
@pytest.mark.parametrize("monotonic", [False, True])
def test_exponential_mechanism_law(make, monotonic):
    noise = make()
    scores, eps = np.array([0.0, 1.0, 2.0, 4.0]), 1.0
    picks = [exponential_mechanism(scores, eps, sensitivity=1.0, scope=_scope(eps), noise=noise, label="x",
                                   monotonic=monotonic) for _ in range(3000)]
    probs = _em_probs(scores, eps, 1.0, monotonic)
    assert _fit(picks, dict(enumerate(probs))) > ALPHA


@pytest.mark.parametrize("make", SOURCES)
def test_exponential_mechanism_with_base_measure_law(make):
    """DiffGen eq. 6: interval i has weight |I_i| * exp(eps * q_i / (2 Delta)); RPS medians use the same."""
    noise = make()
    scores, base, eps = np.array([3.0, 1.0, 2.0]), np.array([1.0, 5.0, 0.5]), 2.0
    picks = [exponential_mechanism(scores, eps, sensitivity=1.0, scope=_scope(eps), noise=noise, label="x",
                                   log_base_measure=np.log(base)) for _ in range(3000)]
    assert _fit(picks, dict(enumerate(_em_probs(scores, eps, 1.0, base=base)))) > ALPHA


@pytest.mark.parametrize("make", SOURCES)
def test_exponential_top_k_is_k_sequential_rounds(make):
    noise = make()
    scores, eps, k = np.array([1.0, 3.0, 5.0, 2.0]), 2.0, 2
    w = np.exp((eps / k) * scores / 2)
    probs = {(i, j): w[i] / w.sum() * w[j] / (w.sum() - w[i]) for i, j in itertools.permutations(range(4), 2)}
    picks = []
    for _ in range(3000):
        acc = BudgetAccountant(eps)
        picks.append(tuple(exponential_top_k(scores, k, eps, sensitivity=1.0, scope=acc.root(), noise=noise,
                                             label="t").tolist()))
        assert acc.spent == pytest.approx(eps)
    assert _fit(picks, probs) > ALPHA


@pytest.mark.parametrize("make", SOURCES)
def test_disjoint_exponential_mechanism_is_independent_per_block(make):
    noise = make()
    blocks = [np.array([0.0, 2.0]), np.array([1.0, 0.0, 3.0])]
    bases = [None, np.log([2.0, 1.0, 1.0])]
    eps = 1.5
    picks = [tuple(exponential_mechanism_disjoint(blocks, eps, sensitivity=1.0, scope=_scope(eps), noise=noise,
                                                  label="d", log_base_measures=bases)) for _ in range(3000)]
    p0 = _em_probs(blocks[0], eps, 1.0)
    p1 = _em_probs(blocks[1], eps, 1.0, base=np.array([2.0, 1.0, 1.0]))
    assert _fit(picks, {(i, j): p0[i] * p1[j] for i in range(2) for j in range(3)}) > ALPHA


def _implicit_closed_form(explicit, n_imp, imp_score, k, eps) -> dict:
    """Law of (explicit picks in order, number of implicit picks) for k EM rounds without replacement."""
    scores = list(explicit) + [imp_score] * n_imp
    w = np.exp((eps / k) * np.asarray(scores) / 2)
    out: dict = {}
    for seq in itertools.permutations(range(len(scores)), k):
        p, left = 1.0, w.sum()
        for i in seq:
            p *= w[i] / left
            left -= w[i]
        key = (tuple(i for i in seq if i < len(explicit)), sum(1 for i in seq if i >= len(explicit)))
        out[key] = out.get(key, 0.0) + p
    return out


@pytest.mark.parametrize("make", SOURCES)
def test_exponential_top_k_implicit_matches_enumeration(make):
    noise = make()
    explicit, n_imp, imp_score, k, eps = np.array([3.0, 0.5, 3.0]), 2, 2.0, 2, 2.0  # tied scores share a class
    probs = _implicit_closed_form(explicit, n_imp, imp_score, k, eps)
    picks = []
    for _ in range(3000):
        ex, n = exponential_top_k_implicit(explicit, n_imp, imp_score, k, eps, sensitivity=1.0, scope=_scope(eps),
                                           noise=noise, label="i")
        picks.append((tuple(ex.tolist()), n))
    # The seeded path returns explicit picks in rank order among themselves, like the exact rounds.
    assert _fit(picks, probs) > ALPHA


@pytest.mark.parametrize("make", SOURCES)
def test_laplace_top_k_implicit_matches_materialised_noise(make):
    """Implicit candidates (drawn as order statistics, or materialised in secure mode) behave like explicit ones."""
    noise = make()
    explicit, n_imp, imp_score, k, eps = np.array([2.0, 0.0]), 4, 1.0, 2, 1.0
    got, want = [], []
    ref = np.random.default_rng(5)
    for _ in range(2000):
        ex, n = laplace_top_k_implicit(explicit, n_imp, imp_score, k, eps, sensitivity=1.0, scope=_scope(eps),
                                       noise=noise, label="l")
        got.append((tuple(sorted(ex.tolist())), n))
        vals = np.r_[explicit, np.full(n_imp, imp_score)] + ref.laplace(0.0, 1.0, 2 + n_imp)
        top = np.argsort(-vals)[:k]
        want.append((tuple(sorted(int(i) for i in top if i < 2)), int((top >= 2).sum())))
    labels = sorted(set(got) | set(want))
    table = np.array([[sum(1 for x in sample if x == lab) for lab in labels] for sample in (got, want)])
    table = table[:, table.sum(axis=0) >= 10]
    assert stats.chi2_contingency(table).pvalue > ALPHA


def test_secure_selection_uses_the_exact_sampler(monkeypatch):
    """Secure mode never reaches the float Gumbel: the mechanisms go through OpenDP."""
    noise = SecureNoise()
    monkeypatch.setattr(noise, "gumbel", lambda size: (_ for _ in ()).throw(AssertionError("float Gumbel used")))
    monkeypatch.setattr(noise, "uniform", lambda size: (_ for _ in ()).throw(AssertionError("float uniforms used")))
    exponential_mechanism(np.arange(5.0), 1.0, sensitivity=1.0, scope=_scope(1.0), noise=noise, label="x",
                          log_base_measure=np.zeros(5))
    exponential_top_k(np.arange(5.0), 3, 1.0, sensitivity=1.0, scope=_scope(1.0), noise=noise, label="x")
    exponential_mechanism_disjoint([np.arange(3.0)], 1.0, sensitivity=1.0, scope=_scope(1.0), noise=noise, label="x")
    exponential_top_k_implicit(np.arange(5.0), 10**12, 1.0, 3, 1.0, sensitivity=1.0, scope=_scope(1.0), noise=noise,
                               label="x")
    laplace_top_k_implicit(np.arange(5.0), 100, 1.0, 3, 1.0, sensitivity=1.0, scope=_scope(1.0), noise=noise,
                           label="x")


def test_large_scores_do_not_overflow_in_secure_mode():
    n = 1_000_000
    scores = np.array([n * 0.50, n * 0.52, n * 0.9999, n * 1.0])
    with np.errstate(over="raise", invalid="raise"):
        pick = exponential_mechanism(scores, 1.0, sensitivity=1, scope=_scope(1.0), noise=SecureNoise(), label="x")
    assert pick == 3  # exp((1.0 - 0.9999) * 10^6 / 2) = e^50: the top score wins with probability 1 - e^-50
