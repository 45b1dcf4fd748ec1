"""Counting-query utility (DiffPart section 5.1).

Q(D) = |{t in D : I' subset of t}|. The workload is ``n_queries`` random queries in
``n_subsets`` equal subsets; the i-th subset has lengths uniform in
[1, i*max|t|/n_subsets] (rounded down, at least 1, at most |I|) and items drawn
uniformly without repetition from the universe. Relative error is
|Q(D~) - Q(D)| / max(Q(D), s) with the sanity bound s = 0.1% of |D|.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..data.transactions import TransactionDB

__all__ = ["SupportCounter", "Workload", "make_workload", "relative_errors", "evaluate_counting"]

_ZETA_MAX_ITEMS = 24


class SupportCounter:
    """Answers many counting queries on one database, fast.

    Up to 24 items: a superset-sum table over all 2^|I| itemsets (one lookup per
    query). Larger universes: per-item sorted record-id lists, intersected from the
    rarest item of each query.
    """

    def __init__(self, db: TransactionDB):
        self.n_items = db.n_items
        self.n_records = db.n_records
        if db.n_items <= _ZETA_MAX_ITEMS:
            table = np.bincount(db.bitmasks(), minlength=1 << db.n_items).astype(np.int64)
            for b in range(db.n_items):
                view = table.reshape(-1, 2, 1 << b)
                view[:, 0, :] += view[:, 1, :]
            self._table = table
            self._tids = None
        else:
            self._table = None
            order = np.argsort(db.items, kind="stable")
            self._tids = db.row_ids()[order]
            self._tid_start = np.zeros(db.n_items + 1, dtype=np.int64)
            np.cumsum(np.bincount(db.items, minlength=db.n_items), out=self._tid_start[1:])

    def count(self, query: np.ndarray) -> int:
        query = np.asarray(query, dtype=np.int64)
        if self._table is not None:
            return int(self._table[int(np.left_shift(np.int64(1), query).sum())])
        lists = [self._tids[self._tid_start[i] : self._tid_start[i + 1]] for i in query.tolist()]
        lists.sort(key=len)
        current = lists[0]
        for other in lists[1:]:
            if current.size == 0:
                break
            current = current[np.isin(current, other, assume_unique=True)]
        return int(current.size)

    def count_many(self, queries: list[np.ndarray]) -> np.ndarray:
        if self._table is not None and queries:
            lengths = np.fromiter((q.size for q in queries), dtype=np.int64, count=len(queries))
            flat = np.concatenate(queries).astype(np.int64)
            owner = np.repeat(np.arange(len(queries)), lengths)
            masks = np.zeros(len(queries), dtype=np.int64)
            np.add.at(masks, owner, np.left_shift(np.int64(1), flat))
            return self._table[masks]
        return np.fromiter((self.count(q) for q in queries), dtype=np.int64, count=len(queries))


@dataclass(frozen=True)
class Workload:
    """Queries grouped in subsets; ``max_lengths[i]`` is the largest length in subset i."""

    subsets: list[list[np.ndarray]]
    max_lengths: list[int]


def make_workload(n_items: int, max_record_length: int, *, n_queries: int = 50_000, n_subsets: int = 5,
                  seed: int = 0) -> Workload:
    rng = np.random.default_rng(seed)
    per = n_queries // n_subsets
    subsets: list[list[np.ndarray]] = []
    max_lengths: list[int] = []
    for i in range(1, n_subsets + 1):
        top = int(min(n_items, max(1, (i * max_record_length) // n_subsets)))
        lengths = rng.integers(1, top + 1, per)
        queries = [np.sort(rng.choice(n_items, size=int(L), replace=False)) for L in lengths.tolist()]
        subsets.append(queries)
        max_lengths.append(top)
    return Workload(subsets, max_lengths)


def relative_errors(true: np.ndarray, released: np.ndarray, n_records: int) -> np.ndarray:
    sanity = 0.001 * n_records
    return np.abs(released - true) / np.maximum(true, sanity)


def evaluate_counting(raw: TransactionDB, released: TransactionDB, *, n_queries: int = 50_000, seed: int = 0,
                      n_subsets: int = 5, workload: Workload | None = None,
                      raw_counter: SupportCounter | None = None) -> dict[str, object]:
    """Mean relative error over the workload and per subset (the JSON of ``evaluate counting``)."""
    if workload is None:
        workload = make_workload(raw.n_items, int(raw.lengths.max()), n_queries=n_queries,
                                 n_subsets=n_subsets, seed=seed)
    raw_counter = raw_counter or SupportCounter(raw)
    rel_counter = SupportCounter(released)
    subsets = []
    all_errors = []
    for L, queries in zip(workload.max_lengths, workload.subsets):
        err = relative_errors(raw_counter.count_many(queries), rel_counter.count_many(queries), raw.n_records)
        all_errors.append(err)
        subsets.append({"max_length": L, "mean_relative_error": float(err.mean())})
    return {"mean_relative_error": float(np.concatenate(all_errors).mean()), "subsets": subsets}
