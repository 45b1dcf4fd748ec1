"""The RPS experiments' range-count rows carry the errors of an empty and a uniform table beside their own."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dprelease.experiments.rps import _e1_task, _e2_ranges_task

REPO = Path(__file__).resolve().parents[2]


def test_e1_rows_show_both_baselines():
    variants = [("rps-balanced", {"partitioning": "balanced"}, [4])]
    rows = _e1_task(("gaussian", 2, 2_000, 64, [1.0], variants, 1, 100, 0))
    assert {r["method"] for r in rows} == {"rps-balanced", "flat-histogram"}
    for r in rows:
        assert 0 < r["empty_relative_error"] <= 1 and r["uniform_relative_error"] > 0
    assert len({(r["empty_relative_error"], r["uniform_relative_error"]) for r in rows}) == 1  # one dataset


def test_e2_range_rows_show_both_baselines():
    from dprelease.data.table import load_schema, read_table

    table = read_table(REPO / "examples" / "table1-jobs.csv", load_schema(REPO / "examples" / "table1-schema.yaml"))
    rows = _e2_ranges_task((table, [1.0], [2], [2], 50, 1, 0))
    assert rows and all(0 < r["empty_relative_error"] <= 1 and np.isfinite(r["uniform_relative_error"]) for r in rows)


def test_e3_rows_show_the_uniform_degrees(tmp_path):
    from dprelease.experiments.rps import _e3_task

    graph = tmp_path / "g.txt"
    rng = np.random.default_rng(1)
    graph.write_text("".join(f"{u} {v}\n" for u, v in rng.integers(0, 60, (200, 2)).tolist() if u != v))
    rows = _e3_task(("g", graph, 8, [1.0], 1, 0))
    assert rows and all(0 < r["ks_uniform"] <= 1 and r["emd_uniform"] > 0 for r in rows)
