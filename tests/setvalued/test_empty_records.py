"""an empty record through the API belongs to no cell, in every set-valued algorithm.

DiffPart used to turn it into a real cell of mask 0 and release an empty itemset (an audit measured an epsilon
lower bound of about 6) or raise ValueError. Now an empty record is a record that lies in no partition / cell /
itemset: DiffPart, IncTDPart and Basic ignore it; PrivBasis and TF count it in N only (it supports no itemset).
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from dprelease.data import TransactionDB, Universe
from dprelease.itemsets.privbasis import privbasis
from dprelease.itemsets.tf import tf
from dprelease.privacy import SeededNoise
from dprelease.setvalued import basic, diffpart
from dprelease.setvalued.inctdpart import TBPTree

UNIVERSE = Universe.from_range(1, 4)
RECORDS = [[0, 1], [0, 1], [2], [0, 1, 2, 3]] * 10
WITH_EMPTY = TransactionDB.from_lists(RECORDS + [[]] * 3, 4)
WITHOUT = TransactionDB.from_lists(RECORDS, 4)


def _as_counter(release) -> Counter:
    return Counter({tuple(s.tolist()): int(c) for s, c in zip(release.itemsets, release.counts) if c > 0})


@pytest.mark.parametrize("fanout", [2, 4])
def test_diffpart_ignores_empty_records(zero_noise, fanout):
    rel = diffpart(WITH_EMPTY, UNIVERSE, 1.0, noise=zero_noise, fanout=fanout, c1=1e-6, c2=1e-6, branching_bound=None)
    assert _as_counter(rel) == Counter(tuple(r) for r in RECORDS)
    for seed in range(200):
        rel = diffpart(WITH_EMPTY, UNIVERSE, 5.0, noise=SeededNoise(seed), fanout=fanout)
        assert all(len(s) > 0 for s in rel.itemsets)


def test_diffpart_one_item_universe_counts_only_non_empty_records(zero_noise):
    db = TransactionDB.from_lists([[0]] * 5 + [[]] * 4, 1)
    rel = diffpart(db, Universe.from_range(1, 1), 1.0, noise=zero_noise, c1=1e-6)
    assert rel.counts.tolist() == [5]


def test_diffpart_release_is_the_same_law_with_or_without_empty_records():
    """Same seed, same release: an empty record changes nothing (it is in no cell)."""
    for seed in range(30):
        a = diffpart(WITH_EMPTY, UNIVERSE, 2.0, noise=SeededNoise(seed), fanout=2)
        b = diffpart(WITHOUT, UNIVERSE, 2.0, noise=SeededNoise(seed), fanout=2)
        assert _as_counter(a) == _as_counter(b)


def test_inctdpart_ignores_empty_records():
    for seed in range(30):
        trees = []
        for db in (WITH_EMPTY, WITHOUT):
            tree = TBPTree(4, 4.0, 1, fanout=2, c1=0.5, c2=0.5)
            tree.append(db, SeededNoise(seed))
            tree.append(db, SeededNoise(seed + 1000))
            trees.append(tree)
        a, b = (t.released_leaves() for t in trees)
        assert [s.tolist() for s in a[0]] == [s.tolist() for s in b[0]] and a[1].tolist() == b[1].tolist()
        assert all(len(s) > 0 for s in a[0])


def test_basic_ignores_empty_records(zero_noise):
    rel = basic(WITH_EMPTY, UNIVERSE, 1.0, noise=zero_noise)
    assert _as_counter(rel) == Counter(tuple(r) for r in RECORDS)


@pytest.mark.parametrize("algorithm", ["privbasis", "tf"])
def test_itemset_algorithms_count_empty_records_in_n_only(algorithm):
    for seed in range(5):
        if algorithm == "privbasis":
            rel = privbasis(WITH_EMPTY, UNIVERSE, 3, 5.0, noise=SeededNoise(seed))
        else:
            rel = tf(WITH_EMPTY, UNIVERSE, 3, 5.0, 2, noise=SeededNoise(seed))
        assert rel.itemsets and all(len(s) > 0 for s in rel.itemsets)
        assert np.isfinite(rel.counts).all()
