"""Baskets that keep their shape: give generalized records back the items a prefix release dropped.

DiffPart-Prefix releases a record as its *generalized* form: the class's prefix pattern over the frequent
items F, every item of rank >= the class's level and every item outside F dropped. On basket data that
shortens the records four-fold (retail: 2.5 items released against 10.3 raw), so a data user who studies
basket sizes, or any item outside the first few dozen, sees a different world.

This module restores the shape from one paid-for statistic and post-processing:

1. **The length histogram** (one mechanism, sensitivity 1): the number of non-empty records per length bin
   (:func:`length_edges`: public bins, exact lengths up to ``EXACT_LENGTHS``, then about 1.5 x wider bins up to
   the universe size), plus discrete Laplace noise. Adding or removing a record changes one bin by 1.
2. **Post-processing** (no budget), of that histogram, the class counts and the noisy weighted item supports
   the item order already paid for:

   * :func:`length_distribution`: the noisy bins clipped at 0, bins below ``ln(#bins)`` noise scales dropped
     (at most about half a bin is expected to pass on noise alone), each bin's mass spread over its lengths;
   * :func:`target_lengths`: every released record gets a target length >= its pattern's length, the joint
     (pattern length, target length) table fitted to both margins (the release's records per pattern
     length, the noisy length distribution) by iterative proportional fitting on the cells L >= k;
   * :func:`item_deficits`: per item, how many occurrences the release still lacks: its noisy weighted
     support corrected for the weighting min(1, l/|t|) (the ratio of occurrences to weighted occurrences
     of the noisy length distribution), minus its occurrences in the released patterns; items outside F
     whose noisy support is below the selection cutoff share the rest of the occurrences in proportion to
     their clipped noisy supports;
   * :func:`fill_records`: each record draws its missing items, without repetition, from the items its
     class does not know (ranks >= its level, and every item outside F), in proportion to the deficits
     still open; classes are filled deepest level first, so the shallow ones take what only they can.

The draws of step 2 use the release's noise source (the OpenDP-safe samplers in secure mode). They protect
nothing -- any function of noisy values is as private as the values -- but a fill from a fixed seed would
make every released copy of a class identical.
"""

from __future__ import annotations

import math

import numpy as np

from ..data.transactions import ItemsetRows, spans
from ..engine import bitmasks
from ..privacy import BudgetScope, NoiseSource, noisy_counts
from ..release.setvalued import canonical_distinct_rows, take_rows

__all__ = ["EXACT_LENGTHS", "length_edges", "binned_lengths", "noisy_length_bins", "length_distribution",
           "target_lengths", "item_deficits", "fill_records", "shaped_release"]

EXACT_LENGTHS = 64  # lengths 1..64 have a bin each; longer ones share bins about 1.5x wider each
_IPF_ROUNDS = 200
_FILL_ROUNDS = 12
_FEW_CANDIDATES = 512  # up to this many candidate items, exact sampling without repetition (Gumbel keys)
_GUMBEL_CELLS = 1 << 22  # records x candidates per chunk of Gumbel keys


def length_edges(n_items: int) -> np.ndarray:
    """Public length bins for a universe of ``n_items``: bin b holds lengths edges[b] .. edges[b + 1] - 1."""
    top = max(int(n_items), 1)
    edges = list(range(1, min(top, EXACT_LENGTHS) + 1))
    lo = EXACT_LENGTHS + 1
    while lo <= top:
        edges.append(lo)
        lo += max(1, lo // 2)
    edges.append(top + 1)
    return np.asarray(edges, dtype=np.int64)


def binned_lengths(lengths: np.ndarray, counts: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Exact records per bin from a length histogram (lengths that occur, their counts); length 0 is left out."""
    lengths = np.asarray(lengths, dtype=np.int64)
    counts = np.asarray(counts, dtype=np.int64)
    keep = lengths > 0
    b = np.searchsorted(edges, lengths[keep], side="right") - 1
    return np.bincount(b, weights=counts[keep], minlength=edges.size - 1).astype(np.int64)


def noisy_length_bins(lengths: np.ndarray, counts: np.ndarray, edges: np.ndarray, epsilon: float, *,
                      scope: BudgetScope, noise: NoiseSource) -> np.ndarray:
    """The mechanism of this module: records per length bin plus discrete Laplace(1/epsilon) (sensitivity 1:
    a record is in one bin)."""
    exact = binned_lengths(lengths, counts, edges)
    return noisy_counts(exact, epsilon, scope=scope, noise=noise, label="record length histogram")


def length_distribution(noisy_bins: np.ndarray, edges: np.ndarray, epsilon: float) -> np.ndarray:
    """Post-processing: expected records per length 0..max (index = length; index 0 stays 0).

    A bin whose noisy count passes tau = ln(#bins)/epsilon keeps it (at most about half a bin is expected to
    pass on noise alone); consecutive positive bins below it are pooled until their sum passes
    tau * sqrt(#pooled) (the sum's noise grows as the square root), so a long tail of sparse lengths is kept as a
    whole; a bin at or below 0 ends a run, and what never passes is dropped. Each bin's (or pool's) mass is spread evenly over its lengths."""
    n_bins = int(noisy_bins.size)
    tau = math.log(max(n_bins, 2)) / epsilon
    width = np.diff(edges).astype(np.float64)
    per_length = np.zeros(n_bins)
    start = 0
    for b in range(n_bins):
        if noisy_bins[b] >= tau:  # a bin that passes alone stands alone; the run before it is dropped
            per_length[b] = noisy_bins[b] / width[b]
            start = b + 1
            continue
        if noisy_bins[b] <= 0:  # a run of sparse lengths ends at a bin that looks empty (dropped with it)
            start = b + 1
            continue
        pooled = float(noisy_bins[start : b + 1].sum())
        if pooled >= tau * math.sqrt(b + 1 - start):
            per_length[start : b + 1] = pooled / width[start : b + 1].sum()
            start = b + 1
    if not (per_length.sum() > 0):
        return np.zeros(1)
    last = int(np.flatnonzero(per_length)[-1])
    out = np.zeros(int(edges[last + 1]), dtype=np.float64)
    out[int(edges[0]):] = np.repeat(per_length[: last + 1], np.diff(edges)[: last + 1])
    return out


def target_lengths(pattern_lengths: np.ndarray, counts: np.ndarray, dist: np.ndarray) -> np.ndarray:
    """Post-processing: the records of each pattern length k = 0..K (``counts`` per k) spread over target
    lengths L >= max(k, 1), fitted to the length distribution ``dist`` (index = length) by iterative
    proportional fitting; returns a (K + 1, Lmax + 1) table of whole records whose row k sums to counts[k]."""
    k_max = int(pattern_lengths.max(initial=0))
    rows = np.bincount(pattern_lengths, weights=counts, minlength=k_max + 1)
    width = max(dist.size, k_max + 1)
    col = np.zeros(width)
    col[: dist.size] = dist
    if col.sum() > 0:
        col *= rows.sum() / col.sum()
    k = np.arange(k_max + 1)[:, None]
    length = np.arange(width)[None, :]
    allowed = length >= np.maximum(k, 1)
    m = np.where(allowed, col[None, :], 0.0)
    own = np.zeros_like(m)  # a record may always keep its own length: every row has some support
    own[np.arange(k_max + 1), np.maximum(np.arange(k_max + 1), 1)] = 1e-9 * max(float(col.max()), 1.0)
    m = m + own
    for _ in range(_IPF_ROUNDS):
        m *= (rows / np.maximum(m.sum(axis=1), 1e-300))[:, None]
        colsum = m.sum(axis=0)
        scale = np.where(colsum > 0, col / np.maximum(colsum, 1e-300), 1.0)
        m *= np.where(col > 0, scale, 1.0)[None, :]
    m *= (rows / np.maximum(m.sum(axis=1), 1e-300))[:, None]
    from .prefixpart import apportion

    return np.stack([apportion(int(rows[i]), m[i]) for i in range(k_max + 1)])


def item_deficits(known_weight: np.ndarray, F: np.ndarray, noisy_support: np.ndarray, dist: np.ndarray,
                  n_released: int, record_bound: int, cutoff: float) -> np.ndarray:
    """Post-processing: per item, the weighted occurrences the released records still lack (float, >= 0).

    Weighted as the noisy supports are: a record of length L counts min(1, l/L) (l = ``record_bound``).
    ``known_weight``: per item, the weights of the released records whose pattern holds it (their target
    lengths). The noisy supports are scaled from the histogram's total to ``n_released`` records. Items outside F
    whose noisy support is below ``cutoff`` are not told apart from noise: they share the weighted occurrences the
    distribution ``dist`` (records per length) asks for beyond the other items', in proportion to their clipped
    noisy supports."""
    n_items = noisy_support.size
    lengths = np.arange(dist.size, dtype=np.float64)
    n_dist = float(dist.sum())
    if n_dist <= 0 or n_released <= 0:
        return np.zeros(n_items)
    to_release = n_released / n_dist
    support = np.clip(noisy_support, 0.0, None) * to_release
    signal = noisy_support >= cutoff
    signal[F] = True
    deficit = np.where(signal, np.maximum(support - known_weight, 0.0), 0.0)
    total = float((dist * np.minimum(lengths, float(record_bound))).sum()) * to_release
    rest = max(0.0, total - float(np.where(signal, np.maximum(support, known_weight), 0.0).sum()))
    tail = ~signal
    if tail.any() and rest > 0:
        w = np.where(tail, np.clip(noisy_support, 0.0, None), 0.0)
        if not (w.sum() > 0):
            w = tail.astype(np.float64)
        deficit += rest * w / w.sum()
    return deficit


def _merged_unique(held: np.ndarray, new: np.ndarray) -> np.ndarray:
    """``np.unique`` of ``held`` (sorted, distinct) and ``new``: the sorted new keys appended, one stable sort
    (a merge of two sorted runs), adjacent repeats dropped. The same array, without unique's hashing."""
    keys = np.concatenate([held, np.sort(new)])
    keys.sort(kind="stable")
    return keys[np.concatenate([[True], keys[1:] != keys[:-1]])] if keys.size else keys


def _draw_distinct(need: np.ndarray, weights: np.ndarray, n_items: int, noise: NoiseSource
                   ) -> tuple[np.ndarray, np.ndarray]:
    """need[r] distinct items for each record r (at most the number of items of positive weight), drawn
    without repetition in proportion to ``weights``: (record, item) pairs. Few candidates: Gumbel keys over
    every candidate, the need[r] largest kept (exact successive sampling); many: rounds of draws with
    repetition, duplicates dropped (a record whose rounds run short keeps what it got)."""
    cand = np.flatnonzero(weights > 0)
    need = np.minimum(need, cand.size)
    if cand.size <= _FEW_CANDIDATES:
        return _draw_gumbel(need, np.log(weights[cand]), cand, noise)
    cdf = np.cumsum(weights)
    cdf /= cdf[-1]
    guide = _guide_table(cdf)
    bounds = _bounded(cdf)
    done_keys: list[np.ndarray] = []
    active = np.flatnonzero(need > 0)
    held = np.zeros(0, dtype=np.int64)  # keys (record * n_items + item) of the active records
    have = np.zeros(need.size, dtype=np.int64)  # items held per record
    for _ in range(_FILL_ROUNDS):
        rec = np.repeat(active, need[active] - have[active])
        if rec.size == 0:
            break
        items = np.minimum(_inverse_cdf(cdf, guide, noise.uniform(rec.size), bounds), n_items - 1)
        held = _merged_unique(held, rec * n_items + items)
        row = held // n_items
        have = np.bincount(row, minlength=need.size)
        full = have >= need
        finished = full[row]  # records with all their items leave the working set
        done_keys.append(held[finished])
        held = held[~finished]
        active = active[~full[active]]
    keys = np.concatenate([*done_keys, held])
    return keys // n_items, keys % n_items


def _guide_table(cdf: np.ndarray) -> np.ndarray:
    """About ``np.searchsorted(cdf, b / B, side="right")`` for b < B = cdf.size (the entries below each bucket
    edge), by counting the entries per bucket: a first guess that :func:`_inverse_cdf` checks, so a rounding at
    a bucket edge costs a search, never a wrong draw."""
    buckets = cdf.size
    # entry i is <= b / B iff ceil(cdf[i] B) <= b: count the entries per ceiling, then add up
    per_bucket = np.bincount(np.minimum(np.ceil(cdf * buckets).astype(np.int64), buckets), minlength=buckets + 1)
    return np.cumsum(per_bucket[:buckets])


def _bounded(cdf: np.ndarray) -> np.ndarray:
    """``cdf`` between -inf and +inf: entry j + 1 is cdf[j], so j answers u iff bounds[j] <= u < bounds[j + 1]."""
    return np.concatenate([[-np.inf], cdf, [np.inf]])


def _inverse_cdf(cdf: np.ndarray, guide: np.ndarray, u: np.ndarray, bounds: np.ndarray | None = None
                 ) -> np.ndarray:
    """``np.searchsorted(cdf, u, side="right")`` (the number of entries <= u, for u in [0, 1) and ``cdf``
    non-decreasing up to 1), looked up in a guide table: ``guide[b]`` is (about) the answer at b / B
    (B = cdf.size, :func:`_guide_table`), so the answer at u is guide[floor(u B)] or a little above. Both first
    guesses are checked against the defining inequalities and only the draws that fail them are searched, so
    the result is exactly searchsorted's; heavy items span whole buckets, so nearly every draw is settled by one
    or two lookups. ``bounds``: :func:`_bounded` of ``cdf``, made once by a caller that looks up many times."""
    b = np.minimum((u * guide.size).astype(np.int64), guide.size - 1)
    j = guide[b]
    if bounds is None:
        bounds = _bounded(cdf)  # j is right iff bounds[j] <= u < bounds[j + 1]
    for _ in range(2):
        low = bounds[j] > u  # j is too far (a rounding of u * B)
        high = bounds[j + 1] <= u
        if not (high.any() or low.any()):
            return j
        j = j + (high & ~low)
    bad = np.flatnonzero((bounds[j] > u) | (bounds[j + 1] <= u))
    j[bad] = np.searchsorted(cdf, u[bad], side="right")
    return j


def _draw_gumbel(need: np.ndarray, log_w: np.ndarray, cand: np.ndarray, noise: NoiseSource
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Successive sampling without repetition by Gumbel keys (log weight + Gumbel noise, the need[r] largest),
    records in chunks of bounded size."""
    out_r, out_i = [], []
    step = max(1, _GUMBEL_CELLS // max(cand.size, 1))
    for lo in range(0, need.size, step):
        n = need[lo : lo + step]
        u = noise.uniform(n.size * cand.size).reshape(n.size, cand.size)
        keys = log_w[None, :] - np.log(-np.log(u))
        order = np.argsort(-keys, axis=1)
        take = np.arange(cand.size)[None, :] < n[:, None]
        rows, pos = np.nonzero(take)
        out_r.append(lo + rows)
        out_i.append(cand[order[rows, pos]])
    if not out_r:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.concatenate(out_r).astype(np.int64), np.concatenate(out_i).astype(np.int64)


def fill_records(levels: np.ndarray, need: np.ndarray, weight: np.ndarray, rank: np.ndarray,
                 deficit: np.ndarray, noise: NoiseSource, raw_unit: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Post-processing: the items each record gets, as (record, item) pairs.

    Record r (its class stopped at ``levels[r]``) needs ``need[r]`` more items, drawn without repetition from
    the items its class does not know (rank >= its level, or outside F: ``rank`` -1) in proportion to the
    ``deficit`` still open; deepest levels first, each drawn item's deficit reduced by the record's ``weight``."""
    n_items = deficit.size
    deficit = deficit.astype(np.float64).copy()
    small = np.int32 if max(levels.size, n_items) < 2**31 else np.int64
    out_r: list[np.ndarray] = []
    out_i: list[np.ndarray] = []
    wanting = np.flatnonzero(need > 0)
    by_level = wanting[np.argsort(levels[wanting], kind="stable")]  # each level's records in ascending order
    group_levels, starts = np.unique(levels[by_level], return_index=True)
    ends = np.append(starts[1:], by_level.size)
    for g, lo, hi in zip(group_levels[::-1].tolist(), starts[::-1].tolist(), ends[::-1].tolist()):
        recs = by_level[lo:hi]
        allowed = (rank < 0) | (rank >= g)
        n_allowed = int(allowed.sum())
        if n_allowed == 0:
            continue
        w = np.where(allowed, deficit, 0.0)
        # a small floor on every candidate: where the deficits are closed, the lengths still ask for items
        w = np.where(allowed, w + 1e-6 * max(float(w.max()), 1.0), 0.0)
        want = np.minimum(need[recs], n_allowed)
        r, i = _draw_distinct(want, w, n_items, noise)
        used = np.where(raw_unit[i], 1.0, weight[recs[r]])
        out_r.append(recs[r].astype(small))  # the parts held until the end: in the smallest dtype that fits
        out_i.append(i.astype(small))
        deficit = np.maximum(deficit - np.bincount(i, weights=used, minlength=n_items), 0.0)
    if not out_r:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.concatenate(out_r), np.concatenate(out_i)


def shaped_release(patterns: np.ndarray, counts: np.ndarray, levels: np.ndarray, F: np.ndarray,
                   noisy_support: np.ndarray, noisy_bins: np.ndarray, edges: np.ndarray, eps_lengths: float, *,
                   record_bound: int, cutoff: float, noise: NoiseSource, hidden_f: np.ndarray | None = None
                   ) -> tuple[ItemsetRows, np.ndarray] | None:
    """Post-processing of the released classes (``patterns``: (classes, words) bit masks over ``F``, noisy
    ``counts`` > 0, the ``levels`` they stopped at), the noisy length bins and the noisy weighted item supports:
    the filled records as distinct itemsets and their multiplicities in canonical order (:func:`_distinct_records`),
    or None when the noisy length histogram holds nothing (then the classes are released as they are)."""
    dist = length_distribution(noisy_bins, edges, eps_lengths)
    counts = np.asarray(counts, dtype=np.int64)
    n_rel = int(counts.sum())
    if not (dist.sum() > 0) or n_rel <= 0:
        return None
    n_items = int(noisy_support.size)
    m = int(F.size)
    bits = bitmasks.mask_bits(patterns, m)
    k = bits.sum(axis=1).astype(np.int64)
    node_of, rank_of = np.nonzero(bits)
    table = target_lengths(k, counts, dist)
    # one row per released record: its class, then a target length drawn without replacement from its
    # pattern length's row of the table (records of one pattern length in random order)
    node = np.repeat(np.arange(counts.size, dtype=np.int64), counts)
    rk = k[node]
    # (np.lexsort((u, rk)), faster: the uniforms sorted, then a stable sort by pattern length, a radix sort of
    # small integers; uniforms tie with probability ~ 0)
    by_u = np.argsort(noise.uniform(node.size))
    order = by_u[np.argsort(rk[by_u].astype(np.int16 if rk.size == 0 or rk.max() < 2**15 else np.int64),
                            kind="stable")]
    target = np.empty(node.size, dtype=np.int64)
    target[order] = np.concatenate([np.repeat(np.arange(table.shape[1]), table[i]) for i in range(table.shape[0])])
    weight = np.minimum(1.0, record_bound / np.maximum(target, 1).astype(np.float64))
    node_weight = np.bincount(node, weights=weight, minlength=counts.size)
    known = np.bincount(F[rank_of], weights=node_weight[node_of], minlength=n_items)
    deficit = item_deficits(known, F, noisy_support, dist, n_rel, record_bound, cutoff)
    raw_unit = np.zeros(n_items, dtype=bool)
    if hidden_f is not None:
        deficit[F] = np.clip(hidden_f, 0.0, None) * (n_rel / float(dist.sum()))
        raw_unit[F] = True
    rank = np.full(n_items, -1, dtype=np.int64)
    rank[F] = np.arange(m)
    rec, item = fill_records(levels[node], np.maximum(target - rk, 0), weight, rank, deficit, noise, raw_unit)
    del target, weight, order
    # every record: its pattern's items plus its drawn ones, as one int64 key per (record, item); identical
    # records merged. The parts are freed as the keys are made (the fill's largest arrays).
    if node.size * n_items >= 2**63:
        raise ValueError("too many records times items for one int64 key per (record, item)")
    n_pattern = int(rk.sum())
    pair = np.empty(n_pattern + rec.size, dtype=np.int64)
    pair[n_pattern:] = rec.astype(np.int64) * n_items + item
    del rec, item
    pat_rows = np.repeat(np.arange(node.size, dtype=np.int64), rk)
    pair[:n_pattern] = pat_rows * n_items + F[rank_of[spans((np.cumsum(k) - k)[node], rk)]]
    del pat_rows
    return _distinct_records(pair, n_items, node.size)


def _distinct_records(pair: np.ndarray, n_items: int, n_rows: int) -> tuple[ItemsetRows, np.ndarray]:
    """(row, item) pairs, given as keys row * n_items + item (distinct; sorted here in place), as the distinct
    non-empty itemsets (items ascending, held as one flat array) with the number of rows holding each, in the
    release's canonical order.

    The rows are put in canonical order (:func:`canonical_distinct_rows`), where identical rows are adjacent, and
    each run of identical rows becomes one itemset with its length as count; the release then finds them in order
    and does not sort again. Items are kept as int32 where the universe allows (half the memory)."""
    pair.sort()
    length = np.bincount(pair // n_items, minlength=n_rows)
    items = (pair % n_items).astype(np.int32 if n_items < 2**31 else np.int64)
    del pair
    lengths = length[length > 0]
    if lengths.size == 0:
        return ItemsetRows(np.zeros(0, dtype=np.int64), np.zeros(1, dtype=np.int64)), np.zeros(0, dtype=np.int64)
    offsets = np.zeros(lengths.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    rows = ItemsetRows(items, offsets)
    first, multiplicity = canonical_distinct_rows(rows)
    return take_rows(rows, first), multiplicity

