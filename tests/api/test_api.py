"""The Python API: every release kind from every input form, typed errors with the CLI's messages, the ledger
charged before the data is read, the stream, evaluation, report, schema skeletons and a light import."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dprelease as dp
from dprelease.errors import BudgetExceededError, InputError, ParameterError, PrivacyLeakWarning

REPO = Path(__file__).resolve().parents[2]
BASKETS = REPO / "examples" / "baskets.dat"
TABLE = REPO / "examples" / "table1-jobs.csv"
SCHEMA = REPO / "examples" / "table1-schema.yaml"


def baskets() -> list[list[int]]:
    return [[int(x) for x in line.split()] for line in BASKETS.read_text().splitlines()
            if line.strip() and not line.startswith("#")]


def forms() -> dict[str, object]:
    """The same transactions in every form the API takes."""
    b = baskets()
    long = pd.DataFrame([(i, x) for i, r in enumerate(b) for x in r], columns=["record", "item"])
    onehot = pd.DataFrame([[j in set(r) for j in range(1, 13)] for r in b], columns=[str(j) for j in range(1, 13)])
    return {"path": str(BASKETS), "lists": b, "sets": [set(r) for r in b], "tuples": (tuple(r) for r in b),
            "series": pd.Series(b), "long": long, "onehot": onehot}


KINDS = {
    "diffpart": lambda d: dp.diffpart(d, universe="1..12", epsilon=1.0, seed=3),
    "basic": lambda d: dp.basic(d, universe="1..12", epsilon=1.0, seed=3),
    "privbasis": lambda d: dp.privbasis(d, k=10, universe="1..12", epsilon=1.0, seed=3),
    "tf": lambda d: dp.tf(d, k=5, m=2, universe="1..12", epsilon=1.0, seed=3),
}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_transaction_form_gives_the_same_release(kind: str) -> None:
    made = {name: KINDS[kind](data) for name, data in forms().items()}
    frames = {name: r.to_pandas() for name, r in made.items()}
    first = frames["path"]
    assert len(first) > 0
    for name, frame in frames.items():
        pd.testing.assert_frame_equal(frame, first, obj=f"{kind} from {name}")
    r = made["lists"]
    assert r.manifest["rng"]["mode"] == "seeded" and r.manifest["epsilon"] == 1.0
    html = r._repr_html_()
    assert "seeded" in html and "epsilon" in html and "<table" in html


def test_table_releases_from_a_frame_and_a_path(tmp_path: Path) -> None:
    frame = pd.read_csv(TABLE)
    for fn, kw in ((dp.diffgen, {}), (dp.rps, {"depth": 4})):
        a = fn(frame, schema=str(SCHEMA), epsilon=1.0, seed=2, **kw)
        b = fn(str(TABLE), schema=str(SCHEMA), epsilon=1.0, seed=2, **kw)
        pd.testing.assert_frame_equal(a.to_pandas(), b.to_pandas())
        assert len(a.to_pandas()) > 0 and a.kind == "table"
        written = a.write(tmp_path / f"{fn.__name__}.csv")
        assert written.body.exists() and written.manifest.exists()


def test_a_schema_dict_is_a_schema() -> None:
    import yaml

    schema = yaml.safe_load(SCHEMA.read_text())
    a = dp.diffgen(pd.read_csv(TABLE), schema=schema, epsilon=1.0, seed=2)
    b = dp.diffgen(pd.read_csv(TABLE), schema=str(SCHEMA), epsilon=1.0, seed=2)
    pd.testing.assert_frame_equal(a.to_pandas(), b.to_pandas())


def test_degrees_of_a_networkx_graph_declare_its_nodes() -> None:
    nx = pytest.importorskip("networkx")
    g = nx.gnm_random_graph(80, 160, seed=1)
    g.add_nodes_from(range(80, 90))  # isolated nodes are nodes of the declared set
    r = dp.degrees(g, theta=8, epsilon=1.0, seed=1)
    assert r.manifest["domain"]["neighbour_model"] == "declared-nodes"
    assert r.manifest["privacy_unit"] == "node"
    assert list(r.to_pandas().columns) == ["degree"]
    # the same node set and edges from an edge frame with nodes= give the same release
    edges = pd.DataFrame(list(g.edges), columns=["u", "v"])
    same = dp.degrees(edges, theta=8, epsilon=1.0, seed=1, nodes=list(g.nodes))
    assert np.array_equal(same.degrees, r.degrees)


def test_edge_frame_alone_is_the_edge_list_model() -> None:
    edges = pd.DataFrame({"u": [1, 2, 3, 4], "v": [2, 3, 4, 1]})
    r = dp.degrees(edges, theta=3, epsilon=1.0, seed=1)
    assert r.manifest["domain"]["neighbour_model"] == "edge-list"


@pytest.mark.parametrize("call, error, words", [
    (lambda: dp.diffpart(baskets(), universe="1..12", epsilon=0), ParameterError, "--epsilon"),
    (lambda: dp.diffpart(baskets(), universe="1..5", epsilon=1.0), InputError, "not in the declared universe"),
    (lambda: dp.diffpart(baskets(), universe=None, epsilon=1.0), ParameterError, "no item universe declared"),
    (lambda: dp.diffpart(baskets(), universe="1..12", epsilon=1.0, fanout=1), ParameterError, "--fanout"),
    (lambda: dp.diffpart(baskets(), universe="1..12", epsilon=1.0, bogus=1), ParameterError, "unknown parameter"),
    (lambda: dp.diffpart(baskets(), universe="1..12", epsilon=1.0, method="x"), ParameterError, "--method"),
    (lambda: dp.diffpart(baskets(), universe="1..12", epsilon=1.0, method="prefix", fanout=4), ParameterError,
     "only applies to --method faithful"),
    (lambda: dp.diffpart("/no/such/file.dat", universe="1..12", epsilon=1.0), InputError, "no such file"),
    (lambda: dp.diffpart(baskets(), universe="1..12", epsilon=1.0, seed=-1), ParameterError, "--seed"),
    (lambda: dp.diffpart(["not a basket"], universe="1..12", epsilon=1.0), InputError, "record 1"),
    (lambda: dp.diffgen(pd.read_csv(TABLE).assign(Age=99), schema=str(SCHEMA), epsilon=1.0), InputError,
     "outside the declared bounds"),
    (lambda: dp.diffgen(pd.read_csv(TABLE), schema=str(SCHEMA), epsilon=1.0, method="faithful"), ParameterError,
     "--specializations is required"),
    (lambda: dp.rps(pd.read_csv(TABLE), schema=str(SCHEMA), epsilon=1.0, method="faithful", consistency=True),
     ParameterError, "--consistency"),
    (lambda: dp.degrees(pd.DataFrame({"u": ["a"], "v": ["b"]}), theta=3, epsilon=1.0), InputError, "not an integer"),
    (lambda: dp.basic(baskets(), universe="1..12", epsilon=1.0, max_items=5), ParameterError, "--max-items"),
])
def test_bad_input_raises_typed_one_line_errors(call, error, words) -> None:
    with pytest.raises(error) as info:
        call()
    assert isinstance(info.value, ValueError)
    assert words in str(info.value) and "\n" not in str(info.value)


def test_derived_universe_is_an_explicit_opt_in_with_the_warning() -> None:
    with pytest.warns(PrivacyLeakWarning):
        r = dp.diffpart(baskets(), universe="derive", epsilon=1.0, seed=1)
    assert r.manifest["domain"]["source"] == "derived-from-data"


def test_a_list_universe_is_declared() -> None:
    r = dp.diffpart(baskets(), universe=[str(i) for i in range(1, 13)], epsilon=1.0, seed=3)
    assert r.manifest["domain"]["source"] != "derived-from-data"


def test_ledger_is_charged_and_refuses_before_reading(tmp_path: Path) -> None:
    ledger = dp.Ledger(tmp_path / "l.db", dataset="baskets", epsilon=1.5)
    dp.diffpart(baskets(), universe="1..12", epsilon=1.0, seed=1, ledger=ledger)
    st = ledger.status()
    assert float(st.spent) == pytest.approx(1.0) and st.incomplete == 0

    def never_read():
        raise AssertionError("the data was read")
        yield []  # pragma: no cover

    with pytest.raises(BudgetExceededError, match="refused before reading the data"):
        dp.diffpart(never_read(), universe="1..12", epsilon=1.0, ledger=str(tmp_path / "l.db"))
    assert len(dp.Ledger(tmp_path / "l.db").status().charges) == 1
    with pytest.raises(ParameterError):  # a public check fails: nothing reserved
        dp.privbasis(baskets(), k=10, universe="1..12", epsilon=0.2, ledger=ledger, alpha1=2.0)
    assert len(ledger.status().charges) == 1
    assert "remaining" in ledger._repr_html_()


def test_write_refuses_an_existing_file_without_force(tmp_path: Path) -> None:
    r = dp.diffpart(baskets(), universe="1..12", epsilon=1.0, seed=1)
    r.write(tmp_path / "r.dat")
    with pytest.raises(ParameterError, match="already exists"):
        r.write(tmp_path / "r.dat")
    r.write(tmp_path / "r.dat", force=True)


def test_stream_appends_releases_and_reemits(tmp_path: Path) -> None:
    b = baskets()
    s = dp.Stream(tmp_path / "s.db", epsilon=1.0, universe="1..12", updates=1, seed=4)
    first = s.append(b[:1500])
    second = s.append(str(BASKETS))
    assert first.kind == "setvalued" and second.manifest["epsilon"] is not None
    st = dp.Stream(tmp_path / "s.db").status()
    assert st.appends == 2 and st.epsilon_spent == pytest.approx(1.0)
    again = s.release()
    pd.testing.assert_frame_equal(again.to_pandas(), second.to_pandas())
    with pytest.raises(BudgetExceededError):
        s.append(b[:10])


def test_evaluate_and_report(tmp_path: Path) -> None:
    r = dp.diffpart(baskets(), universe="1..12", epsilon=1.0, seed=1)
    result = dp.evaluate.counting(baskets(), r, queries=500)
    assert 0 <= result["mean_relative_error"] < 10
    assert 0 <= dp.evaluate.topk(str(BASKETS), r, k=10) <= 1
    p = dp.privbasis(baskets(), k=10, universe="1..12", epsilon=1.0, seed=1)
    assert "fnr" in dp.evaluate.itemsets(baskets(), p, k=10)
    page = dp.report(str(BASKETS), r, tmp_path / "r.html", queries=300)
    assert page.read_text().startswith("<!DOCTYPE html") or "<html" in page.read_text()


def test_schema_from_dtypes_refuses_to_guess() -> None:
    frame = pd.read_csv(TABLE)
    with pytest.raises(ParameterError, match=r"taxonomies\['Job'\], bounds\['Age'\], classes"):
        dp.schema_from_dtypes(frame, target="Class")
    schema = dp.schema_from_dtypes(frame, target="Class", bounds={"Age": (18, 65)},
                                   taxonomies={"Job": ["Engineer", "Lawyer", "Dancer", "Writer"]}, classes=["Y", "N"])
    assert dp.diffgen(frame, schema=schema, epsilon=1.0, seed=1).kind == "table"
    with pytest.warns(PrivacyLeakWarning):
        derived = dp.schema_from_dtypes(frame, target="Class", derive=True)
    assert "derived from the data" in derived["name"]


def test_import_is_light_and_names_are_lazy() -> None:
    code = ("import sys, dprelease as dp; assert 'numpy' not in sys.modules and 'dprelease.api' not in sys.modules; "
            "dp.diffpart; assert 'dprelease.api.setvalued' in sys.modules; print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "ok"
    with pytest.raises(AttributeError):
        dp.no_such_name  # noqa: B018


def test_python_warnings_carry_the_cli_notes() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dp.tf(baskets(), k=500, m=2, universe="1..12", epsilon=1.0, seed=1)
    assert any("fewer than the 500 requested" in str(w.message) for w in caught)


def test_stream_against_a_ledger_reserves_at_init_and_records_appends(tmp_path: Path) -> None:
    ledger = dp.Ledger(tmp_path / "l.db", dataset="baskets", epsilon=1.0)
    s = dp.Stream(tmp_path / "s.db", epsilon=0.8, universe="1..12", updates=1, seed=4, ledger=ledger)
    st = ledger.status()
    assert float(st.spent) == pytest.approx(0.8) and st.incomplete == 0
    s.append(baskets()[:1000])
    st = ledger.status()
    assert len(st.charges) == 2 and st.charges[1].covered_by == st.charges[0].id
    assert float(st.spent) == pytest.approx(0.8) and st.incomplete == 0
    with pytest.raises(BudgetExceededError):  # too little left for another stream: refused, nothing made
        dp.Stream(tmp_path / "t.db", epsilon=0.5, universe="1..12", updates=1, ledger=ledger)
    assert not (tmp_path / "t.db").exists()


@pytest.mark.parametrize("bad", [1.5, True, "x"])
def test_node_ids_are_integers_never_truncated(bad: object) -> None:
    with pytest.raises(InputError, match="is not an integer"):
        dp.degrees(pd.DataFrame({"u": [1, bad], "v": [2, 3]}, dtype=object), theta=3, epsilon=1.0)


def test_dp_report_stays_callable_after_the_report_package_is_imported():
    """Importing dprelease.report binds the package's name ``report`` to that module; it must still answer
    ``dp.report(raw, release, path)``."""
    import importlib

    import dprelease as dp

    importlib.import_module("dprelease.report")
    assert callable(dp.report)


def test_a_degree_release_regenerates_a_graph(tmp_path):
    """As ``degrees --graph-out``: post-processing of the released sequence, reproducible with a seed."""
    import networkx as nx

    import dprelease as dp

    rel = dp.degrees(nx.karate_club_graph(), theta=8, epsilon=1.0, seed=3)
    g = rel.graph(seed=5)
    assert g.kind == "degrees" and g.manifest["algorithm"].endswith("-graph")
    edges = g.to_pandas()
    assert list(edges.columns) == ["u", "v"] and (edges["u"] < edges["v"]).all()
    assert g.to_pandas().equals(rel.graph(seed=5).to_pandas())
    written = g.write(tmp_path / "g.txt")
    assert written.body.exists()
    with pytest.raises(dp.ParameterError, match="graph-model"):
        rel.graph("erdos")
    with pytest.raises(dp.ParameterError, match="not a degree sequence"):
        dp.basic([[1, 2], [2]], universe="1..3", epsilon=1.0, seed=1).graph()
