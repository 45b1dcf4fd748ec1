"""One comparison rule for real and test-and-generated cells at every threshold.

Generated empty cells used k = ceil(threshold - 1e-12) while real cells were tested with >= threshold, so at a
threshold in (n, n + 1e-12] an empty cell could be released with count n, which a real cell never could. From the
CLI: --c1 1.4142135623730951 gives the leaf threshold sqrt(2) * c1 / eps = 2.0000000000000004 at eps = 1.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dprelease.data import TransactionDB, Universe
from dprelease.errors import ParameterError
from dprelease.privacy import BudgetAccountant, SeededNoise, discrete_laplace_tail, threshold_counts
from dprelease.privacy.noise import NoiseSource
from dprelease.setvalued import diffpart


class _PinnedNoise(NoiseSource):
    """No noise on explicit counts; every implicit cell passes; the geometric tail of a generated cell is 0."""

    mode = "pinned-test"

    def discrete_laplace(self, scale, size):
        return np.zeros(int(size), dtype=np.int64)

    def laplace(self, scale, size):
        return np.zeros(int(size))

    def uniform(self, size):
        return np.full(int(size), 0.5)

    def integers(self, high, size):
        return np.zeros(int(size), dtype=np.int64)

    def binomial(self, n, p):
        return int(n)


THRESHOLDS = [n + d for n in (1, 2, 3, 7) for d in (0.0, 1e-13, -1e-13, 0.5, -0.5)] + [2.0000000000000004]


@pytest.mark.parametrize("threshold", THRESHOLDS)
def test_real_and_generated_cells_pass_by_the_same_rule(threshold):
    counts = np.arange(0, 10, dtype=np.int64)  # real cells whose noisy count is exactly their count
    res = threshold_counts(counts, 5, 1.0, threshold, scope=BudgetAccountant(1.0).root(), noise=_PinnedNoise(),
                           label="t")
    real_released = counts[res.passed]
    smallest_real = int(real_released.min())
    assert smallest_real == math.ceil(threshold) and (counts[~res.passed] < threshold).all()
    # a generated cell is released with the smallest value a real cell can have, never below the threshold
    assert res.zero_passed.size == 5 and (res.zero_passed == smallest_real).all()
    assert (res.zero_passed >= threshold).all()


@pytest.mark.parametrize("threshold", THRESHOLDS)
def test_tail_probability_is_the_real_cells_pass_probability(threshold):
    eps = 0.9
    k, log_q = discrete_laplace_tail(eps, threshold)
    assert k == math.ceil(threshold)
    t = math.exp(-eps)
    # P(DLap >= threshold) for a real zero cell, summed from the pmf
    xs = np.arange(1, 400)
    pmf = (1 - t) / (1 + t) * t**xs
    assert math.exp(log_q) == pytest.approx(pmf[xs >= threshold].sum(), rel=1e-12)


@pytest.mark.parametrize("bad", [0.0, -1.0, math.nan, math.inf])
def test_threshold_must_be_positive_and_finite(bad):
    with pytest.raises(ParameterError):
        threshold_counts(np.array([1]), 1, 1.0, bad, scope=BudgetAccountant(1.0).root(), noise=SeededNoise(0),
                         label="t")


def test_expected_generated_cells_are_bounded_from_public_inputs():
    acc = BudgetAccountant(1.0)
    with pytest.raises(ParameterError, match="test-and-generate would release"):
        threshold_counts(np.array([1]), 2**52, 1.0, 1.0, scope=acc.root(), noise=SeededNoise(0), label="t")
    assert acc.spent == 0.0  # refused before any charge or draw


def test_issue_cli_threshold_reproduction():
    """The audit pair on 2 items: D = 3 x {1}, D' = D + {0}, --c1 1.4142135623730951, eps = 1.

    Leaf threshold 2.0000000000000004: on D the empty cell {0} used to be released with count 2 (generated), on D'
    the real cell {0} never can be (it needs a noisy count >= 3): an unbounded likelihood ratio.
    """
    universe = Universe.from_range(0, 1)
    d = TransactionDB.from_lists([[1]] * 3, 2)
    d_prime = TransactionDB.from_lists([[1]] * 3 + [[0]], 2)
    c1 = 1.4142135623730951
    rel = diffpart(d, universe, 1.0, noise=SeededNoise(0), c1=c1, keep_trace=True)
    assert rel.trace[0].threshold == 2.0000000000000004
    for db in (d, d_prime):
        for seed in range(1500):
            rel = diffpart(db, universe, 1.0, noise=SeededNoise(seed), c1=c1)
            assert (rel.counts >= 3).all(), (seed, rel.counts)


def test_issue_cli_reproduction_releases_no_count_below_the_threshold(tmp_path):
    from collections import Counter

    from dprelease.cli import main

    data = tmp_path / "d.dat"
    data.write_text("1\n1\n1\n")  # D = 3 x {1} over the universe 0..1: the cell {0} is empty
    for seed in range(40):
        out = tmp_path / f"r{seed}.dat"
        assert main(["diffpart", str(data), "--universe", "0..1", "--epsilon", "1", "--c1", "1.4142135623730951",
                     "--seed", str(seed), "--quiet", "-o", str(out)]) == 0
        lines = Counter(out.read_text().splitlines())
        assert all(count >= 3 for count in lines.values()), (seed, lines)


def test_old_rule_is_behind_the_private_switch(monkeypatch):
    """The audit's broken fixture: with the old slack a generated cell is released below the threshold."""
    import dprelease.privacy.mechanisms as mechanisms

    monkeypatch.setattr(mechanisms, "_THRESHOLD_SLACK", 1e-12)
    res = threshold_counts(np.array([2]), 3, 1.0, 2.0000000000000004, scope=BudgetAccountant(1.0).root(),
                           noise=_PinnedNoise(), label="t")
    assert not res.passed[0] and (res.zero_passed == 2).all()
