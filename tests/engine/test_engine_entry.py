"""The engine layer: one entry point per kind of data, no engine chosen by name elsewhere, nothing imported from
above it, and the algorithms' loops written once over its interface."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from dprelease.data import kosarak_like
from dprelease.data.io import read_transactions
from dprelease.data.table import load_schema, read_table
from dprelease.data.transactions import TransactionDB
from dprelease.data.universe import Universe, parse_universe_spec
from dprelease.engine import (
    LocalTable, LocalTransactions, TransactionData, in_memory, open_table, open_transactions, unwrap,
)
from dprelease.engine.base import LevelOp
from dprelease.engine.local import LocalPartitioner
from dprelease.errors import ParameterError
from dprelease.itemsets.exact import top_k_itemsets
from dprelease.privacy import SeededNoise
from dprelease.setvalued.diffpart import diffpart

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src" / "dprelease"


def _imported_packages(path: Path) -> set[str]:
    """The dprelease packages ``path`` imports (top level or in a function), relative imports resolved."""
    package = list(path.relative_to(SRC.parent).parts[:-1])  # a module's package; an __init__'s own
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target == "dprelease":
                found.update(alias.name for alias in node.names)
            elif target.startswith("dprelease."):
                found.add(target.split(".")[1])
        elif isinstance(node, ast.Import):
            found.update(a.name.split(".")[1] for a in node.names if a.name.startswith("dprelease."))
    return found


def test_the_engines_import_nothing_above_them():
    """Executors run engine code only: no module of engine/ imports an algorithm, evaluation or a command."""
    below = {"engine", "data", "errors", "privacy", "limits", "progress", "__version__"}
    upward = {str(p.relative_to(SRC)): sorted(_imported_packages(p) - below)
              for p in sorted((SRC / "engine").rglob("*.py"))}
    assert {k: v for k, v in upward.items() if v} == {}


def test_no_module_outside_the_engines_compares_an_engine_name():
    """The engine is chosen in one place (dprelease.engine): elsewhere no comparison with "local" or "spark"."""
    names = {"local", "spark"}
    found = []
    for path in sorted(SRC.rglob("*.py")):
        if (SRC / "engine") in path.parents:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Compare):
                operands = [node.left, *node.comparators]
                if any(isinstance(o, ast.Constant) and o.value in names for o in operands):
                    found.append(f"{path.relative_to(SRC)}:{node.lineno}")
    assert found == []


def test_open_transactions_reads_text_parquet_and_records_on_the_local_engine(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    universe = parse_universe_spec("1..12")
    text = REPO / "examples" / "baskets.dat"
    db, _ = read_transactions(text, universe)
    data = open_transactions(text, universe)
    assert isinstance(data, LocalTransactions) and in_memory(data.engine_name)
    assert unwrap(data).to_lists() == db.to_lists()
    parquet = tmp_path / "baskets.parquet"
    lines = [line.split() for line in text.read_text().splitlines() if line.strip() and not line.startswith("#")]
    pq.write_table(pa.table({"items": [[int(t) for t in line] for line in lines]}), parquet)
    assert unwrap(open_transactions(parquet, universe)).to_lists() == db.to_lists()
    assert unwrap(open_transactions(db, universe)) is db
    assert unwrap(open_transactions(data, universe)) is unwrap(data)


def test_open_transactions_refuses_an_unknown_engine_and_a_universe_of_another_size():
    db = TransactionDB.from_lists([[0, 1], [2]], 3)
    with pytest.raises(ParameterError, match="--engine must be one of local, spark"):
        open_transactions(db, Universe.from_range(0, 2), engine="dask")
    with pytest.raises(ParameterError, match="3 item ids and the universe 4 items"):
        open_transactions(db, Universe.from_range(0, 3))
    with pytest.raises(ParameterError):
        in_memory("dask")


def test_open_table_reads_a_csv_on_the_local_engine():
    schema = load_schema(REPO / "examples" / "table1-schema.yaml")
    path = REPO / "examples" / "table1-jobs.csv"
    want = read_table(path, schema)
    data = open_table(path, schema)
    assert isinstance(data, LocalTable) and data.n_records == want.n_records
    got = unwrap(data)
    assert all(np.array_equal(a, b) for a, b in zip(got.columns, want.columns)) and np.array_equal(got.y, want.y)
    assert unwrap(open_table(want, schema)) is want


def _level(partitioner: LocalPartitioner, ops: list[LevelOp], one_at_a_time: bool, next_pid: int
           ) -> dict[int, tuple[list[int], list[int]]]:
    """Count ``ops`` and move every cell of each to a new partition; returns pid -> (masks, counts)."""
    out: dict[int, tuple[list[int], list[int]]] = {}
    for group in ([[op] for op in ops] if one_at_a_time else [ops]):
        counts = partitioner.level_counts(group)
        moves = []
        for op in group:
            masks, sizes = counts[op.pid]
            out[op.pid] = (masks.tolist(), sizes.tolist())
            for m in masks.tolist():
                moves.append((op.pid, m, next_pid))
                next_pid += 1
        partitioner.route(moves)
    return out


def test_a_level_counted_one_partition_at_a_time_equals_one_pass():
    """The partitioner's contract: a partition not listed keeps its records, so a level may be counted partition by
    partition (the loop that draws between two partitions) with the counts and routing of one pass."""
    db = kosarak_like(3_000, 64, 6.0, seed=2)
    runs = []
    for one_at_a_time in (False, True):
        p = LocalPartitioner(db)
        first = _level(p, [LevelOp(0, 0, 64, 8)], one_at_a_time, 1)
        kids = sorted(p._rows)
        second = _level(p, [LevelOp(pid, 8 * (j % 8), 8 * (j % 8) + 8, 1) for j, pid in enumerate(kids)],
                        one_at_a_time, 1000)
        runs.append((first, second))
    assert runs[0] == runs[1]
    assert sum(sum(sizes) for _, sizes in runs[0][0].values()) == int(np.count_nonzero(db.lengths))


def test_a_leaf_operation_counts_without_keeping_the_records():
    db = kosarak_like(500, 16, 4.0, seed=1)
    p = LocalPartitioner(db)
    masks, sizes = p.level_counts([LevelOp(0, 0, 16, 4, leaf=True)])[0]
    assert int(sizes.sum()) == int(np.count_nonzero(db.lengths)) and p._split == {} and p._rows == {}


class _Elsewhere(TransactionData):
    """Another engine, as the algorithms see it: the local engine's passes behind the generic interface (its
    partitioner, and the default candidate counter: one itemset-supports pass per level)."""

    engine_name = "elsewhere"

    def __init__(self, db: TransactionDB):
        self.inner = LocalTransactions(db)
        self.n_items = self.inner.n_items

    def summary(self):
        return self.inner.summary()

    def item_supports(self):
        return self.inner.item_supports()

    def pair_supports(self, items):
        return self.inner.pair_supports(items)

    def pair_counts(self, items):
        return self.inner.pair_counts(items)

    def basis_bin_counts(self, bases):
        return self.inner.basis_bin_counts(bases)

    def itemset_supports(self, itemsets):
        return self.inner.itemset_supports(itemsets)

    def record_mask_counts(self):
        return self.inner.record_mask_counts()

    def partitioner(self):
        return self.inner.partitioner()


@pytest.mark.parametrize("k", [1, 30, 200])
def test_one_top_k_miner_counts_the_same_by_bit_columns_and_by_passes(k):
    db = kosarak_like(4_000, 120, 7.0, seed=5)
    assert top_k_itemsets(_Elsewhere(db), k) == top_k_itemsets(db, k)
    assert top_k_itemsets(_Elsewhere(db), k, max_length=2) == top_k_itemsets(db, k, max_length=2)


@pytest.mark.parametrize("level_wise", [False, True])
def test_diffparts_one_loop_gives_one_release_on_any_engine(level_wise):
    """Either order of the draws runs over the partitioner interface, so an engine that is not in memory gives
    the local engine's seeded release on the same order."""
    db = kosarak_like(3_000, 40, 5.0, seed=3)
    universe = Universe.from_range(0, 39)
    a = diffpart(db, universe, 2.0, noise=SeededNoise(4), fanout=4, level_wise=level_wise)
    b = diffpart(_Elsewhere(db), universe, 2.0, noise=SeededNoise(4), fanout=4, level_wise=level_wise)
    assert [s.tolist() for s in a.itemsets] == [s.tolist() for s in b.itemsets]
    assert a.counts.tolist() == b.counts.tolist() and a.n_records > 0
