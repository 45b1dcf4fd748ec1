"""Top-K frequent-itemset utility of a released dataset (DiffPart, Appendix E).

utility = 1 - (1/K) * sum over F in F_K(D) of |sup(F, D) - sup(F, F_K(D~))| / sup(F, D),
with sup(F, F_K(D~)) = 0 when F is not among the released top K. Supports are
relative (fraction of each dataset's records), so a release whose size differs
from |D| by noise is not penalised for that alone. Exact mining uses pyfim.
"""

from __future__ import annotations

from ..data.transactions import TransactionDB
from ..itemsets.exact import top_k_itemsets

__all__ = ["topk_utility"]


def topk_utility(raw: TransactionDB, released: TransactionDB, k: int) -> float:
    raw_top = top_k_itemsets(raw, k)
    if not raw_top:
        raise ValueError("the raw data has no itemsets")
    rel_top = dict(top_k_itemsets(released, k)) if released.n_records else {}
    n_raw = raw.n_records
    n_rel = max(released.n_records, 1)
    loss = 0.0
    for items, count in raw_top:
        sup_raw = count / n_raw
        sup_rel = rel_top.get(items, 0) / n_rel
        loss += abs(sup_raw - sup_rel) / sup_raw
    return 1.0 - loss / len(raw_top)
