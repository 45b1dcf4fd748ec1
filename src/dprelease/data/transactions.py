"""Set-valued data held as CSR arrays: ``offsets`` (N+1) and sorted, distinct ``items`` per record."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["TransactionDB"]


@dataclass(frozen=True, eq=False)
class TransactionDB:
    """N records over item ids 0..n_items-1 (ids index the declared universe).

    Record r is ``items[offsets[r]:offsets[r+1]]``, sorted ascending, no repeats.
    """

    offsets: np.ndarray  # int64, shape (N+1,)
    items: np.ndarray  # int32, shape (nnz,)
    n_items: int
    _row_ids: list = field(default_factory=list, repr=False)  # lazy cache

    @classmethod
    def from_pairs(cls, rows: np.ndarray, items: np.ndarray, n_rows: int, n_items: int) -> "TransactionDB":
        """Build from (row, item) pairs in any order; duplicate pairs collapse to one."""
        rows = np.asarray(rows, dtype=np.int64)
        items = np.asarray(items, dtype=np.int64)
        key = rows * np.int64(n_items) + items
        if key.size > 1 and not bool((key[1:] > key[:-1]).all()):
            key = np.unique(key)  # sorts by row, then item; removes duplicate items in a line
        rows_u = key // n_items
        items_u = (key - rows_u * n_items).astype(np.int32)
        offsets = np.zeros(n_rows + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows_u, minlength=n_rows), out=offsets[1:])
        return cls(offsets, items_u, int(n_items))

    @classmethod
    def from_lists(cls, records: list[list[int]], n_items: int) -> "TransactionDB":
        """Build from Python lists of item ids (tests and small examples)."""
        lengths = np.fromiter((len(r) for r in records), dtype=np.int64, count=len(records))
        rows = np.repeat(np.arange(len(records), dtype=np.int64), lengths)
        flat = np.fromiter((i for r in records for i in r), dtype=np.int64, count=int(lengths.sum()))
        return cls.from_pairs(rows, flat, len(records), n_items)

    @property
    def n_records(self) -> int:
        return int(self.offsets.size - 1)

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def row_ids(self) -> np.ndarray:
        """Row index of every entry of ``items`` (cached)."""
        if not self._row_ids:
            self._row_ids.append(np.repeat(np.arange(self.n_records, dtype=np.int64), self.lengths))
        return self._row_ids[0]

    def bitmasks(self) -> np.ndarray:
        """Each record as an int64 bitmask over item ids (bit i set iff item i occurs; needs n_items <= 62)."""
        if self.n_items > 62:
            raise ValueError("bitmasks need a universe of at most 62 items")
        out = np.zeros(self.n_records, dtype=np.int64)
        # items are distinct within a record, so adding the bits is the same as or-ing them
        np.add.at(out, self.row_ids(), np.left_shift(np.int64(1), self.items.astype(np.int64)))
        return out

    def record(self, r: int) -> np.ndarray:
        return self.items[self.offsets[r] : self.offsets[r + 1]]

    def to_lists(self) -> list[list[int]]:
        return [self.record(r).tolist() for r in range(self.n_records)]

    def item_supports(self) -> np.ndarray:
        """Exact number of records that contain each item (non-private)."""
        return np.bincount(self.items, minlength=self.n_items).astype(np.int64)

    def subset(self, rows: np.ndarray) -> "TransactionDB":
        """The records at ``rows`` (in that order), as a new database over the same universe."""
        rows = np.asarray(rows, dtype=np.int64)
        lengths = self.offsets[rows + 1] - self.offsets[rows]
        offsets = np.zeros(rows.size + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        starts = np.repeat(self.offsets[rows] - offsets[:-1], lengths)
        idx = np.arange(offsets[-1], dtype=np.int64) + starts
        return TransactionDB(offsets, self.items[idx], self.n_items)

    @classmethod
    def concat(cls, parts: list["TransactionDB"]) -> "TransactionDB":
        if not parts:
            raise ValueError("nothing to concatenate")
        n_items = parts[0].n_items
        items = np.concatenate([p.items for p in parts])
        lengths = np.concatenate([p.lengths for p in parts])
        offsets = np.zeros(lengths.size + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        return cls(offsets, items, n_items)

    @classmethod
    def from_weighted_itemsets(cls, itemsets: list[np.ndarray], weights: np.ndarray, n_items: int) -> "TransactionDB":
        """Expand (itemset, multiplicity) pairs into records: ``weights[j]`` copies of ``itemsets[j]``."""
        weights = np.asarray(weights, dtype=np.int64)
        keep = [j for j in range(len(itemsets)) if weights[j] > 0 and len(itemsets[j]) > 0]
        if not keep:
            return cls(np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int32), n_items)
        sets = [np.asarray(itemsets[j], dtype=np.int32) for j in keep]
        w = weights[keep]
        lens = np.array([s.size for s in sets], dtype=np.int64)
        flat = np.concatenate(sets)
        set_starts = np.zeros(len(sets), dtype=np.int64)
        np.cumsum(lens[:-1], out=set_starts[1:])
        rec_lens = np.repeat(lens, w)
        rec_set = np.repeat(np.arange(len(sets)), w)
        offsets = np.zeros(rec_lens.size + 1, dtype=np.int64)
        np.cumsum(rec_lens, out=offsets[1:])
        pos_in_rec = np.arange(offsets[-1], dtype=np.int64) - np.repeat(offsets[:-1], rec_lens)
        idx = np.repeat(set_starts[rec_set], rec_lens) + pos_in_rec
        return cls(offsets, flat[idx], n_items)  # each itemset is already sorted
