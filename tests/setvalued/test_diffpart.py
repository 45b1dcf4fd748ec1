"""DiffPart and Basic: budget chains, exactness without noise, neighbouring datasets, limits."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dprelease.data import TransactionDB, Universe
from dprelease.errors import ParameterError
from dprelease.privacy import SeededNoise
from dprelease.setvalued import basic, diffpart


def _random_db(rng: np.random.Generator, n_items: int, n_records: int) -> TransactionDB:
    records = []
    for _ in range(n_records):
        size = int(rng.integers(1, min(n_items, 6) + 1))
        records.append(sorted(rng.choice(n_items, size=size, replace=False).tolist()))
    return TransactionDB.from_lists(records, n_items)


@settings(max_examples=40, deadline=None)
@given(
    n_items=st.integers(2, 40),
    fanout=st.integers(2, 6),
    n_records=st.integers(1, 150),
    budget=st.floats(0.05, 5.0),
    seed=st.integers(0, 10_000),
)
def test_every_chain_sums_to_at_most_B_and_exactly_B_at_leaves(n_items, fanout, n_records, budget, seed):
    rng = np.random.default_rng(seed)
    db = _random_db(rng, n_items, n_records)
    # small constants so that many partitions (and empty ones) are explored
    release = diffpart(db, Universe.from_range(1, n_items), budget, noise=SeededNoise(seed), fanout=fanout,
                       c1=0.3, c2=0.3, keep_trace=True)
    acc = release.accountant
    assert acc.spent <= budget * (1 + 1e-9)
    for entry in acc.ledger:
        assert entry.chain_total <= budget * (1 + 1e-9)
        if entry.label == "leaf counts":
            assert entry.chain_total == pytest.approx(budget, rel=1e-9)
    # dense data: the chains do reach the leaves, and there they spend exactly B
    dense = TransactionDB.from_lists([[0, n_items - 1]] * 3000, n_items)
    rel = diffpart(dense, Universe.from_range(1, n_items), max(budget, 1.0), noise=SeededNoise(seed), fanout=fanout,
                   keep_trace=True)
    leaf = [e for e in rel.accountant.ledger if e.label == "leaf counts"]
    assert leaf and all(e.chain_total == pytest.approx(max(budget, 1.0), rel=1e-9) for e in leaf)


@pytest.mark.parametrize("fanout", [2, 3, 10])
def test_without_noise_the_release_is_the_data(zero_noise, fanout):
    rng = np.random.default_rng(fanout)
    db = _random_db(rng, 23, 300)
    release = diffpart(db, Universe.from_range(1, 23), 1.0, noise=zero_noise, fanout=fanout, c1=1e-6, c2=1e-6,
                       branching_bound=None)
    got = Counter({tuple(s.tolist()): int(c) for s, c in zip(release.itemsets, release.counts)})
    assert got == Counter(tuple(r) for r in db.to_lists())
    assert release.manifest["release"]["records"] == db.n_records


def test_basic_without_noise_is_the_data_and_refuses_large_universes(zero_noise):
    db = TransactionDB.from_lists([[0], [0, 1], [2], [0, 1]], 3)
    release = basic(db, Universe.from_range(1, 3), 1.0, noise=zero_noise)
    got = {tuple(s.tolist()): int(c) for s, c in zip(release.itemsets, release.counts)}
    assert got == {(0,): 1, (0, 1): 2, (2,): 1}
    with pytest.raises(ParameterError, match="over the limit of 20"):
        basic(TransactionDB.from_lists([[0]], 21), Universe.from_range(1, 21), 1.0, noise=zero_noise)


def test_manifest_is_public_facts_only():
    db = TransactionDB.from_lists([[0, 1], [1], [2]] * 50, 3)
    release = diffpart(db, Universe.from_range(1, 3), 1.0, noise=SeededNoise(3), fanout=2)
    m = release.manifest
    assert m["algorithm"] == "diffpart" and m["epsilon"] == 1.0
    assert m["parameters"] == {"fanout": 2, "c1": 1.5, "c2": 1.5, "branching_bound": 0.5}
    assert m["rng"]["mode"] == "seeded" and m["rng"]["seed"] == 3 and "warning" in m["rng"]
    assert m["domain"]["source"] == "declared-range"
    assert m["privacy"]["epsilon_spent"] <= 1.0 * (1 + 1e-9)  # the exact chain total (float splits), rounded up
    text = repr(m)
    assert "150" not in text  # the true record count never appears
    assert "time" not in text.replace("created_utc", "")


@pytest.mark.parametrize("bad", [{"epsilon": 0}, {"epsilon": -1}, {"fanout": 1}, {"c1": 0}, {"c2": float("nan")}])
def test_parameter_errors(bad):
    args = {"epsilon": 1.0, "fanout": 2, "c1": 1.0, "c2": 1.0} | bad
    db = TransactionDB.from_lists([[0]], 2)
    with pytest.raises(ParameterError):
        diffpart(db, Universe.from_range(1, 2), args.pop("epsilon"), noise=SeededNoise(0), **args)


def _events(rel) -> list[str]:
    sets = {tuple(s.tolist()): int(c) for s, c in zip(rel.itemsets, rel.counts)}
    out = []
    if (0, 1) in sets:
        out.append("has {0,1}")
    if sets.get((0, 1), 0) >= 3:
        out.append("{0,1} >= 3")
    if sum(sets.values()) >= 6:
        out.append("total >= 6")
    if (2,) in sets:
        out.append("has {2}")
    return out


@pytest.mark.parametrize("name", ["diffpart", "basic"])
def test_neighbouring_datasets_stay_within_e_to_the_epsilon(name):
    """Empirical check on D and D + {one record}: P[E|D] <= e^eps P[E|D'] for a few events.

    Through the shared helper of tests/neighbours.py (5 binomial standard errors each side; fixed seeds).
    """
    from neighbours import assert_neighbours_within_epsilon

    eps = 0.7
    base = [[0, 1], [0, 1], [0, 1], [2], [0], [1, 2]]
    d1 = TransactionDB.from_lists(base, 3)
    d2 = TransactionDB.from_lists(base + [[0, 1]], 3)
    uni = Universe.from_range(1, 3)
    if name == "diffpart":
        algo = lambda db, noise: diffpart(db, uni, eps, noise=noise, fanout=2, c1=0.5, c2=0.5)  # noqa: E731
    else:
        algo = lambda db, noise: basic(db, uni, eps, noise=noise)  # noqa: E731
    assert_neighbours_within_epsilon(algo, d1, d2, eps, _events, runs=3000)


def test_spurious_bound_keeps_the_budget_and_is_recorded():
    rng = np.random.default_rng(5)
    db = _random_db(rng, 25, 400)
    release = diffpart(db, Universe.from_range(1, 25), 1.0, noise=SeededNoise(5), fanout=5, keep_trace=True,
                       spurious_bound=10.0)
    assert release.manifest["parameters"]["spurious_bound"] == 10.0
    for entry in release.accountant.ledger:
        assert entry.chain_total <= 1.0 + 1e-9
    # every threshold is at least ln((2^l - 1)/10)/eps
    for ev in release.trace:
        assert ev.threshold >= math.log((2**5 - 1) / 10.0) / ev.epsilon - 1e-12


def test_termination_guard_keeps_empty_partitions_subcritical():
    """Dense records over many height-1 nodes: the paper's thresholds would branch without bound."""
    rng = np.random.default_rng(0)
    records = [sorted(rng.choice(119, size=23, replace=False).tolist()) for _ in range(2000)]
    db = TransactionDB.from_lists(records, 119)
    release = diffpart(db, Universe.from_range(1, 119), 1.0, noise=SeededNoise(1), keep_trace=True)
    assert len(release.trace) < 2000  # unguarded, the same run passes 250,000 operations
    assert release.accountant.spent <= 1.0 + 1e-9


def test_guard_does_not_change_msnbc_like_cuts():
    """With 17 items and f = 10 the guard never binds: releases are identical with and without it."""
    rng = np.random.default_rng(1)
    db = _random_db(rng, 17, 3000)
    uni = Universe.from_range(1, 17)
    a = diffpart(db, uni, 1.0, noise=SeededNoise(9))
    b = diffpart(db, uni, 1.0, noise=SeededNoise(9), branching_bound=None)
    assert [s.tolist() for s in a.itemsets] == [s.tolist() for s in b.itemsets]
    assert a.counts.tolist() == b.counts.tolist()


@pytest.mark.parametrize("n, high", [(0, 5), (1, 5), (1000, 7), (5000, 1 << 40), (20_000, 1 << 20)])
def test_group_by_mask_equals_unique_and_a_stable_sort(monkeypatch, n, high):
    """group_by_mask (packed keys below 2^31, a stable argsort above) gives np.unique's masks and counts and the
    rows in a stable order by mask, in gathers of a few rows at a time."""
    import importlib

    module = importlib.import_module("dprelease.engine.kernels")
    monkeypatch.setattr(module, "_GROUP_CHUNK", 333)
    rng = np.random.default_rng(n)
    masks = rng.integers(0, high, n).astype(np.int64)
    rows = np.sort(rng.choice(10 * n + 1, n, replace=False)).astype(np.int32)
    uniq, inverse, counts = np.unique(masks, return_inverse=True, return_counts=True)
    got, sizes, rows_sorted, bounds = module.group_by_mask(masks.copy(), rows)
    assert got.tolist() == uniq.tolist() and sizes.tolist() == counts.tolist()
    assert rows_sorted.tolist() == rows[np.argsort(inverse, kind="stable")].tolist()
    assert bounds.tolist() == [0, *np.cumsum(counts).tolist()]
    got, sizes, none, _ = module.group_by_mask(masks.copy())
    assert got.tolist() == uniq.tolist() and sizes.tolist() == counts.tolist() and none is None
