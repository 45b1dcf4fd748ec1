"""The generated shapes have the shapes their docstrings state (fixed seeds, small sizes: the default run stays cheap).

Each test measures the property that makes the shape useful for checking defaults on unseen data: the near ties
of the dense set, the long baskets and bundles of the sparse set, the rare class and correlations of the table,
the hubs and the near-regularity of the graphs.
"""

from __future__ import annotations

import io

import numpy as np
import pytest

from dprelease.cli import main
from dprelease.data import generators as G
from dprelease.data.graphs import read_edge_list
from dprelease.data.io import read_transactions
from dprelease.data.table import load_schema, parse_schema, read_table
from dprelease.data.universe import Universe
from dprelease.itemsets.exact import top_k_itemsets


def _same_db(a, b) -> bool:
    return a.n_items == b.n_items and np.array_equal(a.offsets, b.offsets) and np.array_equal(a.items, b.items)


def test_dense_near_ties_top100_crowds_near_n() -> None:
    n = 4000
    db = G.dense_near_ties(n, seed=0)
    assert (db.n_records, db.n_items) == (n, 120)
    assert 33.0 < db.lengths.mean() < 37.0  # 30 core items minus drop-outs, plus about 5 noise items
    sup = db.item_supports()
    core = np.flatnonzero(sup >= 0.97 * n)
    assert core.size == 30  # the core: every item held by at least 97 % of the records
    assert int(np.sort(sup)[-31]) < 0.6 * n  # and nothing in between: the best noise item is near N/2
    top = top_k_itemsets(db, 100)
    s = np.array([c for _, c in top])
    assert all(set(items) <= set(core.tolist()) for items, _ in top)
    # the near ties: the whole top 100 within 2 % of N, consecutive supports at most a record apart (median)
    assert n - s[-1] <= 0.02 * n
    assert float(np.median(-np.diff(s))) <= 1.0
    assert s[0] - s[-1] <= 0.015 * n
    lengths = np.bincount([len(items) for items, _ in top], minlength=5)
    assert lengths[1] < 30 and lengths[2] > 30 and lengths[3] > 10  # triples of rare drop-outs beat some items


def test_dense_near_ties_is_a_function_of_its_seed() -> None:
    assert _same_db(G.dense_near_ties(500, seed=3), G.dense_near_ties(500, seed=3))
    assert not _same_db(G.dense_near_ties(500, seed=3), G.dense_near_ties(500, seed=4))


def test_long_baskets_lengths_tail_and_bundles() -> None:
    n = 5000
    db = G.long_baskets(n, seed=0)
    lengths = db.lengths
    assert lengths.mean() >= 10.0  # retail's 10.3 at least
    assert 0.07 <= float((lengths >= 30).mean()) <= 0.14  # the long tail: about 10 % of 30-80 items
    assert lengths.min() >= 1 and lengths.max() <= 120
    sup = db.item_supports()
    assert int(np.count_nonzero(sup)) >= 2000  # a large universe is used, not just a head
    # bundles: in the top 100, pairs of items outside the 10 most frequent, frequent together far beyond
    # independence (pairs of head items have a lift under 2)
    head = set(np.argsort(-sup, kind="stable")[:10].tolist())
    top = top_k_itemsets(db, 100)
    pairs = [(items, c) for items, c in top if len(items) == 2]
    lifts = np.array([c * n / (sup[a] * sup[b]) for (a, b), c in pairs])
    bundled = [items for (items, _), lift in zip(pairs, lifts) if lift >= 5]
    assert len(bundled) >= 10 and not any(set(items) & head for items in bundled)
    assert float(np.median(lifts[lifts >= 5])) >= 10.0
    assert float(lifts[lifts < 5].max()) < 2.0


def test_long_baskets_small_universe_has_fewer_bundles() -> None:
    for items in (1, 30, 100):
        db = G.long_baskets(300, n_items=items, seed=1)
        assert db.n_records == 300 and db.n_items == items and int(db.lengths.min()) >= 1


def test_write_transaction_shape_reads_back(tmp_path) -> None:
    for shape, kwargs, fn in (("dense-ties", {}, lambda: G.dense_near_ties(300, seed=2)),
                              ("long-baskets", {"n_items": 800}, lambda: G.long_baskets(300, 800, seed=2))):
        buf = io.BytesIO()
        n, items, mean = G.write_transaction_shape(buf, shape, 300, seed=2, **kwargs)
        path = tmp_path / f"{shape}.dat"
        path.write_bytes(buf.getvalue())
        db, _ = read_transactions(path, Universe.from_range(1, items))
        assert n == 300 and _same_db(db, fn())
        assert mean == pytest.approx(db.lengths.mean())


def test_generate_shape_cli(tmp_path, capsys) -> None:
    out = tmp_path / "dense.dat"
    assert main(["generate", str(out), "--shape", "dense-ties", "--records", "200", "--seed", "2", "-q"]) == 0
    buf = io.BytesIO()
    G.write_transaction_shape(buf, "dense-ties", 200, seed=2)
    assert out.read_bytes() == buf.getvalue()
    capsys.readouterr()
    assert main(["generate", str(tmp_path / "x.dat"), "--shape", "dense-ties", "--items", "5"]) == 2
    assert "--items" in capsys.readouterr().err
    assert main(["generate", str(tmp_path / "x.dat"), "--shape", "long-baskets", "--mean-length", "5"]) == 2
    assert not (tmp_path / "x.dat").exists()


def _in_bounds(frame, schema: dict) -> None:
    parsed_leaves = {}
    for a in schema["attributes"]:
        col = frame[a["name"]]
        if a["type"] == "numeric":
            lo, hi = a["bounds"]
            assert col.min() >= lo and col.max() < hi, a["name"]
        else:
            def leaves(node):
                if isinstance(node, str):
                    return [node]
                if isinstance(node, list):
                    return [x for n in node for x in leaves(n)]
                return [x for v in node.values() for x in leaves(v)]
            parsed_leaves[a["name"]] = set(leaves(a["taxonomy"]))
            assert set(col.unique()) <= parsed_leaves[a["name"]], a["name"]


def test_skewed_label_table_rare_class_and_correlations(tmp_path) -> None:
    frame, schema = G.skewed_label_table(8000, seed=0)
    assert len(frame) == 8000
    rate = float((frame["event"] == "yes").mean())
    assert 0.04 <= rate <= 0.06  # 95/5
    _in_bounds(frame, schema)
    assert frame["age"].corr(frame["systolic"]) > 0.4
    assert frame["bmi"].corr(frame["systolic"]) > 0.2
    by_smoking = frame.groupby("smoking")["event"].apply(lambda s: (s == "yes").mean())
    assert by_smoking["current"] > 1.5 * by_smoking["never"]  # the class depends on the attributes
    old = frame["age"] >= 65
    assert (frame["event"][old] == "yes").mean() > 2 * (frame["event"][~old] == "yes").mean()
    csv, yml = tmp_path / "clinic.csv", tmp_path / "clinic-schema.yaml"
    G.write_table_with_schema(frame, schema, csv, yml, about="generated for a test")
    assert yml.read_text().startswith("# generated for a test\n")
    table = read_table(csv, load_schema(yml))
    assert len(table.y) == 8000 and int(table.y.sum()) == int((frame["event"] == "yes").sum())


def test_unlabelled_table_has_no_class_and_correlated_attributes() -> None:
    frame, schema = G.unlabelled_table(8000, seed=0)
    assert "class" not in schema and len(frame) == 8000
    _in_bounds(frame, schema)
    assert frame["distance"].corr(frame["fare"]) > 0.9
    assert frame["duration"].corr(frame["fare"]) > 0.9
    assert frame["distance"].max() > 10 * frame["distance"].median()  # heavy tail
    assert (frame.loc[frame["payment"] == "cash", "tip"] == 0).all()
    # the same attributes with a class added parse as a schema: only the class is missing
    parse_schema({**schema, "class": {"name": "payment2", "values": ["a", "b"]}})


def test_hub_graph_has_hubs(tmp_path) -> None:
    g = G.hub_graph(2000, seed=0)
    d = np.array([x for _, x in g.degree()])
    assert g.number_of_nodes() == 2000 and d.min() >= 4
    assert d.max() >= 20 * np.median(d)  # hubs
    assert float((d > 32).mean()) >= 0.01  # a visible share above the smallest theta of the benchmark
    path = tmp_path / "hub.txt"
    assert G.write_edge_list(g, path) == g.number_of_edges()
    assert np.array_equal(np.sort(read_edge_list(path).degrees()), np.sort(d))


def test_near_regular_graph_is_near_regular() -> None:
    g = G.near_regular_graph(1000, 24, seed=0)
    d = np.array([x for _, x in g.degree()])
    assert g.number_of_edges() == 12000 - round(0.05 * 12000)
    assert d.max() == 24 and d.min() >= 17
    assert float(((d >= 22) & (d <= 24)).mean()) >= 0.8
    assert d.std() < 1.5
