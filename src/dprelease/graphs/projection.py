"""Projection onto maximum degree theta by edge addition (Day, Li and Lyu, SIGMOD 2016, section 4).

Edges are visited in a fixed order that does not depend on the data: every node gets a public priority (a
keyed 64-bit hash of its id, the key drawn from the noise source), and edge {u, v} is keyed by its endpoints'
priorities, smaller first. An edge is kept when both endpoints still have projected degree < theta. The order
is *stable*: removing a node leaves the relative order of every other edge unchanged.

Sensitivity (docs/rps.md, "Degree sequences"): let G' = G minus node x. Compare the two runs edge by edge. An
edge not touching x that only one run keeps has an endpoint that is full (degree theta) in the other run and
not in this one, so keeping it lowers that endpoint's difference by one and raises the other's by at most one:
sum over v != x of |deg_G(v) - deg_G'(v)| never grows, except at the kept edges {x, u}, each of which adds at
most one. Hence sum_{v != x} |deg_G(v) - deg_G'(v)| <= deg_G(x) <= theta, for any input graph and any theta;
tests/graphs/test_rps_degrees.py checks it by brute force. Isolated nodes take no part in the projection, so the same
holds when G' is read from an edge file without x's lines, in which x's friends with no other edge vanish
(counted there at degree 0): the file-level neighbour of docs/rps.md.
"""

from __future__ import annotations

import numpy as np

from ..data.graphs import Graph

__all__ = ["node_priority", "edge_order", "edge_addition"]

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


def node_priority(ids: np.ndarray, key: int) -> np.ndarray:
    """A public pseudo-random priority of every node id: splitmix64(id xor key) (a function of the id only)."""
    with np.errstate(over="ignore"):
        z = (np.asarray(ids, dtype=np.int64).view(np.uint64) ^ np.uint64(key & 0xFFFFFFFFFFFFFFFF))
        z = z + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * _M1
        z = (z ^ (z >> np.uint64(27))) * _M2
        return z ^ (z >> np.uint64(31))


def edge_order(graph: Graph, key: int) -> np.ndarray:
    """Edge indices in the stable public order: by (smaller endpoint priority, larger endpoint priority)."""
    pri = node_priority(graph.nodes, key)
    pu, pv = pri[graph.edges[:, 0]], pri[graph.edges[:, 1]]
    first, second = np.minimum(pu, pv), np.maximum(pu, pv)
    return np.lexsort((second, first))


def edge_addition(graph: Graph, theta: int, key: int) -> tuple[np.ndarray, np.ndarray]:
    """The projected graph G_theta: (mask of kept edges, projected degree of every node), max degree <= theta."""
    theta = int(theta)
    order = edge_order(graph, key)
    deg = [0] * graph.n_nodes
    keep = np.zeros(graph.n_edges, dtype=bool)
    us = graph.edges[order, 0].tolist()
    vs = graph.edges[order, 1].tolist()
    kept = []
    for i, (u, v) in enumerate(zip(us, vs)):
        if deg[u] < theta and deg[v] < theta:
            deg[u] += 1
            deg[v] += 1
            kept.append(i)
    keep[order[np.asarray(kept, dtype=np.int64)]] = True
    return keep, np.asarray(deg, dtype=np.int64)
