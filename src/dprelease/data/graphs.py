"""Undirected graphs from SNAP-style edge lists, optionally with a declared node list (degree sequences, docs/rps.md).

Edge file: one edge per line, two integer node ids separated by white space. Lines starting with ``#`` or ``%``
and blank lines are skipped. A first data line whose tokens are all non-numeric (a stray header such as
``nd nw`` or ``FromNodeId ToNodeId``) is skipped; any other line that is not two integers is an
:class:`~dprelease.errors.InputError` naming the file and line. Edges listed in both directions or more than
once count once; self-loops are dropped (their node is kept, with the edges it has). ``.gz`` files are read
transparently. A line with a single id is an error: an edge file cannot declare an isolated node (a node list
can), and a file that mixed the two would leave unclear which nodes are declared. A file with no edge (empty, or
only comments) is a graph with no node, not an error: it is the neighbour of every one-edge file, so refusing it
would tell the two apart without noise.

The node set, and so what a neighbouring input is, depends on what the command reads:

* **edge file alone** (``Graph.declared_nodes`` false): the nodes are the ids that occur in the file. Removing a
  node's lines also removes every node whose only neighbour it was, so the node set is private and moves by up
  to the removed node's raw degree; the degree release counts only nodes of projected degree >= 1.
* **edge file + node list** (``--nodes FILE``: one integer id per line, same comment/header rules; an id listed
  twice is an error): the nodes are the listed ids, isolated ones included, and every edge must name listed
  nodes (an edge naming another id is an error naming the edge file and line). Removing a node removes its line
  from the node list and its lines from the edge file; its friends stay, isolated if it was their only edge.
"""

from __future__ import annotations

import gzip
import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import InputError

__all__ = ["Graph", "read_edge_list", "read_node_list", "parse_edge_list", "parse_node_list", "read_degree_file",
           "graph_from_edges"]

_NUMERIC = re.compile(r"^[+-]?\d+$")


@dataclass(frozen=True, eq=False)
class Graph:
    """Nodes (sorted distinct ids) and undirected simple edges as index pairs ``u < v`` (sorted, unique).

    ``declared_nodes``: the node set was declared (a node list), so isolated nodes are nodes and a neighbour keeps
    the removed node's friends; false when the nodes are the ids that occur in an edge file.
    """

    nodes: np.ndarray
    edges: np.ndarray  # m x 2 int64, indices into nodes
    self_loops: int = 0  # custodian facts (never written to a manifest)
    duplicate_edges: int = 0
    header_skipped: bool = False
    declared_nodes: bool = False

    @property
    def n_nodes(self) -> int:
        return int(self.nodes.size)

    @property
    def n_edges(self) -> int:
        return int(self.edges.shape[0])

    def degrees(self) -> np.ndarray:
        """Degree of every node (in node order)."""
        return np.bincount(self.edges.ravel(), minlength=self.n_nodes).astype(np.int64)

    def remove_node(self, index: int) -> "Graph":
        """The neighbouring input without node ``index`` and all its edges, as the input defines it (tests).

        With a declared node set the other nodes all stay (isolated when ``index`` was their only neighbour);
        from an edge file alone, a friend whose every edge went to ``index`` occurs on no remaining line and
        vanishes. (A node kept only by a self-loop line is not recorded here; it has degree 0 either way.)
        """
        deg = self.degrees()
        touching = (self.edges == index).any(axis=1)
        gone = np.zeros(self.n_nodes, dtype=bool)
        gone[index] = True
        if not self.declared_nodes:
            friends = self.edges[touching].ravel()
            friends = friends[friends != index]
            gone[friends[deg[friends] == 1]] = True
        remap = np.cumsum(~gone) - 1
        e = remap[self.edges[~touching]]
        return Graph(self.nodes[~gone], e.astype(np.int64), declared_nodes=self.declared_nodes)


def graph_from_edges(u: np.ndarray, v: np.ndarray, extra_nodes: np.ndarray | None = None) -> Graph:
    """Build a :class:`Graph` from two arrays of node ids (any order, duplicates and self-loops allowed).

    ``extra_nodes``: a declared node list (isolated nodes allowed); the node set is then the declared list plus
    the edges' endpoints and ``declared_nodes`` is set. Without it the nodes are the edges' endpoints.
    """
    u = np.asarray(u, dtype=np.int64)
    v = np.asarray(v, dtype=np.int64)
    ids = np.concatenate([u, v] + ([np.asarray(extra_nodes, dtype=np.int64)] if extra_nodes is not None else []))
    nodes, inv = np.unique(ids, return_inverse=True)
    a, b = inv[:u.size], inv[u.size:2 * u.size]
    loop = a == b
    lo, hi = np.minimum(a, b)[~loop], np.maximum(a, b)[~loop]
    pairs = np.unique(np.stack([lo, hi], axis=1), axis=0) if lo.size else np.zeros((0, 2), dtype=np.int64)
    return Graph(nodes, pairs.astype(np.int64), int(loop.sum()), int(lo.size - pairs.shape[0]),
                 declared_nodes=extra_nodes is not None)


def _read_text(path: Path) -> str:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise InputError(f"{path}:{line}: not valid UTF-8 text") from None


def _data_lines(lines: list[str]) -> tuple[list[int], bool]:
    """Indices of the data lines (comments and blanks skipped) and whether a stray header was skipped."""
    header = False
    data_lines: list[int] = []
    for i, line in enumerate(lines):
        s = line.strip()
        if not s or s[0] in "#%":
            continue
        if not data_lines and not header:
            toks = s.split()
            if toks and not any(_NUMERIC.match(t) for t in toks):
                header = True
                continue
        data_lines.append(i)
    return data_lines, header


def _ids(lines: list[str], data_lines: list[int], per_line: int, source: str, what: str) -> np.ndarray:
    """The integer ids of the data lines, ``per_line`` on each (InputError naming the first bad line)."""
    if not data_lines:
        return np.zeros(0, dtype=np.int64)
    tokens = "\n".join(lines[i] for i in data_lines).split()
    try:
        values = np.array(tokens, dtype=np.int64) if len(tokens) == per_line * len(data_lines) else None
    except (ValueError, OverflowError):
        values = None
    if values is not None:
        return values
    for i in data_lines:  # find the first bad line (slow path, only on an error)
        toks = lines[i].split()
        if len(toks) != per_line:
            hint = (" (an edge file cannot declare an isolated node: list every node with --nodes FILE)"
                    if per_line == 2 and len(toks) == 1 else "")
            raise InputError(f"{source}:{i + 1}: expected {what}, got {len(toks)} field(s){hint}")
        for t in toks:
            if not _NUMERIC.match(t):
                raise InputError(f"{source}:{i + 1}: node id {t!r} is not an integer")
            try:
                np.int64(int(t))
            except OverflowError:
                raise InputError(f"{source}:{i + 1}: node id {t} does not fit in 64 bits") from None
    raise InputError(f"{source}: cannot parse the {what.split()[-1]}")  # pragma: no cover


def parse_node_list(text: str, source: str = "<nodes>") -> np.ndarray:
    """The declared node ids of a node list's text (one integer id per line), sorted; errors name ``source:line``."""
    lines = text.split("\n")
    data_lines, _ = _data_lines(lines)
    ids = _ids(lines, data_lines, 1, source, "one node id")
    order = np.argsort(ids, kind="stable")
    dup = np.flatnonzero(ids[order][1:] == ids[order][:-1])
    if dup.size:
        k = int(order[dup + 1].min())  # the earliest line that repeats an id listed before it
        first = int(np.flatnonzero(ids == ids[k])[0])
        raise InputError(f"{source}:{data_lines[k] + 1}: node id {int(ids[k])} is listed twice "
                         f"(first on line {data_lines[first] + 1})")
    return ids[order]


def parse_edge_list(text: str, source: str = "<edges>", *, nodes: np.ndarray | None = None,
                    nodes_source: str = "the node list") -> Graph:
    """A :class:`Graph` from an edge list's text; ``nodes`` (sorted distinct ids, :func:`parse_node_list`) declares
    the node set. The command's reader (:func:`read_edge_list`) is this function on the file's text."""
    lines = text.split("\n")
    data_lines, header = _data_lines(lines)
    values = _ids(lines, data_lines, 2, source, "two node ids")
    if nodes is None:
        g = graph_from_edges(values[0::2], values[1::2])
        return Graph(g.nodes, g.edges, g.self_loops, g.duplicate_edges, header)
    declared = np.asarray(nodes, dtype=np.int64)
    if values.size:
        pos = np.minimum(np.searchsorted(declared, values), max(declared.size - 1, 0))
        outside = np.flatnonzero(declared[pos] != values) if declared.size else np.arange(values.size)
        if outside.size:
            k = int(outside[0])
            raise InputError(f"{source}:{data_lines[k // 2] + 1}: node id {int(values[k])} is not in "
                             f"{nodes_source} (with a node list, every edge must name listed nodes)")
    g = graph_from_edges(values[0::2], values[1::2], extra_nodes=declared)
    return Graph(g.nodes, g.edges, g.self_loops, g.duplicate_edges, header, declared_nodes=True)


def read_node_list(path: str | os.PathLike) -> np.ndarray:
    """Read a declared node list (one integer id per line); errors name ``file:line``."""
    path = Path(path)
    return parse_node_list(_read_text(path), str(path))


def read_edge_list(path: str | os.PathLike, nodes: str | os.PathLike | None = None) -> Graph:
    """Read an undirected edge list, and the declared node list ``nodes`` if given; errors name ``file:line``."""
    path = Path(path)
    declared = read_node_list(nodes) if nodes is not None else None
    return parse_edge_list(_read_text(path), str(path), nodes=declared,
                           nodes_source=f"the node list {nodes}" if nodes is not None else "the node list")


def read_degree_file(path: str | os.PathLike) -> np.ndarray:
    """A released degree sequence: one whole number >= 0 per line (blank and ``#`` lines skipped)."""
    path = Path(path)
    out = []
    for i, line in enumerate(_read_text(path).split("\n")):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        if not s.isdigit():
            raise InputError(f"{path}:{i + 1}: expected a degree (a whole number >= 0), got {s!r}")
        out.append(int(s))
    return np.asarray(out, dtype=np.int64)
