"""File-level neighbours: D and D' as the text of the files a command reads, read by the command's own reader.

A command's privacy claim is about its *input file*: two files that differ in one line of a FIMI transaction
file, one row of a CSV table, one node with all its incident edges in an edge list (a friend left with no
edge is not in the file any more, so it vanishes from the graph), one line of one batch file of a stream, or
one person's lines across the batch files. An :class:`~dprelease.audit.AuditCase` built here holds the two
file texts as its D and D'; every run reads the text through the reader the command uses
(:func:`dprelease.data.io.read_transactions` / :mod:`dprelease.data.fimi`, :func:`dprelease.data.table.read_table`,
:func:`dprelease.data.graphs.read_edge_list`) and releases from what it read, so what the reader assumes
(which ids form the node set, which lines are skipped, how a row is encoded) is audited with the algorithm.

Readers are deterministic, so each distinct text is written to a scratch file (in memory, /dev/shm, where
available) and read once; the arrays of what was read are made read-only, so a release that wrote into its
input would fail on every run instead of leaking between runs.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import tempfile
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from .core import AuditCase

__all__ = [
    "UNIT_BATCH_LINE",
    "UNIT_EDGES",
    "UNIT_LINE",
    "UNIT_NODES",
    "UNIT_PERSON",
    "UNIT_ROW",
    "EdgeFiles",
    "FileReader",
    "csv_text",
    "edge_files_reader",
    "edge_list_reader",
    "edge_text",
    "fimi_text",
    "file_case",
    "file_level",
    "on_files",
    "table_case",
    "table_reader",
    "transaction_case",
    "transactions_reader",
]

UNIT_LINE = "one line of a FIMI transaction file"
UNIT_ROW = "one row of a CSV table"
UNIT_EDGES = "one node with all its incident edges in an edge list (friends left with no edge vanish)"
UNIT_NODES = ("one node: its line in the node list (--nodes) and all its incident edges in the edge list "
              "(its friends stay, declared)")
UNIT_BATCH_LINE = "one line of one batch file of a stream"
UNIT_PERSON = "one person's lines across the batch files of a stream"

_SCRATCH: list[Path] = []


def scratch_dir() -> Path:
    """A folder for the audit's input files, in memory (/dev/shm) where available; removed at exit."""
    if not _SCRATCH:
        shm = "/dev/shm"
        where = shm if os.path.isdir(shm) and os.access(shm, os.W_OK) else None
        folder = Path(tempfile.mkdtemp(prefix="dprelease-audit-files-", dir=where))
        atexit.register(shutil.rmtree, str(folder), True)
        _SCRATCH.append(folder)
    return _SCRATCH[0]


def _freeze(obj: Any, depth: int = 0) -> None:
    """Make the numpy arrays reachable from ``obj`` (attributes, tuples, lists, dicts; 3 levels) read-only."""
    if depth > 3 or obj is None:
        return
    if isinstance(obj, np.ndarray):
        obj.setflags(write=False)
        return
    if isinstance(obj, (tuple, list)):
        for x in obj:
            _freeze(x, depth + 1)
        return
    if isinstance(obj, dict):
        for x in obj.values():
            _freeze(x, depth + 1)
        return
    if isinstance(obj, (str, bytes, int, float, bool)):
        return
    fields = getattr(obj, "__dict__", None)
    if fields is None and hasattr(obj, "__slots__"):
        fields = {k: getattr(obj, k) for k in obj.__slots__ if hasattr(obj, k)}
    for x in (fields or {}).values():
        _freeze(x, depth + 1)


class FileReader:
    """``reader(text)``: what the command's reader makes of a file holding ``text`` (cached per text)."""

    def __init__(self, read: Callable[[Path], Any], suffix: str, cache: int = 64):
        self.read = read
        self.suffix = suffix
        self.cache = cache
        self._done: OrderedDict[str, Any] = OrderedDict()

    def path(self, text: str) -> Path:
        """The scratch file holding ``text`` (written once)."""
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]
        path = scratch_dir() / f"{digest}{self.suffix}"
        if not path.exists():
            tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, path)
        return path

    def __call__(self, text: str) -> Any:
        if text in self._done:
            self._done.move_to_end(text)
            return self._done[text]
        obj = self.read(self.path(text))
        _freeze(obj)
        self._done[text] = obj
        while len(self._done) > self.cache:
            self._done.popitem(last=False)
        return obj


def transactions_reader(universe_spec: str) -> FileReader:
    """FIMI files read as ``dprelease diffpart/basic/privbasis/tf/stream`` read them, against a declared universe
    (``LO..HI``): returns (TransactionDB, Universe)."""
    from ..data.io import read_transactions
    from ..data.universe import parse_universe_spec

    universe = parse_universe_spec(universe_spec)
    return FileReader(lambda path: read_transactions(path, universe), ".dat")


def table_reader(schema: Any) -> FileReader:
    """CSV tables read as ``dprelease diffgen/rps`` read them (:func:`dprelease.data.table.read_table`)."""
    from ..data.table import read_table

    return FileReader(lambda path: read_table(path, schema), ".csv")


def edge_list_reader() -> FileReader:
    """Edge lists read as ``dprelease degrees`` reads them (:func:`dprelease.data.graphs.read_edge_list`)."""
    from ..data.graphs import read_edge_list

    return FileReader(read_edge_list, ".txt")


@dataclass(frozen=True)
class EdgeFiles:
    """What ``dprelease degrees`` reads: an edge list's text, and a node list's text (``--nodes``) or None."""

    edges: str
    nodes: str | None = None


def edge_files_reader() -> Callable[[EdgeFiles], Any]:
    """Edge list and node list read as ``dprelease degrees [--nodes FILE]`` reads them
    (:func:`dprelease.data.graphs.read_edge_list`), each text from its own scratch file."""
    from ..data.graphs import read_edge_list

    edge_files = FileReader(lambda path: path, ".txt")  # only the scratch files of this reader are used
    node_files = FileReader(lambda path: path, ".nodes")
    done: OrderedDict[EdgeFiles, Any] = OrderedDict()

    def read(files: EdgeFiles) -> Any:
        if files in done:
            done.move_to_end(files)
            return done[files]
        nodes = node_files.path(files.nodes) if files.nodes is not None else None
        graph = read_edge_list(edge_files.path(files.edges), nodes=nodes)
        _freeze(graph)
        done[files] = graph
        while len(done) > 64:
            done.popitem(last=False)
        return graph

    return read


def fimi_text(records: Iterable[Iterable[int]], first_label: int = 1) -> str:
    """One line per record; item id i is written as the label ``i + first_label`` (the universe LO..HI)."""
    return "".join(" ".join(str(int(i) + first_label) for i in sorted(set(int(x) for x in rec))) + "\n"
                   for rec in records)


def csv_text(schema: Any, rows: Iterable[Sequence[float | int]]) -> str:
    """A CSV file with a header: each row is (one value per predictor, the class code); a numeric value is
    written as a number, a categorical one as its taxonomy leaf code's label, the class as its label."""
    attrs = schema.attributes
    names = [a.name for a in attrs] + [schema.class_attribute.name]
    lines = [",".join(names)]
    for row in rows:
        fields = []
        for a, v in zip(attrs, row):
            if a.kind == "numeric":
                x = float(v)
                fields.append(str(int(x)) if x.is_integer() and abs(x) < 2**53 else repr(x))
            else:
                fields.append(a.taxonomy.leaf_labels[int(v)])
        fields.append(schema.class_attribute.values[int(row[len(attrs)])])
        lines.append(",".join(fields))
    return "\n".join(lines) + "\n"


def edge_text(edges: Iterable[tuple[int, int]]) -> str:
    """One edge ``u v`` per line."""
    return "".join(f"{int(u)} {int(v)}\n" for u, v in edges)


def file_case(name: str, d_text: str | tuple[str, ...], d_prime_text: str | tuple[str, ...], epsilon: float,
              reader: FileReader, release: Callable[[Any, Any], Any], events: Callable[[Any], Iterable[str]], *,
              unit: str, description: str = "", skip: str | None = None) -> AuditCase:
    """An :class:`AuditCase` whose D and D' are file texts (a tuple of texts: one file per batch of a stream).

    Each run reads the text(s) with ``reader`` and calls ``release(what_was_read, noise)`` (a list of what
    was read for a tuple of texts).
    """
    def run(text: str | tuple[str, ...], noise: Any) -> Any:
        data = [reader(t) for t in text] if isinstance(text, tuple) else reader(text)
        return release(data, noise)

    return AuditCase(name, d_text, d_prime_text, float(epsilon), run, events, description=description, skip=skip,
                     unit=unit)


def transaction_case(name: str, d_records: Sequence[Sequence[int]], d_prime_records: Sequence[Sequence[int]],
                     n_items: int, epsilon: float, release: Callable[[Any, Any, Any], Any],
                     events: Callable[[Any], Iterable[str]], *, description: str = "") -> AuditCase:
    """A pair of FIMI files over the declared universe ``1..n_items`` (item id i is label i + 1).

    ``release(db, universe, noise)`` gets what :func:`dprelease.data.io.read_transactions` read.
    """
    reader = transactions_reader(f"1..{int(n_items)}")
    return file_case(name, fimi_text(d_records), fimi_text(d_prime_records), epsilon, reader,
                     lambda read, noise: release(read[0], read[1], noise), events, unit=UNIT_LINE,
                     description=description)


def table_case(name: str, schema: Any, d_rows: Sequence[Sequence[float | int]],
               d_prime_rows: Sequence[Sequence[float | int]], epsilon: float, release: Callable[[Any, Any], Any],
               events: Callable[[Any], Iterable[str]], *, description: str = "") -> AuditCase:
    """A pair of CSV tables (rows of codes, see :func:`csv_text`); ``release(table, noise)`` gets what
    :func:`dprelease.data.table.read_table` read."""
    return file_case(name, csv_text(schema, d_rows), csv_text(schema, d_prime_rows), epsilon, table_reader(schema),
                     release, events, unit=UNIT_ROW, description=description)


def on_files(case: AuditCase) -> AuditCase:
    """The same pair as the files a command reads: a :class:`~dprelease.data.transactions.TransactionDB` becomes
    a FIMI file over the declared universe ``1..n_items`` (item id i written as label i + 1), an
    :class:`~dprelease.data.table.EncodedTable` a CSV table with a header; each run reads the text with the
    command's reader and gives what it read to the case's ``run``. A pair a file cannot express is returned
    as it is: a record with no item (a blank line is skipped by the reader, so it is not a neighbour on files;
    the case stays an API-level pair and says so in ``unit``).
    """
    from ..data.table import EncodedTable
    from ..data.transactions import TransactionDB

    d, dp = case.d, case.d_prime
    if isinstance(d, TransactionDB) and isinstance(dp, TransactionDB):
        if (d.lengths == 0).any() or (dp.lengths == 0).any():
            return replace(case, unit="one record, through the API (a FIMI file cannot hold an empty record)")
        n = int(d.n_items)
        reader = transactions_reader(f"1..{n}")
        return file_case(case.name, fimi_text(d.to_lists()), fimi_text(dp.to_lists()), case.epsilon, reader,
                         lambda read, noise: case.run(read[0], noise), case.events, unit=UNIT_LINE,
                         description=case.description, skip=case.skip)
    if isinstance(d, EncodedTable) and isinstance(dp, EncodedTable):
        schema = d.schema

        def rows(t: EncodedTable) -> list[tuple]:
            return [tuple(c[i] for c in t.columns) + (int(t.y[i]),) for i in range(t.n_records)]

        return file_case(case.name, csv_text(schema, rows(d)), csv_text(schema, rows(dp)), case.epsilon,
                         table_reader(schema), case.run, case.events, unit=UNIT_ROW, description=case.description,
                         skip=case.skip)
    return case


def file_level(factory: Callable[[float], list[AuditCase]]) -> Callable[[float], list[AuditCase]]:
    """Decorator for a case factory: every pair it writes on in-memory data is audited on files (:func:`on_files`)."""
    def wrapped(epsilon: float) -> list[AuditCase]:
        return [on_files(c) for c in factory(epsilon)]

    wrapped.__name__ = getattr(factory, "__name__", "file_level")
    wrapped.__doc__ = factory.__doc__
    return wrapped
