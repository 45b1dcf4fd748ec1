"""Per-occurrence passes computed block by block: the same numbers as the whole-database form."""

from __future__ import annotations

import numpy as np
import pytest

from dprelease.data.transactions import TransactionDB
from dprelease.evaluation.occurrence import _item_keys, set_hashes
from dprelease.engine import supports
from dprelease.engine.supports import bit_columns


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
    columns, row_of = bit_columns(db, items)
    rows = db.row_ids()
    for i in items[:: max(1, items.size // 10)].tolist():
        flags = np.zeros(columns.shape[1] * 64, dtype=bool)
        flags[rows[db.items == i]] = True
        assert np.array_equal(columns[row_of[i]], np.packbits(flags, bitorder="little").view(np.uint64))


def test_occurrence_share_over_raw_blocks_equals_one_counter(monkeypatch):
    from dprelease.evaluation import occurrence
    from dprelease.engine.supports import SupportCounter

    rng = np.random.default_rng(2)
    raw = TransactionDB.from_lists([sorted(set(rng.integers(0, 60, rng.integers(0, 9)).tolist()))
                                    for _ in range(50_000)], 60)
    rel = TransactionDB.from_lists([sorted(set(rng.integers(0, 60, rng.integers(0, 6)).tolist()))
                                    for _ in range(3_000)] + [[]] * 3, 60)
    whole = occurrence.occurrence_share(raw, rel, raw_counter=SupportCounter(raw))
    monkeypatch.setattr(occurrence, "_RAW_BLOCK_ENTRIES", 1 << 12)
    assert occurrence.occurrence_share(raw, rel) == whole
    assert 0 < whole["distinct_exact"] < whole["distinct_contained"] < 1


# --- PrivBasis's passes on the local engine: blocks of a few records give the whole database's numbers -------


def _sparse_db(n: int = 6_000, n_items: int = 200, seed: int = 5) -> TransactionDB:
    """Short records over Zipf-like items, a few long ones (weights below 1) and some empty records."""
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, n_items + 1) ** 0.8
    p /= p.sum()
    lengths = np.where(rng.random(n) < 0.05, rng.integers(10, 40, n), rng.integers(0, 6, n))
    return TransactionDB.from_lists([sorted(set(rng.choice(n_items, m, p=p).tolist())) for m in lengths], n_items)


def _exact_float(total) -> float:
    """A Fraction as the float nearest to it (Python's int division rounds correctly): the engines' exact sums
    of the float64 weights, rounded once."""
    return total.numerator / total.denominator


def test_privbasis_passes_in_tiny_blocks_equal_the_whole_database(monkeypatch):
    from fractions import Fraction
    from math import comb

    from dprelease.engine import local as local_engine

    db = _sparse_db()
    data = local_engine.LocalTransactions(db)
    lengths = db.lengths
    items = np.array([0, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144])
    proj = np.isin(db.items, items)
    m = np.bincount(db.row_ids()[proj], minlength=db.n_records)
    ell = 3
    want_items = [Fraction(0)] * db.n_items
    want_pairs = {}
    for r in range(db.n_records):
        rec = db.record(r).tolist()
        w = Fraction(min(1.0, ell / max(len(rec), 1)))  # the float64 weight, summed exactly
        for i in rec:
            want_items[i] += w
        mine = [i for i in rec if i in set(items.tolist())]
        if len(mine) >= 2:
            wp = Fraction(min(1.0, ell / comb(len(mine), 2)))
            for a, b in zip(*np.triu_indices(len(mine), 1)):
                key = (mine[a], mine[b])
                want_pairs[key] = want_pairs.get(key, Fraction(0)) + wp
    pos = {int(i): j for j, i in enumerate(items.tolist())}
    iu, ju = np.triu_indices(items.size, 1)
    pair_want = np.array([_exact_float(want_pairs.get((int(items[a]), int(items[b])), Fraction(0)))
                          for a, b in zip(iu, ju)])
    assert pos and pair_want.max() > 0
    for rows in (7, 64, 1 << 16):  # tiny blocks, small blocks, one block
        monkeypatch.setattr(local_engine, "PASS_ROWS", rows)
        monkeypatch.setattr(local_engine, "LENGTH_ROWS", rows)
        got_len, got_n = data.length_histogram()
        assert np.array_equal(np.repeat(got_len, got_n), np.sort(lengths))
        got_m, got_mn = data.projected_length_histogram(items)
        assert np.array_equal(np.repeat(got_m, got_mn), np.sort(m[m > 0]))
        assert np.array_equal(data.bounded_item_sums(ell), np.array([_exact_float(x) for x in want_items]))
        assert np.array_equal(data.bounded_pair_sums(items, ell), pair_want)
        assert local_engine.max_length(db) == int(lengths.max())
        data._summary = None
        assert data.summary().max_length == int(lengths.max())


def test_privbasis_default_release_is_the_same_in_tiny_blocks(monkeypatch):
    from dprelease.data.universe import Universe
    from dprelease.engine import local as local_engine
    from dprelease.itemsets.privbasis import privbasis
    from dprelease.privacy import SeededNoise

    db = _sparse_db()
    universe = Universe.from_range(0, db.n_items - 1)
    whole = privbasis(db, universe, 60, 1.0, noise=SeededNoise(3))
    assert whole.trace["regime"] == "multi-bounded"  # the bounded passes ran
    monkeypatch.setattr(local_engine, "PASS_ROWS", 5)
    monkeypatch.setattr(local_engine, "LENGTH_ROWS", 5)
    monkeypatch.setattr(supports, "AND_BATCH_WORDS", 1)
    monkeypatch.setattr(supports, "BIT_BLOCK_ROWS", 64)
    small = privbasis(db, universe, 60, 1.0, noise=SeededNoise(3))
    assert small.itemsets == whole.itemsets
    assert np.array_equal(small.counts, whole.counts)
    assert small.trace == whole.trace


@pytest.mark.parametrize("batch_words", [1, 3, 1 << 20])
def test_and_supports_in_batches_equal_the_direct_popcounts(db, batch_words, monkeypatch):
    items = np.arange(0, 300, 11)
    columns, _ = bit_columns(db, items)
    rng = np.random.default_rng(0)
    pairs = np.stack([rng.integers(0, items.size, 50), rng.integers(0, items.size, 50)], axis=1).astype(np.int64)
    want = np.bitwise_count(columns[pairs[:, 0]] & columns[pairs[:, 1]]).sum(axis=1, dtype=np.int64)
    monkeypatch.setattr(supports, "AND_BATCH_WORDS", batch_words)
    assert np.array_equal(supports.and_supports(columns, columns, pairs), want)
    assert supports.and_supports(columns, columns, pairs[:0]).size == 0


@pytest.mark.parametrize("min_items", [1, 2, 3])
def test_bit_columns_of_the_records_holding_min_items_equal_those_of_that_subset(db, min_items, monkeypatch):
    items = np.arange(0, 300, 9)
    held = np.bincount(db.row_ids()[np.isin(db.items, items)], minlength=db.n_records)
    want, _ = bit_columns(db.subset(np.flatnonzero(held >= min_items)), items)
    for rows in (64, 1 << 16):  # a block ends inside a word of the taken records
        monkeypatch.setattr(supports, "BIT_BLOCK_ROWS", rows)
        got, _ = bit_columns(db, items, min_items=min_items)
        assert np.array_equal(got, want)


def test_top_k_itemsets_in_tiny_blocks_equal_the_whole_database(monkeypatch):
    from dprelease.itemsets import exact

    small = _sparse_db(n=3_000)
    want = exact.top_k_itemsets(small, 80)
    assert max(len(s) for s, _ in want) >= 2
    monkeypatch.setattr(supports, "BIT_BLOCK_ROWS", 64)
    monkeypatch.setattr(supports, "AND_BATCH_WORDS", 1)
    assert exact.top_k_itemsets(small, 80) == want
    # the same supports as counting each itemset over the whole database
    assert [c for _, c in want] == exact.itemset_supports(small, [s for s, _ in want]).tolist()


def test_projection_and_pair_matrix_equal_brute_force(db, monkeypatch):
    items = np.arange(3, 300, 4)
    projected = supports.project(db, items, 2)
    held = [np.intersect1d(db.record(r), items) for r in range(db.n_records)]
    kept = [h for h in held if h.size >= 2]
    assert projected.n_records == len(kept) and projected.n_items == items.size
    assert all(np.array_equal(items[projected.record(j)], kept[j]) for j in range(0, len(kept), 997))
    got = supports.pair_matrix(projected)
    for a, b in [(0, 1), (5, 40), (10, 10), (73, 2)]:
        want = sum(1 for h in kept if items[a] in h and items[b] in h)
        assert got[a, b] == want == got[b, a]
    assert np.array_equal(np.diag(got), np.bincount(projected.items, minlength=items.size))
    monkeypatch.setattr(supports, "PAIR_CHUNK", 7)  # chunks of a few pairs and entries: the same matrix
    assert np.array_equal(supports.pair_matrix(projected), got)


@pytest.mark.parametrize("width,groups,merge", [(40, 8, None), (120, 8, None), (120, 1, None), (40, 8, 2)])
def test_basis_bin_counts_equal_a_record_by_record_count(db, width, groups, merge, monkeypatch):
    """At most 62 items in all (one int64 mask per record), more (groups of bases with 62 items or fewer, one
    mask sweep each), and more with one group allowed (the sweep of all bases at once); the blocks' distinct
    masks merged after every block (``merge``)."""
    from dprelease.data import passes

    monkeypatch.setattr(passes, "MAX_MASK_GROUPS", groups)
    if merge is not None:
        monkeypatch.setattr(passes, "_MERGE_MASKS", merge)

    rng = np.random.default_rng(width)
    pool = rng.choice(300, size=width, replace=False)
    bases = [tuple(sorted(rng.choice(pool, size=int(rng.integers(1, 11)), replace=False).tolist())) for _ in range(14)]
    bases.append(tuple(sorted(pool[:10].tolist())))
    want = [np.zeros(1 << len(b), dtype=np.int64) for b in bases]
    for r in range(db.n_records):
        rec = set(db.record(r).tolist())
        for basis, bins in zip(bases, want):
            bins[sum(1 << j for j, i in enumerate(basis) if i in rec)] += 1
    got = passes.basis_bin_counts(db, bases)  # the fixture's ~1.4M items span two blocks of records
    assert all(np.array_equal(g, w) for g, w in zip(got, want))
    assert len(passes.mask_groups([np.asarray(b) for b in bases])) == (1 if width == 40 else 2)


def test_nearest_floats_round_as_python_integers_do_ties_included():
    """The digit sums' conversion on arrays gives the float Python's exact ``int / int`` gives: random digit sums,
    unnormalised digits, totals exactly halfway between two floats (ties to even) and just beside them, and top
    digits too large for two words (Python's path)."""
    import random

    from dprelease.engine.kernels import WEIGHT_SHIFT, nearest_floats

    rnd = random.Random(5)
    rows, want = [], []
    for _ in range(4000):
        m = rnd.getrandbits(53) | (1 << 52)
        k = rnd.randint(1, 70)
        total = (m << k) + rnd.choice([1 << (k - 1), (1 << (k - 1)) - 1, (1 << (k - 1)) + 1, 0])
        digits = [(total >> (24 * j)) & ((1 << 24) - 1) for j in range(3)] + [total >> 72]
        if digits[3] > 0 and rnd.random() < 0.5:  # a carry left in a lower digit, as block sums leave them
            digits[3] -= 1
            digits[2] += 1 << 24
        rows.append(digits)
        want.append(total / (1 << WEIGHT_SHIFT))
    for _ in range(2000):
        digits = [rnd.getrandbits(rnd.randint(1, 62)) for _ in range(4)]
        rows.append(digits)
        want.append(sum(d << (24 * j) for j, d in enumerate(digits)) / (1 << WEIGHT_SHIFT))
    got = nearest_floats(np.array(rows, dtype=np.int64))
    assert np.array_equal(got, np.array(want))


def test_bounded_item_digits_without_the_dense_table_are_the_same(monkeypatch):
    """Many (item, length) cells: the per-digit weighted counts give the same exact digit sums as the table."""
    from dprelease.engine import kernels

    db = _sparse_db()
    for ell in (1, 2, 3, 5):
        dense = kernels.bounded_item_digits(db, ell)
        monkeypatch.setattr(kernels, "_DENSE_CELLS", 0)
        sparse = kernels.bounded_item_digits(db, ell)
        monkeypatch.undo()
        assert all(np.array_equal(a, b) for a, b in zip(dense, sparse))
        assert dense[0].size > 0


# --- a focused local engine: the passes over a subset of the focus read its projection, with the same numbers ----


def _passes(data, items: np.ndarray, bases: list[tuple[int, ...]]) -> list[np.ndarray]:
    """The passes PrivBasis makes over a subset of the items, as flat arrays (the bins read after the pair
    sums, when the engine may still hold the projection onto ``items``)."""
    from dprelease.itemsets import exact

    m, n_m = data.projected_length_histogram(items)
    pair_sums = data.bounded_pair_sums(items, 2)
    bins = data.basis_bin_counts(bases)
    top = exact.top_k_itemsets(data, 40)
    return [m, n_m, pair_sums, *bins, np.asarray([c for _, c in top]),
            np.asarray([i for s, _ in top for i in (*s, -1)])]


@pytest.mark.parametrize("focus_share", ["inside", "outside", "too-large"])
def test_focused_passes_equal_the_unfocused_ones(focus_share, monkeypatch):
    from dprelease.engine import local as local_engine
    from dprelease.itemsets.privbasis import focus_items

    db = _sparse_db()
    supports_ = db.item_supports()
    focus = focus_items(supports_, 30)  # the 60 most frequent items
    items = {"inside": focus[::2][:20], "outside": np.r_[focus[:10], np.flatnonzero(supports_ > 0)[-5:]],
             "too-large": focus[:20]}[focus_share]
    items = np.unique(items)
    bases = [tuple(items[:6].tolist()), tuple(items[4:12].tolist()), tuple(items[10:].tolist())]
    want = _passes(local_engine.LocalTransactions(db), items, bases)
    data = local_engine.LocalTransactions(db)
    if focus_share == "too-large":
        focus = np.flatnonzero(supports_ > 0)  # every item: no projection is kept
    else:  # (this small universe's 60 first items hold most occurrences)
        monkeypatch.setattr(local_engine, "FOCUS_SHARE", 0.99)
    with data.focused(focus):
        assert (data._focus is not None) == (focus_share != "too-large")
        got = _passes(data, items, bases)
    assert data._focus is None and data._projection is None
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.tobytes() == w.tobytes()


def test_bins_from_the_kept_projection_equal_the_pass_over_the_records(monkeypatch):
    from dprelease.data.passes import basis_bin_counts
    from dprelease.engine import local as local_engine

    monkeypatch.setattr(local_engine, "FOCUS_SHARE", 1.0)
    db = _sparse_db()
    data = local_engine.LocalTransactions(db)
    items = np.arange(0, 120, 2)  # 60 items: one int64 mask per record
    bases = [tuple(items[j : j + 9].tolist()) for j in range(0, 60, 7)]
    with data.focused(np.arange(db.n_items)):
        assert data._focus is not None
        data.bounded_pair_sums(items, 3)  # keeps the projection onto items inside the focus
        assert data._projection is not None
        assert data._focus is None  # ... which replaced the focus it was built from (not both held)
        got = data.basis_bin_counts(bases)
    want = basis_bin_counts(db, bases)
    assert all(np.array_equal(g, w) for g, w in zip(got, want))
    assert all(int(g.sum()) == db.n_records for g in got)


def test_stable_order_is_numpys_stable_argsort():
    from dprelease.engine.kernels import stable_order

    rng = np.random.default_rng(1)
    for values in (rng.integers(0, 40, 10_000), rng.integers(0, 1 << 20, 1_000), np.zeros(0, np.int64)):
        assert np.array_equal(stable_order(values), np.argsort(values, kind="stable"))
