"""Black-box audit of RPS and the node-DP degree sequences (dprelease.audit; cases in audit/cases/rps.py).

The degree pairs are written on the files ``dprelease degrees`` reads and read by its reader; the old release
(node set from the edge file with node-DP sensitivities) is kept as a broken fixture the audit must flag."""

from __future__ import annotations

import pytest

from dprelease.audit import audit_case, cases_for, run_audit
from dprelease.audit.cases.rps import (GraphFiles, degree_file_cases, file_neighbour, read_graph_files,
                                       release_node_set_from_edges)
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


@pytest.mark.parametrize("algorithm, n_cases", [("rps", 5), ("degrees", 17), ("rps-guided", 4)])
def test_audit_cases_run(algorithm, n_cases):
    """Smoke test of every case (a few runs each); the real audits are the slow tests below."""
    res = run_audit(algorithm, epsilon=1.0, runs=40, seed=3)
    assert not res.violation and not res.errors, res.as_json()
    assert len(res.cases) == n_cases  # degrees: 5 method settings x 3 file-level pairs, + 2 one-edge-or-none


def test_degree_pairs_are_file_level_neighbours_read_by_the_command_reader():
    cases = {c.name: c for c in cases_for("degrees", 1.0)}
    hub = cases["degrees/cumulative-hub-with-leaf-friends"]
    assert isinstance(hub.d, GraphFiles) and hub.d.nodes is None
    assert file_neighbour(hub.d_prime, 9) == hub.d  # D' minus node 9's lines is D
    g, g_prime = read_graph_files(hub.d), read_graph_files(hub.d_prime)
    assert not g.declared_nodes and g.n_nodes == 6 and g_prime.n_nodes == 6 + 1 + 30  # the leaves vanish from D
    declared = cases["degrees/cumulative-declared-hub-with-leaf-friends"]
    g, g_prime = read_graph_files(declared.d), read_graph_files(declared.d_prime)
    assert g.declared_nodes and g.n_nodes == 36 and g_prime.n_nodes == 37  # the leaves stay, isolated


@pytest.mark.parametrize("setting", ["cumulative", "rps", "hay"])
def test_audit_flags_the_node_set_read_off_the_edges_and_passes_the_release(setting):
    """Power: the old release (the edge file's ids as the node set, node-DP sensitivities) is flagged on the
    hub-with-leaf-friends pair at a fixed seed; the command's release passes the same pair, seed and runs."""
    name = f"degrees/{setting}-hub-with-leaf-friends"
    (broken,) = [c for c in degree_file_cases(1.0, release=release_node_set_from_edges) if c.name == name]
    (fixed,) = [c for c in cases_for("degrees", 1.0) if c.name == name]
    res = audit_case(broken, runs=2000, seed=1, n_cases=17)
    assert res.violation and res.epsilon_lower_bound > 1.5, res.as_json()
    res = audit_case(fixed, runs=2000, seed=1, n_cases=17)
    assert not res.violation, res.as_json()


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


def test_audit_flags_guided_rps_with_noise_at_half_scale_and_passes_it_at_full_scale():
    """Power of the guided cases: on the one-value domain the release is one leaf count at 0.9 eps, so a noise
    source at half scale (1.8 eps) is flagged at a fixed seed; the release passes the same pair, seed and runs."""
    (case,) = [c for c in cases_for("rps-guided", 1.0) if c.name == "rps-guided/one-value-domain"]
    assert audit_case(case, runs=2000, seed=1, noise_wrapper=HalfScale, n_cases=4).violation
    assert not audit_case(case, runs=2000, seed=1, n_cases=4).violation


@pytest.mark.slow
def test_guided_audit_finds_no_violation():
    res = run_audit("rps-guided", epsilon=1.0, runs=4000, seed=3)
    assert not res.violation and not res.errors, res.as_json()
