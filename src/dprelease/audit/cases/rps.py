"""Audit cases of RPS (Qardaji & Li, ASIACCS 2012) on tables, and of the node-DP degree sequences.

Table pairs (D' = D plus one record): a record that moves the private median of the only splittable
attribute (balanced, a large split share so the medians are sharp); a record in a small leaf of a fixed
partition (the leaf count); a record that takes a region's size across the noisy-count stop threshold; the
same with consistency (inner counts); the median pair with the class split at the root (--class-split
first). Events: the partition (every leaf box), each leaf's count and count
thresholds, the synthetic table's size and its rows as written (contents and order), the manifest.

Degree pairs, defined on the *files* ``dprelease degrees`` reads (:class:`GraphFiles`: the edge file's text and,
with ``--nodes``, the node list's text) and read by the command's own reader (:func:`read_graph_files`), so
that the reader's idea of the node set is audited too. D' = D plus one node and all its lines; for each method
(rps also with --partitioning fixed and --summarize cumulative):

* ``degrees/<method>-node-with-theta-edges``: an edge file; the added node is joined to theta = 3 nodes of D
  (the largest move the projection allows among nodes that stay);
* ``degrees/<method>-hub-with-leaf-friends``: an edge file; the added node is joined to 30 new leaf nodes, which
  occur in D' only: removing the node's lines removes its friends too (they vanish from D);
* ``degrees/<method>-declared-hub-with-leaf-friends``: the same with a node list (``--nodes``): the leaves are
  declared in both, isolated in D;
* ``degrees/{rps,cumulative}-one-edge-or-none``: D' is the one-edge file ``1 2``, D its neighbour at node 1, a file
  with no edge (node 2 vanishes too): the reader must not refuse the empty input.

Events: the released sequence as written, its length, each degree's multiplicity and thresholds of it.

Power: :func:`release_node_set_from_edges` is the old, broken release (the edge file's ids taken as a declared
node set, with the node-DP sensitivities that hold only when the friends stay); ``degree_file_cases(eps,
release=release_node_set_from_edges)`` gives the same pairs for it, and tests/audit/test_rps_audit.py checks that the
audit flags it. :func:`file_neighbour` and :func:`degree_file_case` build a pair from any edge file (for a search).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from ..core import AuditCase, register_cases
from ..events import manifest_events, value_events


def _rps_events(rel) -> list[str]:
    part = rel.partition
    boxes = [",".join(f"{a:g}-{b:g}" for a, b in zip(lo, hi)) for lo, hi in zip(part.lo, part.hi)]
    out = ["leaves " + ";".join(boxes), f"leaves={part.n_leaves}"]
    for box, c in zip(boxes, part.counts.tolist()):
        out.append(f"leaf {box} count={c}")
        out += [f"leaf {box} count>={g}" for g in range(0, 7) if c >= g]
    cols = [rel.table.y] + list(rel.table.columns)
    rows = ["|".join(f"{float(c[i]):g}" for c in cols) for i in range(rel.table.n_records)]
    out.append("table " + ";".join(rows))
    out += value_events("records", rel.n_records, range(0, 30, 2))
    out += manifest_events({"parameters": rel.manifest["parameters"], "budget_split": rel.manifest["budget_split"],
                            "release": rel.facts()})
    return out


def _table(values: list[int], domain: int = 8):
    import numpy as np

    from ...data.table import EncodedTable, parse_schema

    schema = parse_schema({"class": {"name": "y", "values": ["0", "1"]},
                           "attributes": [{"name": "a", "type": "numeric", "bounds": [0, domain], "integer": True}]},
                          "audit schema")
    return EncodedTable(schema, (np.asarray(values, dtype=np.float64),), np.zeros(len(values), dtype=np.int64))


@register_cases("rps")
def _rps_cases(epsilon: float) -> list[AuditCase]:
    from ...relational.rps import rps

    def runner(**params):
        def run(table, noise):
            return rps(table, epsilon, noise=noise, **params)
        return run

    base = [1, 1, 2, 5, 5, 6]
    return [
        AuditCase(name="rps/record-moves-the-median", d=_table(base), d_prime=_table(base + [2]), epsilon=epsilon,
                  run=runner(depth=2, split_share=0.8), events=_rps_events,
                  description="one attribute [0, 8), depth 2 (class, then a), split share 0.8: the added record "
                              "shifts the median between the two value clusters"),
        AuditCase(name="rps/fixed-leaf-count", d=_table(base), d_prime=_table(base + [7]), epsilon=epsilon,
                  run=runner(depth=3, partitioning="fixed"), events=_rps_events,
                  description="fixed midpoints, depth 3: the record lands in the empty leaf [6, 8)"),
        AuditCase(name="rps/noisy-stop-threshold", d=_table(base), d_prime=_table(base + [6]), epsilon=epsilon,
                  run=runner(depth=3, split_share=0.6, stop_threshold=3.5), events=_rps_events,
                  description="noisy-count stop at 3.5: the record takes the region [4, 8) from 3 to 4 records"),
        AuditCase(name="rps/consistency", d=_table(base), d_prime=_table(base + [0]), epsilon=epsilon,
                  run=runner(depth=3, split_share=0.5, consistency=True), events=_rps_events,
                  description="inner counts and constrained inference; the record lands in the low end"),
        AuditCase(name="rps/class-split-first", d=_table(base), d_prime=_table(base + [2]), epsilon=epsilon,
                  run=runner(depth=2, split_share=0.8, class_split="first"), events=_rps_events,
                  description="--class-split first (the class at the root, then a): the added record shifts "
                              "the median between the two value clusters"),
    ]


def _degree_events(rel) -> list[str]:
    import numpy as np

    deg = rel.degrees
    out = ["sequence " + ",".join(str(int(d)) for d in deg.tolist())]
    out += value_events("nodes", deg.size, range(0, 32))
    counts = np.bincount(deg, minlength=rel.theta + 1)
    for k, c in enumerate(counts.tolist()):
        out.append(f"degree {k} x{c}")
        out += [f"degree {k} x>={g}" for g in range(1, 16) if c >= g]
    out += manifest_events(rel.details)  # the method's own facts (leaves, sensitivities, projection)
    return out


@dataclass(frozen=True)
class GraphFiles:
    """What ``dprelease degrees`` reads: the edge file's text, and the node list's text (``--nodes``) or None."""

    edges: str
    nodes: str | None = None


def read_graph_files(files: GraphFiles):
    """The :class:`~dprelease.data.graphs.Graph` the command would build from these files (the same parser:
    ``read_edge_list`` is ``parse_edge_list`` on the file's text)."""
    from ...data.graphs import parse_edge_list, parse_node_list

    nodes = parse_node_list(files.nodes, "nodes.txt") if files.nodes is not None else None
    return parse_edge_list(files.edges, "edges.txt", nodes=nodes, nodes_source="the node list nodes.txt")


def release_from_files(files: GraphFiles, theta: int, epsilon: float, *, method: str, noise, **params):
    """The command's release on these files: read as the command reads, neighbour model from the input."""
    from ...graphs.degrees import release_degrees

    return release_degrees(read_graph_files(files), theta, epsilon, method=method, noise=noise, **params)


def release_node_set_from_edges(files: GraphFiles, theta: int, epsilon: float, *, method: str, noise, **params):
    """BROKEN on purpose (the audit's power check): the old release, which took the ids of the edge file as the
    node set and used the node-DP sensitivities of a declared node set. Removing a node's lines also removes its
    friends that have no other edge, so the node count and the degree-0 counts move by the node's raw degree."""
    from dataclasses import replace

    from ...graphs.degrees import release_degrees

    graph = read_graph_files(files)
    return release_degrees(replace(graph, declared_nodes=True), theta, epsilon, method=method, noise=noise, **params)


def file_neighbour(files: GraphFiles, node: int) -> GraphFiles:
    """The neighbouring input without ``node``: every line naming it removed from the edge file and the node list
    (friends left with no edge vanish from an edge file alone; a node list keeps them)."""
    def names(line: str) -> bool:
        return any(_NUMERIC.match(t) and int(t) == node for t in line.split())

    def drop(text: str) -> str:
        return "".join(f"{line}\n" for line in text.splitlines() if not names(line))

    return GraphFiles(drop(files.edges), drop(files.nodes) if files.nodes is not None else None)


def degree_file_case(name: str, d: GraphFiles, d_prime: GraphFiles, epsilon: float, method: str, *, theta: int = 3,
                     release: Callable | None = None, description: str = "", **params) -> AuditCase:
    """An audit case of ``dprelease degrees --method method`` on two inputs given as file contents."""
    fn = release or release_from_files

    def run(files: GraphFiles, noise):
        return fn(files, theta, epsilon, method=method, noise=noise, **params)

    return AuditCase(name=name, d=d, d_prime=d_prime, epsilon=epsilon, run=run, events=_degree_events,
                     description=description)


DEGREE_SETTINGS: tuple[tuple[str, str, dict], ...] = (
    ("rps", "rps", {}), ("rps-fixed", "rps", {"partitioning": "fixed"}),
    ("rps-summarize-cumulative", "rps", {"summarize": "cumulative"}), ("hay", "hay", {}),
    ("cumulative", "cumulative", {}))
# D: two triangles joined by an edge (theta = 3)
TRIANGLES = "1 2\n2 3\n1 3\n4 5\n5 6\n4 6\n3 4\n"
LEAVES = tuple(range(100, 130))
_NUMERIC = re.compile(r"^[+-]?\d+$")  # a node id token, as the edge-list reader reads it


def degree_file_cases(epsilon: float, release: Callable | None = None) -> list[AuditCase]:
    """Every built-in degree pair (module docstring), for the command's release or for ``release``."""
    d = GraphFiles(TRIANGLES)
    theta_edges = GraphFiles(TRIANGLES + "9 1\n9 2\n9 4\n")
    hub = GraphFiles(TRIANGLES + "".join(f"9 {leaf}\n" for leaf in LEAVES))
    declared = "".join(f"{i}\n" for i in (1, 2, 3, 4, 5, 6, *LEAVES))
    declared_d = GraphFiles(TRIANGLES, declared)
    declared_hub = GraphFiles(hub.edges, declared + "9\n")
    assert file_neighbour(theta_edges, 9) == d and file_neighbour(hub, 9) == d
    assert file_neighbour(declared_hub, 9) == declared_d
    out = []
    for name, method, kw in DEGREE_SETTINGS:
        out += [
            degree_file_case(f"degrees/{name}-node-with-theta-edges", d, theta_edges, epsilon, method,
                             release=release, description=f"{name}, edge file: the added node has theta = 3 edges "
                                                           "into both triangles", **kw),
            degree_file_case(f"degrees/{name}-hub-with-leaf-friends", d, hub, epsilon, method, release=release,
                             description=f"{name}, edge file: the added node is joined to {len(LEAVES)} new leaves, "
                                         "which vanish with it", **kw),
            degree_file_case(f"degrees/{name}-declared-hub-with-leaf-friends", declared_d, declared_hub, epsilon,
                             method, release=release, description=f"{name}, edge file + node list: the added node "
                                                                  f"is joined to {len(LEAVES)} declared leaves, "
                                                                  "isolated without it", **kw),
        ]
    for name, method, kw in DEGREE_SETTINGS:
        if name in ("rps", "cumulative"):
            out.append(degree_file_case(f"degrees/{name}-one-edge-or-none", GraphFiles("# no edge\n"),
                                        GraphFiles("1 2\n"), epsilon, method, release=release,
                                        description=f"{name}, edge file: one edge, and its neighbour with none",
                                        **kw))
    return out


@register_cases("degrees")
def _degree_cases(epsilon: float) -> list[AuditCase]:
    return degree_file_cases(epsilon)


# -- guided RPS (the default of `dprelease rps`) -------------------------------------------------------------
def _guided_table(values: list[int], *, domain: int = 128, with_class: bool = True, b: bool = True):
    import numpy as np

    from ...data.table import EncodedTable, parse_schema

    attrs = [{"name": "a", "type": "numeric", "bounds": [0, domain], "integer": True}]
    attrs += [{"name": "b", "type": "categorical", "taxonomy": {"Any": ["u", "v", "w"]}}] if b else []
    spec: dict[str, object] = {"attributes": attrs}
    if with_class:
        spec["class"] = {"name": "y", "values": ["0", "1"]}
    schema = parse_schema(spec, "audit schema", require_class=False)
    a = np.asarray(values, dtype=np.float64)
    cols = (a, a.astype(np.int64) % 3) if b else (a,)
    return EncodedTable(schema, cols, (a.astype(np.int64) % 2) * int(with_class))


@register_cases("rps-guided")
def _rps_guided_cases(epsilon: float) -> list[AuditCase]:
    """Guided RPS (noisy marginals: PrivTree cells and counts; a PrivTree-stopped partition split at the
    marginals' halves; leaf counts; values drawn from the marginals). D' = D plus one record."""
    from ...relational.rps_guided import rps_guided

    def run(table, noise):
        return rps_guided(table, epsilon, noise=noise)

    base = [1, 1, 2, 5, 5, 6, 6, 7]
    return [
        AuditCase(name="rps-guided/record-in-an-empty-tail", d=_guided_table(base),
                  d_prime=_guided_table(base + [100]), epsilon=epsilon, run=run, events=_rps_events,
                  description="a in [0, 128) (a PrivTree marginal), b of 3 values, a class: the added record "
                              "lands where the marginal and every region are empty"),
        AuditCase(name="rps-guided/record-in-the-dense-cell", d=_guided_table(base),
                  d_prime=_guided_table(base + [5]), epsilon=epsilon, run=run, events=_rps_events,
                  description="the added record joins the densest cell: the marginal's split decisions, the "
                              "partition's pivots and the leaf counts all move"),
        AuditCase(name="rps-guided/one-value-domain", d=_guided_table([0, 0, 0], domain=1, with_class=False, b=False),
                  d_prime=_guided_table([0, 0, 0, 0], domain=1, with_class=False, b=False), epsilon=epsilon, run=run,
                  events=_rps_events,
                  description="no class and one attribute of one value: nothing to split or learn, so the "
                              "release is one leaf count at the budget the marginals and PrivTree left (0.9 eps); "
                              "the case on which a noise source at half scale must be flagged"),
        AuditCase(name="rps-guided/no-class", d=_guided_table(base, domain=16, with_class=False),
                  d_prime=_guided_table(base + [12], domain=16, with_class=False), epsilon=epsilon, run=run,
                  events=_rps_events,
                  description="a schema without a class (flat marginals of a in [0, 16) and of b)"),
    ]
