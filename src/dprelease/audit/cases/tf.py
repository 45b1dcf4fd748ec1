"""Audit cases of TF (Bhaskar et al., KDD 2010, as PrivBasis section 3 describes it), both variants.

The truncation is active in every pair: the top-k count c_k is well above gamma*N (Eq. 3), so only
itemsets with count > c_k - gamma*N are enumerated and the others share one truncated score (implicit
candidates, drawn by order statistics). Pairs: an itemset whose count crosses the enumeration floor
(implicit on D, explicit on D'), and a record touching every item (it raises c_k, so the floor moves).
Events: the released list (membership, ranks, order), each released count and the released N, binned.
"""

from __future__ import annotations

import math

import numpy as np

from ..core import AuditCase, register_cases
from ..files import file_level
from ..events import itemset_label, manifest_events, ranked_events, value_events
from ..search import register_space

_K = 2
_M = 2
_ITEMS = 6


def _events(grid: range, n_grid: range):
    def events(rel) -> list[str]:
        labels = [itemset_label(s) for s in rel.itemsets]
        out = ranked_events(labels)
        for lab, c in zip(labels, np.asarray(rel.counts, dtype=np.float64).tolist()):
            out += value_events(lab, c, grid)
        out += value_events("N", _n_hat(rel), n_grid)
        out += manifest_events(rel.manifest)
        return out

    return events


def _n_hat(rel) -> float:
    """The released N: count / frequency of the first released itemset (what a reader can compute)."""
    if len(rel.counts) == 0 or not np.isfinite(rel.frequencies[0]) or rel.frequencies[0] == 0:
        return math.nan
    return float(rel.counts[0] / rel.frequencies[0])


@register_cases("tf")
@file_level
def _tf_cases(epsilon: float) -> list[AuditCase]:
    from ...data.transactions import TransactionDB
    from ...data.universe import Universe
    from ...itemsets.tf import candidate_space_size, tf, tf_gamma_count

    n_cand = candidate_space_size(_ITEMS, _M)
    gamma = tf_gamma_count(_K, epsilon, n_cand)
    c_top = math.ceil(gamma) + 10  # c_k = c_top > gamma*N: the truncation is active
    floor = c_top - gamma
    min_count = math.floor(floor) + 1  # enumerated iff count >= min_count
    below = max(1, min_count - 1)
    base = [[0, 1]] * c_top + [[2]] * below + [[3, 4]] * 3 + [[5]]
    u = Universe.from_range(1, _ITEMS)
    grid = range(max(0, below - 12), c_top + 16, 2)
    n_total = len(base)
    n_grid = range(n_total - 20, n_total + 22, 4)
    cases: list[AuditCase] = []
    for variant in ("laplace", "exponential"):
        def run(db, noise, variant=variant):
            return tf(db, u, _K, epsilon, _M, noise=noise, variant=variant)

        cases.append(AuditCase(
            f"tf/{variant}-count-at-truncation-floor", TransactionDB.from_lists(base, _ITEMS),
            TransactionDB.from_lists(base + [[2]], _ITEMS), epsilon, run, _events(grid, n_grid),
            description=f"universe 1..{_ITEMS}, k = {_K}, m = {_M}, {variant}: {c_top} x {{1,2}} (c_k = {c_top} > "
                        f"gamma*N = {gamma:.1f}) + {below} x {{3}} + 3 x {{4,5}} + {{6}}; D' adds {{3}}, whose count "
                        f"reaches the enumeration floor {min_count}"))
        cases.append(AuditCase(
            f"tf/{variant}-wide-record", TransactionDB.from_lists(base, _ITEMS),
            TransactionDB.from_lists(base + [list(range(_ITEMS))], _ITEMS), epsilon, run, _events(grid, n_grid),
            description=f"the same D ({variant}); D' adds {{1..{_ITEMS}}}: c_k and the truncation floor rise by one"))
    return cases


# --- search space (dprelease audit tf --search): FIMI files, one line -----------------------------------------------


@register_space("tf")
def _tf_space(epsilon: float):
    from ...itemsets.tf import tf
    from ..spaces import transaction_space

    configs = [{"n_items": n, "k": k, "m": m, "variant": v} for n, k, m in ((6, 2, 2), (5, 3, 3))
               for v in ("laplace", "exponential")]

    def release(db, universe, noise, cfg):
        return tf(db, universe, cfg["k"], epsilon, cfg["m"], noise=noise, variant=cfg["variant"])

    def events(records_d, records_dp, cfg):
        n = max(len(records_d), len(records_dp))
        return _events(range(0, n + 12, 2), range(max(0, n - 24), n + 26, 4))

    return [transaction_space("tf", configs, release, events, claim=epsilon, mean_size=2.5)]
