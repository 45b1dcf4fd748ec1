"""Mondrian (k-anonymity, NOT DP) and the range-count evaluation."""

from __future__ import annotations

import numpy as np
import pytest
from test_rps import random_table

from dprelease.data.generators import gaussian_mixture_points, integer_table_schema, points_table, zipf_points
from dprelease.errors import InputError, ParameterError
from dprelease.evaluation.ranges import (
    BoxData, answer, answer_histogram, evaluate_ranges, make_range_workload, points_data, read_released, released_boxes, table_data,
)
from dprelease.relational.mondrian import expand, mondrian
from dprelease.relational.rps import PointDomain, table_domain


@pytest.mark.parametrize("k", [1, 5, 40])
def test_mondrian_groups_are_k_anonymous_boxes(k):
    table = random_table(np.random.default_rng(k), 300, 2, 2, 1)
    g = mondrian(table, k)
    assert g.sizes.min() >= k and g.sizes.sum() == 300
    for j, col in enumerate(table.columns):
        assert (col >= g.lo[g.group, j]).all() and (col <= g.hi[g.group, j]).all()
    synth = expand(g, np.random.default_rng(0))
    assert synth.n_records == 300 and np.array_equal(np.sort(synth.y), np.sort(table.y))
    for j, col in enumerate(synth.columns):  # every expanded value lies in some group's box
        assert (col >= g.lo[:, j].min()).all() and (col <= g.hi[:, j].max()).all()
    with pytest.raises(ParameterError):
        mondrian(table, 301)


def test_mondrian_splits_at_the_median_of_the_widest_dimension():
    table = points_table([np.arange(8.0), np.zeros(8)], np.zeros(8, dtype=np.int64), integer_table_schema(2, 10))
    g = mondrian(table, 2)
    assert g.n_groups == 4 and g.lo[:, 0].tolist() == [0, 2, 4, 6] and g.hi[:, 0].tolist() == [1, 3, 5, 7]


def test_range_answers_on_points_and_boxes():
    dom = PointDomain(("a", "b"), np.zeros(2), np.array([10.0, 1.0]), np.array([True, False]))
    pts = points_data([np.array([1.0, 2.0, 2.0, 9.0]), np.array([0.1, 0.5, 0.9, 0.5])], dom)
    w = make_range_workload(dom, 200, seed=1)
    got = answer(pts, w)
    for q in range(w.n_queries):
        m = np.ones(4, dtype=bool)
        for j, col in enumerate([np.array([1, 2, 2, 9]), np.array([0.1, 0.5, 0.9, 0.5])]):
            if w.constrained[q, j]:
                m &= (col >= w.lo[q, j]) & (col < w.hi[q, j])
        assert got[q] == m.sum()
    # a box [0, 4) x [0, 1) of weight 8 spreads uniformly: the query a in [1, 2] gets 8 * 2/4
    box = BoxData(np.array([[0.0, 0.0]]), np.array([[4.0, 1.0]]), np.array([8.0]), dom.integer, False)
    one = make_range_workload(dom, 1, seed=0, dims=[0], max_dimensions=1)
    one.lo[0, 0], one.hi[0, 0] = 1.0, 3.0
    assert answer(box, one)[0] == pytest.approx(4.0)
    res = evaluate_ranges(pts, pts, w)
    assert res["mean_relative_error"] == 0.0 and [s["dimensions"] for s in res["subsets"]] == [1, 2]


def test_workload_is_public_and_reproducible():
    dom = table_domain(integer_table_schema(5, 64))
    a, b = make_range_workload(dom, 600, seed=3), make_range_workload(dom, 600, seed=3)
    assert np.array_equal(a.lo, b.lo) and np.array_equal(a.constrained, b.constrained)
    assert sorted(set(a.dimensions.tolist())) == [1, 2, 3, 4, 5, 6]
    assert (a.constrained.sum(axis=1) == a.dimensions).all()


def test_histogram_answers_match_the_points():
    dom = PointDomain(("a", "b"), np.zeros(2), np.array([5.0, 4.0]), np.array([True, True]))
    cols = [np.array([0, 1, 1, 4, 4]), np.array([3, 0, 2, 2, 3])]
    hist = np.zeros((5, 4))
    np.add.at(hist, (cols[0], cols[1]), 1)
    w = make_range_workload(dom, 300, seed=2)
    assert np.allclose(answer_histogram(hist, dom, w), answer(points_data(cols, dom), w))


def test_read_released_errors_name_row_and_column(tmp_path):
    import pandas as pd

    table = random_table(np.random.default_rng(0), 5, 1, 1, 0)
    names = list(table_domain(table.schema).names)
    f = tmp_path / "r.csv"

    def rows(text: str):
        f.write_text(text)
        return pd.read_csv(f, dtype=str, keep_default_na=False, skipinitialspace=True)

    frame = rows(",".join(names) + "\n" + ",".join(["a", "c0_0", "[0-1)"]) + "\n" + ",".join(["a", "nope", "0"]))
    with pytest.raises(InputError, match="r.csv: row 2 .*'cat0'.*'nope'"):
        released_boxes(frame, table.schema, where=str(f))
    frame = rows(",".join(names) + "\n" + ",".join(["a", "Any", "[x-1)"]) + "\n")
    with pytest.raises(InputError, match="row 1 .*'int0'"):
        released_boxes(frame, table.schema, where=str(f))
    with pytest.raises(InputError, match="no manifest"):  # read_released reads a release: the file with its manifest
        read_released(f, table.schema)


def test_generators_are_reproducible_and_in_range():
    for fn in (gaussian_mixture_points, zipf_points):
        a, la = fn(2000, 3, 256, seed=1)
        b, lb = fn(2000, 3, 256, seed=1)
        assert all(np.array_equal(x, y) for x, y in zip(a, b)) and np.array_equal(la, lb)
        assert all(((c >= 0) & (c < 256)).all() for c in a) and set(np.unique(la)) <= {0, 1}
    cols, labels = zipf_points(5000, 2, 1024, seed=0)
    assert np.median(cols[0]) < 100  # skewed into a corner
    t = points_table(cols, labels, integer_table_schema(2, 1024))
    assert table_data(t).lo.shape == (5000, 3)
