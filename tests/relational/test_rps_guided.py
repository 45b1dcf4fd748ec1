"""Guided RPS (the default of ``dprelease rps``): noisy marginals, PrivTree-stopped partition, marginal sampling.

Unit tests of the marginals' post-processing, the budget (every charge typed, the chain sums to epsilon), the
partition (disjoint leaves that cover the domain), the release (inside the schema, independent of the input
order), and range-count utility against the data-independent baselines on Adult and on generated tables of
other shapes (the same rule everywhere: no per-dataset constant)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import REPO, dataset

from dprelease.data import bayesnet, generators
from dprelease.data.table import EncodedTable, load_schema, parse_schema, read_adult, encode_frame
from dprelease.engine.local import LocalRegions
from dprelease.evaluation.ranges import evaluate_ranges, make_range_workload, table_data, uniform_answers, answer
from dprelease.privacy import BudgetAccountant, SeededNoise
from dprelease.privacy.accountant import epsilon_of
from dprelease.relational.marginals import Marginal, noisy_marginals
from dprelease.relational.rps import PointDomain, rps, table_domain
from dprelease.relational.rps_guided import MAX_DEPTH, guided_partition, rps_guided


def _domain(lo, hi, integer) -> PointDomain:
    return PointDomain(tuple(f"d{j}" for j in range(len(lo))), np.asarray(lo, float), np.asarray(hi, float),
                       np.asarray(integer, dtype=bool))


# -- the marginal's post-processing -----------------------------------------------------------------------------
def test_split_points_lie_strictly_inside_and_halve_the_mass():
    m = Marginal(np.array([0.0, 10.0, 20.0, 100.0]), np.array([80.0, 20.0, 0.0]), integer=True)
    a = np.array([0.0, 0.0, 20.0, 5.0, 3.0])
    b = np.array([100.0, 20.0, 100.0, 7.0, 5.0])
    x = m.split_points(a, b)
    assert np.all(x >= a + 1) and np.all(x <= b - 1) and np.all(x == np.rint(x))
    assert x[0] == pytest.approx(6.0, abs=1.0)  # half of the 100 records lies below ~6.25
    assert x[2] == 60.0  # no mass in [20, 100): the midpoint
    r = Marginal(np.array([0.0, 1.0, 2.0]), np.array([1.0, 0.0]), integer=False)
    y = r.split_points(np.array([0.0, 1.0]), np.array([2.0, 2.0]))
    assert 0.0 < y[0] < 2.0 and 1.0 < y[1] < 2.0


def test_samples_stay_in_their_range_and_follow_the_marginal():
    m = Marginal(np.array([0.0, 10.0, 20.0, 100.0]), np.array([80.0, 20.0, 0.0]), integer=True)
    rng = np.random.default_rng(0)
    a = np.zeros(20_000)
    b = np.full(20_000, 100.0)
    v = m.sample(a, b, rng)
    assert v.dtype == np.int64 and v.min() >= 0 and v.max() <= 19  # nothing where the marginal has no mass
    assert abs(np.mean(v < 10) - 0.8) < 0.02
    w = m.sample(np.full(1000, 20.0), np.full(1000, 30.0), rng)  # no mass there: uniform in [20, 30)
    assert w.min() >= 20 and w.max() <= 29 and len(np.unique(w)) == 10
    r = Marginal(np.array([0.0, 4.0]), np.array([3.0]), integer=False).sample(np.full(50, 1.0), np.full(50, 2.0), rng)
    assert r.dtype == np.float64 and r.min() >= 1.0 and r.max() < 2.0


def test_marginals_charge_typed_events_and_a_one_value_dimension_costs_nothing():
    rng = np.random.default_rng(1)
    cols = [rng.integers(0, 1000, 500).astype(float), rng.integers(0, 5, 500).astype(float), np.zeros(500)]
    dom = _domain([0, 0, 0], [1000, 5, 1], [True, True, True])
    acc = BudgetAccountant(0.6)
    margs = noisy_marginals(LocalRegions(cols, dom), dom.names, dom.lo, dom.hi, dom.integer, 0.6,
                            scope=acc.root(), noise=SeededNoise(2))
    kinds = [e.mechanism for e in acc.ledger]
    assert kinds == ["privtree", "discrete_laplace", "discrete_laplace"]  # wide: tree + cells; 5 values: cells
    assert all(epsilon_of(e) is not None and epsilon_of(e) <= e.epsilon * (1 + 1e-12) for e in acc.ledger)
    assert acc.spent == pytest.approx(0.6)  # 0.3 per paid dimension; the one-value dimension is free
    assert margs[2].weights.tolist() == [1.0] and margs[1].edges.tolist() == [0, 1, 2, 3, 4, 5]
    assert margs[0].edges[0] == 0 and margs[0].edges[-1] == 1000 and np.all(np.diff(margs[0].edges) > 0)


# -- the partition and the release ------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(4))
def test_leaves_are_disjoint_cover_the_domain_and_the_chain_sums_to_epsilon(seed):
    rng = np.random.default_rng(seed)
    n = 3000
    cols = [np.minimum(rng.exponential(20, n), 255).astype(int).astype(float), rng.integers(0, 4, n).astype(float),
            rng.normal(5, 1, n).clip(0, 9.99)]
    dom = _domain([0, 0, 0], [256, 4, 10], [True, True, False])
    part, margs = guided_partition(LocalRegions(cols, dom), dom, 0.7, noise=SeededNoise(seed))
    vol = np.prod(part.hi - part.lo, axis=1)
    assert vol.sum() == pytest.approx(np.prod(dom.hi - dom.lo))  # cover ...
    centre = (part.lo + part.hi) / 2  # ... and disjoint: every leaf's centre lies in exactly one leaf
    inside = np.all((centre[:, None, :] >= part.lo[None]) & (centre[:, None, :] < part.hi[None]), axis=2)
    assert np.all(inside.sum(axis=1) == 1)
    assert part.accountant.spent <= 0.7 and part.accountant.spent == pytest.approx(0.7, rel=1e-12)
    assert {e.mechanism for e in part.accountant.ledger} == {"privtree", "discrete_laplace"}
    assert part.depth.max() <= MAX_DEPTH and part.n_leaves > 4  # PrivTree went past the root on 3,000 records


def _clinic(n: int = 6000, seed: int = 3) -> EncodedTable:
    frame, spec = generators.skewed_label_table(n, seed=seed)
    return encode_frame(frame, parse_schema(spec))


def test_release_is_inside_the_schema_and_independent_of_the_input_order():
    table = _clinic(3000)
    rel = rps_guided(table, 1.0, noise=SeededNoise(5))
    for a, c in zip(table.schema.attributes, rel.table.columns):
        if a.kind == "numeric":
            assert c.min() >= a.lo and c.max() < a.hi
            if a.integer:
                assert np.all(c == np.floor(c))
        else:
            assert c.min() >= 0 and c.max() < a.taxonomy.n_leaves
    assert rel.manifest["parameters"]["method"] == "guided" and rel.manifest["privacy"]["epsilon_spent"] == 1.0
    perm = np.random.default_rng(0).permutation(table.n_records)
    again = rps_guided(table.take(perm), 1.0, noise=SeededNoise(5))
    for c, d in zip([rel.table.y, *rel.table.columns], [again.table.y, *again.table.columns]):
        assert np.array_equal(c, d)


# -- utility: range counts against the baselines ------------------------------------------------------------------
def _errors(table: EncodedTable, eps: float, seeds=range(2)) -> tuple[float, float, float, float]:
    """(guided, faithful, uniform, empty) mean relative errors on 1,000 random range queries."""
    dom = table_domain(table.schema)
    w = make_range_workload(dom, 1000, seed=0)
    raw = table_data(table)
    true = answer(raw, w)
    base = evaluate_ranges(raw, raw, w, raw_answers=true, domain=dom)["baselines"]
    guided = np.mean([evaluate_ranges(raw, table_data(rps_guided(table, eps, noise=SeededNoise(s)).table), w,
                                      raw_answers=true)["mean_relative_error"] for s in seeds])
    paper = np.mean([evaluate_ranges(raw, table_data(rps(table, eps, noise=SeededNoise(s)).table), w,
                                     raw_answers=true)["mean_relative_error"] for s in seeds])
    return float(guided), float(paper), base["uniform"], base["empty"]


def test_uniform_baseline_is_the_expected_answer_of_a_uniform_table():
    dom = _domain([0, 0], [10, 1.0], [True, False])
    w = make_range_workload(dom, 40, seed=1)
    rng = np.random.default_rng(0)
    pts = [rng.integers(0, 10, 200_000).astype(float), rng.random(200_000)]
    from dprelease.evaluation.ranges import points_data

    assert np.allclose(answer(points_data(pts, dom), w), uniform_answers(dom, w, 200_000), rtol=0.05, atol=300)


def test_guided_beats_the_uniform_table_and_the_paper_on_adult():
    schema = load_schema(REPO / "examples" / "adult-schema.yaml")
    adult = read_adult(dataset("adult"), schema)
    for eps in (0.1, 1.0):
        guided, paper, uniform, empty = _errors(adult, eps)
        assert guided <= 0.6 * uniform and guided < 0.5 * paper, (eps, guided, paper, uniform)
        assert guided < empty, (eps, guided, empty)  # and it beats the table that says nothing


@pytest.mark.parametrize("name", ["clinic", "bayesnet"])
def test_guided_beats_the_uniform_table_on_generated_tables(name):
    if name == "clinic":
        table = _clinic()
    else:
        cols, _ = bayesnet.generate_bayesnet(8000, seed=2)
        table = encode_frame(pd.DataFrame(cols), parse_schema(bayesnet.SCHEMA))
    for eps in (0.1, 1.0):
        guided, paper, uniform, empty = _errors(table, eps)
        assert guided <= 0.6 * uniform and guided < paper, (name, eps, guided, paper, uniform)
    assert guided < empty, (name, guided, empty)  # at eps = 1


def test_a_table_without_a_class():
    frame, spec = generators.unlabelled_table(20_000, seed=1)
    schema = parse_schema(spec, require_class=False)
    assert not schema.has_class and schema.column_names == list(frame.columns)
    table = encode_frame(frame, schema)
    rel = rps_guided(table, 1.0, noise=SeededNoise(0))
    assert set(rel.table.y.tolist()) <= {0} and "class" in rel.manifest["domain"] and \
        rel.manifest["domain"]["class"] is None
    assert rel.arrow().column_names == list(frame.columns)  # no class column written
    guided, paper, uniform, empty = _errors(table, 1.0, seeds=range(1))
    assert guided <= 0.6 * uniform and guided < empty
    with pytest.raises(Exception, match="'class' must give a name"):
        parse_schema(spec)  # the other commands still need their class
