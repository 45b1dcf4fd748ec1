"""RPS on tables: the EM median, budget chains, exact summaries without noise, order, neighbours."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from conftest import ZeroNoise
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from dprelease.data.table import EncodedTable, parse_schema
from dprelease.errors import BudgetExceededError, ParameterError
from dprelease.privacy import BudgetAccountant, SecureNoise, SeededNoise
from dprelease.privacy.median import check_sensitivity, median_intervals, private_medians
from dprelease.relational.rps import (
    PointDomain, choose_dimensions, consistent_leaf_counts, flat_histogram, remaining_budget, rps, rps_partition,
    synthesize, table_domain, table_points,
)


# -- the EM median ---------------------------------------------------------------------------------------
def _quality(values: np.ndarray, x: float) -> int:
    left = int((values < x).sum())
    return -abs(left - (values.size - left))


def test_median_intervals_group_candidates_by_equal_quality():
    values = np.array([1, 1, 2, 5, 5, 5, 6])  # domain [0, 8): candidates x = 1..7
    uniq, counts = np.unique(values, return_counts=True)
    iv = median_intervals(1, np.zeros(uniq.size, dtype=np.int64), uniq, counts, np.array([0.0]), np.array([8.0]),
                          np.array([True]))
    # x in (0,1]: L=0; (1,2]: L=2; (2,5]: L=3; (5,6]: L=6; (6,7]: L=7
    assert iv.low.tolist() == [1, 2, 3, 6, 7]
    assert iv.high.tolist() == [1, 2, 5, 6, 7]
    assert iv.measure.tolist() == [1, 1, 3, 1, 1]
    assert iv.quality.tolist() == [-7, -3, -1, -5, -7]
    for lo, hi, q in zip(iv.low, iv.high, iv.quality):
        for x in range(int(lo), int(hi) + 1):
            assert _quality(values, x) == q
    assert iv.measure.sum() == 7  # every candidate once


def test_median_intervals_reals_and_empty_regions_and_many_regions():
    # region 0: reals on [0, 10) with values 2, 2, 7; region 1: lattice [3, 6) with no records
    iv = median_intervals(2, np.array([0, 0]), np.array([2.0, 7.0]), np.array([2, 1]), np.array([0.0, 3.0]),
                          np.array([10.0, 6.0]), np.array([False, True]))
    assert iv.start.tolist() == [0, 3, 4]
    assert iv.low[:3].tolist() == [0, 2, 7] and iv.high[:3].tolist() == [2, 7, 10]
    assert iv.measure[:3].tolist() == [2, 5, 3] and iv.quality[:3].tolist() == [-3, -1, -3]
    assert (iv.low[3], iv.high[3], iv.measure[3], iv.quality[3]) == (4, 5, 2, 0)


def test_quality_sensitivity_is_one_by_brute_force():
    rng = np.random.default_rng(0)
    for _ in range(200):
        v = rng.integers(0, 12, rng.integers(1, 15))
        for i in range(v.size):
            w = np.delete(v, i)
            assert all(abs(_quality(v, x) - _quality(w, x)) <= 1 for x in range(1, 12))


@pytest.mark.parametrize("noise_kind", ["seeded", "secure"])
def test_em_median_matches_its_closed_form(noise_kind):
    """Chi-square of the pivots (6,000 seeded, 1,500 secure: OpenDP's exact sampler is slower) against
    P(x) ~ exp(eps q(x) / 2); false-failure rate alpha = 1e-6."""
    values = np.array([1, 1, 2, 5, 5, 5, 6])
    eps = 0.8
    xs = np.arange(1, 8)
    p = np.exp(eps * np.array([_quality(values, x) for x in xs]) / 2.0)
    p /= p.sum()
    n = 6000 if noise_kind == "seeded" else 1500
    uniq, counts = np.unique(values, return_counts=True)
    # n identical regions in one vectorised call: n independent draws
    region = np.repeat(np.arange(n), uniq.size)
    iv = median_intervals(n, region, np.tile(uniq, n), np.tile(counts, n), np.zeros(n), np.full(n, 8.0),
                          np.ones(n, dtype=bool))
    noise = SeededNoise(11) if noise_kind == "seeded" else SecureNoise()
    acc = BudgetAccountant(eps)
    pivots = private_medians(iv, eps, sensitivity=1, scope=acc.root(), noise=noise, label="test")
    assert len(acc.ledger) == 1 and acc.ledger[0].epsilon == eps  # one charge for all (disjoint) regions
    observed = np.bincount(pivots.astype(np.int64), minlength=8)[1:]
    assert observed.sum() == n
    _, pvalue = stats.chisquare(observed, n * p)
    assert pvalue > 1e-6, (observed, n * p)


def test_em_median_charges_before_drawing_and_validates():
    iv = median_intervals(1, np.array([0]), np.array([3.0]), np.array([4]), np.array([0.0]), np.array([8.0]),
                          np.array([True]))
    acc = BudgetAccountant(0.5)
    with pytest.raises(BudgetExceededError):
        private_medians(iv, 0.6, sensitivity=1, scope=acc.root(), noise=SeededNoise(0), label="x")
    assert acc.ledger == []
    for bad in (0, -1, float("nan"), float("inf")):
        with pytest.raises(ParameterError):
            private_medians(iv, 0.1, sensitivity=bad, scope=acc.root(), noise=SeededNoise(0), label="x")
        with pytest.raises(ParameterError):
            check_sensitivity(bad)


# -- tables -------------------------------------------------------------------------------------------------
def random_table(rng: np.random.Generator, n: int, n_cat: int, n_int: int, n_real: int) -> EncodedTable:
    attrs = []
    for i in range(n_cat):
        leaves = [f"c{i}_{k}" for k in range(int(rng.integers(1, 7)))]
        cut = int(rng.integers(1, len(leaves) + 1))
        tree = {"Any": [{"A": leaves[:cut]}] + ([{"B": leaves[cut:]}] if cut < len(leaves) else [])}
        attrs.append({"name": f"cat{i}", "type": "categorical", "taxonomy": tree})
    for i in range(n_int):
        lo = int(rng.integers(-5, 5))
        attrs.append({"name": f"int{i}", "type": "numeric", "bounds": [lo, lo + int(rng.integers(1, 40))],
                      "integer": True})
    for i in range(n_real):
        attrs.append({"name": f"real{i}", "type": "numeric", "bounds": [0.0, 1.0]})
    schema = parse_schema({"class": {"name": "y", "values": ["a", "b", "c"][: int(rng.integers(2, 4))]},
                           "attributes": attrs or [{"name": "z", "type": "numeric", "bounds": [0, 3], "integer": True}]})
    cols = []
    for a in schema.attributes:
        if a.kind == "categorical":
            cols.append(rng.integers(0, a.taxonomy.n_leaves, n))
        elif a.integer:
            cols.append(rng.integers(int(a.lo), int(a.hi), n).astype(np.float64))
        else:
            cols.append(rng.uniform(a.lo, a.hi, n))
    return EncodedTable(schema, tuple(cols), rng.integers(0, schema.n_classes, n))


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(0, 200), depth=st.integers(0, 9),
       eps=st.floats(0.01, 10.0), alpha=st.floats(0.01, 0.9), partitioning=st.sampled_from(["balanced", "fixed"]),
       stop=st.sampled_from([None, -1e9, 3.0, 1e9]), consistency=st.booleans(),
       shape=st.tuples(st.integers(0, 2), st.integers(0, 2), st.integers(0, 1)))
def test_every_root_to_leaf_chain_sums_to_epsilon(seed, n, depth, eps, alpha, partitioning, stop, consistency, shape):
    rng = np.random.default_rng(seed)
    table = random_table(rng, n, *shape)
    share = alpha if (partitioning == "balanced" or stop is not None) and depth > 0 else None
    rel = rps(table, eps, noise=SeededNoise(seed), depth=depth, split_share=share, partitioning=partitioning,
              stop_threshold=stop, consistency=consistency)
    acc = rel.accountant
    leaf = [e for e in acc.ledger if e.label.startswith("leaf counts")]
    assert leaf
    for entry in acc.ledger:
        assert entry.chain_total <= eps  # never above, not even by a rounding error
    for entry in leaf:  # every chain ends in a leaf count, and there it has spent exactly eps
        assert entry.chain_total == pytest.approx(eps, rel=1e-12, abs=0)
    assert acc.summary()["epsilon_spent"] == eps
    part = rel.partition
    # each leaf's own budget: its depth's level shares plus its count = eps
    assert part.count_epsilon.size == part.n_leaves
    assert (part.counts.size == part.lo.shape[0]) and (part.depth <= depth).all()
    # the leaves tile the domain: disjoint boxes whose volumes add up (lattice dimensions)
    dom = table_domain(table.schema)
    if dom.integer.all():
        assert np.prod(part.hi - part.lo, axis=1).sum() == pytest.approx(dom.cells())


def test_nodes_composition_charges_levels_and_leaves_once_each():
    cols = [np.array([0, 1, 1, 2, 3, 3, 3, 5, 7])]
    dom = PointDomain(("degree",), np.array([0.0]), np.array([8.0]), np.array([True]))
    part = rps_partition(cols, dom, 1.0, noise=SeededNoise(1), depth=3, composition="nodes", sensitivity=7)
    labels = [e.label for e in part.accountant.ledger]
    assert labels == ["median pivots, depth 0", "median pivots, depth 1", "median pivots, depth 2",
                      "leaf counts (all leaves, joint sensitivity)"]
    assert part.accountant.ledger[-1].chain_total == pytest.approx(1.0, rel=1e-12)
    assert math.fsum(e.epsilon for e in part.accountant.ledger) == pytest.approx(1.0, rel=1e-12)
    assert (part.count_epsilon == part.count_epsilon[0]).all()


def test_remaining_budget_never_overshoots():
    acc = BudgetAccountant(1.0)
    scope = acc.root()
    for _ in range(7):
        scope.spend(0.1, "x", mechanism="reserved")
    rest = remaining_budget(1.0, scope)
    assert scope.chain_spent + rest <= 1.0 and rest == pytest.approx(0.3, rel=1e-12)


def _inside(cols: list[np.ndarray], lo: np.ndarray, hi: np.ndarray, integer: np.ndarray) -> np.ndarray:
    m = np.ones(cols[0].size, dtype=bool)
    for j, c in enumerate(cols):
        m &= (c >= lo[j]) & (c < hi[j])
    return m


@pytest.mark.parametrize("partitioning", ["balanced", "fixed"])
@pytest.mark.parametrize("consistency", [False, True])
def test_without_noise_every_leaf_holds_its_true_count(partitioning, consistency):
    rng = np.random.default_rng(3)
    table = random_table(rng, 300, 2, 2, 1)
    rel = rps(table, 1.0, noise=ZeroNoise(), depth=6, partitioning=partitioning, consistency=consistency)
    part = rel.partition
    raw = table_points(table)
    syn = table_points(rel.table)
    dom = table_domain(table.schema)
    assert rel.n_records == table.n_records
    for lo, hi, c in zip(part.lo, part.hi, part.counts):
        assert _inside(raw, lo, hi, dom.integer).sum() == c
        assert _inside(syn, lo, hi, dom.integer).sum() == c


def test_synthetic_points_lie_in_their_leaves_and_are_whole_on_lattices():
    lo = np.array([[0.0, 0.0], [5.0, 0.5]])
    hi = np.array([[5.0, 0.5], [7.0, 1.0]])
    cols = synthesize(lo, hi, np.array([4, -3]), np.array([True, False]), np.random.default_rng(0))
    assert cols[0].size == 4
    assert ((cols[0] >= 0) & (cols[0] < 5) & (cols[0] == np.floor(cols[0]))).all()
    assert ((cols[1] >= 0) & (cols[1] < 0.5)).all()


def test_fixed_partitioning_splits_at_midpoints_round_robin():
    schema = parse_schema({"class": {"name": "y", "values": ["0", "1"]},
                           "attributes": [{"name": "a", "type": "numeric", "bounds": [0, 16], "integer": True},
                                          {"name": "r", "type": "numeric", "bounds": [0.0, 1.0]}]})
    table = EncodedTable(schema, (np.arange(16.0), np.linspace(0, 0.99, 16)), np.zeros(16, dtype=np.int64))
    rel = rps(table, 1.0, noise=ZeroNoise(), depth=3, partitioning="fixed", class_split="first")
    part = rel.partition
    # depth 0 splits the class [0, 2) at 1; depth 1 splits a [0, 16) at 8; depth 2 splits r at 0.5
    assert sorted(set(part.hi[:, 0].tolist())) == [1.0, 2.0]
    assert sorted(set(part.lo[:, 1].tolist())) == [0.0, 8.0]
    assert sorted(set(part.lo[:, 2].tolist())) == [0.0, 0.5]
    assert part.n_leaves == 8 and rel.accountant.ledger[0].epsilon == 1.0  # all of eps on the leaves
    dims = choose_dimensions(5, np.array([[0.0, 3.0, 0.0]]), np.array([[1.0, 4.0, 1.0]]), np.array([True, True, True]))
    assert dims.tolist() == [-1]  # a single cell


@pytest.mark.parametrize("partitioning", ["balanced", "fixed"])
def test_class_last_gives_both_classes_the_same_predictor_boxes(partitioning):
    table = random_table(np.random.default_rng(9), 500, 2, 2, 1)
    rel = rps(table, 1.0, noise=SeededNoise(2), depth=6, partitioning=partitioning)
    part = rel.partition
    assert rel.manifest["parameters"]["class_split"] == "last"
    assert rel.manifest["parameters"]["dimension_order"][-1] == "y"
    boxes = Counter(tuple(np.concatenate([lo[1:], hi[1:]]).tolist()) for lo, hi in zip(part.lo, part.hi))
    n_cls = table.schema.n_classes
    # every final predictor box is cut by class at depth h - 1 (into 2 ranges of the class codes)
    assert n_cls >= 2 and all(c == 2 for c in boxes.values())
    assert (part.depth == 6).all()
    dims = choose_dimensions(5, np.array([[0.0, 0.0, 0.0]]), np.array([[2.0, 9.0, 9.0]]),
                             np.array([True, True, True]), last_dim=0, max_depth=6)
    assert dims.tolist() == [0]
    dims = choose_dimensions(0, np.array([[0.0, 0.0, 0.0]]), np.array([[2.0, 9.0, 9.0]]),
                             np.array([True, True, True]), last_dim=0, max_depth=6)
    assert dims.tolist() == [1]


def test_output_order_is_a_function_of_the_release_not_of_the_input_order():
    rng = np.random.default_rng(5)
    table = random_table(rng, 400, 2, 2, 0)
    perm = rng.permutation(table.n_records)
    a = rps(table, 1.0, noise=SeededNoise(8), depth=7)
    b = rps(table.take(perm), 1.0, noise=SeededNoise(8), depth=7)
    for ca, cb in zip(table_points(a.table), table_points(b.table)):
        assert np.array_equal(ca, cb)
    pts = np.stack(table_points(a.table), axis=1)
    # leaves in canonical order, inside a leaf sorted by the generated values
    assert a.partition.lo.tolist() == sorted(a.partition.lo.tolist())
    assert len(pts) == a.n_records


def test_parameter_errors():
    table = random_table(np.random.default_rng(0), 20, 1, 1, 0)
    for kwargs in ({"depth": -1}, {"split_share": 1.0}, {"split_share": -0.1}, {"partitioning": "median"},
                   {"partitioning": "fixed", "split_share": 0.2}, {"split_share": 0.0},
                   {"stop_threshold": float("nan")}):
        with pytest.raises(ParameterError):
            rps(table, 1.0, noise=SeededNoise(0), **kwargs)
    with pytest.raises(ParameterError):
        rps(table, 0.0, noise=SeededNoise(0))


def test_manifest_parts_hold_public_facts_only():
    table = random_table(np.random.default_rng(1), 123, 1, 1, 0)
    rel = rps(table, 1.0, noise=SeededNoise(0), depth=4)
    text = repr(rel.manifest)
    assert "123" not in text
    assert rel.manifest["parameters"]["dimension_order"][-1] == "y"  # the class is split last
    assert rel.manifest["budget_split"]["per_level"] == pytest.approx(0.3 / 4)


def _tree_gls_brute_force(part) -> np.ndarray:
    """Weighted least squares over all node counts with the sum constraints, solved densely (small trees)."""
    # enumerate nodes level by level
    nodes = []  # (level, index)
    for lev, info in enumerate(part.inner):
        for i in range(info["noisy"].size):
            nodes.append((lev, i))
    deepest = len(part.inner)
    last_split = part.inner[-1]["split"]
    if last_split.size:
        nodes += [(deepest, i) for i in range(2 * last_split.size)]
    leaves = [(int(d), int(i)) for d, i in zip(part.depth, part.region_index)]
    # unknowns: the leaf counts; every node is the sum of the leaves below it
    def below(lev, i):
        if (lev, i) in leaves:
            return [(lev, i)]
        sp = part.inner[lev]["split"].tolist()
        k = sp.index(i)
        return below(lev + 1, 2 * k) + below(lev + 1, 2 * k + 1)
    rows, y, w = [], [], []
    var = lambda e: 2 * math.exp(-e) / (1 - math.exp(-e)) ** 2  # noqa: E731
    for lev, info in enumerate(part.inner):
        for i in range(info["noisy"].size):
            r = np.zeros(len(leaves))
            for lf in below(lev, i):
                r[leaves.index(lf)] = 1
            rows.append(r)
            y.append(info["noisy"][i])
            w.append(1 / var(info["epsilon"]))
    for k, lf in enumerate(leaves):
        r = np.zeros(len(leaves))
        r[k] = 1
        rows.append(r)
        y.append(part.counts[k])
        w.append(1 / var(part.count_epsilon[k]))
    a = np.asarray(rows) * np.sqrt(w)[:, None]
    b = np.asarray(y, dtype=float) * np.sqrt(w)
    return np.linalg.lstsq(a, b, rcond=None)[0]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_consistency_is_the_weighted_least_squares_solution(seed):
    rng = np.random.default_rng(seed)
    table = random_table(rng, 120, 1, 1, 0)
    rel = rps(table, 1.0, noise=SeededNoise(seed), depth=4, stop_threshold=4.0 if seed == 2 else None,
              consistency=True)
    fast = consistent_leaf_counts(rel.partition)
    assert np.allclose(fast, _tree_gls_brute_force(rel.partition), atol=1e-6)


def test_flat_histogram_is_one_charge_and_refuses_large_domains():
    dom = PointDomain(("a", "b"), np.zeros(2), np.array([4.0, 3.0]), np.array([True, True]))
    noisy, acc = flat_histogram([np.array([0, 3, 3]), np.array([2, 2, 2])], dom, 1.0, noise=ZeroNoise())
    assert noisy.shape == (4, 3) and noisy[3, 2] == 2 and noisy.sum() == 3
    assert [e.epsilon for e in acc.ledger] == [1.0]
    big = PointDomain(("a", "b"), np.zeros(2), np.array([4096.0, 4096.0]), np.array([True, True]))
    with pytest.raises(ParameterError, match="does not fit"):
        flat_histogram([np.zeros(1), np.zeros(1)], big, 1.0, noise=ZeroNoise())


# -- neighbouring datasets -----------------------------------------------------------------------------------
def _neighbour_events(table: EncodedTable, runs: int, seed: int, **kwargs) -> Counter:
    noise = SeededNoise(seed)
    c: Counter = Counter()
    for _ in range(runs):
        rel = rps(table, 0.8, noise=noise, **kwargs)
        part = rel.partition
        c[f"root split {part.lo[part.lo[:, 1] > 0, 1].min(initial=99):g}"] += 1
        c["records>=10"] += rel.n_records >= 10
        c["records>=14"] += rel.n_records >= 14
        big = part.counts.max(initial=0)
        c["max leaf>=5"] += big >= 5
    return c


@pytest.mark.slow
@pytest.mark.parametrize("partitioning", ["balanced", "fixed"])
def test_neighbouring_tables_stay_within_e_to_the_epsilon(partitioning):
    """D and D + one record that moves the median: P[E|D] <= e^eps P[E|D'] (+ 5 binomial standard errors)."""
    schema = parse_schema({"class": {"name": "y", "values": ["0", "1"]},
                           "attributes": [{"name": "a", "type": "numeric", "bounds": [0, 6], "integer": True}]})
    base = [0, 1, 1, 2, 4, 4, 5, 5, 5]
    d1 = EncodedTable(schema, (np.array(base, dtype=float),), np.zeros(len(base), dtype=np.int64))
    d2 = EncodedTable(schema, (np.array(base + [1], dtype=float),), np.zeros(len(base) + 1, dtype=np.int64))
    runs = 1000
    kwargs = {"depth": 2, "partitioning": partitioning, "split_share": 0.5 if partitioning == "balanced" else None}
    r1 = _neighbour_events(d1, runs, 1, **kwargs)
    r2 = _neighbour_events(d2, runs, 2, **kwargs)
    bound = math.exp(0.8)
    for event in set(r1) | set(r2):
        p, q = r1[event] / runs, r2[event] / runs
        se = math.sqrt((p * (1 - p) + q * (1 - q)) / runs) + 1e-3
        assert p <= bound * q + 5 * bound * se, (event, p, q)
        assert q <= bound * p + 5 * bound * se, (event, p, q)
