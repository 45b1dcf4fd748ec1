"""TF (Bhaskar et al., as in PrivBasis section 3): gamma (Eq. 3, Table 2b), implicit candidates, budget."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dprelease.data.transactions import TransactionDB
from dprelease.data.universe import Universe
from dprelease.errors import ParameterError
from dprelease.itemsets.exact import top_k_itemsets
from dprelease.itemsets.tf import candidate_space_size, explicit_candidates, tf, tf_gamma_count
from dprelease.privacy import BudgetAccountant, SeededNoise
from dprelease.privacy.mechanisms import exponential_top_k_implicit, laplace_top_k_implicit


def test_gamma_matches_table_2b():
    # retail k=100, m=1, |U| = 16,470 -> gamma*N = 5768; mushroom k=100, m=2 -> 5433 (eps = 1, rho = 0.9)
    assert candidate_space_size(16470, 1) == 16470
    assert round(tf_gamma_count(100, 1.0, candidate_space_size(16470, 1))) == 5768
    assert candidate_space_size(119, 2) == 119 + 119 * 118 // 2
    assert round(tf_gamma_count(100, 1.0, candidate_space_size(119, 2))) in (5433, 5434)


def _db(seed=0, n=600, n_items=12):
    rng = np.random.default_rng(seed)
    probs = np.linspace(0.8, 0.02, n_items)
    return TransactionDB.from_lists([list(np.flatnonzero(rng.random(n_items) < probs)) for _ in range(n)], n_items)


def test_explicit_candidates_match_mining():
    db = _db()
    for m in (1, 2, 3):
        sets, counts = explicit_candidates(db, m, 40)
        got = dict(zip(sets, counts.tolist()))
        want = {s: c for s, c in top_k_itemsets(db, 10_000, max_length=m) if c >= 40}
        assert got == want


@pytest.mark.parametrize("variant", ["laplace", "exponential"])
@pytest.mark.parametrize("m", [1, 2, 3])
def test_budget_equals_epsilon(variant, m):
    db = _db(1)
    rel = tf(db, Universe.from_range(0, 11), 10, 0.7, m, noise=SeededNoise(3), variant=variant)
    assert rel.accountant.spent == pytest.approx(0.7)
    assert [e.epsilon for e in rel.accountant.ledger] == pytest.approx([0.35, 0.35])
    assert len(rel.itemsets) == 10 and len(set(rel.itemsets)) == 10
    assert all(len(s) <= m for s in rel.itemsets)


@pytest.mark.parametrize("variant", ["laplace", "exponential"])
def test_large_epsilon_finds_exact_top_k(variant):
    db = _db(2, n=3000)
    truth = {s for s, _ in top_k_itemsets(db, 8, max_length=2)}
    rel = tf(db, Universe.from_range(0, 11), 8, 500.0, 2, noise=SeededNoise(1), variant=variant)
    assert set(rel.itemsets) == truth


def test_degenerate_huge_u_is_refused():
    db = TransactionDB.from_lists([[0, 1, 2], [1, 2], [3]] * 20, 3000)
    with pytest.raises(ParameterError, match="-m 3: "):  # decided from public inputs
        tf(db, Universe.from_range(0, 2999), 10, 1.0, 3, noise=SeededNoise(0))


def test_degenerate_small_u_runs_and_samples_implicit():
    # gamma >> f_k: every candidate ties near 0 after truncation, implicit ones get picked
    db = TransactionDB.from_lists([[0, 1], [1, 2], [3]] * 5, 200)
    rel = tf(db, Universe.from_range(0, 199), 20, 0.5, 2, noise=SeededNoise(0))
    assert rel.trace["plan"].degenerate
    assert rel.trace["n_implicit_picked"] > 0
    assert len(set(rel.itemsets)) == 20


def _win_rate_full(explicit, n_imp, floor, k, eps, sens, kind, trials, seed):
    """Reference: enumerate every implicit candidate explicitly."""
    rng = np.random.default_rng(seed)
    wins = 0
    scores = np.r_[explicit, np.full(n_imp, floor)]
    for _ in range(trials):
        if kind == "laplace":
            keyed = scores + rng.laplace(0, sens / eps, scores.size)
        else:
            keyed = (eps / k) / (2 * sens) * scores + rng.gumbel(size=scores.size)
        top = np.argsort(-keyed)[:k]
        wins += int((top < len(explicit)).sum())
    return wins / (trials * k)


@pytest.mark.parametrize("kind", ["laplace", "exponential"])
def test_implicit_order_statistics_match_enumeration(kind):
    explicit = np.array([30.0, 26.0, 22.0, 20.0])
    n_imp, floor, k, eps, sens, trials = 3000, 15.0, 3, 1.0, 2.0, 1500
    noise = SeededNoise(11)
    wins = 0
    for _ in range(trials):
        scope = BudgetAccountant(1e9).root()
        fn = laplace_top_k_implicit if kind == "laplace" else exponential_top_k_implicit
        idx, n_sel = fn(explicit, n_imp, floor, k, eps, sensitivity=sens, scope=scope, noise=noise, label="t")
        assert idx.size + n_sel == k
        wins += idx.size
    got = wins / (trials * k)
    want = _win_rate_full(explicit, n_imp, floor, k, eps, sens, kind, trials, 5)
    assert abs(got - want) < 0.04, (got, want)


def test_implicit_huge_n_is_finite():
    scope = BudgetAccountant(10.0).root()
    idx, n_sel = laplace_top_k_implicit(np.array([1e6]), 10**15, 0.0, 5, 1.0, sensitivity=1.0, scope=scope,
                                        noise=SeededNoise(0), label="t")
    assert idx.tolist() == [0] and n_sel == 4
    idx, n_sel = exponential_top_k_implicit(np.array([1e6]), 10**15, 0.0, 5, 1.0, sensitivity=1.0, scope=scope,
                                            noise=SeededNoise(0), label="t")
    assert idx.tolist() == [0] and n_sel == 4
    assert math.isfinite(scope.chain_spent)


def test_cli_tf_warns_when_degenerate_and_evaluates(tmp_path, capsys):
    import json

    from conftest import dataset

    from dprelease.cli import main

    path = dataset("mushroom", "mushroom.dat")
    out = tmp_path / "tf.csv"
    assert main(["tf", str(path), "-k", "100", "-m", "2", "--epsilon", "1", "-o", str(out), "--universe", "1..119",
                 "--seed", "2", "-q"]) == 0
    assert "gamma*N = 5434" in capsys.readouterr().err  # public (k, eps, |U|, rho); f_k*N is never printed
    manifest = json.loads((tmp_path / "tf.csv.manifest.json").read_text())
    assert manifest["privacy"]["epsilon_spent"] == 1.0 and manifest["parameters"]["m"] == 2
    assert "5434" not in json.dumps(manifest)  # gamma*N and f_k*N are custodian-only
    assert main(["evaluate", "itemsets", str(path), str(out), "-k", "100", "--json", "--universe", "1..119",
                 "-q"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert 0.3 <= res["fnr"] <= 1.0


@pytest.mark.parametrize("m", [1, 2, 3, 4])
def test_one_mining_pass_gives_the_two_pass_plan_and_candidates(m, monkeypatch):
    """tf_plan + explicit_candidates (two exact minings) and the single pass agree on f_k*N and the candidates;
    for m <= 2 even the candidate order is the same (so seeded releases are unchanged)."""
    import dprelease.itemsets.tf as tfmod

    for seed in range(4):
        db = _db(seed, n=400 + 100 * seed, n_items=10 + seed)
        for k, eps in ((5, 50.0), (20, 2.0), (60, 0.3)):
            plan = tfmod.tf_plan(db, k, eps, m)
            want_sets, want_counts = explicit_candidates(db, m, int(math.floor(plan.floor)) + 1)
            calls = []
            real = tfmod.mine_frequent
            monkeypatch.setattr(tfmod, "mine_frequent",
                                lambda *a, _calls=calls, _real=real, **kw: _calls.append(1) or _real(*a, **kw))
            monkeypatch.setattr(tfmod, "top_k_itemsets", lambda *a, **kw: pytest.fail("top-k mining in tf"))
            got_plan, sets, counts = tfmod._plan_and_candidates(db, k, eps, m, 0.9)
            monkeypatch.undo()
            assert len(calls) == (1 if m >= 3 else 0)
            assert got_plan == plan
            if m <= 2:
                assert sets == want_sets and counts.tolist() == want_counts.tolist()
            else:
                assert dict(zip(sets, counts.tolist())) == dict(zip(want_sets, want_counts.tolist()))
                assert sets == sorted(sets, key=lambda s: (len(s), s))
