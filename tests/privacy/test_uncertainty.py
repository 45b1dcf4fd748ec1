"""Error-bar formulas: exact for one (discrete) Laplace draw, a checked approximation for sums."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dprelease.privacy import uncertainty as u


def test_laplace_formulas():
    assert u.laplace_sd(2.0) == pytest.approx(2.0 * math.sqrt(2.0))
    assert u.laplace_half_width(1.0) == pytest.approx(math.log(20.0))


@pytest.mark.parametrize("scale", [0.3, 1.0, 2.0, 10.0, 100.0])
def test_dlap_half_width_is_the_least_integer_with_tail_at_most_alpha(scale):
    k = u.dlap_half_width(scale)
    t = math.exp(-1.0 / scale)
    tail = lambda j: 2.0 * t ** (j + 1) / (1.0 + t)  # noqa: E731
    assert tail(k) <= 0.05 + 1e-12
    assert k == 0 or tail(k - 1) > 0.05
    assert u.dlap_variance(scale) <= 2.0 * scale**2


@pytest.mark.parametrize("scale", [0.5, 1.0, 4.0])
def test_dlap_sd_matches_simulation(scale):
    rng = np.random.default_rng(0)
    t = math.exp(-1.0 / scale)
    x = rng.geometric(1 - t, 200_000) - rng.geometric(1 - t, 200_000)  # a discrete Laplace draw
    assert np.std(x) == pytest.approx(u.dlap_sd(scale), rel=0.02)
    assert np.mean(np.abs(x) <= u.dlap_half_width(scale)) >= 0.95 - 0.003


@pytest.mark.parametrize("weights,scales", [([1, 1], [1, 1]), ([1, 1, 1], [0.5, 0.5, 0.5]), ([1] * 10, [2] * 10),
                                            ([1, 0.2], [3, 3]), ([1, 1], [0.5, 5]), ([0.5] * 4, [1] * 4)])
def test_sums_of_laplace_terms_cover_at_least_the_level(weights, scales):
    rng = np.random.default_rng(1)
    n = 200_000
    s = sum(w * (rng.geometric(1 - math.exp(-1 / b), n) - rng.geometric(1 - math.exp(-1 / b), n))
            for w, b in zip(weights, scales))
    integer = all(float(w).is_integer() for w in weights)
    half = u.sum_half_width(scales, weights, integer=integer)
    cover = float(np.mean(np.abs(s) <= half + 1e-9))
    assert cover >= 0.95 - 0.003
    assert cover <= 0.995  # not uselessly wide
    assert np.std(s) == pytest.approx(u.sum_sd(scales, weights), rel=0.02)


def test_clamped_counts_keep_their_coverage():
    rng = np.random.default_rng(2)
    truth = rng.integers(0, 4, 100_000)
    raw = truth + rng.geometric(1 - math.exp(-1.0), truth.size) - rng.geometric(1 - math.exp(-1.0), truth.size)
    iv = u.count_intervals(np.maximum(raw, 0), 1.0, lower=0.0)
    assert (iv.low >= 0).all() and iv.covers(truth).mean() >= 0.95
    est = u.sum_estimate(5.0, [1.0, 1.0], integer=True)
    assert est.low <= 5.0 <= est.high and est.covers(5.0)

