"""The error bars releases ship cover the true values: measured on generated data with fixed seeds.

Direct noisy values carry exact (or conservative) 95 % intervals, so over a few hundred to thousands of values
their coverage must be at least 93 % (the tolerance: two binomial standard deviations below 95 % at a few hundred
values, and the intervals of integer counts are conservative). Derived answers are checked for what they promise:
range counts' published interval spans any spreading inside the boxes, so it covers too.
"""

from __future__ import annotations

import numpy as np
from dprelease.data.generators import clustered_baskets, integer_table_schema
from dprelease.data.table import EncodedTable
from dprelease.evaluation import coverage as cov
from dprelease.privacy import SeededNoise

TOLERANCE = 0.93  # stated in the module docstring


def _universe(n: int):
    from dprelease.data import parse_universe_spec

    return parse_universe_spec(f"1..{n}")


def test_basic_cells_cover():
    from dprelease.setvalued.basic import basic

    db = clustered_baskets(3000, 12, seed=11)
    universe = _universe(12)
    rows = [cov.basic_cells_coverage(db, basic(db, universe, 1.0, noise=SeededNoise(s))) for s in range(3)]
    assert sum(r["values"] for r in rows) == 3 * 4095
    assert min(r["coverage"] for r in rows) >= TOLERANCE


def test_itemset_counts_cover():
    from dprelease.itemsets.privbasis import privbasis
    from dprelease.itemsets.tf import tf

    db = clustered_baskets(3000, 12, seed=11)
    universe = _universe(12)
    pb = [cov.itemset_rows_coverage(db, privbasis(db, universe, 30, 1.0, noise=SeededNoise(s))) for s in range(5)]
    tfs = [cov.itemset_rows_coverage(db, tf(db, universe, 30, 1.0, m=2, noise=SeededNoise(s))) for s in range(5)]
    for rows in (pb, tfs):
        assert np.mean([r["coverage"] for r in rows]) >= TOLERANCE


def _table(seed: int = 0) -> EncodedTable:
    schema = integer_table_schema(3, 32)
    rng = np.random.default_rng(seed)
    cols = tuple(np.minimum(rng.geometric(0.1 * (j + 1), 4000) - 1, 31).astype(np.float64) for j in range(3))
    y = (cols[0] + rng.integers(0, 8, 4000) > 8).astype(np.int64)
    return EncodedTable(schema, cols, y)


def test_table_counts_and_ranges_cover():
    from dprelease.relational.diffgen import diffgen
    from dprelease.relational.rps import rps

    table = _table()
    for s in range(2):
        dg = diffgen(table, 1.0, 4, noise=SeededNoise(s))
        rp = rps(table, 1.0, noise=SeededNoise(s), depth=6)
        assert cov.generalized_cells_coverage(table, dg)["coverage"] >= TOLERANCE
        assert cov.rps_leaves_coverage(table, rp)["coverage"] >= TOLERANCE
        for release in (dg, rp):
            ranges = cov.range_coverage(table, release, 100, seed=s)
            assert ranges["interval"]["coverage"] >= TOLERANCE
            assert ranges["noise_only"]["mean_width"] <= ranges["interval"]["mean_width"]


def test_estimates_state_what_they_ignore():
    from dprelease.setvalued.prefixpart import prefix_diffpart

    db = clustered_baskets(3000, 12, seed=11)
    release = prefix_diffpart(db, _universe(12), 1.0, noise=SeededNoise(0))
    est = release.count([0, 1])
    assert est.low <= est.value <= est.high and est.sd > 0
    assert "noise only" in est.label and "ignores" in est.label
