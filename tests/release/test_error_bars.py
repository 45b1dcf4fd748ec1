"""Releases carry their error bars through their files and answer counts with intervals."""

from __future__ import annotations

import math

import numpy as np

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
