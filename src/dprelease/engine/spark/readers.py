"""Reading inputs into Spark: FIMI text and Parquet into set-valued data, CSV/Parquet/Adult into encoded tables.

Records are parsed once, on the executors, by the local readers' parsers (the same records and the same errors as
``--engine local``, without line numbers), and cached by Spark. Any path Spark reads works: local, HDFS, object
stores, ``.gz`` too. The domain is always declared: a universe or a schema.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ...data.parquet import is_parquet, items_of_list_column
from ...data.table import TableSchema
from ...data.universe import Universe
from ...errors import InputError
from .passes import list_column
from .session import ERROR_MARK, session
from .tables import SparkTable, table_arrow_schema
from .transactions import SparkTransactions

__all__ = ["read_transactions", "read_table"]


def _parse_lines(column: Any, universe: Universe, where: str) -> tuple[np.ndarray, np.ndarray]:
    """FIMI lines (one Arrow string batch) -> (lengths, item ids), by the local reader's block parser."""
    import pyarrow as pa

    from ...data.fimi import _PAD, _ids_of_values, _parse_integers, _parse_tokens, _records
    from ...data.transactions import canonical_records

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
    shown: Callable[[int], str]
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


def _parse_lists(column: Any, universe: Universe, where: str) -> tuple[np.ndarray, np.ndarray]:
    """A Parquet list-of-items batch -> (lengths, item ids), an input error marked for the driver."""
    try:
        return items_of_list_column(column, universe, where)
    except InputError as exc:
        raise ValueError(f"{ERROR_MARK}{exc}") from None


def read_transactions(path: str, universe: Universe, master: str | None = None) -> SparkTransactions:
    """Read FIMI text or Parquet into a cached DataFrame of item-id arrays, against a *declared* universe."""
    import pyarrow as pa

    spark = session(master)
    where = str(path)
    convert: Callable[[Any, Universe, str], tuple[np.ndarray, np.ndarray]]
    if is_parquet(where):
        raw = spark.read.parquet(where)
        import pyspark.sql.types as T

        lists = [f.name for f in raw.schema.fields if isinstance(f.dataType, T.ArrayType)]
        col = "items" if "items" in lists else (lists[0] if len(lists) == 1 else None)
        if col is None:
            raise InputError(f"{where}: expected one list-of-items column (or one named 'items') in the Parquet "
                             f"schema, found {lists or 'none'}")
        source = raw.select(col)
        convert = _parse_lists
    else:
        source = spark.read.text(where)
        convert = _parse_lines

    def parse(batches: Iterator[Any]) -> Iterator[Any]:
        for batch in batches:
            lengths, items = convert(batch.column(0), universe, where)
            if lengths.size:
                yield pa.RecordBatch.from_arrays([list_column(lengths, items)], names=["items"])

    try:
        df = source.mapInArrow(parse, "items array<int>")
    except Exception as exc:
        raise InputError(f"{where}: cannot read ({str(exc).splitlines()[0]})") from None
    data = SparkTransactions(df.persist(), universe.size)
    if data.summary().n_records == 0:  # the first job parses (and caches) the input
        data.close()
        raise InputError(f"{where}: no transactions (the file is empty or has only comments/blank lines)")
    return data


def _batch_error(exc: Exception) -> ValueError:
    """An encoding error of one batch, without its batch-relative row number, marked for the driver."""
    text = re.sub(r": row \d+( \(line \d+\))?, column", ", column", str(exc))
    return ValueError(f"{ERROR_MARK}{text} (--engine spark does not report row numbers; --engine local does)")


def _raw_table(spark: Any, where: str, schema: TableSchema) -> Any:
    """The table's rows as strings (CSV, headerless with the schema's ``columns``, or an Adult directory) or as
    Parquet's own types."""
    import pyspark.sql.types as T

    if is_parquet(where):
        return spark.read.parquet(where)
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
        return reader.option("header", True).csv(files)
    fields = [T.StructField(c, T.StringType()) for c in schema.columns]
    return reader.schema(T.StructType(fields)).csv(files)


def read_table(path: str, schema: TableSchema, master: str | None = None) -> SparkTable:
    """A CSV (header row, or headerless with the schema's ``columns``), a Parquet file/directory, or an Adult
    directory (adult.data + adult.test) as a cached DataFrame of encoded columns ``a0..a{d-1}`` (leaf codes or
    values, as doubles) and ``y`` (class codes); rows holding a ``missing`` token are dropped, as locally."""
    import pyarrow as pa

    from ...data.table import _drop_missing, encode_frame

    spark = session(master)
    where = str(path).rstrip("/")
    names = [a.name for a in schema.attributes] + [schema.class_attribute.name]
    d = len(schema.attributes)
    try:
        raw = _raw_table(spark, where, schema)
        missing = [n for n in names if n not in raw.columns]
        if missing:
            raise InputError(f"{where}: missing column(s) {missing}")
        source = raw.select(*names)
    except InputError:
        raise
    except Exception as exc:
        raise InputError(f"{where}: cannot read table ({str(exc).splitlines()[0]})") from None

    def encode(batches: Iterator[Any]) -> Iterator[Any]:
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

    data = SparkTable(source.mapInArrow(encode, table_arrow_schema(d)).persist(), schema)
    if data.n_records == 0:
        data.close()
        raise InputError(f"{where}: no records")
    return data
