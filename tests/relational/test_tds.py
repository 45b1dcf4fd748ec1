"""TDS (Fung et al.), DiffGen's k-anonymity baseline: k-anonymous, exact, stops when no valid specialization."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import REPO, dataset
from test_diffgen import T1, synthetic

from dprelease.data.table import load_schema, read_adult
from dprelease.errors import ParameterError
from dprelease.relational.diffgen import _splittable
from dprelease.relational.partition import PartitionTree, cut_label
from dprelease.relational.tds import tds


def _check_k_anonymous_and_exact(table, rel, k):
    sizes = rel.counts.sum(axis=1)
    assert (sizes >= k).all()  # every released (non-empty) group has at least k records
    assert rel.counts.sum() == table.n_records  # exact counts, nothing lost
    cells = rel.generalize(table)
    uniq, cnt = np.unique(cells, axis=0, return_counts=True)
    assert cnt.min() >= k and len(uniq) == rel.cells.shape[0]


@pytest.mark.parametrize("k", [2, 5, 25])
def test_tds_is_k_anonymous(k):
    table = synthetic(600, 2, seed=k)
    rel = tds(table, k)
    _check_k_anonymous_and_exact(table, rel, k)
    assert "NOT differential privacy" in rel.manifest["privacy"]["warning"]


def test_tds_stops_only_when_no_valid_beneficial_specialization():
    table = synthetic(400, 1, seed=4)
    k = 10
    rel = tds(table, k)
    # replay the chosen specializations, then try every remaining candidate: each must break k-anonymity
    # or have no information gain
    from dprelease.relational.tds import _best_split
    from dprelease.relational.scores import info_gain
    from dprelease.relational.diffgen import _category_table

    tree = PartitionTree(table)
    for _, label, attr, split in rel.trace:
        j = [a.name for a in table.schema.attributes].index(attr)
        v = next(x for x in tree.cut[j] if cut_label(table.schema, tree.values[x]) == label)
        tree.specialize(v, split)
    for v in tree.cut_values():
        if not _splittable(tree, v):
            continue
        recs = tree.records_of(v)
        if tree.values[v].node == -1:
            best = _best_split(tree, v, recs)
            if best is None:
                continue
            split, t = best
        else:
            split, t = None, _category_table(tree, v, recs)
        if info_gain(t) <= 0:
            continue
        pos, rank = tree.positions(tree.link[v])
        kk, kids = tree.child_index(v, tree.rec[pos], split)
        groups = np.bincount(rank * len(kids) + kk)
        assert groups[groups > 0].min() < k


def test_tds_table1_and_bad_k():
    rel = tds(T1, 2)
    _check_k_anonymous_and_exact(T1, rel, 2)
    with pytest.raises(ParameterError):
        tds(T1, 0)
    with pytest.raises(ParameterError):
        tds(T1, 9)


def test_tds_on_adult_is_5_anonymous():
    table = read_adult(dataset("adult"), load_schema(REPO / "examples" / "adult-schema.yaml"))
    rel = tds(table.take(np.arange(0, table.n_records, 3)), 5)
    assert rel.counts.sum(axis=1).min() >= 5
    assert len(rel.trace) >= 3
