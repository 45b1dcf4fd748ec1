"""Undirected graphs from SNAP-style edge lists (RPS degree sequences, issue 10).

Format: one edge per line, two integer node ids separated by white space. Lines starting with ``#`` or ``%``
and blank lines are skipped. A first data line whose tokens are all non-numeric (a stray header such as
``nd nw`` or ``FromNodeId ToNodeId``) is skipped; any other line that is not two integers is an
:class:`~dprelease.errors.InputError` naming the file and line. Edges listed in both directions or more than
once count once; self-loops are dropped (their node is kept, with the edges it has). ``.gz`` files are read
transparently. The graph's nodes are the ids that occur in the file: under node-DP they are private.
"""

from __future__ import annotations

import gzip
import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import InputError

__all__ = ["Graph", "read_edge_list", "read_degree_file", "graph_from_edges"]

_NUMERIC = re.compile(r"^[+-]?\d+$")


@dataclass(frozen=True, eq=False)
class Graph:
    """Nodes (sorted distinct ids) and undirected simple edges as index pairs ``u < v`` (sorted, unique)."""

    nodes: np.ndarray
    edges: np.ndarray  # m x 2 int64, indices into nodes
    self_loops: int = 0  # custodian facts (never written to a manifest)
    duplicate_edges: int = 0
    header_skipped: bool = False

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
        """The neighbouring graph without node ``index`` and its edges (tests)."""
        keep = (self.edges != index).all(axis=1)
        e = self.edges[keep]
        e = e - (e > index)
        return Graph(np.delete(self.nodes, index), e)


def graph_from_edges(u: np.ndarray, v: np.ndarray, extra_nodes: np.ndarray | None = None) -> Graph:
    """Build a :class:`Graph` from two arrays of node ids (any order, duplicates and self-loops allowed)."""
    u = np.asarray(u, dtype=np.int64)
    v = np.asarray(v, dtype=np.int64)
    ids = np.concatenate([u, v] + ([np.asarray(extra_nodes, dtype=np.int64)] if extra_nodes is not None else []))
    nodes, inv = np.unique(ids, return_inverse=True)
    a, b = inv[:u.size], inv[u.size:2 * u.size]
    loop = a == b
    lo, hi = np.minimum(a, b)[~loop], np.maximum(a, b)[~loop]
    pairs = np.unique(np.stack([lo, hi], axis=1), axis=0) if lo.size else np.zeros((0, 2), dtype=np.int64)
    return Graph(nodes, pairs.astype(np.int64), int(loop.sum()), int(lo.size - pairs.shape[0]))


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


def read_edge_list(path: str | os.PathLike) -> Graph:
    """Read an undirected edge list; errors name ``file:line``."""
    path = Path(path)
    lines = _read_text(path).split("\n")
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
    if not data_lines:
        raise InputError(f"{path}: no edges (the file is empty or has only comments/blank lines)")
    body = "\n".join(lines[i] for i in data_lines)
    tokens = body.split()
    try:
        values = np.array(tokens, dtype=np.int64) if len(tokens) == 2 * len(data_lines) else None
    except (ValueError, OverflowError):
        values = None
    if values is None:  # find the first bad line (slow path, only on an error)
        for i in data_lines:
            toks = lines[i].split()
            if len(toks) != 2:
                raise InputError(f"{path}:{i + 1}: expected two node ids, got {len(toks)} field(s)")
            for t in toks:
                if not _NUMERIC.match(t):
                    raise InputError(f"{path}:{i + 1}: node id {t!r} is not an integer")
                try:
                    np.int64(int(t))
                except OverflowError:
                    raise InputError(f"{path}:{i + 1}: node id {t} does not fit in 64 bits") from None
        raise InputError(f"{path}: cannot parse the edge list")  # pragma: no cover
    g = graph_from_edges(values[0::2], values[1::2])
    return Graph(g.nodes, g.edges, g.self_loops, g.duplicate_edges, header)


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
