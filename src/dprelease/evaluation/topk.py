"""Top-K frequent-itemset utility of a released dataset (DiffPart, Appendix E).

utility = 1 - (1/K) * sum over F in F_K(D) of |sup(F, D) - sup(F, F_K(D~))| / sup(F, D),
with sup(F, F_K(D~)) = 0 when F is not among the released top K. Supports are
relative (fraction of each dataset's records), so a release whose size differs
from |D| by noise is not penalised for that alone. Exact mining uses pyfim.
"""

from __future__ import annotations

from ..data.transactions import TransactionDB
from ..itemsets.exact import top_k_itemsets

__all__ = ["topk_utility", "topk_utility_many"]


def topk_utility(raw: TransactionDB, released: TransactionDB, k: int) -> float:
    if raw.n_records == 0:
        raise ValueError("the raw data has no records")
    return topk_utility_many(raw, released, [k])[k]


def topk_utility_many(raw: TransactionDB, released: TransactionDB, ks: list[int] | tuple[int, ...]) -> dict[int, float]:
    """:func:`topk_utility` for several K at once (mines each dataset once, for the largest K)."""
    k_max = max(ks)
    raw_top = top_k_itemsets(raw, k_max)
    rel_top = top_k_itemsets(released, k_max) if released.n_records else []
    n_raw = raw.n_records
    n_rel = max(released.n_records, 1)
    out: dict[int, float] = {}
    for k in ks:
        rel_k = dict(rel_top[:k])
        loss = sum(abs(c / n_raw - rel_k.get(items, 0) / n_rel) / (c / n_raw) for items, c in raw_top[:k])
        out[k] = 1.0 - loss / max(len(raw_top[:k]), 1)
    return out
