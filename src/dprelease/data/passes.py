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
    whose intersection with B is the subset with bit mask m (bit j = the j-th item of B, sorted)."""
    if not bases:
        return []
    bases_arr = [np.asarray(b, dtype=np.int64) for b in bases]
    out = [np.zeros(1 << b.size, dtype=np.int64) for b in bases_arr]
    union = np.unique(np.concatenate(bases_arr))
    keep_item = np.zeros(db.n_items, dtype=bool)
    keep_item[union] = True
    pos = np.full(db.n_items, -1, dtype=np.int64)
    touched = 0
    for lo, hi in db.record_blocks():
        a, b = int(db.offsets[lo]), int(db.offsets[hi])
        kept = np.flatnonzero(keep_item[db.items[a:b]])
        if kept.size == 0:
            continue
        row = np.searchsorted(db.offsets[lo : hi + 1] - a, kept, side="right") - 1
        items = db.items[a + kept].astype(np.int64)
        # compact row ids: only records holding some basis item; the rest fall in bin 0 of every basis
        first = np.ones(row.size, dtype=bool)
        np.not_equal(row[1:], row[:-1], out=first[1:])
        rows = np.cumsum(first) - 1
        n_touched = int(rows[-1]) + 1
        touched += n_touched
        for basis, bins in zip(bases_arr, out):
            pos[basis] = np.arange(basis.size)
            p = pos[items]
            sel = p >= 0
            masks = np.bincount(rows[sel], weights=np.ldexp(1.0, p[sel]), minlength=n_touched).astype(np.int64)
            bins += np.bincount(masks, minlength=bins.size)
            pos[basis] = -1
    for bins in out:
        bins[0] += db.n_records - touched
    return out
