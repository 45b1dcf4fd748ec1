"""The vectorised counting-query evaluation gives the same numbers as the per-query one it replaced."""

from __future__ import annotations

import numpy as np
import pytest
from reference_counting import ReferenceSupportCounter

from dprelease.data import TransactionDB, kosarak_like
from dprelease.engine.supports import SupportCounter
from dprelease.evaluation.counting import evaluate_counting, make_workload, relative_errors


def _reference_workload(n_items: int, max_record_length: int, n_queries: int, seed: int, n_subsets: int = 5):
    """make_workload as it was (one sorted Generator.choice per query)."""
    rng = np.random.default_rng(seed)
    per = n_queries // n_subsets
    subsets, max_lengths = [], []
    for i in range(1, n_subsets + 1):
        top = int(min(n_items, max(1, (i * max_record_length) // n_subsets)))
        lengths = rng.integers(1, top + 1, per)
        subsets.append([np.sort(rng.choice(n_items, size=int(L), replace=False)) for L in lengths.tolist()])
        max_lengths.append(top)
    return subsets, max_lengths


def _reference_evaluate(raw: TransactionDB, released: TransactionDB, n_queries: int, seed: int) -> dict:
    subsets, max_lengths = _reference_workload(raw.n_items, int(raw.lengths.max()), n_queries, seed)
    rc, lc = ReferenceSupportCounter(raw), ReferenceSupportCounter(released)
    per, errors = [], []
    for L, queries in zip(max_lengths, subsets):
        err = relative_errors(rc.count_many(queries), lc.count_many(queries), raw.n_records)
        errors.append(err)
        per.append({"max_length": L, "mean_relative_error": float(err.mean())})
    return {"mean_relative_error": float(np.concatenate(errors).mean()), "subsets": per}


def test_workload_is_the_same_as_before():
    for n_items, max_len, seed in ((17, 17, 1), (300, 40, 5), (41_270, 120, 0)):
        old, old_l = _reference_workload(n_items, max_len, 1000, seed)
        new = make_workload(n_items, max_len, n_queries=1000, seed=seed)
        assert new.max_lengths == old_l
        for a, b in zip(new.subsets, old):
            assert len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b))


@pytest.mark.parametrize("n_items", [12, 30, 2_000])  # superset-sum table; record lists (dense and sparse data)
def test_counts_match_the_per_query_counter(n_items):
    rng = np.random.default_rng(n_items)
    raw = kosarak_like(3_000, n_items, 6.0, seed=2)
    queries = [np.sort(rng.choice(n_items, size=int(rng.integers(1, min(n_items, 9) + 1)), replace=False))
               for _ in range(2_000)]
    # queries built from real records, so that long queries have non-zero supports too
    for r in rng.integers(0, raw.n_records, 300).tolist():
        rec = raw.record(r)
        queries.append(np.sort(rng.choice(rec, size=int(rng.integers(1, rec.size + 1)), replace=False)))
    queries.append(np.zeros(0, dtype=np.int64))
    expected = ReferenceSupportCounter(raw).count_many(queries[:-1]).tolist() + [raw.n_records]
    assert SupportCounter(raw).count_many(queries).tolist() == expected
    assert SupportCounter(raw).count(queries[0]) == expected[0]


def test_small_candidate_batches_give_the_same_counts(monkeypatch):
    import dprelease.engine.supports as counting

    raw = kosarak_like(2_000, 200, 8.0, seed=4)
    wl = make_workload(200, int(raw.lengths.max()), n_queries=500, seed=3)
    items, lengths = wl.flat(0)
    whole = SupportCounter(raw).count_flat(items, lengths)
    monkeypatch.setattr(counting, "_MAX_CANDIDATES", 7)
    monkeypatch.setattr(counting, "_QUERY_BATCH", 11)
    assert SupportCounter(raw).count_flat(items, lengths).tolist() == whole.tolist()


@pytest.mark.parametrize("n_items", [17, 500])
def test_evaluate_counting_numbers_unchanged(n_items):
    raw = kosarak_like(4_000, n_items, 5.0, seed=7)
    released = kosarak_like(3_500, n_items, 5.0, seed=8)
    assert evaluate_counting(raw, released, n_queries=1_000, seed=2) == _reference_evaluate(raw, released, 1_000, 2)


@pytest.mark.parametrize("n_items", [12, 30, 2_000])
def test_contains_many_is_support_at_least_one(n_items, monkeypatch):
    import dprelease.engine.supports as counting

    rng = np.random.default_rng(n_items + 1)
    raw = kosarak_like(3_000, n_items, 6.0, seed=3)
    queries = [np.sort(rng.choice(n_items, size=int(rng.integers(1, min(n_items, 6) + 1)), replace=False))
               for _ in range(1_500)]
    for r in rng.integers(0, raw.n_records, 300).tolist():  # subsets of real records: contained
        rec = raw.record(r)
        queries.append(np.sort(rng.choice(rec, size=int(rng.integers(1, rec.size + 1)), replace=False)))
    queries += [np.zeros(0, dtype=np.int64), np.arange(n_items)]  # the whole universe: rarely in a record
    counter = SupportCounter(raw)
    expected = counter.count_many(queries) > 0
    assert expected.any() and (n_items <= 12 or not expected.all())  # 12 items: some record holds all
    assert counter.contains_many(queries).tolist() == expected.tolist()
    monkeypatch.setattr(counting, "_MAX_CANDIDATES", 5)  # many small candidate batches: same answers
    assert SupportCounter(raw).contains_many(queries).tolist() == expected.tolist()


def test_record_lists_blockwise_and_on_demand(monkeypatch):
    """The record lists (a counting sort filled block by block) hold each listed item's rows in order; a counter
    builds only the lists its queries' rarest items need, grows them on demand, and counts as the reference."""
    from dprelease.engine import supports as counting

    rng = np.random.default_rng(3)
    db = kosarak_like(n_records=3000, n_items=200, mean_length=6, seed=4)
    real_blocks = TransactionDB.record_blocks
    monkeypatch.setattr(TransactionDB, "record_blocks", lambda self, entries=37: real_blocks(self, entries))
    listed = rng.random(db.n_items) < 0.5
    start, rows = counting._item_lists(db, db.item_supports(), listed)
    as_lists = [set(r) for r in db.to_lists()]
    for i in range(db.n_items):
        want = np.flatnonzero([i in r for r in as_lists]) if listed[i] else np.zeros(0)
        assert rows[start[i] : start[i + 1]].tolist() == want.tolist()
    counter, ref = SupportCounter(db), ReferenceSupportCounter(db)
    workload = make_workload(db.n_items, 12, n_queries=500, seed=2)
    counter.prepare([workload.flat(0)])
    first = int(counter._listed.sum())
    assert 0 < first < db.n_items
    for i in range(5):
        items, lengths = workload.flat(i)
        assert counter.count_flat(items, lengths).tolist() == ref.count_many(workload.subsets[i]).tolist()
    assert int(counter._listed.sum()) >= first
