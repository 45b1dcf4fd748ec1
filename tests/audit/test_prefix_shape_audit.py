"""The audit pairs of the fill's statistics (DiffPart-Prefix's record length histogram and hidden frequent-item
supports): no violation at the real noise, and a violation when the length histogram loses its noise."""

from __future__ import annotations

import pytest

from dprelease.audit import audit_case, cases_for


def _case(name: str):
    (case,) = [c for c in cases_for("diffpart-prefix", 1.0) if c.name == name]
    return case


@pytest.mark.parametrize("name", ["diffpart-prefix/length-bin-at-threshold", "diffpart-prefix/hidden-wide-record"])
def test_fill_pairs_find_no_violation(name):
    res = audit_case(_case(name), runs=1000, seed=2026, n_cases=len(cases_for("diffpart-prefix", 1.0)))
    assert not res.violation and not res.error, res.as_json()


def test_length_pair_flags_a_histogram_without_noise(monkeypatch):
    """Power: with the noise of the length bins removed, the length-5 bin is dropped on D (one record under the
    threshold) and kept on D' every time; the audit must report a violation."""
    import dprelease.setvalued.shape as shape

    def exact_bins(lengths, counts, edges, epsilon, *, scope, noise):
        scope.spend(epsilon, "record length histogram (broken: no noise)", mechanism="discrete_laplace",
                    sensitivity=1, scale=1.0 / epsilon)
        return shape.binned_lengths(lengths, counts, edges)

    monkeypatch.setattr(shape, "noisy_length_bins", exact_bins)
    import dprelease.setvalued.prefixpart as prefixpart

    monkeypatch.setattr(prefixpart, "noisy_length_bins", exact_bins)
    res = audit_case(_case("diffpart-prefix/length-bin-at-threshold"), runs=400, seed=7,
                     n_cases=len(cases_for("diffpart-prefix", 1.0)))
    assert res.violation, res.as_json()
