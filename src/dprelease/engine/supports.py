"""Exact supports of itemsets over an in-memory database: the local engine's counting structures.

:class:`SupportCounter` answers many itemset-support queries at once (evaluation workloads, TF's sampled
candidates, the engine's :meth:`~dprelease.engine.base.TransactionData.itemset_supports`); :func:`bit_columns` and
:func:`and_supports` count a level-wise miner's candidates by AND-ing packed bit columns
(:class:`~dprelease.engine.local.LocalCandidates`). All exact and non-private: inputs of mechanisms, or of the
custodian's evaluation.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from ..data.transactions import TransactionDB, spans
from .kernels import stable_order

__all__ = ["SupportCounter", "itemset_supports", "bit_columns", "and_supports", "BIT_BLOCK_ROWS", "AND_BATCH_WORDS"]

_ZETA_MAX_ITEMS = 24
_MAX_CANDIDATES = 1 << 21  # (query, record) pairs held at once while intersecting
_QUERY_BATCH = 1 << 18  # query items sorted at once
# Dense queries: a query whose rarest item's support times _DENSE_SHARE passes the words of a bit column (the
# records / 64) is counted by AND-ing packed bit columns (one word op per 64 records and item) rather than by
# filtering its rarest item's record list (a binary search per candidate and item); the columns are built for
# the items such queries hold, up to _COLUMN_BYTES of them (past that, the record lists as before).
_DENSE_SHARE = 8
_COLUMN_BYTES = 1 << 28


def _item_lists(db: TransactionDB, supports: np.ndarray, listed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(start, rows): the sorted record ids of each ``listed`` item i are ``rows[start[i]:start[i+1]]`` (empty
    for the others). A counting sort filled block by block (``supports`` gives each list's size), so nothing
    but the lists themselves grows with the data."""
    sizes = np.where(listed, supports, 0)
    start = np.zeros(db.n_items + 1, dtype=np.int64)
    np.cumsum(sizes, out=start[1:])
    rows_out = np.empty(int(start[-1]), dtype=np.int32 if db.n_records < 2**31 else np.int64)
    fill = start[:-1].copy()  # next free slot of each list
    for lo, hi in db.record_blocks():
        a, b = int(db.offsets[lo]), int(db.offsets[hi])
        block = db.items[a:b]
        at = np.flatnonzero(listed[block])
        if at.size == 0:
            continue
        items = block[at]
        order = np.argsort(items, kind="stable")  # rows stay ascending within an item
        items = items[order]
        rows = np.searchsorted(db.offsets[lo : hi + 1] - a, at[order], side="right") - 1 + lo
        first = np.ones(items.size, dtype=bool)
        np.not_equal(items[1:], items[:-1], out=first[1:])
        group = np.flatnonzero(first)
        counts = np.diff(np.append(group, items.size))
        rank = np.arange(items.size) - np.repeat(group, counts)
        rows_out[fill[items] + rank] = rows
        fill[items[group]] += counts
    return start, rows_out


def _rarest_items(supports: np.ndarray, items: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """For the queries of two items or more (``items`` cut into runs of ``lengths``), the first of their items
    of least support: the item whose record list seeds a query's candidates. In batches of about
    ``_QUERY_BATCH`` items (the temporaries stay bounded however long the workload is)."""
    seeds = []
    ends = np.cumsum(lengths)
    q0 = 0
    while q0 < lengths.size:
        base = int(ends[q0 - 1]) if q0 else 0
        q1 = max(q0 + 1, int(np.searchsorted(ends, base + _QUERY_BATCH, side="right")))
        part = lengths[q0:q1]
        if bool((part >= 2).any()):
            its = items[base : int(ends[q1 - 1])].astype(np.int64)
            sup = supports[its]
            start = np.zeros(part.size, dtype=np.int64)
            np.cumsum(part[:-1], out=start[1:])
            owner = np.repeat(np.arange(part.size, dtype=np.int64), part)
            first = _first_rarest(sup, part, start, owner)
            seeds.append(np.unique(its[first[part[owner[first]] >= 2]]))
        q0 = q1
    return np.unique(np.concatenate(seeds)) if seeds else np.zeros(0, dtype=np.int64)


def _first_rarest(supports: np.ndarray, lengths: np.ndarray, start: np.ndarray, owner: np.ndarray) -> np.ndarray:
    """Per non-empty query, in query order, the flat position of its first item of least support (``supports``:
    the queries' items' supports, cut into runs of ``lengths`` starting at ``start``; ``owner``: each item's
    query)."""
    nonempty = lengths > 0
    lowest = np.zeros(lengths.size, dtype=supports.dtype)
    lowest[nonempty] = np.minimum.reduceat(supports, start[nonempty])
    at_min = np.flatnonzero(supports == lowest[owner])
    return at_min[np.r_[True, owner[at_min[1:]] != owner[at_min[:-1]]]] if at_min.size else at_min


def _has_item(db: TransactionDB, rows: np.ndarray, items: np.ndarray) -> np.ndarray:
    """Whether record ``rows[j]`` holds item ``items[j]``: a vectorised binary search in each sorted record, each
    step over the searches still open only (most records are short, a few very long)."""
    lo = db.offsets[rows]
    end = db.offsets[rows + 1]
    if lo.size == 0:
        return np.zeros(0, dtype=bool)
    hi = end.copy()
    open_ = np.flatnonzero(lo < hi)
    while open_.size:
        a, b = lo[open_], hi[open_]
        mid = (a + b) >> 1  # a <= mid < b <= end: a valid position
        less = db.items[mid] < items[open_]
        a = np.where(less, mid + 1, a)
        b = np.where(less, b, mid)
        lo[open_], hi[open_] = a, b
        open_ = open_[a < b]
    last = db.items.size - 1
    found: np.ndarray = (lo < end) & (db.items[np.minimum(lo, last)] == items)
    return found


class SupportCounter:
    """Answers many counting queries on one database, fast (exact supports; non-private).

    Up to 24 items: a superset-sum table over all 2^|I| itemsets (one lookup per query). Larger
    universes, all queries at once: each query starts from the record list of its rarest item (one
    counting sort of the items builds these lists), and the (query, record) candidates are filtered
    by its other items, rarest first, with a vectorised binary search in the sorted records.
    """

    def __init__(self, db: TransactionDB):
        self.n_items = db.n_items
        self.n_records = db.n_records
        self._table: np.ndarray | None
        if db.n_items <= _ZETA_MAX_ITEMS:
            table = np.bincount(db.bitmasks(), minlength=1 << db.n_items).astype(np.int64)
            for b in range(db.n_items):
                view = table.reshape(-1, 2, 1 << b)
                view[:, 0, :] += view[:, 1, :]
            self._table = table
        else:
            self._table = None
            self._db = db
            self._supports = db.item_supports()
            # record lists are built for the items that seed some query's candidates (its rarest item), on
            # demand (:meth:`prepare`): on kosarak-scale data these are a small part of the occurrences
            self._listed = np.zeros(db.n_items, dtype=bool)
            self._tid_start = np.zeros(db.n_items + 1, dtype=np.int64)
            self._tids = np.zeros(0, dtype=np.int32)
            # packed bit columns of the items of dense queries, built on demand (_dense_counts)
            self._words = -(-db.n_records // 64)
            self._column_of = np.full(db.n_items, -1, dtype=np.int64)
            self._columns = np.zeros((0, self._words), dtype=np.uint64)

    def prepare(self, queries: list[tuple[np.ndarray, np.ndarray]]) -> None:
        """Build, in one pass, the record lists that the query batches ``queries`` (each: items cut into runs
        of lengths, as :meth:`count_flat` takes them) will use; :meth:`count_flat` and :meth:`contains_many`
        build what is missing themselves."""
        if self._table is not None or not queries:
            return
        self._need_lists(np.unique(np.concatenate([
            _rarest_items(self._supports, np.asarray(items), np.asarray(lengths, dtype=np.int64))
            for items, lengths in queries])))

    def _need_lists(self, seeds: np.ndarray) -> None:
        if seeds.size == 0 or self._listed[seeds].all():
            return
        listed = self._listed.copy()
        listed[seeds] = True
        self._tids = np.zeros(0, dtype=np.int32)  # the old lists go before the new ones are built
        self._tid_start, self._tids = _item_lists(self._db, self._supports, listed)
        self._listed = listed

    def count(self, query: np.ndarray) -> int:
        return int(self.count_many([np.asarray(query, dtype=np.int64)])[0])

    def count_many(self, queries: list[np.ndarray]) -> np.ndarray:
        lengths = np.fromiter((np.size(q) for q in queries), dtype=np.int64, count=len(queries))
        flat = (np.concatenate([np.asarray(q, dtype=np.int64).ravel() for q in queries]) if queries
                else np.zeros(0, dtype=np.int64))
        return self.count_flat(flat, lengths)

    def count_flat(self, items: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """Supports of the queries ``items`` cut into runs of ``lengths`` (distinct items within a query; an
        empty query counts every record)."""
        items = np.asarray(items)
        if items.dtype.kind not in "iu":
            items = items.astype(np.int64)
        lengths = np.asarray(lengths, dtype=np.int64)
        n_q = lengths.size
        if n_q == 0:
            return np.zeros(0, dtype=np.int64)
        if self._table is not None:  # the items of a query are distinct, so adding their bits is or-ing them
            owner = np.repeat(np.arange(n_q, dtype=np.int64), lengths)
            masks = np.bincount(owner, weights=np.ldexp(1.0, items), minlength=n_q).astype(np.int64)
            return self._table[masks]
        out = np.zeros(n_q, dtype=np.int64)
        ends = np.cumsum(lengths)
        q0 = 0
        while q0 < n_q:  # batches of queries holding about _QUERY_BATCH items, to bound the temporaries
            base = int(ends[q0 - 1]) if q0 else 0
            q1 = max(q0 + 1, int(np.searchsorted(ends, base + _QUERY_BATCH, side="right")))
            part = lengths[q0:q1]
            out[q0:q1] = self._intersect(items[base : int(ends[q1 - 1])].astype(np.int64), part,
                                         np.repeat(np.arange(part.size, dtype=np.int64), part))
            q0 = q1
        return out

    def contains_many(self, queries: list[np.ndarray]) -> np.ndarray:
        """Whether each query is a subset of at least one record (support >= 1), without counting it.

        Same candidates as :meth:`count_flat` (the record list of the query's rarest item, filtered by its
        other items), but taken in growing chunks (16, 32, 64, ... records per query) and a query stops at its
        first hit. Released records that are generalized raw records hit in their first chunk, so this is far
        cheaper than exact supports when the rarest item is frequent (kosarak-scale data).
        """
        n_q = len(queries)
        if self._table is not None or n_q == 0:
            return self.count_many(queries) > 0
        lengths = np.fromiter((np.size(q) for q in queries), dtype=np.int64, count=n_q)
        items = (np.concatenate([np.asarray(q, dtype=np.int64).ravel() for q in queries]) if lengths.sum()
                 else np.zeros(0, dtype=np.int64))
        return self.contains_flat(items, lengths)

    def contains_flat(self, items: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """:meth:`contains_many` of the queries ``items`` cut into runs of ``lengths`` (distinct items within a
        query): no Python object per query."""
        items = np.asarray(items, dtype=np.int64)
        lengths = np.asarray(lengths, dtype=np.int64)
        n_q = lengths.size
        if self._table is not None or n_q == 0:
            return self.count_flat(items, lengths) > 0
        owner = np.repeat(np.arange(n_q, dtype=np.int64), lengths)
        supports = self._supports[items]
        order = np.lexsort((supports, owner))  # within each query, rarest item first
        items = items[order]
        start = np.zeros(n_q, dtype=np.int64)
        np.cumsum(lengths[:-1], out=start[1:])
        nonempty = lengths > 0
        rarest = np.zeros(n_q, dtype=np.int64)
        rarest[nonempty] = self._supports[items[start[nonempty]]]
        found = np.zeros(n_q, dtype=bool)
        found[~nonempty] = self.n_records > 0
        found[lengths == 1] = rarest[lengths == 1] > 0
        offset = np.zeros(n_q, dtype=np.int64)
        active = np.flatnonzero((lengths >= 2) & (rarest > 0))
        self._need_lists(items[start[active]])
        chunk = 16
        while active.size:
            take = np.minimum(chunk, rarest[active] - offset[active])
            edges = np.searchsorted(np.cumsum(take), np.arange(_MAX_CANDIDATES, int(take.sum()) + 1,
                                                                _MAX_CANDIDATES), side="right")
            for part in np.split(np.arange(active.size), np.unique(edges)):
                if part.size == 0:
                    continue
                batch, sizes = active[part], take[part]
                cand_q = np.repeat(batch, sizes)
                first = np.zeros(batch.size, dtype=np.int64)
                np.cumsum(sizes[:-1], out=first[1:])
                base = self._tid_start[items[start[batch]]] + offset[batch] - first
                cand_row = self._tids[np.repeat(base, sizes) + np.arange(cand_q.size)].astype(np.int64)
                k = 1
                while cand_q.size:
                    done = lengths[cand_q] <= k
                    if done.any():
                        found[cand_q[done]] = True
                        cand_q, cand_row = cand_q[~done], cand_row[~done]
                    if cand_q.size == 0:
                        break
                    hit = _has_item(self._db, cand_row, items[start[cand_q] + k])
                    cand_q, cand_row = cand_q[hit], cand_row[hit]
                    k += 1
            offset[active] += take
            active = active[~found[active] & (offset[active] < rarest[active])]
            chunk *= 2
        return found

    def _intersect(self, items: np.ndarray, lengths: np.ndarray, owner: np.ndarray) -> np.ndarray:
        n_q = lengths.size
        out = np.zeros(n_q, dtype=np.int64)
        out[lengths == 0] = self.n_records
        supports = self._supports[items]
        start = np.zeros(n_q, dtype=np.int64)
        np.cumsum(lengths[:-1], out=start[1:])
        nonempty = lengths > 0
        # Each query's rarest item moves to its front (its record list seeds the candidates); the other items
        # filter in their own order (any order gives the same counts; no sort needed).
        items, supports = items.copy(), supports.copy()
        first = _first_rarest(supports, lengths, start, owner)
        front = start[owner[first]]
        items[first], items[front] = items[front], items[first]
        supports[first], supports[front] = supports[front], supports[first]
        rarest = np.zeros(n_q, dtype=np.int64)
        rarest[nonempty] = supports[start[nonempty]]
        out[lengths == 1] = rarest[lengths == 1]
        work = np.flatnonzero((lengths >= 2) & (rarest > 0))
        dense = work[rarest[work] * _DENSE_SHARE > self._words]
        if dense.size and self._dense_counts(dense, items, lengths, start, out):
            work = work[rarest[work] * _DENSE_SHARE <= self._words]
        self._need_lists(items[start[work]])
        # batches of queries whose candidate lists together stay below _MAX_CANDIDATES
        edges = np.searchsorted(np.cumsum(rarest[work]), np.arange(_MAX_CANDIDATES, int(rarest[work].sum()) + 1,
                                                                   _MAX_CANDIDATES), side="right")
        for batch in np.split(work, np.unique(edges)):
            if batch.size == 0:
                continue
            sizes = rarest[batch]
            cand_q = np.repeat(batch, sizes)
            first = np.zeros(batch.size, dtype=np.int64)
            np.cumsum(sizes[:-1], out=first[1:])
            pos = np.repeat(self._tid_start[items[start[batch]]] - first, sizes) + np.arange(cand_q.size)
            cand_row = self._tids[pos].astype(np.int64)
            k = 1
            while cand_q.size:
                done = lengths[cand_q] <= k
                if done.any():
                    out += np.bincount(cand_q[done], minlength=n_q)
                    cand_q, cand_row = cand_q[~done], cand_row[~done]
                if cand_q.size == 0:
                    break
                hit = _has_item(self._db, cand_row, items[start[cand_q] + k])
                cand_q, cand_row = cand_q[hit], cand_row[hit]
                k += 1
        return out

    def _dense_counts(self, queries: np.ndarray, items: np.ndarray, lengths: np.ndarray, start: np.ndarray,
                      out: np.ndarray) -> bool:
        """Supports of ``queries`` (their items at ``items[start[q] : start[q] + lengths[q]]``) into ``out`` by
        AND-ing the items' packed bit columns and counting the bits; False (nothing done) when their columns
        would pass _COLUMN_BYTES."""
        flat = items[spans(start[queries], lengths[queries])]
        need = np.unique(flat)
        missing = need[self._column_of[need] < 0]
        if (self._columns.shape[0] + missing.size) * self._words * 8 > _COLUMN_BYTES:
            return False
        if missing.size:
            cols, _ = bit_columns(self._db, missing)
            self._column_of[missing] = self._columns.shape[0] + np.arange(missing.size)
            self._columns = np.concatenate([self._columns, cols])
        for L in np.unique(lengths[queries]).tolist():
            group = queries[lengths[queries] == L]
            index = self._column_of[items[start[group][:, None] + np.arange(L)[None, :]]]
            out[group] = and_rows_supports(self._columns, index)
        return True


def project(db: TransactionDB, items: np.ndarray, min_items: int = 1) -> TransactionDB:
    """The records holding at least ``min_items`` of ``items`` (sorted ascending), each reduced to those items
    and renumbered 0..len(items)-1 (in record order). An itemset of at least ``min_items`` of them has the
    same support here as in ``db``. Block by block: the temporaries are bounded by a block."""
    items = np.asarray(items, dtype=np.int64)
    local = np.full(db.n_items, -1, dtype=np.int32)
    local[items] = np.arange(items.size, dtype=np.int32)
    lengths, kept_items = [], []
    for lo, hi in db.record_blocks():
        a, b = int(db.offsets[lo]), int(db.offsets[hi])
        pos = local[db.items[a:b]]
        keep = pos >= 0
        kept_before = np.zeros(b - a + 1, dtype=np.int32 if b - a < 2**31 else np.int64)
        np.cumsum(keep, out=kept_before[1:])
        m = np.diff(kept_before[db.offsets[lo : hi + 1] - a])
        enough = m >= max(1, int(min_items))
        if min_items > 1:  # (with at most one: every kept entry's record is taken)
            keep &= np.repeat(enough, np.diff(db.offsets[lo : hi + 1]))
        lengths.append(m[enough])
        kept_items.append(pos[np.flatnonzero(keep)])  # (faster than a boolean index on long blocks)
    n = int(sum(x.size for x in lengths))
    offsets = np.zeros(n + 1, dtype=np.int64)
    if n:
        np.cumsum(np.concatenate(lengths), out=offsets[1:])
    flat = np.concatenate(kept_items) if kept_items else np.zeros(0, dtype=np.int32)
    return TransactionDB(offsets, flat.astype(np.int32, copy=False), int(items.size))


PAIR_CHUNK = 1 << 20  # pairs enumerated at once by pair_matrix (4 MB of int32 keys)


def pair_matrix(db: TransactionDB) -> np.ndarray:
    """Support of every pair of ``db``'s items (a small universe, e.g. :func:`project`'s): the symmetric
    (n_items x n_items) int64 matrix, diagonal = item supports. Records are taken by length L, each length's
    C(L, 2) pairs enumerated as one array (chunks of about ``PAIR_CHUNK``) and counted with one bincount: work
    is the number of pairs that occur."""
    m = db.n_items
    flat = np.zeros(m * m, dtype=np.int64)
    # 32-bit lengths and pair keys where they fit: the arrays of one value per record (lengths, their order) and
    # the chunks' temporaries are the peak of this function on millions of records
    narrow = np.int32 if m * m < 2**31 and db.items.size < 2**31 else np.int64
    lengths = db.lengths.astype(narrow)
    order = stable_order(lengths)
    bounds = np.flatnonzero(np.diff(lengths[order])) + 1
    for group in np.split(order, bounds):
        if group.size == 0 or lengths[group[0]] < 2:
            continue
        L = int(lengths[group[0]])
        iu, ju = np.triu_indices(L, 1)
        step = max(1, PAIR_CHUNK // iu.size)
        for lo in range(0, group.size, step):
            starts = db.offsets[group[lo : lo + step]]
            held = db.items[starts[:, None] + np.arange(L)].astype(narrow, copy=False)  # (records, L), ascending
            flat += np.bincount((held[:, iu] * m + held[:, ju]).ravel(), minlength=m * m)
    upper = flat.reshape(m, m)
    out = upper + upper.T
    # the item supports a chunk of entries at a time: bincount casts 32-bit ids to a 64-bit copy of its input
    diagonal = np.zeros(m, dtype=np.int64)
    for lo in range(0, db.items.size, PAIR_CHUNK):
        diagonal += np.bincount(db.items[lo : lo + PAIR_CHUNK], minlength=m)
    out[np.diag_indices(m)] = diagonal
    return out


BIT_BLOCK_ROWS = 1 << 16  # at most this many records per block of bit_columns (a multiple of 64)


def bit_columns(db: TransactionDB, items: np.ndarray, min_items: int = 0) -> tuple[np.ndarray, dict[int, int]]:
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
        width = -(-(base % 64 + n_here) // 64)
        out[:, base // 64 : base // 64 + width] |= _packed_words(which, rows, items.size, width)
        base += n_here
    return out, {int(i): j for j, i in enumerate(items.tolist())}


def _packed_words(which: np.ndarray, rows: np.ndarray, n_rows: int, width: int) -> np.ndarray:
    """(n_rows, width) uint64 words with bit ``rows[e] % 64`` of word ``rows[e] // 64`` of row ``which[e]`` set:
    one flag per (row, bit) set, then packed eight to a byte, least significant bit first, and read as
    little-endian words (byte i of a word holds its bits 8i .. 8i + 7)."""
    flags = np.zeros((n_rows, width * 64), dtype=bool)
    flags[which, rows] = True
    return np.packbits(flags, axis=1, bitorder="little").view("<u8").astype(np.uint64, copy=False)


def _block_hits(db: TransactionDB, local: np.ndarray, step: int
                ) -> Iterator[tuple[int, int, np.ndarray, np.ndarray]]:
    """Per block of ``step`` records: (lo, hi, the column row of each entry of a column item, its record - lo)."""
    for lo in range(0, db.n_records, step):
        hi = min(lo + step, db.n_records)
        a, b = int(db.offsets[lo]), int(db.offsets[hi])
        which = local[db.items[a:b]]
        kept = np.flatnonzero(which >= 0)  # (an index: faster than a boolean mask on long blocks)
        rows = np.repeat(np.arange(hi - lo, dtype=np.int64), np.diff(db.offsets[lo : hi + 1]))[kept]  # row in block
        yield lo, hi, which[kept], rows


AND_BATCH_WORDS = 1 << 20  # words per buffer of and_supports (8 MB each, two buffers and their popcounts)


def and_supports(gen_bits: np.ndarray, columns: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """popcount(gen_bits[g] & columns[c]) for each (g, c) row of ``pairs`` (int64), batch by batch into two
    reused buffers of about ``AND_BATCH_WORDS`` words: no temporary grows with the number of records beyond
    a batch's rows."""
    return _and_popcounts([gen_bits, columns], pairs)


def and_rows_supports(columns: np.ndarray, index: np.ndarray) -> np.ndarray:
    """popcount(columns[index[q, 0]] & ... & columns[index[q, L - 1]]) for each row q of ``index`` ((q, L) int64,
    L >= 1): :func:`and_supports` over any number of columns, in the same reused buffers."""
    return _and_popcounts([columns] * index.shape[1], index)


def _and_popcounts(sources: list[np.ndarray], index: np.ndarray) -> np.ndarray:
    """popcount(sources[0][index[q, 0]] & ... & sources[L-1][index[q, L-1]]) per row q, batch by batch into
    reused buffers of about ``AND_BATCH_WORDS`` words (no temporary grows beyond a batch's rows)."""
    words = sources[0].shape[1] if sources else 0
    supports = np.zeros(index.shape[0], dtype=np.int64)
    if index.shape[0] == 0 or words == 0:
        return supports
    batch = max(1, min(index.shape[0], AND_BATCH_WORDS // words))
    acc = np.empty((batch, words), dtype=np.uint64)
    other = np.empty((batch, words), dtype=np.uint64)
    ones = np.empty((batch, words), dtype=np.uint8)
    for lo in range(0, index.shape[0], batch):
        m = min(batch, index.shape[0] - lo)
        # mode "clip": the rows are valid, and the default "raise" would copy through a temporary of out's size
        np.take(sources[0], index[lo : lo + m, 0], axis=0, out=acc[:m], mode="clip")
        for k in range(1, len(sources)):
            np.take(sources[k], index[lo : lo + m, k], axis=0, out=other[:m], mode="clip")
            np.bitwise_and(acc[:m], other[:m], out=acc[:m])
        np.bitwise_count(acc[:m], out=ones[:m])
        ones[:m].sum(axis=1, dtype=np.int64, out=supports[lo : lo + m])
    return supports


def itemset_supports(db: TransactionDB, itemsets: list[tuple[int, ...]]) -> np.ndarray:
    """Exact support of each given itemset (an empty itemset counts every record)."""
    if not itemsets:
        return np.zeros(0, dtype=np.int64)
    return SupportCounter(db).count_many([np.asarray(s, dtype=np.int64) for s in itemsets])
