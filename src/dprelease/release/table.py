"""Table releases: a generalized contingency table (DiffGen; TDS, not DP) or a synthetic table (RPS; Mondrian,
not DP).

* :class:`GeneralizedTable`: one row per leaf partition x class with its count; the values of an attribute are
  the labels of its cut (taxonomy node names, ``[lo, hi)`` intervals). ``write(output, records=True)`` also
  writes the expanded record form (a row per counted record) to :func:`records_path`, listed in the manifest.
* :class:`SyntheticTable`: records under the schema (categorical values as taxonomy leaves, numbers as numbers).

Either body is CSV, or Parquet when the output ends in ``.parquet``/``.pq``. pyarrow and pandas are imported
only when a table is written or read.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, IO, Any, ClassVar

import numpy as np

from ..privacy.uncertainty import Estimate, Intervals
from .base import Written, check_kind
from .files import BodyWriter, Manifest, manifest_of, read_manifest, write_with_manifest

if TYPE_CHECKING:
    from ..data.cut import CutValue
    from ..data.table import EncodedTable, TableSchema
    from ..privacy.accountant import BudgetAccountant

__all__ = ["GeneralizedTable", "SyntheticTable", "LeafBoxes", "leaves_path", "records_path", "read_table_release", "table_frame",
           "GENERALIZED_ALGORITHMS", "ERROR_COLUMNS"]

ERROR_COLUMNS = ("sd", "low", "high")  # after ``count``, when a release knows its counts' noise

# the algorithms whose release is a generalized contingency table (the others publish records)
GENERALIZED_ALGORITHMS = ("diffgen", "tds")
_INTERVAL = re.compile(r"^\[\s*([^,\s]+)\s*,\s*([^)\s]+)\s*\)$")


def records_path(output: str | os.PathLike[str]) -> Path:
    """Where a generalized table's record form goes: OUTPUT with ``.records`` before its suffix."""
    output = Path(output)
    return output.with_name(f"{output.stem}.records{output.suffix or '.csv'}")


def _is_parquet(output: str | os.PathLike[str]) -> bool:
    return Path(output).suffix.lower() in (".parquet", ".pq")


def _arrow_numbers(values: np.ndarray) -> Any:
    """A pyarrow array over a contiguous int32/int64/float64 numpy array, without a copy (``pa.array`` imports
    pandas, 0.13 s)."""
    import pyarrow as pa

    values = np.ascontiguousarray(values)
    kind = {np.dtype(np.int32): pa.int32(), np.dtype(np.int64): pa.int64(),
            np.dtype(np.float64): pa.float64()}[values.dtype]
    return pa.Array.from_buffers(kind, values.size, [None, pa.py_buffer(values)])


def _arrow_strings(labels: Any) -> Any:
    """A pyarrow string array of ``labels``, built from its offsets and UTF-8 bytes (no pandas)."""
    import pyarrow as pa

    data = [str(x).encode("utf-8") for x in labels]
    offsets = np.zeros(len(data) + 1, dtype=np.int32)
    np.cumsum([len(b) for b in data], out=offsets[1:])
    return pa.Array.from_buffers(pa.string(), len(data), [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(data))])


@dataclass(frozen=True, eq=False)
class GeneralizedTable:
    """A generalized contingency table: ``cells[i, j]`` indexes ``cut[j]``; ``counts[i, cls]`` per class.

    Produced by DiffGen (noisy counts) and TDS (exact counts of a k-anonymous table).
    """

    kind: ClassVar[str] = "table"

    schema: TableSchema
    cut: tuple[tuple[CutValue, ...], ...]
    cells: np.ndarray
    counts: np.ndarray
    manifest: Manifest = field(default_factory=dict)
    trace: list[Any] = field(default_factory=list, repr=False)
    accountant: BudgetAccountant | None = field(default=None, repr=False)
    # per leaf x class row (row-major, as ``counts.reshape(-1)``): the count's noise sd and 95 % interval
    errors: Intervals | None = field(default=None, repr=False)

    def intervals(self) -> Intervals | None:
        """Each leaf x class count's sd and 95 % interval (arrays in the file's row order); None if unknown."""
        return self.errors

    def count(self, **ranges: Any) -> Estimate:
        """The released number of records in ``ranges`` (per attribute: ``(lo, hi)`` for a number, a value or a
        list of values for a category; the class by its name) with its interval: see
        :func:`dprelease.release.queries.generalized_count`."""
        from .queries import generalized_count

        return generalized_count(self, ranges)

    def cut_labels(self) -> dict[str, list[str]]:
        from ..data.cut import cut_label

        return {a.name: [cut_label(self.schema, cv) for cv in self.cut[j]] for j, a in enumerate(self.schema.attributes)}

    def facts(self) -> dict[str, object]:
        """The manifest's release facts: functions of the release only."""
        return {
            "final_cut": self.cut_labels(),
            "leaf_partitions": int(self.cells.shape[0]),
            "rows": int(self.cells.shape[0] * self.schema.n_classes),
            "released_records": self.n_records,  # sum of the noisy counts (post-processing)
            "columns": [a.name for a in self.schema.attributes] + [self.schema.class_attribute.name, "count"]
            + (list(ERROR_COLUMNS) if self.errors is not None else []),
        }

    def frame(self) -> Any:
        """One row per leaf partition x class with its count (the generalized contingency table), as pandas."""
        import pandas as pd

        labels = self.cut_labels()
        n_cls = self.schema.n_classes
        data: dict[str, object] = {}
        for j, a in enumerate(self.schema.attributes):
            data[a.name] = np.repeat(np.asarray(labels[a.name], dtype=object)[self.cells[:, j]], n_cls)
        data[self.schema.class_attribute.name] = np.tile(np.asarray(self.schema.class_attribute.values, dtype=object),
                                                         self.cells.shape[0])
        data["count"] = self.counts.reshape(-1)
        if self.errors is not None:  # beside the count, after every existing column
            data.update(sd=self.errors.sd, low=self.errors.low, high=self.errors.high)
        return pd.DataFrame(data)

    def arrow(self, records: bool = False) -> Any:
        """The same as :meth:`frame` (or :meth:`records_frame`) as a pyarrow table of dictionary columns (fast to write)."""
        import pyarrow as pa

        labels = self.cut_labels()
        n_cls = self.schema.n_classes
        rows = np.arange(self.cells.shape[0] * n_cls)
        counts = self.counts.reshape(-1)
        if records:
            rows = np.repeat(rows, np.maximum(counts, 0))
        cols = {}
        for j, a in enumerate(self.schema.attributes):
            idx = self.cells[rows // n_cls, j].astype(np.int32)
            cols[a.name] = pa.DictionaryArray.from_arrays(_arrow_numbers(idx), _arrow_strings(labels[a.name]))
        cols[self.schema.class_attribute.name] = pa.DictionaryArray.from_arrays(
            _arrow_numbers((rows % n_cls).astype(np.int32)), _arrow_strings(self.schema.class_attribute.values))
        if not records:
            cols["count"] = _arrow_numbers(counts.astype(np.int64))
            if self.errors is not None:  # post-processing of public noise scales
                for name in ERROR_COLUMNS:
                    cols[name] = _arrow_numbers(np.round(np.asarray(getattr(self.errors, name), dtype=np.float64), 3))
        return pa.table(cols)

    def records_frame(self) -> Any:
        """The expanded record form: each (partition, class) row repeated ``count`` times."""
        table = self.frame().drop(columns=list(ERROR_COLUMNS), errors="ignore")
        counts = table.pop("count").to_numpy()
        return table.loc[np.repeat(np.arange(len(table)), np.maximum(counts, 0))].reset_index(drop=True)

    def generalize(self, table: EncodedTable) -> np.ndarray:
        """Apply the same final cut to other records (e.g. the test split): n x d cut indices."""
        from ..data.cut import generalize

        return generalize(table, [list(c) for c in self.cut])

    @property
    def n_records(self) -> int:
        return int(np.maximum(self.counts, 0).sum())

    def write(self, output: str | os.PathLike[str], *, records: bool = False) -> Written:
        """The contingency table (and, with ``records``, the record form beside it) and the manifest, as one
        unit; the manifest's ``release.files`` names them."""
        from ..data.table import frame_writer

        output = Path(output)
        extra: list[tuple[str | os.PathLike[str], BodyWriter, str]] = []
        if records:
            rp = records_path(output)
            extra.append((rp, frame_writer(self.arrow(records=True), rp), "wb"))
        facts = self.manifest.get("release")
        facts = dict(facts) if isinstance(facts, dict) else {}
        facts["files"] = {"contingency_table": output.name, **({"records": records_path(output).name} if records
                                                                else {})}
        body, mpath = write_with_manifest(output, frame_writer(self.arrow(), output), {**self.manifest,
                                                                                       "release": facts},
                                          "wb", extra=extra)
        return Written(body, mpath, tuple(Path(e[0]) for e in extra))

    @classmethod
    def read(cls, path: str | os.PathLike[str], schema: TableSchema) -> GeneralizedTable:
        """A published generalized contingency table (written by diffgen or tds; checked against its manifest)."""
        manifest = read_manifest(path)
        check_kind(path, manifest, cls.kind)
        return cls.from_frame(_generalized_frame(Path(path)), schema, manifest, where=str(path))

    @classmethod
    def from_frame(cls, frame: Any, schema: TableSchema, manifest: Manifest | None = None, *,
                   where: str = "the table") -> GeneralizedTable:
        """The table whose rows are ``frame``'s (its values as strings; a ``count`` column): the cut of each
        attribute is the set of labels in its column, the cells are the labelled rows."""
        from ..data.cut import CutValue
        from ..data.table import CategoricalAttribute
        from ..errors import InputError

        names = [a.name for a in schema.attributes]
        cls_attr = schema.class_attribute
        missing = [c for c in (*names, cls_attr.name, "count") if c not in frame.columns]
        if missing:
            raise InputError(f"{where}: not a table released under this schema (no column {', '.join(missing)})")
        cut: list[tuple[CutValue, ...]] = []
        index_cols = []
        for j, a in enumerate(schema.attributes):
            labels = sorted(set(frame[a.name].tolist()))
            values: dict[str, CutValue] = {}
            for label in labels:
                if isinstance(a, CategoricalAttribute):
                    nodes = [u for u, lab in enumerate(a.taxonomy.labels) if lab == label]
                    if len(nodes) != 1:
                        raise InputError(f"{where}: column {a.name}: {label!r} is "
                                         f"{'not a node' if not nodes else 'not a unique node'} of the schema's taxonomy")
                    u = nodes[0]
                    values[label] = CutValue(j, u, float(a.taxonomy.lo[u]), float(a.taxonomy.hi[u]))
                else:
                    m = _INTERVAL.match(label)
                    if not m:
                        raise InputError(f"{where}: column {a.name}: {label!r} is not an interval [lo, hi)")
                    values[label] = CutValue(j, -1, float(m.group(1)), float(m.group(2)))
            ordered = sorted(values, key=lambda lab: (values[lab].lo, values[lab].hi))
            cut.append(tuple(values[lab] for lab in ordered))
            pos = {lab: i for i, lab in enumerate(ordered)}
            index_cols.append(np.asarray([pos[v] for v in frame[a.name].tolist()], dtype=np.int64))
        try:
            klass = np.asarray([cls_attr.values.index(cls_attr.aliases.get(v, v)) for v in frame[cls_attr.name].tolist()],
                               dtype=np.int64)
            count = np.asarray([int(float(v)) for v in frame["count"].tolist()], dtype=np.int64)
        except ValueError:
            raise InputError(f"{where}: a class value or count is not one the schema allows") from None
        keys = np.stack(index_cols, axis=1) if index_cols else np.zeros((len(frame), 0), dtype=np.int64)
        cells, inverse = np.unique(keys, axis=0, return_inverse=True)
        counts = np.zeros((cells.shape[0], schema.n_classes), dtype=np.int64)
        np.add.at(counts, (inverse.reshape(-1), klass), count)
        errors = _frame_errors(frame, inverse.reshape(-1), klass, counts, dict(manifest or {}), where)
        return cls(schema, tuple(cut), cells, counts, dict(manifest or {}), errors=errors)


def _frame_errors(frame: Any, rows: np.ndarray, klass: np.ndarray, counts: np.ndarray, manifest: Manifest,
                  where: str) -> Intervals | None:
    """The ``sd,low,high`` columns of a released generalized table, in the order of ``counts.reshape(-1)`` (None
    when the file has none, or holds a cell twice)."""
    from ..errors import InputError

    if not all(c in frame.columns for c in ERROR_COLUMNS) or len(frame) != counts.size:
        return None
    out = {}
    for name in ERROR_COLUMNS:
        grid = np.full(counts.shape, np.nan)
        try:
            grid[rows, klass] = np.asarray([float(v) for v in frame[name].tolist()], dtype=np.float64)
        except ValueError:
            raise InputError(f"{where}: column {name} holds a value that is not a number") from None
        out[name] = grid.reshape(-1)
    if np.isnan(out["sd"]).any():
        return None
    section = manifest.get("uncertainty")
    section = section if isinstance(section, dict) else {}
    return Intervals(counts.reshape(-1).astype(np.float64), out["sd"], out["low"], out["high"],
                     float(section.get("level", 0.95)), str(section.get("accounts_for", "")))


def _generalized_frame(path: Path) -> Any:
    """A generalized table's rows as strings (its ``count`` column as numbers when it is Parquet)."""
    import pandas as pd

    from ..errors import InputError

    try:
        if _is_parquet(path):
            frame = pd.read_parquet(path)
            return frame.astype({c: str for c in frame.columns if c != "count"})
        return pd.read_csv(path, dtype=str, keep_default_na=False)
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: not a readable generalized table ({exc})") from None


def _synthetic_writer(table: Any, output: str | os.PathLike[str]) -> BodyWriter:
    """A body writer for a synthetic table: the pyarrow table as CSV, or Parquet for .parquet/.pq."""

    def write(fh: IO[Any]) -> None:
        import pyarrow as pa

        if _is_parquet(output):
            import pyarrow.parquet as pq

            pq.write_table(table, fh)
        else:
            import pyarrow.csv as pacsv

            plain = pa.table({n: (c.cast(c.type.value_type) if pa.types.is_dictionary(c.type) else c)
                              for n, c in zip(table.column_names, table.columns)})
            pacsv.write_csv(plain, fh, pacsv.WriteOptions(quoting_style="needed"))

    return write


@dataclass(frozen=True, eq=False)
class LeafBoxes:
    """The leaves a synthetic table was drawn from: boxes [lo, hi) over the class and the attributes (lattice codes
    for categories, in the taxonomy's depth-first order) and each leaf's released count with its error bars."""

    lo: np.ndarray
    hi: np.ndarray
    errors: Intervals

    def names(self, schema: TableSchema) -> list[str]:
        dims = [schema.class_attribute.name] + [a.name for a in schema.attributes]
        return [f"{d}_{end}" for d in dims for end in ("lo", "hi")] + ["count", *ERROR_COLUMNS]

    def writer(self, schema: TableSchema) -> BodyWriter:
        """The companion CSV: one row per leaf (post-processing of the public scales)."""

        def write(handle: IO[Any]) -> None:
            handle.write(",".join(self.names(schema)) + "\n")
            e = self.errors
            for i in range(self.lo.shape[0]):
                box = [f"{float(v):g}" for pair in zip(self.lo[i], self.hi[i]) for v in pair]
                row = box + [f"{float(e.value[i]):g}", f"{float(e.sd[i]):.3f}", f"{float(e.low[i]):g}",
                             f"{float(e.high[i]):g}"]
                handle.write(",".join(row) + "\n")

        return write

    @classmethod
    def read(cls, path: Path, schema: TableSchema, label: str) -> LeafBoxes:
        from ..errors import InputError

        try:
            data = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
        except (OSError, ValueError) as exc:
            raise InputError(f"{path}: not a readable leaves file ({exc})") from None
        d = len(schema.attributes) + 1
        if data.size and data.shape[1] != 2 * d + 4:
            raise InputError(f"{path}: expected {2 * d + 4} columns, got {data.shape[1]}")
        data = data.reshape(-1, 2 * d + 4)
        return cls(data[:, 0:2 * d:2], data[:, 1:2 * d:2],
                   Intervals(data[:, 2 * d], data[:, 2 * d + 1], data[:, 2 * d + 2], data[:, 2 * d + 3], label=label))


@dataclass(frozen=True, eq=False)
class SyntheticTable:
    """A synthetic table: records under ``schema`` (RPS, Mondrian), plus the manifest; ``leaves``: the noisy leaf
    counts it was drawn from with their error bars (RPS), written to a companion ``OUTPUT.leaves.csv``."""

    kind: ClassVar[str] = "table"

    schema: TableSchema
    table: EncodedTable
    manifest: Manifest = field(default_factory=dict)
    accountant: BudgetAccountant | None = field(default=None, repr=False)
    leaves: LeafBoxes | None = field(default=None, kw_only=True, repr=False)

    @property
    def n_records(self) -> int:
        return int(self.table.n_records)

    def intervals(self) -> Intervals | None:
        """The leaf counts the records were drawn from, with their error bars (None without leaves: Mondrian)."""
        return self.leaves.errors if self.leaves is not None else None

    def count(self, **ranges: Any) -> Estimate:
        """The number of records in ``ranges`` (as :meth:`GeneralizedTable.count`): from the leaves, each count
        times the share of its box inside the query, with its interval (:func:`dprelease.release.queries.
        box_estimate`; the records were drawn uniformly in the leaves, so they give this answer up to sampling);
        without leaves, counted on the records, with no interval (NaN)."""
        from .queries import table_query

        return self.count_query(table_query(self.schema, ranges))

    def count_query(self, dims: list[Any]) -> Estimate:
        """:meth:`count` for a query already in box form (:mod:`dprelease.release.queries`)."""
        import math

        from .queries import box_estimate, box_fractions

        if self.leaves is not None:
            frac = box_fractions(dims, self.leaves.lo, self.leaves.hi)
            return box_estimate(self.leaves.errors.value, self.leaves.errors.sd, frac, clipped=True,
                                what="leaf counts")
        lo = np.stack([np.asarray(self.table.y, dtype=np.float64)]
                      + [np.asarray(c, dtype=np.float64) for c in self.table.columns], axis=1)
        integer = np.asarray([True] + [a.kind == "categorical" or bool(getattr(a, "integer", False))
                                       for a in self.schema.attributes])
        value = float(np.sum(box_fractions(dims, lo, lo + integer)))
        return Estimate(value, math.nan, math.nan, math.nan,
                        label="counted on the synthetic records; no noise scale known (read back from a file, or "
                              "not DP)")

    def arrow(self) -> Any:
        """The synthetic table as a pyarrow table of the schema's columns (labels for categorical values)."""
        import pyarrow as pa

        from ..data.table import CategoricalAttribute

        schema = self.schema
        cols: dict[str, object] = {}
        for a, col in zip(schema.attributes, self.table.columns):
            if isinstance(a, CategoricalAttribute):
                cols[a.name] = pa.DictionaryArray.from_arrays(_arrow_numbers(col.astype(np.int32)),
                                                              _arrow_strings(a.taxonomy.leaf_labels))
            elif a.integer:
                cols[a.name] = _arrow_numbers(col.astype(np.int64))
            else:
                cols[a.name] = _arrow_numbers(np.asarray(col, dtype=np.float64))
        if schema.has_class:  # a schema without a class: no class column
            cols[schema.class_attribute.name] = pa.DictionaryArray.from_arrays(
                _arrow_numbers(self.table.y.astype(np.int32)), _arrow_strings(schema.class_attribute.values))
        return pa.table(cols)

    def write(self, output: str | os.PathLike[str]) -> Written:
        """The table (CSV or Parquet) and its manifest, as one unit; with leaves, their counts and error bars go
        to ``OUTPUT.leaves.csv``, listed in the manifest."""
        if self.leaves is None:
            return Written(*write_with_manifest(output, _synthetic_writer(self.arrow(), output), self.manifest,
                                                mode="wb"))
        side = leaves_path(output)
        section = self.manifest.get("uncertainty")
        manifest = {**self.manifest, "uncertainty": {**(section if isinstance(section, dict) else {}),
                                                     "file": side.name}}
        body, mpath = write_with_manifest(output, _synthetic_writer(self.arrow(), output), manifest, mode="wb",
                                          extra=[(side, self.leaves.writer(self.schema), "w")])
        return Written(body, mpath, (side,))

    @classmethod
    def read(cls, path: str | os.PathLike[str], schema: TableSchema) -> SyntheticTable:
        """A published synthetic table (written by rps or mondrian; checked against its manifest): a header row of
        the schema's attributes and class."""
        from ..data.table import EncodedTable, read_table

        manifest = read_manifest(path)
        check_kind(path, manifest, cls.kind)
        synth = read_table(path, replace(schema, columns=None, drop=(), missing=(), delimiter=","))
        section = manifest.get("uncertainty")
        leaves = None
        if isinstance(section, dict) and isinstance(section.get("file"), str):
            leaves = LeafBoxes.read(Path(path).with_name(section["file"]), schema, str(section.get("accounts_for", "")))
        return cls(schema, EncodedTable(schema, synth.columns, synth.y), manifest, leaves=leaves)


def leaves_path(output: str | os.PathLike[str]) -> Path:
    """Where a synthetic table's leaves (counts and error bars) go: OUTPUT.leaves.csv."""
    output = Path(output)
    return output.with_name(output.name + ".leaves.csv")


def read_table_release(path: str | os.PathLike[str], schema: TableSchema) -> GeneralizedTable | SyntheticTable:
    """The table release at ``path``, generalized or synthetic as its manifest says."""
    manifest = read_manifest(path)
    check_kind(path, manifest, "table")
    if str(manifest.get("algorithm", "")).lower() in GENERALIZED_ALGORITHMS:
        return GeneralizedTable.read(path, schema)
    return SyntheticTable.read(path, schema)


def table_frame(path: str | os.PathLike[str]) -> Any:
    """The rows of a released table file, every value a string (pandas), after the file is checked against its
    manifest (DiffGen's record form through the manifest that lists it): the form range-count queries read,
    whatever the algorithm (plain values, taxonomy nodes, ``[lo, hi)`` intervals, an optional ``count``)."""
    import pandas as pd

    from ..errors import InputError

    check_kind(path, manifest_of(path), "table")
    path = Path(path)
    try:
        if _is_parquet(path):
            import pyarrow.parquet as pq

            return pq.read_table(path).to_pandas().astype(str)
        return pd.read_csv(path, dtype=str, keep_default_na=False, skipinitialspace=True)
    except (OSError, ValueError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise InputError(f"{path}: cannot read table ({str(exc).splitlines()[0]})") from None
