"""Set-valued data held as CSR arrays: ``offsets`` (N+1) and sorted, distinct ``items`` per record."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import overload

import numpy as np

__all__ = ["TransactionDB", "CSRBuilder", "GrowableArray", "canonical_records", "ItemsetRows", "spans"]

_BLOCK_ENTRIES = 1 << 20  # items per block where a pass would otherwise copy all items to int64


def spans(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The positions ``starts[i], ..., starts[i] + lengths[i] - 1`` of every span i, one span after another
    (int64): the gather index of CSR rows, or of any runs, without a Python loop."""
    starts = np.asarray(starts, dtype=np.int64)
    lengths = np.asarray(lengths, dtype=np.int64)
    firsts = np.cumsum(lengths) - lengths
    return np.repeat(starts - firsts, lengths) + np.arange(int(lengths.sum()), dtype=np.int64)


@dataclass(frozen=True, eq=False)
class TransactionDB:
    """N records over item ids 0..n_items-1 (ids index the declared universe).

    Record r is ``items[offsets[r]:offsets[r+1]]``, sorted ascending, no repeats.
    """

    offsets: np.ndarray  # int64, shape (N+1,)
    items: np.ndarray  # int32, shape (nnz,)
    n_items: int

    @classmethod
    def from_pairs(cls, rows: np.ndarray, items: np.ndarray, n_rows: int, n_items: int) -> "TransactionDB":
        """Build from (row, item) pairs in any order; duplicate pairs collapse to one."""
        rows = np.asarray(rows, dtype=np.int64)
        items = np.asarray(items, dtype=np.int64)
        key = rows * np.int64(n_items) + items
        if key.size > 1 and not bool((key[1:] > key[:-1]).all()):
            key = np.sort(key)  # by row, then item; then drop duplicate items in a line (np.unique, but faster)
            keep = np.ones(key.size, dtype=bool)
            np.not_equal(key[1:], key[:-1], out=keep[1:])
            key = key[keep]
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
        """Row index of every entry of ``items`` (int32 when N < 2^31; computed on each call, not cached,
        so it costs memory only while a caller uses it)."""
        dtype = np.int32 if self.n_records < 2**31 else np.int64
        return np.repeat(np.arange(self.n_records, dtype=dtype), self.lengths)

    def rows_of(self, positions: np.ndarray) -> np.ndarray:
        """Row index of the entries at ``positions`` of ``items`` (without building :meth:`row_ids`)."""
        return np.searchsorted(self.offsets, positions, side="right") - 1

    def record_blocks(self, entries: int = _BLOCK_ENTRIES):
        """(first row, last row + 1) of consecutive blocks of records holding about ``entries`` items each."""
        if self.n_records == 0:
            return
        from .. import progress  # each block counts toward the running step's progress bar (stderr, terminals)

        cuts = np.searchsorted(self.offsets, np.arange(entries, int(self.offsets[-1]), entries), side="right") - 1
        bounds = np.unique(np.concatenate([[0], cuts, [self.n_records]]))
        for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
            yield lo, hi
            progress.advance(hi - lo)

    def bitmasks(self) -> np.ndarray:
        """Each record as an int64 bitmask over item ids (bit i set iff item i occurs; needs n_items <= 62)."""
        if self.n_items > 62:
            raise ValueError("bitmasks need a universe of at most 62 items")
        out = np.zeros(self.n_records, dtype=np.int64)
        lengths = self.lengths
        for lo, hi in self.record_blocks():
            a, b = int(self.offsets[lo]), int(self.offsets[hi])
            if a == b:
                continue
            bits = np.left_shift(np.int64(1), self.items[a:b].astype(np.int64))
            full = np.flatnonzero(lengths[lo:hi] > 0)
            # items are distinct within a record, so OR-ing the bits of a record is the same as adding them
            out[lo + full] = np.bitwise_or.reduceat(bits, self.offsets[lo + full] - a)
        return out

    def record(self, r: int) -> np.ndarray:
        return self.items[self.offsets[r] : self.offsets[r + 1]]

    def to_lists(self) -> list[list[int]]:
        return [self.record(r).tolist() for r in range(self.n_records)]

    def item_supports(self) -> np.ndarray:
        """Exact number of records that contain each item (non-private)."""
        out = np.zeros(self.n_items, dtype=np.int64)
        for lo in range(0, self.items.size, _BLOCK_ENTRIES):  # bincount copies its input to intp: in blocks
            out += np.bincount(self.items[lo : lo + _BLOCK_ENTRIES], minlength=self.n_items)
        return out

    def view(self, lo: int, hi: int) -> "TransactionDB":
        """Records ``lo .. hi - 1`` as a database sharing this one's item array (no copy of the items)."""
        a, b = int(self.offsets[lo]), int(self.offsets[hi])
        return TransactionDB(self.offsets[lo : hi + 1] - a, self.items[a:b], self.n_items)

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
    def from_weighted_itemsets(cls, itemsets: Sequence[np.ndarray], weights: np.ndarray, n_items: int
                               ) -> "TransactionDB":
        """Expand (itemset, multiplicity) pairs into records: ``weights[j]`` copies of ``itemsets[j]``."""
        weights = np.asarray(weights, dtype=np.int64)
        if isinstance(itemsets, ItemsetRows):  # one flat array already: no object per itemset
            lengths = np.diff(itemsets.offsets)
            w = np.where(lengths > 0, np.maximum(weights, 0), 0)
            rec_lens = np.repeat(lengths, w)
            offsets = np.zeros(rec_lens.size + 1, dtype=np.int64)
            np.cumsum(rec_lens, out=offsets[1:])
            idx = spans(np.repeat(itemsets.offsets[:-1], w), rec_lens)
            return cls(offsets, itemsets.flat[idx].astype(np.int32), n_items)
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


# --- building a database chunk by chunk (the chunked reader, generators, later engines) ---------------------

class GrowableArray:
    """An append-only 1-d numpy array grown in place by ``realloc``.

    Collecting chunk arrays and concatenating them at the end, or growing by allocate-and-copy, holds
    the data twice at the copy. ``ndarray.resize`` reallocates instead; for large blocks the C allocator
    (glibc) moves the pages with ``mremap`` rather than copying them, and each append grows the array by
    exactly what it adds, so no slack is ever touched: the peak is the data itself. (Where realloc does
    copy, the peak is transiently twice the array, as before.)
    """

    def __init__(self, dtype: np.dtype | type, prefix: np.ndarray | None = None):
        self._data = np.array([] if prefix is None else prefix, dtype=dtype)
        self.size = int(self._data.size)

    @property
    def dtype(self) -> np.dtype:
        return self._data.dtype

    def append(self, values: np.ndarray) -> None:
        values = np.asarray(values)
        if values.size == 0:
            return
        end = self.size + values.size
        self._data.resize(end, refcheck=False)  # no view of _data outlives a statement
        self._data[self.size : end] = values
        self.size = end

    def last(self) -> int | None:
        """The last element appended (None when empty)."""
        return None if self.size == 0 else self._data[self.size - 1].item()

    def map_inplace(self, fn, block: int = 1 << 22) -> None:
        """Replace the elements block by block with ``fn(block)`` (same length; cast to this dtype)."""
        for lo in range(0, self.size, block):
            part = self._data[lo : lo + block]
            part[...] = fn(part)

    def finish(self, dtype: np.dtype | type | None = None) -> np.ndarray:
        """The elements as one array (converted to ``dtype`` if given); this buffer is left empty."""
        out, self._data = self._data, np.zeros(0, dtype=self._data.dtype)
        self.size = 0
        if dtype is not None and np.dtype(dtype) != out.dtype:
            out = out.astype(dtype)
        return out


def canonical_records(lengths: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sort the values of each record and drop repeats (records are consecutive runs of ``lengths``).

    Returns (lengths, values) unchanged when every record is already strictly increasing (the common
    case: one vectorised check); otherwise sorts by (record, value) and removes repeated pairs, as
    :meth:`TransactionDB.from_pairs` does. Lengths stay >= 1 for records that had a value.
    """
    n = values.size
    if n <= 1:
        return lengths, values
    ok = values[1:] > values[:-1]
    if lengths.size > 1:
        ok[np.cumsum(lengths[:-1]) - 1] = True  # a record may start below the previous one's end
    if ok.all():
        return lengths, values
    rows = np.repeat(np.arange(lengths.size, dtype=np.int64), lengths)
    lo, hi = int(values.min()), int(values.max())
    span = hi - lo + 1
    if span * lengths.size < 2**62:
        key = rows * np.int64(span) + (values.astype(np.int64) - lo)
        key.sort()
        keep = np.ones(n, dtype=bool)
        np.not_equal(key[1:], key[:-1], out=keep[1:])
        key = key[keep]
        rows = key // span
        sorted_values = (key - rows * span + lo).astype(values.dtype)
    else:  # values too spread for one int64 key
        order = np.lexsort((values, rows))
        v, rows = values[order], rows[order]
        keep = np.ones(n, dtype=bool)
        keep[1:] = (v[1:] != v[:-1]) | (rows[1:] != rows[:-1])
        sorted_values, rows = v[keep], rows[keep]
    return np.bincount(rows, minlength=lengths.size).astype(np.int64), sorted_values


class CSRBuilder:
    """Accumulates records chunk by chunk into the CSR arrays of a :class:`TransactionDB`.

    ``add(lengths, items)`` takes consecutive records (``lengths`` > 0, items already sorted and distinct
    within each record); ``finish(n_items)`` returns int64 offsets and int32 items. The arrays grow in
    place (:class:`GrowableArray`), so the peak is the final arrays plus the chunk being added.
    """

    def __init__(self, item_dtype: np.dtype | type = np.int32):
        self.items = GrowableArray(item_dtype)
        self._offsets = GrowableArray(np.int64, prefix=np.zeros(1, dtype=np.int64))

    @property
    def n_records(self) -> int:
        return self._offsets.size - 1

    @property
    def n_entries(self) -> int:
        return self.items.size

    def add(self, lengths: np.ndarray, items: np.ndarray) -> None:
        if lengths.size == 0:
            return
        base = self._offsets.last()
        self._offsets.append(np.cumsum(lengths, dtype=np.int64) + np.int64(base))
        self.items.append(items)

    def widen(self) -> None:
        """Hold items as int64 from now on (raw labels that do not fit int32)."""
        self.items = GrowableArray(np.int64, prefix=self.items.finish())

    def finish(self, n_items: int) -> TransactionDB:
        offsets = self._offsets.finish()
        items = self.items.finish(dtype=np.int32)
        return TransactionDB(offsets, items, int(n_items))


class ItemsetRows(Sequence[np.ndarray]):
    """Itemsets held as one flat array cut by ``offsets`` (CSR): itemset i is ``flat[offsets[i]:offsets[i + 1]]``.

    A sequence of int64 arrays like a list of them (indexing gives a view, iteration one view at a time), for
    releases of about N distinct records, where one Python object per itemset would cost more than the data;
    the release layer and the writer work on ``flat`` and ``offsets`` directly."""

    __slots__ = ("flat", "offsets")

    def __init__(self, flat: np.ndarray, offsets: np.ndarray):
        self.flat = np.asarray(flat)  # int32 or int64 item ids, as given (no copy)
        if self.flat.dtype.kind not in "iu":
            self.flat = self.flat.astype(np.int64)
        self.offsets = np.asarray(offsets, dtype=np.int64)
        if self.offsets.ndim != 1 or self.offsets.size < 1 or self.offsets[0] != 0 \
                or self.offsets[-1] != self.flat.size:
            raise ValueError("offsets must run from 0 to the number of items")

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def __len__(self) -> int:
        return int(self.offsets.size - 1)

    @overload
    def __getitem__(self, i: int) -> np.ndarray: ...

    @overload
    def __getitem__(self, i: slice) -> list[np.ndarray]: ...

    def __getitem__(self, i: int | slice) -> np.ndarray | list[np.ndarray]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        n = len(self)
        j = int(i) + n if int(i) < 0 else int(i)
        if not 0 <= j < n:
            raise IndexError("itemset index out of range")
        return self.flat[int(self.offsets[j]) : int(self.offsets[j + 1])]

    def __iter__(self) -> Iterator[np.ndarray]:
        bounds = self.offsets.tolist()
        for a, b in zip(bounds[:-1], bounds[1:]):
            yield self.flat[a:b]
