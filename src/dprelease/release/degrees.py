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
    # (inclusive) and each count's sd and 95 % interval (public scales); for Hay, whose values are the degrees
    # themselves, one interval per released degree and bins None
    errors: Intervals | None = field(default=None, repr=False)
    bins: np.ndarray | None = field(default=None, repr=False)

    @property
    def n_nodes(self) -> int:
        return int(self.degrees.size)

    def intervals(self) -> Intervals | None:
        """The counts behind the sequence (nodes per degree range, :attr:`bins`) with their 95 % intervals; for
        Hay's release, each released degree's interval (bins None)."""
        return self.errors

    def write(self, output: str | os.PathLike[str]) -> Written:
        """One degree per line, and the manifest, as one unit; the counts behind it, with their error bars, go
        to a companion CSV (``OUTPUT.intervals.csv``) the manifest lists."""
        text = "".join(f"{int(d)}\n" for d in self.degrees.tolist())

        def body(handle: IO[Any]) -> None:
            handle.write(text)

        errors, bins = self.errors, self.bins
        if errors is None:
            return Written(*write_with_manifest(output, body, self.manifest))
        side = Path(output).with_name(Path(output).name + ".intervals.csv")

        def side_body(handle: IO[Any]) -> None:  # post-processing of public scales
            rows = zip(errors.value.tolist(), errors.sd.tolist(), errors.low.tolist(), errors.high.tolist())
            if bins is None:  # one interval per line of the body (Hay's ranks)
                handle.write(",".join(_RANK_COLUMNS) + "\n")
                for line, (v, sd, a, b) in enumerate(rows, start=1):
                    handle.write(f"{line},{v:g},{sd:.3f},{a:g},{b:g}\n")
                return
            handle.write(",".join(_BIN_COLUMNS) + "\n")
            for (lo, hi), (v, sd, a, b) in zip(bins.tolist(), rows):
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
        section = manifest.get("uncertainty")
        errors, bins = None, None
        if isinstance(section, dict) and section.get("file"):
            errors, bins = _read_intervals(Path(path).with_name(str(section["file"])), str(section.get("accounts_for", "")))
        return cls(read_degree_file(path), str(params.get("method", "")), int(theta) if theta is not None else 0,
                   None, manifest, str(domain.get("neighbour_model", "edge-list")), errors=errors, bins=bins)


_BIN_COLUMNS = ("degree_lo", "degree_hi", "count", "sd", "low", "high")
_RANK_COLUMNS = ("line", "degree", "sd", "low", "high")


def _read_intervals(side: Path, label: str) -> tuple[Intervals, np.ndarray | None]:
    """A degree release's companion CSV back as its intervals (and the degree ranges they count, where the
    values are counts of ranges)."""
    import csv

    from ..errors import InputError

    try:
        with open(side, newline="", encoding="utf-8") as handle:
            reader = csv.reader(handle)
            header = tuple(next(reader, ()))
            rows = [[float(x) for x in row] for row in reader]
    except OSError as exc:
        raise InputError(f"{side}: cannot read the release's error bars ({exc.strerror or exc})") from None
    except ValueError:
        raise InputError(f"{side}: a value of the error bars is not a number") from None
    if header not in (_BIN_COLUMNS, _RANK_COLUMNS) or any(len(r) != len(header) for r in rows):
        raise InputError(f"{side}: not a degree release's error-bar file (columns {','.join(_BIN_COLUMNS)} or "
                         f"{','.join(_RANK_COLUMNS)})")
    a = np.asarray(rows, dtype=np.float64).reshape(-1, len(header))
    k = 2 if header == _BIN_COLUMNS else 1
    errors = Intervals(a[:, k], a[:, k + 1], a[:, k + 2], a[:, k + 3], label=label)
    return errors, (a[:, :2].astype(np.int64) if header == _BIN_COLUMNS else None)


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
