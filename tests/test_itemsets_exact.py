"""Exact top-k mining: tie rule, the all-transactions singleton pyfim omits, projected distinct records."""

from __future__ import annotations

import numpy as np
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
