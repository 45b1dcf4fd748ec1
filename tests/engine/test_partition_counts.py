"""PartitionTree.specialize_counts: the counts kept from the one scan of D_v equal a direct count.

D_c for a cut value c of attribute j is every record whose attribute-j value lies in c's range (the cut of an
attribute covers its domain once), so each count is checked against a plain filter of the columns.
"""

from __future__ import annotations

import numpy as np
import pytest

from dprelease.data.table import EncodedTable, parse_schema
from dprelease.relational import PartitionTree, generalize, split_intervals


def _table(n: int, seed: int) -> EncodedTable:
    rng = np.random.default_rng(seed)
    attrs = [
        {"name": "age", "type": "numeric", "bounds": [0, 100], "integer": True},
        {"name": "wide", "type": "numeric", "bounds": [0, 50_000_000], "integer": True},  # sorted, not dense
        {"name": "real", "type": "numeric", "bounds": [-5, 5], "integer": False},
        {"name": "job", "type": "categorical",
         "taxonomy": {"Any": [{"A": ["a1", {"A2": ["a21", "a22"]}, "a3"]}, {"B": ["b1", "b2"]}, "c"]}},
        {"name": "sex", "type": "categorical", "taxonomy": {"Any": ["f", "m"]}},
    ]
    schema = parse_schema({"class": {"name": "cls", "values": ["0", "1", "2"]}, "attributes": attrs})
    cols = (rng.integers(0, 100, n).astype(np.float64), rng.integers(0, 50_000_000, n).astype(np.float64),
            np.round(rng.uniform(-5, 4.99, n), 2), rng.integers(0, 7, n), rng.integers(0, 2, n))
    y = (rng.integers(0, 2, n) + (cols[4] == 1)).astype(np.int64)
    return EncodedTable(schema, cols, y)


def _direct(table: EncodedTable, tree: PartitionTree, value: int) -> np.ndarray:
    cv = tree.values[value]
    col = table.columns[cv.attr]
    return np.flatnonzero((col >= cv.lo) & (col < cv.hi))


def _splittable(tree: PartitionTree, v: int) -> bool:
    cv = tree.values[v]
    a = tree.schema.attributes[cv.attr]
    if a.kind == "categorical":
        return not a.taxonomy.is_leaf(cv.node)
    return cv.hi - cv.lo >= (2 if a.integer else 1e-9)


def _check_value(table: EncodedTable, tree: PartitionTree, c: int, records: np.ndarray | None) -> None:
    d_c = _direct(table, tree, c)
    if records is not None:
        assert np.array_equal(np.sort(records), d_c)
    cv = tree.values[c]
    a = table.schema.attributes[cv.attr]
    n_cls = table.schema.n_classes
    if a.kind == "categorical":
        if a.taxonomy.is_leaf(cv.node):
            return
        k = a.taxonomy.child_of_leaf(cv.node)[table.columns[cv.attr][d_c]]
        direct = np.bincount(k * n_cls + table.y[d_c], minlength=len(a.taxonomy.children[cv.node]) * n_cls)
        assert np.array_equal(tree.category_table(c, records), direct.reshape(-1, n_cls))
    else:
        want = split_intervals(table.columns[cv.attr][d_c], table.y[d_c], n_cls, cv.lo, cv.hi, a.integer)
        got = tree.value_split_intervals(c, records)
        for f in ("low", "high", "measure", "left", "total"):
            assert np.array_equal(getattr(got, f), getattr(want, f)), f


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_counts_of_every_new_value_match_a_direct_count(seed):
    table = _table(3_000, seed)
    counted, listed = PartitionTree(table), PartitionTree(table)
    assert counted.root_records() is None
    for v in counted.cut_values():  # the top values: every record
        _check_value(table, counted, v, None)
    rng = np.random.default_rng(seed + 100)
    for _ in range(12):
        options = [v for v in counted.cut_values() if _splittable(counted, v)]
        if not options:
            break
        v = options[int(rng.integers(len(options)))]
        cv = counted.values[v]
        split = None
        if cv.node == -1:
            if table.schema.attributes[cv.attr].integer:
                split = float(rng.integers(cv.lo + 1, cv.hi))
            else:
                split = float(rng.uniform(cv.lo, cv.hi))
        kids, none = counted.specialize_counts(v, split)
        kids_l, recs = listed.specialize(v, split)
        assert kids == kids_l and none == [None] * len(kids)
        assert np.array_equal(counted.pid, listed.pid)
        for c, r in zip(kids, recs):
            _check_value(table, counted, c, None)
            _check_value(table, listed, c, r)
        # every leaf's records are those of its generalized record; the leaf x class counts are theirs
        leaves, exact = counted.leaf_class_counts()
        cut = [[counted.values[x] for x in sorted(ids, key=lambda x: counted.values[x].lo)] for ids in counted.cut]
        cells = generalize(table, cut)
        n_cls = table.schema.n_classes
        for i, leaf in enumerate(leaves):
            rows = np.flatnonzero(counted.pid == leaf)
            assert rows.size == counted.end[leaf] - counted.start[leaf]
            want = np.ones(table.n_records, dtype=bool)
            for j in range(len(cut)):
                want &= cells[:, j] == cut[j].index(counted.values[counted.gen[leaf, j]])
            assert np.array_equal(rows, np.flatnonzero(want))
            assert np.array_equal(exact[i], np.bincount(table.y[rows], minlength=n_cls))
        for x in counted.cut_values():  # positions() gives D_x with the rank of each record's leaf on Link_x
            pos, rank = counted.positions(counted.link[x])
            assert np.array_equal(pos, _direct(table, counted, x))
            assert np.array_equal(counted.link[x][rank], counted.pid[pos])
