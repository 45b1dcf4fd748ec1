"""Releases carry their error bars through their files and answer counts with intervals."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dprelease.data import parse_universe_spec
from dprelease.data.generators import clustered_baskets, integer_table_schema
from dprelease.data.table import EncodedTable
from dprelease.privacy import SeededNoise
from dprelease.release import SetValuedRelease
from dprelease.release.itemsets import ItemsetRelease
from dprelease.release.table import GeneralizedTable, SyntheticTable

U12 = parse_universe_spec("1..12")


def _table() -> EncodedTable:
    rng = np.random.default_rng(0)
    cols = tuple(rng.integers(0, 32, 2000).astype(np.float64) for _ in range(2))
    return EncodedTable(integer_table_schema(2, 32), cols, (cols[0] > 15).astype(np.int64))


def test_itemset_csv_round_trip_keeps_the_intervals(tmp_path):
    from dprelease.itemsets.tf import tf

    db = clustered_baskets(2000, 12, seed=1)
    release = tf(db, U12, 10, 1.0, m=2, noise=SeededNoise(0))
    written = release.write(tmp_path / "tf.csv")
    assert (tmp_path / "tf.csv").read_text().splitlines()[0] == "itemset,count,frequency,sd,low,high"
    back = ItemsetRelease.read(written.body, U12)
    iv, got = release.intervals(), back.intervals()
    assert iv is not None and got is not None
    assert np.allclose(got.low, np.round(iv.low, 3)) and np.allclose(got.sd, np.round(iv.sd, 3))
    est = back.count(back.itemsets[0])
    assert est is not None and est.low <= est.value <= est.high
    assert back.count((0, 1, 2, 3, 4, 5, 6)) is None  # not released


def test_basic_writes_a_companion_listed_in_the_manifest(tmp_path):
    from dprelease.setvalued.basic import basic

    release = basic(clustered_baskets(2000, 12, seed=1), U12, 1.0, noise=SeededNoise(0))
    written = release.write(tmp_path / "b.dat")
    assert written.others == (tmp_path / "b.dat.intervals.csv",)
    lines = written.others[0].read_text().splitlines()
    assert lines[0] == "itemset,count,sd,low,high" and len(lines) == len(release.itemsets) + 1
    back = SetValuedRelease.read(written.body, U12)  # the pair and its companion are checked together
    assert back.cell_scale == 1.0
    full = back.count([])
    assert full.low <= full.value <= full.high and "cells" in full.label


def test_generalized_table_round_trip_and_range_counts(tmp_path):
    from dprelease.relational.diffgen import diffgen

    table = _table()
    release = diffgen(table, 1.0, 3, noise=SeededNoise(0))
    assert list(release.frame().columns)[-4:] == ["count", "sd", "low", "high"]
    written = release.write(tmp_path / "g.csv")
    back = GeneralizedTable.read(written.body, table.schema)
    assert back.errors is not None and np.allclose(back.errors.low, np.round(release.errors.low, 3))
    everything = back.count()
    assert everything.low <= table.n_records <= everything.high
    part = back.count(x1=(0, 8), label="1")
    assert part.noise_low is not None and part.low <= part.noise_low <= part.value <= part.noise_high <= part.high


def test_synthetic_tables_count_their_records():
    from dprelease.relational.rps import rps

    table = _table()
    release = rps(table, 1.0, noise=SeededNoise(0), depth=4)
    est = release.count(x1=(0, 16))
    truth = int(np.sum(table.columns[0] < 16))
    assert est.low <= truth <= est.high
    plain = SyntheticTable(release.schema, release.table).count(x1=(0, 16))
    assert plain.value == float(np.sum(release.table.columns[0] < 16)) and math.isnan(plain.sd)


def test_an_existing_companion_is_replaced_only_with_force(tmp_path):
    from dprelease.cli import main

    baskets = str(__import__("pathlib").Path(__file__).resolve().parents[2] / "examples" / "baskets.dat")
    out = tmp_path / "b.dat"
    (tmp_path / "b.dat.intervals.csv").write_text("mine\n")
    argv = ["basic", baskets, "--universe", "1..12", "-e", "1", "--seed", "1", "--quiet", "-o", str(out)]
    assert main(argv) == 2 and not out.exists()
    assert (tmp_path / "b.dat.intervals.csv").read_text() == "mine\n"
    assert main(argv + ["--force"]) == 0
    assert (tmp_path / "b.dat.intervals.csv").read_text().startswith("itemset,count,sd,low,high")


def _two_item_batches(rng: np.random.Generator, n: int) -> list[list[int]]:
    """Records over items {0, 1}: each of the three non-empty itemsets in fixed shares."""
    kinds = rng.choice(3, size=n, p=[0.5, 0.3, 0.2])
    return [[[0], [1], [0, 1]][k] for k in kinds.tolist()]


def test_stream_p_sums_cover_their_true_counts():
    """On two items the root's cells are the leaves ({0}, {1}, {0, 1}), counted on every append from the first, so
    a leaf's true p-sum is its records over all batches: the intervals must hold it about 95 % of the time
    (stated tolerance: 0.92-0.99 over 3 leaves x 150 seeds)."""
    from dprelease.data.transactions import TransactionDB
    from dprelease.setvalued.inctdpart import TBPTree

    rng = np.random.default_rng(5)
    batches = [TransactionDB.from_lists(_two_item_batches(rng, 400), 2) for _ in range(3)]
    truth: dict[tuple[int, ...], int] = {}
    for db in batches:
        for r in db.to_lists():
            truth[tuple(sorted(r))] = truth.get(tuple(sorted(r)), 0) + 1
    universe = parse_universe_spec("1..2")
    covered, seen = 0, 0
    for seed in range(150):
        tree = TBPTree(2, 0.3, 2, fanout=2)
        for k, db in enumerate(batches):
            tree.append(db, SeededNoise(10 * seed + k))
        rel = tree.release(universe, {"mode": "seeded"})
        errors = rel.intervals()
        assert errors is not None and rel.pair_sd is not None
        for items, lo, hi in zip(rel.itemsets, errors.low.tolist(), errors.high.tolist()):
            seen += 1
            covered += lo <= truth[tuple(items.tolist())] <= hi
    assert seen >= 400
    assert 0.92 <= covered / seen <= 0.99, covered / seen


def test_stream_error_bars_survive_the_state_and_a_read_back(tmp_path):
    """The per-p-sum error bars rebuilt from the state's counts equal the in-memory ones, are written beside the
    release, and come back when the release is read."""
    from dprelease.api import Stream

    rng = np.random.default_rng(2)
    batches = [[[int(i) + 1 for i in rng.choice(6, size=rng.integers(1, 4), replace=False)] for _ in range(300)]
               for _ in range(3)]
    stream = Stream(tmp_path / "s.db", epsilon=1.0, updates=2, method="faithful", universe="1..6", seed=4)
    for batch in batches:
        rel = stream.append(batch).release  # the API reads each append's release back from its file
    assert rel.pair_sd is not None
    written = rel.write(tmp_path / "r.dat")
    side = tmp_path / "r.dat.intervals.csv"
    assert side in written.others
    back = SetValuedRelease.read(tmp_path / "r.dat", rel.universe)
    a, b = rel.intervals(), back.intervals()
    assert a is not None and b is not None
    assert np.allclose(a.sd, b.sd, atol=1e-3) and np.array_equal(a.low, b.low) and np.array_equal(a.high, b.high)
    assert np.all(a.sd > 0)
    q = back.count([0])
    assert q.low <= q.value <= q.high and math.isfinite(q.sd)
    from dprelease.data.transactions import TransactionDB
    from dprelease.evaluation.coverage import setvalued_coverage

    raw = TransactionDB.from_lists([[i - 1 for i in r] for batch in batches for r in batch], 6)
    coverage = setvalued_coverage(raw, back, 50, 0)  # what `evaluate counting` reports beside the error
    assert coverage is not None and coverage["values"] > 0


def _random_graph(seed: int, n: int = 300, m: int = 900):
    from dprelease.data.graphs import graph_from_edges

    rng = np.random.default_rng(seed)
    edges = rng.integers(0, n, size=(m, 2))
    edges = edges[edges[:, 0] != edges[:, 1]]
    return graph_from_edges(edges[:, 0], edges[:, 1])


def test_hay_ranks_cover_the_sorted_degrees():
    """Hay's release carries one interval per line (the rank's noise; the isotonic regression does not widen the
    largest deviation): at a theta above every degree the truth of line i is the i-th of the m largest degrees.
    Stated tolerance: at least 93 % over 40 seeds, and intervals narrower than [0, theta]."""
    from dprelease.evaluation.coverage import degree_ranks_coverage
    from dprelease.graphs import release_degrees

    g = _random_graph(1)
    true = g.degrees()
    theta = int(true.max()) + 2
    rows = [degree_ranks_coverage(true, release_degrees(g, theta, 40.0, method="hay", noise=SeededNoise(s)))
            for s in range(40)]
    inside = sum(r["coverage"] * r["values"] for r in rows) / sum(r["values"] for r in rows)
    assert inside >= 0.93, inside
    assert max(r["mean_width"] for r in rows) < theta


@pytest.mark.parametrize("method", ["hay", "rps", "cumulative"])
def test_degree_intervals_come_back_when_read(tmp_path, method):
    from dprelease.graphs import release_degrees
    from dprelease.release.degrees import DegreeRelease

    rel = release_degrees(_random_graph(2), 8, 1.0, method=method, noise=SeededNoise(3))
    written = rel.write(tmp_path / "d.txt")
    assert tmp_path / "d.txt.intervals.csv" in written.others
    back = DegreeRelease.read(tmp_path / "d.txt")
    a, b = rel.intervals(), back.intervals()
    assert a is not None and b is not None
    assert np.array_equal(a.low, b.low) and np.array_equal(a.high, b.high) and np.allclose(a.sd, b.sd, atol=1e-3)
    assert (back.bins is None) == (method == "hay")
    if method != "hay":
        assert np.array_equal(back.bins, rel.bins)


def test_a_damaged_degree_companion_is_refused(tmp_path):
    from dprelease.errors import InputError
    from dprelease.graphs import release_degrees
    from dprelease.release.degrees import DegreeRelease

    release_degrees(_random_graph(2), 8, 1.0, method="rps", noise=SeededNoise(3)).write(tmp_path / "d.txt")
    (tmp_path / "d.txt.intervals.csv").write_text("a,b\n1,2\n")
    with pytest.raises(InputError, match="d.txt.intervals.csv does not match its manifest"):
        DegreeRelease.read(tmp_path / "d.txt")
