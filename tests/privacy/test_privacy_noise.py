"""Samplers of dprelease.privacy.noise: exact binomial at large n, lattice of float-safe values, selection.

Randomised tests use fixed seeds (seeded source: deterministic) or the OS CSPRNG (secure source): a test fails
only if its p-value is below ALPHA, so the secure tests' false-failure rate is ALPHA each.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dprelease.errors import ParameterError
from dprelease.privacy import SecureNoise, SeededNoise

ALPHA = 1e-6


def _chi_square_pvalue(sample: np.ndarray, pmf: np.ndarray, support: np.ndarray) -> float:
    """Goodness of fit of integer draws to ``pmf`` on ``support`` (the rest pooled; cells with < 5 expected merged)."""
    observed = np.array([(sample == v).sum() for v in support] + [(~np.isin(sample, support)).sum()], dtype=float)
    expected = np.append(pmf, max(0.0, 1.0 - pmf.sum())) * sample.size
    # merge sparse cells into their neighbour so every cell expects >= 5
    obs, exp, acc_o, acc_e = [], [], 0.0, 0.0
    for o, e in zip(observed, expected):
        acc_o, acc_e = acc_o + o, acc_e + e
        if acc_e >= 5:
            obs.append(acc_o)
            exp.append(acc_e)
            acc_o = acc_e = 0.0
    if acc_e > 0 and exp:
        obs[-1] += acc_o
        exp[-1] += acc_e
    exp_arr = np.asarray(exp) * sum(obs) / sum(exp)
    return float(stats.chisquare(obs, exp_arr).pvalue)


# --- binomial (scipy's bdtr gave NaN for n >= 2^31 and every empty cell passed) ----------

@pytest.mark.parametrize("source", [SeededNoise(2024), SecureNoise()], ids=["seeded", "secure"])
@pytest.mark.parametrize("log2_n", [31, 40, 52])
def test_binomial_at_large_n_matches_its_pmf(source, log2_n):
    n = 2**log2_n
    p = 6.0 / n  # the regime of test-and-generate: many cells, few expected to pass
    draws = np.array([source.binomial(n, p) for _ in range(1500)])
    assert draws.max() < 40  # the old secure sampler returned n here
    support = np.arange(0, 25)
    pmf = stats.binom(n, p).pmf(support)
    assert _chi_square_pvalue(draws, pmf, support) > ALPHA


@pytest.mark.parametrize("source", [SeededNoise(7), SecureNoise()], ids=["seeded", "secure"])
def test_binomial_moderate_n_and_p_above_one_half(source):
    n, p = 200, 0.03
    draws = np.array([source.binomial(n, p) for _ in range(1000)])
    support = np.arange(0, 20)
    assert _chi_square_pvalue(draws, stats.binom(n, p).pmf(support), support) > ALPHA
    n, q = 2**40, 5.0 / 2**40
    high = np.array([n - source.binomial(n, 1.0 - q) for _ in range(600)])  # p close to 1 goes through 1 - p
    support = np.arange(0, 20)
    assert _chi_square_pvalue(high, stats.binom(n, q).pmf(support), support) > ALPHA


def test_binomial_edges_and_validation():
    noise = SecureNoise()
    assert noise.binomial(0, 0.5) == 0 and noise.binomial(10, 0.0) == 0 and noise.binomial(10, 1.0) == 10
    assert noise.binomial(2**63 - 1, 1.0) == 2**63 - 1
    assert noise.binomial(2**63 - 1, 2.0**-70) in range(0, 10)
    for source in (noise, SeededNoise(1)):
        for bad_n, bad_p in ((-1, 0.5), (2**63, 0.5), (1.5, 0.5), (10, -0.1), (10, 1.5), (10, math.nan)):
            with pytest.raises(ParameterError):
                source.binomial(bad_n, bad_p)


def test_secure_binomial_mean_with_many_successes():
    """Several batches of gaps (mean 3,000): the running position is carried across batches correctly."""
    noise = SecureNoise()
    n, p = 2**45, 3000.0 / 2**45
    draws = np.array([noise.binomial(n, p) for _ in range(20)])
    # mean within 6 standard errors (false failure ~ 2e-9)
    assert abs(draws.mean() - 3000.0) < 6 * math.sqrt(3000.0 / draws.size)


# --- noisy_values is floating-point safe --------------------------------------------------

def _lattice_exponent(x: np.ndarray) -> np.ndarray:
    """For each non-zero float, the exponent e of the coarsest power of two 2^e it is a multiple of."""
    mant, exp = np.frexp(x)
    m = np.abs(mant * 2.0**53).astype(np.int64)
    trailing = np.zeros(m.size, dtype=np.int64)
    for _ in range(53):
        even = (m & 1) == 0
        if not even.any():
            break
        trailing += even
        m = np.where(even, m >> 1, m)
    return exp.astype(np.int64) - 53 + trailing


def test_noisy_values_outputs_for_0_and_1_share_one_lattice():
    """Outputs in [0.25, 0.5) (where a float's spacing is 2^-54) from true values 0 and 1 are alike.

    Before the fix, 1 + noise was rounded after OpenDP, so every output there was a multiple of 2^-53 (the
    spacing of the noise near -0.6); from 0 about half were odd multiples of 2^-54: the last bit told 0 from 1.
    """
    from dprelease.privacy import BudgetAccountant, noisy_values

    odd = {}
    for true in (0.0, 1.0):
        scope = BudgetAccountant(1.0).root()
        x = noisy_values(np.full(20_000, true), 1.0, sensitivity=1.0, scope=scope, noise=SecureNoise(), label="v")
        x = x[(x >= 0.25) & (x < 0.5)]
        assert x.size > 500
        exponents = _lattice_exponent(x)
        assert exponents.min() == -54
        odd[true] = float(np.mean(exponents == -54))
    # about one half each (a 0.1 band is > 6 standard errors at these sample sizes)
    assert abs(odd[0.0] - 0.5) < 0.1 and abs(odd[1.0] - 0.5) < 0.1


def test_add_laplace_rejects_non_finite_values():
    with pytest.raises(ParameterError):
        SecureNoise().add_laplace(np.array([1.0, math.inf]), 1.0)
