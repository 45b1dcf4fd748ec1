"""DiffGen's engine path without Spark: the partition tree whose records live with an
engine (:class:`EngineTree` over :class:`LocalTable`) gives the release of the in-memory tree, byte for byte,
and the counts-based split intervals equal the record-based ones."""

from __future__ import annotations

import numpy as np
import pytest
from reference_trie import follow_each_record

from dprelease.data.table import load_schema, read_adult
from dprelease.engine import kernels
from dprelease.engine.local import LocalTable
from dprelease.errors import ParameterError
from dprelease.privacy import make_noise
from dprelease.relational.diffgen import diffgen
from dprelease.relational.partition import split_intervals, split_intervals_from_counts

from conftest import REPO, dataset


@pytest.fixture(scope="module")
def adult():
    table = read_adult(dataset("adult"), load_schema(REPO / "examples" / "adult-schema.yaml"))
    return table.take(np.arange(0, table.n_records, 4))  # every 4th record: 11,306 of 45,222


def test_split_intervals_from_counts_equal_record_based():
    rng = np.random.default_rng(3)
    for integer, lo, hi, values in [
        (True, 17.0, 91.0, rng.integers(17, 91, 500).astype(np.float64)),  # the counting path
        (True, 0.0, 1e7, rng.integers(0, 10**7, 300).astype(np.float64)),  # the sort path
        (False, -5.0, 5.0, np.round(rng.uniform(-5, 5, 400), 1)),
        (False, -1.0, 1.0, np.array([-0.0, 0.0, 0.5, -0.5, 0.0])),  # -0.0 and 0.0 are one value
        (True, 0.0, 10.0, np.zeros(0)),
    ]:
        y = rng.integers(0, 3, values.size)
        a = split_intervals(values, y, 3, lo, hi, integer)
        part = kernels.merge([kernels.value_class_counts(np.zeros(y.size, np.int64), values, y, 3)])
        u, counts = kernels.decode_value_counts(part, 3).get(0, (np.zeros(0), np.zeros((0, 3), np.int64)))
        b = split_intervals_from_counts(u, counts, lo, hi, integer)
        for f in ("low", "high", "measure", "left", "total"):
            assert np.array_equal(getattr(a, f), getattr(b, f)), f
            assert getattr(a, f).dtype == getattr(b, f).dtype, f


@pytest.mark.parametrize("h,score,recycle,seed", [(6, "max", False, 1), (12, "max", True, 2),
                                                  (8, "infogain", False, 3)])
def test_engine_tree_release_equals_in_memory_tree(adult, h, score, recycle, seed):
    a = diffgen(adult, 1.0, h, noise=make_noise(seed=seed), score=score, recycle=recycle)
    b = diffgen(LocalTable(adult), 1.0, h, noise=make_noise(seed=seed), score=score, recycle=recycle)
    assert a.arrow().equals(b.arrow())
    assert a.trace == b.trace and len(a.trace) == h
    assert a.cells.shape[0] > 1
    assert a.accountant.summary() == b.accountant.summary()


def test_engine_tree_refuses_local_scores(adult):
    with pytest.raises(ParameterError, match="--engine local only"):
        diffgen(LocalTable(adult), 1.0, 4, noise=make_noise(seed=1), local=True)


def test_cli_refuses_methods_spark_does_not_run(tmp_path, capsys):
    """Before reading anything (no Spark started): one line, exit 2, nothing written."""
    from dprelease.cli import main

    data = tmp_path / "d.dat"  # (diffpart's default, DiffPart-Prefix, runs on Spark now)
    data.write_text("1 2\n2 3\n")
    out = tmp_path / "o.dat"
    schema = REPO / "examples" / "adult-schema.yaml"
    # the engine never changes the method: the default (DiffGen+3) is refused too, naming --method faithful
    for method in ([], ["--method", "recommended"], ["--method", "faithful", "--local", "-H", "3"]):
        assert main(["diffgen", str(data), "--schema", str(schema), "-e", "1", *method, "--engine", "spark",
                     "-o", str(out)]) == 2
        err = capsys.readouterr().err
        assert "--engine spark runs --method faithful" in err and err.count("\n") == 1
    assert not out.exists()


def test_spark_route_lookup_matches_a_dictionary():
    """DiffPart's routing on Spark: a record (partition, mask) goes to the child of exactly that cell, or is
    dropped. Regression: a record mask wider than every chosen mask spilled into the parent's rank and was
    routed to another partition's child (found at 10M records)."""
    from dprelease.engine.spark.transactions import lookup

    rng = np.random.default_rng(5)
    for _ in range(200):
        n_parents = int(rng.integers(1, 6))
        parents = np.sort(rng.choice(50, n_parents, replace=False))
        cells = sorted({(int(p), int(m)) for p in parents for m in rng.integers(1, 8, 3)})
        parent = np.array([c[0] for c in cells], np.int64)
        mask = np.array([c[1] for c in cells], np.int64)
        pid = rng.choice(np.concatenate([parents, [99]]), 300).astype(np.int64)
        masks = rng.integers(1, 1024, 300).astype(np.int64)
        masks[::3] = rng.integers(1, 8, masks[::3].size)
        at, found = lookup(parent, mask, pid, masks)
        index = {c: j for j, c in enumerate(cells)}
        expect = [index.get((int(a), int(b)), -1) for a, b in zip(pid, masks)]
        assert found.tolist() == [e >= 0 for e in expect]
        assert at[found].tolist() == [e for e in expect if e >= 0]


# --- the weighted passes of PrivBasis's default and DiffPart-Prefix, on the local engine ---------------------


def _random_db(seed: int, n: int = 3000, n_items: int = 40):
    from dprelease.data.transactions import TransactionDB

    rng = np.random.default_rng(seed)
    lists = [sorted(rng.choice(n_items, int(rng.integers(0, 18)), replace=False).tolist()) for _ in range(n)]
    return lists, TransactionDB.from_lists(lists, n_items)


def test_local_weighted_passes_equal_numpy_and_are_exact(monkeypatch):
    from fractions import Fraction

    from dprelease.engine import local as local_engine
    from dprelease.engine.local import LocalTransactions

    lists, db = _random_db(1, n=1200)
    data = LocalTransactions(db)
    lengths, counts = data.length_histogram()
    hist = np.bincount(db.lengths)
    assert lengths.tolist() == np.flatnonzero(hist).tolist() and counts.tolist() == hist[hist > 0].tolist()
    F = np.array([0, 3, 4, 9, 17, 22, 31])
    m = np.array([len(set(t) & set(F.tolist())) for t in lists])
    hist_m = np.bincount(m)
    got_m, got_c = data.projected_length_histogram(F)
    assert got_m.tolist() == [v for v in range(1, hist_m.size) if hist_m[v]] and got_c.tolist() == [
        int(c) for c in hist_m[1:] if c]

    for ell in (1, 3, 5):
        sums = data.bounded_item_sums(ell)
        weight = np.minimum(1.0, ell / np.maximum(db.lengths, 1))
        np.testing.assert_allclose(sums, np.bincount(db.items, weights=weight[db.row_ids()], minlength=db.n_items),
                                   rtol=1e-13)
        for item in (0, 7, 39):  # the float nearest the exact sum of the float weights
            exact = sum((Fraction(float(weight[r])) for r, t in enumerate(lists) if item in t), Fraction(0))
            assert sums[item] == float(exact)
        pairs = data.bounded_pair_sums(F, ell)
        pw = np.minimum(1.0, ell / np.maximum(m * (m - 1) / 2.0, 1.0))
        iu, ju = np.triu_indices(F.size, 1)
        for t, (a, b) in enumerate(zip(iu.tolist(), ju.tolist())):
            exact = sum((Fraction(float(pw[r])) for r, rec in enumerate(lists) if F[a] in rec and F[b] in rec),
                        Fraction(0))
            assert pairs[t] == float(exact)
        # the same bits whatever the blocks (Spark's partitions and tasks add partials in any order)
        for rows in (97, 1000):
            monkeypatch.setattr(local_engine, "PASS_ROWS", rows)
            assert data.bounded_item_sums(ell).tobytes() == sums.tobytes()
            assert data.bounded_pair_sums(F, ell).tobytes() == pairs.tobytes()
        monkeypatch.undo()


def test_prefix_trie_levelwise_equals_in_memory_build():
    """The engine passes of DiffPart-Prefix (one per level) give the in-memory build's counts: the same trie and
    the same records per class (the weighted supports are given to both, so the draws match)."""
    from dprelease.engine.local import LocalTransactions
    from dprelease.privacy import BudgetAccountant
    from dprelease.setvalued import prefixpart

    _, db = _random_db(2, n=4000, n_items=30)
    data = LocalTransactions(db)
    trees = []
    for levelwise in (False, True):
        scope = BudgetAccountant(2.0).root()
        kw = dict(scope=scope, noise=make_noise(seed=4), record_bound=5, max_items=12)
        if levelwise:
            tree, node_counts = prefixpart.build_prefix_tree_levelwise(data, 30, 1.0, 1.0, **kw)
        else:
            tree, node_counts = prefixpart.build_prefix_tree(db, 30, 1.0, 1.0, **kw)
            assert node_counts.tolist() == np.bincount(follow_each_record(tree, db)[db.lengths > 0],
                                                       minlength=tree.n_nodes).tolist()
        trees.append((tree, node_counts))
    (a, ca), (b, cb) = trees
    assert a.F.tolist() == b.F.tolist() and a.pattern.tolist() == b.pattern.tolist() and a.n_nodes > 20
    assert a.is_class.tolist() == b.is_class.tolist() and ca.tolist() == cb.tolist()
    assert ca.sum() == int((db.lengths > 0).sum())


def test_prefix_release_past_62_items_is_the_same_in_memory_and_level_wise():
    """F of 100 items (masks of two words): the in-memory build (sorted byte-string keys) and the engine passes
    (one per level) give the same release, the fill's hidden supports included."""
    from dprelease.data.transactions import TransactionDB
    from dprelease.data.universe import Universe
    from dprelease.engine.local import LocalTransactions
    from dprelease.setvalued.prefixpart import prefix_diffpart

    rng = np.random.default_rng(8)
    p = 1.0 / np.arange(1, 301) ** 0.5
    records = [sorted(rng.choice(300, size=int(rng.integers(1, 25)), replace=False, p=p / p.sum()).tolist())
               for _ in range(4000)]
    records += [list(range(90))] * 150  # a deep path
    db = TransactionDB.from_lists(records, 300)
    universe = Universe.from_range(0, 299)
    kw = dict(max_items=100, selection_false=150.0, shape_share=0.1)
    a = prefix_diffpart(db, universe, 2.0, noise=make_noise(seed=3), level_wise=False, **kw)
    b = prefix_diffpart(LocalTransactions(db), universe, 2.0, noise=make_noise(seed=3), level_wise=True, **kw)
    assert a.manifest["release"]["frequent_items"] == 100
    assert [x.tolist() for x in a.itemsets] == [x.tolist() for x in b.itemsets]
    assert a.counts.tolist() == b.counts.tolist()
    assert max(len(x) for x in a.itemsets) > 62
