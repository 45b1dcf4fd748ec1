"""Evaluation metrics against exact, hand-computed values."""

from __future__ import annotations

import numpy as np
import pytest

from dprelease.data import TransactionDB
from dprelease.evaluation import SupportCounter, evaluate_counting, make_workload, relative_errors, topk_utility
from dprelease.itemsets import top_k_itemsets

TABLE1 = [[0, 1, 2, 3], [1, 3], [1], [0, 1], [1], [0], [0, 1, 2, 3], [1, 2, 3]]


def _brute(db: TransactionDB, query) -> int:
    q = set(query)
    return sum(q <= set(r) for r in db.to_lists())


@pytest.mark.parametrize("n_items", [4, 30])  # 4: superset-sum table; 30: record-id lists
def test_support_counter_exact(n_items):
    db = TransactionDB.from_lists(TABLE1, n_items)
    counter = SupportCounter(db)
    assert counter.count(np.array([1])) == 7
    assert counter.count(np.array([2, 3])) == 3
    assert counter.count(np.array([0, 1, 2, 3])) == 2
    rng = np.random.default_rng(0)
    queries = [np.sort(rng.choice(4, size=int(rng.integers(1, 5)), replace=False)) for _ in range(50)]
    assert counter.count_many(queries).tolist() == [_brute(db, q) for q in queries]


def test_workload_shape():
    wl = make_workload(17, 17, n_queries=500, seed=1)
    assert wl.max_lengths == [3, 6, 10, 13, 17]
    for L, queries in zip(wl.max_lengths, wl.subsets):
        assert len(queries) == 100
        lengths = [q.size for q in queries]
        assert min(lengths) >= 1 and max(lengths) <= L
        assert all(len(set(q.tolist())) == q.size for q in queries)


def test_relative_error_uses_sanity_bound():
    err = relative_errors(np.array([0, 10, 1000]), np.array([5, 12, 900]), n_records=20_000)
    assert err.tolist() == pytest.approx([5 / 20, 2 / 20, 100 / 1000])


def test_identical_release_has_zero_error_and_full_utility():
    db = TransactionDB.from_lists(TABLE1 * 10, 4)
    res = evaluate_counting(db, db, n_queries=100)
    assert res["mean_relative_error"] == 0.0 and len(res["subsets"]) == 5
    assert topk_utility(db, db, 5) == pytest.approx(1.0)


def test_topk_utility_hand_computed():
    raw = TransactionDB.from_lists([[0], [0], [0], [1], [1], [0, 1]], 2)  # supports: {0}:4, {1}:3, {0,1}:1
    rel = TransactionDB.from_lists([[0], [0], [1], [1], [1], [2]], 3)  # {1}:3/6, {0}:2/6; {0,1} absent
    raw2 = TransactionDB.from_lists(raw.to_lists(), 3)
    # K = 2: F_K(D) = {0} (4/6), {1} (3/6); released top-2 = {1} (3/6), {0} (2/6)
    expected = 1 - (abs(4 / 6 - 2 / 6) / (4 / 6) + 0) / 2
    assert topk_utility(raw2, rel, 2) == pytest.approx(expected)


def test_top_k_tie_rule_and_item_in_every_transaction():
    # item 0 is in every record: pyfim alone would drop the singleton {0}
    db = TransactionDB.from_lists([[0, 1], [0, 1], [0, 2], [0]], 3)
    top = top_k_itemsets(db, 4)
    # ties at support 2 and 1: shorter first, then lexicographic
    assert top == [((0,), 4), ((1,), 2), ((0, 1), 2), ((2,), 1)]


def test_range_baselines_empty_and_uniform_tables():
    """The uniform table answers a box with its share of the public domain; the empty table scores at most 1."""
    from dprelease.evaluation.ranges import answer, make_range_workload, points_data, range_baselines, uniform_table
    from dprelease.relational.rps import PointDomain

    domain = PointDomain(("a", "b"), np.zeros(2), np.array([10.0, 4.0]), np.ones(2, dtype=bool))
    rng = np.random.default_rng(0)
    raw = points_data([rng.integers(0, 10, 4000), rng.integers(0, 4, 4000)], domain)
    wl = make_range_workload(domain, 400, seed=1)
    share = np.prod(np.where(wl.constrained, wl.hi - wl.lo, domain.hi - domain.lo), axis=1) / 40.0
    np.testing.assert_allclose(answer(uniform_table(domain, 4000), wl), 4000 * share)
    base = range_baselines(raw, domain, wl)
    assert 0 < base["empty"]["mean_relative_error"] <= 1
    assert base["uniform"]["mean_relative_error"] < 0.2  # uniform data: the uniform table is nearly right
