"""Per-occurrence passes computed block by block (issue 11): the same numbers as the whole-database form."""

from __future__ import annotations

import numpy as np
import pytest

from dprelease.data.transactions import TransactionDB
from dprelease.evaluation.occurrence import _item_keys, set_hashes
from dprelease.itemsets.exact import _bit_columns


@pytest.fixture(scope="module")
def db() -> TransactionDB:
    rng = np.random.default_rng(4)
    lengths = rng.integers(0, 15, 200_003)  # ~1.4M items: more than one block; some empty records
    return TransactionDB.from_lists([sorted(set(rng.integers(0, 300, n).tolist())) for n in lengths], 300)


def test_set_hashes_equal_the_sums_over_the_whole_database(db):
    keys = _item_keys(db.n_items)
    want = np.zeros((db.n_records, 2), dtype=np.uint64)
    for c in range(2):
        with np.errstate(over="ignore"):
            np.add.at(want[:, c], db.row_ids(), keys[c][db.items])
    assert np.array_equal(set_hashes(db, keys), want)


@pytest.mark.parametrize("items", [np.arange(0, 300, 7), np.array([11]), np.arange(300)])
def test_bit_columns_equal_one_packed_flag_column_per_item(db, items):
    columns, row_of = _bit_columns(db, items)
    rows = db.row_ids()
    for i in items[:: max(1, items.size // 10)].tolist():
        flags = np.zeros(columns.shape[1] * 64, dtype=bool)
        flags[rows[db.items == i]] = True
        assert np.array_equal(columns[row_of[i]], np.packbits(flags, bitorder="little").view(np.uint64))


def test_occurrence_share_over_raw_blocks_equals_one_counter(monkeypatch):
    from dprelease.evaluation import occurrence
    from dprelease.evaluation.counting import SupportCounter

    rng = np.random.default_rng(2)
    raw = TransactionDB.from_lists([sorted(set(rng.integers(0, 60, rng.integers(0, 9)).tolist()))
                                    for _ in range(50_000)], 60)
    rel = TransactionDB.from_lists([sorted(set(rng.integers(0, 60, rng.integers(0, 6)).tolist()))
                                    for _ in range(3_000)] + [[]] * 3, 60)
    whole = occurrence.occurrence_share(raw, rel, raw_counter=SupportCounter(raw))
    monkeypatch.setattr(occurrence, "_RAW_BLOCK_ENTRIES", 1 << 12)
    assert occurrence.occurrence_share(raw, rel) == whole
    assert 0 < whole["distinct_exact"] < whole["distinct_contained"] < 1
