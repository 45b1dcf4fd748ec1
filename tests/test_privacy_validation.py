"""Issue 8 section 3: every mechanism validates epsilon and sensitivity where they enter; typed ledger events;
the exact total spent; errors that are also ValueErrors.

Before: sensitivity 0 divided by zero, -1 made the exponential mechanism prefer the worst candidate while
still charging epsilon, and the manifest rounded the accountant's 1e-9 tolerance away.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from dprelease.data import TransactionDB, Universe
from dprelease.errors import BudgetExceededError, DPReleaseError, InputError, ParameterError
from dprelease.privacy import (
    BudgetAccountant,
    SeededNoise,
    discrete_laplace_tail,
    exponential_mechanism,
    exponential_mechanism_disjoint,
    exponential_top_k,
    exponential_top_k_implicit,
    laplace_top_k_implicit,
    noisy_counts,
    noisy_values,
    threshold_counts,
    uniform_choice,
    zero_cell_threshold,
)
from dprelease.privacy.accountant import epsilon_of
from dprelease.privacy.noise import NoiseSource

BAD_NUMBERS = [0, 0.0, -1, -1e-300, math.nan, math.inf, -math.inf, "x", None, True]


class ExplodingNoise(NoiseSource):
    """Fails the test if any noise is drawn."""

    mode = "exploding"

    def discrete_laplace(self, scale, size):
        raise AssertionError("noise drawn before validation")

    laplace = uniform = integers = binomial = gumbel = discrete_laplace  # type: ignore[assignment]


def _mechanisms(epsilon, sensitivity):
    """Every mechanism with a sensitivity, called with the given epsilon and sensitivity."""
    s = np.array([1.0, 2.0, 3.0])
    return {
        "noisy_counts": lambda sc, nz: noisy_counts(np.array([1, 2]), epsilon, sensitivity=sensitivity, scope=sc,
                                                    noise=nz, label="t"),
        "noisy_values": lambda sc, nz: noisy_values(s, epsilon, sensitivity=sensitivity, scope=sc, noise=nz,
                                                    label="t"),
        "exponential_mechanism": lambda sc, nz: exponential_mechanism(s, epsilon, sensitivity=sensitivity, scope=sc,
                                                                      noise=nz, label="t"),
        "exponential_top_k": lambda sc, nz: exponential_top_k(s, 2, epsilon, sensitivity=sensitivity, scope=sc,
                                                              noise=nz, label="t"),
        "exponential_mechanism_disjoint": lambda sc, nz: exponential_mechanism_disjoint(
            [s, s], epsilon, sensitivity=sensitivity, scope=sc, noise=nz, label="t"),
        "laplace_top_k_implicit": lambda sc, nz: laplace_top_k_implicit(s, 5, 0.0, 2, epsilon,
                                                                        sensitivity=sensitivity, scope=sc, noise=nz,
                                                                        label="t"),
        "exponential_top_k_implicit": lambda sc, nz: exponential_top_k_implicit(s, 5, 0.0, 2, epsilon,
                                                                                sensitivity=sensitivity, scope=sc,
                                                                                noise=nz, label="t"),
        "discrete_laplace_tail": lambda sc, nz: discrete_laplace_tail(epsilon, 2.0, sensitivity),
    }


MECHANISMS = sorted(_mechanisms(1.0, 1.0))


@pytest.mark.parametrize("name", MECHANISMS)
@pytest.mark.parametrize("bad", BAD_NUMBERS, ids=repr)
def test_bad_sensitivity_is_refused_before_any_charge_or_draw(name, bad):
    acc = BudgetAccountant(10.0)
    with pytest.raises(ParameterError, match="sensitivity"):
        _mechanisms(1.0, bad)[name](acc.root(), ExplodingNoise())
    assert acc.ledger == [] and acc.spent == 0.0


@pytest.mark.parametrize("name", MECHANISMS + ["threshold_counts", "zero_cell_threshold"])
@pytest.mark.parametrize("bad", BAD_NUMBERS, ids=repr)
def test_bad_epsilon_is_refused_before_any_charge_or_draw(name, bad):
    acc = BudgetAccountant(10.0)
    calls = _mechanisms(bad, 1.0) | {
        "threshold_counts": lambda sc, nz: threshold_counts(np.array([1]), 3, bad, 2.0, scope=sc, noise=nz,
                                                            label="t"),
        "zero_cell_threshold": lambda sc, nz: zero_cell_threshold(100, bad, 0.5),
    }
    with pytest.raises(ParameterError, match="epsilon"):
        calls[name](acc.root(), ExplodingNoise())
    assert acc.ledger == []


@pytest.mark.parametrize("call", [
    lambda sc: exponential_mechanism(np.zeros(0), 1.0, sensitivity=1, scope=sc, noise=ExplodingNoise(), label="t"),
    lambda sc: exponential_mechanism(np.array([1.0, math.nan]), 1.0, sensitivity=1, scope=sc, noise=ExplodingNoise(),
                                     label="t"),
    lambda sc: exponential_mechanism(np.array([1.0, 2.0]), 1.0, sensitivity=1, scope=sc, noise=ExplodingNoise(),
                                     label="t", log_base_measure=np.zeros(3)),
    lambda sc: exponential_top_k(np.arange(3.0), -1, 1.0, sensitivity=1, scope=sc, noise=ExplodingNoise(), label="t"),
    lambda sc: exponential_top_k_implicit(np.arange(3.0), -2, 0.0, 2, 1.0, sensitivity=1, scope=sc,
                                          noise=ExplodingNoise(), label="t"),
    lambda sc: laplace_top_k_implicit(np.arange(3.0), 5, math.inf, 2, 1.0, sensitivity=1, scope=sc,
                                      noise=ExplodingNoise(), label="t"),
    lambda sc: threshold_counts(np.array([1]), -1, 1.0, 2.0, scope=sc, noise=ExplodingNoise(), label="t"),
    lambda sc: threshold_counts(np.array([1]), 1.5, 1.0, 2.0, scope=sc, noise=ExplodingNoise(), label="t"),
    lambda sc: uniform_choice(0, ExplodingNoise()),
    lambda sc: zero_cell_threshold(0, 1.0, 0.5),
    lambda sc: zero_cell_threshold(10, 1.0, 0.0),
], ids=["empty", "nan-score", "base-shape", "negative-k", "negative-implicit", "inf-implicit-score",
        "negative-zeros", "fractional-zeros", "uniform-0", "zero-cells", "zero-expected"])
def test_other_bad_arguments_are_parameter_errors(call):
    acc = BudgetAccountant(10.0)
    with pytest.raises(ParameterError):
        call(acc.root())
    assert acc.ledger == []


def test_errors_are_also_value_errors():
    assert issubclass(ParameterError, ValueError) and issubclass(ParameterError, DPReleaseError)
    assert issubclass(InputError, ValueError) and issubclass(InputError, DPReleaseError)
    with pytest.raises(ValueError):
        BudgetAccountant(-1.0)


def test_accountant_message_names_the_charge():
    acc = BudgetAccountant(1.0)
    root = acc.root()
    root.spend(0.75, "step 1", mechanism="reserved")
    with pytest.raises(BudgetExceededError, match="step 2"):
        root.spend(0.5, "step 2", mechanism="reserved")
    with pytest.raises(ParameterError, match="'step 3'"):
        root.spend(-0.1, "step 3", mechanism="reserved")


def test_summary_reports_the_exact_total_rounded_up():
    """0.1 + 0.2 exceeds 0.3 in exact arithmetic (by 2.8e-17): the manifest says so, rounded toward the safe side."""
    acc = BudgetAccountant(0.3)
    root = acc.root()
    root.spend(0.1, "a", mechanism="reserved")
    root.spend(0.2, "b", mechanism="reserved")
    exact = Fraction(0.1) + Fraction(0.2)
    assert acc.spent_exact == exact > Fraction(0.3)
    spent = acc.summary()["epsilon_spent"]
    assert Fraction(spent) >= exact and spent == 0.30000000000000004  # was 0.3 (the tolerance rounded away)
    # a split that sums exactly is reported exactly
    acc = BudgetAccountant(1.0)
    r = acc.root()
    for e in (0.5, 0.25, 0.25):
        r.spend(e, "x", mechanism="reserved")
    assert acc.summary()["epsilon_spent"] == 1.0


def _check_ledger(accountant: BudgetAccountant) -> None:
    """Every charge is typed, and a mechanism's epsilon is re-derived from its sensitivity and scale."""
    assert accountant.ledger
    for entry in accountant.ledger:
        assert entry.mechanism in ("laplace", "discrete_laplace", "exponential", "composite", "reserved"), entry
        derived = epsilon_of(entry)
        if entry.mechanism in ("laplace", "discrete_laplace", "exponential"):
            assert derived is not None and derived <= entry.epsilon, entry  # scales are rounded up: the safe side
            assert derived == pytest.approx(entry.epsilon, rel=1e-12), entry


def test_every_algorithm_ledger_rederives_its_epsilon():
    from dprelease.itemsets.privbasis import PrivBasisParams, privbasis
    from dprelease.itemsets.tf import tf
    from dprelease.setvalued import basic, diffpart

    rng = np.random.default_rng(0)
    recs = [sorted(rng.choice(30, size=int(rng.integers(1, 8)), replace=False).tolist()) for _ in range(400)]
    db = TransactionDB.from_lists(recs, 30)
    u = Universe.from_range(1, 30)
    _check_ledger(diffpart(db, u, 1.0, noise=SeededNoise(1), keep_trace=True, fanout=4).accountant)
    small = TransactionDB.from_lists([r for r in recs if max(r) < 8], 8)
    _check_ledger(basic(small, Universe.from_range(1, 8), 1.0, noise=SeededNoise(1)).accountant)
    for lam_max in (12, 2):  # one basis, and the multi-basis path (lambda > single_basis_max)
        rel = privbasis(db, u, 10, 1.0, noise=SeededNoise(2), params=PrivBasisParams(single_basis_max=lam_max))
        _check_ledger(rel.accountant)
    for variant in ("laplace", "exponential"):
        _check_ledger(tf(db, u, 10, 1.0, 2, noise=SeededNoise(3), variant=variant).accountant)


def test_diffgen_ledger_rederives_its_epsilon():
    from conftest import REPO

    from dprelease.data.table import load_schema, read_table
    from dprelease.relational.diffgen import diffgen

    table = read_table(REPO / "examples" / "table1-jobs.csv", load_schema(REPO / "examples" / "table1-schema.yaml"))
    for h in (1, 3, 20):  # 20 > the specializations available: "reserved" shares
        rel = diffgen(table, 1.0, h, noise=SeededNoise(h))
        _check_ledger(rel.accountant)
        assert rel.accountant.spent == pytest.approx(1.0, rel=1e-12)
