"""Exact (non-private) frequent-itemset mining, for the custodian and for evaluation.

Top-k mining is one level-wise miner over the engine's candidate counter (:func:`top_k_itemsets`, bounded
work; in memory the candidates are counted over packed bit columns); threshold mining (:func:`mine_frequent`,
TF's candidates) uses pyfim in memory and Apriori passes on another engine.

pyfim leaves out the singleton of an item that occurs in *every* transaction
(mushroom's item 85) while still reporting its supersets, so singletons are
counted directly from the item supports and pyfim is asked only for sets of >= 2.

Tie rule for top-k: itemsets are ordered by support (descending), then length
(ascending), then item ids (lexicographic); exactly the first k are returned.
"""

from __future__ import annotations

import math

import numpy as np

from ..data.transactions import TransactionDB
from ..engine.base import Candidates, TransactionData
from ..engine.local import LocalTransactions, as_transaction_data, unwrap

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
        # One int64 mask per record holding a selected item: OR of its items' bits, in integers (a float64 sum
        # of the bits, as before, is exact only up to 53 bits: with 54..62 items present it merged records).
        bits = np.left_shift(np.int64(1), np.searchsorted(present, sel_items).astype(np.int64))
        starts = np.flatnonzero(np.r_[True, row_ids[1:] != row_ids[:-1]])  # entries are in record order
        uniq, counts = np.unique(np.bitwise_or.reduceat(bits, starts), return_counts=True)
        labels = np.asarray(present.tolist(), dtype=object)
        out: dict[tuple[int, ...], int] = {}
        for lo in range(0, uniq.size, 1 << 13):  # the itemset of every distinct mask, 2^13 masks at a time
            block = uniq[lo : lo + (1 << 13)]
            has = ((block[:, None] >> np.arange(present.size, dtype=np.int64)) & 1).astype(bool)
            members = labels[np.nonzero(has)[1]].tolist()
            ends = np.cumsum(has.sum(axis=1)).tolist()
            begin = 0
            for end, c in zip(ends, counts[lo : lo + (1 << 13)].tolist()):
                out[tuple(members[begin:end])] = c
                begin = end
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
    db = unwrap(db)
    if isinstance(db, TransactionData):
        return _mine_by_counting(db, min_count, max_length)
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


def top_k_itemsets(db: TransactionDB | TransactionData, k: int, *, max_length: int | None = None
                   ) -> list[tuple[tuple[int, ...], int]]:
    """The k most frequent itemsets with their exact supports (tie rule in the module docstring).

    A level-wise top-k miner that raises its threshold as it goes (no pyfim, no threshold descent). Let t be
    the k-th largest support found so far (0 while fewer than k are found). Under the tie rule a longer
    itemset ranks after every shorter one of equal support, so an itemset of the next level can enter the
    top k only if its support is > t, and then (Apriori) so is every subset's. The level's generators are
    therefore the itemsets found with support > t -- fewer than k of them -- and a level has fewer than
    k^2/2 candidates, counted by the engine (:meth:`~dprelease.engine.base.TransactionData.candidates`: in
    memory, by AND-ing packed bit columns of the records holding two or more of the level-1 generators; on
    another engine, one pass per level). Work and memory are bounded by k and N, whatever the data: a dense
    case (10,000 records, 40 of 120 items in 99.9 % of them, fewer than ceil(1.2 k) items present) hangs
    threshold miners such as pyfim, which enumerate its 2^40 frequent itemsets.
    """
    data = as_transaction_data(db)
    if k <= 0 or data.n_records == 0:
        return []
    k = int(k)
    supports = data.item_supports()
    items = np.flatnonzero(supports > 0)
    if items.size == 0:
        return []
    found: list[tuple[tuple[int, ...], int]] = []  # the itemsets of two items or more; the items come last
    found_supports = supports[items].astype(np.int64)
    t = _kth_or_zero(found_supports, k)
    base_items = items[supports[items] > t]  # every item of a longer top-k itemset is one of these
    counted: tuple[np.ndarray, np.ndarray] | None = None  # the pairs of the base items, when already counted
    if base_items.size >= _STAGED_PAIRS and isinstance(data, LocalTransactions) and max_length != 1:
        base_items, candidates, counted = _staged_pairs(data, base_items, supports, found_supports, t, k)
    else:
        candidates = data.candidates(base_items)
    row_of = {int(i): j for j, i in enumerate(base_items.tolist())}
    gen_sets = [(int(i),) for i in base_items.tolist()]
    length = 1
    while len(gen_sets) >= 2 and (max_length is None or length < max_length):
        if length == 1:  # the generators are the base items in order: every pair of them (Apriori's join)
            pairs = _all_pairs(len(gen_sets))
        else:
            pairs = np.asarray(_candidate_pairs(gen_sets, row_of), dtype=np.int64).reshape(-1, 2)
        if pairs.shape[0] == 0:
            break
        sup = counted[1] if length == 1 and counted is not None else candidates.supports(gen_sets, pairs)
        keep = np.flatnonzero(sup > t)
        if keep.size == 0:
            break
        new_sets = [gen_sets[g] + (int(base_items[r]),) for g, r in pairs[keep].tolist()]
        new_supports = sup[keep].astype(np.int64)
        found.extend(zip(new_sets, new_supports.tolist()))
        found_supports = np.concatenate([found_supports, new_supports])
        t = _kth_or_zero(found_supports, k)
        nxt = np.flatnonzero(new_supports > t)  # fewer than k: the next level's generators
        gen_sets = [new_sets[j] for j in nxt.tolist()]
        candidates.advance(pairs[keep][nxt])
        length += 1
    # only the items at or above the final k-th support can be among the top k (most items of a sparse universe
    # are below it: no tuple is built for them)
    singles = items[supports[items] >= t]
    found.extend(((int(i),), int(c)) for i, c in zip(singles.tolist(), supports[singles].tolist()))
    return _order(found)[:k]


_STAGED_PAIRS = 64  # top_k_itemsets counts the pairs of at least this many base items in two stages (in memory)


# the share of the base items (the most frequent) whose pairs the first stage counts: speed only, the result is
# the same at any share (0.5, 0.67 and 0.75 were slower on retail or on the 1M generated file)
_FIRST_SHARE = 0.6


def _first_stage(n: int) -> int:
    return int(math.ceil(_FIRST_SHARE * n))


def _staged_pairs(data: "LocalTransactions", base_items: np.ndarray, supports: np.ndarray,
                  item_supports: np.ndarray, t: int, k: int
                  ) -> tuple[np.ndarray, Candidates, tuple[np.ndarray, np.ndarray]]:
    """:func:`top_k_itemsets`' pair level in two stages: the same result with less counting on sparse data.

    The pairs of the most frequent base items (a share ``_FIRST_SHARE``) are counted first. With those of
    support > t added to the items, the k-th largest support rises to some t_a >= t: at least k itemsets reach
    t_a. A pair below t_a ranks after all of them, and a value below t_a cannot move the k-th largest, so only
    the pairs of support >= t_a matter, and both their items have support >= t_a. When the first stage's items
    hold every such item, their candidate counter and counts go on; otherwise only the pairs with an item
    outside them are counted. Returns (the base items from here on, their candidate counter, their pairs and
    supports)."""
    first = np.sort(base_items[np.argsort(-supports[base_items], kind="stable")[: _first_stage(base_items.size)]])
    stage = data.candidates(first)
    pairs = _all_pairs(first.size)
    sup = stage.supports([(int(i),) for i in first.tolist()], pairs)
    t_a = _kth_or_zero(np.concatenate([item_supports, sup[sup > t]]), k)
    needed = base_items[supports[base_items] >= t_a]
    held = np.isin(needed, first)
    if held.all():
        return first, stage, (pairs, sup)
    del stage  # its bit columns are not needed past this point: the second stage's are built without them beside
    # the pairs of two first-stage items are counted already; the others (each with an item outside them) are
    # counted over the needed items, by enumeration or bit columns, whichever is less work
    rest = data.candidates(needed)
    pairs_b = _all_pairs(needed.size)
    both = held[pairs_b[:, 0]] & held[pairs_b[:, 1]]
    a, b = np.searchsorted(first, needed)[pairs_b[both]].T  # rows among the first (a < b: both ascending)
    sup_b = np.empty(pairs_b.shape[0], dtype=np.int64)
    sup_b[both] = sup[a * first.size - a * (a + 1) // 2 + (b - a - 1)]  # np.triu_indices order
    sup_b[~both] = rest.supports([(int(i),) for i in needed.tolist()], pairs_b[~both])
    return needed, rest, (pairs_b, sup_b)


def _all_pairs(n: int) -> np.ndarray:
    """Every pair (a, b), a < b < n, in ``np.triu_indices`` order, as (pairs, 2) int64 rows."""
    return np.stack(np.triu_indices(n, 1), axis=1).astype(np.int64)


def _kth_or_zero(values: np.ndarray, k: int) -> int:
    """The k-th largest value, or 0 when there are fewer than k (then every support >= 1 still counts)."""
    if values.size < k:
        return 0
    return int(np.partition(values, values.size - k)[values.size - k])


def _candidate_pairs(gen_sets: list[tuple[int, ...]], row_of: dict[int, int]) -> list[tuple[int, int]]:
    """Apriori's join: (generator index, row of the added item) of every itemset one longer than two
    generators sharing a prefix, whose every subset is a generator."""
    order = sorted(range(len(gen_sets)), key=lambda g: gen_sets[g])
    present = set(gen_sets)
    pairs: list[tuple[int, int]] = []
    start = 0
    while start < len(order):
        prefix = gen_sets[order[start]][:-1]
        end = start
        while end < len(order) and gen_sets[order[end]][:-1] == prefix:
            end += 1
        for a in range(start, end):
            base = gen_sets[order[a]]
            for b in range(a + 1, end):
                cand = base + (gen_sets[order[b]][-1],)
                # Apriori: the subsets without one of the first items must be generators too
                if all(cand[:j] + cand[j + 1 :] in present for j in range(len(cand) - 2)):
                    pairs.append((order[a], row_of[cand[-1]]))
        start = end
    return pairs


def _mine_by_counting(data: TransactionData, min_count: int, max_length: int | None
                      ) -> list[tuple[tuple[int, ...], int]]:
    """:func:`mine_frequent` on an engine: Apriori, each level's candidates counted by one engine pass
    (the same itemsets and supports as pyfim; in a different order)."""
    min_count = max(1, int(min_count))
    supports = data.item_supports()
    out = [((int(i),), int(s)) for i, s in enumerate(supports.tolist()) if s >= min_count]
    base_items = np.flatnonzero(supports >= min_count)
    row_of = {int(i): j for j, i in enumerate(base_items.tolist())}
    gen_sets = [(int(i),) for i in base_items.tolist()]
    length = 1
    while len(gen_sets) >= 2 and (max_length is None or length < max_length):
        cands = [gen_sets[a] + (int(base_items[r]),) for a, r in _candidate_pairs(gen_sets, row_of)]
        if not cands:
            break
        sup = data.itemset_supports(cands)
        keep = np.flatnonzero(sup >= min_count)
        gen_sets = [cands[j] for j in keep.tolist()]
        out.extend(zip(gen_sets, sup[keep].astype(np.int64).tolist()))
        length += 1
    return out


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


def pair_supports(db: TransactionDB | TransactionData, items: np.ndarray) -> np.ndarray:
    """Exact support of every pair of ``items``: a symmetric (len x len) int64 matrix (diagonal = item supports).

    One sparse product per block of records (PrivBasis Algorithm 3, line 12; :mod:`dprelease.data.passes`).
    """
    return as_transaction_data(db).pair_supports(items)


def itemset_supports(db: TransactionDB | TransactionData, itemsets: list[tuple[int, ...]]) -> np.ndarray:
    """Exact support of each given itemset (evaluation and TF's sampled candidates); empty set -> N."""
    if not itemsets:
        return np.zeros(0, dtype=np.int64)
    return as_transaction_data(db).itemset_supports(itemsets)
