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
from ..events import itemset_label, manifest_events, ranked_events, value_events


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
