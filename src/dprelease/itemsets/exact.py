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

__all__ = ["distinct_records", "mine_frequent", "top_k_itemsets", "kth_support", "topk_facts", "pair_supports",
           "itemset_supports"]


def distinct_records(db: TransactionDB, items: np.ndarray | None = None) -> dict[tuple[int, ...], int]:
    """Distinct records and their multiplicities (pyfim accepts this as a weighted database).

    With ``items`` given, records are first projected onto those items (empty projections dropped);
    itemsets over ``items`` keep their supports. Up to 62 distinct items present, records are encoded
    as bit masks and grouped with one ``np.unique`` (exact); otherwise a Python pass groups them.
    """
    row_ids = None
    sel_items = db.items
    if items is not None:
        keep_item = np.zeros(db.n_items, dtype=bool)
        keep_item[np.asarray(items, dtype=np.int64)] = True
        keep = keep_item[db.items]
        sel_items = db.items[keep]
        row_ids = db.rows_of(np.flatnonzero(keep))  # rows of the kept entries only (no N-sized row ids)
    present = np.unique(sel_items)
    if present.size == 0:
        return {}
    if present.size <= 62:
        if row_ids is None:
            row_ids = db.row_ids()
        bit = np.searchsorted(present, sel_items).astype(np.int64)
        masks = np.zeros(db.n_records, dtype=np.int64)
        np.bitwise_or.at(masks, row_ids, np.left_shift(np.int64(1), bit)) if sel_items.size < 4096 else None
        if sel_items.size >= 4096:  # bits of one record are distinct, so a sum is an OR
            masks = np.bincount(row_ids, weights=np.ldexp(1.0, bit), minlength=db.n_records).astype(np.int64)
        uniq, counts = np.unique(masks[masks != 0], return_counts=True)
        labels = present.tolist()
        out: dict[tuple[int, ...], int] = {}
        for m, c in zip(uniq.tolist(), counts.tolist()):
            out[tuple(labels[b] for b in range(present.size) if (m >> b) & 1)] = int(c)
        return out
    out = {}
    if row_ids is None:
        flat = db.items.tolist()
        offsets = db.offsets.tolist()
        for r in range(db.n_records):
            key = tuple(flat[offsets[r] : offsets[r + 1]])
            if key:
                out[key] = out.get(key, 0) + 1
        return out
    flat = sel_items.tolist()
    starts = np.flatnonzero(np.r_[True, row_ids[1:] != row_ids[:-1]])
    bounds = np.r_[starts, row_ids.size].tolist()
    for a, b in zip(bounds[:-1], bounds[1:]):
        key = tuple(flat[a:b])
        out[key] = out.get(key, 0) + 1
    return out


def mine_frequent(db: TransactionDB, min_count: int, *, max_length: int | None = None,
                  table: dict[tuple[int, ...], int] | None = None,
                  supports: np.ndarray | None = None) -> list[tuple[tuple[int, ...], int]]:
    """Every itemset with support >= ``min_count`` (absolute), as (sorted item ids, support)."""
    import fim

    min_count = max(1, int(min_count))
    supports = db.item_supports() if supports is None else supports
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
    item_supports = db.item_supports()
    supports = np.sort(item_supports)[::-1]
    positive = supports[supports > 0]
    if positive.size == 0:
        return []
    # The k-th largest itemset support is at least the k-th largest singleton support, so with >= k
    # items mining at that floor is enough and only items at or above it matter. Descend from the top
    # support (cheap thresholds first; dense data such as mushroom explodes near the floor).
    floor = int(positive[k - 1]) if positive.size >= k else 1
    threshold = int(positive[0])
    if floor > 1 and (max_length is None or max_length >= 2):
        # Sharper floor: the k-th largest support among items and pairs (one sparse product over the items
        # at or above the item floor). Longer itemsets only add candidates, so c_k is at least this; mining
        # once at it always finds >= k itemsets (one pyfim call instead of a descent).
        cand = np.flatnonzero(item_supports >= floor)
        if 2 <= cand.size <= 3000:
            ps = pair_supports(db, cand)
            pairs = ps[np.triu_indices(cand.size, 1)]
            both = np.concatenate([positive, pairs[pairs >= floor]])
            if both.size >= k:
                floor = int(np.partition(both, both.size - k)[both.size - k])
                threshold = floor
    table = distinct_records(db, np.flatnonzero(item_supports >= floor) if floor > 1 else None)
    while True:
        found = mine_frequent(db, threshold, max_length=max_length, table=table, supports=item_supports)
        if len(found) >= k or threshold <= floor:
            return _order(found)[:k]
        threshold = max(floor, int(threshold * 0.8))


def kth_support(db: TransactionDB, k: int) -> int:
    """Support of the k-th most frequent itemset (0 if there are fewer than k)."""
    top = top_k_itemsets(db, k)
    return top[-1][1] if len(top) >= k else 0


# --- Extensions for PrivBasis / TF (non-private inner steps and evaluation) -------------------------------


def topk_facts(db: TransactionDB, k: int) -> dict[str, int]:
    """Non-private facts of the exact top k (PrivBasis Table 2): f_k*N, lambda, lambda2, lambda3.

    ``lambda`` is the number of distinct items in the top k itemsets; ``lambda2`` and
    ``lambda3`` count its itemsets of length 2 and 3. Uses the tie rule of :func:`top_k_itemsets`.
    """
    top = top_k_itemsets(db, k)
    items = {i for s, _ in top for i in s}
    return {
        "fk_count": int(top[-1][1]) if len(top) >= k else 0,
        "lambda": len(items),
        "lambda2": sum(1 for s, _ in top if len(s) == 2),
        "lambda3": sum(1 for s, _ in top if len(s) == 3),
    }


def pair_supports(db: TransactionDB, items: np.ndarray) -> np.ndarray:
    """Exact support of every pair of ``items``: a symmetric (len x len) int64 matrix (diagonal = item supports).

    One sparse product per block of records (PrivBasis Algorithm 3, line 12; :mod:`dprelease.data.passes`).
    """
    from ..data.passes import pair_supports as blockwise_pair_supports

    return blockwise_pair_supports(db, items)


def itemset_supports(db: TransactionDB, itemsets: list[tuple[int, ...]]) -> np.ndarray:
    """Exact support of each given itemset (evaluation and TF's sampled candidates); empty set -> N."""
    from ..evaluation.counting import SupportCounter  # lazy: evaluation imports this module

    if not itemsets:
        return np.zeros(0, dtype=np.int64)
    counter = SupportCounter(db)
    return counter.count_many([np.asarray(s, dtype=np.int64) for s in itemsets])  # an empty itemset counts N
