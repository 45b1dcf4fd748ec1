"""Set-valued data in Parquet: a file (or a directory of them, Spark's output layout) with one list-of-items column.

The local reader (:func:`read_parquet_transactions`) and the Spark engine's reader share :func:`items_of_list_column`,
which maps one Arrow batch of the list column to item ids against the *declared* universe, so both engines read the
same records from the same file.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ..errors import InputError
from .transactions import CSRBuilder, TransactionDB, canonical_records
from .universe import Universe

__all__ = ["is_parquet", "parquet_items_column", "items_of_list_column", "read_parquet_transactions"]


def is_parquet(path: str | os.PathLike[str]) -> bool:
    """Parquet by name: ``*.parquet`` / ``*.pq``, or a directory holding ``*.parquet`` files."""
    p = str(path).rstrip("/")
    if p.endswith(".parquet") or p.endswith(".pq"):
        return True
    if os.path.isdir(p):
        return any(name.endswith(".parquet") for name in os.listdir(p))
    return False


def parquet_items_column(schema: Any, where: str) -> str:
    """The list-of-items column of an Arrow schema: ``items`` if present, else the only list column."""
    import pyarrow as pa

    names = [f.name for f in schema if pa.types.is_list(f.type) or pa.types.is_large_list(f.type)]
    if "items" in names:
        return "items"
    if len(names) == 1:
        return str(names[0])
    raise InputError(f"{where}: expected one list-of-items column (or one named 'items') in the Parquet schema, "
                     f"found {names or 'none'}")


def items_of_list_column(column: Any, universe: Universe, where: str) -> tuple[np.ndarray, np.ndarray]:
    """One Arrow batch of a list-of-items column (integers or labels) as (record lengths, item ids), canonical per
    record (sorted, distinct); an empty list is a blank line (no record). An item outside ``universe`` is an
    :class:`InputError` naming it."""
    import pyarrow as pa

    offsets = np.asarray(column.offsets, dtype=np.int64)
    values = column.values.slice(int(offsets[0]), int(offsets[-1] - offsets[0]))
    lengths = np.diff(offsets)
    if pa.types.is_integer(values.type) and universe.int_labels is not None:
        raw = values.to_numpy(zero_copy_only=False).astype(np.int64)
        ids = universe.ids_of_ints(raw)
        bad = np.flatnonzero(ids < 0)
        shown = str(int(raw[int(bad[0])])) if bad.size else ""
    else:
        tokens = [str(v) for v in values.to_pylist()]
        ids = universe.ids_of_tokens(tokens) if tokens else np.zeros(0, dtype=np.int64)
        bad = np.flatnonzero(ids < 0)
        shown = repr(tokens[int(bad[0])]) if bad.size else ""
    if bad.size:
        raise InputError(f"{where}: item {shown} is not in {universe.where()}")
    keep = lengths > 0
    return canonical_records(lengths[keep], ids.astype(np.int32))


def read_parquet_transactions(path: str | os.PathLike[str], universe: Universe) -> TransactionDB:
    """A Parquet file (or directory of them) with a list-of-items column, as CSR arrays (batch by batch)."""
    import pyarrow.dataset as ds

    where = str(path)
    try:
        dataset = ds.dataset(where, format="parquet")
    except (OSError, ValueError) as exc:
        raise InputError(f"{where}: cannot read as Parquet ({exc})") from None
    column = parquet_items_column(dataset.schema, where)
    builder = CSRBuilder()
    for batch in dataset.to_batches(columns=[column]):
        lengths, items = items_of_list_column(batch.column(0), universe, where)
        builder.add(lengths, items)
    if builder.n_records == 0:
        raise InputError(f"{where}: no transactions")
    return builder.finish(universe.size)
