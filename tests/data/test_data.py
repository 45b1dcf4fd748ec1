"""Data layer: reader rules, universe declaration, CSR helpers, taxonomy, real dataset statistics."""

from __future__ import annotations

import gzip
import warnings

import numpy as np
import pytest
from conftest import dataset

from dprelease.data import (
    ContextFreeTaxonomy,
    TransactionDB,
    kosarak_like,
    parse_universe_spec,
    read_transactions,
)
from dprelease.errors import InputError, ParameterError, PrivacyLeakWarning


def _write(tmp_path, text: str, name: str = "d.dat"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_reader_skips_comments_blank_lines_and_dedupes(tmp_path):
    path = _write(tmp_path, "# header comment\n1 2 3 \n\n  # indented comment\n3 3 1\r\n17\n")
    db, universe = read_transactions(path, parse_universe_spec("1..17"))
    assert db.to_lists() == [[0, 1, 2], [0, 2], [16]]
    assert universe.source == "declared-range" and universe.size == 17


def test_item_outside_declared_universe_names_file_and_line(tmp_path):
    path = _write(tmp_path, "1 2\n# c\n3 18\n")
    with pytest.raises(InputError, match=r"d\.dat:3: item 18 is not in the declared universe"):
        read_transactions(path, parse_universe_spec("1..17"))


def test_non_integer_token_against_integer_universe(tmp_path):
    path = _write(tmp_path, "1 2\n2 x1\n")
    with pytest.raises(InputError, match=r"d\.dat:2: item 'x1'"):
        read_transactions(path, parse_universe_spec("1..17"))


def test_empty_file_is_an_error(tmp_path):
    path = _write(tmp_path, "# only a comment\n\n")
    with pytest.raises(InputError, match="no transactions"):
        read_transactions(path, parse_universe_spec("1..3"))


def test_missing_file_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="cannot read"):
        read_transactions(tmp_path / "nope.dat", None, derive=True)


def test_derived_universe_warns_and_is_recorded(tmp_path):
    path = _write(tmp_path, "5 9\n9\n")
    with pytest.warns(PrivacyLeakWarning):
        db, universe = read_transactions(path, None, derive=True)
    assert universe.labels == ("5", "9")
    assert universe.describe()["source"] == "derived-from-data"
    assert "warning" in universe.describe()


def test_string_items_with_universe_file(tmp_path):
    uni = _write(tmp_path, "bread\nmilk\n# comment\nbeer\n", "items.txt")
    data = _write(tmp_path, "milk bread\nbeer\nbeer milk milk\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # declared: no leak warning
        db, universe = read_transactions(data, parse_universe_spec(str(uni)))
    assert universe.labels == ("bread", "milk", "beer")
    assert db.to_lists() == [[0, 1], [2], [1, 2]]
    bad = _write(tmp_path, "milk\nwine\n", "bad.dat")
    with pytest.raises(InputError, match=r"bad\.dat:2: item 'wine'"):
        read_transactions(bad, universe)


def test_universe_spec_errors(tmp_path):
    with pytest.raises(ParameterError):
        parse_universe_spec("9..1")
    with pytest.raises(ParameterError):
        parse_universe_spec(str(tmp_path / "missing.txt"))
    dup = _write(tmp_path, "a\nb\na\n", "dup.txt")
    with pytest.raises(InputError, match="listed twice"):
        parse_universe_spec(str(dup))


def test_gzip_input(tmp_path):
    path = tmp_path / "d.dat.gz"
    path.write_bytes(gzip.compress(b"1 2\n2\n"))
    db, _ = read_transactions(path, parse_universe_spec("1..2"))
    assert db.to_lists() == [[0, 1], [1]]


def test_csr_helpers_round_trip():
    db = TransactionDB.from_lists([[2, 0], [1], [0, 1, 2], [2]], 3)
    assert db.to_lists() == [[0, 2], [1], [0, 1, 2], [2]]
    assert db.item_supports().tolist() == [2, 2, 3]
    assert db.subset(np.array([2, 0])).to_lists() == [[0, 1, 2], [0, 2]]
    assert TransactionDB.concat([db, db.subset(np.array([1]))]).n_records == 5
    w = TransactionDB.from_weighted_itemsets([np.array([0, 2]), np.array([1])], np.array([2, 3]), 3)
    assert w.to_lists() == [[0, 2], [0, 2], [1], [1], [1]]


def test_context_free_taxonomy_shapes():
    t = ContextFreeTaxonomy.build(4, 2)
    assert t.n_internal == 3 and int(t.height[t.root]) == 2
    t17 = ContextFreeTaxonomy.build(17, 10)
    # 17 leaves, f = 10: two groups (10 + 7) under one root
    assert t17.n_internal == 3
    assert [int(t17.n_children[c]) for c in t17.children(t17.root)] == [10, 7]
    assert t17.child_index(t17.root, np.array([0, 9, 10, 16])).tolist() == [0, 0, 1, 1]
    big = ContextFreeTaxonomy.build(16_470, 10)
    assert int(big.height[big.root]) == 5
    assert big.n_internal == sum(-(-16_470 // 10**h) for h in range(1, 5)) + 1
    with pytest.raises(ParameterError):
        ContextFreeTaxonomy.build(10, 1)


def test_kosarak_like_generator_shape():
    db = kosarak_like(20_000, 5_000, 8.0, seed=1)
    assert db.n_records == 20_000 and db.n_items == 5_000
    assert 6.5 < db.lengths.mean() < 9.5
    supports = np.sort(db.item_supports())[::-1]
    assert supports[0] > 20 * np.median(supports)  # long tail


@pytest.mark.parametrize(
    "parts, universe, n, n_items, avg, max_len",
    [
        (("msnbc", "msnbc.dat"), "1..17", 989_818, 17, 1.7168, 17),
        (("retail", "retail.dat"), None, 88_162, 16_470, 10.3058, 76),
        (("mushroom", "mushroom.dat"), None, 8_124, 119, 23.0, 23),
    ],
)
def test_real_dataset_statistics(parts, universe, n, n_items, avg, max_len):
    path = dataset(*parts)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        db, uni = read_transactions(path, parse_universe_spec(universe) if universe else None, derive=not universe)
    assert db.n_records == n
    assert uni.size == n_items
    assert db.lengths.mean() == pytest.approx(avg, abs=1e-4)
    assert int(db.lengths.max()) == max_len


def test_atomic_output_leaves_nothing_on_failure(tmp_path):
    from dprelease.data.io import atomic_output

    target = tmp_path / "out.dat"
    target.write_text("old\n")
    with pytest.raises(KeyboardInterrupt):
        with atomic_output(target) as fh:
            fh.write("half of a new rel")
            raise KeyboardInterrupt
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.dat"]
    with atomic_output(tmp_path / "sub" / "new.dat") as fh:
        fh.write("done\n")
    assert (tmp_path / "sub" / "new.dat").read_text() == "done\n"
