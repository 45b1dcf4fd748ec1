"""How much of a release is real: the share of released records that occur in the raw data.

A release can score well on the counting workload while holding only records nobody has
(test-and-generate cells that passed on noise). Two views, each over
released records (with multiplicity) and over distinct released itemsets:

* **exact**: the released itemset equals at least one raw record;
* **contained**: the released itemset is a subset of at least one raw record (support >= 1).
  A generalized record (a real record with items dropped) is contained but may not be exact.

Custodian-side only: it reads the raw data (never publish the numbers).
"""

from __future__ import annotations

import numpy as np

from ..data.transactions import TransactionDB
from .counting import SupportCounter

__all__ = ["occurrence_share", "set_hashes"]

_HASH_SEED = 0x5EED_0CC0
_RAW_BLOCK_ENTRIES = 1 << 23  # raw items per block (its counter: ~60 MB)


def set_hashes(db: TransactionDB, keys: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """A 128-bit hash of every record *as a set* (two uint64 columns): sums of random item keys mod 2^64.

    Order-free and exact up to a collision probability of about N^2 / 2^128.
    """
    if keys is None:
        keys = _item_keys(db.n_items)
    out = np.zeros((db.n_records, 2), dtype=np.uint64)
    # Block by block of records (no per-occurrence array over the whole database): a record's sum is the
    # difference of two prefix sums of its items' keys, all mod 2^64 (unsigned arithmetic wraps).
    for lo, hi in db.record_blocks():
        a, b = int(db.offsets[lo]), int(db.offsets[hi])
        ends = db.offsets[lo : hi + 1] - a
        items = db.items[a:b]
        prefix = np.zeros(b - a + 1, dtype=np.uint64)
        for c in range(2):
            np.cumsum(keys[c][items], out=prefix[1:])
            np.subtract(prefix[ends[1:]], prefix[ends[:-1]], out=out[lo:hi, c])
    return out


def _item_keys(n_items: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(_HASH_SEED)
    return (rng.integers(0, 2**64 - 1, n_items, dtype=np.uint64, endpoint=True),
            rng.integers(0, 2**64 - 1, n_items, dtype=np.uint64, endpoint=True))


def _as_void(h: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(h).view(np.dtype((np.void, 16))).ravel()


def _raw_blocks(db: TransactionDB):
    """The raw database as consecutive sub-databases of about ``_RAW_BLOCK_ENTRIES`` items each (views)."""
    for lo, hi in db.record_blocks(_RAW_BLOCK_ENTRIES):
        yield db.view(lo, hi)


def occurrence_share(raw: TransactionDB, released: TransactionDB, *,
                     raw_counter: SupportCounter | None = None) -> dict[str, object]:
    """Shares of released records (and distinct itemsets) that occur exactly in / are contained in the raw data.

    The raw data is read in blocks of records: each block's set hashes are looked up among the released
    ones, and (without ``raw_counter``) the released itemsets not yet found contained are searched in the
    block; so no per-record or per-occurrence array of the whole raw database is made.
    """
    if raw.n_items != released.n_items:
        raise ValueError("the raw and released data use different universes")
    n_rel = released.n_records
    if n_rel == 0:
        return {"released_records": 0, "distinct_released": 0, "records_exact": None, "records_contained": None,
                "distinct_exact": None, "distinct_contained": None}
    keys = _item_keys(raw.n_items)
    rel_h = _as_void(set_hashes(released, keys))
    uniq, first, mult = np.unique(rel_h, return_index=True, return_counts=True)
    del rel_h
    exact = np.zeros(uniq.size, dtype=bool)
    for block in _raw_blocks(raw):
        h = _as_void(set_hashes(block, keys))
        at = np.minimum(np.searchsorted(uniq, h), uniq.size - 1)
        exact[at[uniq[at] == h]] = True
    distinct = released.subset(first)  # the distinct released itemsets, as flat arrays
    nonempty = distinct.lengths > 0
    contained = exact & nonempty  # equal to a raw record: a subset of it
    pending = np.flatnonzero(nonempty & ~exact)
    queries = distinct.subset(pending)
    del distinct
    if pending.size and raw_counter is not None:
        contained[pending] = raw_counter.contains_flat(queries.items, queries.lengths)
    elif pending.size:
        for block in _raw_blocks(raw):  # stops at the first hit: a found itemset is not searched again
            hit = SupportCounter(block).contains_flat(queries.items, queries.lengths)
            contained[pending[hit]] = True
            pending = pending[~hit]
            if not pending.size:
                break
            queries = queries.subset(np.flatnonzero(~hit))
    return {
        "released_records": int(n_rel),
        "distinct_released": int(uniq.size),
        "records_exact": float(mult[exact].sum() / n_rel),
        "records_contained": float(mult[contained].sum() / n_rel),
        "distinct_exact": float(exact.mean()),
        "distinct_contained": float(contained.mean()),
    }
