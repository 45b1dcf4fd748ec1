"""A graph from a released degree sequence (post-processing), so that a user gets a graph, not only numbers."""

from __future__ import annotations

import numpy as np

from ..errors import ParameterError

__all__ = ["GRAPH_MODELS", "regenerate_graph"]

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
