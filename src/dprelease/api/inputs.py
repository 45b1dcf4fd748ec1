"""The data a release reads, in every form a Python user holds it, turned into what the algorithms take.

Transactions: a path (read exactly as the command line reads it), an iterable of baskets (lists, sets or
tuples of items), a pandas Series of baskets, a long DataFrame (record id, item: one row per item of a record)
or a one-hot boolean DataFrame (a column per item). Tables: a path, or a DataFrame with the schema's columns.
Graphs: a path to an edge list, a networkx graph, or an edge DataFrame (two columns of node ids).

The domain is public and declared: a universe is ``"LO..HI"``, a file of items, a list of items or a
:class:`~dprelease.data.universe.Universe`; ``"derive"`` is the explicit opt-in to derive it from the data,
with the same :class:`~dprelease.errors.PrivacyLeakWarning` and manifest record as ``--universe derive``.
"""

from __future__ import annotations

import argparse
import os
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InputError, ParameterError
from ._core import Reporter

if TYPE_CHECKING:
    from ..data.graphs import Graph
    from ..data.table import EncodedTable, TableSchema
    from ..data.transactions import TransactionDB
    from ..data.universe import Universe

__all__ = ["is_path", "derives_universe", "load_transactions", "universe_spec", "transactions_of", "table_of",
           "schema_of", "graph_of"]


def is_path(data: object) -> bool:
    return isinstance(data, (str, os.PathLike))


def path_of(data: object) -> str | None:
    """``data`` as a file path when it is one (a str or a path object), else None."""
    if isinstance(data, (str, os.PathLike)):
        return str(os.fspath(data))
    return None


def derives_universe(args: argparse.Namespace | None) -> bool:
    """Whether an omitted universe is derived: asked for (``--universe derive``) or a command that publishes
    nothing (stats, evaluate, experiments)."""
    if args is None:
        return False
    return bool(getattr(args, "derive_universe", False) or not getattr(args, "universe_required", True))


def load_transactions(path: str, universe_spec: str | None, args: argparse.Namespace | None,
                      reporter: Reporter, say: Any = None) -> tuple[Any, Universe]:
    """Read a transaction file against a declared universe, on the engine ``args`` name (``--engine``); derive the
    universe only when ``args`` allow it (:func:`derives_universe`): with the leak warning for a command that
    publishes, with a note (``say``) for one that does not. On the local engine the result is the in-memory
    database; on another, that engine's data."""
    from .. import progress
    from ..data.io import read_transactions
    from ..data.parquet import is_parquet
    from ..data.universe import parse_universe_spec
    from ..engine import in_memory, open_transactions, unwrap
    from ..errors import PrivacyLeakWarning

    universe = parse_universe_spec(universe_spec) if universe_spec else None
    engine = getattr(args, "engine", "local") if args is not None else "local"
    if universe is None and not in_memory(engine):
        raise ParameterError(f"--engine {engine} needs a declared --universe (deriving it from the data would "
                             f"reveal which items occur)")
    if universe is None and is_parquet(path):
        raise ParameterError("a Parquet input needs a declared --universe")
    derive = derives_universe(args)
    publishes = args is None or bool(getattr(args, "universe_required", True))
    with warnings.catch_warnings(record=True) as caught, progress.phase(f"read {Path(path).name}"):
        warnings.simplefilter("always", PrivacyLeakWarning)
        if universe is not None:
            db = unwrap(open_transactions(path, universe, engine=engine,
                                          master=getattr(args, "spark_master", None)))
        else:
            db, universe = read_transactions(path, universe, derive=derive)
    for w in caught:
        if issubclass(w.category, PrivacyLeakWarning):
            if publishes:
                reporter.leaked(str(w.message))
        else:
            reporter.warn(str(w.message))
    if not universe.declared and not publishes and say is not None:
        say(f"note: no --universe: the universe of {path} was derived from it ({universe.size:,} items); "
            f"fine for this command, which publishes nothing")
    return db, universe  # on another engine, its data stand in for the database


def universe_spec(universe: object) -> tuple[str | None, Universe | None, bool]:
    """(spec for the reader, a Universe object, derive) from what a Python user passes as ``universe``."""
    from ..data.universe import DERIVE, UNDECLARED, Universe

    if universe is None:
        raise ParameterError(UNDECLARED.replace("--universe derive", 'universe="derive"'))
    if isinstance(universe, Universe):
        return None, universe, False
    if isinstance(universe, str) and universe.strip() == DERIVE:
        return None, None, True
    if path_of(universe) is not None:
        return path_of(universe), None, False
    if isinstance(universe, range):
        if universe.step != 1 or len(universe) == 0:
            raise ParameterError(f"universe {universe!r}: give a range of step 1, or a list of items")
        spec = f"{universe.start}..{universe.stop - 1}"
        return spec, None, False
    if isinstance(universe, Iterable):
        labels = [str(x) for x in universe]
        return None, Universe.from_labels(labels, "declared-list", f"a list of {len(labels)} items"), False
    raise ParameterError(f"universe: expected 'LO..HI', a file of items, a list of items, a Universe or 'derive', "
                         f"got {type(universe).__name__}")


def _baskets_of(data: object) -> list[list[object]]:
    """Baskets (lists of items) from an iterable of baskets, a Series of baskets, or a long/one-hot DataFrame."""
    import numpy as np

    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas is a dependency
        pd = None
    if pd is not None and isinstance(data, pd.DataFrame):
        if len(data.columns) and all(pd.api.types.is_bool_dtype(t) for t in data.dtypes):
            cols = np.asarray([str(c) for c in data.columns], dtype=object)
            mask = data.to_numpy(dtype=bool)
            return [list(cols[row]) for row in mask]
        if data.shape[1] != 2:
            raise InputError(f"DataFrame: expected a one-hot frame (every column boolean) or a long frame of two "
                             f"columns (record id, item); got {data.shape[1]} columns of types "
                             f"{', '.join(str(t) for t in data.dtypes)}")
        rec, item = data.columns
        groups = data.groupby(rec, sort=False)[item]
        return [list(v) for _, v in groups]
    if pd is not None and isinstance(data, pd.Series):
        data = data.tolist()
    if isinstance(data, (str, bytes)) or not isinstance(data, Iterable):
        raise InputError(f"data: expected a path, an iterable of baskets, a pandas Series of baskets or a "
                         f"DataFrame, got {type(data).__name__}")
    out: list[list[object]] = []
    for i, basket in enumerate(data):
        if isinstance(basket, (str, bytes)) or not isinstance(basket, Iterable):
            raise InputError(f"data: record {i + 1}: expected a basket (a list, set or tuple of items), "
                             f"got {type(basket).__name__} {basket!r:.40}")
        out.append(list(basket))
    return out


def transactions_of(data: object, universe: object, args: argparse.Namespace, reporter: Reporter
                    ) -> tuple[TransactionDB, Universe]:
    """The database and universe of ``data`` in any transaction form (a path is read as the command line does)."""
    import numpy as np

    from ..data.transactions import TransactionDB
    from ..data.universe import Universe
    from ..errors import PrivacyLeakWarning

    spec, declared, derive = universe_spec(universe)
    path = path_of(data)
    if path is not None:
        if declared is not None:  # a universe object (a list of items, or a release's): read against it
            from ..data.io import read_transactions

            return read_transactions(path, declared)
        args.derive_universe = derive
        db, read_universe = load_transactions(path, spec, args, reporter)
        return db, read_universe
    baskets = _baskets_of(data)
    if not baskets:
        raise InputError("data: no records")
    tokens = [str(x) for b in baskets for x in b]
    if declared is None and spec is not None:
        from ..data.universe import parse_universe_spec

        declared = parse_universe_spec(spec)
    if declared is None:  # derive=True: the same warning and manifest record as --universe derive
        with warnings.catch_warnings():
            warnings.simplefilter("always", PrivacyLeakWarning)
            if all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) for b in baskets for x in b):
                declared = Universe.derived_from_values(np.asarray(tokens, dtype=np.int64))
            else:
                declared = Universe.derived_from_tokens(tokens)
    ids = declared.ids_of_tokens(tokens) if tokens else np.zeros(0, dtype=np.int64)
    lengths = np.fromiter((len(b) for b in baskets), dtype=np.int64, count=len(baskets))
    bad = np.flatnonzero(ids < 0)
    if bad.size:
        k = int(bad[0])
        record = int(np.searchsorted(np.cumsum(lengths), k, side="right"))
        raise InputError(f"data: record {record + 1}: item {tokens[k]!r} is not in {declared.where()}")
    rows = np.repeat(np.arange(len(baskets), dtype=np.int64), lengths)
    return TransactionDB.from_pairs(rows, ids, len(baskets), declared.size), declared


def schema_of(schema: object, delimiter: str | None = None, *, require_class: bool = True) -> TableSchema:
    """A table schema from a path (YAML/JSON), a dict (the same structure) or a TableSchema."""
    from dataclasses import replace

    from ..data.table import TableSchema, load_schema, parse_schema

    if isinstance(schema, TableSchema):
        out = schema
    elif is_path(schema):
        out = load_schema(schema, require_class=require_class)  # type: ignore[arg-type]
    elif isinstance(schema, dict):
        out = parse_schema(schema, "schema", require_class=require_class)
    else:
        raise ParameterError(f"schema: expected a path, a dict or a TableSchema, got {type(schema).__name__}")
    return replace(out, delimiter=delimiter) if delimiter else out


def table_of(data: object, schema: TableSchema) -> str | EncodedTable:
    """A path (read by the engine as the command line does) or a DataFrame encoded against ``schema``."""
    import pandas as pd

    from ..data.table import _drop_missing, encode_frame

    path = path_of(data)
    if path is not None:
        return path
    if not isinstance(data, pd.DataFrame):
        raise InputError(f"data: expected a path or a pandas DataFrame, got {type(data).__name__}")
    frame, rows = _drop_missing(data.reset_index(drop=True), schema)
    if len(frame) == 0:
        raise InputError("DataFrame: no records")
    return encode_frame(frame, schema, "DataFrame", None, rows)


def _node_ids(values: Iterable[Any], what: str) -> Any:
    """Integer node ids (64-bit); a float with a fraction, a bool or a word is refused, never truncated."""
    import numpy as np

    items = list(values)
    for v in items:
        if not _is_int(v):
            raise InputError(f"{what}: node id {v!r} is not an integer (ids are integers, as in an edge file)")
    try:
        return np.asarray([int(v) for v in items], dtype=np.int64) if items else np.zeros(0, dtype=np.int64)
    except OverflowError:
        raise InputError(f"{what}: a node id does not fit in 64 bits") from None


def _is_int(v: Any) -> bool:
    if isinstance(v, (bool, str, bytes)):
        return isinstance(v, str) and v.strip().lstrip("+-").isdigit()
    try:
        return float(v).is_integer() and int(v) == v
    except (TypeError, ValueError, OverflowError):
        return False


def graph_of(data: object, nodes: object = None) -> tuple[Graph, str | None]:
    """A graph and, when its node set is declared by a file, that file (for the manifest).

    A networkx graph declares its node set (``G.nodes``, isolated nodes included): the declared-nodes model.
    An edge file or an edge DataFrame alone is the edge-list model (the nodes are the ids that occur; a node's
    removal takes its friends that have no other edge), exactly as the command line reads an edge file;
    ``nodes`` (a node-list file or an iterable of ids) declares the node set."""
    import numpy as np

    from ..data.graphs import graph_from_edges, parse_edge_list, read_edge_list, read_node_list

    node_file = path_of(nodes)
    declared = None
    if node_file is None and nodes is not None:
        if not isinstance(nodes, Iterable):
            raise InputError(f"nodes: expected a node-list file or an iterable of node ids, got {type(nodes).__name__}")
        ids = list(nodes)
        declared = np.unique(_node_ids(ids, "nodes"))
        if declared.size != len(ids):
            raise InputError("nodes: a node id is listed twice")
    path = path_of(data)
    if path is not None:
        if declared is not None:
            text = Path(path).read_text(encoding="utf-8-sig")
            return parse_edge_list(text, path, nodes=declared), None
        return read_edge_list(path, nodes=node_file), node_file
    if node_file is not None:
        declared = read_node_list(node_file)
    if hasattr(data, "nodes") and hasattr(data, "edges") and hasattr(data, "is_directed"):  # networkx
        if declared is not None:
            raise ParameterError("nodes: a networkx graph declares its own node set (G.nodes); do not give nodes=")
        if data.is_directed() or data.is_multigraph():  # type: ignore[attr-defined]
            raise InputError("graph: expected an undirected simple graph (nx.Graph); convert it with "
                             "nx.Graph(G.to_undirected())")
        ids = _node_ids(data.nodes, "graph")
        edges = list(data.edges)
        u = _node_ids((e[0] for e in edges), "graph")
        v = _node_ids((e[1] for e in edges), "graph")
        return graph_from_edges(u, v, extra_nodes=ids), None
    import pandas as pd

    if not isinstance(data, pd.DataFrame) or data.shape[1] != 2:
        raise InputError("graph: expected an edge-list path, a networkx graph or a DataFrame of two columns "
                         "(the two node ids of each edge)")
    u = _node_ids(data.iloc[:, 0].tolist(), "edges")
    v = _node_ids(data.iloc[:, 1].tolist(), "edges")
    if declared is not None:
        outside = np.setdiff1d(np.concatenate([u, v]), declared)
        if outside.size:
            raise InputError(f"edges: node id {int(outside[0])} is not in the node list (with a node list, every "
                             f"edge must name listed nodes)")
    return graph_from_edges(u, v, extra_nodes=declared), node_file
