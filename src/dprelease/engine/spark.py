"""The Spark engine: the data passes as pyspark jobs (issue 11, section 2; ``pip install 'dprelease[spark]'``).

Records live in a Spark DataFrame with one ``items array<int>`` column of item ids (sorted, distinct per
record), parsed once from FIMI text (any path Spark reads: local, HDFS, object stores; ``.gz`` too) or from
Parquet (a list-of-items column), and cached by Spark. Every pass is a ``mapInArrow`` job whose tasks run
the numpy kernels of :mod:`dprelease.engine.kernels` on their Arrow batches (a list column *is* a CSR
block: offsets and values, zero-copy) and emit partial ``(k0, k1, count)`` rows; Spark adds them up by key
(``groupBy``) and the driver collects only those sums, sorted by key. So the executors return exact
aggregates, never noise and never records; the mechanisms and the accountant run on the driver, as with
the local engine, and a seeded run draws the same noise from the same counts in the same order.

The session: :func:`session` reuses an active one (``spark-submit``, tests), else starts one on
``--spark-master`` (default ``local[*]``). Executors must be able to import dprelease (installed on every
worker, or shipped with ``--py-files``); ``PYSPARK_PYTHON`` defaults to this interpreter.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ..data.transactions import TransactionDB
from ..data.universe import Universe
from ..errors import InputError, ParameterError
from . import kernels
from .base import LengthSummary, LevelOp, Partitioner, TableData, TableSplitter, TransactionData, ValueCounts

__all__ = ["session", "stop_session", "SparkTransactions", "SparkPartitioner", "read_transactions",
           "ERROR_MARK", "SparkTable", "SparkTableSplitter", "read_table"]

ERROR_MARK = "DPRELEASE_INPUT_ERROR: "  # an executor's input error, re-raised as InputError on the driver
_AGG_SCHEMA = "k0 long, k1 long, c long"
_BATCH_ROWS = 65536  # records per Arrow batch handed to a kernel
_COMPACT_ROWS = 1 << 20  # partial rows a task holds before adding equal keys
_DIRECT_TASKS = 16  # up to this many tasks per pass, the driver adds their partials (no shuffle stage)


def _require_pyspark():
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise ParameterError("--engine spark needs pyspark: pip install 'dprelease[spark]' "
                             "(and Java 17 on the machine)") from None


def session(master: str | None = None):
    """The active SparkSession, or a new one on ``master`` (default ``local[*]``)."""
    _require_pyspark()
    import warnings

    from pyspark.sql import SparkSession

    # pyspark 4.3 warns that it does not fully support pandas 3; no pandas path of pyspark is used here
    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas", category=FutureWarning)

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.appName("dprelease")
    if master and not os.environ.get("DPRELEASE_UNDER_SPARK_SUBMIT"):
        builder = builder.master(master)
    conf = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.execution.arrow.maxRecordsPerBatch": str(_BATCH_ROWS),
        "spark.sql.shuffle.partitions": "8",  # the shuffled data are aggregates, not records
        "spark.sql.adaptive.enabled": "true",
        "spark.python.worker.reuse": "true",
    }
    for key, value in conf.items():
        builder = builder.config(key, value)
    try:
        spark = builder.getOrCreate()
    except Exception as exc:  # no Java, a bad master URL, ...
        raise ParameterError(f"--engine spark: cannot start Spark on {master!r}: {str(exc).splitlines()[0]}") from None
    # FATAL: a task's input error is re-raised here as one line (InputError), without Spark's stack traces
    spark.sparkContext.setLogLevel("FATAL")
    return spark


def stop_session() -> None:
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        active.stop()


def _collect(df):
    """``df.toArrow()``, with an executor's input error re-raised as :class:`InputError`."""
    try:
        return df.toArrow()
    except Exception as exc:
        text = str(exc)
        if ERROR_MARK in text:
            message = text.split(ERROR_MARK, 1)[1].splitlines()[0]
            raise InputError(message) from None
        raise


# --- Arrow batches <-> CSR blocks ----------------------------------------------------------------------


def _batch_db(column, n_items: int) -> TransactionDB:
    """A list<int> Arrow column (one batch) as a CSR block, without copying the item ids."""
    offsets = np.asarray(column.offsets, dtype=np.int64)
    values = column.values.to_numpy(zero_copy_only=False)
    start, end = int(offsets[0]), int(offsets[-1])
    return TransactionDB(offsets - start, np.asarray(values[start:end], dtype=np.int32), n_items)


def _list_column(lengths: np.ndarray, items: np.ndarray):
    import pyarrow as pa

    offsets = np.zeros(lengths.size + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), pa.array(items.astype(np.int32), pa.int32()))


def _partial_batch(part: kernels.Partial):
    import pyarrow as pa

    k0, k1, c = part
    return pa.RecordBatch.from_arrays([pa.array(k0, pa.int64()), pa.array(k1, pa.int64()), pa.array(c, pa.int64())],
                                      names=["k0", "k1", "c"])


def _accumulate(blocks: Iterator, kernel: Callable) -> Iterator:
    """Run ``kernel`` on each block of a task and emit the task's summed partials (one Arrow batch)."""
    parts: list[kernels.Partial] = []
    held = 0
    for args in blocks:
        part = kernel(*args)
        parts.append(part)
        held += part[0].size
        if held > _COMPACT_ROWS:
            parts = [kernels.merge(parts)]
            held = parts[0][0].size
    merged = kernels.merge(parts)
    if merged[0].size:
        yield _partial_batch(merged)


# --- parsing -------------------------------------------------------------------------------------------


def _parse_lines(column, universe: Universe, where: str):
    """FIMI lines (one Arrow string batch) -> (lengths, item ids), by the local reader's block parser."""
    from ..data.fimi import _PAD, _ids_of_values, _parse_integers, _parse_tokens, _records
    from ..data.transactions import canonical_records

    import pyarrow as pa

    bufs = column.buffers()
    width = np.int64 if pa.types.is_large_string(column.type) else np.int32
    offsets = np.frombuffer(bufs[1], dtype=width)[column.offset : column.offset + len(column) + 1].astype(np.int64)
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    body = data[int(offsets[0]) : int(offsets[-1])]
    ends = offsets[1:] - offsets[0]
    buf = np.insert(body, ends, 10).tobytes()  # a line break after every line
    if b"\xef\xbb\xbf" in buf:  # a byte-order mark (first line of a file): not part of an item
        buf = buf.replace(b"\xef\xbb\xbf", b"")
    buf = b" " * _PAD + buf
    parsed = _parse_integers(buf) if universe.int_labels is not None else None
    if parsed is not None:
        values, per_line = parsed
        ids = _ids_of_values(values, universe)
        shown = lambda j: str(int(values[j]))  # noqa: E731
    else:
        try:
            tokens, per_line = _parse_tokens(buf, where, 0)  # type: ignore[arg-type]
        except InputError as exc:
            raise ValueError(f"{ERROR_MARK}{exc}") from None
        ids = universe.ids_of_tokens(tokens) if tokens else np.zeros(0, dtype=np.int64)
        shown = lambda j: repr(tokens[j])  # noqa: E731
    bad = np.flatnonzero(ids < 0)
    if bad.size:
        raise ValueError(f"{ERROR_MARK}{where}: item {shown(int(bad[0]))} is not in {universe.where()} "
                         f"(--engine spark does not report line numbers; --engine local does)")
    return canonical_records(_records(per_line), ids.astype(np.int32))


def _map_labels(column, universe: Universe, where: str):
    """A Parquet list-of-items batch (integers or labels) -> (lengths, item ids), canonical per record."""
    import pyarrow as pa

    from ..data.transactions import canonical_records

    offsets = np.asarray(column.offsets, dtype=np.int64)
    values = column.values.slice(int(offsets[0]), int(offsets[-1] - offsets[0]))
    lengths = np.diff(offsets)
    if pa.types.is_integer(values.type) and universe.int_labels is not None:
        raw = values.to_numpy(zero_copy_only=False).astype(np.int64)
        ids = universe.ids_of_ints(raw)
        shown = lambda j: str(int(raw[j]))  # noqa: E731
    else:
        tokens = [str(v) for v in values.to_pylist()]
        ids = universe.ids_of_tokens(tokens) if tokens else np.zeros(0, dtype=np.int64)
        shown = lambda j: repr(tokens[j])  # noqa: E731
    bad = np.flatnonzero(ids < 0)
    if bad.size:
        raise ValueError(f"{ERROR_MARK}{where}: item {shown(int(bad[0]))} is not in {universe.where()}")
    keep = lengths > 0  # an empty list is a blank line: no record
    return canonical_records(lengths[keep], ids.astype(np.int32))


def parquet_items_column(schema, where: str) -> str:
    """The list-of-items column of a Parquet schema: ``items`` if present, else the only list column."""
    import pyarrow as pa

    names = [f.name for f in schema if pa.types.is_list(f.type) or pa.types.is_large_list(f.type)]
    if "items" in names:
        return "items"
    if len(names) == 1:
        return names[0]
    raise InputError(f"{where}: expected one list-of-items column (or one named 'items') in the Parquet schema, "
                     f"found {names or 'none'}")


def is_parquet(path: str) -> bool:
    """Parquet by name: ``*.parquet`` or a directory of them (Spark's output layout)."""
    p = path.rstrip("/")
    if p.endswith(".parquet") or p.endswith(".pq"):
        return True
    if os.path.isdir(p):
        return any(name.endswith(".parquet") for name in os.listdir(p))
    return False


def read_transactions(path: str, universe: Universe, master: str | None = None) -> "SparkTransactions":
    """Read FIMI text or Parquet into a cached DataFrame of item-id arrays, against a *declared* universe."""
    import pyarrow as pa

    spark = session(master)
    where = str(path)
    if is_parquet(where):
        raw = spark.read.parquet(where)
        import pyspark.sql.types as T

        lists = [f.name for f in raw.schema.fields if isinstance(f.dataType, T.ArrayType)]
        col = "items" if "items" in lists else (lists[0] if len(lists) == 1 else None)
        if col is None:
            raise InputError(f"{where}: expected one list-of-items column (or one named 'items') in the Parquet "
                             f"schema, found {lists or 'none'}")
        source = raw.select(col)
        convert = _map_labels
    else:
        source = spark.read.text(where)
        convert = _parse_lines

    def parse(batches):
        for batch in batches:
            lengths, items = convert(batch.column(0), universe, where)
            if lengths.size:
                yield pa.RecordBatch.from_arrays([_list_column(lengths, items)], names=["items"])

    try:
        df = source.mapInArrow(parse, "items array<int>")
    except Exception as exc:
        raise InputError(f"{where}: cannot read ({str(exc).splitlines()[0]})") from None
    data = SparkTransactions(df.persist(), universe.size)
    if data.summary().n_records == 0:  # the first job parses (and caches) the input
        data.close()
        raise InputError(f"{where}: no transactions (the file is empty or has only comments/blank lines)")
    return data


class SparkTransactions(TransactionData):
    """Set-valued data as a Spark DataFrame with one ``items array<int>`` column (item ids)."""

    engine_name = "spark"

    def __init__(self, df, n_items: int):
        self.df = df
        self.n_items = int(n_items)
        self._summary: LengthSummary | None = None
        self._supports: np.ndarray | None = None
        self._lengths: tuple[np.ndarray, np.ndarray] | None = None

    @classmethod
    def from_db(cls, db: TransactionDB, master: str | None = None, partitions: int = 2) -> "SparkTransactions":
        """A local database as a Spark DataFrame (tests and examples)."""
        import pyarrow as pa

        spark = session(master)
        lengths = db.lengths
        table = pa.table({"items": _list_column(lengths[lengths > 0], db.items)})
        df = spark.createDataFrame(table).repartition(partitions)
        return cls(df.persist(), db.n_items)

    def run_pass(self, kernel: Callable, *extra) -> kernels.Partial:
        return self._run(kernel, *extra)

    # one pass: kernel(block, *extra) on every block, partials summed by key
    def _run(self, kernel: Callable, *extra) -> kernels.Partial:
        n_items = self.n_items

        def task(batches):
            return _accumulate(((_batch_db(b.column(0), n_items), *extra) for b in batches), kernel)

        return self._reduce(self.df.mapInArrow(task, _AGG_SCHEMA))

    @staticmethod
    def _reduce(partials) -> kernels.Partial:
        """The partials summed by key, sorted. With few tasks the driver adds them itself (one stage, no
        shuffle: it holds at most _DIRECT_TASKS x the distinct keys); with more, Spark adds them (groupBy),
        so what reaches the driver does not grow with the number of tasks, hence with N."""
        from pyspark.sql import functions as F

        if partials.rdd.getNumPartitions() <= _DIRECT_TASKS:
            table = _collect(partials)
            total = kernels.merge([])
            for batch in table.to_batches():  # a running sum: one task's partial at a time beside it
                total = kernels.merge([total, (batch.column(0).to_numpy().astype(np.int64),
                                               batch.column(1).to_numpy().astype(np.int64),
                                               batch.column(2).to_numpy().astype(np.int64))])
            del table
            return total
        table = _collect(partials.groupBy("k0", "k1").agg(F.sum("c").alias("c")))
        k0 = table.column("k0").to_numpy().astype(np.int64)
        k1 = table.column("k1").to_numpy().astype(np.int64)
        c = table.column("c").to_numpy().astype(np.int64)
        order = np.lexsort((k1, k0))
        return k0[order], k1[order], c[order]

    def length_histogram(self) -> tuple[np.ndarray, np.ndarray]:
        if self._lengths is None:
            lengths, _, counts = self._run(kernels.length_histogram)
            self._lengths = (lengths, counts)
        return self._lengths[0].copy(), self._lengths[1].copy()

    def summary(self) -> LengthSummary:
        if self._summary is None:
            lengths, counts = self.length_histogram()
            self._summary = LengthSummary(int(counts.sum()), int((lengths * counts).sum()),
                                          int(lengths.max()) if lengths.size else 0)
        return self._summary

    def item_supports(self) -> np.ndarray:
        if self._supports is None:
            self._supports = kernels.dense(self._run(kernels.item_supports), self.n_items)
        return self._supports.copy()

    def pair_supports(self, items: np.ndarray) -> np.ndarray:
        items = np.asarray(items, dtype=np.int64)
        return kernels.dense(self._run(kernels.pair_supports, items), items.size * items.size).reshape(
            items.size, items.size)

    def pair_counts(self, items: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self._run(kernels.pair_counts, np.asarray(items, dtype=np.int64))

    def basis_bin_counts(self, bases: list[tuple[int, ...]]) -> list[np.ndarray]:
        if not bases:
            return []
        sizes = [1 << len(b) for b in bases]
        flat = kernels.dense(self._run(kernels.basis_bins, [tuple(b) for b in bases]), sum(sizes))
        # records of a block without any basis item are counted in bin 0 by the kernel, so the sums are exact
        return np.split(flat, np.cumsum(sizes)[:-1])

    def itemset_supports(self, itemsets: list[tuple[int, ...]]) -> np.ndarray:
        if not itemsets:
            return np.zeros(0, dtype=np.int64)
        lengths = np.fromiter((len(s) for s in itemsets), dtype=np.int64, count=len(itemsets))
        flat = np.fromiter((i for s in itemsets for i in s), dtype=np.int64, count=int(lengths.sum()))
        out = kernels.dense(self._run(kernels.itemset_supports, flat, lengths), len(itemsets))
        if (lengths == 0).any():  # blocks hold only non-empty records: the empty set counts every one of them
            out[lengths == 0] = self.n_records
        return out

    def flat_supports(self, items: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        items, lengths = np.asarray(items, dtype=np.int64), np.asarray(lengths, dtype=np.int64)
        out = kernels.dense(self._run(kernels.itemset_supports, items, lengths), lengths.size)
        out[lengths == 0] = self.n_records
        return out

    def record_mask_counts(self) -> np.ndarray:
        if self.n_items > 30:
            raise ParameterError("record bitmasks need a universe of at most 30 items")
        return kernels.dense(self._run(kernels.record_masks), 1 << self.n_items)

    def partitioner(self) -> "SparkPartitioner":
        return SparkPartitioner(self)

    def close(self) -> None:
        try:
            self.df.unpersist()
        except Exception:  # the session may be gone already
            pass


def _lookup(parent: np.ndarray, mask: np.ndarray, pid: np.ndarray, masks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Index in the sorted (parent, mask) table of each (pid, masks) pair, and whether it is there."""
    parents = np.unique(parent)
    p_at = np.minimum(np.searchsorted(parents, pid), parents.size - 1)
    found = parents[p_at] == pid
    # wide enough for the records' masks too: a mask with a bit above the table's would spill into the parent's
    # rank and could match another parent's cell
    bits = max(int(mask.max()).bit_length(), int(masks.max()).bit_length() if masks.size else 0, 1)
    if parents.size < (1 << max(62 - bits, 0)):  # one int64 key (rank of the parent, mask)
        table_key = np.searchsorted(parents, parent).astype(np.int64) << bits | mask
        key = p_at.astype(np.int64) << bits | masks
        at = np.minimum(np.searchsorted(table_key, key), table_key.size - 1)
        return at, found & (table_key[at] == key)
    index = {(int(a), int(b)): j for j, (a, b) in enumerate(zip(parent.tolist(), mask.tolist()))}
    at = np.array([index.get((int(a), int(b)), -1) for a, b in zip(pid.tolist(), masks.tolist())], np.int64)
    return np.maximum(at, 0), at >= 0


class _LevelCache:
    """The cached DataFrame of the current level of a level-by-level engine pass (DiffPart's partitioner, DiffGen's
    splitter, RPS's regions); the caller releases the previous level's cache once the new one is in use."""

    df: Any
    _cached: Any = None

    def _persist_level(self, df: Any) -> Any:
        """Cache ``df`` as the current level; returns the previous level's cache (to unpersist later)."""
        old = self._cached
        self.df = df.persist()
        self._cached = self.df
        return old

    def close(self) -> None:
        if self._cached is not None:
            try:
                self._cached.unpersist()
            except Exception:
                pass
            self._cached = None


class SparkPartitioner(_LevelCache, Partitioner):
    """Records as (pid, items) rows, cached per level; a level's counts and its routing are one job each."""

    def __init__(self, data: SparkTransactions):
        from pyspark.sql import functions as F

        self.data = data
        self.df = data.df.select(F.lit(0).cast("long").alias("pid"), "items")
        self._ops: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None
        self._cached = None

    def level_counts(self, ops: list[LevelOp]) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        ops = sorted(ops, key=lambda op: op.pid)
        table = (np.array([o.pid for o in ops], np.int64), np.array([o.lo for o in ops], np.int64),
                 np.array([o.hi for o in ops], np.int64), np.array([o.span for o in ops], np.int64))
        self._ops = table
        n_items = self.data.n_items

        def kernel(db, pids):
            rows, pid, masks = kernels.level_masks(db, pids, *table)
            return pid, masks, np.ones(rows.size, np.int64)

        def task(batches):
            return _accumulate(((_batch_db(b.column(1), n_items), b.column(0).to_numpy()) for b in batches), kernel)

        pid, mask, count = SparkTransactions._reduce(self.df.mapInArrow(task, _AGG_SCHEMA))
        out = {op.pid: (np.zeros(0, np.int64), np.zeros(0, np.int64)) for op in ops}
        if pid.size:
            bounds = np.flatnonzero(np.r_[True, pid[1:] != pid[:-1], True])
            for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
                out[int(pid[a])] = (mask[a:b], count[a:b])
        return out

    def route(self, moves: list[tuple[int, int, int]]) -> None:
        import pyarrow as pa

        if self._ops is None:
            raise RuntimeError("route() before level_counts()")
        table = self._ops
        moves = sorted(moves)
        parent = np.array([m[0] for m in moves], np.int64)
        mask = np.array([m[1] for m in moves], np.int64)
        child = np.array([m[2] for m in moves], np.int64)
        n_items = self.data.n_items

        def task(batches):
            for b in batches:
                db = _batch_db(b.column(1), n_items)
                rows, pid, masks = kernels.level_masks(db, b.column(0).to_numpy(), *table)
                if parent.size == 0 or rows.size == 0:
                    continue
                at, found = _lookup(parent, mask, pid, masks)
                keep = rows[found]
                if keep.size == 0:
                    continue
                sub = db.subset(keep)
                yield pa.RecordBatch.from_arrays(
                    [pa.array(child[at[found]], pa.int64()), _list_column(sub.lengths, sub.items)],
                    names=["pid", "items"])

        old = self._persist_level(self.df.mapInArrow(task, "pid long, items array<int>"))
        self._ops = None
        if old is not None:
            old.unpersist()



# --- tables (DiffGen) ----------------------------------------------------------------------------------

def _batch_error(exc: Exception) -> ValueError:
    """An encoding error of one batch, without its batch-relative row number, marked for the driver."""
    import re

    text = re.sub(r": row \d+( \(line \d+\))?, column", ", column", str(exc))
    return ValueError(f"{ERROR_MARK}{text} (--engine spark does not report row numbers; --engine local does)")


def _table_arrow_schema(d: int) -> str:
    return ", ".join([f"a{j} double" for j in range(d)] + ["y long"])


def read_table(path: str, schema, master: str | None = None) -> "SparkTable":
    """A CSV (header row, or headerless with the schema's ``columns``), a Parquet file/directory, or an Adult
    directory (adult.data + adult.test) as a cached DataFrame of encoded columns ``a0..a{d-1}`` (leaf codes or
    values, as doubles) and ``y`` (class codes); rows holding a ``missing`` token are dropped, as locally."""
    import pyarrow as pa
    import pyspark.sql.types as T

    from ..data.table import _drop_missing, encode_frame

    spark = session(master)
    where = str(path).rstrip("/")
    names = [a.name for a in schema.attributes] + [schema.class_attribute.name]
    d = len(schema.attributes)
    try:
        if is_parquet(where):
            raw = spark.read.parquet(where)
        else:
            files: list[str] | str = where
            if os.path.isdir(where):
                if not os.path.exists(os.path.join(where, "adult.data")):
                    raise InputError(f"{where}: a directory is read only when it holds adult.data (+ adult.test)")
                files = [os.path.join(where, n) for n in ("adult.data", "adult.test")
                         if os.path.exists(os.path.join(where, n))]
            reader = spark.read.option("sep", schema.delimiter).option("ignoreLeadingWhiteSpace", True) \
                .option("ignoreTrailingWhiteSpace", True).option("mode", "FAILFAST")
            if schema.delimiter != "|":
                reader = reader.option("comment", "|")
            if schema.columns is None:
                raw = reader.option("header", True).csv(files)
            else:
                fields = [T.StructField(c, T.StringType()) for c in schema.columns]
                raw = reader.schema(T.StructType(fields)).csv(files)
        missing = [n for n in names if n not in raw.columns]
        if missing:
            raise InputError(f"{where}: missing column(s) {missing}")
        source = raw.select(*names)
    except InputError:
        raise
    except Exception as exc:
        raise InputError(f"{where}: cannot read table ({str(exc).splitlines()[0]})") from None

    def encode(batches):
        for batch in batches:
            frame = batch.to_pandas()
            frame, rows = _drop_missing(frame, schema)
            if len(frame) == 0:
                continue
            try:
                enc = encode_frame(frame, schema, where, None, rows)
            except InputError as exc:
                raise _batch_error(exc) from None
            cols = [pa.array(np.asarray(c, dtype=np.float64)) for c in enc.columns]
            yield pa.RecordBatch.from_arrays(cols + [pa.array(enc.y.astype(np.int64))],
                                             names=[f"a{j}" for j in range(d)] + ["y"])

    data = SparkTable(source.mapInArrow(encode, _table_arrow_schema(d)).persist(), schema)
    if data.n_records == 0:
        data.close()
        raise InputError(f"{where}: no records")
    return data


class SparkTable(TableData):
    """An encoded table as a Spark DataFrame (``a0..a{d-1}`` doubles, ``y`` long); see :class:`TableData`."""

    engine_name = "spark"

    def __init__(self, df, schema):
        self.df = df
        self.schema = schema
        self._n: int | None = None

    @classmethod
    def from_encoded(cls, table, master: str | None = None, partitions: int = 2) -> "SparkTable":
        """A local :class:`EncodedTable` as a Spark DataFrame (tests)."""
        import pyarrow as pa

        spark = session(master)
        arrow = pa.table({**{f"a{j}": np.asarray(c, dtype=np.float64) for j, c in enumerate(table.columns)},
                          "y": table.y.astype(np.int64)})
        return cls(spark.createDataFrame(arrow).repartition(partitions).persist(), table.schema)

    @property
    def n_records(self) -> int:
        if self._n is None:
            self._n = int(_collect(self.df.groupBy().count()).column(0)[0].as_py())
        return self._n

    def splitter(self) -> "SparkTableSplitter":
        return SparkTableSplitter(self)

    def record_engine(self, domain) -> "SparkRecordEngine":
        """RPS's record engine over this table (dimension 0 the class, then the columns)."""
        return SparkRecordEngine(self, domain)

    def close(self) -> None:
        try:
            self.df.unpersist()
        except Exception:
            pass


class SparkTableSplitter(_LevelCache, TableSplitter):
    """Records as (pid, a0.., y) rows, cached per round; a specialization is one job (route + counts)."""

    def __init__(self, data: SparkTable):
        from pyspark.sql import functions as F

        self.data = data
        self.n_classes = data.schema.n_classes
        self.d = len(data.schema.attributes)
        self.df = data.df.select(F.lit(0).cast("long").alias("pid"), *[f"a{j}" for j in range(self.d)], "y")
        self._cached = None

    def _decode(self, partials) -> dict[int, ValueCounts]:
        return kernels.decode_value_counts(SparkTransactions._reduce(partials), self.n_classes)

    def value_counts(self, attrs: list[int]) -> dict[int, ValueCounts]:
        n_cls = self.n_classes
        attrs = list(attrs)

        def task(batches):
            def block(b):
                y = b.column(b.num_columns - 1).to_numpy()
                return kernels.merge([kernels.value_class_counts(
                    np.full(y.size, j, np.int64), b.column(1 + j).to_numpy(), y, n_cls) for j in attrs])
            return _accumulate(((b,) for b in batches), block)

        return self._decode(self.df.mapInArrow(task, _AGG_SCHEMA))

    def split(self, leaves: np.ndarray, attr: int, m: int, child_of_leaf: np.ndarray | None,
              split: float | None, first: int) -> dict[int, ValueCounts]:
        import pyarrow as pa

        n_cls = self.n_classes
        leaves = np.asarray(leaves, dtype=np.int64)

        def route(batches):
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

        def count(batches):
            def block(b):
                pids = b.column(0).to_numpy()
                rows = np.flatnonzero((pids >= lo) & (pids < hi))
                y = b.column(b.num_columns - 1).to_numpy()[rows]
                return kernels.value_class_counts((pids[rows] - lo) % m, b.column(1 + attr).to_numpy()[rows], y, n_cls)
            return _accumulate(((b,) for b in batches), block)

        out = self._decode(self.df.mapInArrow(count, _AGG_SCHEMA))
        if old is not None:
            old.unpersist()
        return out

    def leaf_class_counts(self, leaves: np.ndarray) -> np.ndarray:
        from .local import _leaf_class_table

        def task(batches):
            def block(b):
                pids = b.column(0).to_numpy()
                return kernels.merge([(pids.astype(np.int64), b.column(b.num_columns - 1).to_numpy().astype(np.int64),
                                       np.ones(pids.size, np.int64))])
            return _accumulate(((b,) for b in batches), block)

        return _leaf_class_table(SparkTransactions._reduce(self.df.mapInArrow(task, _AGG_SCHEMA)), leaves,
                                 self.n_classes)



# --- RPS (records routed to regions, level by level) -----------------------------------------------------


class SparkRecordEngine(_LevelCache):
    """:class:`dprelease.relational.rps.RecordEngine` on Spark: records as (reg, d0..d{n-1}) rows, dimension 0
    the class and dimension j + 1 the table's column j; a level's grouped count and its routing are one job
    each (the routed records are cached). Comparisons replicate :class:`~dprelease.relational.rps.NumpyEngine`'s
    arithmetic (lattice dimensions as int32 offsets from the lower end), so the same counts come back."""

    def __init__(self, table: SparkTable, domain):
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

    def _levels(self):
        """A picklable function of (batch, region_dim): regions, the dimension split per record (-1: none), and
        the value there in the engine's units (no reference to the engine, which holds the DataFrame)."""
        lattice, lo, integer = self.lattice, self.lo, self.integer

        def levels(b, region_dim: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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
        def task(batches):
            def block(b):
                reg = b.column(0).to_numpy().astype(np.int64)
                return kernels.merge([(reg, np.zeros(reg.size, np.int64), np.ones(reg.size, np.int64))])
            return _accumulate(((b,) for b in batches), block)

        return kernels.dense(SparkTransactions._reduce(self.df.mapInArrow(task, _AGG_SCHEMA)), n_regions)

    def value_counts(self, region_dim: np.ndarray):
        from ..relational.rps import GroupCounts

        region_dim = np.asarray(region_dim, dtype=np.int64)
        offsets = np.where(self.lattice | self.integer, self.lo, 0.0)
        levels = self._levels()

        def task(batches):
            def block(b):
                reg, dims, values = levels(b, region_dim)
                keep = dims >= 0
                v = values[keep].astype(np.float64) + offsets[dims[keep]]
                return kernels.merge([(reg[keep], kernels._value_key(v), np.ones(int(keep.sum()), np.int64))])
            return _accumulate(((b,) for b in batches), block)

        reg, bits, count = SparkTransactions._reduce(self.df.mapInArrow(task, _AGG_SCHEMA))
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

        def task(batches):
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

