"""The command lines dprelease diffgen / tds / experiment diffgen-classification."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from conftest import REPO, dataset

from dprelease.cli import main

SCHEMA = str(REPO / "examples" / "table1-schema.yaml")
TABLE = str(REPO / "examples" / "table1-jobs.csv")


def test_diffgen_cli_writes_table_records_and_manifest(tmp_path: Path, capsys):
    out = tmp_path / "rel.csv"
    assert main(["diffgen", TABLE, "--schema", SCHEMA, "-e", "1", "-H", "2", "--method", "faithful", "-o", str(out),
                 "--records",
                 "--seed", "4", "-q"]) == 0
    table = pd.read_csv(out)
    assert list(table.columns) == ["Job", "Age", "Class", "count"]
    records = pd.read_csv(tmp_path / "rel.records.csv")
    assert len(records) == table["count"].sum()
    m = json.loads((tmp_path / "rel.csv.manifest.json").read_text())
    assert m["algorithm"] == "diffgen" and m["privacy"]["epsilon_spent"] == pytest.approx(1.0, rel=1e-12)
    assert set(m["release"]["final_cut"]) == {"Job", "Age"}
    assert m["budget_split"]["epsilon_prime"] == pytest.approx(1 / (2 * (1 + 4)))
    assert m["rng"]["mode"] == "seeded"
    text = json.dumps(m)
    for leak in ("seconds", "time_s", "runtime"):
        assert leak not in text


def test_diffgen_cli_parquet_and_score(tmp_path: Path):
    out = tmp_path / "rel.parquet"
    assert main(["diffgen", TABLE, "--schema", SCHEMA, "-e", "0.5", "-H", "3", "-o", str(out), "--score", "infogain",
                 "--seed", "1", "-q"]) == 0
    assert len(pd.read_parquet(out)) % 2 == 0


def test_diffgen_cli_out_of_schema_value_exits_2(tmp_path: Path, capsys):
    bad = tmp_path / "bad.csv"
    bad.write_text("Job,Age,Class\nEngineer,34,Y\nPilot,40,N\n")
    assert main(["diffgen", str(bad), "--schema", SCHEMA, "-e", "1", "-H", "2", "-o", str(tmp_path / "o.csv")]) == 2
    err = capsys.readouterr().err
    assert "row 2" in err and "'Job'" in err and "Pilot" in err
    assert not (tmp_path / "o.csv").exists()


def test_tds_cli_is_labelled_not_dp(tmp_path: Path, capsys):
    out = tmp_path / "tds.csv"
    assert main(["tds", TABLE, "--schema", SCHEMA, "-k", "2", "-o", str(out), "-q"]) == 0
    assert "NOT differentially private" in capsys.readouterr().err
    m = json.loads((tmp_path / "tds.csv.manifest.json").read_text())
    assert m["privacy"]["differentially_private"] is False


def test_experiment_json_keys(capsys):
    data = dataset("adult")
    assert main(["experiment", "diffgen-classification", "--data", str(data), "--epsilon", "1",
                 "--specializations", "6", "--runs", "1", "--json", "-q"]) == 0
    out = json.loads(capsys.readouterr().out)
    for key in ("baseline_accuracy", "accuracy", "lower_bound_accuracy", "runs", "stdev"):
        assert key in out
    assert out["runs"] == 1 and out["baseline_accuracy"] > out["lower_bound_accuracy"]
