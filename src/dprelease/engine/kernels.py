"""Exact aggregates over one block of records, as (key, count) arrays: what an executor computes.

Each kernel takes a block of records as a :class:`~dprelease.data.transactions.TransactionDB` (the Spark
engine builds one per Arrow batch, zero-copy from the list column) and returns partial counts keyed by one
or two int64 keys; partial counts of disjoint blocks add up to the whole data's (every aggregate here is a
sum over records). :func:`merge` adds partials with equal keys and sorts them by key. The local engine
runs the same computations over the whole database (:mod:`dprelease.data.passes`).
"""

from __future__ import annotations

import numpy as np

from ..data.transactions import TransactionDB

__all__ = ["Partial", "merge", "item_supports", "length_histogram", "pair_supports", "pair_counts", "basis_bins",
           "itemset_supports", "record_masks", "range_child_masks", "level_masks", "dense"]

# (k0, k1, count): int64 arrays of one length; k1 is zeros for one-key aggregates.
Partial = tuple[np.ndarray, np.ndarray, np.ndarray]

_EMPTY: Partial = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64))


def _one_key(counts: np.ndarray) -> Partial:
    """The non-zero entries of a dense count vector, keyed by position."""
    keys = np.flatnonzero(counts)
    return keys.astype(np.int64), np.zeros(keys.size, np.int64), counts[keys].astype(np.int64)


def merge(parts: list[Partial]) -> Partial:
    """Add the counts of equal (k0, k1) keys; sorted by (k0, k1)."""
    parts = [p for p in parts if p[0].size]
    if not parts:
        return _EMPTY
    k0 = np.concatenate([p[0] for p in parts])
    k1 = np.concatenate([p[1] for p in parts])
    c = np.concatenate([p[2] for p in parts])
    order = np.lexsort((k1, k0))
    k0, k1, c = k0[order], k1[order], c[order]
    first = np.ones(k0.size, dtype=bool)
    first[1:] = (k0[1:] != k0[:-1]) | (k1[1:] != k1[:-1])
    starts = np.flatnonzero(first)
    return k0[starts], k1[starts], np.add.reduceat(c, starts).astype(np.int64)


def dense(part: Partial, size: int) -> np.ndarray:
    """A one-key partial as a dense int64 vector of ``size``."""
    out = np.zeros(size, dtype=np.int64)
    np.add.at(out, part[0], part[2])
    return out


def item_supports(db: TransactionDB) -> Partial:
    return _one_key(db.item_supports())


def length_histogram(db: TransactionDB) -> Partial:
    """Records per record length (N, the item occurrences and the longest record follow from it)."""
    return _one_key(np.bincount(db.lengths)) if db.n_records else _EMPTY


def pair_supports(db: TransactionDB, items: np.ndarray) -> Partial:
    from ..data.passes import pair_supports as blockwise

    return _one_key(blockwise(db, items).reshape(-1))


def pair_counts(db: TransactionDB, items: np.ndarray) -> Partial:
    """Pairs (a < b, positions in ``items``) that occur in this block, keyed (a, b)."""
    from scipy import sparse

    from ..data.passes import _indicator_blocks

    items = np.asarray(items, dtype=np.int64)
    parts = []
    for x in _indicator_blocks(db, items):
        c = sparse.triu(x.T @ x, k=1).tocoo()
        parts.append((c.row.astype(np.int64), c.col.astype(np.int64), c.data.astype(np.int64)))
    return merge(parts)


def basis_bins(db: TransactionDB, bases: list[tuple[int, ...]]) -> Partial:
    """All bins of all bases in one vector (basis after basis), keyed by position."""
    from ..data.passes import basis_bin_counts

    return _one_key(np.concatenate(basis_bin_counts(db, bases)))


def itemset_supports(db: TransactionDB, items: np.ndarray, lengths: np.ndarray) -> Partial:
    """Supports of the itemsets given flat (``items``, ``lengths``), keyed by itemset index."""
    from ..evaluation.counting import SupportCounter

    if db.n_records == 0:
        return _EMPTY
    return _one_key(SupportCounter(db).count_flat(items, lengths))


def record_masks(db: TransactionDB) -> Partial:
    return _one_key(np.bincount(db.bitmasks()))


def range_child_masks(db: TransactionDB, rows: np.ndarray, lo: np.ndarray, hi: np.ndarray, span: np.ndarray
                      ) -> np.ndarray:
    """For each record in ``rows``: bit b set iff it has an item in ``[lo + b*span, lo + (b+1)*span)`` and
    below ``hi`` (per-row node bounds; as :func:`dprelease.setvalued.diffpart.child_masks`)."""
    rows = np.asarray(rows, dtype=np.int64)
    starts = db.offsets[rows]
    lens = db.offsets[rows + 1] - starts
    total = int(lens.sum())
    local_start = np.zeros(rows.size, dtype=np.int64)
    np.cumsum(lens[:-1], out=local_start[1:])
    idx = np.arange(total, dtype=np.int64) + np.repeat(starts - local_start, lens)
    items = db.items[idx].astype(np.int64)
    owner = np.repeat(np.arange(rows.size, dtype=np.int64), lens)
    rlo = lo[owner]
    inside = (items >= rlo) & (items < hi[owner])
    items, owner, rlo = items[inside], owner[inside], rlo[inside]
    child = (items - rlo) // span[owner]
    first = np.ones(child.size, dtype=bool)  # items are sorted within a record: repeats are adjacent
    first[1:] = (child[1:] != child[:-1]) | (owner[1:] != owner[:-1])
    weights = np.ldexp(1.0, child[first])  # distinct powers of two below 2^52: exact in float64
    return np.bincount(owner[first], weights=weights, minlength=rows.size).astype(np.int64)


def level_masks(db: TransactionDB, pids: np.ndarray, op_pid: np.ndarray, op_lo: np.ndarray, op_hi: np.ndarray,
                op_span: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rows, their pids, their child masks) for the records whose partition is one of ``op_pid`` (sorted)."""
    if op_pid.size == 0 or db.n_records == 0:
        z = np.zeros(0, np.int64)
        return z, z, z
    at = np.minimum(np.searchsorted(op_pid, pids), op_pid.size - 1)
    rows = np.flatnonzero(op_pid[at] == pids)
    j = at[rows]
    masks = range_child_masks(db, rows, op_lo[j], op_hi[j], op_span[j])
    return rows, pids[rows].astype(np.int64), masks


# --- tables (DiffGen) ------------------------------------------------------------------------------------


def _value_key(values: np.ndarray) -> np.ndarray:
    """float64 values as int64 keys (their bits; -0.0 is folded into 0.0 first): exact and reversible."""
    return (np.asarray(values, dtype=np.float64) + 0.0).view(np.int64)


def value_class_counts(group: np.ndarray, values: np.ndarray, y: np.ndarray, n_classes: int) -> Partial:
    """Records counted by (group, class) and value: keys ``(group * n_classes + class, value bits)``."""
    if y.size == 0:
        return _EMPTY
    k0 = np.asarray(group, dtype=np.int64) * n_classes + y
    k1 = _value_key(values)
    return merge([(k0, k1, np.ones(y.size, np.int64))])


def decode_value_counts(part: Partial, n_classes: int) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """A merged :func:`value_class_counts` partial as group -> (distinct values ascending, class counts)."""
    k0, k1, c = part
    out: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    if k0.size == 0:
        return out
    group, cls = np.divmod(k0, n_classes)
    values = k1.view(np.float64)
    for g in np.unique(group).tolist():
        sel = group == g
        u, inv = np.unique(values[sel], return_inverse=True)
        counts = np.zeros((u.size, n_classes), dtype=np.int64)
        np.add.at(counts, (inv, cls[sel]), c[sel])
        out[int(g)] = (u, counts)
    return out


def table_children(pids: np.ndarray, column: np.ndarray, leaves: np.ndarray, m: int,
                   child_of_leaf: np.ndarray | None, split: float | None, first: int
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rows in ``leaves``, their child index k, their new partition ``first + rank * m + k``)."""
    leaves = np.asarray(leaves, dtype=np.int64)
    if leaves.size == 0 or pids.size == 0:
        z = np.zeros(0, np.int64)
        return z, z, z
    order = np.argsort(leaves, kind="stable")
    sorted_leaves = leaves[order]
    at = np.minimum(np.searchsorted(sorted_leaves, pids), sorted_leaves.size - 1)
    rows = np.flatnonzero(sorted_leaves[at] == pids)
    rank = order[at[rows]]
    if child_of_leaf is not None:
        k = np.asarray(child_of_leaf, dtype=np.int64)[column[rows].astype(np.int64)]
    else:
        k = (column[rows] >= split).astype(np.int64)
    return rows, k, first + rank * m + k
