"""The RPS command lines: outputs, manifests, one-line errors with exit code 2, evaluations."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO

from dprelease.cli import main

T1 = REPO / "examples" / "table1-jobs.csv"
T1_SCHEMA = REPO / "examples" / "table1-schema.yaml"


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def table(tmp_path) -> tuple[Path, Path]:
    """A 600-row table of the Table 1 schema (Job/Age/Class)."""
    rng = np.random.default_rng(0)
    jobs = np.array(["Engineer", "Lawyer", "Dancer", "Writer"])
    path = tmp_path / "t.csv"
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["Job", "Age", "Class"])
        for _ in range(600):
            w.writerow([jobs[rng.integers(4)], int(rng.integers(18, 65)), "Y" if rng.random() < 0.4 else "N"])
    return path, T1_SCHEMA


def test_rps_writes_a_synthetic_table_and_its_manifest(table, tmp_path, capsys):
    data, schema = table
    out = tmp_path / "out" / "s.csv"
    out.parent.mkdir()  # an output's folder must exist
    code, stdout, _ = run(capsys, "rps", data, "--schema", schema, "--epsilon", "1", "-o", out, "--depth", "5",
                          "--seed", "3", "-q")
    assert code == 0 and f"release: {out}" in stdout
    m = json.loads(Path(str(out) + ".manifest.json").read_text())
    assert m["algorithm"] == "rps" and m["privacy"]["epsilon_spent"] == 1.0
    assert m["parameters"]["depth"] == 5 and m["parameters"]["partitioning"] == "balanced"
    assert m["budget_split"]["split_share_alpha"] == 0.3
    rows = list(csv.DictReader(open(out)))
    assert len(rows) == m["release"]["records"] and list(rows[0]) == ["Job", "Age", "Class"]
    assert all(r["Job"] in {"Engineer", "Lawyer", "Dancer", "Writer"} and 18 <= int(r["Age"]) < 65 for r in rows)
    # the same seed gives the same bytes; the order is canonical (no input order leaks)
    out2 = tmp_path / "s2.parquet"
    assert run(capsys, "rps", data, "--schema", schema, "-e", "1", "-o", out2, "-H", "5", "--seed", "3", "-q")[0] == 0
    import pyarrow.parquet as pq

    frame = pq.read_table(out2).to_pandas()
    assert frame["Age"].tolist() == [int(r["Age"]) for r in rows]


def test_rps_fixed_and_options(table, tmp_path, capsys):
    data, schema = table
    out = tmp_path / "f.csv"
    code, _, _ = run(capsys, "rps", data, "--schema", schema, "-e", "0.5", "-o", out, "--partitioning", "fixed",
                     "--stop-threshold", "5", "--consistency", "-q")
    assert code == 0
    m = json.loads(Path(str(out) + ".manifest.json").read_text())
    assert m["parameters"]["partitioning"] == "fixed" and m["parameters"]["stop_threshold"] == 5.0
    assert m["rng"]["mode"] == "secure"


@pytest.mark.parametrize("argv, needle", [
    (["--split-share", "1.5"], "--split-share"),
    (["--depth", "-2"], "--depth"),
    (["--partitioning", "fixed", "--split-share", "0.2"], "--split-share has no use"),
    (["--epsilon", "0"], "--epsilon"),
])
def test_rps_bad_parameters_exit_2_with_one_line(table, tmp_path, capsys, argv, needle):
    data, schema = table
    args = ["rps", str(data), "--schema", str(schema), "-o", str(tmp_path / "x.csv")]
    if "--epsilon" not in argv:
        args += ["-e", "1"]
    try:
        code = main(args + argv)
    except SystemExit as exc:
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2 and needle in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "x.csv").exists()


def test_rps_bad_table_value_names_row_and_column(tmp_path, capsys):
    bad = tmp_path / "bad.csv"
    bad.write_text("Job,Age,Class\nEngineer,30,Y\nPilot,40,N\n")
    code, _, err = run(capsys, "rps", bad, "--schema", T1_SCHEMA, "-e", "1", "-o", tmp_path / "o.csv")
    assert code == 2 and "row 2" in err and "'Job'" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o.csv").exists()


def test_mondrian_is_labelled_not_dp(table, tmp_path, capsys):
    data, schema = table
    out = tmp_path / "m.csv"
    code, _, err = run(capsys, "mondrian", data, "--schema", schema, "-k", "25", "-o", out, "--seed", "1")
    assert code == 0 and "NOT differentially private" in err
    m = json.loads(Path(str(out) + ".manifest.json").read_text())
    assert m["privacy"]["differentially_private"] is False and "NOT" in m["privacy"]["warning"]
    assert m["parameters"]["k"] == 25
    rows = list(csv.DictReader(open(out)))
    assert len(rows) == 600
    help_text = _help(capsys, "mondrian")
    assert "NOT differentially private" in help_text


def _help(capsys, *cmd) -> str:
    with pytest.raises(SystemExit):
        main([*cmd, "--help"])
    return capsys.readouterr().out


def test_evaluate_ranges_json(table, tmp_path, capsys):
    data, schema = table
    out = tmp_path / "s.csv"
    assert run(capsys, "rps", data, "--schema", schema, "-e", "1", "-o", out, "--seed", "1", "-q")[0] == 0
    code, stdout, _ = run(capsys, "evaluate", "ranges", data, out, "--schema", schema, "--queries", "300", "--json")
    res = json.loads(stdout)
    assert code == 0 and set(res) == {"mean_relative_error", "subsets", "baselines", "by_answer", "coverage"}
    assert res["coverage"]["cells"]["coverage"] >= 0.93 and res["coverage"]["ranges"]["interval"]["coverage"] >= 0.93
    assert [s["dimensions"] for s in res["subsets"]] == [1, 2, 3] and all(set(s) == {"dimensions", "mean_relative_error",
                                                                                  "baselines"} for s in res["subsets"])
    assert set(res["baselines"]) == {"empty", "uniform"} and res["baselines"]["empty"] <= 1.0
    parts = res["by_answer"]
    assert parts["below_sanity_bound"]["queries"] + parts["at_or_above"]["queries"] == 300
    # a table without its manifest is not a release
    code, _, err = run(capsys, "evaluate", "ranges", data, data, "--schema", schema, "--queries", "300", "--json")
    assert code == 2 and "manifest" in err
    # a body that does not match its manifest is refused
    out.write_text(out.read_text() + "\n")
    code, _, err = run(capsys, "evaluate", "ranges", data, out, "--schema", schema, "--queries", "300")
    assert code == 2 and "does not match its manifest" in err


def test_evaluate_ranges_reads_diffgen_generalized_output(table, tmp_path, capsys):
    data, schema = table
    out = tmp_path / "dg.csv"
    assert run(capsys, "diffgen", data, "--schema", schema, "-e", "1", "-H", "3", "-o", out, "--records",
               "--seed", "1", "-q")[0] == 0
    for released in (out, tmp_path / "dg.records.csv"):
        code, stdout, _ = run(capsys, "evaluate", "ranges", data, released, "--schema", schema, "--queries", "300",
                              "--json")
        assert code == 0 and json.loads(stdout)["mean_relative_error"] >= 0
    # the contingency table (counts spread uniformly) and its record form give the same answers
    a = json.loads(run(capsys, "evaluate", "ranges", data, out, "--schema", schema, "--queries", "300", "--json")[1])
    b = json.loads(run(capsys, "evaluate", "ranges", data, tmp_path / "dg.records.csv", "--schema", schema,
                       "--queries", "300", "--json")[1])
    assert a["mean_relative_error"] == pytest.approx(b["mean_relative_error"], rel=1e-9)


GRAPH = "# toy\nnd nw\n1 2\n2 3\n3 1\n3 4\n4 5\n5 3\n3 6\n6 6\n"


def test_degrees_writes_sorted_degrees_a_manifest_and_a_graph(tmp_path, capsys):
    g = tmp_path / "g.txt"
    g.write_text(GRAPH)
    out = tmp_path / "deg.txt"
    for method in ("rps", "hay", "cumulative"):
        code, stdout, _ = run(capsys, "degrees", g, "--epsilon", "1", "--theta", "3", "-o", out, "--method", method,
                              "--graph-out", tmp_path / "e.txt", "--seed", "2", "-q", "--force")
        assert code == 0 and "graph:" in stdout
        degs = [int(x) for x in out.read_text().split()]
        assert degs == sorted(degs) and all(0 <= d <= 3 for d in degs)
        m = json.loads(Path(str(out) + ".manifest.json").read_text())
        assert m["algorithm"] == f"degrees-{method}" and m["parameters"]["theta"] == 3
        assert m["privacy"]["epsilon_spent"] == 1.0 and "node" in m["domain"]["neighbours"]
        assert m["release"]["nodes"] == len(degs)
        edges = [tuple(map(int, ln.split())) for ln in (tmp_path / "e.txt").read_text().splitlines()]
        assert all(u < v for u, v in edges) and edges == sorted(edges)
        assert Path(str(tmp_path / "e.txt") + ".manifest.json").exists()
    code, stdout, _ = run(capsys, "evaluate", "degrees", g, out, "--json")
    assert code == 0 and set(json.loads(stdout)) == {"ks", "l1", "emd", "coverage"}


def test_outputs_are_checked_before_reading(table, tmp_path, capsys):
    data, schema = table
    out = tmp_path / "s.csv"
    out.write_text("previous\n")
    code, _, err = run(capsys, "rps", data, "--schema", schema, "-e", "1", "-o", out)
    assert code == 2 and "--force" in err and out.read_text() == "previous\n"
    code, _, err = run(capsys, "rps", data, "--schema", schema, "-e", "1", "-o", data, "--force")
    assert code == 2 and data.read_text().startswith("Job,Age,Class")
    code, _, err = run(capsys, "rps", data, "--schema", schema, "-e", "1", "-o", tmp_path / "d.csv",
                       "--max-output-records", "10")
    assert code == 2 and "--max-output-records" in err and not (tmp_path / "d.csv").exists()
    g = tmp_path / "g.txt"
    g.write_text(GRAPH)
    code, _, err = run(capsys, "degrees", g, "-e", "1", "--theta", "3", "-o", tmp_path / "x.txt", "--graph-out", g)
    assert code == 2 and g.read_text() == GRAPH


def test_degrees_bad_graph_exits_2_naming_the_line(tmp_path, capsys):
    g = tmp_path / "g.txt"
    g.write_text("1 2\n2 x3\n")
    code, _, err = run(capsys, "degrees", g, "-e", "1", "--theta", "3", "-o", tmp_path / "d.txt")
    assert code == 2 and err.strip() == f"dprelease degrees: error: {g}:2: node id 'x3' is not an integer"
    assert not (tmp_path / "d.txt").exists()
    try:
        code = main(["degrees", str(g), "-e", "1", "--theta", "0", "-o", str(tmp_path / "d.txt")])
    except SystemExit as exc:
        code = exc.code
    assert code == 2 and "--theta" in capsys.readouterr().err



def test_rps_classification_on_a_small_table(table, capsys):
    data, schema = table
    code, stdout, _ = run(capsys, "experiment", "rps-classification", "--data", data, "--schema", schema,
                          "--epsilon", "1", "--depth", "4", "--runs", "2", "--json", "-q")
    res = json.loads(stdout)
    assert code == 0
    assert set(res) == {"baseline_accuracy", "accuracy", "lower_bound_accuracy", "runs", "stdev"}
    assert res["runs"] == 2 and 0 <= res["accuracy"] <= 1


def test_cli_constants_match_the_library():
    from dprelease.commands import rps as cmd
    from dprelease.graphs.degrees import DEGREE_METHODS
    from dprelease.graphs.regenerate import GRAPH_MODELS
    from dprelease.relational import rps as lib

    assert cmd.DEFAULT_DEPTH == lib.DEFAULT_DEPTH and cmd.DEFAULT_SPLIT_SHARE == lib.DEFAULT_SPLIT_SHARE
    assert cmd.PARTITIONINGS == lib.PARTITIONINGS and cmd.DEGREE_METHODS == DEGREE_METHODS
    from dprelease.graphs.degrees import DEGREE_SUMMARIES

    assert cmd.DEGREE_SUMMARIES == DEGREE_SUMMARIES
    assert cmd.CLASS_SPLITS == lib.CLASS_SPLITS and cmd.DEFAULT_CLASS_SPLIT == lib.DEFAULT_CLASS_SPLIT
    assert cmd.GRAPH_MODELS == GRAPH_MODELS


def test_every_option_has_a_help_sentence(capsys):
    for cmd in (["rps"], ["mondrian"], ["degrees"], ["evaluate", "ranges"], ["evaluate", "degrees"],
                ["experiment", "rps"], ["experiment", "rps-classification"]):
        text = _help(capsys, *cmd)
        assert "--help" in text
    from dprelease.cli import build_parser

    parser = build_parser()
    sub = parser._subparsers._group_actions[0].choices
    for name in ("rps", "mondrian", "degrees"):
        for action in sub[name]._actions:
            if action.option_strings and action.dest != "help":
                assert action.help, (name, action.option_strings)


def test_rps_defaults_to_guided_and_tree_options_select_the_paper(table, tmp_path, capsys):
    data, schema = table
    code, _, err = run(capsys, "rps", data, "--schema", schema, "-e", "1", "-o", tmp_path / "g.csv", "--seed", "2")
    m = json.loads((tmp_path / "g.csv.manifest.json").read_text())
    assert code == 0 and m["parameters"]["method"] == "guided" and "note" not in err
    assert m["privacy"]["epsilon_spent"] == 1.0 and m["budget_split"]["partition_privtree"] == pytest.approx(0.1)
    code, _, err = run(capsys, "rps", data, "--schema", schema, "-e", "1", "-o", tmp_path / "p.csv", "--seed", "2",
                       "-H", "4")
    m = json.loads((tmp_path / "p.csv.manifest.json").read_text())
    assert code == 0 and m["parameters"]["depth"] == 4 and "method" not in m["parameters"]
    assert "--depth configure the paper's RPS tree" in err
    code, _, _ = run(capsys, "rps", data, "--schema", schema, "-e", "1", "-o", tmp_path / "f.csv", "--seed", "2",
                     "--method", "faithful", "-H", "4")
    assert code == 0 and (tmp_path / "f.csv").read_bytes() == (tmp_path / "p.csv").read_bytes()


def test_rps_and_evaluate_ranges_on_a_schema_without_a_class(tmp_path, capsys):
    from dprelease.data.generators import unlabelled_table, write_table_with_schema

    frame, spec = unlabelled_table(3000, seed=2)
    data, schema = tmp_path / "trips.csv", tmp_path / "trips.yaml"
    write_table_with_schema(frame, spec, data, schema)
    out = tmp_path / "syn.csv"
    code, _, err = run(capsys, "rps", data, "--schema", schema, "-e", "1", "-o", out, "--seed", "1", "-q")
    assert code == 0, err
    with open(out) as fh:
        assert next(csv.reader(fh)) == list(frame.columns)  # the attributes only: no class column
    code, stdout, _ = run(capsys, "evaluate", "ranges", data, out, "--schema", schema, "--queries", "200", "--json")
    res = json.loads(stdout)
    assert code == 0 and res["mean_relative_error"] < 0.6 * res["baselines"]["uniform"]
    assert run(capsys, "rps", data, "--schema", schema, "-e", "1", "-o", tmp_path / "f.csv", "--seed", "1", "-q",
               "--method", "faithful")[0] == 0  # the paper's RPS needs no class either
    code, _, err = run(capsys, "diffgen", data, "--schema", schema, "-e", "1", "-o", tmp_path / "d.csv")
    assert code == 2 and "'class' must give a name" in err and len(err.strip().splitlines()) == 1
