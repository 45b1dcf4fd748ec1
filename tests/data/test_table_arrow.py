"""The arrow read path (every schema form) gives the same encoded table as the pandas path, and falls back to it
for anything it does not accept (so errors keep naming their row and column)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import REPO, dataset

from dprelease.data.table import (
    _drop_missing, _read_csv_arrow, _read_frame, encode_frame, load_schema, parse_schema, read_table,
)
from dprelease.errors import InputError

ADULT_SCHEMA = REPO / "examples" / "adult-schema.yaml"

SCHEMA = {"class": {"name": "Class", "values": ["Y", "N"], "aliases": {"Y.": "Y"}}, "missing": ["?"],
          "attributes": [{"name": "Job", "type": "categorical", "taxonomy": {"Any": ["Engineer", "Lawyer", "Clerk"]}},
                         {"name": "Age", "type": "numeric", "bounds": [18, 65], "integer": True},
                         {"name": "Pay", "type": "numeric", "bounds": [0, 100]}]}


def _pandas(path: Path, schema):
    frame, _ = _read_frame(path, schema)
    frame, rows = _drop_missing(frame, schema)
    return encode_frame(frame, schema, str(path), None, rows)


def _same(a, b) -> None:
    assert a is not None and b is not None
    assert np.array_equal(a.y, b.y)
    for x, y in zip(a.columns, b.columns):
        assert x.dtype == y.dtype and np.array_equal(x, y)


def test_headerless_adult_takes_the_arrow_path():
    schema = load_schema(ADULT_SCHEMA)
    path = dataset("adult", "adult.data")
    fast = _read_csv_arrow(path, schema)
    _same(fast, _pandas(path, schema))
    assert fast.n_records == 30_162  # adult.data without the rows holding '?'


@pytest.mark.parametrize("header", [True, False])
def test_both_schema_forms_agree_with_pandas(tmp_path, header):
    obj = dict(SCHEMA, drop=["Note"])
    rows = ["Engineer, 30, 1.5, x, Y", " Lawyer,40,2,y,N", "?, 50, 3, z, N", "Clerk, 33, 99.5, w, Y.", "",
            "Engineer,18,0,v,N"]
    if not header:
        obj["columns"] = ["Job", "Age", "Pay", "Note", "Class"]
    schema = parse_schema(obj)
    path = tmp_path / "t.csv"
    path.write_text(("Job,Age,Pay,Note,Class\n" if header else "") + "\n".join(rows) + "\n")
    fast = _read_csv_arrow(path, schema)
    _same(fast, _pandas(path, schema))
    assert fast.n_records == 4 and fast.columns[0].tolist() == [0, 1, 2, 0] and fast.y.tolist() == [0, 1, 0, 1]
    _same(read_table(path, schema), fast)


@pytest.mark.parametrize("line, message", [
    ("Pilot, 30, 1, Y", r"row 2.*column 'Job'.*not a leaf"),
    ("Clerk, 70, 1, Y", r"row 2.*column 'Age'.*outside the declared bounds"),
    ("Clerk, 30.5, 1, Y", r"row 2.*column 'Age'.*not a whole number"),
    ("Clerk, thirty, 1, Y", r"row 2.*column 'Age'.*not a number"),
    ("Clerk, 30, 1, Maybe", r"row 2.*column 'Class'.*not a declared class value"),
])
def test_bad_values_fall_back_to_the_worded_errors(tmp_path, line, message):
    schema = parse_schema(dict(SCHEMA, columns=["Job", "Age", "Pay", "Class"]))
    path = tmp_path / "t.csv"
    path.write_text("Engineer, 30, 1, Y\n" + line + "\n")
    assert _read_csv_arrow(path, schema) is None
    with pytest.raises(InputError, match=message):
        read_table(path, schema)


def test_header_with_unknown_column_falls_back(tmp_path):
    schema = parse_schema(SCHEMA)
    path = tmp_path / "t.csv"
    path.write_text("Job,Age,Pay,Extra,Class\nClerk,30,1,e,Y\n")
    assert _read_csv_arrow(path, schema) is None
    with pytest.raises(InputError, match="not in the schema"):
        read_table(path, schema)
