"""Black-box audit of RPS and the node-DP degree sequences (dprelease.audit; cases in audit/cases/rps.py)."""

from __future__ import annotations

import pytest

from dprelease.audit import audit_case, cases_for, run_audit
from dprelease.privacy.noise import NoiseSource


class HalfScale(NoiseSource):
    """A broken source: discrete Laplace at half the asked scale (twice the privacy loss)."""

    mode = "seeded"

    def __init__(self, inner: NoiseSource):
        self.inner = inner

    def discrete_laplace(self, scale, size):
        return self.inner.discrete_laplace(scale / 2.0, size)

    def laplace(self, scale, size):
        return self.inner.laplace(scale / 2.0, size)

    def uniform(self, size):
        return self.inner.uniform(size)

    def integers(self, high, size):
        return self.inner.integers(high, size)

    def binomial(self, n, p):
        return self.inner.binomial(n, p)

    def gumbel(self, size):
        return self.inner.gumbel(size)


@pytest.mark.parametrize("algorithm", ["rps", "degrees"])
def test_audit_cases_run(algorithm):
    """Smoke test of every case (a few runs each); the real audits are the slow tests below."""
    res = run_audit(algorithm, epsilon=1.0, runs=40, seed=3)
    assert not res.violation and not res.errors, res.as_json()
    assert len(res.cases) == 5  # rps: + class-split-first; degrees: + rps-summarize-cumulative


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", ["rps", "degrees"])
def test_audit_finds_no_violation(algorithm):
    res = run_audit(algorithm, epsilon=1.0, runs=4000, seed=3)
    assert not res.violation and not res.errors, res.as_json()


@pytest.mark.slow
def test_audit_flags_noise_at_half_scale():
    (case,) = [c for c in cases_for("rps", 1.0) if c.name == "rps/fixed-leaf-count"]
    assert audit_case(case, runs=1200, seed=1, noise_wrapper=HalfScale).violation


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", ["rps", "degrees"])
def test_audit_100000_runs(algorithm):
    res = run_audit(algorithm, epsilon=1.0, runs=100_000, seed=1)
    assert not res.violation and not res.errors, res.as_json()
