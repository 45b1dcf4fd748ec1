"""Schema, taxonomy and table reader: public domains, errors naming row and column, Adult = 45,222."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import REPO, dataset

from dprelease.data.table import Taxonomy, encode_frame, load_schema, parse_schema, read_adult, read_table, write_frame
from dprelease.errors import InputError

T1_SCHEMA = REPO / "examples" / "table1-schema.yaml"
T1_TABLE = REPO / "examples" / "table1-jobs.csv"
ADULT_SCHEMA = REPO / "examples" / "adult-schema.yaml"


def test_taxonomy_leaves_are_contiguous_ranges():
    tax = Taxonomy.from_nested({"Any": [{"P": ["E", "L"]}, {"A": ["D", {"W": ["W1", "W2"]}]}]}, "t")
    assert tax.leaf_labels == ("E", "L", "D", "W1", "W2")
    a = tax.labels.index("A")
    assert (tax.lo[a], tax.hi[a]) == (2, 5)
    assert list(tax.child_of_leaf(0)) == [0, 0, 1, 1, 1]
    assert list(tax.child_of_leaf(a)) == [-1, -1, 0, 1, 1]


def test_repeated_leaf_is_rejected():
    with pytest.raises(InputError, match="distinct"):
        Taxonomy.from_nested({"Any": ["x", {"B": ["x", "y"]}]}, "t")


def test_read_table1():
    table = read_table(T1_TABLE, load_schema(T1_SCHEMA))
    assert table.n_records == 8
    assert list(table.columns[1]) == [34, 50, 38, 33, 20, 37, 32, 25]
    assert list(table.y) == [0, 1, 1, 0, 0, 1, 0, 1]  # Y = 0, N = 1 (declared order)


def _frame(**cols):
    return pd.DataFrame(cols)


def test_value_outside_taxonomy_names_row_and_column():
    schema = load_schema(T1_SCHEMA)
    frame = _frame(Job=["Engineer", "Pilot"], Age=["30", "40"], Class=["Y", "N"])
    with pytest.raises(InputError, match=r"row 2.*'Job'.*'Pilot'"):
        encode_frame(frame, schema, "t.csv")


def test_numeric_outside_bounds_names_row_and_column(tmp_path: Path):
    path = tmp_path / "t.csv"
    path.write_text("Job,Age,Class\nEngineer,30,Y\nDancer,65,N\n")
    with pytest.raises(InputError, match=r"t.csv: row 2 \(line 3\), column 'Age': 65 is outside"):
        read_table(path, load_schema(T1_SCHEMA))


def test_non_integer_and_bad_class(tmp_path: Path):
    schema = load_schema(T1_SCHEMA)
    with pytest.raises(InputError, match="whole number"):
        encode_frame(_frame(Job=["Engineer"], Age=["30.5"], Class=["Y"]), schema)
    with pytest.raises(InputError, match="class value"):
        encode_frame(_frame(Job=["Engineer"], Age=["30"], Class=["maybe"]), schema)
    with pytest.raises(InputError, match="not in the schema"):
        encode_frame(_frame(Job=["Engineer"], Age=["30"], Class=["Y"], SSN=["1"]), schema)


def test_bad_schemas():
    with pytest.raises(InputError, match="bounds"):
        parse_schema({"class": {"name": "c", "values": ["a", "b"]},
                      "attributes": [{"name": "x", "type": "numeric", "bounds": [3, 1]}]})
    with pytest.raises(InputError, match="taxonomy"):
        parse_schema({"class": {"name": "c", "values": ["a", "b"]}, "attributes": [{"name": "x", "type": "categorical"}]})


def test_parquet_round_trip(tmp_path: Path):
    schema = load_schema(T1_SCHEMA)
    frame = pd.read_csv(T1_TABLE, dtype=str)
    write_frame(frame, tmp_path / "t.parquet")
    a = read_table(tmp_path / "t.parquet", schema)
    b = read_table(T1_TABLE, schema)
    assert np.array_equal(a.y, b.y) and all(np.array_equal(x, y) for x, y in zip(a.columns, b.columns))


def test_adult_has_45222_records_and_schema_covers_it():
    table = read_adult(dataset("adult"), load_schema(ADULT_SCHEMA))
    assert table.n_records == 45_222
    assert np.bincount(table.y).tolist() == [22_654 + 11_360, 7_508 + 3_700]


def test_arrow_fast_path_agrees_with_pandas_path(tmp_path: Path):
    from dprelease.data.table import _read_csv_arrow

    schema = load_schema(T1_SCHEMA)
    fast = _read_csv_arrow(T1_TABLE, schema)
    slow = encode_frame(pd.read_csv(T1_TABLE, dtype=str), schema)
    assert fast is not None
    assert np.array_equal(fast.y, slow.y) and all(np.array_equal(a, b) for a, b in zip(fast.columns, slow.columns))
    # a missing token drops the row in both paths
    obj = {"class": {"name": "Class", "values": ["Y", "N"]}, "missing": ["?"],
           "attributes": [{"name": "Job", "type": "categorical", "taxonomy": {"Any": ["Engineer", "Lawyer"]}},
                          {"name": "Age", "type": "numeric", "bounds": [18, 65], "integer": True}]}
    path = tmp_path / "m.csv"
    path.write_text("Job,Age,Class\nEngineer,30,Y\n?,40,N\nLawyer,50,N\n")
    table = read_table(path, parse_schema(obj))
    assert table.n_records == 2 and table.columns[0].tolist() == [0, 1]
