"""A graph from a released degree sequence (post-processing), so that a user gets a graph, not only numbers."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..errors import ParameterError
from ..release import build_manifest, epsilon_notes
from ..release.degrees import DegreeRelease, GraphRelease

if TYPE_CHECKING:
    from ..privacy import NoiseSource

__all__ = ["GRAPH_MODELS", "regenerate_graph", "regenerated_graph"]

GRAPH_MODELS = ("configuration", "havel-hakimi")


def regenerate_graph(degrees: np.ndarray, rng: np.random.Generator, model: str = "configuration") -> np.ndarray:
    """Edges (u < v, sorted) of a simple graph on nodes 0..n-1 whose degrees follow ``degrees`` (node i gets the
    i-th degree of the sorted sequence).

    ``configuration``: networkx's configuration model (random stubs matching), then self-loops and repeated
    edges dropped (degrees can fall slightly). ``havel-hakimi``: the deterministic Havel-Hakimi graph when the
    sequence is graphical (else the configuration model). An odd degree sum loses one stub at the largest degree.
    """
    import networkx as nx

    if model not in GRAPH_MODELS:
        raise ParameterError(f"--graph-model must be one of {GRAPH_MODELS}, got {model!r}")
    seq = np.sort(np.asarray(degrees, dtype=np.int64)).copy()
    if seq.size and seq.sum() % 2:
        seq[-1] -= 1
    seq_list = [int(x) for x in seq]
    if model == "havel-hakimi" and nx.is_graphical(seq_list):
        g = nx.havel_hakimi_graph(seq_list)
    else:
        multi = nx.configuration_model(seq_list, seed=int(rng.integers(2**31 - 1)))
        g = nx.Graph(multi)
        g.remove_edges_from(list(nx.selfloop_edges(g)))
    edges = np.asarray([(min(u, v), max(u, v)) for u, v in g.edges()], dtype=np.int64).reshape(-1, 2)
    if edges.size:
        edges = edges[np.lexsort((edges[:, 1], edges[:, 0]))]
    return edges


def regenerated_graph(rel: DegreeRelease, model: str, noise: NoiseSource, derived_from: str) -> GraphRelease:
    """A graph regenerated from the degree release ``rel`` (post-processing; the generator's seed is drawn from
    ``noise``), with its manifest: ``rel``'s parameters, domain, budget and notes, and the file it derives from."""
    seed = noise.integers(2**62, 2)
    edges = regenerate_graph(rel.degrees, np.random.Generator(np.random.PCG64([int(s) for s in seed])), model)
    m = rel.manifest
    eps = m.get("epsilon")
    notes = [n for n in m.get("notes") or [] if n not in epsilon_notes(eps)]
    manifest = build_manifest(
        f"degrees-{rel.method}-graph", epsilon=eps, parameters={**m["parameters"], "graph_model": model}, noise=noise,
        accountant=rel.accountant, domain=m["domain"],
        release={"nodes": rel.n_nodes, "edges": int(edges.shape[0]), "derived_from": derived_from,
                 "format": "one edge 'u v' per line, nodes 0..n-1 in the sorted degree order"},
        budget_split=m["budget_split"], notes=notes + ["graph regenerated from the released sequence (post-processing)"],
        privacy_unit="node", neighbours=rel.details.get("neighbours"))
    return GraphRelease(edges, rel.n_nodes, manifest)
