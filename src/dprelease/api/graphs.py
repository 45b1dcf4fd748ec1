"""Degree-sequence releases under node-DP: the checks, work bound and run that ``dprelease degrees`` executes,
and the Python function :func:`degrees` over them.

The privacy unit is one node and all its edges, on the input as given. A networkx graph declares its node set
(isolated nodes included): the declared-nodes model, every node's degree is released, degree 0 included. An edge
file or an edge DataFrame alone is the edge-list model the command line uses for an edge file: the nodes are the
ids that occur, a node's removal also removes its friends that have no other edge, and only nodes of projected
degree >= 1 are released. ``nodes=`` (a node-list file or the ids) declares the node set of an edge list.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .. import limits
from ..errors import ParameterError
from ._core import (
    FAITHFUL, RECOMMENDED, Reporter, api_run, charged, check_epsilon_value, check_inputs_exist, check_method,
    check_seed, options, python_reporter,
)
from .inputs import graph_of, path_of
from .setvalued import _ledger_path

if TYPE_CHECKING:
    from ..data.graphs import Graph
    from ..privacy import NoiseSource
    from ..release.degrees import DegreeRelease
    from .results import Release

__all__ = ["degrees", "degree_model", "degrees_method", "degrees_checks", "release_degrees", "DEGREES_OPTIONS",
           "DEGREES_METHODS"]

DEGREE_METHODS = ("rps", "hay", "cumulative")  # == dprelease.graphs.degrees.DEGREE_METHODS
# recommended (the default) is Day et al.'s cumulative counts on geometric degree ranges; faithful is the paper's
# RPS (a noisy count per leaf); rps is RPS with cumulative counts; hay and cumulative are the baselines of Hay et
# al. and Day et al.
DEGREES_METHODS = (RECOMMENDED, FAITHFUL, *DEGREE_METHODS)
DEGREES_OPTIONS: dict[str, object] = {"depth": None, "split_share": None, "partitioning": None, "summarize": None}


def degree_model(args: argparse.Namespace) -> str:
    """declared-nodes when the node set is declared (a node list, or a networkx graph), else edge-list."""
    from ..graphs.degrees import DECLARED_NODES, EDGE_LIST

    return DECLARED_NODES if getattr(args, "nodes", None) or getattr(args, "declared_nodes", False) else EDGE_LIST


def degrees_method(args: argparse.Namespace) -> str:
    """The degree method --method names: recommended is Day et al.'s cumulative summary on geometric leaves
    (never worse than theta-cumulative on KS and EMD in docs/rps.md's measurements, better at large theta),
    faithful and rps are RPS, hay and cumulative the baselines; --method faithful refuses the improvement beyond
    the paper (--summarize cumulative)."""
    if args.method == FAITHFUL and args.summarize == "cumulative":
        raise ParameterError("--summarize cumulative is an improvement beyond the paper's RPS; it does not go with "
                             "--method faithful")
    if args.method == RECOMMENDED:
        return "cumulative"
    return "rps" if args.method == FAITHFUL else str(args.method)


def degrees_options(args: argparse.Namespace) -> dict[str, object]:
    """The method's own options: the geometric leaves (recommended), the leaf summary of RPS (faithful: a noisy
    count per leaf, as the paper; rps: cumulative counts unless --summarize says otherwise, so that the released
    node count stays close to the true one at large theta)."""
    if args.method == RECOMMENDED:
        return {"leaves": "geometric"}
    if args.method == FAITHFUL:
        return {"summarize": "counts"}
    if args.method == "rps":
        return {"summarize": args.summarize or "cumulative"}
    return {}


def degrees_checks(args: argparse.Namespace, prepare: Callable[[], object] | None = None) -> str | None:
    """The public checks of :func:`release_degrees` (options, the outputs via ``prepare``, work bound), also run
    before a ledger reservation; returns the depth warning, if any."""
    from ..graphs.degrees import check_degree_depth, check_theta, default_degree_depth
    from ..relational.rps import work_estimate

    theta = check_theta(args.theta)
    method = degrees_method(args)
    if method != "rps" and (args.depth is not None or args.split_share is not None or args.partitioning
                            or args.summarize):
        raise ParameterError("--depth, --split-share, --partitioning and --summarize apply to RPS only (--method "
                             "faithful or rps)")
    if prepare is not None:
        prepare()
    warning = None
    if method == "rps":
        model = degree_model(args)
        depth = default_degree_depth(theta, model) if args.depth is None else args.depth
        if args.depth is not None:
            warning = check_degree_depth(theta, depth, model)
        records, memory = work_estimate(1, theta + 1, args.epsilon, depth, args.split_share,
                                        args.partitioning or "balanced")
        # empty degree ranges release noise at sensitivity 2 theta + 1: scale the per-leaf mean accordingly
        limits.check(f"degrees --theta {theta}", records=records * (2 * theta + 1), memory=memory * (2 * theta + 1))
    return warning


def release_degrees(args: argparse.Namespace, read: Callable[[], Graph], reporter: Reporter,
                    prepare: Callable[[], object] | None = None, noise: NoiseSource | None = None) -> DegreeRelease:
    """The degree sequence of the graph ``read`` gives, projected onto max degree theta, under node-DP;
    ``noise``: the source to draw from (by default the one ``args.seed`` names)."""
    from ..graphs.degrees import release_degrees as release
    from ..privacy import make_noise

    warning = degrees_checks(args, prepare)
    if warning:
        reporter.warn(warning)
    method = degrees_method(args)
    with reporter.timed("read"):
        graph = read()
    with reporter.timed(f"degrees ({method})"):
        rps_options: dict[str, Any] = {"depth": args.depth, "split_share": args.split_share,
                                       "partitioning": args.partitioning or "balanced"} if method == "rps" else {}
        return release(graph, args.theta, args.epsilon, method=method, noise=noise or make_noise(args.seed),
                       model=degree_model(args), node_list=args.nodes, **rps_options, **degrees_options(args))


def degrees(graph: object, *, theta: int, epsilon: float, nodes: object = None, method: str | None = None,
            seed: int | None = None, ledger: str | os.PathLike[str] | None = None,
            max_output_records: int | None = None, max_memory: int | str | None = None, **params: Any) -> Release:
    """Publish a graph's degree sequence under node-DP (the graph projected onto max degree ``theta``).

    ``graph``: a networkx graph (its node set is declared), an edge DataFrame (two columns of node ids) or an
    edge-list path; ``nodes``: the declared node list of an edge list (a file or the ids). ``method=None`` (``"recommended"``):
    Day et al.'s cumulative counts on geometric degree ranges; ``"faithful"``: RPS as the paper; ``"rps"``: RPS
    with cumulative counts; ``"hay"`` or ``"cumulative"``: the baselines.
    ``params``: ``depth``, ``split_share``, ``partitioning``, ``summarize``.
    """
    from .results import wrap

    eps = check_epsilon_value(epsilon)
    check_method("degrees", method, DEGREES_METHODS)
    args = options("degrees", DEGREES_OPTIONS, params, epsilon=eps, seed=check_seed(seed),
                   method=method or RECOMMENDED, theta=theta)
    args.nodes = path_of(nodes)
    networkx = hasattr(graph, "nodes") and hasattr(graph, "is_directed")
    args.declared_nodes = bool(networkx or nodes is not None)
    data_path = path_of(graph)

    def checks() -> None:
        check_inputs_exist(data_path, args.nodes)
        degrees_checks(args)

    def read() -> Graph:
        g, _ = graph_of(graph, nodes)
        return g

    with api_run(eps, max_output_records, max_memory):
        release = charged(_ledger_path(ledger), "degrees", eps, checks=checks,
                          run=lambda: release_degrees(args, read, python_reporter))
    return wrap(release, ledger=ledger)
