"""IncTDPart (Zhang et al. 2013): thresholds (eq. 6, Example 3), trace following (Example 2), budgets, baselines."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dprelease.data import TransactionDB, Universe
from dprelease.data.generators import kosarak_like
from dprelease.errors import BudgetExceededError
from dprelease.privacy import make_noise
from dprelease.setvalued.baselines import solution1, solution2
from dprelease.setvalued.inctdpart import TBPTree, append_seed, p_sum_threshold

# Tables 3-5 of the paper; items I1..I4 are ids 0..3
T0 = [[0, 1], [1], [0]]
DT1 = [[0, 1, 2, 3], [1, 3], [1]]
DT2 = [[0, 1, 2, 3], [1, 2, 3], [0, 1]]
I12, I34, ROOT = 4, 5, 6


def test_theta1_example3():
    eps_p = 0.7
    c1 = 1.3
    alphas = [eps_p / 6, eps_p / 6]
    theta = p_sum_threshold(sum(1 / a for a in alphas), len(alphas), c1)
    assert theta == pytest.approx(3 * math.sqrt(2) * c1 / eps_p)
    # one count: the static threshold sqrt(2)*C/alpha of section 4.3
    assert p_sum_threshold(6 / eps_p, 1, c1) == pytest.approx(math.sqrt(2) * c1 * 6 / eps_p)
    # eq. 6 as printed (plain mean) is kept as an option; it gives 6*sqrt(2)*C1/eps' here
    assert p_sum_threshold(12 / eps_p, 2, c1, "mean") == pytest.approx(6 * math.sqrt(2) * c1 / eps_p)


def _example_tree(new_cells: str) -> TBPTree:
    # eps' = 1; alpha at the root = eps'/2 / 3 internal nodes = 1/6 (Example 3); C1 makes theta_1(n=1) = 3,
    # so {I12} (p-sum 3) is non-empty after T and the cell {I12, I34} (2 records of dT1) is semi-non-empty.
    return TBPTree(4, 3.0, 2, fanout=2, c1=1 / (2 * math.sqrt(2)), c2=0.01, new_cells=new_cells)


def _leaf(tree: TBPTree, cut: tuple[int, ...]):
    hits = [nd for nd in tree.nodes if nd.cut == cut]
    assert len(hits) == 1
    return hits[0]


@pytest.mark.parametrize("new_cells", ["semi", "first-visit", "every-visit"])
def test_example2_follows_previous_trace(zero_noise, new_cells):
    tree = _example_tree(new_cells)
    tree.append(TransactionDB.from_lists(T0, 4), zero_noise)
    v1 = _leaf(tree, (I12,))
    assert v1.psum == 3 and tree.node_class(v1) == "non-empty"
    v3 = _leaf(tree, (0, 1))
    v3_id = v3.id
    assert v3.psum == 1
    tree.append(TransactionDB.from_lists(DT1, 4), zero_noise)
    under_v1 = set(v1.children.values())
    d2 = tree.append(TransactionDB.from_lists(DT2, 4), zero_noise, keep_trace=True)
    # t9 = {I1, I2} goes root -> v1 -> the existing leaf v3: same node, no new node under v1
    assert _leaf(tree, (0, 1)).id == v3_id
    assert set(v1.children.values()) == under_v1
    assert tree.nodes[v3_id].psum == 2 and tree.nodes[v3_id].n == 3  # nc_0 + nc_1 (0) + nc_2
    assert [nc for nid, nc, _ in d2.counts if nid == v3_id] == [1]
    visited = [ev.node for ev in d2.trace]
    assert v1.id in visited
    assert tree.ledger == [1.0, 1.0, 1.0]


def test_example2_semi_node_becomes_non_empty(zero_noise):
    """v2 = {I12, I34}: semi-non-empty after dT1 (p-sum 2 < theta_1 = 3), split after dT2 (Example 2, 3)."""
    tree = _example_tree("semi")
    tree.append(TransactionDB.from_lists(T0, 4), zero_noise)
    tree.append(TransactionDB.from_lists(DT1, 4), zero_noise)
    v2 = _leaf(tree, (I12, I34))
    assert v2.psum == 2 and tree.theta1(v2) == pytest.approx(3.0)
    assert tree.node_class(v2) == "semi-non-empty" and v2.expand == -1 and not v2.children
    tree.append(TransactionDB.from_lists(DT2, 4), zero_noise)
    assert v2.psum == 4 and v2.n == 2
    assert tree.theta1(v2) == pytest.approx(3 * math.sqrt(2) * tree.c1 / tree.epsilon_prime) == pytest.approx(1.5)
    assert tree.node_class(v2) == "non-empty"
    assert v2.expand == I34 and v2.children  # split further (the example expands I{3,4})


def test_ledger_per_append_and_refusal_past_U():
    db = kosarak_like(3000, 40, 3.0, seed=1)
    eps, U = 0.9, 3
    tree = TBPTree(40, eps, U, fanout=4)
    for i in range(U + 1):
        d = tree.append(db.subset(np.arange(i * 500, i * 500 + 800)), make_noise(i))
        assert d.epsilon == pytest.approx(eps / (U + 1))
        assert d.chain_max <= eps / (U + 1) * (1 + 1e-9)
        assert tree.epsilon_spent == pytest.approx((i + 1) * eps / (U + 1))
        assert tree.accountant().spent <= eps * (1 + 1e-9)
    n_nodes = len(tree.nodes)
    psums = [nd.psum for nd in tree.nodes]
    with pytest.raises(BudgetExceededError):
        tree.append(db.subset(np.arange(100)), make_noise(9))
    assert len(tree.nodes) == n_nodes and [nd.psum for nd in tree.nodes] == psums and tree.appends == U + 1


def test_release_is_leaf_psums_above_theta2():
    db = kosarak_like(5000, 30, 2.5, seed=2)
    tree = TBPTree(30, 2.0, 1, fanout=5, c1=1.0, c2=1.0)
    tree.append(db, make_noise(3))
    rel = tree.release(Universe.from_range(1, 30), {"mode": "seeded", "seed": 3})
    leaves = {nd.cut: nd for nd in tree.nodes if nd.leaf}
    assert len(rel.itemsets) > 0
    for items, count in zip(rel.itemsets, rel.counts.tolist()):
        nd = leaves[tuple(items.tolist())]
        assert count == nd.psum >= tree.theta2(nd)
    assert rel.manifest["privacy"]["epsilon_spent"] == pytest.approx(1.0)


def test_seeds_per_append_are_reproducible_and_distinct():
    assert append_seed(5, 0) == append_seed(5, 0)
    assert len({append_seed(5, i) for i in range(50)}) == 50
    assert append_seed(5, 1) != append_seed(6, 1)


def test_baselines_budgets():
    db = kosarak_like(4000, 25, 2.5, seed=4)
    u = Universe.from_range(1, 25)
    batches = [db.subset(np.arange(0, 2000)), db.subset(np.arange(2000, 3000)), db.subset(np.arange(3000, 4000))]
    s1 = solution1(batches, u, 0.8, noises=[make_noise(i) for i in range(3)])
    assert s1.accountant.spent == pytest.approx(0.8)  # parallel composition over disjoint batches
    s2 = solution2(db, u, 0.8, 2, noise=make_noise(1))
    assert s2.manifest["epsilon"] == pytest.approx(0.8 / 3)


def test_msnbc_stream_smoke():
    """Real data (skipped when absent): a short stream on MSNBC keeps the ledger and a sane release size."""
    from conftest import dataset

    from dprelease.data.io import read_transactions
    from dprelease.evaluation.counting import evaluate_counting

    db, u = read_transactions(dataset("msnbc", "msnbc.dat"), Universe.from_range(1, 17))
    rows = np.random.default_rng(0).permutation(db.n_records)[:120_000]
    batches = [db.subset(np.sort(rows[:100_000]))] + [db.subset(np.sort(rows[100_000 + i * 10_000:
                                                                            110_000 + i * 10_000])) for i in range(2)]
    tree = TBPTree(17, 1.0, 2)
    for i, b in enumerate(batches):
        tree.append(b, make_noise(append_seed(0, i)))
    assert tree.epsilon_spent == pytest.approx(1.0)
    rel = tree.release(u, {"mode": "seeded", "seed": 0})
    assert 0.7 * rows.size < rel.n_records < 1.3 * rows.size
    res = evaluate_counting(db.subset(np.sort(rows)), rel.to_db(), n_queries=2000)
    assert res["mean_relative_error"] < 1.0


@pytest.mark.slow
def test_section5_experiment_small(tmp_path):
    """Section 5.1 setting at one (U, epsilon) point: CSV + PNG are written and IncTDPart's RE is < 1."""
    from conftest import dataset

    from dprelease.experiments.inctdpart import IncTDPartExperiment, run_inctdpart_experiment

    cfg = IncTDPartExperiment(dataset("msnbc", "msnbc.dat"), Universe.from_range(1, 17), tmp_path, updates=(10,),
                              epsilons=(1.0,), runs=1, queries=5000)
    out = run_inctdpart_experiment(cfg, log=lambda m: None)
    assert (tmp_path / "inctdpart_summary.csv").exists() and (tmp_path / "inctdpart_relative_error.png").exists()
    inc = [r for r in out["summary"] if r["method"] == "IncTDPart"][0]
    assert inc["relative_error_mean"] < 1.0


def test_false_partitions_do_not_multiply_with_small_c1():
    """R7: with C1 = 1 (about 7 false cells per 1023-cell split without the floor) the tree stays small."""
    tree = TBPTree(60, 1.0, 4, fanout=10, c1=1.0, c2=1.0)
    for i in range(5):
        tree.append(kosarak_like(20_000 if i else 3000, 60, 3.0, seed=i), make_noise(i))
    assert len(tree.nodes) < 2000


def test_expand_classes_worked_example():
    """Expansion of generalized prefix classes (docs/inctdpart.md): F = (a, b), noisy
    supports 60 and 30 from append 0 (noisy total 100). Released: {a} x 40 and {a, b} x 20 know both bits; the
    class "without a" (level 1) x 40 does not know b. Item b's missing count 30 - 20 = 10 is shared over the
    hidden mass 40 (p = 0.25): 10 of the 40 become {b}, 30 stay empty."""
    from types import SimpleNamespace

    from dprelease.setvalued.incprefix import expand_classes

    tree = SimpleNamespace(m=2, F=np.array([0, 1]), noisy_support=np.array([60.0, 30.0]))
    pats, cnts = expand_classes(tree, np.array([0b01, 0b11, 0b00]), np.array([40, 20, 40]), np.array([2, 2, 1]), 100)
    assert sorted(zip(pats[:, 0].tolist(), cnts.tolist())) == [(0b00, 30), (0b01, 40), (0b10, 10), (0b11, 20)]
    # the released total scales the supports: twice the records now -> twice the support of b is expected
    pats, cnts = expand_classes(tree, np.array([0b01, 0b11, 0b00]), np.array([80, 40, 80]), np.array([2, 2, 1]), 100)
    assert sorted(zip(pats[:, 0].tolist(), cnts.tolist())) == [(0b00, 60), (0b01, 80), (0b10, 20), (0b11, 40)]
    # counts are conserved, and a support below the known count adds nothing (p clipped at 0)
    tree.noisy_support = np.array([60.0, 5.0])
    pats, cnts = expand_classes(tree, np.array([0b01, 0b11, 0b00]), np.array([40, 20, 40]), np.array([2, 2, 1]), 100)
    assert sorted(zip(pats[:, 0].tolist(), cnts.tolist())) == [(0b00, 40), (0b01, 40), (0b11, 20)]


def test_prefix_stream_expand_is_post_processing():
    """--no-expand and the default spend the same budget and hold the same p-sums; only the release differs."""
    from dprelease.setvalued.incprefix import PrefixStream

    rng = np.random.default_rng(3)
    recs = [sorted(set(rng.choice(8, size=int(rng.integers(1, 5)), replace=False, p=np.arange(8, 0, -1) / 36.0)
                       .tolist())) for _ in range(3000)]
    db = TransactionDB.from_lists(recs, 8)
    streams = [PrefixStream(8, 1.0, 2, refine=True, expand=e) for e in (False, True)]
    for s in streams:
        for i, lo in enumerate((0, 2000, 2500)):
            s.append(db.subset(np.arange(lo, lo + (2000 if i == 0 else 500))), make_noise(11 + i))
    off, on = streams
    assert off.ledger == on.ledger and np.array_equal(off.psum, on.psum) and on.initial_total == off.initial_total
    (_, c_off), (sets_on, c_on) = off.released(), on.released()
    # the same classes; the bare "no item of F known" prefixes (not released without expansion) gain items
    assert int(c_on.sum()) >= int(c_off.sum())
    assert on.released()[1].tolist() == c_on.tolist()  # deterministic
    assert any(len(s) >= 2 for s in sets_on)
