"""Degree sequences under node-DP (issue 10): the SNAP reader, the projection, every sensitivity by brute force."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import ZeroNoise, dataset

from dprelease.data.graphs import graph_from_edges, read_degree_file, read_edge_list
from dprelease.errors import InputError, ParameterError
from dprelease.evaluation.degrees import degree_metrics
from dprelease.graphs import cumulative_degrees, edge_addition, hay_degrees, regenerate_graph, release_degrees, rps_degrees
from dprelease.privacy import SeededNoise


# -- reading ----------------------------------------------------------------------------------------------
def test_reader_skips_comments_header_self_loops_and_repeated_edges(tmp_path):
    f = tmp_path / "g.txt"
    f.write_text("# a comment\n% another\nFromNodeId\tToNodeId\n1 2\n2 1\n\n3 3\n2\t5\n7 2 \n")
    g = read_edge_list(f)
    assert g.header_skipped and g.nodes.tolist() == [1, 2, 3, 5, 7]
    assert g.edges.tolist() == [[0, 1], [1, 3], [1, 4]]
    assert g.degrees().tolist() == [1, 3, 0, 1, 1]  # node 3 has only a self-loop
    assert g.self_loops == 1 and g.duplicate_edges == 1


@pytest.mark.parametrize("text, message", [
    ("1 2\n3 x\n", "g.txt:2: node id 'x' is not an integer"),
    ("1 2\n3 4 5\n", "g.txt:2: expected two node ids, got 3 field(s)"),
    ("1 2\n3.5 4\n", "g.txt:2: node id '3.5' is not an integer"),
    ("a b\nc d\n", "g.txt:2: node id 'c' is not an integer"),  # only the first data line may be a header
    ("# nothing\n", "no edges"),
])
def test_reader_errors_name_file_and_line(tmp_path, text, message):
    f = tmp_path / "g.txt"
    f.write_text(text)
    with pytest.raises(InputError, match=message.replace(".", r"\.").replace("(", r"\(").replace(")", r"\)")):
        read_edge_list(f)


def test_degree_file_reader(tmp_path):
    f = tmp_path / "d.txt"
    f.write_text("# released\n0\n3\n\n3\n")
    assert read_degree_file(f).tolist() == [0, 3, 3]
    f.write_text("1\n-2\n")
    with pytest.raises(InputError, match="d.txt:2"):
        read_degree_file(f)


def test_real_graphs_match_their_published_counts():
    expected = {"ca-grqc.txt": (5242, 14484, 81), "ca-hepth.txt": (9877, 25973, 65), "facebook.txt": (4039, 88234, 1045)}
    for name, (n, m, top) in expected.items():
        g = read_edge_list(dataset("graphs", name))
        assert (g.n_nodes, g.n_edges, int(g.degrees().max())) == (n, m, top)
    assert read_edge_list(dataset("graphs", "facebook.txt")).header_skipped


# -- projection and sensitivities ---------------------------------------------------------------------------
def random_graph(rng: np.random.Generator) -> object:
    n = int(rng.integers(3, 13))
    p = float(rng.uniform(0.15, 0.9))
    iu = np.triu_indices(n, 1)
    keep = rng.random(iu[0].size) < p
    ids = rng.choice(1000, size=n, replace=False)
    return graph_from_edges(ids[iu[0][keep]], ids[iu[1][keep]], extra_nodes=ids)


def test_projection_bounds_degrees_and_is_the_identity_when_theta_is_large():
    rng = np.random.default_rng(0)
    for _ in range(100):
        g = random_graph(rng)
        theta = int(rng.integers(1, 6))
        keep, deg = edge_addition(g, theta, int(rng.integers(2**62)))
        assert deg.max(initial=0) <= theta
        assert np.array_equal(deg, np.bincount(g.edges[keep].ravel(), minlength=g.n_nodes))
        # maximal: every dropped edge has an endpoint at theta
        assert all(deg[u] == theta or deg[v] == theta for u, v in g.edges[~keep])
        _, full = edge_addition(g, g.n_nodes, 7)
        assert np.array_equal(full, g.degrees())


def _quality_sum(deg: np.ndarray, regions: list[tuple[int, int, int]]) -> np.ndarray:
    out = []
    for lo, hi, pivot in regions:
        inside = deg[(deg >= lo) & (deg < hi)]
        left = int((inside < pivot).sum())
        out.append(-abs(2 * left - inside.size))
    return np.asarray(out)


def _random_regions(rng: np.random.Generator, theta: int) -> tuple[list[tuple[int, int, int]], np.ndarray]:
    """A random partition of [0, theta] into ranges, each with a pivot inside (one RPS level), and its cuts."""
    cuts = np.sort(rng.choice(np.arange(1, theta + 1), size=int(rng.integers(0, theta + 1)), replace=False)) \
        if theta >= 1 else np.zeros(0, dtype=np.int64)
    bounds = np.concatenate([[0], cuts, [theta + 1]]).astype(int)
    regions = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        regions.append((int(lo), int(hi), int(rng.integers(lo, hi + 1))))
    return regions, bounds


def test_every_node_dp_sensitivity_by_brute_force():
    """Remove each node in turn from small random graphs: every quantity moves by at most its stated bound."""
    rng = np.random.default_rng(2024)
    checked = 0
    for _ in range(250):
        g = random_graph(rng)
        theta = int(rng.integers(1, 6))
        key = int(rng.integers(2**62))
        _, deg = edge_addition(g, theta, key)
        regions, bounds = _random_regions(rng, theta)
        for x in range(g.n_nodes):
            g2 = g.remove_node(x)
            _, deg2 = edge_addition(g2, theta, key)  # same key: the same public order
            others = np.delete(deg, x)
            # 1. the other nodes' degrees move by at most deg(x) <= theta in total
            assert np.abs(others - deg2).sum() <= deg[x] <= theta
            # 2. degree histogram and range counts: 2 theta + 1
            h1 = np.bincount(deg, minlength=theta + 1)
            h2 = np.bincount(deg2, minlength=theta + 1)
            assert np.abs(h1 - h2).sum() <= 2 * theta + 1
            r1 = np.histogram(deg, bins=bounds)[0]
            r2 = np.histogram(deg2, bins=bounds)[0]
            assert np.abs(r1 - r2).sum() <= 2 * theta + 1
            # 3. theta-cumulative histogram: theta + 1; and cumulative counts at any subset of boundaries
            assert np.abs(np.cumsum(h1) - np.cumsum(h2)).sum() <= theta + 1
            c1, c2 = np.cumsum(r1), np.cumsum(r2)  # C at the upper end of every range of the partition
            assert np.abs(c1 - c2).sum() <= theta + 1
            # 4. median qualities of one level, summed over its regions: 2 theta + 1
            assert np.abs(_quality_sum(deg, regions) - _quality_sum(deg2, regions)).sum() <= 2 * theta + 1
            # 5. sorted sequence, top m, zero-padded: 2 theta, for every m
            s1, s2 = np.sort(deg)[::-1], np.sort(deg2)[::-1]
            for m in range(1, g.n_nodes + 3):
                a = np.concatenate([s1, np.zeros(m)])[:m]
                b = np.concatenate([s2, np.zeros(m)])[:m]
                assert np.abs(a - b).sum() <= 2 * theta
            checked += 1
    assert checked > 1000


def test_the_bounds_are_reached():
    """A star: removing the centre empties theta leaves; the histogram moves by 2 theta + 1 when leaves had
    degree 1 ... (tight examples keep the derivation honest)."""
    theta = 3
    g = graph_from_edges(np.zeros(theta, dtype=np.int64), np.arange(1, theta + 1))  # star, centre 0
    _, deg = edge_addition(g, theta, 1)
    _, deg2 = edge_addition(g.remove_node(0), theta, 1)
    h1, h2 = np.bincount(deg, minlength=theta + 1), np.bincount(deg2, minlength=theta + 1)
    assert np.abs(h1 - h2).sum() == 2 * theta + 1
    assert np.abs(np.cumsum(h1) - np.cumsum(h2)).sum() == theta + 1
    s1, s2 = np.sort(deg)[::-1], np.sort(np.concatenate([deg2, [0]]))[::-1]
    assert np.abs(s1 - s2).sum() == 2 * theta


# -- the three methods --------------------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["rps", "hay", "cumulative"])
def test_methods_spend_exactly_epsilon_and_stay_in_range(method):
    rng = np.random.default_rng(1)
    proj = rng.integers(0, 9, 400)
    noise = SeededNoise(4)
    fn = {"rps": rps_degrees, "hay": hay_degrees, "cumulative": cumulative_degrees}[method]
    rel = fn(proj, 8, 0.7, noise=noise)
    assert math.fsum(e.epsilon for e in rel.accountant.ledger) == pytest.approx(0.7, rel=1e-12)
    assert all(e.chain_total <= 0.7 for e in rel.accountant.ledger)
    assert rel.degrees.min(initial=0) >= 0 and rel.degrees.max(initial=0) <= 8
    assert np.array_equal(rel.degrees, np.sort(rel.degrees))


@pytest.mark.parametrize("method", ["hay", "cumulative"])
def test_without_noise_the_baselines_return_the_projected_sequence(method):
    proj = np.array([0, 1, 1, 2, 5, 5, 3, 8])
    fn = {"hay": hay_degrees, "cumulative": cumulative_degrees}[method]
    rel = fn(proj, 8, 1.0, noise=ZeroNoise())
    assert rel.degrees.tolist() == sorted(proj.tolist())


@pytest.mark.parametrize("summarize", ["counts", "cumulative"])
def test_rps_fixed_without_noise_returns_the_projected_histogram(summarize):
    proj = np.array([0, 1, 1, 2, 5, 5, 3, 7])
    rel = rps_degrees(proj, 7, 1.0, noise=ZeroNoise(), partitioning="fixed", summarize=summarize)  # single degrees
    assert rel.degrees.tolist() == sorted(proj.tolist())
    assert math.fsum(e.epsilon for e in rel.accountant.ledger) == pytest.approx(1.0, rel=1e-12)
    sens = rel.manifest["sensitivity"]
    assert sens == ({"median_quality_per_level": 15, "leaf_counts": 15} if summarize == "counts"
                    else {"median_quality_per_level": 15, "boundary_cumulative_counts": 8})


def test_a_degree_above_theta_is_projected_not_refused():
    g = graph_from_edges(np.zeros(10, dtype=np.int64), np.arange(1, 11))  # centre of degree 10
    rel = release_degrees(g, 4, 1.0, method="cumulative", noise=ZeroNoise())
    assert rel.degrees.max() <= 4 and rel.n_nodes == 11
    with pytest.raises(ParameterError):
        release_degrees(g, 0, 1.0, noise=ZeroNoise())
    with pytest.raises(ParameterError):
        release_degrees(g, 4, 1.0, method="hay", depth=3, noise=ZeroNoise())


# -- metrics and regeneration -------------------------------------------------------------------------------
def test_degree_metrics_worked_example():
    m = degree_metrics(np.array([1, 1, 2, 4]), np.array([1, 2, 2, 2]))
    # p_true = (0, .5, .25, 0, .25), p_rel = (0, .25, .75, 0, 0); F_true = (0, .5, .75, .75, 1), F_rel = (0, .25, 1, 1, 1)
    assert m["ks"] == pytest.approx(0.25)
    assert m["l1"] == pytest.approx(0.25 + 0.5 + 0.25)
    assert m["emd"] == pytest.approx(0.25 + 0.25 + 0.25)
    assert degree_metrics(np.array([2, 3]), np.array([2, 3])) == {"ks": 0.0, "l1": 0.0, "emd": 0.0}
    assert degree_metrics(np.array([2]), np.zeros(0, dtype=int)) == {"ks": 1.0, "l1": 1.0, "emd": 2.0}


@pytest.mark.parametrize("model", ["configuration", "havel-hakimi"])
def test_regenerated_graph_is_simple_and_follows_the_sequence(model):
    seq = np.array([1, 1, 2, 2, 2, 3, 3])
    edges = regenerate_graph(seq, np.random.default_rng(0), model)
    assert (edges[:, 0] < edges[:, 1]).all() and len({tuple(e) for e in edges.tolist()}) == len(edges)
    deg = np.bincount(edges.ravel(), minlength=seq.size)
    assert (deg <= np.sort(seq)).all()
    if model == "havel-hakimi":
        assert deg.tolist() == sorted(seq.tolist())
