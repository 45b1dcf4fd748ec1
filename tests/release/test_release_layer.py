"""The release layer (dprelease.release): an algorithm returns a complete release, the layer writes it and reads
it back as the same kind of object, and the report and the evaluation read releases only through it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO

from dprelease.data import Universe, read_transactions
from dprelease.data.graphs import read_edge_list
from dprelease.data.table import load_schema, read_table
from dprelease.errors import InputError
from dprelease.privacy import make_noise
from dprelease.release import KINDS, Release, SetValuedRelease, kind_of, read, read_manifest
from dprelease.release.degrees import DegreeRelease, GraphRelease
from dprelease.release.itemsets import ItemsetRelease
from dprelease.release.table import GeneralizedTable, SyntheticTable

BASKETS = REPO / "examples" / "baskets.dat"
JOBS = REPO / "examples" / "table1-jobs.csv"
JOBS_SCHEMA = REPO / "examples" / "table1-schema.yaml"
U12 = Universe.from_range(1, 12)
# what only the writer adds: the files' names and hashes, and what describes a file's layout
FILE_FACTS = ("body", "body_sha256", "other_files")


def _graph(tmp_path: Path):
    rng = np.random.default_rng(3)
    edges = {(int(a), int(b)) for a, b in rng.integers(0, 60, size=(200, 2)) if a < b}
    path = tmp_path / "g.txt"
    path.write_text("".join(f"{a} {b}\n" for a, b in sorted(edges)))
    return read_edge_list(path)


def _releases(tmp_path: Path) -> dict[str, Release]:
    """One seeded release of every kind, made by the algorithms themselves (no command in between)."""
    from dprelease.graphs.degrees import release_degrees
    from dprelease.graphs.regenerate import regenerated_graph
    from dprelease.itemsets.privbasis import privbasis
    from dprelease.relational.diffgen import diffgen
    from dprelease.relational.rps import rps
    from dprelease.setvalued.prefixpart import prefix_diffpart

    db, _ = read_transactions(BASKETS, U12)
    table = read_table(JOBS, load_schema(JOBS_SCHEMA))
    degrees = release_degrees(_graph(tmp_path), 8, 1.0, noise=make_noise(5))
    return {
        "diffpart.dat": prefix_diffpart(db, U12, 1.0, noise=make_noise(1)),
        "privbasis.csv": privbasis(db, U12, 5, 1.0, noise=make_noise(2)),
        "diffgen.csv": diffgen(table, 1.0, 2, noise=make_noise(3)),
        "rps.parquet": rps(table, 1.0, noise=make_noise(4), depth=3),
        "degrees.txt": degrees,
        "graph.txt": regenerated_graph(degrees, "configuration", make_noise(6), derived_from="degrees.txt"),
    }


def test_an_algorithm_returns_the_manifest_that_is_written(tmp_path):
    """Before the release layer, DiffGen, RPS and the degree methods returned manifest *parts* (the command
    assembled the rest); now the written manifest is the release's, plus what describes the files."""
    for name, release in _releases(tmp_path).items():
        assert isinstance(release, Release) and release.kind in KINDS
        written = release.write(tmp_path / name)
        on_disk = read_manifest(written.body)
        for key in ("algorithm", "version", "epsilon", "parameters", "rng", "domain", "privacy", "release"):
            assert key in release.manifest, (name, key)
        expected = dict(release.manifest)
        got = {k: v for k, v in on_disk.items() if k not in FILE_FACTS}
        if isinstance(release, ItemsetRelease):  # the CSV's columns and what its frequency means
            assert got["release"]["columns"] == ["itemset", "count", "frequency", "sd", "low", "high"]
            got["release"] = {k: v for k, v in got["release"].items() if k not in ("columns", "frequency")}
        if isinstance(release, GeneralizedTable):  # the files it wrote
            assert got["release"].pop("files") == {"contingency_table": name}
        if written.others and isinstance(got.get("uncertainty"), dict):  # the companion holding the error bars
            assert got["uncertainty"].pop("file") == written.others[0].name
            expected["uncertainty"] = {k: v for k, v in expected["uncertainty"].items() if k != "file"}
        assert json.loads(json.dumps(got)) == json.loads(json.dumps(expected)), name
        assert kind_of(on_disk) == release.kind


def test_every_kind_reads_back_what_it_wrote(tmp_path):
    releases = _releases(tmp_path)
    for name, release in releases.items():
        release.write(tmp_path / name)
    schema = load_schema(JOBS_SCHEMA)

    sv = releases["diffpart.dat"]
    back = read(tmp_path / "diffpart.dat", universe=U12)
    assert isinstance(back, SetValuedRelease)
    assert [s.tolist() for s in back.itemsets] == [s.tolist() for s in sv.itemsets]
    assert back.counts.tolist() == sv.counts.tolist() and back.n_records == sv.n_records

    pb = releases["privbasis.csv"]
    back = read(tmp_path / "privbasis.csv", universe=U12)
    assert isinstance(back, ItemsetRelease) and back.itemsets == [tuple(sorted(s)) for s in pb.itemsets]
    np.testing.assert_allclose(back.counts, np.round(pb.counts, 3))
    assert back.manifest["release"]["requested_k"] == 5

    dg = releases["diffgen.csv"]
    back = read(tmp_path / "diffgen.csv", schema=schema)
    assert isinstance(back, GeneralizedTable) and back.cut == dg.cut
    np.testing.assert_array_equal(back.counts, dg.counts)

    rp = releases["rps.parquet"]
    back = read(tmp_path / "rps.parquet", schema=schema)
    assert isinstance(back, SyntheticTable) and back.n_records == rp.n_records
    np.testing.assert_array_equal(back.table.y, rp.table.y)
    for a, b in zip(back.table.columns, rp.table.columns):
        np.testing.assert_array_equal(a, b)

    back = read(tmp_path / "degrees.txt")
    assert isinstance(back, DegreeRelease) and back.degrees.tolist() == releases["degrees.txt"].degrees.tolist()
    assert back.theta == 8 and back.method == "rps"
    back = read(tmp_path / "graph.txt")
    assert isinstance(back, GraphRelease)
    assert back.degrees().tolist() == read_edge_list(tmp_path / "graph.txt").degrees().tolist()


def test_a_reader_refuses_another_kind_and_a_pair_that_does_not_match(tmp_path):
    releases = _releases(tmp_path)
    for name in ("diffpart.dat", "privbasis.csv"):
        releases[name].write(tmp_path / name)
    with pytest.raises(InputError, match="privbasis.csv is a PrivBasis release, not a set-valued release"):
        SetValuedRelease.read(tmp_path / "privbasis.csv", U12)
    with pytest.raises(InputError, match="is a diffpart-prefix release, not an itemset release"):
        ItemsetRelease.read(tmp_path / "diffpart.dat", U12)
    (tmp_path / "diffpart.dat").write_text("1 2\n")  # the body of another run
    with pytest.raises(InputError, match="does not match its manifest"):
        SetValuedRelease.read(tmp_path / "diffpart.dat", U12)


def test_a_set_valued_release_reads_back_its_pairs_from_runs_of_lines(tmp_path):
    """The body holds count copies of each itemset in a run; reading groups the runs into pairs again."""
    release = SetValuedRelease([np.array([0, 2]), np.array([1]), np.array([0, 1, 2])], np.array([3, 1, 2]),
                               Universe.from_range(1, 3), {"algorithm": "diffpart", "package": "dprelease",
                                                           "release": {"records": 6}})
    release.write(tmp_path / "r.dat")
    assert (tmp_path / "r.dat").read_text() == "1 2 3\n1 2 3\n1 3\n1 3\n1 3\n2\n"
    back = SetValuedRelease.read(tmp_path / "r.dat", release.universe)
    assert [s.tolist() for s in back.itemsets] == [[0, 1, 2], [0, 2], [1]] and back.counts.tolist() == [2, 3, 1]


def test_report_evaluation_and_release_import_only_down():
    """The report read releases through commands/ (and split tables through experiments/): upward imports."""
    from test_layers import _breaks

    breaks = [b for b in _breaks() if b.startswith(("dprelease/report/", "dprelease/evaluation/",
                                                    "dprelease/release/"))]
    assert breaks == []


def test_canonical_itemset_order_is_pythons_tuple_then_count_order():
    """The canonical order of (itemset, count) pairs, computed on arrays, is Python's sort of (items tuple,
    count), ties kept in input order: random itemsets with repeats, empty ones, negative counts, item ids of one
    to eight bytes (windows of eight to one items per pass), and rows sharing prefixes longer than a window."""
    from dprelease.release import setvalued as sv

    rng = np.random.default_rng(0)
    for trial in range(60):
        n = int(rng.integers(0, 300))
        top = (60, 255, 256, 70_000, 1 << 40)[trial % 5]  # item ids held in 1, 2, 4 and 8 bytes
        if trial % 3 == 0:  # a few ids only, long rows: prefixes shared past several windows
            pool = np.unique(rng.integers(0, top, 24))
            sets = [np.unique(rng.choice(pool, int(rng.integers(0, 24)))) for _ in range(n)]
            sets = [s[: int(rng.integers(0, s.size + 1))] if rng.random() < 0.3 else s for s in sets]
        else:
            sets = [np.unique(rng.integers(0, top, int(rng.integers(0, 9)))) for _ in range(n)]
        if trial % 5 == 2 and sets:
            sets[0] = np.array([255])  # id + 1 = 256: the first id that needs two bytes
        sets += [s.copy() for s in sets[: int(rng.integers(0, 6))]]
        counts = rng.integers(-3, 5, len(sets))
        keys = [tuple(s.tolist()) for s in sets]
        want = sorted(range(len(sets)), key=lambda j: (keys[j], int(counts[j])))
        assert sv.canonical_itemset_order(sets, counts).tolist() == want
    unsorted = [np.array([5, 2, 9]), np.array([1]), np.array([3, 3 + 1])]
    assert [s.tolist() for s in sv._sorted_itemsets(unsorted)] == [[2, 5, 9], [1], [3, 4]]


def test_itemset_rows_release_is_the_list_release(monkeypatch):
    """A release given as one flat array (ItemsetRows, as the fill makes) holds, writes and expands exactly as
    the same pairs given as a list: canonical order, body bytes (labels of any width or with a zero byte, empty
    itemsets, counts of 0 and below, blocks of one itemset) and to_db."""
    import io

    import dprelease.data.io as dio
    from dprelease.data.transactions import ItemsetRows
    from dprelease.data.universe import Universe
    from dprelease.release.setvalued import SetValuedRelease

    rng = np.random.default_rng(5)
    for trial in range(30):
        n_items = int(rng.integers(1, 300))
        long = "x" * 40 if trial % 5 == 1 else ""  # past the writer's byte table: the joined-strings path
        long = "y" * int(rng.integers(1, 26)) if trial % 5 == 2 else long  # byte tables 8, 16 and 32 bytes wide
        long = "\0" if trial % 7 == 3 else long  # a zero byte in a label: the joined-strings path
        labels = [("é" if trial % 3 == 0 else "") + long + str(int(x)) for x in rng.permutation(10**5)[:n_items]]
        u = Universe.from_labels(labels, "t", "t")
        n = int(rng.integers(0, 50))
        sets = [np.sort(rng.choice(n_items, size=int(rng.integers(0, min(n_items, 9) + 1)), replace=False))
                for _ in range(n)]
        if n and trial % 4 == 0:
            sets[0] = sets[0][::-1].copy()  # unsorted items are sorted by the release either way
        counts = rng.integers(-1, 5, n)
        lengths = np.array([s.size for s in sets], dtype=np.int64)
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        flat = np.concatenate(sets) if n and lengths.sum() else np.zeros(0, dtype=np.int64)
        a = SetValuedRelease(sets, counts, u)
        b = SetValuedRelease(ItemsetRows(flat.astype(np.int32), offsets), counts, u)
        assert isinstance(b.itemsets, ItemsetRows) and len(b.itemsets) == len(a.itemsets)
        assert [x.tolist() for x in a.itemsets] == [x.tolist() for x in b.itemsets]
        assert a.counts.tolist() == b.counts.tolist()
        monkeypatch.setattr(dio, "_WRITE_SETS", 1 if trial % 2 else 1 << 16)
        ta, tb = io.StringIO(), io.StringIO()
        dio.write_weighted_itemsets(ta, a.itemsets, a.counts, u)
        dio.write_weighted_itemsets(tb, b.itemsets, b.counts, u)
        assert ta.getvalue() == tb.getvalue()
        da, db = a.to_db(), b.to_db()
        assert da.offsets.tolist() == db.offsets.tolist() and da.items.tolist() == db.items.tolist()


def test_in_canonical_order_agrees_with_pythons_sort():
    """The release's check that its pairs already stand in canonical order (then it does not sort again) says yes
    exactly when Python's sort of (tuple, count) would leave them where they are: prefixes, equal rows by count,
    ids of one to eight bytes, rows that part only after several windows of items, rows one swap from sorted."""
    from dprelease.data.transactions import ItemsetRows
    from dprelease.release.setvalued import _in_canonical_order

    rng = np.random.default_rng(9)
    for trial in range(1200):
        top = [6, 300, 70_000, 2**40][trial % 4]
        width = 4 if trial < 600 else 20
        ids = np.unique(rng.integers(0, top, size=12))
        common = tuple(sorted(rng.choice(ids, size=int(rng.integers(0, min(ids.size, width) + 1)), replace=False)))
        pool = [tuple(sorted(rng.choice(ids, size=int(rng.integers(0, min(ids.size, width) + 1)), replace=False)))
                for _ in range(4)]
        if trial % 3 == 0:  # a long shared prefix: the rows part late, or never
            pool = [common + tuple(x for x in p if not common or x > common[-1]) for p in pool]
        n = int(rng.integers(0, 7))
        pairs = [(pool[int(rng.integers(4))], int(rng.integers(0, 3))) for _ in range(n)]
        if trial % 2:
            pairs.sort()
            if trial % 4 == 1 and n > 1:  # one neighbour swap
                j = int(rng.integers(n - 1))
                pairs[j], pairs[j + 1] = pairs[j + 1], pairs[j]
        lengths = np.array([len(t) for t, _ in pairs], dtype=np.int64)
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        flat = np.array([i for t, _ in pairs for i in t], dtype=np.int64)
        rows = ItemsetRows(flat, offsets)
        counts = np.array([c for _, c in pairs], dtype=np.int64)
        assert _in_canonical_order(rows, counts) == (pairs == sorted(pairs)), (trial, pairs)


def test_canonical_distinct_rows_is_pythons_sorted_counter():
    """The distinct rows in canonical order with their multiplicities are what sorting Python's Counter of the
    tuples gives, and each distinct row is named by its first occurrence (ties stay in input order): empty rows,
    prefixes, ids of one to eight bytes, rows longer than a sort window."""
    from collections import Counter

    from dprelease.data.transactions import ItemsetRows
    from dprelease.release.setvalued import canonical_distinct_rows

    rng = np.random.default_rng(11)
    for trial in range(200):
        top = [3, 300, 70_000, 2**40][trial % 4]
        pool = [tuple(sorted({int(x) for x in rng.integers(0, top, size=int(rng.integers(0, 12)))}))
                for _ in range(int(rng.integers(1, 6)))]
        pool += [p[: len(p) // 2] for p in pool]  # prefixes of one another
        tuples = [pool[int(rng.integers(len(pool)))] for _ in range(int(rng.integers(0, 40)))]
        lengths = np.array([len(t) for t in tuples], dtype=np.int64)
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        flat = np.array([i for t in tuples for i in t], dtype=np.int64)
        first, multiplicity = canonical_distinct_rows(ItemsetRows(flat, offsets))
        expected = sorted(Counter(tuples).items())
        assert [tuples[j] for j in first.tolist()] == [t for t, _ in expected], trial
        assert multiplicity.tolist() == [c for _, c in expected], trial
        assert [tuples.index(tuples[j]) for j in first.tolist()] == first.tolist(), trial
