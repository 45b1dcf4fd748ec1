"""A table the project has never seen, tried as a new user would.

A small hand-made table shaped like the public bank-marketing data (not downloaded): ';'-separated with
quoted fields, classes and a binary attribute spelled ``no``/``yes`` (unquoted in the schema, where YAML
1.1 would read them as false/true), and a numeric attribute with negative bounds.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dprelease.cli import main
from dprelease.data.table import _load_yaml, load_schema, parse_schema, read_table
from dprelease.errors import InputError

BANK_SCHEMA = """\
# bank-marketing-like schema, written the way a new user would (labels unquoted)
format: dprelease-table-schema/1
name: bank
class:
  name: y
  values: [no, yes]
attributes:
  - name: age
    type: numeric
    bounds: [18, 96]
    integer: true
  - name: job
    type: categorical
    taxonomy:
      Any:
        - white-collar: [management, admin.]
        - blue-collar: [blue-collar, technician]
        - other: [unknown, retired]
  - name: default
    type: categorical
    taxonomy:
      Any: [no, yes]
  - name: balance
    type: numeric
    bounds: [-10000, 110000]
    integer: true
"""

JOBS = ["management", "admin.", "blue-collar", "technician", "unknown", "retired"]


def _bank_csv(path: Path, n: int = 90, seed: int = 3) -> Path:
    rng = np.random.default_rng(seed)
    lines = ['"age";"job";"default";"balance";"y"']
    for _ in range(n):
        age = int(rng.integers(18, 96))
        job = JOBS[int(rng.integers(len(JOBS)))]
        default = "yes" if rng.random() < 0.2 else "no"
        balance = int(rng.integers(-3000, 40000))
        y = "yes" if (balance > 15000) ^ (rng.random() < 0.1) else "no"
        lines.append(f'{age};"{job}";"{default}";{balance};"{y}"')
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def bank(tmp_path: Path) -> tuple[Path, Path]:
    schema = tmp_path / "bank.yaml"
    schema.write_text(BANK_SCHEMA)
    return _bank_csv(tmp_path / "bank.csv"), schema


def test_yes_no_labels_stay_strings():
    import yaml

    assert yaml.safe_load("values: [no, yes]")["values"] == [False, True]  # what YAML 1.1 would do
    schema = parse_schema(_load_yaml(BANK_SCHEMA, Path("bank.yaml")))
    assert schema.class_attribute.values == ("no", "yes")
    default = next(a for a in schema.attributes if a.name == "default")
    assert default.taxonomy.leaf_labels == ("no", "yes")


def test_labels_kept_exactly_as_written(tmp_path: Path):
    """Plain scalars that YAML 1.1 would turn into numbers keep their spelling (010, 1:20, on, off)."""
    path = tmp_path / "s.yaml"
    path.write_text(BANK_SCHEMA.replace("Any: [no, yes]", "Any: [010, 1:20, on, off]"))
    default = next(a for a in load_schema(path).attributes if a.name == "default")
    assert default.taxonomy.leaf_labels == ("010", "1:20", "on", "off")


def test_semicolon_file_without_delimiter_gets_a_hint(bank):
    table, schema = bank
    with pytest.raises(InputError, match=r"read as ONE column.*is it separated by ';'\? pass --delimiter ';'"):
        read_table(table, load_schema(schema))


def test_bank_table_with_delimiter_option(bank, tmp_path: Path, capsys):
    table, schema = bank
    out = tmp_path / "rel.csv"
    assert main(["diffgen", str(table), "--schema", str(schema), "--delimiter", ";", "-e", "2", "-H", "4",
                 "-o", str(out), "--seed", "1", "-q"]) == 0
    stdout = capsys.readouterr().out
    assert f"release: {out}" in stdout and f"manifest: {out}.manifest.json" in stdout
    rel = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert set(rel["y"]) == {"no", "yes"}
    assert set(rel["default"]) <= {"no", "yes", "Any"}
    m = json.loads(Path(str(out) + ".manifest.json").read_text())
    assert m["domain"]["class"]["values"] == ["no", "yes"]
    # interval labels: a comma separates the bounds, so negative bounds cannot be misread
    for label in set(rel["balance"]):
        assert label.startswith("[") and label.endswith(")") and ", " in label, label
        lo, hi = (float(x) for x in label[1:-1].split(", "))
        assert -10000 <= lo < hi <= 110000
    assert any(lab.startswith("[-10000, ") for lab in rel["balance"])


def test_delimiter_in_the_schema(bank, tmp_path: Path):
    table, schema = bank
    schema.write_text(BANK_SCHEMA + "delimiter: ';'\n")
    encoded = read_table(table, load_schema(schema))
    assert encoded.n_records == 90
    schema.write_text(BANK_SCHEMA + "delimiter: semicolon\n")
    assert load_schema(schema).delimiter == ";"


def test_tab_delimiter(bank, tmp_path: Path):
    table, schema = bank
    tsv = tmp_path / "bank.tsv"
    tsv.write_text(table.read_text().replace(";", "\t"))
    assert main(["tds", str(tsv), "--schema", str(schema), "--delimiter", "tab", "-k", "3", "-o",
                 str(tmp_path / "t.csv"), "-q"]) == 0


def test_errors_name_what_happened(bank, tmp_path: Path):
    table, schema = bank
    s = load_schema(schema)
    from dataclasses import replace

    s = replace(s, delimiter=";")
    bad = tmp_path / "bad.csv"
    bad.write_text(table.read_text() + '34.5;"admin.";"no";10;"no"\n')
    with pytest.raises(InputError, match=r"34\.5 is not a whole number") as exc:
        read_table(bad, s)
    assert "np.float64" not in str(exc.value)
    wrong = tmp_path / "wrong.csv"
    wrong.write_text('"age";"job";"default";"balance";"y"\n40;"admin.";"no";10;"maybe"\n')
    with pytest.raises(InputError, match=r"'maybe' is not a declared class value"):
        read_table(wrong, s)


def test_experiment_requires_a_schema_and_names_it(bank, tmp_path: Path, capsys, monkeypatch):
    table, schema = bank
    code = main(["experiment", "diffgen-classification", "--data", str(table), "-e", "1", "-H", "2"])
    err = capsys.readouterr().err
    assert code == 2 and "--schema is required" in err and len(err.strip().splitlines()) == 1
    from dprelease.experiments import diffgen as exp

    titles = []
    real = exp.plot_figure3
    monkeypatch.setattr(exp, "plot_figure3", lambda summary, path, dataset="Adult": (titles.append(dataset),
                                                                                    real(summary, path, dataset)))
    out = tmp_path / "exp"
    assert main(["experiment", "diffgen-classification", "--data", str(table), "--schema", str(schema),
                 "--delimiter", ";", "-e", "1", "-H", "2", "--runs", "1", "--out-dir", str(out)]) == 0
    err = capsys.readouterr().err
    assert f"schema {schema} (bank)" in err
    assert titles == ["bank"]
    assert (out / "diffgen_figure3.png").stat().st_size > 0  # one epsilon, one h: the PNG is still written
    assert (out / "diffgen_summary.csv").exists()
