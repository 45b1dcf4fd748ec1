"""Exact (non-private) frequent-itemset mining with pyfim, for the custodian and for evaluation.

pyfim leaves out the singleton of an item that occurs in *every* transaction
(mushroom's item 85) while still reporting its supersets, so singletons are
counted directly from the item supports and pyfim is asked only for sets of >= 2.

Tie rule for top-k: itemsets are ordered by support (descending), then length
(ascending), then item ids (lexicographic); exactly the first k are returned.
"""

from __future__ import annotations

import numpy as np

from ..data.transactions import TransactionDB

__all__ = ["distinct_records", "mine_frequent", "top_k_itemsets", "kth_support"]


def distinct_records(db: TransactionDB) -> dict[tuple[int, ...], int]:
    """Distinct records and their multiplicities (pyfim accepts this as a weighted database)."""
    out: dict[tuple[int, ...], int] = {}
    items = db.items.tolist()
    offsets = db.offsets.tolist()
    for r in range(db.n_records):
        key = tuple(items[offsets[r] : offsets[r + 1]])
        out[key] = out.get(key, 0) + 1
    return out


def mine_frequent(db: TransactionDB, min_count: int, *, max_length: int | None = None,
                  table: dict[tuple[int, ...], int] | None = None) -> list[tuple[tuple[int, ...], int]]:
    """Every itemset with support >= ``min_count`` (absolute), as (sorted item ids, support)."""
    import fim

    min_count = max(1, int(min_count))
    supports = db.item_supports()
    out = [((int(i),), int(s)) for i, s in enumerate(supports.tolist()) if s >= min_count]
    if max_length is not None and max_length < 2:
        return out
    if table is None:
        table = distinct_records(db)
    if not table:
        return out
    limits = {"zmax": int(max_length)} if max_length else {}
    found = fim.fpgrowth(table, target="s", supp=-min_count, zmin=2, report="a", **limits)
    out.extend((tuple(sorted(int(i) for i in s)), int(c)) for s, c in found)
    return out


def _order(pairs: list[tuple[tuple[int, ...], int]]) -> list[tuple[tuple[int, ...], int]]:
    return sorted(pairs, key=lambda p: (-p[1], len(p[0]), p[0]))


def top_k_itemsets(db: TransactionDB, k: int, *, max_length: int | None = None
                   ) -> list[tuple[tuple[int, ...], int]]:
    """The k most frequent itemsets with their exact supports (tie rule in the module docstring)."""
    if k <= 0 or db.n_records == 0:
        return []
    supports = np.sort(db.item_supports())[::-1]
    positive = supports[supports > 0]
    if positive.size == 0:
        return []
    # The k-th largest itemset support is at least the k-th largest singleton support.
    threshold = int(positive[min(k, positive.size) - 1])
    table = distinct_records(db)
    while True:
        found = mine_frequent(db, threshold, max_length=max_length, table=table)
        if len(found) >= k or threshold <= 1:
            return _order(found)[:k]
        threshold = max(1, threshold // 2)


def kth_support(db: TransactionDB, k: int) -> int:
    """Support of the k-th most frequent itemset (0 if there are fewer than k)."""
    top = top_k_itemsets(db, k)
    return top[-1][1] if len(top) >= k else 0
