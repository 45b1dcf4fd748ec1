"""Audit cases of PrivBasis (Li et al., PVLDB 2012), through :func:`privbasis` itself.

Pairs: a record touching every item of a small universe (single basis, lambda <= 12), and the
multi-basis path (lambda > 12: frequent pairs, ConstructBasisSet, several bases) on a 20-item
universe with default parameters, where GetLambda picks lambda > 12 in about a quarter of the runs.
Events: the released top-k list (membership, ranks, pairwise order), every released count binned,
and the manifest's budget split (it shows which path was taken, a function of the noisy lambda).
"""

from __future__ import annotations

import numpy as np

from ..core import AuditCase, register_cases
from ..files import file_level
from ..events import itemset_label, manifest_events, ranked_events, value_events
from ..search import register_space


def _events(step: int, top: int):
    grid = range(-step, top + 2 * step, step)

    def events(rel) -> list[str]:
        labels = [itemset_label(s) for s in rel.itemsets]
        out = ranked_events(labels)
        for lab, c in zip(labels, np.asarray(rel.counts, dtype=np.float64).tolist()):
            out += value_events(lab, c, grid)
        out += manifest_events(rel.manifest)
        return out

    return events


@register_cases("privbasis")
@file_level
def _privbasis_cases(epsilon: float) -> list[AuditCase]:
    from ...data.transactions import TransactionDB
    from ...data.universe import Universe
    from ...itemsets.privbasis import privbasis

    cases: list[AuditCase] = []

    u6 = Universe.from_range(1, 6)
    base = [[0, 1]] * 20 + [[2]] * 15 + [[0, 1, 2]] * 10 + [[3, 4]] * 5 + [[5]] * 2

    def run_small(db, noise):
        return privbasis(db, u6, 3, epsilon, noise=noise)

    cases.append(AuditCase(
        "privbasis/single-basis-wide-record", TransactionDB.from_lists(base, 6),
        TransactionDB.from_lists(base + [list(range(6))], 6), epsilon, run_small, _events(3, 40),
        description="universe 1..6, k = 3: 20 x {1,2} + 15 x {3} + 10 x {1,2,3} + 5 x {4,5} + 2 x {6}; "
                    "D' adds {1..6}"))

    # Multi-basis: 20 items of falling frequency (0.9 .. 0.3), 60 records, k = 15 (k1 = 18).
    rng = np.random.default_rng(20120827)
    n_items = 20
    freqs = np.linspace(0.9, 0.3, n_items)
    recs = [np.flatnonzero(rng.random(n_items) < freqs).tolist() for _ in range(60)]
    u20 = Universe.from_range(1, n_items)

    def run_multi(db, noise):
        return privbasis(db, u20, 15, epsilon, noise=noise)

    cases.append(AuditCase(
        "privbasis/multi-basis-wide-record", TransactionDB.from_lists(recs, n_items),
        TransactionDB.from_lists(recs + [list(range(n_items))], n_items), epsilon, run_multi, _events(6, 60),
        description="universe 1..20, k = 15, default parameters: 60 records, item i in each with probability "
                    "0.9 .. 0.3 (seeded); lambda > 12 (several bases) in about 1/4 of the runs; D' adds {1..20}"))
    return cases


# --- The default PrivBasis's data-dependent choices (itemsets helper) -----------------------------------------


def _choice_events(epsilon: float):
    """Events of the default's choices as the manifest shows them: which steps ran (the regime, chosen from
    the noisy lambda and the noisy bound l1), the share the items took (one count or two: the adaptive
    margin test on the noisy theta), the pairs' and BasisFreq's budgets and the k-th count's noise sd
    (functions of the noisy theta, l2 and the bases), binned; plus the released list and counts."""
    base = _events(6, 60)

    def events(rel) -> list[str]:
        out = base(rel)
        split = {key: v for key, v in rel.manifest["budget_split"].items() if key != "reference"}
        out.append("path " + ",".join(sorted(split)))
        out.append(f"items share {split.get('step2_items', 0.0) / epsilon:.4f}")
        out += value_events("pairs share", split.get("step3_pairs", 0.0) / epsilon, [0.0, 0.05, 0.1, 0.15, 0.2])
        out += value_events("basisfreq share", split["step5_basisfreq"] / epsilon, [0.3, 0.4, 0.5, 0.6, 0.7, 0.8])
        sd = rel.manifest["release"]["count_noise_sd_at_k"]
        out += value_events("sd at k", -1.0 if sd is None else sd, [0, 5, 10, 20, 40, 80])
        return out

    return events


@register_cases("privbasis")
@file_level
def _privbasis_default_choices(epsilon: float) -> list[AuditCase]:
    from ...data.transactions import TransactionDB
    from ...data.universe import Universe
    from ...itemsets.privbasis import PrivBasisParams, privbasis

    # 300 short records (1-3 items) over 24 items of falling popularity, k = 20 (k1 = 24): lambda > 12 in
    # about 3/4 of the runs, then the bounded selection (private l1 <= 2/3 lambda) or the exponential one.
    # selection_margin = 0.03 (public) puts the adaptive "stop after the first item count" test on both
    # sides in these small counts (about a quarter of the bounded runs stop early); the code path is the
    # default's.
    rng = np.random.default_rng(20120828)
    n_items = 24
    p = np.linspace(1.0, 0.2, n_items)
    p /= p.sum()
    recs = [sorted(rng.choice(n_items, size=int(rng.integers(1, 4)), replace=False, p=p).tolist())
            for _ in range(300)]
    universe = Universe.from_range(1, n_items)
    params = PrivBasisParams(selection_margin=0.03)

    def run(db, noise):
        return privbasis(db, universe, 20, epsilon, noise=noise, params=params)

    d = TransactionDB.from_lists(recs, n_items)
    # l1 at its branch point: the default PrivBasis takes the bounded selection when the private 0.9-quantile
    # l1 of the record lengths is at most 2/3 lambda. D: 270 records of 8 items and 30 of 9, so the quantile
    # sits at the step from 8 to 9 (A(8) = 0.9 n exactly); D' adds a 24-item record, which moves it to 9.
    # Both branches are taken in about half of the runs each (lambda near 13, 2/3 lambda between 8 and 9).
    rng_l1 = np.random.default_rng(20120829)

    def draw(size: int) -> list[int]:
        return sorted(rng_l1.choice(n_items, size=size, replace=False, p=p).tolist())

    l1_recs = [draw(8) for _ in range(270)] + [draw(9) for _ in range(30)]
    l1_default = PrivBasisParams()

    def run_l1(db, noise):
        return privbasis(db, universe, 20, epsilon, noise=noise, params=l1_default)

    # Long records (about 17 of 24 items each): the default's density test (a private median of |t & F|)
    # sends a run to the ranked bases or to the paper's pairs; about 30 % of the runs draw lambda > 12, and of
    # those about half take each branch. D' adds a record of every item, which moves |t & F| and every count.
    rng_dense = np.random.default_rng(20120830)
    p_dense = np.linspace(0.97, 0.45, n_items)
    dense_recs = [np.flatnonzero(rng_dense.random(n_items) < p_dense).tolist() for _ in range(300)]

    def run_dense(db, noise):
        return privbasis(db, universe, 40, epsilon, noise=noise, params=l1_default)

    return [
        AuditCase("privbasis/dense-bases-branch", TransactionDB.from_lists(dense_recs, n_items),
                  TransactionDB.from_lists(dense_recs + [list(range(n_items))], n_items), epsilon, run_dense,
                  _choice_events(epsilon),
                  description="default PrivBasis, k = 40, 300 long records over 1..24 (item i with probability "
                              "0.97 .. 0.45); D' adds {1..24}: the density test (private median of |t & F|) "
                              "chooses ranked bases or the paper's pairs"),
        AuditCase("privbasis/l1-branch-point", TransactionDB.from_lists(l1_recs, n_items),
                  TransactionDB.from_lists(l1_recs + [list(range(n_items))], n_items), epsilon, run_l1,
                  _choice_events(epsilon),
                  description="default PrivBasis, k = 20, 24 items: 270 records of 8 items + 30 of 9 (the "
                              "0.9-quantile of the lengths at the step 8 -> 9); D' adds {1..24}, which moves l1 "
                              "across the bounded-selection branch point (l1 <= 2/3 lambda)"),
        AuditCase("privbasis/default-choices-long-record", d,
                  TransactionDB.from_lists(recs + [list(range(n_items))], n_items), epsilon, run,
                  _choice_events(epsilon),
                  description="default PrivBasis (margin 0.03), 300 short records over 1..24, k = 20; D' adds "
                              "{1..24}: every item and pair count, the length and pair-count quantiles move"),
        AuditCase("privbasis/default-choices-threshold-item", d,
                  TransactionDB.from_lists(recs + [[12]], n_items), epsilon, run, _choice_events(epsilon),
                  description="as above; D' adds {13}, an item near the lambda-th count (theta, the pairs' "
                              "threshold and the margin test)"),
    ]


# --- `privbasis --faithful`: the paper's Algorithm 3 (PrivBasisParams.faithful()) ------------------------------


@register_cases("privbasis")
@file_level
def _privbasis_faithful_cases(epsilon: float) -> list[AuditCase]:
    """The same two pairs as the first factory, run with the paper's configuration (section 4.4: alpha =
    0.1/0.4/0.5, exponential-mechanism selection of items and pairs, no bin cut, possibly fewer than k
    itemsets), the path `dprelease privbasis --faithful` takes; the default cases above do not reach it."""
    from ...data.transactions import TransactionDB
    from ...data.universe import Universe
    from ...itemsets.privbasis import PrivBasisParams, privbasis

    params = PrivBasisParams.faithful()
    u6 = Universe.from_range(1, 6)
    base = [[0, 1]] * 20 + [[2]] * 15 + [[0, 1, 2]] * 10 + [[3, 4]] * 5 + [[5]] * 2

    def run_small(db, noise):
        return privbasis(db, u6, 3, epsilon, noise=noise, params=params)

    rng = np.random.default_rng(20120827)  # the multi-basis pair of the first factory
    n_items = 20
    freqs = np.linspace(0.9, 0.3, n_items)
    recs = [np.flatnonzero(rng.random(n_items) < freqs).tolist() for _ in range(60)]
    u20 = Universe.from_range(1, n_items)

    def run_multi(db, noise):
        return privbasis(db, u20, 15, epsilon, noise=noise, params=params)

    return [
        AuditCase("privbasis/faithful-single-basis-wide-record", TransactionDB.from_lists(base, 6),
                  TransactionDB.from_lists(base + [list(range(6))], 6), epsilon, run_small, _events(3, 40),
                  description="--faithful (PrivBasisParams.faithful()); universe 1..6, k = 3: the single-basis "
                              "pair above; D' adds {1..6}"),
        AuditCase("privbasis/faithful-multi-basis-wide-record", TransactionDB.from_lists(recs, n_items),
                  TransactionDB.from_lists(recs + [list(range(n_items))], n_items), epsilon, run_multi,
                  _events(6, 60),
                  description="--faithful; universe 1..20, k = 15: the multi-basis pair above (exponential-"
                              "mechanism selection of items and pairs when lambda > 12); D' adds {1..20}"),
    ]


# --- search space (dprelease audit privbasis --search): FIMI files, one line --------------------------------------


def _search_events(records_d, records_dp, cfg):
    n = max(len(records_d), len(records_dp))
    return _choice_events_for(cfg["_epsilon"], max(2, n // 10), n + 10) if cfg.get("default") else \
        _events(max(2, n // 10), n + 10)


def _choice_events_for(epsilon: float, step: int, top: int):
    """:func:`_choice_events` with the count grid of a searched pair."""
    base = _events(step, top)
    choices = _choice_events(epsilon)

    def events(rel) -> list[str]:
        return base(rel) + [e for e in choices(rel) if e.startswith(("path ", "items share", "pairs share",
                                                                      "basisfreq share", "sd at k"))]

    return events


@register_space("privbasis")
def _privbasis_space(epsilon: float):
    from ...itemsets.privbasis import PrivBasisParams, privbasis
    from ..spaces import transaction_space

    configs = [{"n_items": 6, "k": 3, "default": True}, {"n_items": 10, "k": 5, "default": True},
               {"n_items": 16, "k": 12, "default": True, "margin": 0.03},
               {"n_items": 6, "k": 3, "faithful": True}, {"n_items": 16, "k": 12, "faithful": True}]
    configs = [{**c, "_epsilon": epsilon} for c in configs]

    def release(db, universe, noise, cfg):
        if cfg.get("faithful"):
            params = PrivBasisParams.faithful()
        else:
            params = PrivBasisParams(selection_margin=cfg["margin"]) if "margin" in cfg else PrivBasisParams()
        return privbasis(db, universe, cfg["k"], epsilon, noise=noise, params=params)

    return [transaction_space("privbasis", configs, release, _search_events, claim=epsilon, mean_size=3.0)]
