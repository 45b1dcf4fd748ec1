"""The Bayesian-network table with known structure: schema file = SCHEMA, reproducible, its stated structure holds."""

from __future__ import annotations

import numpy as np
import yaml
from conftest import REPO

from dprelease.data.bayesnet import SCHEMA, generate_bayesnet, write_bayesnet
from dprelease.data.table import load_schema, parse_schema, read_table


def test_schema_file_equals_the_generator_schema():
    on_disk = yaml.safe_load((REPO / "examples" / "bayesnet-schema.yaml").read_text())
    assert on_disk == SCHEMA
    parse_schema(SCHEMA)


def test_generator_is_reproducible_and_readable(tmp_path):
    a, pa = generate_bayesnet(2000, seed=3)
    b, pb = generate_bayesnet(2000, seed=3)
    assert all((a[k] == b[k]).all() for k in a) and np.array_equal(pa, pb)
    schema = load_schema(REPO / "examples" / "bayesnet-schema.yaml")
    t = read_table(write_bayesnet(tmp_path / "bn.csv", 2000, seed=3), schema)
    assert t.n_records == 2000
    assert t.y.tolist() == (a["label"] == "yes").astype(int).tolist()


def test_label_rate_and_bayes_accuracy():
    cols, prob = generate_bayesnet(50_000, seed=0)
    y = cols["label"] == "yes"
    assert abs(y.mean() - 0.343) < 0.01
    assert abs(np.mean((prob >= 0.5) == y) - 0.866) < 0.01
    # "lot" is independent of the label; savings >= 20000 matters (known structure)
    big = cols["savings"] >= 20000
    assert y[big].mean() - y[~big].mean() > 0.3
    lot_hi = cols["lot"] >= 50000
    assert abs(y[lot_hi].mean() - y[~lot_hi].mean()) < 0.02
