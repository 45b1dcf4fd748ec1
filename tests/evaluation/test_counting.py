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


@pytest.mark.parametrize("dense_share", [0, 8, 10**9])  # record lists only; the default; bit columns for all
def test_dense_queries_by_bit_columns_give_the_per_query_counts(monkeypatch, dense_share):
    """Queries whose rarest item is frequent are counted by AND-ing packed bit columns (dense data), the others
    by record lists; either way, and with the columns' memory bound hit midway, the counts are the reference's."""
    import dprelease.engine.supports as counting
    from dprelease.data.generators import dense_near_ties

    raw = dense_near_ties(n_records=1_500, seed=3)  # 1,500 records: 24 words per column
    rng = np.random.default_rng(dense_share)
    n = raw.n_items
    queries = [np.sort(rng.choice(n, size=int(rng.integers(2, 9)), replace=False)) for _ in range(600)]
    queries += [np.sort(rng.choice(raw.record(r), size=min(raw.record(r).size, int(rng.integers(2, 12))),
                                   replace=False)) for r in rng.integers(0, raw.n_records, 300).tolist()]
    expected = ReferenceSupportCounter(raw).count_many(queries).tolist()
    monkeypatch.setattr(counting, "_DENSE_SHARE", dense_share)
    monkeypatch.setattr(counting, "AND_BATCH_WORDS", 100)  # a few queries per AND batch
    assert SupportCounter(raw).count_many(queries).tolist() == expected
    if dense_share == 8:  # columns capped below what the queries need: the record lists take over
        monkeypatch.setattr(counting, "_COLUMN_BYTES", 24 * 8 * 5)
        assert SupportCounter(raw).count_many(queries).tolist() == expected


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


def test_frequent_workload_holds_the_frequent_itemsets_by_length():
    from dprelease.evaluation.counting import frequent_workload
    from dprelease.itemsets.exact import itemset_supports

    raw = kosarak_like(4_000, 300, 8.0, seed=3)
    wl = frequent_workload(raw, min_share=0.02, n_queries=400, seed=1)
    assert wl.max_lengths == list(range(1, len(wl.max_lengths) + 1)) and wl.max_lengths[0] == 1
    assert wl.min_count == 80 and wl.found >= sum(len(s) for s in wl.subsets)
    for L, group in zip(wl.max_lengths, wl.subsets):
        assert 0 < len(group) <= 100 and all(q.size == L for q in group)
        sup = itemset_supports(raw, [tuple(int(i) for i in q) for q in group])
        assert (sup >= wl.min_count).all()
    assert frequent_workload(raw, min_share=0.02, n_queries=400, seed=1).subsets[-1][0].tolist() == \
        wl.subsets[-1][0].tolist()  # seeded


def test_uniform_baskets_keep_the_sizes_and_spread_the_items():
    from dprelease.evaluation.counting import uniform_baskets

    lengths = np.array([1, 17, 5, 0, 12] * 400)
    db = uniform_baskets(17, lengths, seed=4)
    assert db.lengths.tolist() == lengths.tolist()  # a record of 17 items over 17 items holds all of them
    sup = db.item_supports() / lengths.sum()
    assert np.abs(sup - 1 / 17).max() < 0.01
    big = uniform_baskets(100_000, np.full(300, 400), seed=0)
    assert (big.lengths == 400).all() and all(np.unique(big.record(r)).size == 400 for r in range(3))


def test_the_frequent_workload_separates_a_release_from_both_baselines():
    """On sparse data the random workload cannot tell a good release from nothing; the frequent one can."""
    from dprelease.evaluation.counting import evaluate_counting_with_baselines

    raw = kosarak_like(6_000, 2_000, 8.0, seed=5)
    sample = raw.subset(np.random.default_rng(0).choice(raw.n_records, 3_000, replace=False))
    good = TransactionDB.concat([sample, sample])  # supports within sampling error of the raw ones
    res = evaluate_counting_with_baselines(raw, good, n_queries=2_000, seed=2, min_share=0.01)
    empty, uniform = res["baselines"]["empty"], res["baselines"]["uniform"]
    assert res["frequent"]["mean_relative_error"] < 0.2
    assert empty["frequent"]["mean_relative_error"] == 1.0
    assert uniform["frequent"]["mean_relative_error"] > 0.5
    # the random workload is near the sanity bound for all three: it cannot separate them by much
    assert empty["mean_relative_error"] < 0.5


@pytest.mark.parametrize("block", [64, 1_000, 1 << 22])  # several blocks of records, partial 64-bit words
def test_frequent_counts_match_the_support_counter(block):
    from dprelease.evaluation.counting import frequent_counts

    rng = np.random.default_rng(block)
    raw = kosarak_like(3_001, 400, 7.0, seed=4)
    queries = [np.sort(rng.choice(30, size=int(rng.integers(1, 5)), replace=False)) for _ in range(300)]
    queries += [np.sort(rng.choice(400, size=2, replace=False)) for _ in range(50)] + [np.zeros(0, dtype=np.int64)]
    lengths = np.array([q.size for q in queries])
    flat = np.concatenate(queries)
    expected = SupportCounter(raw).count_flat(flat, lengths)
    assert frequent_counts(raw, flat, lengths, block=block).tolist() == expected.tolist()
