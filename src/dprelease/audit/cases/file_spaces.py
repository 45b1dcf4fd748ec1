"""Search spaces (``dprelease audit ALGORITHM --search``) of the algorithms whose built-in cases live in modules
kept with their algorithms (RPS on tables and the degree sequences: :mod:`.rps`; the streams: :mod:`.stream`,
:mod:`.stream_parallel`). Their events reuse those modules' event maps where the grids fit searched pairs.

* ``rps``: CSV tables (one numeric attribute on [0, 8), two classes); the neighbour is one row.
* ``rps-guided``: the same tables, and one attribute on [0, 128) (a PrivTree marginal).
* ``degrees``: edge lists, alone or with a node list (``--nodes``); the neighbour is one node with all its
  incident edges, as the files express it (with an edge list alone a friend in no other edge is not in D's
  file; with a node list it stays, declared). :func:`degrees_space` takes the release, so a test can search a
  deliberately broken one (the old release, :func:`dprelease.audit.cases.rps.release_node_set_from_edges`).
* ``stream`` (paper accounting, each append epsilon, U + 1 appends) and ``stream-parallel`` (parallel
  accounting, each append epsilon): three batch files read as ``stream append`` reads them, the stream in
  memory (prefix trie, the default, or the TBP-tree); the neighbour is one line of one batch, or one person's
  lines across batches where the stream protects a person (paper accounting; parallel accounting with
  ``--privacy-unit person --max-batches-per-person 2``), claim epsilon per line.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from ..events import manifest_events, set_valued_events, value_events
from ..search import SearchSpace, register_space

_RPS_SCHEMA = {"class": {"name": "y", "values": ["0", "1"]},
               "attributes": [{"name": "a", "type": "numeric", "bounds": [0, 8], "integer": True}]}


@register_space("rps")
def _rps_space(epsilon: float) -> list[SearchSpace]:
    from ...data.table import parse_schema
    from ...relational.rps import rps
    from ..spaces import table_space
    from .rps import _rps_events

    schema = parse_schema(_RPS_SCHEMA, "audit schema")
    configs = [{"depth": 2, "split_share": 0.8}, {"depth": 3, "partitioning": "fixed"},
               {"depth": 3, "split_share": 0.6, "stop_threshold": 3.5},
               {"depth": 3, "split_share": 0.5, "consistency": True},
               {"depth": 2, "split_share": 0.8, "class_split": "first"}, {}]

    def release(table, noise, cfg):
        return rps(table, epsilon, noise=noise, **{k: v for k, v in cfg.items() if not k.startswith("_")})

    return [table_space("rps", schema, configs, release, lambda d, dp, cfg: _rps_events, claim=epsilon,
                        max_base=30, min_base=2)]


@register_space("rps-guided")
def _rps_guided_space(epsilon: float) -> list[SearchSpace]:
    """Guided RPS (the default of ``dprelease rps``) on the same CSV tables, and on a wide attribute (a PrivTree
    marginal); the schema without a class is covered by the built-in cases."""
    from ...data.table import parse_schema
    from ...relational.rps_guided import rps_guided
    from ..spaces import table_space
    from .rps import _rps_events

    def release(table, noise, cfg):
        return rps_guided(table, epsilon, noise=noise)

    wide = {**_RPS_SCHEMA, "attributes": [{"name": "a", "type": "numeric", "bounds": [0, 128], "integer": True}]}
    return [table_space("rps-guided", parse_schema(spec, "audit schema"), [{}], release,
                        lambda d, dp, cfg: _rps_events, claim=epsilon, max_base=30, min_base=2, name=name)
            for spec, name in ((_RPS_SCHEMA, "rps-guided"), (wide, "rps-guided-wide"))]


# --- degrees -----------------------------------------------------------------------------------------------------

DEGREE_SETTINGS = (("rps", {}), ("rps", {"partitioning": "fixed"}), ("rps", {"summarize": "cumulative"}),
                   ("hay", {}), ("cumulative", {}))


def degree_search_events(edges_d: list, edges_dp: list, cfg: dict) -> Callable[[Any], list[str]]:
    """Events of a released degree sequence for a searched pair: the sequence, its length on a grid around the
    two node counts the files hold, each degree's multiplicity with thresholds, the manifest."""
    n_d = len({x for e in edges_d for x in e})
    n_dp = len({x for e in edges_dp for x in e})
    grid = range(max(0, min(n_d, n_dp) - 6), max(n_d, n_dp) + 8)

    def events(rel) -> list[str]:
        deg = np.asarray(rel.degrees, dtype=np.int64)
        out = ["sequence " + ",".join(str(int(d)) for d in deg.tolist())]
        out += value_events("nodes", deg.size, grid)
        counts = np.bincount(deg, minlength=rel.theta + 1)
        for k, c in enumerate(counts.tolist()):
            out.append(f"degree {k} x{c}")
            out += [f"degree {k} x>={g}" for g in range(1, 12) if c >= g]
        out += manifest_events(rel.details)  # the method's own facts (leaves, sensitivities, projection)
        return out

    return events


def command_release(files: Any, theta: int, epsilon: float, *, method: str, noise: Any, **params: Any) -> Any:
    """What ``dprelease degrees [--nodes FILE]`` releases: the files read by the command's reader (each text from
    a scratch file, :func:`dprelease.audit.files.edge_files_reader`), the neighbour model from the input."""
    from ...graphs.degrees import release_degrees

    return release_degrees(_graph_reader()(files), theta, epsilon, method=method, noise=noise, **params)


@functools.lru_cache(maxsize=1)
def _graph_reader() -> Callable[[Any], Any]:
    from ..files import edge_files_reader

    return edge_files_reader()


def degrees_space(epsilon: float, *, release: Callable[..., Any] | None = None) -> SearchSpace:
    """The degrees search space. ``release(files, theta, epsilon, *, method, noise, **params)`` (default
    :func:`command_release`; :func:`dprelease.audit.cases.rps.release_node_set_from_edges`, the old release, for
    the power test) gets the pair's :class:`~dprelease.audit.files.EdgeFiles`."""
    from ..spaces import graph_space

    run = release or command_release
    configs = [{"theta": t, "method": m, "nodes": nodes, **kw} for nodes in (False, True) for t in (2, 3, 4)
               for m, kw in DEGREE_SETTINGS]

    def rel(files, noise, cfg):
        params = {k: v for k, v in cfg.items() if k not in ("theta", "method", "nodes") and not k.startswith("_")}
        return run(files, cfg["theta"], epsilon, method=cfg["method"], noise=noise, **params)

    return graph_space("degrees", configs, rel, degree_search_events, claim=epsilon)


@register_space("degrees")
def _degrees_space(epsilon: float) -> list[SearchSpace]:
    return [degrees_space(epsilon)]


# --- streams -----------------------------------------------------------------------------------------------------

_UPDATES = 2  # three batch files


def _stream_release(reads: list, noise: Any, cfg: dict, total: float) -> list:
    """The stream in memory as ``stream init`` + one ``stream append`` per batch file builds it: the prefix trie
    (``--partitioning prefix``, the default) or the TBP-tree (``tdpart``); the release after every append, and for
    the TBP-tree its node list (the state file's tables)."""
    from ...setvalued.incprefix import PrefixStream
    from ...setvalued.inctdpart import TBPTree

    universe = reads[0][1]
    unit = {k: cfg[k] for k in ("privacy_unit", "max_batches_per_person") if k in cfg}
    if cfg["partitioning"] == "prefix":
        stream: Any = PrefixStream(universe.size, total, cfg["batches"] - 1, accounting=cfg["accounting"],
                                   refine=cfg.get("refine", False), **unit)
    else:
        params = {k: v for k, v in cfg.items() if k in ("fanout", "c1", "c2", "new_cells", "routing")}
        stream = TBPTree(universe.size, total, cfg["batches"] - 1, accounting=cfg["accounting"], **params, **unit)
    out = []
    for db, _ in reads:
        stream.append(db, noise)
        rel = stream.release(universe, {"mode": noise.mode})
        nodes = ([(nd.id, nd.parent, nd.mask, " ".join(map(str, nd.cut)), int(nd.leaf), nd.created,
                   stream.node_class(nd), nd.psum, nd.n) for nd in stream.nodes] if cfg["partitioning"] == "tdpart"
                 else [])
        out.append((rel, nodes))
    return out


def _stream_search_events(batches_d: list, batches_dp: list, cfg: dict) -> Callable[[Any], list[str]]:
    from ..spaces import supports
    from .stream import _state_events

    top = max((c for b in batches_dp for c in supports(b).values()), default=0)
    grid = range(0, min(top, 60) + 6)

    def events(out) -> list[str]:
        evs: list[str] = []
        for j, (rel, nodes) in enumerate(out):
            p = f"a{j}: "
            evs += set_valued_events(rel.itemsets, rel.counts, grid=grid, prefix=p)
            evs += manifest_events(rel.manifest, prefix=p)
            if nodes:
                evs += _state_events(nodes, [], p)
        return evs

    return events


def _stream_configs(accounting: str, units: list[dict]) -> list[dict]:
    base = {"batches": _UPDATES + 1, "n_items": 4, "accounting": accounting}
    shapes = [{"partitioning": "prefix"}, {"partitioning": "prefix", "refine": True},
              {"partitioning": "tdpart", "fanout": 4, "c1": 0.5, "c2": 0.5, "new_cells": "every-visit"},
              {"partitioning": "tdpart", "fanout": 2, "c1": 1.5, "c2": 1.5},
              {"partitioning": "tdpart", "fanout": 2, "c1": 1.0, "c2": 1.0, "routing": "free"}]
    return [{**base, **shape, **unit} for unit in units for shape in shapes]


@register_space("stream")
def _stream_space(epsilon: float) -> list[SearchSpace]:
    from ..spaces import stream_space

    # paper accounting: each append spends total / (U + 1) = epsilon, and the unit is a person (their lines in
    # any batches): the claim is epsilon per line the person has
    total = epsilon * (_UPDATES + 1)
    return [stream_space("stream", _stream_configs("paper", [{"_person": True}]),
                         lambda reads, noise, cfg: _stream_release(reads, noise, cfg, total), _stream_search_events,
                         claim_per_batch=epsilon)]


@register_space("stream-parallel")
def _stream_parallel_space(epsilon: float) -> list[SearchSpace]:
    from ..spaces import stream_space

    # parallel accounting: every append spends epsilon on its own batch. --privacy-unit record: the neighbour is
    # one line of one batch; --privacy-unit person --max-batches-per-person 2: a person's lines in at most 2
    # batches (claim epsilon per line)
    units = [{"privacy_unit": "record"},
             {"privacy_unit": "person", "max_batches_per_person": 2, "_person": True, "_max_batches": 2}]
    return [stream_space("stream-parallel", _stream_configs("parallel", units),
                         lambda reads, noise, cfg: _stream_release(reads, noise, cfg, epsilon),
                         _stream_search_events, claim_per_batch=epsilon)]
