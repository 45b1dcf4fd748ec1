"""Exact top-k mining: tie rule, the all-transactions singleton pyfim omits, projected distinct records."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import dataset

from dprelease.data.io import read_transactions
from dprelease.data.transactions import TransactionDB
from dprelease.data.universe import Universe
from dprelease.itemsets.exact import distinct_records, itemset_supports, top_k_itemsets


def test_tie_rule_and_singleton_in_every_record():
    db = TransactionDB.from_lists([[0, 1, 2], [0, 1], [0, 2], [0, 3]], 4)
    top = top_k_itemsets(db, 4)
    # item 0 is in every record (pyfim would drop the singleton); ties broken by length then ids
    assert top == [((0,), 4), ((1,), 2), ((2,), 2), ((0, 1), 2)]


def test_mushroom_item_85_counted():
    db, u = read_transactions(dataset("mushroom", "mushroom.dat"), Universe.from_range(1, 119))
    top = top_k_itemsets(db, 3)
    assert top[0] == ((u.labels.index("85"),), 8124)


def test_distinct_records_projection_matches():
    rng = np.random.default_rng(0)
    recs = [list(np.flatnonzero(rng.random(80) < 0.1)) for _ in range(300)]
    db = TransactionDB.from_lists(recs, 80)
    items = np.arange(0, 80, 2)
    for sel in (items, items[:20]):
        want: dict = {}
        for r in recs:
            key = tuple(i for i in r if i in set(sel.tolist()))
            if key:
                want[key] = want.get(key, 0) + 1
        assert distinct_records(db, sel) == want
    full = distinct_records(db)
    assert sum(full.values()) == sum(1 for r in recs if r)


def test_itemset_supports():
    db = TransactionDB.from_lists([[0, 1, 2], [0, 1], [2]], 3)
    assert itemset_supports(db, [(0, 1), (2,), (0, 2), ()]).tolist() == [2, 2, 1, 3]


def test_top_k_random_against_bruteforce():
    from itertools import combinations

    rng = np.random.default_rng(4)
    recs = [list(np.flatnonzero(rng.random(9) < 0.4)) for _ in range(120)]
    db = TransactionDB.from_lists(recs, 9)
    counts = {}
    for r in recs:
        for L in range(1, len(r) + 1):
            for s in combinations(r, L):
                counts[s] = counts.get(s, 0) + 1
    want = sorted(counts.items(), key=lambda p: (-p[1], len(p[0]), p[0]))[:25]
    assert top_k_itemsets(db, 25) == want


def test_distinct_records_exact_with_up_to_62_items():
    """Masks are or-ed as integers: a float64 sum of 2^61 and 2^0 (and any span over 53 bits) is not exact."""
    from dprelease.data import TransactionDB

    rng = np.random.default_rng(4)
    records = [sorted(set(rng.integers(0, 62, rng.integers(1, 9)).tolist())) for _ in range(3000)]
    records += [[0, 61], [0, 1, 61], [61], [0]]
    db = TransactionDB.from_lists(records, 62)
    want: dict[tuple[int, ...], int] = {}
    for r in records:
        want[tuple(r)] = want.get(tuple(r), 0) + 1
    assert distinct_records(db) == want
    projected: dict[tuple[int, ...], int] = {}
    for r in records:
        key = tuple(i for i in r if i in (0, 30, 61))
        if key:
            projected[key] = projected.get(key, 0) + 1
    assert distinct_records(db, np.array([0, 30, 61])) == projected


def _dense_matrix(n_records: int, n_dense: int, n_rare: int, n_absent: int, seed: int) -> np.ndarray:
    """n_dense items in 99.9 % of the records, n_rare in 2 %, n_absent never: many near-universal itemsets."""
    rng = np.random.default_rng(seed)
    return np.concatenate([rng.random((n_records, n_dense)) < 0.999, rng.random((n_records, n_rare)) < 0.02,
                           np.zeros((n_records, n_absent), dtype=bool)], axis=1)


def _dense_db(*args, seed: int) -> TransactionDB:
    mat = _dense_matrix(*args, seed=seed)
    rows, cols = np.nonzero(mat)
    return TransactionDB.from_pairs(rows, cols, mat.shape[0], mat.shape[1])


def test_dense_data_top_k_finishes_with_bounded_work():
    """10,000 records, 120 items, 40 in 99.9 % of records, k = 100 (and PrivBasis's
    k1 = 120 > the 100 items present) used to hang and grow past 5 GB: 2^40 itemsets have support >= 96 %."""
    from itertools import combinations

    from dprelease.itemsets.exact import kth_support

    mat = _dense_matrix(10_000, 40, 60, 20, seed=0)
    rows, cols = np.nonzero(mat)
    db = TransactionDB.from_pairs(rows, cols, mat.shape[0], mat.shape[1])
    # Independent answer: every itemset of length <= 3 over the 40 dense items, plus every singleton.
    col = mat.T.astype(np.int64)
    exact = {(i,): int(c) for i, c in enumerate(mat.sum(axis=0).tolist()) if c > 0}
    pairs = col[:40] @ col[:40].T
    exact.update({(a, b): int(pairs[a, b]) for a, b in combinations(range(40), 2)})
    triples = {(a, b, c): int((mat[:, a] & mat[:, b] & mat[:, c]).sum()) for a, b, c in combinations(range(40), 3)}
    exact.update(triples)
    ranked = sorted(exact.items(), key=lambda p: (-p[1], len(p[0]), p[0]))
    for k in (100, 120):
        top = top_k_itemsets(db, k)
        assert top == ranked[:k]
        assert top[-1][1] > max(triples.values())  # so no itemset of length >= 4 can enter the top k
        assert kth_support(db, k) == top[-1][1]


def _brute_force_top(recs: list[list[int]], n_items: int, k: int, max_length: int | None = None):
    from itertools import combinations

    counts: dict[tuple[int, ...], int] = {}
    for r in recs:
        for size in range(1, min(len(r), max_length or len(r)) + 1):
            for s in combinations(r, size):
                counts[s] = counts.get(s, 0) + 1
    return sorted(counts.items(), key=lambda p: (-p[1], len(p[0]), p[0]))[:k]


@pytest.mark.parametrize("k", [5, 30, 200, 600])
@pytest.mark.parametrize("max_length", [None, 2, 3])
def test_dense_top_k_against_brute_force(k, max_length):
    db = _dense_db(400, 9, 4, 2, seed=k)  # 2^9 near-universal itemsets, many ties at the top
    recs = db.to_lists()
    assert top_k_itemsets(db, k, max_length=max_length) == _brute_force_top(recs, 15, k, max_length)


def test_identical_columns_tie_rule():
    """All subsets of 8 identical items share one support: the tie rule (length, then ids) decides."""
    recs = [list(range(8))] * 30 + [[8]] * 5
    db = TransactionDB.from_lists(recs, 9)
    assert top_k_itemsets(db, 50) == _brute_force_top(recs, 9, 50)


def test_staged_pair_level_gives_the_one_stage_top_k(monkeypatch):
    """The pair level counted in two stages (the most frequent base items first, then only the items
    that can still reach the top k) gives the same top k, ties and order included, as counting every pair of the
    base items; both ways the second stage goes (the first stage holds the items needed, or the pairs with an item
    outside it are counted) are taken."""
    from dprelease.data.generators import kosarak_like
    import dprelease.itemsets.exact as ex

    branches = []
    staged = ex._staged_pairs

    def spy(data, base, supports, *rest):
        out = staged(data, base, supports, *rest)
        half = np.sort(base[np.argsort(-supports[base], kind="stable")[: ex._first_stage(base.size)]])
        branches.append(np.array_equal(out[0], half))  # the first stage held every item still needed
        return out

    cases = [(kosarak_like(n_records=4000, n_items=300, mean_length=6.0, seed=s), k)
             for s in range(3) for k in (70, 150, 400)]
    rng = np.random.default_rng(12)  # flat supports with a few strong pairs: the k-th support barely rises
    flat = [sorted(set(rng.choice(120, size=int(rng.integers(1, 5)), replace=False).tolist())) for _ in range(3000)]
    cases += [(TransactionDB.from_lists(flat, 120), k) for k in (70, 100)]
    for db, k in cases:
        monkeypatch.setattr(ex, "_staged_pairs", spy)
        got = ex.top_k_itemsets(db, k)
        monkeypatch.setattr(ex, "_STAGED_PAIRS", 10**9)  # one stage
        want = ex.top_k_itemsets(db, k)
        monkeypatch.undo()
        assert got == want, k
    assert True in branches and False in branches, branches
