"""Neighbouring-dataset tests for IncTDPart, PrivBasis (through get_lambda itself), TF and DiffGen,
through the shared helper of tests/neighbours.py (DiffPart and Basic use it in test_diffpart.py).

Each pair stresses the algorithm's data-dependent step: a record in one batch of a stream, a record that moves
the lambda qualities by 0 or 2 (GetLambda's one-sided sensitivity), a record touching many items while TF's
truncation is active, and a row that can flip DiffGen's first split.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import REPO
from neighbours import assert_neighbours_within_epsilon

from dprelease.data import TransactionDB, Universe
from dprelease.privacy import SeededNoise


def _set_events(prefix: str, itemsets, counts, grid=(1, 3, 6, 10, 20)) -> list[str]:
    out = []
    total = 0
    for s, c in zip(itemsets, counts):
        key = " ".join(map(str, s))
        c = float(c)
        total += max(c, 0.0)
        out.append(f"{prefix} has {key}")
        out.extend(f"{prefix} {key}>={g}" for g in grid if c >= g)
    out.extend(f"{prefix} total>={g}" for g in (10, 30, 60, 100) if total >= g)
    return out


def test_inctdpart_neighbours_one_record_in_one_batch():
    from dprelease.setvalued.inctdpart import TBPTree

    batch0 = TransactionDB.from_lists([[0, 1]] * 12 + [[2]] * 6 + [[0, 3]] * 3, 4)
    batch1 = [[0, 1]] * 8 + [[3]] * 2
    d = (batch0, TransactionDB.from_lists(batch1, 4))
    d_prime = (batch0, TransactionDB.from_lists(batch1 + [[0, 1, 2, 3]], 4))
    eps = 2.0

    def run(batches, noise):
        tree = TBPTree(4, eps, 1, fanout=2, c1=0.6, c2=0.6)
        out = []
        for i, b in enumerate(batches):
            tree.append(b, noise)
            sets, counts = tree.released_leaves()
            out.append((i, [tuple(x.tolist()) for x in sets], counts.tolist(),
                        sorted(" ".join(map(str, nd.cut)) for nd in tree.nodes)))
        return out

    def events(out):
        ev = []
        for i, sets, counts, nodes in out:
            ev.extend(_set_events(f"release {i}", sets, counts))
            ev.extend(f"state {i} node {n}" for n in nodes)  # the stored tree is an output too
        return ev

    assert_neighbours_within_epsilon(run, d, d_prime, eps, events, runs=800)


def test_get_lambda_neighbours_quality_moves_by_0_or_2():
    """GetLambda through get_lambda itself, fed from the data as PrivBasis feeds it (c_k1 by exact mining).

    D = 8 x {0,1} + 4 x {0} + 2 x {1} + 6 x {2}: item supports 12, 10, 6 and c_3 = 8 (the pair {0,1}), so
    lambda = 2 and 3 tie at q = N - 2. D' = D + {1,2} keeps c_3 = 8 and moves q by (1, 0, 2): the largest
    change the one-sided sensitivity 2 allows. The paper's text (exp(eps*q), "sensitivity 1") fails here.
    """
    from dprelease.itemsets.exact import kth_support
    from dprelease.itemsets.privbasis import get_lambda
    from dprelease.privacy import BudgetAccountant

    recs = [[0, 1]] * 8 + [[0]] * 4 + [[1]] * 2 + [[2]] * 6
    d = TransactionDB.from_lists(recs, 3)
    d_prime = TransactionDB.from_lists(recs + [[1, 2]], 3)
    eps, k1 = 2.0, 3
    facts = {id(db): (db.item_supports(), kth_support(db, k1), db.n_records) for db in (d, d_prime)}
    assert facts[id(d)][1] == facts[id(d_prime)][1] == 8

    def lam_events(lam):
        return [f"lambda={lam}"] + [f"lambda>={j}" for j in range(1, lam + 1)]

    def runner(factor):
        def run(db, noise):
            counts, ck, n = facts[id(db)]
            return get_lambda(counts, ck, n, factor * eps, scope=BudgetAccountant(factor * eps).root(), noise=noise,
                              max_lambda=k1)
        return run

    assert_neighbours_within_epsilon(runner(1.0), d, d_prime, eps, lam_events, runs=6000)
    with pytest.raises(AssertionError):  # power: weights exp(eps*q) (twice the epsilon) are caught
        assert_neighbours_within_epsilon(runner(2.0), d, d_prime, eps, lam_events, runs=6000)


def test_tf_neighbours_with_truncation_active():
    from dprelease.itemsets.tf import tf

    rng = np.random.default_rng(5)
    probs = np.array([0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1, 0.05, 0.05, 0.02, 0.02, 0.01])
    recs = [sorted(np.flatnonzero(rng.random(12) < probs).tolist()) for _ in range(700)]
    d = TransactionDB.from_lists(recs, 12)
    d_prime = TransactionDB.from_lists(recs + [list(range(12))], 12)  # a record touching every item
    u = Universe.from_range(1, 12)
    eps, k, m = 1.0, 4, 2
    assert tf(d, u, k, eps, m, noise=SeededNoise(0)).trace["plan"].floor > 0  # f_k*N > gamma*N: truncation prunes

    def run(db, noise):
        return tf(db, u, k, eps, m, noise=noise)

    def events(rel):
        ev = [f"rank {r} = {' '.join(map(str, s))}" for r, s in enumerate(rel.itemsets)]
        for s, c in zip(rel.itemsets, rel.counts):
            key = " ".join(map(str, s))
            ev.append(f"has {key}")
            ev.extend(f"{key}>={g}" for g in (250, 300, 350, 400, 450) if c >= g)
        return ev

    assert_neighbours_within_epsilon(run, d, d_prime, eps, events, runs=800)


def test_diffgen_neighbours_row_that_flips_a_split():
    from dprelease.data.table import load_schema, read_table
    from dprelease.relational.diffgen import diffgen

    table = read_table(REPO / "examples" / "table1-jobs.csv", load_schema(REPO / "examples" / "table1-schema.yaml"))
    d = table
    d_prime = table.take(np.arange(table.n_records - 1))
    eps = 1.5

    def run(tab, noise):
        return diffgen(tab, eps, 2, noise=noise)

    def events(rel):
        ev = [f"round {i}: {label}" for i, label, _attr, _split in rel.trace]
        ev.extend(f"round {i} split>={g}" for i, _l, _a, split in rel.trace if split is not None
                  for g in (25, 30, 35, 40, 45, 50) if split >= g)
        frame = rel.frame()
        for row in frame.itertuples(index=False):
            key = "/".join(str(x) for x in row[:-1])
            ev.extend(f"{key}>={g}" for g in (1, 2, 3, 5) if row[-1] >= g)
        return ev

    assert_neighbours_within_epsilon(run, d, d_prime, eps, events, runs=800)
