"""Exact counting passes over a :class:`TransactionDB`, computed block by block (non-private inner steps).

Every pass here is an aggregate grouped by a key (item, pair of items, basis bin): it walks the records in
blocks of about ``BLOCK_ENTRIES`` items (:meth:`TransactionDB.record_blocks`) and adds the blocks' counts,
so the temporaries are bounded by a block, not by N. The results are exact integers, identical to a
whole-database computation. These are the data passes a distributed engine would run;
the mechanisms that consume them stay where they are.
"""

from __future__ import annotations

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


def basis_bin_counts(db: TransactionDB, bases: list[tuple[int, ...]]) -> list[np.ndarray]:
    """Exact bin counts of every basis (PrivBasis Algorithm 1 lines 7-11): bin m of basis B holds the records
    whose intersection with B is the subset with bit mask m (bit j = the j-th item of B, sorted).

    All bases in one sweep per block: each occurrence of a basis item is repeated once per basis holding the
    item (its bit there), the masks of all (record, basis) pairs come from one bincount, and the bins of all
    bases from a second (the bases laid end to end): work grows with the occurrences and the touched records
    times the bases, not with the occurrences times the bases."""
    if not bases:
        return []
    bases_arr = [np.asarray(b, dtype=np.int64) for b in bases]
    union = np.unique(np.concatenate(bases_arr))
    if union.size <= 62:
        return _bins_from_union_masks(db, bases_arr, union)
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
        bins[0] += db.n_records - touched
    return out


def _bins_from_union_masks(db: TransactionDB, bases_arr: list[np.ndarray], union: np.ndarray) -> list[np.ndarray]:
    """:func:`basis_bin_counts` when the bases hold at most 62 items in all: each record's int64 mask over the
    union (OR of its items' bits, exact), grouped into distinct masks with their record counts, and each
    basis's bins computed from the distinct masks only (few on short or repetitive records)."""
    pos = np.full(db.n_items, -1, dtype=np.int64)
    pos[union] = np.arange(union.size)
    distinct, weights = [], []
    for lo, hi in db.record_blocks():
        a, b = int(db.offsets[lo]), int(db.offsets[hi])
        p = pos[db.items[a:b]]
        kept = np.flatnonzero(p >= 0)
        if kept.size == 0:
            continue
        row = np.repeat(np.arange(hi - lo, dtype=np.int64), np.diff(db.offsets[lo : hi + 1]))[kept]
        starts = np.flatnonzero(np.r_[True, row[1:] != row[:-1]])  # entries are in record order
        masks = np.bitwise_or.reduceat(np.left_shift(np.int64(1), p[kept]), starts)
        u, c = np.unique(masks, return_counts=True)
        distinct.append(u)
        weights.append(c)
    if distinct:
        u, at = np.unique(np.concatenate(distinct), return_inverse=True)
        c = np.bincount(at.reshape(-1), weights=np.concatenate(weights).astype(np.float64)).astype(np.int64)
    else:
        u, c = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    out = []
    for basis in bases_arr:
        bm = np.zeros(u.size, dtype=np.int64)
        for j, item in enumerate(basis.tolist()):
            bm |= ((u >> pos[item]) & 1) << j
        bins = np.bincount(bm, weights=c.astype(np.float64), minlength=1 << basis.size).astype(np.int64)
        bins[0] += db.n_records - int(c.sum())
        out.append(bins)
    return out
