"""DiffGen: scores on the paper's Table 1, exact budget, eq. 7 sampler, record conservation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import REPO, ZeroNoise, dataset
from scipy import stats

from dprelease.data.table import EncodedTable, load_schema, parse_schema, read_adult, read_table
from dprelease.errors import BudgetExceededError, ParameterError
from dprelease.privacy import BudgetAccountant, SeededNoise, exponential_mechanism
from dprelease.privacy.mechanisms import exponential_mechanism_disjoint
from dprelease.relational import PartitionTree, diffgen, epsilon_prime, generalize, info_gain, max_score
from dprelease.relational.diffgen import _category_table, draw_split_point, split_candidates

T1 = read_table(REPO / "examples" / "table1-jobs.csv", load_schema(REPO / "examples" / "table1-schema.yaml"))
AGES = T1.columns[1]


# -- scores on Table 1 (Job / Age / Class), hand-computed --------------------------------------------
def test_scores_of_any_job_on_table1():
    tree = PartitionTree(T1)
    table = _category_table(tree, tree.cut[0][0], np.arange(8))
    assert table.tolist() == [[2, 2], [2, 2]]  # Professional: Y2 N2; Artist: Y2 N2
    assert max_score(table) == 4
    assert info_gain(table) == 0.0


def test_scores_of_professional_and_artist_on_table1():
    tree = PartitionTree(T1)
    kids, recs = tree.specialize(tree.cut[0][0])
    for kid, rec in zip(kids, recs):
        t = _category_table(tree, kid, rec)
        assert t.tolist() == [[1, 1], [1, 1]]  # Engineer/Lawyer and Dancer/Writer: one Y, one N each
        assert max_score(t) == 2 and info_gain(t) == 0.0


def test_age_split_intervals_and_scores_on_table1():
    iv, maxs, logm = split_candidates(AGES, T1.y, 2, 18, 65, True, "max")
    # distinct ages 20 25 32 33 34 37 38 50; integer splits s = 19..64 (x < s goes left)
    assert iv.low.tolist() == [19, 21, 26, 33, 34, 35, 38, 39, 51]
    assert iv.measure.tolist() == [2, 5, 7, 1, 1, 3, 1, 12, 14]
    assert iv.measure.sum() == 64 - 19 + 1
    assert maxs.tolist() == [4, 5, 4, 5, 6, 7, 6, 5, 4]
    assert np.allclose(logm, np.log(iv.measure))
    _, gains, _ = split_candidates(AGES, T1.y, 2, 18, 65, True, "infogain")
    g40 = int(np.flatnonzero(iv.low == 39)[0])  # split at 40: [18-40) Y4 N3, [40-65) N1
    h47 = -(4 / 7) * math.log2(4 / 7) - (3 / 7) * math.log2(3 / 7)
    assert gains[g40] == pytest.approx(1 - 7 / 8 * h47, abs=1e-12)
    assert gains[g40] == pytest.approx(0.137925, abs=1e-6)
    g33 = int(np.flatnonzero(iv.low == 33)[0])  # split at 33: Y2 N1 | Y2 N3
    assert gains[g33] == pytest.approx(1 - (3 / 8) * 0.9182958 - (5 / 8) * 0.9709506, abs=1e-6)
    assert max_score(np.array([[4, 3], [0, 1]])) == 5


# -- the budget charged is exactly epsilon ----------------------------------------------------------
def synthetic(n: int, n_numeric: int, seed: int = 0, integer: bool = True) -> EncodedTable:
    rng = np.random.default_rng(seed)
    attrs = [{"name": f"n{i}", "type": "numeric", "bounds": [0, 100], "integer": integer} for i in range(n_numeric)]
    attrs += [
        {"name": "c0", "type": "categorical", "taxonomy": {"Any": [{"A": ["a1", "a2", "a3"]}, {"B": ["b1", "b2"]}]}},
        {"name": "c1", "type": "categorical", "taxonomy": {"Any": ["x", "y"]}},
    ]
    schema = parse_schema({"class": {"name": "cls", "values": ["0", "1", "2"]}, "attributes": attrs})
    cols = [rng.integers(0, 100, n).astype(np.float64) if integer else rng.uniform(0, 100, n) for _ in range(n_numeric)]
    cols += [rng.integers(0, 5, n), rng.integers(0, 2, n)]
    y = (rng.random(n) < 0.5).astype(np.int64) + (cols[-1] == 1)
    return EncodedTable(schema, tuple(np.asarray(c) for c in cols), y.astype(np.int64))


@pytest.mark.parametrize("n_numeric", [0, 1, 3])
@pytest.mark.parametrize("h", [1, 2, 5, 9, 14])
@pytest.mark.parametrize("recycle", [False, True])
def test_budget_charged_equals_epsilon(n_numeric, h, recycle):
    eps = 0.7
    table = synthetic(300, n_numeric, seed=h)
    rel = diffgen(table, eps, h, noise=SeededNoise(h + 10 * n_numeric), score="max", recycle=recycle)
    acc = rel.accountant
    assert math.fsum(e.epsilon for e in acc.ledger) == pytest.approx(eps, rel=1e-12, abs=0)
    assert acc.spent == pytest.approx(eps, rel=1e-12)
    # the exact total of the float shares, rounded up (the tolerance is no longer rounded away)
    assert acc.summary()["epsilon_spent"] == pytest.approx(eps, rel=1e-12)
    eps_p = epsilon_prime(eps, n_numeric, h)
    assert eps_p == eps / (2 * (n_numeric + 2 * h))
    counts = [e for e in acc.ledger if e.label.startswith("line 12")]
    assert len(counts) == 1
    if not recycle:
        assert counts[0].epsilon == eps / 2
        assert sum(e.label.startswith("line 4") for e in acc.ledger) == n_numeric
    else:
        assert counts[0].epsilon >= eps / 2


def test_budget_when_nothing_is_left_to_specialize():
    schema = parse_schema({"class": {"name": "c", "values": ["a", "b"]},
                           "attributes": [{"name": "x", "type": "categorical", "taxonomy": {"Any": ["p", "q"]}}]})
    table = EncodedTable(schema, (np.array([0, 1, 1, 0]),), np.array([0, 1, 1, 1]))
    rel = diffgen(table, 1.0, 6, noise=SeededNoise(0))
    assert math.fsum(e.epsilon for e in rel.accountant.ledger) == pytest.approx(1.0, rel=1e-12)
    assert len(rel.trace) == 1


def test_infogain_sensitivity_and_bad_parameters():
    table = synthetic(50, 1)
    rel = diffgen(table, 1.0, 3, noise=SeededNoise(1), score="infogain")
    assert rel.manifest["parameters"]["score_sensitivity"] == pytest.approx(math.log2(3))
    with pytest.raises(ParameterError):
        diffgen(table, 1.0, 0, noise=SeededNoise(1))
    with pytest.raises(ParameterError):
        diffgen(table, 1.0, 2, noise=SeededNoise(1), score="gini")


# -- eq. 7: the numeric split sampler ----------------------------------------------------------------
def _sample_splits(integer: bool, n: int, eps: float, seed: int) -> tuple[np.ndarray, object, np.ndarray]:
    iv, scores, logm = split_candidates(AGES, T1.y, 2, 18, 65, integer, "max")
    acc = BudgetAccountant(10.0 * n * eps, keep_ledger=False)
    scope = acc.root()
    noise = SeededNoise(seed)
    out = np.empty(n)
    for i in range(n):
        g = exponential_mechanism(scores, eps, sensitivity=1.0, scope=scope, noise=noise, label="eq6",
                                  log_base_measure=logm)
        out[i] = draw_split_point(iv, g, noise)
    return out, iv, scores


def test_integer_split_sampler_matches_eq7_chi_square():
    """Fixed seed; each split point s = 19..64 must have probability prop. to exp(eps' u(s) / 2)."""
    eps, n = 1.0, 20_000
    draws, iv, scores = _sample_splits(True, n, eps, seed=2024)
    points = np.arange(19, 65)
    u = np.empty(points.size)
    for g in range(iv.low.size):
        u[(points >= iv.low[g]) & (points <= iv.high[g])] = scores[g]
    p = np.exp(eps * u / 2.0)
    p /= p.sum()
    observed = np.array([(draws == s).sum() for s in points])
    assert observed.sum() == n
    # tolerance: reject only below p = 0.001 (deterministic with this seed)
    assert stats.chisquare(observed, n * p).pvalue > 1e-3
    # and the test has power: the uniform distribution over split points is rejected
    assert stats.chisquare(observed, np.full(points.size, n / points.size)).pvalue < 1e-6


def test_continuous_split_sampler_matches_eq7_chi_square():
    eps, n = 1.0, 20_000
    draws, iv, scores = _sample_splits(False, n, eps, seed=7)
    assert ((draws > 18) & (draws < 65)).all()
    mass = iv.measure * np.exp(eps * scores / 2.0)  # integral of eq. 7's density over each interval
    observed = np.array([((draws > iv.low[g]) & (draws <= iv.high[g])).sum() for g in range(iv.low.size)])
    assert observed.sum() == n
    assert stats.chisquare(observed, n * mass / mass.sum()).pvalue > 1e-3


# -- specialization never loses or duplicates a record --------------------------------------------------
def test_specialization_conserves_records_with_zero_noise(zero_noise: ZeroNoise):
    table = synthetic(2_000, 3, seed=5)
    rel = diffgen(table, 1.0, 8, noise=zero_noise)
    assert rel.counts.sum() == table.n_records
    # every leaf x class count equals an independent count of the records under the same final cut
    cells = rel.generalize(table)
    sizes = [len(c) for c in rel.cut]
    flat = np.ravel_multi_index(cells.T, sizes) * 3 + table.y
    exact = np.bincount(flat, minlength=int(np.prod(sizes)) * 3).reshape(-1, 3)
    rows = np.ravel_multi_index(rel.cells.T, sizes)
    assert rel.cells.shape[0] == int(np.prod(sizes))  # every combination of cut values is a leaf (empty ones too)
    assert np.array_equal(rel.counts, exact[rows])


def test_partition_tree_invariants_after_each_specialization():
    table = synthetic(1_000, 2, seed=9)
    tree = PartitionTree(table)
    rng = np.random.default_rng(0)
    for _ in range(7):
        options = [v for v in tree.cut_values() if tree.values[v].node != -1 or tree.values[v].hi - tree.values[v].lo >= 2]
        options = [v for v in options if tree.values[v].node == -1 or
                   not table.schema.attributes[tree.values[v].attr].taxonomy.is_leaf(tree.values[v].node)]
        v = options[int(rng.integers(len(options)))]
        cv = tree.values[v]
        before = np.sort(tree.records_of(v))
        split = float(rng.integers(cv.lo + 1, cv.hi)) if cv.node == -1 else None
        kids, recs = tree.specialize(v, split)
        assert np.array_equal(np.sort(np.concatenate(recs)), before)  # D_v = disjoint union of the D_c
        assert tree.is_leaf[tree.pid].all()  # every record lies in a leaf partition
        leaves = tree.leaves()
        cut = [[tree.values[x] for x in sorted(ids, key=lambda x: tree.values[x].lo)] for ids in tree.cut]
        cells = generalize(table, cut)
        for leaf in leaves[:50]:
            recs_leaf = np.flatnonzero(tree.pid == leaf)
            assert recs_leaf.size == tree.end[leaf] - tree.start[leaf]
            for j in range(len(cut)):
                x = tree.values[tree.gen[leaf, j]]
                assert all(cut[j][c] == x for c in cells[recs_leaf, j])
        assert sum(tree.end[p] - tree.start[p] for p in leaves) == table.n_records
        for x in tree.cut_values():  # Link_x = the leaves whose generalized record holds x
            expected = leaves[tree.gen[leaves, tree.values[x].attr] == x]
            assert np.array_equal(np.sort(tree.link[x]), np.sort(expected))


def test_output_forms_and_determinism():
    table = synthetic(400, 2, seed=3)
    a = diffgen(table, 1.0, 4, noise=SeededNoise(11))
    b = diffgen(table, 1.0, 4, noise=SeededNoise(11))
    assert np.array_equal(a.counts, b.counts) and a.cut_labels() == b.cut_labels()
    frame = a.frame()
    assert len(frame) == a.cells.shape[0] * 3 and (frame["count"] >= 0).all()
    assert len(a.records_frame()) == a.counts.sum()
    assert "count" not in a.records_frame().columns


def test_disjoint_exponential_mechanism_charges_once(zero_noise):
    acc = BudgetAccountant(1.0)
    picks = exponential_mechanism_disjoint([np.array([0.0, 5.0, 1.0]), np.array([3.0, 0.0])], 1.0, sensitivity=1.0,
                                           scope=acc.root(), noise=zero_noise, label="x")
    assert picks == [1, 0]
    assert acc.spent == 1.0 and len(acc.ledger) == 1
    with pytest.raises(BudgetExceededError):
        exponential_mechanism_disjoint([np.zeros(2)], 0.5, sensitivity=1.0, scope=_spent_scope(acc),
                                       noise=zero_noise, label="y")


def _spent_scope(acc: BudgetAccountant):
    scope = acc.root()
    scope.spend(1.0, "fill", mechanism="reserved")
    return scope


# -- real data ---------------------------------------------------------------------------------------------
def test_adult_one_run_beats_majority():
    from dprelease.experiments.diffgen import split_table
    from dprelease.relational.classify import generalized_accuracy, lower_bound_accuracy

    table = read_adult(dataset("adult"), load_schema(REPO / "examples" / "adult-schema.yaml"))
    train, test = split_table(table, 0, 0)
    rel = diffgen(train, 1.0, 10, noise=SeededNoise(3))
    assert rel.accountant.summary()["epsilon_spent"] == pytest.approx(1.0, rel=1e-12)  # exact total, rounded up
    ca = generalized_accuracy(rel, test)
    assert ca > lower_bound_accuracy(train, test) + 0.03
