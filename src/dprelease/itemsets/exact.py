"""Exact (non-private) frequent-itemset mining, for the custodian and for evaluation.

Top-k mining is a level-wise miner over packed bit columns (:func:`top_k_itemsets`, bounded work);
threshold mining (:func:`mine_frequent`, TF's candidates) uses pyfim.

pyfim leaves out the singleton of an item that occurs in *every* transaction
(mushroom's item 85) while still reporting its supersets, so singletons are
counted directly from the item supports and pyfim is asked only for sets of >= 2.

Tie rule for top-k: itemsets are ordered by support (descending), then length
(ascending), then item ids (lexicographic); exactly the first k are returned.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from ..data.transactions import TransactionDB
from ..engine.base import TransactionData

__all__ = ["unwrap", "distinct_records", "mine_frequent", "top_k_itemsets", "kth_support", "topk_facts", "pair_supports",
           "itemset_supports"]


def unwrap(db: TransactionDB | TransactionData) -> TransactionDB | TransactionData:
    """The in-memory database behind ``db`` when it runs on the local engine; else ``db`` (another engine),
    whose passes are asked of the engine (:mod:`dprelease.engine`)."""
    from ..engine.local import LocalTransactions

    return db.db if isinstance(db, LocalTransactions) else db


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


def top_k_itemsets(db: TransactionDB, k: int, *, max_length: int | None = None
                   ) -> list[tuple[tuple[int, ...], int]]:
    """The k most frequent itemsets with their exact supports (tie rule in the module docstring).

    A level-wise top-k miner that raises its threshold as it goes (no pyfim, no threshold descent). Let t be
    the k-th largest support found so far (0 while fewer than k are found). Under the tie rule a longer
    itemset ranks after every shorter one of equal support, so an itemset of the next level can enter the
    top k only if its support is > t, and then (Apriori) so is every subset's. The level's generators are
    therefore the itemsets found with support > t -- fewer than k of them -- and a level has fewer than
    k^2/2 candidates, counted by AND-ing packed bit columns (of the records holding two or more of the level-1
    generators: no other record holds a longer candidate). Work and memory are bounded by k and N, whatever
    the data: the issue's dense case (10,000 records, 40 of 120 items in 99.9 % of them, fewer than
    ceil(1.2 k) items present) used to hang in pyfim with 2^40 frequent itemsets (issue 8, defect 7).
    """
    db = unwrap(db)
    if isinstance(db, TransactionData):
        return _top_k_by_counting(db, k, max_length)
    if k <= 0 or db.n_records == 0:
        return []
    k = int(k)
    supports = db.item_supports()
    items = np.flatnonzero(supports > 0)
    if items.size == 0:
        return []
    found: list[tuple[tuple[int, ...], int]] = [((int(i),), int(supports[i])) for i in items.tolist()]
    found_supports = supports[items].astype(np.int64)
    t = _kth_or_zero(found_supports, k)
    base_items = items[supports[items] > t]  # every item of a longer top-k itemset is one of these
    columns, row_of = _bit_columns(db, base_items, min_items=2)  # only records with two of them hold a longer set
    gen_sets = [(int(i),) for i in base_items.tolist()]
    gen_bits = columns
    length = 1
    while len(gen_sets) >= 2 and (max_length is None or length < max_length):
        new_sets, new_supports, origin = _next_level(gen_sets, gen_bits, columns, row_of, t)
        if not new_sets:
            break
        found.extend(zip(new_sets, new_supports.tolist()))
        found_supports = np.concatenate([found_supports, new_supports])
        t = _kth_or_zero(found_supports, k)
        keep = np.flatnonzero(new_supports > t)  # fewer than k: only their bit columns are kept
        gen_sets = [new_sets[j] for j in keep.tolist()]
        nxt = np.empty((keep.size, columns.shape[1]), dtype=np.uint64)  # row by row: no second temporary
        for r, (g, c) in enumerate(origin[keep].tolist()):
            np.bitwise_and(gen_bits[g], columns[c], out=nxt[r])
        gen_bits = nxt
        length += 1
    return _order(found)[:k]


def _kth_or_zero(values: np.ndarray, k: int) -> int:
    """The k-th largest value, or 0 when there are fewer than k (then every support >= 1 still counts)."""
    if values.size < k:
        return 0
    return int(np.partition(values, values.size - k)[values.size - k])


BIT_BLOCK_ROWS = 1 << 16  # at most this many records per block of _bit_columns (a multiple of 64)


def _bit_columns(db: TransactionDB, items: np.ndarray, min_items: int = 0) -> tuple[np.ndarray, dict[int, int]]:
    """Packed bit columns (uint64 words) of ``items``, one row each: bit j of a row is set iff the j-th record
    taken holds the item. The records taken are, in record order, every record (``min_items`` = 0: bit r =
    record r) or those holding at least ``min_items`` of ``items`` (an itemset of at least that many of them
    occurs in no other record, so its support over the columns is unchanged; fewer words).

    Built over blocks of records: no per-occurrence array of the whole database is made, only a block's (its
    kept entries and a small flag matrix); a block's bits are OR-ed into the words they fall in.
    """
    if items.size == 0:
        return np.zeros((0, -(-db.n_records // 64)), dtype=np.uint64), {}
    local = np.full(db.n_items, -1, dtype=np.int32)
    local[items] = np.arange(items.size, dtype=np.int32)
    step = max(64, min(BIT_BLOCK_ROWS, ((1 << 23) // items.size) // 64 * 64))  # flags of a block: <= 8 MB
    if min_items > 0:
        taken = sum(int(np.count_nonzero(np.bincount(rows, minlength=hi - lo) >= min_items))
                    for lo, hi, _, rows in _block_hits(db, local, step))
    else:
        taken = db.n_records
    out = np.zeros((items.size, -(-taken // 64)), dtype=np.uint64)
    flags = np.zeros((items.size, step + 64), dtype=bool)
    base = 0  # bits written so far
    for lo, hi, which, rows in _block_hits(db, local, step):
        if min_items > 0:
            chosen = np.bincount(rows, minlength=hi - lo) >= min_items
            position = np.cumsum(chosen) - 1  # a chosen record's bit, counted from this block's first
            n_here = int(position[-1]) + 1
            held = chosen[rows]
            which, rows = which[held], position[rows[held]]
        else:
            n_here = hi - lo
        rows = rows + base % 64  # the block starts inside the word base // 64
        flags[which, rows] = True
        width = -(-(base % 64 + n_here) // 64)
        packed = np.packbits(flags[:, : width * 64], axis=1, bitorder="little").view(np.uint64)
        out[:, base // 64 : base // 64 + width] |= packed
        flags[which, rows] = False
        base += n_here
    return out, {int(i): j for j, i in enumerate(items.tolist())}


def _block_hits(db: TransactionDB, local: np.ndarray, step: int
                ) -> Iterator[tuple[int, int, np.ndarray, np.ndarray]]:
    """Per block of ``step`` records: (lo, hi, the column row of each entry of a column item, its record - lo)."""
    for lo in range(0, db.n_records, step):
        hi = min(lo + step, db.n_records)
        a, b = int(db.offsets[lo]), int(db.offsets[hi])
        which = local[db.items[a:b]]
        kept = np.flatnonzero(which >= 0)
        rows = np.searchsorted(db.offsets[lo : hi + 1], a + kept, side="right") - 1  # row within the block
        yield lo, hi, which[kept], rows


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


def _next_level(gen_sets: list[tuple[int, ...]], gen_bits: np.ndarray, columns: np.ndarray, row_of: dict[int, int],
                t: int) -> tuple[list[tuple[int, ...]], np.ndarray, np.ndarray]:
    """Itemsets one longer than the generators whose every subset is a generator and whose support is > t.

    Returns (itemsets, supports, origin) with origin[j] = (generator index, column row of the added item).
    """
    pairs = _candidate_pairs(gen_sets, row_of)
    if not pairs:
        return [], np.zeros(0, dtype=np.int64), np.zeros((0, 2), dtype=np.int64)
    pair_arr = np.asarray(pairs, dtype=np.int64)
    supports = _and_supports(gen_bits, columns, pair_arr)
    keep = np.flatnonzero(supports > t)
    item_of = np.fromiter(row_of.keys(), dtype=np.int64, count=len(row_of))
    sets = [gen_sets[a] + (int(item_of[r]),) for a, r in pair_arr[keep].tolist()]
    return sets, supports[keep], pair_arr[keep]


AND_BATCH_WORDS = 1 << 20  # words per buffer of _and_supports (8 MB each, two buffers and their popcounts)


def _and_supports(gen_bits: np.ndarray, columns: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """popcount(gen_bits[g] & columns[c]) for each (g, c) row of ``pairs`` (int64), batch by batch into two
    reused buffers of about ``AND_BATCH_WORDS`` words: no temporary grows with the number of records beyond
    a batch's rows."""
    words = columns.shape[1]
    supports = np.empty(pairs.shape[0], dtype=np.int64)
    if pairs.shape[0] == 0 or words == 0:
        supports[:] = 0
        return supports
    batch = max(1, min(pairs.shape[0], AND_BATCH_WORDS // words))
    left = np.empty((batch, words), dtype=np.uint64)
    right = np.empty((batch, words), dtype=np.uint64)
    ones = np.empty((batch, words), dtype=np.uint8)
    for lo in range(0, pairs.shape[0], batch):
        m = min(batch, pairs.shape[0] - lo)
        # mode "clip": the rows are valid, and the default "raise" would copy through a temporary of out's size
        np.take(gen_bits, pairs[lo : lo + m, 0], axis=0, out=left[:m], mode="clip")
        np.take(columns, pairs[lo : lo + m, 1], axis=0, out=right[:m], mode="clip")
        np.bitwise_and(left[:m], right[:m], out=left[:m])
        np.bitwise_count(left[:m], out=ones[:m])
        ones[:m].sum(axis=1, dtype=np.int64, out=supports[lo : lo + m])
    return supports


def _top_k_by_counting(data: TransactionData, k: int, max_length: int | None
                       ) -> list[tuple[tuple[int, ...], int]]:
    """:func:`top_k_itemsets` on an engine: the same levels and thresholds, each level's candidates counted by
    one engine pass (:meth:`TransactionData.itemset_supports`) instead of AND-ing bit columns."""
    if k <= 0 or data.n_records == 0:
        return []
    k = int(k)
    supports = data.item_supports()
    items = np.flatnonzero(supports > 0)
    if items.size == 0:
        return []
    found: list[tuple[tuple[int, ...], int]] = [((int(i),), int(supports[i])) for i in items.tolist()]
    found_supports = supports[items].astype(np.int64)
    t = _kth_or_zero(found_supports, k)
    base_items = items[supports[items] > t]
    row_of = {int(i): j for j, i in enumerate(base_items.tolist())}
    gen_sets = [(int(i),) for i in base_items.tolist()]
    length = 1
    while len(gen_sets) >= 2 and (max_length is None or length < max_length):
        cands = [gen_sets[a] + (int(base_items[r]),) for a, r in _candidate_pairs(gen_sets, row_of)]
        if not cands:
            break
        sup = data.itemset_supports(cands)
        keep = np.flatnonzero(sup > t)
        if keep.size == 0:
            break
        new_sets, new_supports = [cands[j] for j in keep.tolist()], sup[keep].astype(np.int64)
        found.extend(zip(new_sets, new_supports.tolist()))
        found_supports = np.concatenate([found_supports, new_supports])
        t = _kth_or_zero(found_supports, k)
        gen_sets = [new_sets[j] for j in np.flatnonzero(new_supports > t).tolist()]
        length += 1
    return _order(found)[:k]


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


def pair_supports(db: TransactionDB, items: np.ndarray) -> np.ndarray:
    """Exact support of every pair of ``items``: a symmetric (len x len) int64 matrix (diagonal = item supports).

    One sparse product per block of records (PrivBasis Algorithm 3, line 12; :mod:`dprelease.data.passes`).
    """
    from ..data.passes import pair_supports as blockwise_pair_supports

    db = unwrap(db)
    if isinstance(db, TransactionData):
        return db.pair_supports(items)
    return blockwise_pair_supports(db, items)


def itemset_supports(db: TransactionDB, itemsets: list[tuple[int, ...]]) -> np.ndarray:
    """Exact support of each given itemset (evaluation and TF's sampled candidates); empty set -> N."""
    from ..evaluation.counting import SupportCounter  # lazy: evaluation imports this module

    if not itemsets:
        return np.zeros(0, dtype=np.int64)
    db = unwrap(db)
    if isinstance(db, TransactionData):
        return db.itemset_supports(itemsets)
    counter = SupportCounter(db)
    return counter.count_many([np.asarray(s, dtype=np.int64) for s in itemsets])  # an empty itemset counts N
