"""The per-query support counter as it was before the vectorised one (d760c56), kept as the reference that
tests/evaluation/test_counting.py compares :class:`dprelease.engine.supports.SupportCounter` against."""

from __future__ import annotations

import numpy as np

from dprelease.data.transactions import TransactionDB

_ZETA_MAX_ITEMS = 24


class ReferenceSupportCounter:
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
