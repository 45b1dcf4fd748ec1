"""Tables on Spark: a cached DataFrame of encoded columns ``a0..a{d-1}`` (leaf codes or values, as doubles) and
``y`` (class codes); DiffGen's splitter and RPS's regions over it, one job per pass (:mod:`.passes`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ...data.table import EncodedTable
from .. import kernels
from ..base import BoxDomain, GroupCounts, RegionRecords, TableData, TableSplitter, ValueCounts
from ..local import leaf_class_table
from .passes import AGG_SCHEMA, LevelCache, accumulate, reduce_partials
from .session import collect, session

__all__ = ["SparkTable", "SparkTableSplitter", "SparkRegions", "table_arrow_schema"]


def table_arrow_schema(d: int) -> str:
    """The Spark schema of an encoded table with ``d`` predictors."""
    return ", ".join([f"a{j} double" for j in range(d)] + ["y long"])


class SparkTable(TableData):
    """An encoded table as a Spark DataFrame (``a0..a{d-1}`` doubles, ``y`` long); see :class:`TableData`."""

    engine_name = "spark"

    def __init__(self, df: Any, schema: Any):
        self.df = df
        self.schema = schema
        self._n: int | None = None

    @classmethod
    def from_encoded(cls, table: EncodedTable, master: str | None = None, partitions: int = 2) -> "SparkTable":
        """A local :class:`EncodedTable` as a Spark DataFrame (tests)."""
        import pyarrow as pa

        spark = session(master)
        arrow = pa.table({**{f"a{j}": np.asarray(c, dtype=np.float64) for j, c in enumerate(table.columns)},
                          "y": table.y.astype(np.int64)})
        return cls(spark.createDataFrame(arrow).repartition(partitions).persist(), table.schema)

    @property
    def n_records(self) -> int:
        if self._n is None:
            self._n = int(collect(self.df.groupBy().count()).column(0)[0].as_py())
        return self._n

    def splitter(self) -> "SparkTableSplitter":
        return SparkTableSplitter(self)

    def regions(self, domain: BoxDomain) -> "SparkRegions":
        return SparkRegions(self, domain)

    def close(self) -> None:
        try:
            self.df.unpersist()
        except Exception:
            pass


def _count_job(df: Any, block: Callable[[Any], kernels.Partial]) -> kernels.Partial:
    """``block(batch)`` on every Arrow batch of ``df``, partials summed by key."""

    def task(batches: Iterator[Any]) -> Iterator[Any]:
        return accumulate(((b,) for b in batches), block)

    return reduce_partials(df.mapInArrow(task, AGG_SCHEMA))


class SparkTableSplitter(LevelCache, TableSplitter):
    """Records as (pid, a0.., y) rows, cached per round; a specialization is one job (route + counts)."""

    def __init__(self, data: SparkTable):
        from pyspark.sql import functions as F

        self.data = data
        self.n_classes = int(data.schema.n_classes)
        self.d = len(data.schema.attributes)
        self.df = data.df.select(F.lit(0).cast("long").alias("pid"), *[f"a{j}" for j in range(self.d)], "y")
        self._cached = None

    def value_counts(self, attrs: list[int]) -> dict[int, ValueCounts]:
        n_cls = self.n_classes
        attrs = list(attrs)

        def block(b: Any) -> kernels.Partial:
            y = b.column(b.num_columns - 1).to_numpy()
            return kernels.merge([kernels.value_class_counts(
                np.full(y.size, j, np.int64), b.column(1 + j).to_numpy(), y, n_cls) for j in attrs])

        return kernels.decode_value_counts(_count_job(self.df, block), n_cls)

    def split(self, leaves: np.ndarray, attr: int, m: int, child_of_leaf: np.ndarray | None,
              split: float | None, first: int) -> dict[int, ValueCounts]:
        import pyarrow as pa

        n_cls = self.n_classes
        leaves = np.asarray(leaves, dtype=np.int64)

        def route(batches: Iterator[Any]) -> Iterator[Any]:
            for b in batches:
                pids = b.column(0).to_numpy()
                rows, _, new = kernels.table_children(pids, b.column(1 + attr).to_numpy(), leaves, m,
                                                      child_of_leaf, split, first)
                if rows.size:
                    pids = pids.copy()
                    pids[rows] = new
                    yield pa.RecordBatch.from_arrays([pa.array(pids, pa.int64())] + b.columns[1:],
                                                     names=b.schema.names)
                else:
                    yield b

        old = self._persist_level(self.df.mapInArrow(route, self.df.schema))
        lo, hi = first, first + leaves.size * m

        def block(b: Any) -> kernels.Partial:
            pids = b.column(0).to_numpy()
            rows = np.flatnonzero((pids >= lo) & (pids < hi))
            y = b.column(b.num_columns - 1).to_numpy()[rows]
            return kernels.value_class_counts((pids[rows] - lo) % m, b.column(1 + attr).to_numpy()[rows], y, n_cls)

        out = kernels.decode_value_counts(_count_job(self.df, block), n_cls)
        if old is not None:
            old.unpersist()
        return out

    def leaf_class_counts(self, leaves: np.ndarray) -> np.ndarray:
        def block(b: Any) -> kernels.Partial:
            pids = b.column(0).to_numpy()
            return kernels.merge([(pids.astype(np.int64), b.column(b.num_columns - 1).to_numpy().astype(np.int64),
                                   np.ones(pids.size, np.int64))])

        return leaf_class_table(_count_job(self.df, block), leaves, self.n_classes)


LevelValues = Callable[[Any, np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]]


class SparkRegions(LevelCache, RegionRecords):
    """RPS's records on Spark: (reg, d0..d{n-1}) rows, dimension 0 the class and dimension j + 1 the table's column
    j; a level's grouped count and its routing are one job each (the routed records are cached). Comparisons
    replicate :class:`~dprelease.engine.local.LocalRegions`'s arithmetic (lattice dimensions as int32 offsets from
    the lower end), so the same counts come back."""

    def __init__(self, table: SparkTable, domain: BoxDomain):
        from pyspark.sql import functions as F

        self.domain = domain
        d = len(table.schema.attributes)
        self.n_dims = d + 1
        self.df = table.df.select(F.lit(0).cast("long").alias("reg"), F.col("y").cast("double").alias("d0"),
                                  *[F.col(f"a{j}").alias(f"d{j + 1}") for j in range(d)])
        self._cached = None
        lo, hi, integer = (np.asarray(domain.lo, dtype=np.float64), np.asarray(domain.hi, dtype=np.float64),
                           np.asarray(domain.integer, dtype=bool))
        self.lattice = integer & (hi - lo < 2**31)
        self.lo, self.integer = lo, integer

    def _levels(self) -> LevelValues:
        """A picklable function of (batch, region_dim): regions, the dimension split per record (-1: none), and
        the value there in the engine's units (no reference to the engine, which holds the DataFrame)."""
        lattice, lo, integer = self.lattice, self.lo, self.integer

        def levels(b: Any, region_dim: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            reg = b.column(0).to_numpy().astype(np.int64)
            dims = region_dim[reg]
            present = np.unique(region_dim[region_dim >= 0]).tolist()
            wide = any(not lattice[j] for j in present)
            values = np.zeros(reg.size, dtype=np.float64 if wide else np.int32)
            for j in present:
                m = dims == j
                col = b.column(1 + j).to_numpy()[m]
                if lattice[j]:
                    values[m] = (col - lo[j]).astype(np.int32)
                else:
                    values[m] = col - (lo[j] if integer[j] else 0.0)
            return reg, dims, values

        return levels

    def sizes(self, n_regions: int) -> np.ndarray:
        def block(b: Any) -> kernels.Partial:
            reg = b.column(0).to_numpy().astype(np.int64)
            return kernels.merge([(reg, np.zeros(reg.size, np.int64), np.ones(reg.size, np.int64))])

        return kernels.dense(_count_job(self.df, block), n_regions)

    def value_counts(self, region_dim: np.ndarray) -> GroupCounts:
        region_dim = np.asarray(region_dim, dtype=np.int64)
        offsets = np.where(self.lattice | self.integer, self.lo, 0.0)
        levels = self._levels()

        def block(b: Any) -> kernels.Partial:
            reg, dims, values = levels(b, region_dim)
            keep = dims >= 0
            v = values[keep].astype(np.float64) + offsets[dims[keep]]
            return kernels.merge([(reg[keep], kernels.value_key(v), np.ones(int(keep.sum()), np.int64))])

        reg, bits, count = _count_job(self.df, block)
        value = bits.view(np.float64)
        order = np.lexsort((value, reg))
        return GroupCounts(reg[order], value[order], count[order])

    def route(self, region_dim: np.ndarray, pivots: np.ndarray, child_base: np.ndarray) -> None:
        import pyarrow as pa

        region_dim = np.asarray(region_dim, dtype=np.int64)
        d = np.maximum(region_dim, 0)
        local_pivots = np.asarray(pivots) - np.where(region_dim >= 0, self.lo[d] * self.integer[d], 0.0)
        child_base = np.asarray(child_base)
        levels = self._levels()

        def task(batches: Iterator[Any]) -> Iterator[Any]:
            for b in batches:
                reg, _, values = levels(b, region_dim)
                local = local_pivots.astype(np.int32) if values.dtype == np.int32 else local_pivots
                base = child_base.astype(np.int32)[reg]
                new_reg = (base + (values >= local[reg])).astype(np.int64)
                keep = base >= 0
                if not keep.any():
                    continue
                b = b.filter(pa.array(keep)) if not keep.all() else b
                yield pa.RecordBatch.from_arrays([pa.array(new_reg[keep], pa.int64())] + b.columns[1:],
                                                 names=b.schema.names)

        old = self._persist_level(self.df.mapInArrow(task, self.df.schema))
        self.df.count()  # materialize before the previous level's cache goes
        if old is not None:
            old.unpersist()
