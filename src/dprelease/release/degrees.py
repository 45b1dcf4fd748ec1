"""Degree releases: a degree sequence under node-DP (RPS, Hay et al., Day et al.), and a graph regenerated from one.

* :class:`DegreeRelease`: one degree per line, sorted ascending.
* :class:`GraphRelease`: one edge ``u v`` per line, nodes 0..n-1 in the sorted degree order (post-processing of
  a degree release; its manifest says what it was derived from).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, IO, Any, ClassVar

import numpy as np

from ..privacy.uncertainty import Intervals
from .base import Written, check_kind
from .files import Manifest, read_manifest, write_with_manifest

if TYPE_CHECKING:
    from ..privacy.accountant import BudgetAccountant

__all__ = ["DegreeRelease", "GraphRelease", "read_degrees_release"]


@dataclass(frozen=True, eq=False)
class DegreeRelease:
    """A released degree sequence (sorted ascending), the method, theta, the accountant and the manifest.

    ``model``: the neighbour model the release is private under (``"edge-list"`` or ``"declared-nodes"``,
    :data:`dprelease.graphs.degrees.DEGREE_MODELS`); under ``"edge-list"`` every released degree is >= 1 (the
    nodes of projected degree 0 are not released). ``details``: the method's own public facts (budget split,
    sensitivities, leaves), from which :func:`dprelease.graphs.degrees.release_degrees` assembles the manifest.
    """

    kind: ClassVar[str] = "degrees"

    degrees: np.ndarray
    method: str
    theta: int
    accountant: BudgetAccountant | None
    manifest: Manifest = field(default_factory=dict)
    model: str = "edge-list"
    details: Manifest = field(default_factory=dict, repr=False)
    # the noisy histogram or cumulative counts behind the sequence: the nodes of degree bins[i, 0]..bins[i, 1]
    # (inclusive) and each count's sd and 95 % interval (public scales); None when the method has none (hay)
    errors: Intervals | None = field(default=None, repr=False)
    bins: np.ndarray | None = field(default=None, repr=False)

    @property
    def n_nodes(self) -> int:
        return int(self.degrees.size)

    def intervals(self) -> Intervals | None:
        """The counts behind the sequence (nodes per degree range, :attr:`bins`) with their 95 % intervals."""
        return self.errors

    def write(self, output: str | os.PathLike[str]) -> Written:
        """One degree per line, and the manifest, as one unit; the counts behind it, with their error bars, go
        to a companion CSV (``OUTPUT.intervals.csv``) the manifest lists."""
        text = "".join(f"{int(d)}\n" for d in self.degrees.tolist())

        def body(handle: IO[Any]) -> None:
            handle.write(text)

        errors, bins = self.errors, self.bins
        if errors is None or bins is None:
            return Written(*write_with_manifest(output, body, self.manifest))
        side = Path(output).with_name(Path(output).name + ".intervals.csv")

        def side_body(handle: IO[Any]) -> None:  # post-processing of public scales
            handle.write("degree_lo,degree_hi,count,sd,low,high\n")
            for (lo, hi), v, sd, a, b in zip(bins.tolist(), errors.value.tolist(), errors.sd.tolist(),
                                             errors.low.tolist(), errors.high.tolist()):
                handle.write(f"{int(lo)},{int(hi)},{v:g},{sd:.3f},{a:g},{b:g}\n")

        section = self.manifest.get("uncertainty")
        manifest = {**self.manifest, "uncertainty": {**(section if isinstance(section, dict) else {}),
                                                     "file": side.name}}
        body_path, mpath = write_with_manifest(output, body, manifest, extra=[(side, side_body, "w")])
        return Written(body_path, mpath, (side,))

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> DegreeRelease:
        """A released degree sequence (checked against its manifest; method, theta and model from it)."""
        from ..data.graphs import read_degree_file

        manifest = read_manifest(path)
        check_kind(path, manifest, cls.kind)
        params = manifest.get("parameters")
        params = params if isinstance(params, dict) else {}
        domain = manifest.get("domain")
        domain = domain if isinstance(domain, dict) else {}
        theta = params.get("theta")
        return cls(read_degree_file(path), str(params.get("method", "")), int(theta) if theta is not None else 0,
                   None, manifest, str(domain.get("neighbour_model", "edge-list")))


@dataclass(frozen=True, eq=False)
class GraphRelease:
    """A graph regenerated from a released degree sequence: ``edges`` (m x 2, ``u < v``) over nodes 0..n-1."""

    kind: ClassVar[str] = "degrees"

    edges: np.ndarray
    n_nodes: int
    manifest: Manifest = field(default_factory=dict)

    def degrees(self) -> np.ndarray:
        """The degree of every node on an edge line, in node-id order (what the file says of each node)."""
        if self.edges.size == 0:
            return np.zeros(0, dtype=np.int64)
        return np.unique(self.edges.ravel(), return_counts=True)[1].astype(np.int64)

    def write(self, output: str | os.PathLike[str]) -> Written:
        """One edge ``u v`` per line, and the manifest, as one unit."""
        text = "".join(f"{u} {v}\n" for u, v in self.edges.tolist())

        def body(handle: IO[Any]) -> None:
            handle.write(text)

        return Written(*write_with_manifest(output, body, self.manifest))

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> GraphRelease:
        """A regenerated graph (checked against its manifest); its nodes are the ids on its lines."""
        from ..data.graphs import read_edge_list

        manifest = read_manifest(path)
        check_kind(path, manifest, cls.kind)
        graph = read_edge_list(path)
        return cls(np.asarray(graph.nodes[graph.edges], dtype=np.int64).reshape(-1, 2), graph.n_nodes, manifest)


def read_degrees_release(path: str | os.PathLike[str]) -> DegreeRelease | GraphRelease:
    """The degree release at ``path``: a sequence, or a graph regenerated from one (``degrees-*-graph``)."""
    manifest = read_manifest(path)
    if str(manifest.get("algorithm", "")).endswith("-graph"):
        return GraphRelease.read(path)
    return DegreeRelease.read(path)
