"""DiffPart-Prefix: budget chain, exactness without noise, generalization, neighbours, CLI, seeded pins."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reference_trie import follow_each_record
from dprelease.cli import main
from dprelease.data import TransactionDB, Universe
from dprelease.errors import ParameterError
from dprelease.privacy import SeededNoise
from dprelease.engine.bitmasks import item_masks
from dprelease.setvalued.prefixpart import FILL_SHAPE_SHARE, prefix_diffpart

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "baskets.dat"


def _random_db(rng: np.random.Generator, n_items: int, n_records: int) -> TransactionDB:
    records = []
    for _ in range(n_records):
        size = int(rng.integers(1, min(n_items, 6) + 1))
        records.append(sorted(rng.choice(n_items, size=size, replace=False).tolist()))
    return TransactionDB.from_lists(records, n_items)


def _as_counter(release) -> Counter:
    return Counter({tuple(s.tolist()): int(c) for s, c in zip(release.itemsets, release.counts)})


@settings(max_examples=30, deadline=None)
@given(n_items=st.integers(1, 90), n_records=st.integers(1, 200), budget=st.floats(0.05, 8.0),
       shares=st.tuples(st.floats(0.01, 0.5), st.floats(0.01, 0.38), st.sampled_from([0.0, 0.1])),
       max_items=st.integers(1, 62), seed=st.integers(0, 10_000))
def test_the_chain_sums_to_exactly_epsilon(n_items, n_records, budget, shares, max_items, seed):
    rng = np.random.default_rng(seed)
    db = _random_db(rng, n_items, n_records)
    rel = prefix_diffpart(db, Universe.from_range(1, n_items), budget, noise=SeededNoise(seed),
                          selection_share=shares[0], structure_share=shares[1], shape_share=shares[2],
                          max_items=max_items, keep_trace=True)
    ledger = rel.accountant.ledger
    shape = ["record length histogram", "hidden frequent-item supports"] if shares[2] else []
    assert [e.label for e in ledger] == ["weighted item supports", "prefix structure (PrivTree)", "class counts",
                                         *shape]
    assert len({e.scope_id for e in ledger}) == 1  # one chain: sequential composition on the whole input
    assert math.fsum(e.epsilon for e in ledger) == pytest.approx(budget, rel=1e-12)
    assert rel.accountant.spent == pytest.approx(budget, rel=1e-12)
    assert rel.manifest["privacy"]["epsilon_spent"] <= budget * (1 + 1e-9)
    assert rel.manifest["release"]["frequent_items"] <= min(max_items, n_items)
    # canonical order, positive counts, items inside the universe
    keys = [tuple(s.tolist()) for s in rel.itemsets]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    assert all(c > 0 for c in rel.counts.tolist())
    assert all(0 <= i < n_items for k in keys for i in k)


def test_without_noise_repeated_records_are_released_exactly(zero_noise):
    """Zero noise and a huge budget: delta = 1, every cell with >= depth records splits; the release is the data."""
    rng = np.random.default_rng(3)
    distinct = {tuple(sorted(rng.choice(12, size=int(rng.integers(1, 5)), replace=False).tolist())) for _ in range(40)}
    records = [list(r) for r in sorted(distinct) for _ in range(15)]
    db = TransactionDB.from_lists(records, 12)
    rel = prefix_diffpart(db, Universe.from_range(1, 12), 1e4, noise=zero_noise)
    assert rel.manifest["release"]["privtree_depth_bias"] == 1
    assert _as_counter(rel) == Counter(tuple(r) for r in db.to_lists())


def test_a_rare_record_is_generalized_to_its_frequent_prefix(zero_noise):
    """Worked example (zero noise, delta = 1: a depth-d cell splits iff it holds >= d records). Supports order
    the items 0, 1, 2, 3. The record {0,1,2,3} is alone in the cell "with 2" under prefix {0,1} (depth 3,
    1 record < 3): the cell fails and is a class, released as its pattern {0,1,2}; item 3, whose level
    comes after the failing one, is dropped."""
    records = [[0]] * 40 + [[0, 1]] * 30 + [[0, 2]] * 10 + [[3]] * 5 + [[0, 1, 2, 3]]
    db = TransactionDB.from_lists(records, 4)
    rel = prefix_diffpart(db, Universe.from_range(1, 4), 1e4, noise=zero_noise, keep_trace=True, shape_share=0)
    assert [lv.item for lv in rel.trace] == [0, 1, 2, 3]
    assert [lv.kept for lv in rel.trace] == [2, 3, 4, 4]
    assert _as_counter(rel) == Counter({(0,): 40, (0, 1): 30, (0, 2): 10, (3,): 5, (0, 1, 2): 1})


def test_the_fill_gives_a_generalized_record_its_dropped_item_back(zero_noise):
    """The worked example above with the fill (``shape_share`` above 0): the length histogram holds one record of length 4
    and the hidden support of item 3 (rank 3, dropped by the class stopped at level 3) is 1, so the record
    {0,1,2} gets item 3 back; every other class knows all its bits or already has its length."""
    records = [[0]] * 40 + [[0, 1]] * 30 + [[0, 2]] * 10 + [[3]] * 5 + [[0, 1, 2, 3]]
    db = TransactionDB.from_lists(records, 4)
    rel = prefix_diffpart(db, Universe.from_range(1, 4), 1e4, noise=zero_noise, keep_trace=True,
                          shape_share=FILL_SHAPE_SHARE)
    assert _as_counter(rel) == Counter({(0,): 40, (0, 1): 30, (0, 2): 10, (3,): 5, (0, 1, 2, 3): 1})


def test_outside_items_keep_the_record_count(zero_noise):
    """Records with no selected item are released as single outside items (post-processing), not dropped."""
    records = [[0, 1]] * 50 + [[2]] * 30 + [[5 + (i % 40)] for i in range(30)]
    db = TransactionDB.from_lists(records, 80)
    rel = prefix_diffpart(db, Universe.from_range(1, 80), 1e4, noise=zero_noise, max_items=2, record_bound=2,
                          shape_share=0)
    got = _as_counter(rel)
    assert got[(0, 1)] == 50 and sum(got.values()) == 110
    assert all(len(k) == 1 and k[0] >= 2 for k in got if k != (0, 1))


def test_item_masks_cover_62_bits():
    db = TransactionDB.from_lists([list(range(62)), [0, 61], [30, 31, 32]], 70)
    rank = np.full(70, -1)
    rank[:62] = np.arange(62)
    masks = item_masks(db, rank)
    assert masks.shape == (3, 1)
    assert masks[:, 0].tolist() == [(1 << 62) - 1, 1 | (1 << 61), (1 << 30) | (1 << 31) | (1 << 32)]


def test_item_masks_take_a_word_per_62_ranks():
    db = TransactionDB.from_lists([list(range(130)), [0, 62, 124, 129], [61, 63], []], 140)
    rank = np.full(140, -1)
    rank[:130] = np.arange(130)
    masks = item_masks(db, rank)
    assert masks.shape == (4, 3)
    assert masks[0].tolist() == [(1 << 62) - 1, (1 << 62) - 1, (1 << 6) - 1]
    assert masks[1].tolist() == [1, 1, 1 | (1 << 5)] and masks[2].tolist() == [1 << 61, 1 << 1, 0]
    assert masks[3].tolist() == [0, 0, 0]
    from dprelease.engine import bitmasks

    assert bitmasks.mask_bits(masks, 130)[1].nonzero()[0].tolist() == [0, 62, 124, 129]
    assert bitmasks.popcount(masks).tolist() == [130, 4, 2, 0]
    assert bitmasks.bit_column(masks, 63).tolist() == [1, 0, 1, 0]
    low = masks & bitmasks.low_bits(np.array([63, 63, 63, 63]), 3)
    assert low[2].tolist() == [1 << 61, 0, 0] and low[1].tolist() == [1, 1, 0]
    assert bitmasks.with_bit(masks[3:], 125, np.ones(1))[0].tolist() == [0, 0, 1 << 1]


def test_prefix_keys_sort_rows_by_rank_zero_first_across_words():
    """The trie's order: rows compared rank by rank from rank 0, across word boundaries (one word: uint64)."""
    from dprelease.engine import bitmasks

    rng = np.random.default_rng(4)
    for m in (40, 62, 63, 150):
        bits = rng.random((300, m)) < 0.3
        bits[:20, : m // 2] = False  # shared prefixes, so later words decide
        masks = np.zeros((300, bitmasks.n_words(m)), dtype=np.int64)
        for r in range(m):
            masks = bitmasks.with_bit(masks, r, bits[:, r])
        keys = bitmasks.prefix_keys(masks)
        want = sorted(range(300), key=lambda i: tuple(bool(b) for b in bits[i]))
        got = np.argsort(keys, kind="stable").tolist()
        assert [tuple(bits[i]) for i in got] == [tuple(bits[i]) for i in want], m


def test_reverse_bits_moves_rank_r_to_bit_63_minus_r():
    from dprelease.engine.bitmasks import reverse_bits

    values = np.array([1, 2, (1 << 61) | 1, 0, (1 << 62) - 1], dtype=np.int64)
    got = reverse_bits(values.copy()).tolist()
    want = [int(f"{v:064b}"[::-1], 2) for v in values.tolist()]
    assert got == want and got[0] == 1 << 63 and got[1] == 1 << 62


@pytest.mark.parametrize("seed,n_items,max_items", [(0, 40, None), (1, 40, None), (2, 40, None),
                                                    (3, 220, 150), (4, 160, 124)])
def test_sorted_key_cells_equal_following_each_record(monkeypatch, seed, n_items, max_items):
    """The in-memory trie (records as sorted prefix keys, cells as ranges, masks filled in tiny blocks) gives
    every class the records that follow the trie one by one (``reference_trie``); empty records belong to none.
    So does the search of the leaves' key runs (``classes_of``). Also with F past one 62-bit word (masks of two
    and three words)."""
    from dprelease.engine import bitmasks, local
    from dprelease.privacy import BudgetAccountant
    from dprelease.setvalued import prefixpart

    monkeypatch.setattr(local, "PASS_ROWS", 7)
    monkeypatch.setattr(bitmasks, "_KEY_CHUNK", 5)
    rng = np.random.default_rng(seed)
    selection_false = 1.0
    if max_items is None:
        records = [sorted(rng.choice(40, size=int(rng.integers(0, 7)), replace=False).tolist()) for _ in range(900)]
        max_items = int(rng.integers(3, 20))
    else:
        selection_false = n_items / 2  # a cutoff of 0: F is the max_items items of largest noisy support
        # Zipf-like item popularity, so that the trie goes deep (past rank 62) on some paths
        p = 1.0 / np.arange(1, n_items + 1) ** 0.6
        records = [sorted(rng.choice(n_items, size=int(rng.integers(0, 30)), replace=False, p=p / p.sum()).tolist())
                   for _ in range(3000)]
        records += [list(range(100))] * 200  # a heavy path that holds the 100 most popular items: past rank 62
    db = TransactionDB.from_lists(records, n_items)
    scope = BudgetAccountant(3.0).root()
    tree, counts = prefixpart.build_prefix_tree(db, n_items, 1.0, 2.0, scope=scope, noise=SeededNoise(seed),
                                                max_items=max_items, beta=2.0, selection_false=selection_false)
    follow = follow_each_record(tree, db)
    assert tree.n_nodes > 10 and counts.sum() == int((db.lengths > 0).sum())
    assert counts.tolist() == np.bincount(follow[follow >= 0], minlength=tree.n_nodes).tolist()
    assert not counts[~tree.is_class].any()
    if n_items > 62:
        assert tree.m > 62 and tree.pattern.shape[1] == bitmasks.n_words(tree.m) and tree.level.max() > 62
    # classes_of (and the hidden-supports kernel) find each record's class by one search of the leaves' key runs:
    # the same class
    found = tree.classes_of(db)
    assert found[follow >= 0].tolist() == follow[follow >= 0].tolist()


def test_seeded_release_is_pinned():
    """A seeded run is reproducible byte for byte (pin: a change of the algorithm must update it knowingly)."""
    rng = np.random.default_rng(11)
    db = _random_db(rng, 9, 400)
    a = prefix_diffpart(db, Universe.from_range(1, 9), 1.0, noise=SeededNoise(5), shape_share=FILL_SHAPE_SHARE)
    b = prefix_diffpart(db, Universe.from_range(1, 9), 1.0, noise=SeededNoise(5), shape_share=FILL_SHAPE_SHARE)
    assert _as_counter(a) == _as_counter(b)
    assert a.n_records == PINNED_RECORDS and len(a.itemsets) == PINNED_DISTINCT
    # without the fill: the bare generalized records, as this method released them before the fill
    bare = prefix_diffpart(db, Universe.from_range(1, 9), 1.0, noise=SeededNoise(5), shape_share=0)
    assert bare.n_records == 371 and len(bare.itemsets) == 33
    # the default ("auto"): 9 items, records of ~4: dense, so no fill; the length histogram was paid first
    auto = prefix_diffpart(db, Universe.from_range(1, 9), 1.0, noise=SeededNoise(5))
    shape = auto.manifest["release"]["shape"]
    assert shape["filled"] is False and shape["density"] ** 2 > 1e-3
    assert auto.n_records == 364 and len(auto.itemsets) == 33


PINNED_RECORDS = 378
PINNED_DISTINCT = 152


@pytest.mark.parametrize("bad", [{"epsilon": 0}, {"selection_share": 0}, {"structure_share": 1.0},
                                 {"selection_share": 0.6, "structure_share": 0.4}, {"record_bound": 0},
                                 {"max_items": 497}, {"beta": 1.0}, {"theta": 0.5}, {"merge_below": -1},
                                 {"shape_share": -0.1}, {"shape_share": 1.0},
                                 {"selection_share": 0.3, "structure_share": 0.6, "shape_share": 0.1}])
def test_parameter_errors(bad):
    args = {"epsilon": 1.0} | bad
    db = TransactionDB.from_lists([[0]], 2)
    with pytest.raises(ParameterError):
        prefix_diffpart(db, Universe.from_range(1, 2), args.pop("epsilon"), noise=SeededNoise(0), **args)


def _event_rates(db: TransactionDB, runs: int, seed: int, algorithm) -> dict[str, float]:
    noise = SeededNoise(seed)
    counts: Counter = Counter()
    for _ in range(runs):
        sets = _as_counter(algorithm(db, noise))
        counts["has {0,1}"] += (0, 1) in sets
        counts["{0,1} >= 4"] += sets.get((0, 1), 0) >= 4
        counts["has {0}"] += (0,) in sets
        counts["total >= 8"] += sum(sets.values()) >= 8
        counts["has {2}"] += (2,) in sets
    return {k: counts[k] / runs for k in ("has {0,1}", "{0,1} >= 4", "has {0}", "total >= 8", "has {2}")}


def test_neighbouring_datasets_stay_within_e_to_the_epsilon():
    """Empirical check on D and D + {one record}: P[E|D] <= e^eps P[E|D'] (5 binomial s.e. tolerance, fixed seeds)."""
    eps = 0.7
    base = [[0, 1], [0, 1], [0, 1], [2], [0], [1, 2]]
    d1 = TransactionDB.from_lists(base, 3)
    d2 = TransactionDB.from_lists(base + [[0, 1]], 3)
    uni = Universe.from_range(1, 3)
    algo = lambda db, noise: prefix_diffpart(db, uni, eps, noise=noise)  # noqa: E731
    runs = 1500
    r1 = _event_rates(d1, runs, 1, algo)
    r2 = _event_rates(d2, runs, 2, algo)
    bound = math.exp(eps)
    for event in r1:
        p, q = r1[event], r2[event]
        se = math.sqrt((p * (1 - p) + q * (1 - q)) / runs) + 1e-3
        assert p <= bound * q + 5 * bound * se, (event, p, q)
        assert q <= bound * p + 5 * bound * se, (event, p, q)


def test_cli_defaults_to_prefix_and_keeps_the_faithful_method(tmp_path, capsys):
    out = tmp_path / "rel.dat"
    assert main(["diffpart", str(EXAMPLE), "--universe", "1..12", "-e", "1", "-o", str(out), "-q"]) == 0
    manifest = json.loads(Path(str(out) + ".manifest.json").read_text())
    assert manifest["algorithm"] == "diffpart-prefix"
    assert set(manifest["parameters"]) >= {"selection_share", "structure_share", "record_bound", "max_items", "beta"}
    assert len(out.read_text().splitlines()) == manifest["release"]["records"]
    assert main(["diffpart", str(EXAMPLE), "--universe", "1..12", "-e", "1", "-o", str(out), "-q",
                 "--method", "faithful", "--fanout", "4", "--force"]) == 0
    manifest = json.loads(Path(str(out) + ".manifest.json").read_text())
    assert manifest["algorithm"] == "diffpart" and manifest["parameters"]["fanout"] == 4
    # an option of the faithful method selects it when --method is not given; with --method prefix it is an error
    assert main(["diffpart", str(EXAMPLE), "--universe", "1..12", "-e", "1", "-o", str(out), "-q", "--c1", "2",
                 "--force"]) == 0
    assert json.loads(Path(str(out) + ".manifest.json").read_text())["algorithm"] == "diffpart"
    capsys.readouterr()
    assert main(["diffpart", str(EXAMPLE), "--universe", "1..12", "-e", "1", "-o", str(out), "--c1", "2",
                 "--method", "prefix", "--force"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--c1 only applies to --method faithful" in err


class _EighthNoise:
    """A broken source for the audit's power check: discrete Laplace at an eighth of the asked scale."""

    def __init__(self, inner):
        self._inner = inner
        self.mode, self.seed = inner.mode, inner.seed

    def discrete_laplace(self, scale, size):
        return self._inner.discrete_laplace(scale / 8.0, size)

    def __getattr__(self, name):
        return getattr(self._inner, name)


@pytest.mark.slow
def test_audit_passes_and_flags_a_broken_noise_source():
    """`dprelease audit diffpart-prefix` finds nothing at the threshold pair, and flags 8x too little noise."""
    from dprelease.audit import audit_case, cases_for

    case = [c for c in cases_for("diffpart-prefix", 1.0) if c.name.endswith("count-at-split-threshold")][0]
    assert not audit_case(case, runs=1200, seed=1).violation
    assert audit_case(case, runs=1200, seed=1, noise_wrapper=_EighthNoise).violation


@pytest.mark.slow
def test_stream_parallel_audit_finds_no_violation():
    """`dprelease audit stream-parallel`: parallel accounting (tdpart and prefix partitioning, SQLite state)."""
    from dprelease.audit import run_audit

    res = run_audit("stream-parallel", epsilon=1.0, runs=2000, seed=7)
    assert res.cases and not any(c.violation or c.error for c in res.cases), res.as_json()


def test_the_fill_falls_back_to_bare_records_past_the_memory_limit():
    """auto: the fill's memory (noisy records x noisy mean length x FILL_BYTES_PER_ITEM) over --max-memory
    releases the bare records, as the density rule does, and says why; an explicit shape share is refused."""
    from dprelease import limits

    rng = np.random.default_rng(2)
    records = [sorted(rng.choice(3000, size=int(rng.integers(1, 12)), replace=False).tolist()) for _ in range(3000)]
    db = TransactionDB.from_lists(records, 3000)
    u = Universe.from_range(1, 3000)
    filled = prefix_diffpart(db, u, 1.0, noise=SeededNoise(4))
    assert filled.manifest["release"]["shape"]["filled"] is True
    with limits.limits_set(max_memory=64 * 1000):  # below the ~3,000 x 6 items x 64 bytes the fill needs
        bare = prefix_diffpart(db, u, 1.0, noise=SeededNoise(4))
        shape = bare.manifest["release"]["shape"]
        assert shape["filled"] is False and "over the limit" in shape["memory"]
        assert any("raise --max-memory" in note for note in bare.manifest.get("notes", []))
        assert max(len(s) for s in bare.itemsets) < max(len(s) for s in filled.itemsets)
        with pytest.raises(limits.WorkLimitError, match="the fill"):
            prefix_diffpart(db, u, 1.0, noise=SeededNoise(4), shape_share=0.1)
