"""Audit cases of RPS (Qardaji & Li, ASIACCS 2012) on tables, and of the node-DP degree sequences (issue 10).

Table pairs (D' = D plus one record): a record that moves the private median of the only splittable
attribute (balanced, a large split share so the medians are sharp); a record in a small leaf of a fixed
partition (the leaf count); a record that takes a region's size across the noisy-count stop threshold; the
same with consistency (inner counts); the median pair with the class split at the root (--class-split
first). Events: the partition (every leaf box), each leaf's count and count
thresholds, the synthetic table's size and its rows as written (contents and order), the manifest.

Degree pairs (node-DP: D' = D plus one node and all its edges): a node joined to theta nodes (the largest
move the projection allows), for each method (rps also with --partitioning fixed and --summarize cumulative). Events: the released sequence as written, its length, each
degree's multiplicity and thresholds of it.
"""

from __future__ import annotations

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
    out += manifest_events({**rel.manifest, "release": rel.facts()})
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
    out += value_events("nodes", deg.size, range(0, 16))
    counts = np.bincount(deg, minlength=rel.theta + 1)
    for k, c in enumerate(counts.tolist()):
        out.append(f"degree {k} x{c}")
        out += [f"degree {k} x>={g}" for g in range(1, 8) if c >= g]
    out += manifest_events(rel.manifest)
    return out


@register_cases("degrees")
def _degree_cases(epsilon: float) -> list[AuditCase]:
    from ...data.graphs import graph_from_edges
    from ...graphs.degrees import release_degrees

    # D: two triangles joined by an edge; D': D plus node 9 joined to nodes 1, 2 and 4 (theta = 3)
    u = [1, 2, 1, 4, 5, 4, 3]
    v = [2, 3, 3, 5, 6, 6, 4]
    d = graph_from_edges(u, v)
    d_prime = graph_from_edges(u + [9, 9, 9], v + [1, 2, 4])

    def runner(method: str, **params):
        def run(graph, noise):
            return release_degrees(graph, 3, epsilon, method=method, noise=noise, **params)
        return run

    settings = (("rps", {}), ("rps-fixed", {"partitioning": "fixed"}), ("rps-summarize-cumulative",
                                                                        {"summarize": "cumulative"}),
                ("hay", {}), ("cumulative", {}))
    return [AuditCase(name=f"degrees/{name}-node-with-theta-edges", d=d, d_prime=d_prime, epsilon=epsilon,
                      run=runner(name.split("-")[0], **kw), events=_degree_events,
                      description=f"{name}: the added node has theta = 3 edges into both triangles")
            for name, kw in settings]
