"""Counting-query utility (DiffPart section 5.1).

Q(D) = |{t in D : I' subset of t}|. The workload is ``n_queries`` random queries in
``n_subsets`` equal subsets; the i-th subset has lengths uniform in
[1, i*max|t|/n_subsets] (rounded down, at least 1, at most |I|) and items drawn
uniformly without repetition from the universe. Relative error is
|Q(D~) - Q(D)| / max(Q(D), s) with the sanity bound s = 0.1% of |D|.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..data.transactions import TransactionDB
from ..engine.base import TransactionData
from ..engine.local import unwrap
from ..engine.supports import SupportCounter  # exact supports; counted in the engine layer

__all__ = ["SupportCounter", "Workload", "make_workload", "relative_errors", "evaluate_counting"]


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


def evaluate_counting(raw: TransactionDB, released: TransactionDB, *, n_queries: int = 50_000, seed: int = 0,
                      n_subsets: int = 5, workload: Workload | None = None,
                      raw_counter: SupportCounter | None = None) -> dict[str, object]:
    """Mean relative error over the workload and per subset (the JSON of ``evaluate counting``)."""
    raw = unwrap(raw)
    if isinstance(raw, TransactionData):  # another engine: the exact answers are one pass there per subset
        max_length, n_raw = raw.summary().max_length, raw.n_records
        answer = raw.flat_supports
    else:
        max_length, n_raw = int(raw.lengths.max()), raw.n_records
        raw_counter = raw_counter or SupportCounter(raw)
        answer = raw_counter.count_flat
    if workload is None:
        workload = make_workload(raw.n_items, max_length, n_queries=n_queries, n_subsets=n_subsets, seed=seed)
    rel_counter = SupportCounter(released)
    every = [workload.flat(i) for i in range(len(workload.max_lengths))]
    rel_counter.prepare(every)  # the record lists the whole workload needs, in one pass over each database
    if raw_counter is not None:
        raw_counter.prepare(every)
    del every
    subsets = []
    all_errors = []
    for i, L in enumerate(workload.max_lengths):
        items, lengths = workload.flat(i)
        err = relative_errors(answer(items, lengths), rel_counter.count_flat(items, lengths), n_raw)
        all_errors.append(err)
        subsets.append({"max_length": L, "mean_relative_error": float(err.mean())})
    return {"mean_relative_error": float(np.concatenate(all_errors).mean()), "subsets": subsets}
