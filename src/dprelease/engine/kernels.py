"""Exact aggregates over one block of records, as (key, count) arrays: what an executor computes.

Each kernel takes a block of records as a :class:`~dprelease.data.transactions.TransactionDB` (the Spark
engine builds one per Arrow batch, zero-copy from the list column) and returns partial counts keyed by one
or two int64 keys; partial counts of disjoint blocks add up to the whole data's (every aggregate here is a
sum over records). :func:`merge` adds partials with equal keys and sorts them by key. The local engine
runs the same computations over the whole database (:mod:`dprelease.data.passes`).

Below the kernels, the record-level helpers the passes are built from and the algorithms use directly on
in-memory records: each record's bit mask over ranked items (:func:`bitmasks.item_masks`, DiffPart-Prefix), its
child mask under a taxonomy node (:func:`child_masks_range`, DiffPart) and the grouping of records by mask
(:func:`group_by_mask`). They live here, below the algorithms, so that an executor runs them without importing
an algorithm module.
"""

from __future__ import annotations

import numpy as np

from ..data.transactions import TransactionDB
from . import bitmasks

__all__ = ["Partial", "merge", "item_supports", "length_histogram", "pair_supports", "pair_counts", "basis_bins",
           "itemset_supports", "record_masks", "child_masks_per_row", "level_masks", "dense", "weight_digits",
           "exact_sums", "nearest_floats", "bounded_item_digits", "bounded_item_digit_table", "bounded_pair_digits",
           "projected_length_histogram", "projected_length_histogram_of", "projection", "bounded_pair_digits_of",
           "prefix_cells", "hidden_rank_digits", "stable_order",
           "WEIGHT_SHIFT", "UNIT_SHIFT", "child_masks_range", "group_by_mask", "value_class_counts",
           "decode_value_counts", "table_children", "value_key", "prefix_hidden_digits"]

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


def stable_order(values: np.ndarray) -> np.ndarray:
    """``np.argsort(values, kind="stable")`` of non-negative integers; on 16-bit copies when they fit (numpy
    sorts those by radix, in linear time: record lengths, counts per record)."""
    values = np.asarray(values)
    if values.size and values.dtype.kind in "iu" and 0 <= int(values.min()) and int(values.max()) < 1 << 16:
        return np.argsort(values.astype(np.uint16), kind="stable")
    return np.argsort(values, kind="stable")


# --- exact sums of weights (PrivBasis's bounded selection, DiffPart-Prefix's item order) ---------------------
#
# A record's weight w = min(1, l/len) is a float64 in [2^-40, 1], so w * 2^WEIGHT_SHIFT is an integer below 2^94:
# its four base-2^24 digits are summed as integers per key (exact, whatever the partitioning and the order of
# the additions), and :func:`exact_sums` turns each key's integer total into the float64 nearest to the true sum.
# Both engines run this path, so their weighted sums agree bit for bit.

WEIGHT_SHIFT = 93
_DIGIT_BITS = 24
_N_DIGITS = 4  # 4 * 24 = 96 bits >= WEIGHT_SHIFT + 1
_DIGIT_MASK = np.uint64((1 << _DIGIT_BITS) - 1)
_MAX_BLOCK = 1 << 28  # records per block: a digit sum of a block stays below 2^52 (exact in float64)
UNIT_SHIFT = WEIGHT_SHIFT - _DIGIT_BITS * (_N_DIGITS - 1)  # a weight of 1 is digit 3 = 2^UNIT_SHIFT


def weight_digits(w: np.ndarray) -> np.ndarray:
    """(len(w), 4) int64: the base-2^24 digits of the integer ``w * 2^WEIGHT_SHIFT`` (w in [2^-40, 1])."""
    w = np.asarray(w, dtype=np.float64)
    mant, ex = np.frexp(w)
    m = np.ldexp(mant, 53).astype(np.uint64)  # w = m * 2^(ex - 53), m < 2^53
    shift = ex.astype(np.int64) - 53 + WEIGHT_SHIFT  # w * 2^S = m << shift
    if w.size and not (bool((w > 0).all()) and bool((w <= 1).all()) and int(shift.min()) >= 0):
        raise ValueError("weights must lie in [2^-40, 1]")
    out = np.empty((w.size, _N_DIGITS), dtype=np.int64)
    for j in range(_N_DIGITS):
        r = _DIGIT_BITS * j - shift  # the bit of m where digit j starts (negative: below m's lowest bit)
        right = m >> np.clip(r, 0, 63).astype(np.uint64)
        left = m << np.clip(-r, 0, 63).astype(np.uint64)  # wraps past bit 63; only its low 24 bits are kept
        digit = np.where(r >= 0, np.where(r < 64, right, 0), np.where(-r < _DIGIT_BITS, left, 0))
        out[:, j] = (digit.astype(np.uint64) & _DIGIT_MASK).astype(np.int64)
    return out


def exact_sums(part: Partial, size: int) -> np.ndarray:
    """A merged digit partial (key, digit, digit sum) as the float64 sums of ``size`` keys, each the float
    nearest to its exact total (ties to even, as Python's exact integer division rounds); keys absent sum to 0."""
    out = np.zeros(size, dtype=np.float64)
    key, digit, total = part
    if key.size == 0:
        return out
    keys, at = np.unique(key, return_inverse=True)
    table = np.zeros((keys.size, _N_DIGITS), dtype=np.int64)
    np.add.at(table, (at, digit), total)
    out[keys] = nearest_floats(table)
    return out


_TOP_LIMIT = 1 << 55  # a normalised top digit below this keeps the total under 2^127 (two uint64 words)


def nearest_floats(table: np.ndarray) -> np.ndarray:
    """Per row of base-2^24 digit sums (int64 >= 0; digit j weighs 2^(24 j)), the float64 nearest to
    total / 2^WEIGHT_SHIFT, ties to even: the value Python's ``int / int`` gives, computed on arrays.

    The carries are propagated so that the total is one 128-bit integer (hi, lo); its 64 highest bits, with a
    sticky bit for the bits shifted out, are converted by numpy's uint64 -> float64 cast (correctly rounded,
    which the tests check against Python's integers), then scaled by a power of two (exact). Rows whose top
    digit would not fit take Python's exact division."""
    t = np.asarray(table, dtype=np.int64).astype(np.uint64)
    if t.size and bool((np.asarray(table) < 0).any()):
        raise ValueError("digit sums must be >= 0")
    for j in range(_N_DIGITS - 1):  # normalise: digits 0..2 in [0, 2^24), the carries go up
        t[:, j + 1] += t[:, j] >> np.uint64(_DIGIT_BITS)
        t[:, j] &= _DIGIT_MASK
    d0, d1, d2, d3 = (t[:, j] for j in range(_N_DIGITS))
    huge = d3 >= np.uint64(_TOP_LIMIT)
    # total = d3 * 2^72 + d2 * 2^48 + d1 * 2^24 + d0 = hi * 2^64 + lo
    hi = (d3 << np.uint64(8)) | (d2 >> np.uint64(16))
    lo = ((d2 & np.uint64(0xFFFF)) << np.uint64(48)) | (d1 << np.uint64(24)) | d0
    s = np.zeros(hi.shape, dtype=np.uint64)  # bit length of hi (0..63)
    h = hi.copy()
    for b in (32, 16, 8, 4, 2, 1):
        big = (h >> np.uint64(b)) != 0
        s[big] += np.uint64(b)
        h[big] >>= np.uint64(b)
    s += (h != 0).astype(np.uint64)
    top = (hi << ((np.uint64(64) - s) & np.uint64(63))) | (lo >> s)  # s = 0: hi = 0 and top = lo
    sticky = (lo & ((np.uint64(1) << s) - np.uint64(1))) != 0  # bits below the 64 kept ones
    top |= sticky.astype(np.uint64)  # below the rounding bit: decides only between neighbours, as it should
    out: np.ndarray = np.ldexp(top.astype(np.float64), s.astype(np.int64) - WEIGHT_SHIFT)
    if bool(huge.any()):
        scale = 1 << WEIGHT_SHIFT
        rows = np.asarray(table, dtype=np.int64)[huge].tolist()
        out[huge] = [sum(int(v) << (_DIGIT_BITS * j) for j, v in enumerate(r)) / scale for r in rows]
    return out


def _digit_partial(dense_sums: list[np.ndarray]) -> Partial:
    """Per digit j, a dense vector of digit sums (exact integers held as float64 or int64) -> (key, j, sum),
    sorted by (key, j) as :func:`merge` leaves it (built in that order: no sort)."""
    table = np.stack([np.asarray(x).astype(np.int64) for x in dense_sums], axis=1)  # (keys, digits)
    keys = np.flatnonzero(table.any(axis=1))
    block = table[keys]
    nonzero = block.reshape(-1) != 0
    k0 = np.repeat(keys.astype(np.int64), len(dense_sums))[nonzero]
    k1 = np.tile(np.arange(len(dense_sums), dtype=np.int64), keys.size)[nonzero]
    return k0, k1, block.reshape(-1)[nonzero]


def bounded_item_digits(db: TransactionDB, ell: int) -> Partial:
    """Item sums where record t adds min(1, ell/|t|) to each of its items, as exact digit sums (keyed item, digit)."""
    if db.n_records == 0:
        return _EMPTY
    table = bounded_item_digit_table(db, ell)
    return _digit_partial([table[:, j] for j in range(_N_DIGITS)])


def bounded_item_digit_table(db: TransactionDB, ell: int) -> np.ndarray:
    """:func:`bounded_item_digits` as a dense (n_items, 4) int64 table of digit sums: tables of disjoint blocks
    add up (exact integers), which is how the local engine sums its blocks without sorting keyed partials."""
    sums = np.zeros((db.n_items, _N_DIGITS), dtype=np.int64)
    if db.n_records == 0:
        return sums
    if db.n_records > _MAX_BLOCK:
        raise ValueError("block too large for exact digit sums")
    lengths = db.lengths
    long_rec = lengths > ell  # weight ell/|t| < 1; the others add 1, i.e. digits (0, 0, 0, 2^21)
    every = bool(long_rec.all())
    if every:  # (a block of long records only: no split of the entries)
        items = db.items
    else:
        whole = np.repeat(long_rec, lengths)
        sums[:, _N_DIGITS - 1] = np.bincount(db.items[~whole], minlength=db.n_items).astype(np.int64) << UNIT_SHIFT
        if not long_rec.any():
            return sums
        items = db.items[np.flatnonzero(whole)]
    # a weight depends on the record's length only: count the long records' items per (item, length), then
    # weigh each length's count by its digits (exact integers: a count <= the block's records < 2^28)
    long_len = lengths if every else lengths[long_rec]
    present = np.bincount(long_len) > 0
    values = np.flatnonzero(present)
    at = (np.cumsum(present) - 1)[long_len]  # each long record's length, as a position in values
    digits = weight_digits(float(ell) / values.astype(np.float64))
    if db.n_items * values.size <= _DENSE_CELLS:
        cell = items * values.size + np.repeat(at, long_len)
        per_length = np.bincount(cell, minlength=db.n_items * values.size).reshape(db.n_items, values.size)
        sums += per_length @ digits
    else:  # too many (item, length) cells for a dense table: one weighted count per non-zero digit
        owner = np.repeat(at, long_len)
        for j in range(_N_DIGITS):
            if digits[:, j].any():
                weights = digits[:, j].astype(np.float64)[owner]
                sums[:, j] += np.bincount(items, weights=weights, minlength=db.n_items).astype(np.int64)
    return sums


_DENSE_CELLS = 1 << 22  # (item, length) cells of one block counted in a dense table (32 MB of int64)


def _projected(db: TransactionDB, items_sorted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The position in ``items_sorted`` of every occurrence of those items (in record order), and each record's
    count m of them (from a running count at the record offsets: no per-occurrence row ids)."""
    local = np.full(db.n_items, -1, dtype=np.int64)
    local[np.asarray(items_sorted, dtype=np.int64)] = np.arange(len(items_sorted))
    pos = local[db.items]
    keep = pos >= 0
    kept_before = np.zeros(pos.size + 1, dtype=np.int64)
    np.cumsum(keep, out=kept_before[1:])
    return pos[np.flatnonzero(keep)], np.diff(kept_before[db.offsets - db.offsets[0]])


def projected_length_histogram(db: TransactionDB, items_sorted: np.ndarray) -> Partial:
    """Records per m = |t & items| >= 1, keyed by m."""
    if db.n_records == 0:
        return _EMPTY
    return projected_length_histogram_of(_projected(db, items_sorted)[1])


def projected_length_histogram_of(m: np.ndarray) -> Partial:
    """:func:`projected_length_histogram` from the records' m (a block's :func:`projection`)."""
    if m.size == 0:
        return _EMPTY
    hist = np.bincount(m)
    hist[0] = 0
    return _one_key(hist)


def projection(db: TransactionDB, items_sorted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A block's projection onto ``items_sorted``: (the position of each occurrence of those items, record
    order; each record's count m of them). What both pair passes of PrivBasis start from."""
    return _projected(db, items_sorted)


def bounded_pair_digits(db: TransactionDB, items_sorted: np.ndarray, ell: int) -> Partial:
    """Pair sums (pairs of ``items_sorted`` in ``np.triu_indices`` order) where record t adds
    min(1, ell/C(m, 2)) to each of its pairs, m = |t & items|: exact digit sums keyed (pair index, digit)."""
    if db.n_records == 0 or len(items_sorted) < 2:
        return _EMPTY
    if db.n_records > _MAX_BLOCK:
        raise ValueError("block too large for exact digit sums")
    cols, m = _projected(db, items_sorted)
    return bounded_pair_digits_of(cols, m, len(items_sorted), ell)


def bounded_pair_digits_of(cols: np.ndarray, m: np.ndarray, size: int, ell: int) -> Partial:
    """:func:`bounded_pair_digits` from a block's :func:`projection` onto ``size`` items."""
    if size < 2 or not (m >= 2).any():  # no record with a pair of the items
        return _EMPTY
    # a record's weight depends on its m only: per value of m, the pairs of those records are enumerated as one
    # (records, C(m, 2)) array and counted, then each count is multiplied by the digits of that m's weight
    # (each term < 2^16 * 2^24 per block of 65,536 records, their sum over the values of m < 2^63: exact)
    first = np.cumsum(m) - m  # each record's first entry among the projected ones (entries in record order)
    n_pairs = size * (size - 1) // 2
    sums = [np.zeros(n_pairs, dtype=np.int64) for _ in range(_N_DIGITS)]
    by_m = stable_order(m)
    bounds = np.flatnonzero(np.diff(m[by_m])) + 1
    values = m[by_m[np.r_[0, bounds]]]
    digits = weight_digits(np.minimum(1.0, float(ell) / np.maximum(values * (values - 1) / 2.0, 1.0)))
    for group, M, digit in zip(np.split(by_m, bounds), values.tolist(), digits):
        if M < 2:
            continue
        iu, ju = np.triu_indices(M, 1)
        count = np.zeros(n_pairs, dtype=np.int64)
        step = max(1, (1 << 22) // iu.size)
        for lo in range(0, group.size, step):
            held = cols[first[group[lo : lo + step]][:, None] + np.arange(M)]  # (records, M), ascending
            a_pos, b_pos = held[:, iu], held[:, ju]
            count += np.bincount((a_pos * size - a_pos * (a_pos + 1) // 2 + (b_pos - a_pos - 1)).ravel(),
                                 minlength=n_pairs)  # np.triu_indices order
        for j in range(_N_DIGITS):
            sums[j] += count * int(digit[j])
    return _digit_partial(sums)


def prefix_cells(db: TransactionDB, rank: np.ndarray, patterns: np.ndarray, order: np.ndarray, level: int) -> Partial:
    """DiffPart-Prefix, one level of the trie: the non-empty records whose ranks below ``level`` equal one of the
    kept cells' ``patterns`` ((cells, words) masks, sorted by :func:`bitmasks.row_keys`; ``order[i]`` is
    pattern i's position among the cells), counted by (that position, the record's bit ``level``)."""
    nonempty = np.flatnonzero(db.lengths > 0)
    if nonempty.size == 0 or patterns.shape[0] == 0:
        return _EMPTY
    words = patterns.shape[1]
    masks = bitmasks.item_masks(db, rank, words)[nonempty]
    keys = bitmasks.row_keys(masks & bitmasks.low_bits(np.full(1, level), words))
    table = bitmasks.row_keys(patterns)
    at = np.minimum(np.searchsorted(table, keys), table.size - 1)
    found = table[at] == keys
    pos = np.asarray(order, dtype=np.int64)[at[found]]
    bit = bitmasks.bit_column(masks[found], level)
    return merge([(pos, bit, np.ones(pos.size, np.int64))])


def prefix_hidden_digits(db: TransactionDB, rank: np.ndarray, child: np.ndarray, is_class: np.ndarray,
                         level: np.ndarray, ell: int) -> Partial:
    """DiffPart-Prefix's hidden ranked items: each record follows a public trie (``child[node] = (without, with)``,
    ``is_class``, ``level``) to its class; the ranked items it holds at ranks >= the class's level (those its
    released pattern drops) each get min(1, ell/h), h their number. Exact digit sums keyed (rank, digit)."""
    if db.n_records == 0:
        return _EMPTY
    if db.n_records > _MAX_BLOCK:
        raise ValueError("block too large for exact digit sums")
    m = int(np.count_nonzero(rank >= 0))
    words = bitmasks.n_words(m)
    masks = bitmasks.item_masks(db, rank, words)
    node = bitmasks.trie_leaves(masks, child, is_class)
    return hidden_rank_digits(masks, level[node], m, ell)


def hidden_rank_digits(masks: np.ndarray, levels: np.ndarray, m: int, ell: int) -> Partial:
    """The sums of :func:`prefix_hidden_digits` for records given as their ``masks`` ((records, words) over the
    m ranks) and their classes' ``levels``: ranks below a record's level are known to its pattern, the others
    hidden; each hidden rank gets min(1, ell/h), h the record's hidden ranks. At most ``_MAX_BLOCK`` records."""
    if masks.shape[0] > _MAX_BLOCK:
        raise ValueError("block too large for exact digit sums")
    hidden = masks & ~bitmasks.low_bits(levels, masks.shape[1])
    many = np.flatnonzero(hidden.any(axis=1))
    if many.size == 0:
        return _EMPTY
    hidden = hidden[many]
    h = bitmasks.popcount(hidden).astype(np.float64)
    digits = weight_digits(np.minimum(1.0, float(ell) / h))
    bits = bitmasks.mask_bits(hidden, m).astype(np.int64)
    return _digit_partial([digits[:, j] @ bits for j in range(_N_DIGITS)])


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
    from .supports import SupportCounter

    if db.n_records == 0:
        return _EMPTY
    return _one_key(SupportCounter(db).count_flat(items, lengths))


def record_masks(db: TransactionDB) -> Partial:
    return _one_key(np.bincount(db.bitmasks()))


def child_masks_per_row(db: TransactionDB, rows: np.ndarray, lo: np.ndarray, hi: np.ndarray, span: np.ndarray
                        ) -> np.ndarray:
    """For each record in ``rows``: bit b set iff it has an item in ``[lo + b*span, lo + (b+1)*span)`` and
    below ``hi`` (per-row node bounds; :func:`child_masks_range` with one node per row)."""
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
    masks = child_masks_per_row(db, rows, op_lo[j], op_hi[j], op_span[j])
    return rows, pids[rows].astype(np.int64), masks


# --- tables (DiffGen) ------------------------------------------------------------------------------------


def value_key(values: np.ndarray) -> np.ndarray:
    """float64 values as int64 keys (their bits; -0.0 is folded into 0.0 first): exact and reversible."""
    return (np.asarray(values, dtype=np.float64) + 0.0).view(np.int64)


def value_class_counts(group: np.ndarray, values: np.ndarray, y: np.ndarray, n_classes: int) -> Partial:
    """Records counted by (group, class) and value: keys ``(group * n_classes + class, value bits)``."""
    if y.size == 0:
        return _EMPTY
    k0 = np.asarray(group, dtype=np.int64) * n_classes + y
    k1 = value_key(values)
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


# --- record-level helpers (DiffPart's partitions, DiffPart-Prefix's trie) --------------------------------


def child_masks_range(db: TransactionDB, rows: np.ndarray, lo: int, hi: int, span: int,
                      block: int = 1 << 16) -> np.ndarray:
    """For each record in ``rows``: bit b set iff the record has an item in ``[lo + b*span, lo + (b+1)*span)``
    below ``hi``, i.e. under child b of the taxonomy node covering item ids ``[lo, hi)``
    (:class:`~dprelease.data.taxonomy.ContextFreeTaxonomy`).

    Computed ``block`` rows at a time, so the per-item temporaries stay small however many rows there are."""
    out = np.zeros(rows.size, dtype=np.int64)
    for b0 in range(0, rows.size, block):
        part = rows[b0 : b0 + block]
        starts = db.offsets[part]
        lens = db.offsets[part + 1] - starts
        if int(part[-1]) - int(part[0]) + 1 == part.size:  # consecutive rows (e.g. the root): one slice
            items = db.items[int(starts[0]) : int(starts[0]) + int(lens.sum())]
        else:
            local_start = np.zeros(part.size, dtype=np.int64)
            np.cumsum(lens[:-1], out=local_start[1:])
            idx = np.arange(int(lens.sum()), dtype=np.int64) + np.repeat(starts - local_start, lens)
            items = db.items[idx]
        owner = np.repeat(np.arange(part.size, dtype=np.int64), lens)
        inside = (items >= lo) & (items < hi)
        items = items[inside]
        owner = owner[inside]
        child = (items - lo) // span
        # items are sorted within a record, so repeated (owner, child) pairs are adjacent
        first = np.ones(child.size, dtype=bool)
        first[1:] = (child[1:] != child[:-1]) | (owner[1:] != owner[:-1])
        weights = np.ldexp(1.0, child[first])  # distinct powers of two below 2^52: exact in float64
        out[b0 : b0 + part.size] = np.bincount(owner[first], weights=weights, minlength=part.size).astype(np.int64)
    return out


_GROUP_CHUNK = 1 << 20  # records per chunk of group_by_mask's row gather


def group_by_mask(masks: np.ndarray, rows: np.ndarray | None = None
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray]:
    """The distinct ``masks`` (ascending) and their record counts; with ``rows`` (one per mask), also the rows
    reordered so that those of distinct mask j are ``rows_sorted[bounds[j]:bounds[j+1]]`` (ascending within a
    mask). ``masks`` (int64, >= 0) is a work array: it is overwritten.

    One sort of the masks: when they fit in 31 bits (up to 31 children) each becomes the key
    ``mask << 32 | position``, sorted in place (8 bytes per record beside ``rows``); otherwise a stable argsort
    (about 24). ``np.unique(..., return_inverse=True)`` and a second sort of the inverse held about 40."""
    n = masks.size
    rows_sorted: np.ndarray | None
    if rows is None:
        masks.sort()
        ordered, rows_sorted = masks, None
    elif n < 2**32 and (n == 0 or int(masks.max()) < 2**31):
        np.left_shift(masks, 32, out=masks)
        masks |= np.arange(n, dtype=np.int64)
        masks.sort()
        rows_sorted = np.empty_like(rows)
        for lo in range(0, n, _GROUP_CHUNK):  # positions chunk by chunk: no second 8-byte array per record
            rows_sorted[lo : lo + _GROUP_CHUNK] = rows[masks[lo : lo + _GROUP_CHUNK] & np.int64(0xFFFFFFFF)]
        ordered = np.right_shift(masks, 32, out=masks)
    else:
        order = np.argsort(masks, kind="stable")
        ordered, rows_sorted = masks[order], rows[order]
        del order
    start = np.ones(ordered.size, dtype=bool)
    np.not_equal(ordered[1:], ordered[:-1], out=start[1:])
    bounds = np.append(np.flatnonzero(start), ordered.size)
    return ordered[bounds[:-1]], np.diff(bounds), rows_sorted, bounds
