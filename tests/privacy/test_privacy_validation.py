"""Every mechanism validates epsilon and sensitivity where they enter; every charge is a typed ledger event whose
epsilon its parameters re-derive, for every command, method, choice and flag of the CLI; the exact total spent;
errors that are also ValueErrors; input-validation errors refused before any mechanism.

Why: a sensitivity of 0 divided by zero, -1 made the exponential mechanism prefer the worst candidate while still
charging epsilon, the manifest rounded the accountant's 1e-9 tolerance away, and two mechanisms (PrivTree and the
private medians) charged untyped events that no test could re-derive.
"""

from __future__ import annotations

import argparse
import json
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
from dprelease.privacy.accountant import LedgerEntry, epsilon_of
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
    """Every charge is typed, and a mechanism's epsilon is re-derived from its parameters."""
    from dprelease.privacy.accountant import NOISE_MECHANISMS

    assert accountant.ledger
    for entry in accountant.ledger:
        assert entry.mechanism in NOISE_MECHANISMS | {"composite", "reserved"}, entry
        derived = epsilon_of(entry)
        if entry.mechanism in NOISE_MECHANISMS:
            assert derived is not None and derived <= entry.epsilon, entry  # scales are rounded up: the safe side
            assert derived == pytest.approx(entry.epsilon, rel=1e-12), entry


def test_a_spend_must_name_a_known_mechanism_and_carry_its_parameters():
    """Nothing is charged when the mechanism is missing, unknown, lacks its parameters or understates its loss."""
    acc = BudgetAccountant(1.0)
    root = acc.root()
    with pytest.raises(TypeError):
        root.spend(0.5, "untyped")  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="unknown mechanism"):
        root.spend(0.5, "t", mechanism="unspecified")  # type: ignore[arg-type]
    for mechanism in ("laplace", "discrete_laplace", "exponential", "privtree"):
        with pytest.raises(ValueError, match="needs the parameters"):
            root.spend(0.5, "t", mechanism=mechanism, sensitivity=1.0)
    with pytest.raises(ValueError, match="needs the parameters"):  # PrivTree's law is for unit counts
        root.spend(0.5, "t", mechanism="privtree", sensitivity=2.0, scale=10.0, depth_bias=7, beta=2.0)
    with pytest.raises(ValueError, match="guarantee epsilon"):  # scale 1 at sensitivity 1 is epsilon 1, not 0.5
        root.spend(0.5, "t", mechanism="laplace", sensitivity=1.0, scale=1.0)
    with pytest.raises(ValueError, match="guarantee epsilon"):  # two monotone rounds of scale 4: epsilon 0.5
        root.spend(0.25, "t", mechanism="exponential", sensitivity=1.0, scale=4.0, rounds=2, monotonic=True)
    assert acc.ledger == [] and acc.spent == 0.0 and acc.n_spends == 0
    root.spend(0.5, "t", mechanism="exponential", sensitivity=1.0, scale=4.0, rounds=2, monotonic=True)
    root.spend(0.25, "c", mechanism="composite")
    root.spend(0.25, "r", mechanism="reserved")
    assert [epsilon_of(e) for e in acc.ledger] == [0.5, None, None]


def test_epsilon_of_is_exact_and_never_above_the_charge():
    """Scales rounded up in rationals re-derive to at most the charge (float division could round above it)."""
    from dprelease.privacy.mechanisms import laplace_scale, selection_scale

    rng = np.random.default_rng(11)
    for _ in range(2000):
        eps = float(rng.uniform(1e-3, 10.0))
        sens = float(rng.choice([1.0, 2.0, 3.0, 7.0, float(rng.uniform(0.1, 50.0))]))
        rounds, mono = int(rng.integers(1, 40)), bool(rng.integers(0, 2))
        acc = BudgetAccountant(eps * 3)
        root = acc.root()
        root.spend(eps, "l", mechanism="laplace", sensitivity=sens, scale=laplace_scale(eps, sens))
        root.spend(eps, "e", mechanism="exponential", sensitivity=sens, rounds=rounds, monotonic=mono,
                   scale=selection_scale(eps, sens, monotonic=mono, rounds=rounds))
        for entry in acc.ledger:
            assert epsilon_of(entry) <= eps and epsilon_of(entry) == pytest.approx(eps, rel=1e-15)


@pytest.mark.parametrize("secure", [False, True], ids=["seeded", "secure"])
@pytest.mark.parametrize("single_run", [False, True], ids=["many-runs", "one-run-each"])
def test_private_medians_charge_a_typed_exponential_event(secure, single_run):
    """Was an untyped spend on the seeded path and on the secure path where every region has one run."""
    from dprelease.privacy import SecureNoise
    from dprelease.privacy.median import median_intervals, private_medians

    if single_run:  # lattice [0, 2): the only candidate is 1, whatever the records
        iv = median_intervals(2, np.array([0, 1]), np.array([0.0, 1.0]), np.array([3, 2]), np.zeros(2),
                              np.full(2, 2.0), np.ones(2, dtype=bool))
    else:
        iv = median_intervals(2, np.array([0, 0, 1]), np.array([2.0, 5.0, 3.0]), np.array([4, 1, 2]), np.zeros(2),
                              np.full(2, 8.0), np.ones(2, dtype=bool))
    acc = BudgetAccountant(1.0)
    private_medians(iv, 0.5, sensitivity=3, scope=acc.root(), noise=SecureNoise() if secure else SeededNoise(0),
                    label="medians")
    (entry,) = acc.ledger
    assert (entry.mechanism, entry.sensitivity, entry.rounds, entry.monotonic) == ("exponential", 3.0, 1, False)
    assert entry.scale == 12.0 and epsilon_of(entry) == 0.5  # Gumbel scale 2 Delta / eps


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


# --- Every command and method of the CLI: every charge typed and re-derived ---------------------------------
# Each run below is a sequence of command lines ({tx}, {batch0}, {batch1}, {table}, {schema}, {graph}, {out} are
# filled in); the test runs them in process and records every charge of every accountant the commands make (the
# stream's inner accountants keep no ledger of their own, so the record is taken at BudgetAccountant._record).
# test_cli_runs_cover_every_method_the_parser_offers reads the choices and flags of every releasing command from
# the parser: a new method, choice or flag fails it until a run below takes it (or CLI_EXEMPT says why no run
# needs to).

_TX = ["--universe", "1..12", "--seed", "1", "-q"]
_TABLE = ["{table}", "--schema", "{schema}", "--seed", "1", "-q"]


def _stream(name: str, *init: str, append: tuple[str, ...] = ()) -> list[list[str]]:
    state = "{out}/" + name + ".sqlite"
    return [["stream", "init", state, "-e", "1", "--universe", "1..12", "--seed", "3", "-q", *init],
            ["stream", "append", state, "{batch0}", "-o", "{out}/" + name + "-0.dat", "-q", *append],
            ["stream", "append", state, "{batch1}", "-o", "{out}/" + name + "-1.dat", "-q", *append]]


CLI_RUNS: dict[str, list[list[str]]] = {
    "diffpart-prefix": [["diffpart", "{tx}", "-e", "1", "-o", "{out}/a.dat", "--method", "prefix", *_TX]],
    "diffpart-prefix-level-wise": [["diffpart", "{tx}", "-e", "1", "-o", "{out}/a.dat", "--level-wise", *_TX]],
    "diffpart-faithful": [["diffpart", "{tx}", "-e", "1", "-o", "{out}/a.dat", "--method", "faithful", *_TX]],
    "diffpart-recommended": [["diffpart", "{tx}", "-e", "1", "-o", "{out}/a.dat", "--method", "recommended", *_TX]],
    "diffpart-faithful-level-wise-no-guard": [["diffpart", "{tx}", "-e", "1", "-o", "{out}/a.dat", "--fanout", "4",
                                               "--no-branching-guard", "--level-wise", *_TX]],
    "basic": [["basic", "{tx}", "-e", "1", "-o", "{out}/a.dat", *_TX]],
    "privbasis": [["privbasis", "{tx}", "-k", "10", "-e", "1", "-o", "{out}/a.csv", *_TX]],
    "privbasis-faithful": [["privbasis", "{tx}", "-k", "10", "-e", "1", "-o", "{out}/a.csv", "--faithful", *_TX]],
    "privbasis-method-faithful": [["privbasis", "{tx}", "-k", "10", "-e", "1", "-o", "{out}/a.csv", "--method",
                                   "faithful", *_TX]],
    # --single-basis-max 2: lambda > 2 takes the multi-basis path, where the selection options apply
    "privbasis-multi-bounded": [["privbasis", "{tx}", "-k", "10", "-e", "1", "-o", "{out}/a.csv",
                                 "--single-basis-max", "2", "--selection", "bounded", "--exact-k", "--dense-bases", *_TX]],
    "privbasis-multi-exponential-naive-universe": [
        ["privbasis", "{tx}", "-k", "10", "-e", "1", "-o", "{out}/a.csv", "--single-basis-max", "2", "--selection",
         "exponential", "--lambda2-rule", "naive", "--lambda-range", "universe", "--no-exact-k", "--no-dense-bases",
         *_TX]],
    "privbasis-multi-exponential-sqrt-k1": [
        ["privbasis", "{tx}", "-k", "10", "-e", "1", "-o", "{out}/a.csv", "--single-basis-max", "2", "--selection",
         "exponential", "--lambda2-rule", "sqrt", "--lambda-range", "k1", *_TX]],
    "tf-laplace": [["tf", "{tx}", "-k", "10", "-m", "2", "-e", "1", "-o", "{out}/a.csv", "--variant", "laplace", *_TX]],
    "tf-exponential": [["tf", "{tx}", "-k", "10", "-m", "2", "-e", "1", "-o", "{out}/a.csv", "--variant",
                        "exponential", *_TX]],
    **{f"diffgen-{m}": [["diffgen", *_TABLE, "-e", "1", "-H", "3", "-o", "{out}/a.csv", "--method", m]]
       # the method names, and the old names the command still accepts (each with a note naming its replacement)
       for m in ("faithful", "recommended", "diffgen", "diffgen-local", "diffgen-plus3")},
    "diffgen-infogain-recycle-records": [["diffgen", *_TABLE, "-e", "1", "-H", "20", "-o", "{out}/a.csv", "--score",
                                          "infogain", "--recycle", "--records"]],
    "diffgen-max-local-reserved": [["diffgen", *_TABLE, "-e", "1", "-H", "20", "-o", "{out}/a.csv", "--score", "max",
                                    "--local"]],
    "rps-balanced": [["rps", *_TABLE, "-e", "1", "-o", "{out}/a.csv", "--partitioning", "balanced"]],
    "rps-balanced-first-consistency-stop": [["rps", *_TABLE, "-e", "1", "-o", "{out}/a.csv", "--class-split", "first",
                                             "--consistency", "--stop-threshold", "2"]],
    "rps-balanced-secure": [["rps", "{table}", "--schema", "{schema}", "-q", "-e", "1", "-o", "{out}/a.csv",
                             "--method", "faithful"]],
    "rps-guided-secure": [["rps", "{table}", "--schema", "{schema}", "-q", "-e", "1", "-o", "{out}/a.csv"]],
    "rps-fixed": [["rps", *_TABLE, "-e", "1", "-o", "{out}/a.csv", "--partitioning", "fixed", "--class-split",
                   "last"]],
    "degrees-rps": [["degrees", "{graph}", "-e", "1", "--theta", "4", "-o", "{out}/a.csv", "--method", "rps",
                     "--seed", "1", "-q"]],
    "degrees-rps-balanced-cumulative": [
        ["degrees", "{graph}", "-e", "1", "--theta", "4", "-o", "{out}/a.csv", "--method", "rps", "--partitioning",
         "balanced", "--summarize", "cumulative", "--graph-out", "{out}/g.txt", "--graph-model", "havel-hakimi", "--seed", "1",
         "-q"]],
    "degrees-rps-fixed-counts": [["degrees", "{graph}", "-e", "1", "--theta", "4", "-o", "{out}/a.csv",
                                  "--method", "faithful", "--partitioning", "fixed", "--summarize", "counts", "--graph-out", "{out}/g.txt",
                                  "--graph-model", "configuration", "--seed", "1", "-q"]],
    "degrees-rps-secure": [["degrees", "{graph}", "-e", "1", "--theta", "4", "-o", "{out}/a.csv", "--method", "rps",
                            "-q"]],
    "degrees-recommended": [["degrees", "{graph}", "-e", "1", "--theta", "40", "-o", "{out}/a.csv", "--seed", "1",
                             "-q"]],
    "degrees-hay": [["degrees", "{graph}", "-e", "1", "--theta", "4", "-o", "{out}/a.csv", "--method", "hay",
                     "--seed", "1", "-q"]],
    "degrees-cumulative": [["degrees", "{graph}", "-e", "1", "--theta", "4", "-o", "{out}/a.csv", "--method",
                            "cumulative", "--seed", "1", "-q"]],
    "stream-paper-tdpart": _stream("s1", "-U", "2", "--accounting", "paper", "--partitioning", "tdpart"),
    "stream-paper-tdpart-free-mean-every": _stream("s2", "-U", "2", "--routing", "free", "--theta-rule", "mean",
                                                   "--new-cells", "every-visit"),
    "stream-paper-tdpart-semi-level-wise": _stream("s3", "-U", "2", "--routing", "paper", "--theta-rule",
                                                   "example3", "--new-cells", "semi", append=("--level-wise",)),
    "stream-parallel-tdpart": _stream("s4", "--accounting", "parallel", "--partitioning", "tdpart",
                                      "--new-cells", "first-visit", "--privacy-unit", "record"),
    "stream-paper-prefix": _stream("s5", "-U", "2", "--partitioning", "prefix"),
    "stream-parallel-prefix-no-refine-no-expand": _stream("s6", "--accounting", "parallel", "--partitioning",
                                                          "prefix", "--no-refine", "--no-expand",
                                                          "--privacy-unit", "person", "--max-batches-per-person",
                                                          "2", "-U", "2"),
}

# (command, option dest) -> the values no run needs to take, and why. "*" = every value.
CLI_EXEMPT: dict[tuple[str, str], tuple[set[object] | str, str]] = {
    **{(c, "engine"): ({"spark"}, "--engine spark reads the data with Spark and runs the same algorithm code "
                                  "(the --level-wise loop, run above); pyspark is optional (tests/engine/test_engine_spark.py)")
       for c in ("diffpart", "basic", "privbasis", "tf", "diffgen", "rps", "stream append")},
    **{(c, "quiet"): ("*", "messages only") for c in ("diffpart", "basic", "privbasis", "tf", "diffgen", "rps",
                                                     "degrees", "stream init", "stream append")},
    ("stream init", "method"): ("*", "an alias of --partitioning (prefix = --partitioning prefix, faithful = "
                                     "--partitioning tdpart), whose every value a run takes"),
    **{(c, "force"): ("*", "output replacement only") for c in ("diffpart", "basic", "privbasis", "tf", "diffgen",
                                                               "rps", "degrees", "stream append")},
}

# Runs that must show these mechanisms (the new typed events among them).
CLI_EXPECT: dict[str, set[str]] = {
    "diffpart-prefix": {"laplace", "privtree", "discrete_laplace"},
    "diffpart-faithful": {"discrete_laplace"},
    "rps-balanced": {"exponential", "discrete_laplace"},
    "degrees-rps": {"exponential", "discrete_laplace"},
    "rps-balanced-secure": {"exponential", "discrete_laplace"},
    "rps-guided-secure": {"privtree", "discrete_laplace"},
    "degrees-rps-secure": {"exponential", "discrete_laplace"},
    "stream-paper-prefix": {"composite", "privtree", "discrete_laplace"},
    "stream-parallel-prefix-no-refine-no-expand": {"composite", "privtree"},
    "stream-parallel-tdpart": {"composite", "discrete_laplace"},
    "diffgen-max-local-reserved": {"reserved", "exponential"},
}

# Commands that take --epsilon but release nothing of the custodian's data: the audit runs built-in fixtures;
# `ledger init` declares a total; the experiments run the same algorithm functions (their extra methods are
# checked in test_experiment_methods_are_covered).
_NOT_RELEASES = {"audit", "ledger init", "experiment diffgen-classification", "experiment rps-classification"}


def _releasing_parsers() -> dict[str, argparse.ArgumentParser]:
    from dprelease.cli import build_parser

    out: dict[str, argparse.ArgumentParser] = {}

    def walk(parser: argparse.ArgumentParser, path: list[str]) -> None:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        for action in subs:
            for name, child in action.choices.items():
                walk(child, [*path, name])
        name = " ".join(path)
        if path and not subs and name not in _NOT_RELEASES and (
                any("--epsilon" in a.option_strings for a in parser._actions) or name == "stream append"):
            out[name] = parser

    walk(build_parser(), [])
    return out


def _fill(argv: list[str], paths: dict[str, str]) -> list[str]:
    return [a.format(**paths) for a in argv]


@pytest.fixture(scope="module")
def cli_inputs(tmp_path_factory) -> dict[str, str]:
    from conftest import REPO

    d = tmp_path_factory.mktemp("cli-inputs")
    lines = [ln for ln in (REPO / "examples" / "baskets.dat").read_text().splitlines() if ln and ln[0] != "#"]
    (d / "batch0.dat").write_text("\n".join(lines[:1500]) + "\n")
    (d / "batch1.dat").write_text("\n".join(lines[1500:]) + "\n")
    rng = np.random.default_rng(5)  # a small graph: 40 nodes, degrees 1..9
    edges = {tuple(sorted(e)) for e in rng.integers(0, 40, size=(90, 2)).tolist() if e[0] != e[1]}
    (d / "graph.txt").write_text("".join(f"{a} {b}\n" for a, b in sorted(edges)))
    return {"tx": str(REPO / "examples" / "baskets.dat"), "batch0": str(d / "batch0.dat"),
            "batch1": str(d / "batch1.dat"), "table": str(REPO / "examples" / "table1-jobs.csv"),
            "schema": str(REPO / "examples" / "table1-schema.yaml"), "graph": str(d / "graph.txt")}


def _capture(monkeypatch) -> list[tuple[BudgetAccountant, LedgerEntry]]:
    """Record every charge of every accountant, ledger kept or not."""
    seen: list = []
    original = BudgetAccountant._record

    def record(self, scope, entry):
        seen.append((self, entry))
        original(self, scope, entry)

    monkeypatch.setattr(BudgetAccountant, "_record", record)
    return seen


def _problems(seen: list) -> list[str]:
    """Every charge that is untyped or whose epsilon its parameters do not re-derive (to a relative 1e-12)."""
    from dprelease.privacy.accountant import NOISE_MECHANISMS

    bad = []
    totals = {}
    for acc, entry in seen:
        totals.setdefault(id(acc), (acc, []))[1].append(entry)
    for acc, entry in seen:
        if entry.mechanism in NOISE_MECHANISMS:
            derived = epsilon_of(entry)
            if derived is None or not derived <= entry.epsilon or \
                    abs(derived - entry.epsilon) > 1e-12 * entry.epsilon:
                bad.append(f"{entry} re-derives to {derived!r}")
        elif entry.mechanism == "composite":
            # its parts: an accountant of exactly this total whose every charge is a noise mechanism
            parts = [a for a, entries in totals.values() if a is not acc and a.total == entry.epsilon
                     and all(e.mechanism in NOISE_MECHANISMS for e in entries)]
            if not parts:
                bad.append(f"{entry}: no accountant of its parts")
        elif entry.mechanism != "reserved":
            bad.append(f"{entry}: untyped")
    return bad


@pytest.mark.parametrize("name", sorted(CLI_RUNS))
def test_every_cli_method_charges_typed_events_that_rederive(name, cli_inputs, tmp_path, monkeypatch):
    from dprelease.cli import main
    from dprelease.release import PRIVACY_UNITS

    seen = _capture(monkeypatch)
    paths = {**cli_inputs, "out": str(tmp_path)}
    for argv in CLI_RUNS[name]:
        assert main(_fill(argv, paths)) == 0, argv
    assert seen, f"{name}: no charge recorded"
    assert _problems(seen) == [], name
    mechanisms = {e.mechanism for _, e in seen}
    assert CLI_EXPECT.get(name, set()) <= mechanisms, (name, mechanisms)
    # every manifest the runs wrote states its privacy unit: what neighbouring inputs differ in
    manifests = sorted(tmp_path.rglob("*.manifest.json"))
    assert manifests or name.startswith("stream"), f"{name}: no manifest written"
    for path in manifests:
        manifest = json.loads(path.read_text())
        assert manifest.get("privacy_unit") in PRIVACY_UNITS, (name, path.name, manifest.get("privacy_unit"))
        assert str(manifest["privacy"].get("neighbours", "")).startswith("one "), (name, path.name)


def test_cli_runs_cover_every_method_the_parser_offers():
    """Every choice and every flag of every releasing command is taken by some run in CLI_RUNS (or exempt)."""
    from dprelease.cli import build_parser

    parsers = _releasing_parsers()
    assert {"diffpart", "basic", "privbasis", "tf", "diffgen", "rps", "degrees", "stream init",
            "stream append"} <= set(parsers)
    dummy = {k: "x" for k in ("tx", "batch0", "batch1", "table", "schema", "graph")} | {"out": "o"}
    taken: dict[str, list[argparse.Namespace]] = {}
    for argvs in CLI_RUNS.values():
        for argv in argvs:
            filled = _fill(argv, dummy)
            command = " ".join(filled[:2]) if filled[0] == "stream" else filled[0]
            taken.setdefault(command, []).append(build_parser(filled[0]).parse_args(filled))
    missing = []
    for command, parser in parsers.items():
        if command not in taken:
            missing.append(f"{command}: no run")
            continue
        for action in parser._actions:
            if action.choices and not isinstance(action, argparse._SubParsersAction):
                wanted = set(action.choices)
            elif isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction)):
                wanted = {action.const}
            else:
                continue
            exempt, _ = CLI_EXEMPT.get((command, action.dest), (set(), ""))
            if exempt == "*":
                continue
            got = {getattr(ns, action.dest) for ns in taken[command]}
            for value in sorted(wanted - got - set(exempt), key=repr):
                missing.append(f"{command} {action.option_strings[-1]} {value!r}")
    assert missing == [], "no run in CLI_RUNS takes: " + "; ".join(missing)


def _experiment_data() -> dict[str, object]:
    from conftest import REPO

    from dprelease.data.table import load_schema, read_table

    rng = np.random.default_rng(0)
    recs = [sorted(rng.choice(30, size=int(rng.integers(1, 8)), replace=False).tolist()) for _ in range(400)]
    return {"db": TransactionDB.from_lists(recs, 30), "u": Universe.from_range(1, 30),
            "halves": [TransactionDB.from_lists(recs[:200], 30), TransactionDB.from_lists(recs[200:], 30)],
            "table": read_table(REPO / "examples" / "table1-jobs.csv",
                                load_schema(REPO / "examples" / "table1-schema.yaml"))}


def _experiment_runs() -> dict[str, object]:
    """The experiments' own methods that no releasing command offers, each a call on _experiment_data."""
    from dprelease.experiments.diffgen import release_method
    from dprelease.experiments.privbasis import METHODS as PB_METHODS
    from dprelease.itemsets.privbasis import privbasis
    from dprelease.relational.diffp_c45 import diffp_c45
    from dprelease.setvalued.baselines import solution1, solution2

    runs: dict[str, object] = {
        f"privbasis experiment {m}": (lambda d, p=p: privbasis(d["db"], d["u"], 10, 1.0, noise=SeededNoise(2),
                                                               params=p))
        for m, p in PB_METHODS.items()}
    runs["diffgen experiment diffp-c45"] = lambda d: diffp_c45(d["table"], 1.0, noise=SeededNoise(4))
    # the variants `dprelease diffgen` no longer offers, kept for the experiment that reproduces their numbers
    for m in ("diffgen", "diffgen-local", "diffgen-plus", "diffgen-plus2", "diffgen-plus3"):
        runs[f"diffgen experiment {m}"] = (lambda d, m=m: release_method(m, d["table"], 1.0, 2,
                                                                         noise=SeededNoise(8)))
    runs["inctdpart experiment Solution 1"] = lambda d: solution1(d["halves"], d["u"], 1.0,
                                                                  noises=[SeededNoise(5), SeededNoise(6)])
    runs["inctdpart experiment Solution 2"] = lambda d: solution2(d["db"], d["u"], 1.0, 2, noise=SeededNoise(7))
    return runs


def test_experiment_methods_are_covered():
    """Every method the experiments offer is a releasing command's method (covered by CLI_RUNS), one of
    _experiment_runs, or charges nothing of dprelease's (with the reason)."""
    from dprelease.commands.relational import METHODS as DIFFGEN_METHODS, RELEASE_METHODS
    from dprelease.experiments.inctdpart import METHODS as INC_METHODS
    from dprelease.experiments.privbasis import METHODS as PB_METHODS

    runs = _experiment_runs()
    not_dp = {"tds": "k-anonymity with exact counts: no privacy budget",
              "mst": "a peer from smartnoise-synth, with its own mechanisms and accounting",
              "aim": "a peer from smartnoise-synth, with its own mechanisms and accounting",
              "aim-class": "AIM (smartnoise-synth) with the class marginals as its workload: the peer's accounting"}
    for m in DIFFGEN_METHODS:
        assert m in RELEASE_METHODS or f"diffgen experiment {m}" in runs or m in not_dp, m
    assert set(RELEASE_METHODS) <= {a[a.index("--method") + 1] for argvs in CLI_RUNS.values() for a in argvs
                                    if a[0] == "diffgen" and "--method" in a}
    for m in PB_METHODS:
        assert f"privbasis experiment {m}" in runs, m
    cli_stream = {"IncTDPart": "stream-paper-tdpart", "IncTDPart-Prefix": "stream-paper-prefix"}
    for m in INC_METHODS:
        assert cli_stream.get(m) in CLI_RUNS or f"inctdpart experiment {m}" in runs, m


@pytest.mark.parametrize("name", sorted(_experiment_runs()))
def test_every_experiment_method_charges_typed_events_that_rederive(name, monkeypatch):
    data = _experiment_data()
    seen = _capture(monkeypatch)
    _experiment_runs()[name](data)
    assert seen and _problems(seen) == [], name


# --- Input-validation errors: refused when the data is read, before any mechanism (docs/privacy.md section 2) --

_BAD_INPUTS = {
    "item outside the universe": ("bad.dat", "1 2 3\n4 5 99\n",
                                  ["diffpart", "{bad}", "--universe", "1..12", "-e", "0.5", "-o", "{out}"]),
    "malformed line": ("bad.dat", "1 2 3\n4 x 5\n", ["tf", "{bad}", "--universe", "1..12", "-k", "3", "-m", "1",
                                                       "-e", "0.5", "-o", "{out}"]),
    "value outside a schema bound": ("bad.csv", "Job,Age,Class\nEngineer,30,Y\nLawyer,70,N\n",
                                     ["rps", "{bad}", "--schema", "{schema}", "-e", "0.5", "-o", "{out}"]),
    "category outside the taxonomy": ("bad.csv", "Job,Age,Class\nEngineer,30,Y\nPilot,40,N\n",
                                      ["diffgen", "{bad}", "--schema", "{schema}", "-e", "0.5", "-H", "2", "-o",
                                       "{out}"]),
    "single-id line in an edge list": ("bad.txt", "1 2\n3\n", ["degrees", "{bad}", "--theta", "3", "-e", "0.5",
                                                                  "-o", "{out}"]),
    "non-integer node id": ("bad.txt", "1 2\n2 x\n", ["degrees", "{bad}", "--theta", "3", "-e", "0.5", "-o",
                                                     "{out}"]),
}


@pytest.mark.parametrize("ledger", [False, True], ids=["no-ledger", "ledger"])
@pytest.mark.parametrize("case", sorted(_BAD_INPUTS))
def test_an_input_validation_error_refuses_before_any_mechanism(case, ledger, tmp_path, monkeypatch, capsys):
    """Exit 2 with one line for the custodian; no charge on any accountant (so no noise drawn), no file written;
    with a ledger, the reservation made before reading stays counted and is shown as incomplete."""
    from conftest import REPO

    from dprelease import ledger as ledger_mod
    from dprelease.cli import main

    name, text, argv = _BAD_INPUTS[case]
    (tmp_path / name).write_text(text)
    out = tmp_path / "out" / "release.csv"
    out.parent.mkdir()
    argv = _fill(argv, {"bad": str(tmp_path / name), "out": str(out),
                        "schema": str(REPO / "examples" / "table1-schema.yaml")}) + ["--seed", "1", "-q"]
    led = tmp_path / "l.ledger"
    if ledger:
        ledger_mod.init_ledger(led, dataset="d", epsilon=1.0)
        argv += ["--ledger", str(led)]
    seen = _capture(monkeypatch)
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "error" in err[0], err
    assert seen == [] and list(out.parent.iterdir()) == []
    if ledger:
        (charge,) = ledger_mod.ledger_status(led).charges
        assert not charge.complete and charge.epsilon == Fraction(1, 2)


def test_a_stream_append_refused_on_its_batch_commits_nothing(tmp_path, monkeypatch, capsys):
    from dprelease import ledger as ledger_mod
    from dprelease.cli import main

    led, state = tmp_path / "l.ledger", tmp_path / "s.sqlite"
    ledger_mod.init_ledger(led, dataset="d", epsilon=1.0)
    assert main(["stream", "init", str(state), "-e", "1", "-U", "2", "--universe", "1..12", "--ledger", str(led),
                 "-q"]) == 0
    (tmp_path / "bad.dat").write_text("1 2 3\n4 5 99\n")
    seen = _capture(monkeypatch)
    assert main(["stream", "append", str(state), str(tmp_path / "bad.dat"), "-o", str(tmp_path / "r.dat"),
                 "-q"]) == 2
    assert seen == [] and not (tmp_path / "r.dat").exists()
    capsys.readouterr()
    assert main(["stream", "status", str(state), "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["appends"] == 0 and status["epsilon_spent"] == 0
    init, append = ledger_mod.ledger_status(led).charges
    assert init.complete and init.epsilon == 1 and not append.complete and append.epsilon == 0
    assert append.covered_by == init.id
