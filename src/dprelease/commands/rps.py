"""``dprelease rps``, ``mondrian``, ``degrees``, ``evaluate ranges|degrees``, ``experiment rps|rps-classification``.

pandas, pyarrow, scipy and networkx are imported inside the handlers, so that ``dprelease --help`` and the
set-valued commands start without them.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..api import graphs as api_graphs
from ..api import tables as api_tables
from ..errors import ParameterError
from .common import (
    share_or_zero,
    FAITHFUL, RECOMMENDED, cli_reporter, add_method, add_engine, add_epsilon, add_ledger, add_limits, add_output, add_quiet, add_seed, epsilon_arg, noise_from_args,
    positive_int,
    prepare_output, print_json, release_cost, say, seed_arg, timed,
)

__all__ = ["register", "register_evaluate", "register_experiment"]

# == dprelease.relational.rps / dprelease.graphs constants (checked in tests/commands/test_rps_cli.py)
DEFAULT_DEPTH = 10
DEFAULT_SPLIT_SHARE = 0.3
PARTITIONINGS = ("balanced", "fixed")
CLASS_SPLITS = ("first", "last")
DEFAULT_CLASS_SPLIT = "last"
DEGREE_METHODS = ("rps", "hay", "cumulative")  # == dprelease.graphs.degrees.DEGREE_METHODS
# `degrees --method`: recommended (the default) is Day et al.'s cumulative summary on geometric leaves, faithful
# the paper's RPS, rps RPS with the cumulative summary; hay and cumulative are the baselines of Hay et al. and
# Day et al.
DEGREES_METHOD_NAMES = (RECOMMENDED, FAITHFUL, *DEGREE_METHODS)
DEGREE_SUMMARIES = ("counts", "cumulative")
GRAPH_MODELS = ("configuration", "havel-hakimi")



def _nonneg_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, got {value}")
    return value


def _finite(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def _table_inputs(args: argparse.Namespace) -> list[str]:
    table = Path(args.table)
    inputs = [str(table), args.schema]
    if table.is_dir():
        inputs += [str(table / n) for n in ("adult.data", "adult.test")]
    return inputs


def _report(written) -> None:
    print(f"release: {written.body}")
    print(f"manifest: {written.manifest}")


# -- rps ------------------------------------------------------------------------------------------------
# the options of the paper's RPS tree, and the method they select: the Python API's (dprelease.api.tables)
PAPER_OPTIONS = api_tables.PAPER_OPTIONS
_paper_options = api_tables.paper_options
_rps_method = api_tables.rps_method


def _rps_checks(args: argparse.Namespace):
    """The public checks of ``rps`` (parameters, output, work bound; :func:`dprelease.api.tables.rps_checks`),
    also run before a ledger reservation; returns the schema."""
    return api_tables.rps_checks(args, lambda: prepare_output(args, args.output, inputs=_table_inputs(args)))


def _run_rps(args: argparse.Namespace) -> int:
    options = _paper_options(args)
    _rps_checks(args)  # refused on public grounds before the note (the run repeats them)
    if args.method != FAITHFUL and options:
        say(args, f"note: {', '.join(options)} configure the paper's RPS tree: running it (as --method faithful "
                  f"does) instead of the default, guided RPS")
    release = api_tables.release_rps(args, lambda _schema: args.table, cli_reporter(args),
                                     lambda: prepare_output(args, args.output, inputs=_table_inputs(args)))
    with timed(args, "write"):
        _report(release.write(args.output))
    return 0


def _run_mondrian(args: argparse.Namespace) -> int:
    from ..data.table import load_schema, read_table
    from ..relational.mondrian import mondrian_release

    prepare_output(args, args.output, inputs=_table_inputs(args))
    schema = load_schema(args.schema)
    table = read_table(args.table, schema)
    print("warning: Mondrian publishes a k-anonymous table built from EXACT data: it is NOT differentially private",
          file=sys.stderr)
    with timed(args, "mondrian"):
        release = mondrian_release(table, args.k, noise=noise_from_args(args))
    _report(release.write(args.output))
    return 0


# -- degrees ------------------------------------------------------------------------------------------------
def _degree_inputs(args: argparse.Namespace) -> list[str]:
    return [args.graph] + ([args.nodes] if getattr(args, "nodes", None) else [])


def _prepare_degrees(args: argparse.Namespace) -> None:
    """The outputs of ``degrees`` (-o, --graph-out), checked before any work."""
    prepare_output(args, args.output, inputs=_degree_inputs(args))
    if args.graph_out:
        prepare_output(args, args.graph_out, inputs=_degree_inputs(args) + [args.output], option="--graph-out")
        if Path(args.graph_out).resolve() == Path(args.output).resolve():
            raise ParameterError("--graph-out must differ from -o")


def _degrees_checks(args: argparse.Namespace) -> str | None:
    """The public checks of ``degrees`` (:func:`dprelease.api.graphs.degrees_checks`, with the outputs), also run
    before a ledger reservation; returns the depth warning, if any."""
    return api_graphs.degrees_checks(args, lambda: _prepare_degrees(args))


def _run_degrees(args: argparse.Namespace) -> int:
    from ..data.graphs import read_edge_list
    from ..graphs.regenerate import regenerated_graph

    noise = noise_from_args(args)  # the regenerated graph draws from the same source, after the release
    rel = api_graphs.release_degrees(args, lambda: read_edge_list(args.graph, nodes=args.nodes), cli_reporter(args),
                                     lambda: _prepare_degrees(args), noise=noise)
    _report(rel.write(args.output))
    if args.graph_out:
        graph_release = regenerated_graph(rel, args.graph_model, noise, derived_from=Path(args.output).name)
        written = graph_release.write(args.graph_out)
        print(f"graph: {written.body}")
        print(f"graph manifest: {written.manifest}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    _register_rps(sub)
    _register_mondrian(sub)
    _register_degrees(sub)


def _register_rps(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("rps", help="publish a synthetic table with RPS (epsilon-DP)",
                       description="Recursive partitioning and summarization (Qardaji & Li, ASIACCS 2012). Default "
                                   "(guided RPS): noisy 1-D marginals, a partition split where they halve the mass "
                                   "and stopped by PrivTree, noisy leaf counts, values drawn from the marginals inside "
                                   "each leaf. --method faithful (or any of --depth, --split-share, --partitioning, "
                                   "--stop-threshold, --class-split, --consistency): the paper's tree of depth h, "
                                   "private medians (or midpoints), values uniform inside the leaves. The class is "
                                   "optional in the schema.")
    p.add_argument("table", metavar="TABLE", help="CSV (header row unless the schema lists 'columns') or Parquet; "
                                                   "a directory holding adult.data/adult.test reads Adult")
    p.add_argument("--schema", required=True, metavar="SCHEMA",
                   help="YAML/JSON schema (required): attributes, taxonomies, public bounds, and a class (optional "
                        "here; as for diffgen)")
    add_epsilon(p)
    add_output(p)
    p.add_argument("--depth", "-H", type=_nonneg_int, default=None, metavar="H",
                   help=f"the paper's RPS: maximum depth h of the partition tree (default {DEFAULT_DEPTH}; at most "
                        f"2^h regions)")
    p.add_argument("--split-share", type=share_or_zero, default=None, metavar="A",
                   help=f"share alpha of epsilon for partitioning, split evenly over the h levels (default "
                        f"{DEFAULT_SPLIT_SHARE} for balanced, 0 for fixed); the rest goes to the leaf counts")
    p.add_argument("--partitioning", choices=PARTITIONINGS, default=None,
                   help="the paper's RPS: balanced: private medians by the exponential mechanism (default); fixed: "
                        "midpoints, no budget")
    p.add_argument("--stop-threshold", type=_finite, default=None, metavar="C",
                   help="optional noisy-count stop: a region whose noisy size (paid from its level's budget) is "
                        "below C becomes a leaf (default: off, stop at depth h or at a single cell)")
    p.add_argument("--class-split", choices=CLASS_SPLITS, default=None,
                   help="the paper's RPS: where the class is split: at the last level of every region, so each final box keeps "
                        "its per-class counts (default, last), or at the root (first)")
    p.add_argument("--consistency", action="store_true",
                   help="improvement: also count every level and make the leaf counts consistent with them "
                        "(constrained inference, Hay et al. VLDB 2010) before synthesizing (default: off; not with "
                        "--method faithful)")
    add_method(p, (RECOMMENDED, FAITHFUL),
               help_text="recommended (the default): guided RPS (noisy marginals, PrivTree-stopped partition, "
                         "values drawn from the marginals); faithful: RPS as the paper describes it, with the "
                         "readings of docs/rps.md (balanced medians, the class split last), which refuses the "
                         "improvements beyond the paper (--consistency)")
    add_engine(p)
    add_seed(p)
    add_limits(p)
    add_quiet(p)
    add_ledger(p, release_cost(_table_inputs, checks=_rps_checks))
    p.set_defaults(handler=_run_rps)


def _register_mondrian(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("mondrian", help="Mondrian k-anonymity baseline (NOT differentially private)",
                       description="Mondrian multidimensional k-anonymity (LeFevre et al., ICDE 2006), published as "
                                   "a synthetic table: each record keeps its class and draws its predictors uniformly "
                                   "in its group's bounding box. NOT differentially private.")
    p.add_argument("table", metavar="TABLE", help="CSV or Parquet table, or the Adult directory")
    p.add_argument("--schema", required=True, metavar="SCHEMA", help="YAML/JSON schema (as for diffgen; required)")
    p.add_argument("-k", type=positive_int, required=True, metavar="K",
                   help="anonymity threshold k: every group holds at least k records (required)")
    add_output(p)
    p.add_argument("--seed", type=seed_arg, default=None, metavar="S",
                   help="seed of the uniform expansion (default: random); recorded in the manifest")
    add_method(p, (FAITHFUL, RECOMMENDED), default=FAITHFUL,
               help_text="faithful (the default), the only method: Mondrian as LeFevre et al. define it (a k-anonymity baseline, "
                         "not DP); recommended names it too")
    add_quiet(p)
    p.set_defaults(handler=_run_mondrian)


def _register_degrees(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("degrees", help="publish a graph's degree sequence under node-DP",
                       description="Project the graph onto maximum degree theta (edge addition, Day et al. 2016), "
                                   "then release its degree sequence under node differential privacy with RPS, "
                                   "Hay et al.'s sorted sequence, or Day et al.'s theta-cumulative histogram. "
                                   "Neighbours differ in one node and all its lines in the files read: from an edge "
                                   "file alone (edge-list model) the degrees of the nodes of projected degree >= 1 "
                                   "are released; with --nodes (declared-nodes model) every listed node's. The "
                                   "manifest states the model (privacy_unit, privacy.neighbours, domain.neighbour_model).")
    p.add_argument("graph", metavar="GRAPH", help="edge list: two integer node ids per line (SNAP format)")
    p.add_argument("--nodes", metavar="FILE", default=None,
                   help="the complete node list, one integer id per line (isolated nodes included; every edge must "
                        "name listed nodes): the node set is declared, a neighbour removes one listed node and its "
                        "edges, and nodes of degree 0 are released too. Default: none; the nodes are the ids of "
                        "GRAPH, and only nodes of projected degree >= 1 are released (a node's removal also "
                        "removes its friends that have no other edge)")
    add_epsilon(p)
    p.add_argument("--theta", type=positive_int, required=True, metavar="T",
                   help="public degree bound theta: the graph is projected onto max degree theta (higher degrees "
                        "are cut, never refused; required)")
    add_output(p)
    add_method(p, DEGREES_METHOD_NAMES,
               help_text="recommended (the default): Day et al.'s cumulative counts on geometric degree ranges "
                         "(single degrees up to 32, then about 1/16 of their lower end wide, 1/32 above theta = "
                         "64; less noise at large "
                         "theta, docs/rps.md); faithful: RPS (Qardaji and Li, ASIACCS 2012) on the degree domain as "
                         "the paper describes it, a noisy count per range; rps: RPS with cumulative counts at the "
                         "range ends (--summarize); hay: Hay et al.'s sorted sequence + isotonic regression (ICDM "
                         "2009); cumulative: Day et al.'s theta-cumulative histogram (SIGMOD 2016)")
    p.add_argument("--depth", "-H", type=_nonneg_int, default=None, metavar="H",
                   help="rps only: depth of the tree over the degrees, 1..theta (0..theta with --nodes); default "
                        "ceil(log2(number of degrees)), where fixed midpoints reach single degrees. Deeper warns; "
                        "deeper than the number of degrees minus one is refused")
    p.add_argument("--split-share", type=share_or_zero, default=None, metavar="A",
                   help=f"rps only: share of epsilon for the medians (default {DEFAULT_SPLIT_SHARE}, balanced)")
    p.add_argument("--partitioning", choices=PARTITIONINGS, default=None,
                   help="rps only: balanced (default) or fixed")
    p.add_argument("--summarize", choices=DEGREE_SUMMARIES, default=None,
                   help="rps only: how the final degree ranges are counted: counts (faithful's; a noisy count per "
                        "range, sensitivity 2 theta + 1) or cumulative (the default of --method rps; improvement: "
                        "noisy cumulative counts at the range ends, sensitivity theta + 1, made monotone)")
    p.add_argument("--graph-out", metavar="EDGES", default=None,
                   help="also write a graph regenerated from the released sequence (one edge per line) and its "
                        "manifest (default: no graph)")
    p.add_argument("--graph-model", choices=GRAPH_MODELS, default="configuration",
                   help="model for --graph-out: configuration (default) or havel-hakimi")
    add_seed(p)
    add_limits(p)
    add_quiet(p)
    add_ledger(p, release_cost(_degree_inputs, checks=_degrees_checks),
               help_text="the graph's privacy-budget ledger (made by `dprelease ledger init`): this release's "
                         "epsilon is reserved there before the graph is read, and refused when too little remains. "
                         "Default: $DPRELEASE_LEDGER when set, else no ledger")
    p.set_defaults(handler=_run_degrees)


# -- evaluate -----------------------------------------------------------------------------------------------
def _run_eval_ranges(args: argparse.Namespace) -> int:
    from ..data.table import load_schema, read_table
    from ..evaluation.ranges import evaluate_ranges, make_range_workload, read_released
    from ..evaluation.ranges import table_data
    from ..relational.rps import table_domain
    from ..release.files import manifest_path

    from .. import limits

    limits.check_queries(f"evaluate ranges --queries {args.queries}", args.queries)  # before the tables are read
    schema = load_schema(args.schema, require_class=False)
    released = read_released(args.released, schema)  # checked against its manifest before the raw table is read
    raw_table = read_table(args.raw, schema)
    raw = table_data(raw_table)
    domain = table_domain(schema)
    workload = make_range_workload(domain, args.queries, seed=args.seed)
    result = evaluate_ranges(raw, released, workload, domain=domain)  # with the empty and uniform tables beside it
    from ..evaluation.coverage import table_coverage
    from ..release.table import read_table_release

    back = read_table_release(args.released, schema) if manifest_path(args.released).exists() else None
    coverage = table_coverage(raw_table, back, args.queries, args.seed) if back is not None else None
    if coverage is not None:  # true values inside the published 95 % intervals
        result["coverage"] = coverage
    print_json(result) if args.json else print(json.dumps(result, indent=2))
    return 0


def _run_eval_degrees(args: argparse.Namespace) -> int:
    from ..data.graphs import read_edge_list
    from ..evaluation.degrees import degree_metrics
    from ..release.degrees import DegreeRelease, read_degrees_release

    release = read_degrees_release(args.released)  # a sequence, or a graph regenerated from one
    domain = release.manifest.get("domain") if isinstance(release.manifest.get("domain"), dict) else {}
    nodes = args.nodes
    if nodes is None and domain.get("node_list") and Path(str(domain["node_list"])).is_file():
        nodes = str(domain["node_list"])  # the release declared its nodes: compare with every one of them
    true = read_edge_list(args.graph, nodes=nodes).degrees()
    released = release.degrees if isinstance(release, DegreeRelease) else release.degrees()
    result = degree_metrics(true, released)
    if isinstance(release, DegreeRelease) and release.intervals() is not None:
        from ..evaluation.coverage import degree_bins_coverage, degree_ranks_coverage

        # true values inside the published 95 % intervals (exact where theta >= the largest degree)
        measure = degree_ranks_coverage if release.bins is None else degree_bins_coverage
        result["coverage"] = measure(true, release)
    print_json(result) if args.json else print(json.dumps(result, indent=2))
    return 0


def register_evaluate(kinds: argparse._SubParsersAction) -> None:
    p = kinds.add_parser("ranges", help="relative error of random range-count queries on a released table",
                         description="Random range-count queries over the schema's public domain (1..min(D, 8) "
                                     "constrained attributes); relative error with the sanity bound 0.1% of |RAW|, "
                                     "beside two data-independent baselines (an empty table; |RAW| records uniform "
                                     "over the domain) and split by the true answer's size. "
                                     "RELEASED may hold generalized values (taxonomy nodes, [lo-hi) intervals) and a "
                                     "count column (spread uniformly). Beside the release's errors (key baselines): "
                                     "those of an empty table and of a uniform table over the schema's domain "
                                     "(|RAW| records), which never looked at the data.")
    p.add_argument("raw", metavar="RAW", help="the raw table (CSV/Parquet, or the Adult directory)")
    p.add_argument("released", metavar="RELEASED", help="the released table (CSV or Parquet)")
    p.add_argument("--schema", required=True, metavar="SCHEMA", help="the schema both tables follow (required)")
    p.add_argument("--queries", type=positive_int, default=10_000, metavar="N",
                   help="number of queries (default 10000), split evenly by number of constrained attributes")
    p.add_argument("--seed", type=seed_arg, default=0, metavar="S", help="seed of the random workload (default 0)")
    p.add_argument("--json", action="store_true", help="one JSON object on stdout")
    add_quiet(p)
    p.set_defaults(handler=_run_eval_ranges)

    p = kinds.add_parser("degrees", help="KS, L1 and EMD of a released degree sequence against the graph",
                         description="Compare a released degree sequence (one degree per line) with the true degrees "
                                     "of GRAPH: Kolmogorov-Smirnov and L1 distances of the normalised histograms, and "
                                     "the Earth Mover's distance of the sequences.")
    p.add_argument("graph", metavar="GRAPH", help="the raw edge list")
    p.add_argument("released", metavar="RELEASED",
                   help="released degree sequence, one degree per line, or a graph regenerated from one "
                        "(degrees --graph-out), with its manifest")
    p.add_argument("--nodes", metavar="FILE", default=None,
                   help="the declared node list (isolated nodes count at degree 0); default: the node list the "
                        "release's manifest names, if it exists here, else the ids of GRAPH")
    p.add_argument("--json", action="store_true", help="one JSON object on stdout")
    add_quiet(p)
    p.set_defaults(handler=_run_eval_degrees)


# -- experiments ----------------------------------------------------------------------------------------------
def _run_rps_classification(args: argparse.Namespace) -> int:
    from .. import limits
    from ..data.table import load_schema, read_table
    from ..experiments import rps as exp

    settings = len(args.epsilon) * len(args.depth) * (1 + len(args.mondrian or []))
    limits.check_runs(f"experiment rps-classification --runs {args.runs}", args.runs, settings)
    from .. import examples

    schema = load_schema(args.schema or examples.path("adult-schema.yaml"))
    table = read_table(args.data, schema)
    with timed(args, "experiment"):
        rows = exp.classification_runs(table, epsilons=args.epsilon, depths=args.depth, runs=args.runs,
                                       seed=args.seed, partitionings=[args.partitioning],
                                       split_share=args.split_share, mondrian_ks=args.mondrian or [], jobs=args.jobs)
    summary = exp.summarize_classification(rows)
    main = [s for s in summary if str(s["method"]).startswith("rps")]
    if args.json and len(main) == 1:
        s = main[0]
        print_json({"baseline_accuracy": s["baseline_accuracy"], "accuracy": s["accuracy"],
                    "lower_bound_accuracy": s["lower_bound_accuracy"], "runs": s["runs"], "stdev": s["stdev"],
                    **({"others": [o for o in summary if o is not s]} if len(summary) > 1 else {})})
    elif args.json:
        print_json(summary)
    else:
        for s in summary:
            print(json.dumps({k: (round(v, 4) if isinstance(v, float) else v) for k, v in s.items()}))
    return 0


def _run_rps_experiments(args: argparse.Namespace) -> int:
    from ..experiments import rps as exp

    parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    bad = [p for p in parts if p not in ("e1", "e2", "e3")]
    if bad:
        raise ParameterError(f"--parts: unknown part(s) {bad} (choose from e1, e2, e3)")
    out = Path(args.out)
    names = {"e1": ["e1_range_counts.csv", "e1_range_counts.png"],
             "e2": ["e2_classification_runs.csv", "e2_classification_summary.csv", "e2_classification.png",
                    "e2_range_counts.csv"],
             "e3": ["e3_degrees.csv", "e3_degrees.png"]}
    for part in parts:  # experiments replace their own files in --out, never an input
        for name in names[part]:
            prepare_output(args, out / name, inputs=[args.adult, args.graphs], option="--out",
                           may_replace=lambda _p: True, make_parents=True)
    cfg = exp.ExperimentConfig(out=out, adult=Path(args.adult), graphs=Path(args.graphs), runs=args.runs,
                               seed=args.seed, quick=args.quick, jobs=args.jobs)
    for part in parts:
        with timed(args, part):
            written = {"e1": exp.run_e1, "e2": exp.run_e2, "e3": exp.run_e3}[part](cfg, log=lambda m: say(args, m))
        for path in written:
            print(path)
    return 0


def register_experiment(kinds: argparse._SubParsersAction) -> None:
    p = kinds.add_parser("rps-classification", help="RPS on Adult: BA/CA/LA as DiffGen's section 5 protocol",
                         description="Random 2/3-1/3 splits; RPS on the train split; the DiffGen classifier trained on "
                                     "the synthetic table and scored on the raw test split; BA and LA as for diffgen.")
    p.add_argument("--data", required=True, metavar="DIR", help="the Adult directory (adult.data + adult.test) or a table (required)")
    p.add_argument("--schema", default=None,
                   help="table schema (default: the bundled Adult schema, examples/adult-schema.yaml)")
    p.add_argument("--epsilon", "-e", type=epsilon_arg, nargs="+", required=True, metavar="E",
                   help="privacy budget(s) epsilon (required)")
    p.add_argument("--depth", "-H", type=_nonneg_int, nargs="+", required=True, metavar="H", help="tree depth(s) h (required)")
    p.add_argument("--runs", type=positive_int, default=10, help="number of random splits (default 10)")
    p.add_argument("--seed", type=seed_arg, default=0, help="seed of the splits and the seeded noise (default 0)")
    p.add_argument("--partitioning", choices=PARTITIONINGS, default="balanced", help="balanced (default) or fixed")
    p.add_argument("--split-share", type=share_or_zero, default=None, metavar="A",
                   help=f"partitioning share alpha (default {DEFAULT_SPLIT_SHARE} balanced, 0 fixed)")
    p.add_argument("--mondrian", type=positive_int, nargs="*", default=None, metavar="K",
                   help="also run Mondrian (NOT DP) with these k on the same splits (default: none)")
    p.add_argument("--jobs", type=positive_int, default=1, help="worker processes over runs (default 1)")
    p.add_argument("--json", action="store_true",
                   help="print {baseline_accuracy, accuracy, lower_bound_accuracy, runs, stdev} (one setting)")
    add_quiet(p)
    p.set_defaults(handler=_run_rps_classification)

    p = kinds.add_parser("rps", help="RPS experiments E1-E3 (synthetic, Adult, degrees): CSV + PNG",
                         description="E1: range-count error on synthetic d-dimensional data (balanced vs fixed vs a "
                                     "flat histogram); E2: Adult classification and range counts against Mondrian and "
                                     "DiffGen; E3: degree sequences of three graphs against Hay and theta-cumulative.")
    p.add_argument("--out", required=True, metavar="DIR", help="output folder for the CSV and PNG files (required)")
    p.add_argument("--parts", default="e1,e2,e3", help="comma-separated parts to run (default e1,e2,e3)")
    p.add_argument("--adult", default="../shared/datasets/adult", help="Adult directory (default ../shared/datasets/adult)")
    p.add_argument("--graphs", default="../shared/datasets/graphs",
                   help="folder with ca-grqc.txt, ca-hepth.txt, facebook.txt (default ../shared/datasets/graphs)")
    p.add_argument("--runs", type=positive_int, default=None,
                   help="runs per setting (default: 2 for E1, 5 for E2, 20 for E3)")
    p.add_argument("--seed", type=seed_arg, default=0, help="base seed (experiment mode; default 0)")
    p.add_argument("--quick", action="store_true", help="a small grid (smoke test), not the full reproduction")
    p.add_argument("--jobs", type=positive_int, default=1, help="worker processes (default 1)")
    add_quiet(p)
    p.set_defaults(handler=_run_rps_experiments)

