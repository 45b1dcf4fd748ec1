"""Audit cases of the mechanisms in :mod:`dprelease.privacy` (and PrivBasis's GetLambda), each on its own.

A dataset here is a list of records; each mechanism's case turns it into the statistic the mechanism
takes (a histogram of cells, a sum, a score per candidate) with the sensitivity the mechanism is told,
and emulates the caller's part (e.g. the uniform choice of which empty cells test-and-generate
releases). Every factory takes the mechanism as an argument, so a test can audit a deliberately
broken variant with the same pairs (the power checks).

Registered names: noisy_counts, noisy_values, threshold_counts, exponential_mechanism,
exponential_top_k, exponential_mechanism_disjoint, exponential_top_k_implicit, laplace_top_k_implicit,
get_lambda.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..core import AuditCase, register_cases
from ..events import value_events
from ..search import register_space


def _scope(epsilon: float):
    from ...privacy import BudgetAccountant

    return BudgetAccountant(epsilon).root()


def _hist(records: list[int], n_cells: int) -> np.ndarray:
    return np.bincount(np.asarray(records, dtype=np.int64), minlength=n_cells).astype(np.int64)


def _cell_events(values: dict[int, int], grid: range) -> list[str]:
    out = ["cells " + ";".join(f"{c}:{v}" for c, v in sorted(values.items()))]
    for c, v in sorted(values.items()):
        out += [f"has cell {c}", f"cell {c}={v}"] + [f"cell {c}>={g}" for g in grid if v >= g]
    return out


# --- noisy_counts -------------------------------------------------------------------------------------


def noisy_counts_cases(epsilon: float, fn: Callable | None = None) -> list[AuditCase]:
    """A histogram of 4 cells (sensitivity 1); D' adds a record to cell 1."""
    from ...privacy import noisy_counts

    fn = fn or noisy_counts
    d = [0, 0, 1, 2, 2, 2]

    def run(records, noise):
        return fn(_hist(records, 4), epsilon, scope=_scope(epsilon), noise=noise, label="audit")

    def events(out) -> list[str]:
        return _cell_events(dict(enumerate(np.asarray(out).tolist())), range(-3, 7))

    return [AuditCase("noisy_counts/histogram", d, d + [1], epsilon, run, events,
                      description="4-cell histogram, D = cells [0,0,1,2,2,2]; D' adds a record to cell 1")]


register_cases("noisy_counts")(noisy_counts_cases)


# --- noisy_values ---------------------------------------------------------------------------------------


def noisy_values_cases(epsilon: float, fn: Callable | None = None) -> list[AuditCase]:
    """A sum of values in [0, 1] (sensitivity 1), and the float lattice of outputs at true sums 0 and 1."""
    from ...privacy import noisy_values

    fn = fn or noisy_values
    scale = 1.0 / epsilon

    def run(values, noise):
        return float(fn(np.array([math.fsum(values)]), epsilon, scope=_scope(epsilon), noise=noise, label="audit",
                        sensitivity=1.0)[0])

    def events(y: float) -> list[str]:
        return value_events("sum", y, np.arange(-3.0, 5.5, 0.5) * scale + 0.7)

    def lattice_events(y: float) -> list[str]:
        # The float-lattice fault: with the true value added after the noise, outputs for a true 1 in (0, 0.5) are
        # all multiples of 2^-53 while those for a true 0 mostly are not.
        out = value_events("y", y, [-1.0, 0.0, 0.5, 1.0, 2.0])
        for bits in (53, 50, 45):
            on = math.ldexp(y, bits).is_integer()
            out.append(f"y*2^{bits} integral={on}")
            if 0.0 < y < 0.5:
                out.append(f"y in (0,0.5) and y*2^{bits} integral={on}")
        return out

    return [
        AuditCase("noisy_values/sum", [0.2, 0.5], [0.2, 0.5, 1.0], epsilon, run, events,
                  description="sum of values in [0,1] (sensitivity 1): D = [0.2, 0.5], D' adds 1.0"),
        AuditCase("noisy_values/float-lattice-0-vs-1", [], [1.0], epsilon, run, lattice_events, secure=True,
                  description="float lattice: true sums 0 (D = []) and 1 (D' = [1.0]) in secure mode; events: "
                              "whether outputs lie on the 2^-53 lattice"),
    ]


register_cases("noisy_values")(noisy_values_cases)


# --- threshold_counts (test-and-generate) ------------------------------------------------------------


def _threshold_run(epsilon: float, threshold: float, n_cells: int, fn: Callable):
    def run(records, noise):
        counts = _hist(records, n_cells) if n_cells <= 1 << 20 else None
        if counts is not None:
            explicit = np.flatnonzero(counts)
            values = counts[explicit]
        else:  # a huge public domain: count the (few) occupied cells only
            explicit, values = np.unique(np.asarray(records, dtype=np.int64), return_counts=True)
        res = fn(values, n_cells - explicit.size, epsilon, threshold, scope=_scope(epsilon), noise=noise,
                 label="audit")
        out = {int(c): int(v) for c, v, p in zip(explicit.tolist(), res.explicit.tolist(), res.passed.tolist()) if p}
        m = int(res.zero_passed.size)
        if m:
            # the caller's part: which empty cells were "generated", uniformly at random
            taken = set(explicit.tolist())
            picks: list[int] = []
            while len(picks) < m:
                for c in noise.integers(n_cells, 2 * (m - len(picks)) + 4).tolist():
                    if c not in taken:
                        taken.add(c)
                        picks.append(int(c))
                        if len(picks) == m:
                            break
            out.update(zip(picks, res.zero_passed.tolist()))
        return out, m

    return run


def threshold_counts_cases(epsilon: float, fn: Callable | None = None) -> list[AuditCase]:
    """Noisy counts kept above a threshold, empty cells by test-and-generate; thresholds at and near 2,
    and a domain of 2^40 cells (the binomial of the empty cells beyond 32-bit APIs)."""
    from ...privacy import threshold_counts

    fn = fn or threshold_counts
    d = [0, 0, 0]
    cases: list[AuditCase] = []

    def events(out) -> list[str]:
        values, m = out
        return _cell_events({c: v for c, v in values.items() if c < 8}, range(1, 7)) + [f"generated={m}"]

    for tag, thr in (("just-above-2", math.nextafter(2.0, math.inf)), ("2", 2.0), ("2-minus-1e-13", 2.0 - 1e-13),
                     ("2.5", 2.5), ("1.5", 1.5)):
        cases.append(AuditCase(
            f"threshold_counts/threshold-{tag}", d, d + [1], epsilon, _threshold_run(epsilon, thr, 8, fn), events,
            description=f"8 cells, threshold {thr!r}: D = 3 x cell 0; D' adds cell 1 (0 -> 1: generated on D, "
                        "real on D')"))
    n_big = 1 << 40
    big_thr = math.log(n_big / 2.0) / epsilon  # about 2 of the 2^40 empty cells pass

    def big_events(out) -> list[str]:
        values, m = out
        ev = [f"generated={min(m, 12)}"] + [f"generated>={g}" for g in range(1, 8) if m >= g]
        small = {c: v for c, v in values.items() if c < 2}
        return ev + _cell_events(small, range(int(big_thr) - 2, int(big_thr) + 6))

    for secure in (False, True):
        cases.append(AuditCase(
            "threshold_counts/domain-2^40" + ("-secure" if secure else ""), d, d + [1], epsilon,
            _threshold_run(epsilon, big_thr, n_big, fn), big_events, secure=secure,
            description=f"2^40 cells, threshold {big_thr:.4g} (about 2 empty cells pass): D = 3 x cell 0; D' adds "
                        "cell 1" + ("; secure noise (its binomial sampler)" if secure else "")))
    return cases


register_cases("threshold_counts")(threshold_counts_cases)


# --- exponential mechanisms ---------------------------------------------------------------------------


def exponential_mechanism_cases(epsilon: float, fn: Callable | None = None) -> list[AuditCase]:
    """Scores = counts of 4 candidates (sensitivity 1), with and without a base measure; and scores that move
    in opposite directions (q = (c_A, -c_A, 0)), where the mechanism's epsilon is nearly reached (0.9 eps),
    with seeded and with secure noise (the secure path is a different sampler)."""
    from ...privacy import exponential_mechanism

    fn = fn or exponential_mechanism
    d = [0, 0, 0, 1, 1, 3]
    cases = []
    for tag, base in (("counts", None), ("counts-base-measure", np.log(np.array([1.0, 3.0, 0.5, 2.0])))):
        def run(records, noise, base=base):
            return fn(_hist(records, 4).astype(np.float64), epsilon, sensitivity=1.0, scope=_scope(epsilon),
                      noise=noise, label="audit", log_base_measure=base)

        cases.append(AuditCase(
            f"exponential_mechanism/{tag}", d, d + [2], epsilon, run, lambda i: [f"pick {int(i)}"],
            description="4 candidates scored by counts [3,2,0,1]; D' adds a record to candidate 2"
                        + ("; base measure (1, 3, 0.5, 2)" if base is not None else "")))

    def run_opposite(records, noise):
        c_a = float(sum(1 for r in records if r == 0))
        return fn(np.array([c_a, -c_a, 0.0]), epsilon, sensitivity=1.0, scope=_scope(epsilon), noise=noise,
                  label="audit")

    for secure in (False, True):
        cases.append(AuditCase(
            "exponential_mechanism/opposite-scores" + ("-secure" if secure else ""), [0, 0, 0, 1], [0, 0, 0, 0, 1],
            epsilon, run_opposite, lambda i: [f"pick {int(i)}"], secure=secure,
            description="3 candidates scored (c_A, -c_A, 0) (sensitivity 1), c_A = 3 on D, 4 on D'"
                        + ("; secure noise" if secure else "")))
    return cases


register_cases("exponential_mechanism")(exponential_mechanism_cases)


def exponential_top_k_cases(epsilon: float, fn: Callable | None = None) -> list[AuditCase]:
    """k = 2 of 5 candidates scored by counts; the output order is part of the release."""
    from ...privacy import exponential_top_k

    fn = fn or exponential_top_k
    d = [0, 0, 0, 1, 1, 3, 4]

    def run(records, noise):
        return fn(_hist(records, 5).astype(np.float64), 2, epsilon, sensitivity=1.0, scope=_scope(epsilon),
                  noise=noise, label="audit").tolist()

    def events(picks) -> list[str]:
        return [f"picks {picks}", f"first {picks[0]}", f"set {sorted(picks)}"] + [f"has {p}" for p in picks]

    return [AuditCase("exponential_top_k/k2-of-5" + ("-secure" if secure else ""), d, d + [2], epsilon, run, events,
                      secure=secure, description="5 candidates scored by counts [3,2,0,1,1], k = 2; D' adds a record "
                                                 "to candidate 2" + ("; secure noise" if secure else ""))
            for secure in (False, True)]


register_cases("exponential_top_k")(exponential_top_k_cases)


def exponential_mechanism_disjoint_cases(epsilon: float, fn: Callable | None = None) -> list[AuditCase]:
    """Two blocks of candidates scoring disjoint records (DiffGen line 9); D' adds a record to block 0."""
    from ...privacy import exponential_mechanism_disjoint

    fn = fn or exponential_mechanism_disjoint
    d = [(0, 0), (0, 0), (0, 1), (1, 2), (1, 2), (1, 0)]  # (block, candidate)

    def run(records, noise):
        blocks = [_hist([c for b, c in records if b == blk], 3).astype(np.float64) for blk in (0, 1)]
        blocks[0] = blocks[0] - blocks[0][::-1]  # block 0 scores (c0 - c2, 0, c2 - c0): they move oppositely
        return fn(blocks, epsilon, sensitivity=1.0, scope=_scope(epsilon), noise=noise, label="audit",
                  log_base_measures=[None, np.log(np.array([1.0, 2.0, 1.0]))])

    def events(picks) -> list[str]:
        return [f"picks {picks}", f"block 0 picks {picks[0]}", f"block 1 picks {picks[1]}"]

    return [AuditCase("exponential_mechanism_disjoint/two-blocks", d, d + [(0, 2)], epsilon, run, events,
                      description="two blocks of 3 candidates over disjoint records; block 0 scored (c0 - c2, 0, "
                                  "c2 - c0), block 1 by counts with a base measure; D' adds a record to "
                                  "candidate 2 of block 0")]


register_cases("exponential_mechanism_disjoint")(exponential_mechanism_disjoint_cases)


def _implicit_cases(name: str, epsilon: float, fn: Callable, sensitivity: float) -> list[AuditCase]:
    """Top-2 over 50 candidates: the occupied ones explicit, the empty ones implicit (score 0), as TF does."""
    n_cand = 50
    d = [0, 0, 0, 1, 1, 3]

    def run(records, noise):
        counts = _hist(records, n_cand)
        explicit = np.flatnonzero(counts)
        picked, n_imp = fn(counts[explicit].astype(np.float64), n_cand - explicit.size, 0.0, 2, epsilon,
                           sensitivity=sensitivity, scope=_scope(epsilon), noise=noise, label="audit")
        chosen = [int(explicit[i]) for i in np.asarray(picked).tolist()]
        taken = set(explicit.tolist())
        while n_imp > 0:  # the caller's uniform choice among the implicit candidates
            c = int(noise.integers(n_cand, 1)[0])
            if c not in taken:
                taken.add(c)
                chosen.append(c)
                n_imp -= 1
        return chosen

    def events(chosen) -> list[str]:
        # The set is what the caller may publish (TF re-sorts it by noisy count): the split into explicit
        # picks (in rank order) and a number of implicit ones is the mechanism's interface, not a release,
        # so no event looks at the order of `chosen`.
        return ([f"chosen {sorted(chosen)}"] + [f"has {c}" for c in chosen]
                + [f"has a cell >= 4: {any(c >= 4 for c in chosen)}"])

    return [AuditCase(f"{name}/top2-of-50" + ("-secure" if secure else ""), d, d + [2], epsilon, run, events,
                      secure=secure,
                      description="50 candidates scored by counts [3,2,0,1,0,...]; the empty ones implicit "
                                  "(score 0); k = 2; D' adds a record to candidate 2 (implicit -> explicit)"
                                  + ("; secure noise" if secure else ""))
            for secure in (False, True)]


def exponential_top_k_implicit_cases(epsilon: float, fn: Callable | None = None) -> list[AuditCase]:
    from ...privacy import exponential_top_k_implicit

    return _implicit_cases("exponential_top_k_implicit", epsilon, fn or exponential_top_k_implicit, 1.0)


def laplace_top_k_implicit_cases(epsilon: float, fn: Callable | None = None) -> list[AuditCase]:
    """Report-noisy-top-k with Laplace noise: charged epsilon for k picks, so the sensitivity given is 2k
    (as TF gives it, Lap(4k/eps) at eps/2)."""
    from ...privacy import laplace_top_k_implicit

    return _implicit_cases("laplace_top_k_implicit", epsilon, fn or laplace_top_k_implicit, 4.0)


register_cases("exponential_top_k_implicit")(exponential_top_k_implicit_cases)
register_cases("laplace_top_k_implicit")(laplace_top_k_implicit_cases)


# --- GetLambda (PrivBasis step 1) ---------------------------------------------------------------------


def get_lambda_cases(epsilon: float, fn: Callable | None = None) -> list[AuditCase]:
    """GetLambda through its own code: item counts, c_k1 by exact mining and N from the records.

    ``tight``: a pair where the qualities move by 0 and 2 (found by exact enumeration: loss 0.72 eps
    with exp(eps q/2), 1.73 eps with exp(eps q)). ``universal-items``: every record holds items 0 and 1;
    c_k1 must still be the k1-th largest itemset support.
    """
    from ...data.transactions import TransactionDB
    from ...itemsets.exact import kth_support
    from ...itemsets.privbasis import get_lambda

    fn = fn or get_lambda
    cache: dict[int, tuple[np.ndarray, int, int]] = {}

    def make_run(k: int):
        k1 = math.ceil(k * 1.2 - 1e-9)

        def run(db, noise):
            key = id(db)
            if key not in cache:
                cache[key] = (db.item_supports(), kth_support(db, k1), db.n_records)
            items, c_k1, n = cache[key]
            return fn(items, c_k1, n, epsilon, scope=_scope(epsilon), noise=noise, max_lambda=k1)

        return run

    def events(lam) -> list[str]:
        return [f"lambda={int(lam)}"] + [f"lambda>={g}" for g in range(2, 6) if lam >= g]

    tight = [[0, 1], [1], [0, 1], [1], [1], [1], [1], [1], [1], [0, 1], [1], [1], [0], [0, 1]]
    universal = [[0, 1]] * 5
    return [
        AuditCase("get_lambda/tight", TransactionDB.from_lists(tight, 4), TransactionDB.from_lists(tight + [[0, 2]], 4),
                  epsilon, make_run(2), events,
                  description="4 items, k = 2 (k1 = 3): 9 x {2} + 4 x {1,2} + {1}; D' adds {1,3}"),
        AuditCase("get_lambda/universal-items", TransactionDB.from_lists(universal, 3),
                  TransactionDB.from_lists(universal + [[0]], 3), epsilon, make_run(2), events,
                  description="3 items, k = 2 (k1 = 3): D = 5 x {1,2} (items in every record); D' adds {1}"),
    ]


register_cases("get_lambda")(get_lambda_cases)


# --- search spaces (dprelease audit MECHANISM --search) ---------------------------------------------------------
# A mechanism takes a statistic of a list of records, not a file: the space mutates the records of its built-in
# pairs (which cells, how many, which record D' adds); GetLambda reads FIMI files like PrivBasis.


def _list_space_factory(name: str, cases_fn):
    def factory(epsilon: float):
        from ..spaces import list_space

        space = list_space(name, cases_fn(epsilon))
        return [space] if space is not None else []

    return factory


for _name, _fn in (("noisy_counts", noisy_counts_cases), ("noisy_values", noisy_values_cases),
                   ("threshold_counts", threshold_counts_cases), ("exponential_mechanism", exponential_mechanism_cases),
                   ("exponential_top_k", exponential_top_k_cases),
                   ("exponential_mechanism_disjoint", exponential_mechanism_disjoint_cases),
                   ("exponential_top_k_implicit", exponential_top_k_implicit_cases),
                   ("laplace_top_k_implicit", laplace_top_k_implicit_cases)):
    register_space(_name)(_list_space_factory(_name, _fn))


@register_space("get_lambda")
def _get_lambda_space(epsilon: float, fn: Callable | None = None):
    from ...itemsets.exact import kth_support
    from ...itemsets.privbasis import get_lambda
    from ..spaces import transaction_space

    fn = fn or get_lambda

    def release(db, universe, noise, cfg):
        k1 = math.ceil(cfg["k"] * 1.2 - 1e-9)
        return fn(db.item_supports(), kth_support(db, k1), db.n_records, epsilon, scope=_scope(epsilon), noise=noise,
                  max_lambda=k1)

    def events(records_d, records_dp, cfg):
        return lambda lam: [f"lambda={int(lam)}"] + [f"lambda>={g}" for g in range(2, 8) if lam >= g]

    configs = [{"n_items": 3, "k": 2}, {"n_items": 4, "k": 2}, {"n_items": 6, "k": 4}]
    return [transaction_space("get_lambda", configs, release, events, claim=epsilon, max_base=30)]
