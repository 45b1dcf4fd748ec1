"""The fill of generalized records (setvalued/shape.py): public bins, post-processing rules, the draws."""

from __future__ import annotations

import math

import numpy as np
import pytest

from reference_trie import follow_each_record
from dprelease.data.generators import long_baskets
from dprelease.data.transactions import TransactionDB
from dprelease.data.universe import Universe
from dprelease.engine import kernels
from dprelease.engine.local import LocalTransactions
from dprelease.evaluation.shape import length_shape
from dprelease.privacy import SeededNoise
from dprelease.setvalued.prefixpart import build_prefix_tree, prefix_diffpart
from dprelease.setvalued.shape import (
    EXACT_LENGTHS, _draw_distinct, _guide_table, _inverse_cdf, length_distribution, length_edges, target_lengths,
)
from dprelease.privacy import BudgetAccountant


def test_length_edges_are_public_and_cover_the_universe():
    e = length_edges(16_470)
    assert e[0] == 1 and e[-1] == 16_471 and np.all(np.diff(e) >= 1)
    assert np.all(np.diff(e)[: EXACT_LENGTHS] == 1)  # exact lengths first
    assert e.size < 100  # about 1.5x wider bins past them
    assert length_edges(6).tolist() == [1, 2, 3, 4, 5, 6, 7]


def test_length_distribution_keeps_passing_bins_pools_a_sparse_tail_and_drops_noise():
    edges = length_edges(200)
    n_bins = edges.size - 1
    eps = 1.0
    tau = math.log(n_bins) / eps
    bins = np.zeros(n_bins, dtype=np.int64)
    bins[0] = 1000  # length 1: passes alone
    bins[2] = int(tau) - 1  # length 3 alone: dropped (and the run before it)
    bins[39:43] = int(tau * 0.8)  # lengths 40-43: none passes alone, the pool of four does
    dist = length_distribution(bins, edges, eps)
    assert dist[1] == 1000 and dist[3] == 0
    assert dist[40:44].sum() == pytest.approx(4 * int(tau * 0.8)) and np.all(dist[40:44] > 0)
    assert dist.size == 44  # nothing past the last kept bin
    assert length_distribution(np.zeros(n_bins, dtype=np.int64), edges, eps).sum() == 0


def test_target_lengths_fit_both_margins_and_never_shorten_a_record():
    dist = np.array([0, 50, 30, 10, 10], dtype=np.float64)  # records per length 1..4
    k = np.array([0, 1, 2, 3])
    counts = np.array([20, 50, 25, 5])
    table = target_lengths(k, counts, dist)
    assert table.sum(axis=1).tolist() == [20, 50, 25, 5]  # every record gets one target
    for row in range(4):
        assert table[row, : max(row, 1)].sum() == 0  # L >= max(k, 1)
    assert np.abs(table.sum(axis=0)[1:5] - dist[1:5]).max() <= 2  # the length margin, up to rounding


def test_draw_distinct_gives_distinct_items_in_proportion_to_the_weights():
    noise = SeededNoise(3)
    w = np.zeros(2000)
    w[:10] = 100.0
    w[10:] = 1.0
    for n_items in (300, 2000):  # Gumbel keys (few candidates) and rounds with repetition (many)
        need = np.full(4000, 5)
        r, i = _draw_distinct(need, w[:n_items], n_items, noise)
        assert np.all(np.bincount(r, minlength=4000) == 5)
        assert np.unique(r * n_items + i).size == r.size  # distinct within a record
        heavy = np.isin(i, np.arange(10)).mean()
        assert heavy > 0.3  # 10 items of weight 100 against the rest at 1


def test_guide_table_lookup_is_searchsorted_exactly():
    """The fill's inverse-CDF lookup equals np.searchsorted(side="right") on every draw: heavy and zero weights,
    runs of tiny weights, and draws at the cumulative values, just below them and at the bucket edges."""
    rng = np.random.default_rng(11)
    for trial in range(200):
        n = int(rng.integers(1, 3000))
        w = rng.pareto(1.0, n) * (rng.random(n) < rng.random())
        w[rng.integers(n)] += 1.0
        if trial % 5 == 0:
            w = np.where(rng.random(n) < 0.5, 1e-9, w)
        cdf = np.cumsum(w)
        cdf /= cdf[-1]
        exact = np.searchsorted(cdf, np.arange(n) / n, side="right")
        assert np.abs(_guide_table(cdf) - exact).max() <= 1  # a first guess, off only where rounding is
        u = rng.random(4000)
        if trial % 4 == 0:
            u = np.concatenate([u, cdf[:-1], np.nextafter(cdf[:-1], 0.0), np.arange(n) / n])
        u = u[(u >= 0) & (u < 1)]
        for guide in (exact, _guide_table(cdf), np.maximum(exact - 2, 0)):  # an off guess is still exact
            assert np.array_equal(_inverse_cdf(cdf, guide, u), np.searchsorted(cdf, u, side="right")), trial


def test_hidden_sums_kernel_matches_the_class_walk():
    db = long_baskets(3000, 300, seed=1)
    acc = BudgetAccountant(1.0)
    tree, _ = build_prefix_tree(db, db.n_items, 0.15, 0.45, scope=acc.root(), noise=SeededNoise(2))
    rank = np.full(db.n_items, -1, dtype=np.int64)
    rank[tree.F] = np.arange(tree.m)
    got = LocalTransactions(db).prefix_hidden_sums(rank, tree.child, tree.is_class, tree.level, 5)
    # direct: each record's class by following its path, its ranked items at ranks >= the class's level
    node = follow_each_record(tree, db)
    want = np.zeros(tree.m)
    for row, items in enumerate(db.to_lists()):
        if node[row] < 0:
            continue
        hidden = [int(rank[i]) for i in items if rank[i] >= tree.level[node[row]]]
        for r in hidden:
            want[r] += min(1.0, 5 / len(hidden))
    assert np.allclose(got, want, rtol=0, atol=1e-9)
    whole = kernels.exact_sums(kernels.prefix_hidden_digits(db, rank, tree.child, tree.is_class, tree.level, 5),
                               tree.m)
    assert np.array_equal(whole, got)  # block by block or whole: the same bits


def test_hidden_sums_from_the_sorted_keys_are_the_engine_pass():
    """The fill's hidden supports summed from the build's sorted keys (a class is a range of them) are the engine
    pass's, bit for bit: empty records, records without a frequent item, classes without records, an empty F, a
    trie of one class, blocks of a few records (the pass's block size made small), up to 62 ranks."""
    from dprelease.engine import local as local_engine

    rng = np.random.default_rng(8)
    shapes = set()
    for trial in range(60):
        n_items = int(rng.integers(3, 90))
        n_rows = int(rng.integers(1, 400 if trial % 2 else 16))  # few records: classes that hold none
        rows = [sorted(set(rng.integers(0, n_items, size=int(rng.integers(0, 12))).tolist())) for _ in range(n_rows)]
        db = TransactionDB.from_lists(rows, n_items)
        cells: list = []
        eps = [0.05, 1.0, 20.0][trial % 3]  # few cells kept, some, most
        tree, _ = build_prefix_tree(db, n_items, eps, 3 * eps, scope=BudgetAccountant(1e9).root(),
                                    noise=SeededNoise(trial), max_items=[62, 5, 1][trial % 3], cells_out=cells)
        rank = np.full(n_items, -1, dtype=np.int64)
        rank[tree.F] = np.arange(tree.m)
        ell = [1, 3, 5][trial % 3]
        with pytest.MonkeyPatch.context() as mp:
            if trial % 2:
                mp.setattr(local_engine, "PASS_ROWS", 7)
            got = cells[0].hidden_sums(tree.level, tree.m, ell)
            want = LocalTransactions(db).prefix_hidden_sums(rank, tree.child, tree.is_class, tree.level, ell)
        assert np.array_equal(got, want), trial
        shapes.add((min(tree.m, 2), min(int(tree.is_class.sum()), 3)))
    assert {(0, 1), (2, 3)} <= shapes  # an empty F (the root the one class) and tries of several classes


def test_fill_restores_the_length_distribution_of_long_baskets():
    """Generated sparse data with long baskets (mean 15): the bare release is ~3 items a record; with the fill
    the mean length is within 20 % of the raw one and the TV distance well below the single-item baseline."""
    db = long_baskets(20_000, 2_000, seed=4)
    u = Universe.from_range(1, db.n_items)
    bare = length_shape(db, prefix_diffpart(db, u, 1.0, noise=SeededNoise(1), shape_share=0).to_db())
    filled = length_shape(db, prefix_diffpart(db, u, 1.0, noise=SeededNoise(1), shape_share=0.1).to_db())
    raw_mean = filled["raw_mean_length"]
    assert bare["released_mean_length"] < 0.4 * raw_mean
    assert abs(filled["released_mean_length"] - raw_mean) <= 0.2 * raw_mean
    assert filled["tv"] < 0.1 < 0.5 < bare["tv"] and filled["baselines"]["single_items"] > 0.9


def test_length_shape_baselines():
    raw = TransactionDB.from_lists([[0]] * 3 + [[0, 1]] * 1, 4)
    empty = TransactionDB.from_lists([], 4)
    got = length_shape(raw, empty)
    assert got["tv"] == 1.0 and got["released_mean_length"] == 0.0
    assert got["baselines"]["single_items"] == pytest.approx(0.25)
    assert got["baselines"]["empty"] == 1.0 and 0 < got["baselines"]["uniform_subsets"] <= 1
    assert length_shape(raw, raw)["tv"] == 0.0


def test_distinct_records_group_identical_rows_in_canonical_order():
    """The fill's records merged: each distinct non-empty row once, with the number of rows holding it, in the
    order of Python's sorted tuples (so the release finds them in canonical order); rows repeated, prefixes of
    each other, and empty."""
    from collections import Counter

    from dprelease.setvalued.shape import _distinct_records

    rng = np.random.default_rng(8)
    for trial in range(60):
        n_items = int(rng.integers(1, 40))
        base = [tuple(sorted(rng.choice(n_items, size=int(rng.integers(0, min(n_items, 6) + 1)), replace=False)))
                for _ in range(int(rng.integers(1, 8)))]
        rows = [base[int(rng.integers(len(base)))] for _ in range(int(rng.integers(0, 80)))]
        pair = np.array([r * n_items + i for r, row in enumerate(rows) for i in row], dtype=np.int64)
        got, counts = _distinct_records(rng.permutation(pair), n_items, len(rows))
        want = sorted(Counter(r for r in rows if r).items())
        assert [tuple(x.tolist()) for x in got] == [k for k, _ in want], trial
        assert counts.tolist() == [c for _, c in want], trial
