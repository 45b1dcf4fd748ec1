"""Relational tables for DiffGen / TDS: a declared schema, taxonomy trees, and a validating reader.

The custodian declares the public domain in a small YAML (or JSON) schema file
(``format: dprelease-table-schema/1``): every predictor attribute is either
*categorical* with a taxonomy tree (DiffGen section 3.3 assumes one is given) or
*numeric* with public half-open bounds ``[lo, hi)``; one class attribute with its
values; columns to drop. Nothing is read off the data: a value outside the
schema is an :class:`~dprelease.errors.InputError` naming its row and column.

Records are held as numpy code arrays: a categorical value is the index of its
taxonomy leaf (leaves are numbered depth-first, so every taxonomy node covers a
contiguous range of leaf codes), a numeric value is a float64, the class is an
int code.
"""

from __future__ import annotations

import gzip
import json
import os
import warnings
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import InputError
from .io import atomic_output

if TYPE_CHECKING:
    import pandas as pd  # imported where used: the arrow read path and the writers run without pandas

__all__ = [
    "Taxonomy",
    "CategoricalAttribute",
    "NumericAttribute",
    "ClassAttribute",
    "TableSchema",
    "EncodedTable",
    "load_schema",
    "parse_schema",
    "read_table",
    "read_adult",
    "encode_frame",
    "write_frame",
    "frame_writer",
]

SCHEMA_FORMAT = "dprelease-table-schema/1"


@dataclass(frozen=True, eq=False)
class Taxonomy:
    """A taxonomy tree as arrays over node ids (root = 0, depth-first pre-order).

    ``lo[u], hi[u]``: the leaf codes covered by node u are ``lo[u] .. hi[u]-1``.
    ``children[u]``: child node ids in declared order. ``leaf_node[code]``: node id of a leaf code.
    """

    labels: tuple[str, ...]
    parent: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    children: tuple[tuple[int, ...], ...]
    leaf_node: np.ndarray
    leaf_labels: tuple[str, ...]

    @classmethod
    def from_nested(cls, tree: object, where: str) -> "Taxonomy":
        """Build from the schema form: a leaf is a string; an inner node is ``{label: [children...]}``."""
        labels: list[str] = []
        parent: list[int] = []
        lo: list[int] = []
        hi: list[int] = []
        children: list[list[int]] = []
        leaf_node: list[int] = []
        leaf_labels: list[str] = []

        def visit(node: object, par: int) -> int:
            if isinstance(node, dict):
                if len(node) != 1:
                    raise InputError(f"{where}: an inner taxonomy node must be a mapping with one key, got {list(node)!r}")
                (label, kids), = node.items()
                if not isinstance(kids, list) or not kids:
                    raise InputError(f"{where}: node {label!r} must list at least one child")
            elif isinstance(node, (str, int, float)) and not isinstance(node, bool):
                label, kids = node, []
            else:
                raise InputError(f"{where}: bad taxonomy node {node!r}")
            label = str(label)
            uid = len(labels)
            labels.append(label)
            parent.append(par)
            lo.append(len(leaf_labels))
            hi.append(-1)
            children.append([])
            if not kids:
                leaf_node.append(uid)
                leaf_labels.append(label)
            for kid in kids:
                children[uid].append(visit(kid, uid))
            hi[uid] = len(leaf_labels)
            return uid

        visit(tree, -1)
        if len(set(leaf_labels)) != len(leaf_labels):
            dup = sorted({x for x in leaf_labels if leaf_labels.count(x) > 1})
            raise InputError(f"{where}: taxonomy leaves must be distinct; repeated: {dup}")
        ints = lambda xs: np.asarray(xs, dtype=np.int64)  # noqa: E731
        return cls(tuple(labels), ints(parent), ints(lo), ints(hi), tuple(tuple(c) for c in children),
                   ints(leaf_node), tuple(leaf_labels))

    @property
    def n_leaves(self) -> int:
        return len(self.leaf_labels)

    def is_leaf(self, node: int) -> bool:
        return not self.children[node]

    def child_of_leaf(self, node: int) -> np.ndarray:
        """Array over leaf codes: index (0..k-1) of the child of ``node`` holding the leaf, or -1 if outside."""
        out = np.full(self.n_leaves, -1, dtype=np.int64)
        for k, c in enumerate(self.children[node]):
            out[self.lo[c]:self.hi[c]] = k
        return out

    def to_nested(self, node: int = 0) -> object:
        if self.is_leaf(node):
            return self.labels[node]
        return {self.labels[node]: [self.to_nested(c) for c in self.children[node]]}


@dataclass(frozen=True, eq=False)
class CategoricalAttribute:
    name: str
    taxonomy: Taxonomy
    kind: str = "categorical"


@dataclass(frozen=True, eq=False)
class NumericAttribute:
    """Public bounds ``[lo, hi)``; ``integer`` attributes split only at whole numbers (eq. 6 with counting measure)."""

    name: str
    lo: float
    hi: float
    integer: bool = False
    kind: str = "numeric"


@dataclass(frozen=True, eq=False)
class ClassAttribute:
    name: str
    values: tuple[str, ...]
    aliases: dict[str, str] = field(default_factory=dict)
    declared: bool = True  # False: the schema has no class (a single implicit value, no column; NO_CLASS)


@dataclass(frozen=True, eq=False)
class TableSchema:
    """The public domain of a table: predictors (in order), the class, dropped columns, file layout."""

    attributes: tuple[CategoricalAttribute | NumericAttribute, ...]
    class_attribute: ClassAttribute
    drop: tuple[str, ...] = ()
    columns: tuple[str, ...] | None = None  # column order of headerless files
    missing: tuple[str, ...] = ()  # tokens meaning "missing": rows holding one are dropped
    name: str = "table"
    source: str = ""
    delimiter: str = ","  # field separator of CSV files (schema key 'delimiter', or --delimiter)

    @property
    def numeric(self) -> tuple[int, ...]:
        return tuple(i for i, a in enumerate(self.attributes) if a.kind == "numeric")

    @property
    def n_classes(self) -> int:
        return len(self.class_attribute.values)

    @property
    def has_class(self) -> bool:
        """Whether the schema declares a class column (a schema read with ``require_class=False`` may not)."""
        return self.class_attribute.declared

    @property
    def column_names(self) -> list[str]:
        """The columns a table of this schema holds: the attributes in order, then the class if declared."""
        return [a.name for a in self.attributes] + ([self.class_attribute.name] if self.has_class else [])

    def describe(self) -> dict[str, object]:
        """The public domain, for a manifest (declared by the custodian, not derived from data)."""
        out: dict[str, object] = {"source": self.source or "schema", "class": {"name": self.class_attribute.name,
                                                                              "values": list(self.class_attribute.values)}
                                  if self.has_class else None}
        attrs = []
        for a in self.attributes:
            if a.kind == "numeric":
                attrs.append({"name": a.name, "type": "numeric", "bounds": [a.lo, a.hi], "integer": a.integer})
            else:
                attrs.append({"name": a.name, "type": "categorical", "taxonomy_nodes": len(a.taxonomy.labels),
                              "taxonomy_leaves": a.taxonomy.n_leaves})
        out["attributes"] = attrs
        out["drop"] = list(self.drop)
        return out


NO_CLASS = ClassAttribute("", ("",), {}, declared=False)  # a schema without a class: one implicit value


def parse_schema(obj: object, where: str = "schema", *, require_class: bool = True) -> TableSchema:
    """Validate a schema mapping (already parsed from YAML/JSON). ``require_class=False`` accepts a schema
    without a ``class`` entry (a synthetic table needs none): its tables have no class column and every record
    holds the one implicit class value of :data:`NO_CLASS`."""
    if not isinstance(obj, dict):
        raise InputError(f"{where}: the schema must be a mapping")
    _no_unknown_keys(obj, _SCHEMA_KEYS, where, "the schema")
    fmt = obj.get("format", SCHEMA_FORMAT)
    if fmt != SCHEMA_FORMAT:
        raise InputError(f"{where}: unknown format {fmt!r} (expected {SCHEMA_FORMAT!r})")
    if "class" not in obj and not require_class:
        return _parse_attributes(obj, where, NO_CLASS)
    cls_spec = obj.get("class")
    if not isinstance(cls_spec, dict) or "name" not in cls_spec or not cls_spec.get("values"):
        raise InputError(f"{where}: 'class' must give a name and a list of values")
    _no_unknown_keys(cls_spec, _CLASS_KEYS, where, "'class'")
    if not isinstance(cls_spec["values"], list):
        raise InputError(f"{where}: 'class: values' must be a list")
    values = tuple(str(v) for v in cls_spec["values"])
    if len(values) < 2 or len(set(values)) != len(values):
        raise InputError(f"{where}: the class needs at least two distinct values")
    aliases = {str(k): str(v) for k, v in (cls_spec.get("aliases") or {}).items()}
    for k, v in aliases.items():
        if v not in values:
            raise InputError(f"{where}: class alias {k!r} maps to {v!r}, which is not a class value")
    return _parse_attributes(obj, where, ClassAttribute(str(cls_spec["name"]), values, aliases))


def _parse_attributes(obj: dict, where: str, klass: ClassAttribute) -> TableSchema:
    """The attributes and file layout of a schema mapping (its class already parsed)."""
    specs = obj.get("attributes")
    if not isinstance(specs, list) or not specs:
        raise InputError(f"{where}: 'attributes' must be a non-empty list")
    attrs: list[CategoricalAttribute | NumericAttribute] = []
    seen = {klass.name} if klass.declared else set()
    for i, spec in enumerate(specs):
        if not isinstance(spec, dict) or "name" not in spec:
            raise InputError(f"{where}: attribute #{i + 1} needs a name")
        name = str(spec["name"])
        _no_unknown_keys(spec, _ATTRIBUTE_KEYS, where, f"attribute {name!r}")
        if name in seen:
            raise InputError(f"{where}: attribute {name!r} declared twice (or is the class)")
        seen.add(name)
        kind = spec.get("type")
        if kind == "numeric":
            bounds = spec.get("bounds")
            if not isinstance(bounds, list) or len(bounds) != 2:
                raise InputError(f"{where}: numeric attribute {name!r} needs bounds: [lo, hi]")
            try:
                lo, hi = float(bounds[0]), float(bounds[1])
            except (TypeError, ValueError):
                raise InputError(f"{where}: attribute {name!r}: bounds must be two numbers, got {bounds!r}") from None
            integer = spec.get("integer", False)
            if not isinstance(integer, bool):
                raise InputError(f"{where}: attribute {name!r}: 'integer' must be true or false, got {integer!r}")
            if not (np.isfinite(lo) and np.isfinite(hi) and hi > lo):
                raise InputError(f"{where}: attribute {name!r}: bounds must be finite with lo < hi")
            if integer and (lo != int(lo) or hi != int(hi)):
                raise InputError(f"{where}: integer attribute {name!r} needs whole-number bounds")
            attrs.append(NumericAttribute(name, lo, hi, integer))
        elif kind == "categorical":
            if "taxonomy" not in spec:
                raise InputError(f"{where}: categorical attribute {name!r} needs a taxonomy tree")
            attrs.append(CategoricalAttribute(name, Taxonomy.from_nested(spec["taxonomy"], f"{where}: {name}")))
        else:
            raise InputError(f"{where}: attribute {name!r}: type must be 'categorical' or 'numeric', got {kind!r}")
    drop = tuple(str(x) for x in obj.get("drop") or ())
    columns = obj.get("columns")
    columns = tuple(str(c) for c in columns) if columns else None
    if columns is not None:
        missing_cols = [a.name for a in attrs if a.name not in columns] + (
            [klass.name] if klass.declared and klass.name not in columns else [])
        if missing_cols:
            raise InputError(f"{where}: 'columns' does not list {missing_cols}")
    missing = tuple(str(x) for x in obj.get("missing") or ())
    delimiter = _delimiter(obj.get("delimiter", ","), f"{where}: 'delimiter'")
    return TableSchema(tuple(attrs), klass, drop, columns, missing, str(obj.get("name", "table")), where, delimiter)


_SCHEMA_KEYS = ("format", "name", "columns", "missing", "class", "drop", "attributes", "delimiter")
_CLASS_KEYS = ("name", "values", "aliases")
_ATTRIBUTE_KEYS = ("name", "type", "bounds", "integer", "taxonomy")


def _no_unknown_keys(spec: dict, known: tuple[str, ...], where: str, what: str) -> None:
    unknown = [str(k) for k in spec if k not in known]
    if unknown:
        raise InputError(f"{where}: {what} has unknown key(s) {unknown}; known keys: {', '.join(known)}")


_DELIMITER_NAMES = {"tab": "\t", "\\t": "\t", "comma": ",", "semicolon": ";", "pipe": "|", "space": " "}


def _delimiter(value: object, where: str) -> str:
    """A one-character field separator (``;``, ``tab``, ``\\t``, ``|``, ...)."""
    text = _DELIMITER_NAMES.get(str(value).lower(), str(value)) if value is not None else ","
    if len(text) != 1 or text in "\"\r\n":
        raise InputError(f"{where} must be one character such as ',' ';' '|' or 'tab', got {value!r}")
    return text


def load_schema(path: str | os.PathLike, *, require_class: bool = True) -> TableSchema:
    """Read a YAML or JSON schema file (``require_class``: see :func:`parse_schema`)."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot read schema ({exc.strerror or exc})") from None
    if b"\x00" in raw:
        raise InputError(f"{path}: not a text file (it holds NUL bytes); expected a YAML or JSON schema")
    try:
        text = raw.decode("utf-8-sig")  # a UTF-8 byte-order mark is dropped
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise InputError(f"{path}:{line}: not valid UTF-8 text; expected a YAML or JSON schema") from None
    if path.suffix.lower() == ".json":
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}:{exc.lineno}:{exc.colno}: not valid JSON ({exc.msg})") from None
    else:
        obj = _load_yaml(text, path)
    return parse_schema(obj, str(path), require_class=require_class)


def _schema_loader():
    """A YAML loader whose plain scalars stay strings (labels such as ``no``, ``yes``, ``on``, ``010`` or
    ``1:20`` are kept exactly as written; YAML 1.1 would make them false, true, 8 and 80), except
    ``true``/``false`` (booleans, as YAML 1.2) and ``~``/``null``/empty (null). Numbers such as bounds
    are read as text and converted where the schema expects a number."""
    import re

    import yaml

    class SchemaLoader(yaml.SafeLoader):
        pass

    SchemaLoader.yaml_implicit_resolvers = {}
    SchemaLoader.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
                                       list("tTfF"))
    SchemaLoader.add_implicit_resolver("tag:yaml.org,2002:null", re.compile(r"^(?:~|null|Null|NULL|)$"),
                                       ["~", "n", "N", ""])
    return SchemaLoader


def _load_yaml(text: str, path: Path) -> object:
    import yaml

    try:
        return yaml.load(text, Loader=_schema_loader())  # noqa: S506 - a SafeLoader subclass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
        what = " ".join(str(x) for x in (exc.context, exc.problem) if x)
        raise InputError(f"{where}: not a valid YAML schema ({what})") from None
    except yaml.YAMLError as exc:
        raise InputError(f"{path}: not a valid YAML schema ({str(exc).splitlines()[0]})") from None


@dataclass(frozen=True, eq=False)
class EncodedTable:
    """Records as code arrays: ``columns[j]`` for predictor j (int64 leaf codes or float64), ``y`` class codes."""

    schema: TableSchema
    columns: tuple[np.ndarray, ...]
    y: np.ndarray

    @property
    def n_records(self) -> int:
        return int(self.y.size)

    def take(self, rows: np.ndarray) -> "EncodedTable":
        return EncodedTable(self.schema, tuple(c[rows] for c in self.columns), self.y[rows])


def _row_error(where: str, row: int, column: str, message: str, line_offset: int | None) -> InputError:
    line = f" (line {row + line_offset})" if line_offset is not None else ""
    return InputError(f"{where}: row {row + 1}{line}, column {column!r}: {message}")


def encode_frame(frame: pd.DataFrame, schema: TableSchema, where: str = "table",
                 line_offset: int | None = None, rows: np.ndarray | None = None) -> EncodedTable:
    """Validate and encode a frame of strings/numbers against the schema (errors name row and column).

    ``rows`` gives each frame row's 0-based row number in the file (after missing rows were dropped).
    """
    import pandas as pd

    rows = np.arange(len(frame)) if rows is None else rows
    missing = [a.name for a in schema.attributes if a.name not in frame.columns]
    if schema.has_class and schema.class_attribute.name not in frame.columns:
        missing.append(schema.class_attribute.name)
    if missing:
        hint = ""
        if len(frame.columns) == 1:
            only = str(frame.columns[0])
            seps = [c for c in (";", "\t", "|", ",") if c in only and c != schema.delimiter]
            hint = (f"; the file was read as ONE column named {only[:60]!r} with delimiter {schema.delimiter!r}"
                    + (f": is it separated by {seps[0]!r}? pass --delimiter {seps[0]!r}" if seps else ""))
        raise InputError(f"{where}: missing column(s) {missing}{hint}")
    extra = [c for c in frame.columns if c not in schema.drop and c not in set(schema.column_names)]
    if extra:
        raise InputError(f"{where}: column(s) {extra} are not in the schema (list them under 'drop' to ignore them)")
    cols: list[np.ndarray] = []
    for a in schema.attributes:
        raw = frame[a.name]
        if a.kind == "numeric":
            values = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=np.float64)
            bad = ~np.isfinite(values)
            if bad.any():
                j = int(np.flatnonzero(bad)[0])
                raise _row_error(where, int(rows[j]), a.name, f"{raw.iloc[j]!r} is not a number", line_offset)
            out = (values < a.lo) | (values >= a.hi)
            if out.any():
                j = int(np.flatnonzero(out)[0])
                raise _row_error(where, int(rows[j]), a.name,
                                 f"{values[j]:g} is outside the declared bounds [{a.lo:g}, {a.hi:g})", line_offset)
            if a.integer:
                frac = values != np.floor(values)
                if frac.any():
                    j = int(np.flatnonzero(frac)[0])
                    raise _row_error(where, int(rows[j]), a.name, f"{float(values[j]):g} is not a whole number (the attribute is declared integer)", line_offset)
            cols.append(values)
        else:
            leaves = a.taxonomy.leaf_labels
            codes = pd.Index(list(leaves)).get_indexer(raw.astype(str).str.strip()).astype(np.int64)
            bad = codes < 0
            if bad.any():
                j = int(np.flatnonzero(bad)[0])
                raise _row_error(where, int(rows[j]), a.name,
                                 f"{str(raw.iloc[j])!r} is not a leaf of the declared taxonomy", line_offset)
            cols.append(codes)
    klass = schema.class_attribute
    if not schema.has_class:
        return EncodedTable(schema, tuple(cols), np.zeros(len(frame), dtype=np.int64))
    labels = frame[klass.name].astype(str).str.strip()
    if klass.aliases:
        labels = labels.replace(klass.aliases)
    y = pd.Index(list(klass.values)).get_indexer(labels).astype(np.int64)
    if (y < 0).any():
        j = int(np.flatnonzero(y < 0)[0])
        raise _row_error(where, int(rows[j]), klass.name,
                         f"{str(frame[klass.name].iloc[j])!r} is not a declared class value", line_offset)
    return EncodedTable(schema, tuple(cols), y)


def _drop_missing(frame: pd.DataFrame, schema: TableSchema) -> tuple[pd.DataFrame, np.ndarray]:
    rows = np.arange(len(frame))
    if not schema.missing:
        return frame, rows
    used = [c for c in schema.column_names if c in frame.columns]
    mask = np.zeros(len(frame), dtype=bool)
    for c in used:
        mask |= frame[c].astype(str).str.strip().isin(schema.missing).to_numpy()
    return frame.loc[~mask].reset_index(drop=True), rows[~mask]


def _read_frame(path: Path, schema: TableSchema) -> tuple[pd.DataFrame, int | None]:
    """Read CSV (header row unless the schema lists ``columns``) or Parquet as strings; returns (frame, line offset)."""
    import pandas as pd

    try:
        if path.suffix.lower() in (".parquet", ".pq"):
            import pyarrow.parquet as pq

            return pq.read_table(path).to_pandas(), None
        header = schema.columns is None
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", pd.errors.ParserWarning)
            frame = pd.read_csv(path, header=0 if header else None, names=None if header else list(schema.columns),
                                dtype=str, skipinitialspace=True, comment="|" if schema.delimiter != "|" else None,
                                skip_blank_lines=True, keep_default_na=False, sep=schema.delimiter,
                                index_col=False, encoding="utf-8-sig")
        if any(issubclass(w.category, pd.errors.ParserWarning) for w in caught):
            raise _field_count_error(path, schema, header)
        if not header and len(frame) and _is_header_row(frame.iloc[0], schema.columns):
            raise InputError(f"{path}:1: the file starts with a header row ({', '.join(list(schema.columns)[:4])}, ...) "
                             f"but the schema lists 'columns', which means the file has none: remove the header "
                             f"line, or remove 'columns' from the schema")
        return frame, (2 if header else 1)
    except (OSError, EOFError, zlib.error, pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as exc:
        raise InputError(f"{path}: cannot read table ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})"
                         ) from None


def _is_header_row(row: pd.Series, columns: tuple[str, ...]) -> bool:
    values = [str(v).strip() for v in row.tolist()]
    return sum(v == c for v, c in zip(values, columns)) >= max(1, (len(columns) + 1) // 2)


def _field_count_error(path: Path, schema: TableSchema, header: bool) -> InputError:
    """Name the first line whose number of fields differs from the header's (or the schema's columns)."""
    import csv

    opener = gzip.open if path.suffix.lower() == ".gz" else open
    expected = None if header else len(schema.columns or ())
    with opener(path, "rt", encoding="utf-8-sig", newline="") as fh:
        for lineno, row in enumerate(csv.reader(fh, delimiter=schema.delimiter), start=1):
            if not row or not "".join(row).strip() or row[0].lstrip().startswith("|"):
                continue
            if expected is None:
                expected = len(row)
                continue
            if len(row) != expected:
                source = "the header" if header else "the schema's 'columns'"
                return InputError(f"{path}:{lineno}: {len(row)} fields, but {source} has {expected}")
    return InputError(f"{path}: the rows do not all have the same number of fields")


def read_table(path: str | os.PathLike, schema: TableSchema) -> EncodedTable:
    """Read a CSV or Parquet table (or an Adult directory) and encode it against the schema.

    Rows holding one of the schema's ``missing`` tokens are dropped (a per-record
    transformation); any other value outside the schema raises :class:`InputError`.
    """
    path = Path(path)
    if path.is_dir():
        if (path / "adult.data").exists():
            return read_adult(path, schema)
        raise InputError(f"{path}: a directory is read only when it holds adult.data (+ adult.test)")
    if path.suffix.lower() not in (".parquet", ".pq"):
        fast = _read_csv_arrow(path, schema)
        if fast is not None:
            return fast
    frame, offset = _read_frame(path, schema)
    frame, rows = _drop_missing(frame, schema)
    if len(frame) == 0:
        raise InputError(f"{path}: no records")
    # Blank-line skipping makes exact line numbers unreliable for headerless files; rows stay exact.
    return encode_frame(frame, schema, str(path), offset if schema.missing == () else None, rows)


def _indexer(known, labels: list[str]) -> np.ndarray:
    """The position of every label in ``known`` (-1 if absent), as ``pandas.Index.get_indexer``."""
    where = {x: i for i, x in enumerate(known)}
    return np.asarray([where.get(x, -1) for x in labels], dtype=np.int64)


def _values_view(arr, dtype) -> np.ndarray:
    """A numpy view of a null-free fixed-width arrow array's values (``Array.to_numpy`` imports pandas)."""
    dtype = np.dtype(dtype)
    return np.frombuffer(arr.buffers()[1], dtype=dtype, count=len(arr), offset=arr.offset * dtype.itemsize)


def _read_csv_arrow(path: Path, schema: TableSchema) -> EncodedTable | None:
    """Fast path for a CSV, with a header row or headerless (the schema's ``columns``): pyarrow parses each
    column straight to its type (numbers as float64, categorical and class values dictionary-encoded, dropped
    columns skipped), and values are mapped to codes once per distinct label through the dictionary, never per
    row. Returns None to fall back to the pandas path (which words every error, and handles comment lines)."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    klass = schema.class_attribute
    cat_names = [a.name for a in schema.attributes if a.kind == "categorical"] + ([klass.name] if klass.declared else [])
    wanted = schema.column_names
    types = {c: pa.dictionary(pa.int32(), pa.string()) for c in cat_names}
    types.update({a.name: pa.float64() for a in schema.attributes if a.kind == "numeric"})
    if schema.columns is None:
        read = pacsv.ReadOptions()
    else:
        read = pacsv.ReadOptions(column_names=list(schema.columns))
    try:
        parse = pacsv.ParseOptions(delimiter=schema.delimiter)
        if schema.columns is None:  # the header must name exactly the schema's columns (+ dropped ones)
            with pacsv.open_csv(path, read_options=pacsv.ReadOptions(block_size=1 << 16), parse_options=parse) as head:
                names = set(head.schema.names)
            if not set(wanted) <= names or (names - set(wanted) - set(schema.drop)):
                return None
        tbl = pacsv.read_csv(path, read_options=read, parse_options=parse, convert_options=pacsv.ConvertOptions(
            column_types=types, include_columns=wanted, strings_can_be_null=False, quoted_strings_can_be_null=False))
    except (pa.ArrowInvalid, OSError, KeyError, ValueError, EOFError, zlib.error):
        return None
    if tbl.num_rows == 0:
        return None
    missing = np.zeros(tbl.num_rows, dtype=bool)
    encoded: dict[str, np.ndarray] = {}
    for a in list(schema.attributes) + ([klass] if klass.declared else []):
        col = tbl[a.name]
        tbl = tbl.drop_columns([a.name])  # free each parsed column as soon as it is encoded
        if getattr(a, "kind", "class") == "numeric":
            if col.null_count:
                return None
            values = np.empty(tbl.num_rows, dtype=np.float64)  # chunk by chunk (ChunkedArray.to_numpy imports pandas)
            at = 0
            for chunk in col.chunks:
                values[at : at + len(chunk)] = _values_view(chunk, np.float64)
                at += len(chunk)
            encoded[a.name] = values
            del col, values
            pa.default_memory_pool().release_unused()
            continue
        col = col.unify_dictionaries() if col.num_chunks > 1 else col
        if col.num_chunks == 0:
            return None
        labels = [str(x).strip() for x in col.chunk(0).dictionary.to_pylist()]
        if getattr(a, "kind", "class") == "categorical":
            lut = _indexer(a.taxonomy.leaf_labels, labels)
        else:
            lut = _indexer(klass.values, [klass.aliases.get(x, x) for x in labels])
        if schema.missing and labels:
            lut[np.isin(labels, schema.missing)] = -2  # a missing token: the row is dropped
        codes = np.empty(tbl.num_rows, dtype=np.int64)
        at = 0
        for chunk in col.chunks:
            n = len(chunk)
            if labels:
                np.take(lut, _values_view(chunk.indices, np.int32), out=codes[at : at + n], mode="clip")  # unbuffered
            else:
                codes[at : at + n] = -1
            at += n
        del col
        pa.default_memory_pool().release_unused()  # give the dropped column back, not only to arrow's pool
        missing |= codes == -2
        encoded[a.name] = codes
    some_missing = bool(missing.any())
    if not missing.all() and any(((encoded[n] == -1) & ~missing).any() if some_missing else (encoded[n] == -1).any()
                                 for n in cat_names):
        return None  # a value outside the schema: the pandas path names its row and column
    keep = ~missing
    if not keep.all():
        for name in list(encoded):  # one column at a time, so at most one extra column exists at once
            encoded[name] = encoded[name][keep]
    cols = []
    for a in schema.attributes:
        v = encoded.pop(a.name)
        if a.kind == "numeric":  # NaN fails both bound tests; +-inf fails one
            bad = v.size and not (v.min() >= a.lo and v.max() < a.hi)
            bad = bad or (a.integer and bool((v != np.floor(v)).any()))
        else:
            bad = bool((v < 0).any())
        if bad:
            return None
        cols.append(v)
    y = encoded.pop(klass.name) if klass.declared else np.zeros(int(keep.sum()), dtype=np.int64)
    if (y < 0).any() or y.size == 0:
        return None
    return EncodedTable(schema, tuple(cols), y)


def read_adult(directory: str | os.PathLike, schema: TableSchema) -> EncodedTable:
    """Adult as the paper uses it: adult.data + adult.test, rows with '?' dropped (45,222 records)."""
    directory = Path(directory)
    if schema.columns is None:
        raise InputError("the Adult files have no header: the schema must list 'columns'")
    parts = []
    for name in ("adult.data", "adult.test"):
        p = directory / name
        if not p.exists():
            continue
        frame, _ = _read_frame(p, schema)
        frame, rows = _drop_missing(frame, schema)
        parts.append(encode_frame(frame, schema, str(p), None, rows))
    if not parts:
        raise InputError(f"{directory}: no adult.data or adult.test")
    return EncodedTable(schema, tuple(np.concatenate([p.columns[j] for p in parts]) for j in range(len(schema.attributes))),
                        np.concatenate([p.y for p in parts]))


def frame_writer(frame, output: str | os.PathLike):
    """A ``write(handle)`` for a pandas frame or pyarrow table: CSV, or Parquet when ``output`` ends in
    .parquet/.pq (the handle is binary: open it with mode ``"wb"``)."""
    import pyarrow as pa

    output = Path(output)
    table = frame if isinstance(frame, pa.Table) else pa.Table.from_pandas(frame, preserve_index=False)
    if output.suffix.lower() in (".parquet", ".pq"):
        import pyarrow.parquet as pq

        return lambda fh: pq.write_table(table, fh)
    import pyarrow.csv as pacsv

    def write(fh) -> None:  # CSV has no dictionary type: labels are spelled out 65,536 rows at a time
        schema = pa.schema([pa.field(f.name, f.type.value_type if pa.types.is_dictionary(f.type) else f.type)
                            for f in table.schema])
        with pacsv.CSVWriter(fh, schema, write_options=pacsv.WriteOptions(quoting_style="needed")) as w:
            for at in range(0, table.num_rows, 1 << 16):
                part = table.slice(at, 1 << 16)
                w.write_table(pa.Table.from_arrays(
                    [c.cast(f.type) if pa.types.is_dictionary(c.type) else c for c, f in zip(part.columns, schema)],
                    schema=schema))

    return write


def write_frame(frame, output: str | os.PathLike) -> None:
    """Write a pandas frame or pyarrow table as CSV, or Parquet when the name ends in .parquet/.pq, atomically."""
    with atomic_output(output, "wb") as fh:
        frame_writer(frame, output)(fh)
