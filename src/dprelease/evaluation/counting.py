"""Counting-query utility (DiffPart section 5.1).

Q(D) = |{t in D : I' subset of t}|. The workload is ``n_queries`` random queries in
``n_subsets`` equal subsets; the i-th subset has lengths uniform in
[1, i*max|t|/n_subsets] (rounded down, at least 1, at most |I|) and items drawn
uniformly without repetition from the universe. Relative error is
|Q(D~) - Q(D)| / max(Q(D), s) with the sanity bound s = 0.1% of |D|.

On sparse data most random queries have true answer 0 and fall under the sanity bound, so a release
and an empty release score alike: that workload cannot fail. Two additions make it a measurement:

* the **frequent-itemset workload** (:func:`frequent_workload`): the itemsets of lengths 1..4 whose
  support is at least ``min_share`` of N (default 1 %), mined from the raw data when the evaluation
  runs. Choosing queries from the raw data is fine here: evaluation is the custodian's side, it reads
  the raw data anyway and publishes nothing;
* two **data-independent baselines** scored on both workloads (:func:`counting_baselines`): an empty
  release, and N uniform random baskets (:func:`uniform_baskets`) whose sizes are the raw record lengths
  (the custodian's side knows them; giving the baseline the true sizes only makes it stronger). A
  release is useful where its error is clearly below both.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..data.transactions import TransactionDB
from ..engine.base import TransactionData
from ..engine.local import unwrap
from ..engine.supports import SupportCounter  # exact supports; counted in the engine layer

__all__ = ["SupportCounter", "Workload", "FrequentWorkload", "RawAnswers", "frequent_counts", "make_workload", "frequent_workload", "relative_errors",
           "evaluate_counting", "uniform_baskets", "counting_baselines", "evaluate_counting_with_baselines",
           "DEFAULT_FREQUENT_SHARE", "FREQUENT_MAX_LENGTH", "DEFAULT_FREQUENT_QUERIES"]

DEFAULT_FREQUENT_SHARE = 0.01  # an itemset is "frequent" at a support of at least 1 % of N
FREQUENT_MAX_LENGTH = 4  # frequent queries of 1 to 4 items
DEFAULT_FREQUENT_QUERIES = 10_000  # at most this many (a uniform sample of the frequent itemsets beyond it)


@dataclass(frozen=True)
class Workload:
    """Queries grouped in subsets; ``max_lengths[i]`` is the largest length in subset i."""

    subsets: list[list[np.ndarray]]
    max_lengths: list[int]
    flats: list[tuple[np.ndarray, np.ndarray]] | None = field(default=None, repr=False, compare=False)

    def flat(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """Subset i as (all query items in order, query lengths); the items are int32 (any integer type is
        accepted by the counters, which widen one batch at a time)."""
        if self.flats is not None:
            return self.flats[i]
        queries = self.subsets[i]
        lengths = np.fromiter((q.size for q in queries), dtype=np.int64, count=len(queries))
        items = np.concatenate(queries) if queries else np.zeros(0, dtype=np.int64)
        return items, lengths


def make_workload(n_items: int, max_record_length: int, *, n_queries: int = 50_000, n_subsets: int = 5,
                  seed: int = 0) -> Workload:
    """The random query workload of DiffPart section 5.1 (see the module docstring).

    The items of each query come from one ``Generator.choice`` call, as they always have, so a seed gives
    the same workload as before; only the sorting is batched (one sort of (query, item) keys per subset).
    """
    rng = np.random.default_rng(seed)
    per = n_queries // n_subsets
    item_type = np.int32 if n_items < 2**31 else np.int64
    subsets: list[list[np.ndarray]] = []
    flats: list[tuple[np.ndarray, np.ndarray]] = []
    max_lengths: list[int] = []
    for i in range(1, n_subsets + 1):
        top = int(min(n_items, max(1, (i * max_record_length) // n_subsets)))
        lengths = rng.integers(1, top + 1, per)
        drawn = [rng.choice(n_items, size=L, replace=False) for L in lengths.tolist()]
        flat = np.concatenate(drawn) if drawn else np.zeros(0, dtype=np.int64)
        del drawn
        shift = np.repeat(np.arange(per, dtype=np.int64) * np.int64(n_items), lengths)
        flat += shift  # sort within each query: one sort of (query, item) keys, in place
        flat.sort()
        flat -= shift
        del shift
        flat = flat.astype(item_type)  # held as int32 (4 bytes per query item) for any universe below 2^31
        subsets.append(np.split(flat, np.cumsum(lengths)[:-1]) if per else [])  # views of `flat`
        flats.append((flat, lengths.astype(np.int64)))
        max_lengths.append(top)
    return Workload(subsets, max_lengths, flats)


def relative_errors(true: np.ndarray, released: np.ndarray, n_records: int) -> np.ndarray:
    sanity = 0.001 * n_records
    return np.abs(released - true) / np.maximum(true, sanity)


@dataclass(frozen=True)
class FrequentWorkload(Workload):
    """The frequent-itemset workload: subset i holds the chosen frequent itemsets of exactly i + 1 items
    (``max_lengths`` = 1, 2, ...; a length with no frequent itemset is left out)."""

    min_share: float = DEFAULT_FREQUENT_SHARE
    min_count: int = 1
    found: int = 0  # frequent itemsets of lengths 1..4 in the raw data; the workload holds all or a sample of each length

    def summary(self) -> dict[str, object]:
        return {"min_share": self.min_share, "min_count": self.min_count, "frequent_itemsets": self.found,
                "queries": int(sum(len(q) for q in self.subsets))}


def frequent_workload(raw: TransactionDB, *, min_share: float = DEFAULT_FREQUENT_SHARE,
                      max_length: int = FREQUENT_MAX_LENGTH, n_queries: int = DEFAULT_FREQUENT_QUERIES,
                      seed: int = 0) -> FrequentWorkload:
    """The itemsets of 1..``max_length`` items with support >= ``min_share`` * N in the raw data (exact mining;
    custodian side), grouped by length: of each length all of them, or a seeded uniform sample of
    ``n_queries / max_length`` (so that the many long itemsets of dense data do not drown the short ones)."""
    from ..itemsets.exact import mine_frequent

    if not 0.0 < min_share <= 1.0:
        raise ValueError(f"min_share must be in (0, 1], got {min_share}")
    raw = unwrap(raw)
    min_count = max(1, int(np.ceil(min_share * raw.n_records)))
    found: list[tuple[tuple[int, ...], int]] = []
    if isinstance(raw, TransactionData):
        found = mine_frequent(raw, min_count, max_length=max_length)
    elif raw.n_records:  # mined over the records projected onto the frequent items (few distinct ones)
        from ..itemsets.exact import distinct_records

        supports = raw.item_supports()
        table = distinct_records(raw, np.flatnonzero(supports >= min_count))
        found = mine_frequent(raw, min_count, max_length=max_length, table=table, supports=supports)
    found.sort(key=lambda p: (len(p[0]), p[0]))  # a canonical order (the miner's is its own)
    per_length = max(1, n_queries // max_length)  # each length gets its share, so long itemsets do not crowd out
    rng = np.random.default_rng(seed)
    subsets: list[list[np.ndarray]] = []
    lengths: list[int] = []
    for L in range(1, max_length + 1):
        group = [s for s, _ in found if len(s) == L]
        if len(group) > per_length:  # a seeded uniform sample of this length's frequent itemsets
            group = [group[i] for i in np.sort(rng.choice(len(group), size=per_length, replace=False)).tolist()]
        if group:
            subsets.append([np.asarray(s, dtype=np.int32) for s in group])
            lengths.append(L)
    return FrequentWorkload(subsets, lengths, None, min_share=float(min_share), min_count=min_count,
                            found=len(found))


class RawAnswers:
    """The raw data's answers to a workload's subsets, computed once and kept (the release and both baselines
    are scored against the same answers). ``frequent``: how the frequent-itemset workload is answered."""

    def __init__(self, answer, frequent=None) -> None:
        self._answer = answer
        self._frequent = frequent or answer
        self._kept: dict[tuple[int, int], np.ndarray] = {}

    def __call__(self, workload: Workload, i: int) -> np.ndarray:
        key = (id(workload), i)
        if key not in self._kept:
            fn = self._frequent if isinstance(workload, FrequentWorkload) else self._answer
            self._kept[key] = fn(*workload.flat(i))
        return self._kept[key]


def frequent_counts(db: TransactionDB, items: np.ndarray, lengths: np.ndarray, *, block: int = 1 << 22
                    ) -> np.ndarray:
    """Supports of queries over a few distinct items (the frequent-itemset workload, whose items have long record
    lists): per block of records, a bit set over the block's records for each item the queries use, ANDed along
    each query and counted. Memory: one bit per (used item, record of the block), and 64 MB of query batches."""
    items = np.asarray(items, dtype=np.int64)
    lengths = np.asarray(lengths, dtype=np.int64)
    out = np.zeros(lengths.size, dtype=np.int64)
    if lengths.size == 0 or db.n_records == 0:
        return out
    used, col = np.unique(items, return_inverse=True)
    where = np.full(db.n_items, -1, dtype=np.int64)
    where[used] = np.arange(used.size)
    start = np.cumsum(lengths) - lengths
    for lo in range(0, db.n_records, block):
        hi = min(lo + block, db.n_records)
        a = int(db.offsets[lo])
        c = where[db.items[a:int(db.offsets[hi])]]
        keep = np.flatnonzero(c >= 0)
        rows = db.rows_of(keep + a).astype(np.int64) - lo
        words = np.zeros((used.size, (hi - lo + 63) // 64), dtype=np.uint64)
        np.bitwise_or.at(words, (c[keep], rows >> 6), np.left_shift(np.uint64(1), (rows & 63).astype(np.uint64)))
        del c, keep, rows
        for L in np.unique(lengths).tolist():
            qs = np.flatnonzero(lengths == L)
            if L == 0:
                out[qs] += hi - lo
                continue
            cols = col[start[qs][:, None] + np.arange(L)]  # the query's items as columns of `words`
            step = max(1, (64 << 20) // (8 * words.shape[1]))
            for q0 in range(0, qs.size, step):
                acc = words[cols[q0:q0 + step, 0]]  # a copy (fancy indexing)
                for j in range(1, L):
                    acc &= words[cols[q0:q0 + step, j]]
                out[qs[q0:q0 + step]] += np.bitwise_count(acc).sum(axis=1, dtype=np.int64)
    return out


def _score(workload: Workload, truth: RawAnswers, count, n_raw: int) -> dict[str, object]:
    """Relative errors of the answers ``count(items, lengths)`` against the raw data's over ``workload``."""
    subsets = []
    all_errors = []
    for i, L in enumerate(workload.max_lengths):
        items, lengths = workload.flat(i)
        err = relative_errors(truth(workload, i), count(items, lengths), n_raw)
        all_errors.append(err)
        subsets.append({"max_length": L, "mean_relative_error": float(err.mean()), "queries": int(err.size)})
    joined = np.concatenate(all_errors) if all_errors else np.zeros(0)
    return {"mean_relative_error": float(joined.mean()) if joined.size else float("nan"), "subsets": subsets}


def evaluate_counting(raw: TransactionDB, released: TransactionDB, *, n_queries: int = 50_000, seed: int = 0,
                      n_subsets: int = 5, workload: Workload | None = None,
                      raw_counter: SupportCounter | None = None,
                      frequent: FrequentWorkload | None = None, truth: RawAnswers | None = None) -> dict[str, object]:
    """Mean relative error over the workload and per subset (the JSON of ``evaluate counting``); with
    ``frequent``, also over the frequent-itemset workload (key ``"frequent"``). ``truth``: the raw answers
    kept from an earlier call on the same workloads."""
    raw = unwrap(raw)
    if isinstance(raw, TransactionData):  # another engine: the exact answers are one pass there per subset
        max_length, n_raw = raw.summary().max_length, raw.n_records
        answer = raw.flat_supports
    else:
        max_length, n_raw = int(raw.lengths.max()), raw.n_records
        raw_counter = raw_counter or SupportCounter(raw)
        answer = raw_counter.count_flat
    truth = truth or _raw_answers(raw, answer)
    if workload is None:
        workload = make_workload(raw.n_items, max_length, n_queries=n_queries, n_subsets=n_subsets, seed=seed)
    rel_counter = SupportCounter(released)
    every = [workload.flat(i) for i in range(len(workload.max_lengths))]
    rel_counter.prepare(every)  # the record lists the whole workload needs, in one pass over each database
    if raw_counter is not None:
        raw_counter.prepare(every)
    del every
    out = _score(workload, truth, rel_counter.count_flat, n_raw)
    for s in out["subsets"]:  # type: ignore[attr-defined]
        del s["queries"]  # the random workload's JSON as it always was
    if frequent is not None:
        def count(items: np.ndarray, lengths: np.ndarray) -> np.ndarray:
            return frequent_counts(released, items, lengths)

        out["frequent"] = {**frequent.summary(), **_score(frequent, truth, count, n_raw)}
    return out


def _raw_answers(raw: TransactionDB | TransactionData, answer) -> RawAnswers:
    """The raw answers: random queries by ``answer``; frequent itemsets by bit sets (:func:`frequent_counts`) on
    an in-memory database, by ``answer`` on another engine."""
    if isinstance(raw, TransactionData):
        return RawAnswers(answer)
    return RawAnswers(answer, lambda items, lengths: frequent_counts(raw, items, lengths))


def uniform_baskets(n_items: int, lengths: np.ndarray, *, seed: int = 0, block: int = 1 << 22) -> TransactionDB:
    """One record per entry of ``lengths``, of that many distinct items drawn uniformly from the universe
    (a data-independent release given only the record sizes). Each record draws with replacement and redraws
    what repeats until it has its length: the rule treats every item alike, so each record is a uniform
    subset of its size. Made ``block`` items at a time into the final arrays (4 bytes per item held)."""
    rng = np.random.default_rng(seed)
    lengths = np.minimum(np.asarray(lengths, dtype=np.int64), n_items)
    n = lengths.size
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    items = np.empty(int(offsets[-1]), dtype=np.int32 if n_items < 2**31 else np.int64)
    lo = 0
    while lo < n:
        hi = int(min(n, max(lo + 1, np.searchsorted(offsets, offsets[lo] + block, side="right") - 1)))
        items[offsets[lo]:offsets[hi]] = _distinct_draws(rng, lengths[lo:hi], n_items)
        lo = hi
    return TransactionDB(offsets, items, int(n_items))


def _distinct_draws(rng: np.random.Generator, lengths: np.ndarray, n_items: int) -> np.ndarray:
    """Uniform items for records of ``lengths`` (distinct within a record), sorted within each record."""
    rows = np.repeat(np.arange(lengths.size, dtype=np.int64), lengths)
    drawn = rng.integers(0, n_items, rows.size, dtype=np.int64)
    while True:
        key = rows * np.int64(n_items) + drawn
        order = np.argsort(key, kind="stable")
        repeat = np.zeros(key.size, dtype=bool)
        repeat[order[1:]] = key[order[1:]] == key[order[:-1]]
        if not repeat.any():
            return (key[order] - rows * np.int64(n_items)).astype(np.int64)  # rows are in order already
        drawn[repeat] = rng.integers(0, n_items, int(repeat.sum()), dtype=np.int64)


def counting_baselines(raw: TransactionDB, *, workload: Workload, frequent: FrequentWorkload | None = None,
                       raw_counter: SupportCounter | None = None, seed: int = 0,
                       truth: RawAnswers | None = None) -> dict[str, dict[str, object]]:
    """The errors of the two data-independent releases on the same workloads: ``empty`` (no record) and
    ``uniform`` (:func:`uniform_baskets` of the raw record lengths, seeded)."""
    raw = unwrap(raw)
    empty = TransactionDB(np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int32), raw.n_items)
    if isinstance(raw, TransactionData):  # another engine: the record lengths from its length histogram
        values, counts = raw.length_histogram()
        lengths = np.repeat(np.asarray(values, dtype=np.int64), np.asarray(counts, dtype=np.int64))
    else:
        lengths = raw.lengths
    uniform = uniform_baskets(raw.n_items, lengths, seed=seed)
    if truth is None and not isinstance(raw, TransactionData):
        raw_counter = raw_counter or SupportCounter(raw)
        truth = _raw_answers(raw, raw_counter.count_flat)
    elif truth is None:
        truth = _raw_answers(raw, raw.flat_supports)
    return {name: evaluate_counting(raw, db, workload=workload, raw_counter=raw_counter, frequent=frequent,
                                    truth=truth) for name, db in (("empty", empty), ("uniform", uniform))}


def evaluate_counting_with_baselines(raw: TransactionDB, released: TransactionDB, *, n_queries: int = 50_000,
                                     seed: int = 0, min_share: float = DEFAULT_FREQUENT_SHARE,
                                     frequent_queries: int = DEFAULT_FREQUENT_QUERIES) -> dict[str, object]:
    """``evaluate counting``: the release's errors on the random and the frequent-itemset workloads, and the
    same numbers for the empty and the uniform-baskets baselines (key ``"baselines"``)."""
    raw = unwrap(raw)
    counter = SupportCounter(raw) if not isinstance(raw, TransactionData) else None
    max_length = raw.summary().max_length if isinstance(raw, TransactionData) else int(raw.lengths.max())
    workload = make_workload(raw.n_items, max_length, n_queries=n_queries, seed=seed)
    frequent = frequent_workload(raw, min_share=min_share, n_queries=frequent_queries, seed=seed)
    truth = _raw_answers(raw, counter.count_flat if counter is not None else raw.flat_supports)  # type: ignore[union-attr]
    out = evaluate_counting(raw, released, workload=workload, raw_counter=counter, frequent=frequent, truth=truth)
    out["baselines"] = counting_baselines(raw, workload=workload, frequent=frequent, raw_counter=counter, seed=seed,
                                          truth=truth)
    return out
