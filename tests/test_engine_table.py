"""DiffGen's engine path (issue 11, section 2) without Spark: the partition tree whose records live with an
engine (:class:`EngineTree` over :class:`LocalTable`) gives the release of the in-memory tree, byte for byte,
and the counts-based split intervals equal the record-based ones."""

from __future__ import annotations

import numpy as np
import pytest

from dprelease.data.table import load_schema, read_adult
from dprelease.engine import kernels
from dprelease.engine.local import LocalTable
from dprelease.errors import ParameterError
from dprelease.privacy import make_noise
from dprelease.relational.diffgen import diffgen
from dprelease.relational.partition import split_intervals, split_intervals_from_counts

from conftest import REPO, dataset


@pytest.fixture(scope="module")
def adult():
    table = read_adult(dataset("adult"), load_schema(REPO / "examples" / "adult-schema.yaml"))
    return table.take(np.arange(0, table.n_records, 4))  # every 4th record: 11,306 of 45,222


def test_split_intervals_from_counts_equal_record_based():
    rng = np.random.default_rng(3)
    for integer, lo, hi, values in [
        (True, 17.0, 91.0, rng.integers(17, 91, 500).astype(np.float64)),  # the counting path
        (True, 0.0, 1e7, rng.integers(0, 10**7, 300).astype(np.float64)),  # the sort path
        (False, -5.0, 5.0, np.round(rng.uniform(-5, 5, 400), 1)),
        (False, -1.0, 1.0, np.array([-0.0, 0.0, 0.5, -0.5, 0.0])),  # -0.0 and 0.0 are one value
        (True, 0.0, 10.0, np.zeros(0)),
    ]:
        y = rng.integers(0, 3, values.size)
        a = split_intervals(values, y, 3, lo, hi, integer)
        part = kernels.merge([kernels.value_class_counts(np.zeros(y.size, np.int64), values, y, 3)])
        u, counts = kernels.decode_value_counts(part, 3).get(0, (np.zeros(0), np.zeros((0, 3), np.int64)))
        b = split_intervals_from_counts(u, counts, lo, hi, integer)
        for f in ("low", "high", "measure", "left", "total"):
            assert np.array_equal(getattr(a, f), getattr(b, f)), f
            assert getattr(a, f).dtype == getattr(b, f).dtype, f


@pytest.mark.parametrize("h,score,recycle,seed", [(6, "max", False, 1), (12, "max", True, 2),
                                                  (8, "infogain", False, 3)])
def test_engine_tree_release_equals_in_memory_tree(adult, h, score, recycle, seed):
    a = diffgen(adult, 1.0, h, noise=make_noise(seed=seed), score=score, recycle=recycle)
    b = diffgen(LocalTable(adult), 1.0, h, noise=make_noise(seed=seed), score=score, recycle=recycle)
    assert a.arrow().equals(b.arrow())
    assert a.trace == b.trace and len(a.trace) == h
    assert a.cells.shape[0] > 1
    assert a.accountant.summary() == b.accountant.summary()


def test_engine_tree_refuses_local_scores(adult):
    with pytest.raises(ParameterError, match="--engine local only"):
        diffgen(LocalTable(adult), 1.0, 4, noise=make_noise(seed=1), local=True)


def test_cli_refuses_methods_spark_does_not_run(tmp_path, capsys):
    """Before reading anything (no Spark started): one line, exit 2, nothing written."""
    from dprelease.cli import main

    data = tmp_path / "d.dat"
    data.write_text("1 2\n2 3\n")
    out = tmp_path / "o.dat"
    assert main(["diffpart", str(data), "--universe", "1..3", "-e", "1", "--engine", "spark", "-o", str(out)]) == 2
    assert "add --method faithful" in capsys.readouterr().err
    schema = REPO / "examples" / "adult-schema.yaml"
    for method in (["--method", "diffgen-plus"], ["--method", "diffgen-local", "-H", "3"]):
        assert main(["diffgen", str(data), "--schema", str(schema), "-e", "1", *method, "--engine", "spark",
                     "-o", str(out)]) == 2
        err = capsys.readouterr().err
        assert "--engine spark runs --method diffgen" in err and err.count("\n") == 1
    assert not out.exists()


def test_spark_route_lookup_matches_a_dictionary():
    """DiffPart's routing on Spark: a record (partition, mask) goes to the child of exactly that cell, or is
    dropped. Regression: a record mask wider than every chosen mask spilled into the parent's rank and was
    routed to another partition's child (found at 10M records)."""
    from dprelease.engine.spark import _lookup

    rng = np.random.default_rng(5)
    for _ in range(200):
        n_parents = int(rng.integers(1, 6))
        parents = np.sort(rng.choice(50, n_parents, replace=False))
        cells = sorted({(int(p), int(m)) for p in parents for m in rng.integers(1, 8, 3)})
        parent = np.array([c[0] for c in cells], np.int64)
        mask = np.array([c[1] for c in cells], np.int64)
        pid = rng.choice(np.concatenate([parents, [99]]), 300).astype(np.int64)
        masks = rng.integers(1, 1024, 300).astype(np.int64)
        masks[::3] = rng.integers(1, 8, masks[::3].size)
        at, found = _lookup(parent, mask, pid, masks)
        index = {c: j for j, c in enumerate(cells)}
        expect = [index.get((int(a), int(b)), -1) for a, b in zip(pid, masks)]
        assert found.tolist() == [e >= 0 for e in expect]
        assert at[found].tolist() == [e for e in expect if e >= 0]
