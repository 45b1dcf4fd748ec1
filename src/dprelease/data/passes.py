"""Exact counting passes over a :class:`TransactionDB`, computed block by block (non-private inner steps).

Every pass here is an aggregate grouped by a key (item, pair of items, basis bin): it walks the records in
blocks of about ``BLOCK_ENTRIES`` items (:meth:`TransactionDB.record_blocks`) and adds the blocks' counts,
so the temporaries are bounded by a block, not by N. The results are exact integers, identical to a
whole-database computation. These are the data passes a distributed engine would run;
the mechanisms that consume them stay where they are.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

from .transactions import TransactionDB

__all__ = ["pair_supports", "pair_support_values", "basis_bin_counts"]


def _indicator_blocks(db: TransactionDB, items: np.ndarray):
    """Yield, per block of records, the 0/1 record x item matrix restricted to ``items`` (scipy CSR, int32)."""
    from scipy import sparse

    local = np.full(db.n_items, -1, dtype=np.int32)
    local[items] = np.arange(items.size, dtype=np.int32)
    for lo, hi in db.record_blocks():
        a, b = int(db.offsets[lo]), int(db.offsets[hi])
        pos = local[db.items[a:b]]
        keep = pos >= 0
        kept_before = np.zeros(b - a + 1, dtype=np.int64)
        np.cumsum(keep, out=kept_before[1:])
        indptr = kept_before[db.offsets[lo : hi + 1] - a]
        indices = pos[keep]
        yield sparse.csr_matrix((np.ones(indices.size, dtype=np.int32), indices, indptr),
                                shape=(hi - lo, items.size))


def pair_supports(db: TransactionDB, items: np.ndarray) -> np.ndarray:
    """Exact support of every pair of ``items``: a symmetric (len x len) int64 matrix (diagonal = item supports)."""
    items = np.asarray(items, dtype=np.int64)
    out = np.zeros((items.size, items.size), dtype=np.int64)
    for x in _indicator_blocks(db, items):
        prod = (x.T @ x).tocoo()
        out[prod.row, prod.col] += prod.data  # (row, col) pairs are distinct in a product
    return out


def pair_support_values(db: TransactionDB, items: np.ndarray) -> np.ndarray:
    """The supports of the pairs of ``items`` that occur at all (any order; for order statistics)."""
    from scipy import sparse

    items = np.asarray(items, dtype=np.int64)
    acc = sparse.csr_matrix((items.size, items.size), dtype=np.int64)
    for x in _indicator_blocks(db, items):
        acc = acc + sparse.triu(x.T @ x, k=1, format="csr").astype(np.int64)
    return acc.data[acc.data > 0]


def basis_bin_counts(db: TransactionDB, bases: list[tuple[int, ...]], n_records: int | None = None
                     ) -> list[np.ndarray]:
    """Exact bin counts of every basis (PrivBasis Algorithm 1 lines 7-11): bin m of basis B holds the records
    whose intersection with B is the subset with bit mask m (bit j = the j-th item of B, sorted).

    All bases in one sweep per block: each occurrence of a basis item is repeated once per basis holding the
    item (its bit there), the masks of all (record, basis) pairs come from one bincount, and the bins of all
    bases from a second (the bases laid end to end): work grows with the occurrences and the touched records
    times the bases, not with the occurrences times the bases. ``n_records``: the records ``db`` was projected
    from, when it holds only those touching the bases (the others fall in bin 0); by default ``db``'s own."""
    if not bases:
        return []
    total_records = db.n_records if n_records is None else int(n_records)
    bases_arr = [np.asarray(b, dtype=np.int64) for b in bases]
    groups = mask_groups(bases_arr)
    if len(groups) <= MAX_MASK_GROUPS:
        def blocks() -> Iterator[tuple[np.ndarray, np.ndarray]]:
            return ((db.items[db.offsets[lo] : db.offsets[hi]], np.diff(db.offsets[lo : hi + 1]))
                    for lo, hi in db.record_blocks())

        return bins_by_masks(blocks, db.n_items, bases_arr, groups, total_records)
    w = len(bases_arr)
    sizes = np.asarray([1 << b.size for b in bases_arr], dtype=np.int64)
    first_bin = np.concatenate([[0], np.cumsum(sizes)])
    member_item = np.concatenate(bases_arr)
    member_basis = np.repeat(np.arange(w, dtype=np.int64), [b.size for b in bases_arr])
    member_bit = np.concatenate([np.arange(b.size, dtype=np.int64) for b in bases_arr])
    by_item = np.argsort(member_item, kind="stable")  # an item's memberships, contiguous
    n_member = np.bincount(member_item, minlength=db.n_items)
    first_member = np.concatenate([[0], np.cumsum(n_member)])
    weight = np.ldexp(1.0, member_bit[by_item])  # exact: masks stay below 2^20
    basis_of = member_basis[by_item]
    total = np.zeros(int(first_bin[-1]), dtype=np.int64)
    touched = 0
    for lo, hi in db.record_blocks():
        a, b = int(db.offsets[lo]), int(db.offsets[hi])
        items = db.items[a:b]
        counts = n_member[items]
        kept = np.flatnonzero(counts)
        if kept.size == 0:
            continue
        row = np.repeat(np.arange(hi - lo, dtype=np.int64), np.diff(db.offsets[lo : hi + 1]))[kept]
        # compact row ids: only records holding some basis item; the rest fall in bin 0 of every basis
        first = np.ones(row.size, dtype=bool)
        np.not_equal(row[1:], row[:-1], out=first[1:])
        rows = np.cumsum(first) - 1
        n_touched = int(rows[-1]) + 1
        touched += n_touched
        c = counts[kept]
        start = np.repeat(first_member[items[kept]] - np.cumsum(c) + c, c) + np.arange(int(c.sum()))
        masks = np.bincount(np.repeat(rows, c) * w + basis_of[start], weights=weight[start],
                            minlength=n_touched * w).astype(np.int64)
        total += np.bincount(np.tile(first_bin[:-1], n_touched) + masks, minlength=total.size)
    out = [total[first_bin[j] : first_bin[j + 1]].copy() for j in range(w)]
    for bins in out:
        bins[0] += total_records - touched
    return out


MAX_MASK_GROUPS = 8  # basis_bin_counts: at most this many sweeps of int64 masks, else one sweep of all bases
MASK_BITS = 62  # items per int64 mask (the bins of a basis are indexed by non-negative int64 masks)


def mask_groups(bases_arr: list[np.ndarray]) -> list[list[int]]:
    """The bases in consecutive groups whose items number at most ``MASK_BITS`` in all (a basis holds fewer)."""
    groups: list[list[int]] = []
    held: set[int] = set()
    for j, basis in enumerate(bases_arr):
        items = set(basis.tolist())
        if not groups or len(held | items) > MASK_BITS:
            groups.append([])
            held = set()
        groups[-1].append(j)
        held |= items
    return groups


def bins_by_masks(blocks: Callable[[], Iterator[tuple[np.ndarray, np.ndarray]]], n_items: int,
                  bases_arr: list[np.ndarray], groups: list[list[int]], n_records: int) -> list[np.ndarray]:
    """:func:`basis_bin_counts` by int64 masks: per group of bases (:func:`mask_groups`), one sweep over
    ``blocks()`` (each block: its items in record order, and its records' lengths) forms each record's mask over
    the group's items (OR of its items' bits, exact), groups the masks into distinct values with their record
    counts, and computes each basis's bins from the distinct masks only (few on short or repetitive records)."""
    out: list[np.ndarray] = [np.zeros(0, dtype=np.int64)] * len(bases_arr)
    starts_of: dict[int, np.ndarray] = {}  # per block, where its non-empty records start (one computation)
    for group in groups:
        union = np.unique(np.concatenate([bases_arr[j] for j in group]))
        pos = np.full(n_items, -1, dtype=np.int64)
        pos[union] = np.arange(union.size)
        distinct, weights = [], []
        held_masks = 0
        for b, (items, lengths) in enumerate(blocks()):
            if items.size == 0:
                continue
            if b not in starts_of:
                starts_of[b] = (np.cumsum(lengths) - lengths)[lengths > 0]
            # each record's mask: the OR of its group items' bits (an item outside the group adds 0); records
            # holding none of them (mask 0) fall in bin 0 with the records of no item
            p = pos[items]
            masks = np.bitwise_or.reduceat(np.where(p >= 0, np.left_shift(np.int64(1), p & 63), 0), starts_of[b])
            u, c = np.unique(masks[masks != 0], return_counts=True)
            distinct.append(u)
            weights.append(c)
            held_masks += u.size
            if held_masks > _MERGE_MASKS:  # the blocks' distinct masks merged: memory bounded by the distinct ones
                distinct, weights = _merged_masks(distinct, weights)
                held_masks = distinct[0].size
        for j, bins in zip(group, _bins_of_masks(distinct, weights, [pos[bases_arr[j]] for j in group], n_records)):
            out[j] = bins
    return out


_MERGE_MASKS = 1 << 20  # bins_by_masks merges its blocks' distinct masks when it holds more than this many


def _merged_masks(distinct: list[np.ndarray], weights: list[np.ndarray]) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """The blocks' (mask, records) lists as one list of distinct masks with their summed counts (exact integers)."""
    u, at = np.unique(np.concatenate(distinct), return_inverse=True)
    c = np.bincount(at.reshape(-1), weights=np.concatenate(weights).astype(np.float64), minlength=u.size)
    return [u], [c.astype(np.int64)]


def _bins_of_masks(distinct: list[np.ndarray], weights: list[np.ndarray], bits: list[np.ndarray], n_records: int
                  ) -> list[np.ndarray]:
    """Basis bins from records' int64 masks: ``distinct[b]`` masks with ``weights[b]`` records each (per block,
    records holding at least one masked item), basis j's item i at mask bit ``bits[j][i]``; the records of no
    mask fall in bin 0 of every basis."""
    if distinct:
        u, at = np.unique(np.concatenate(distinct), return_inverse=True)
        c = np.bincount(at.reshape(-1), weights=np.concatenate(weights).astype(np.float64)).astype(np.int64)
    else:
        u, c = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    out = []
    for at_bits in bits:
        bm = np.zeros(u.size, dtype=np.int64)
        for j, bit in enumerate(at_bits.tolist()):
            bm |= ((u >> bit) & 1) << j
        bins = np.bincount(bm, weights=c.astype(np.float64), minlength=1 << at_bits.size).astype(np.int64)
        bins[0] += n_records - int(c.sum())
        out.append(bins)
    return out
