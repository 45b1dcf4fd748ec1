"""``dprelease diffpart``, ``basic``, ``stats``, ``generate``, ``evaluate counting|topk``, ``experiment diffpart``."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from .. import limits, progress
from ..api import setvalued as api_setvalued
from ..setvalued.basic import DEFAULT_MAX_ITEMS
from ..setvalued.diffpart import DEFAULT_BRANCHING_BOUND, DEFAULT_C1, DEFAULT_C2, DEFAULT_FANOUT, MAX_FANOUT
from ..setvalued.prefixpart import (
    DEFAULT_BETA, DEFAULT_RECORD_BOUND, DEFAULT_SELECTION_SHARE, DEFAULT_STRUCTURE_SHARE, MAX_PREFIX_ITEMS,
    DEFAULT_SHAPED_STRUCTURE_SHARE, AUTO_LENGTH_SHARE, FILL_PAIR_SHARE,
)
from ..setvalued.prefixpart import DEFAULT_MAX_ITEMS as DEFAULT_PREFIX_ITEMS
from ..errors import ParameterError
from .common import (
    share_or_auto,
    FAITHFUL, RECOMMENDED, add_method, add_engine, add_epsilon, add_force, add_ledger, add_limits, add_output, add_quiet, add_seed, add_universe,
    at_least_one, cli_reporter, epsilon_list, release_cost,
    int_list, load_transactions, positive_float, positive_int, prepare_output, print_json,
    report_written, say, seed_arg, timed, universe_inputs,
)

# the frequent-itemset workload's defaults (constants only: the evaluation module is imported by the handler)
DEFAULT_FREQUENT_SHARE = 0.01  # == dprelease.evaluation.counting.DEFAULT_FREQUENT_SHARE
DEFAULT_FREQUENT_QUERIES = 10_000  # == dprelease.evaluation.counting.DEFAULT_FREQUENT_QUERIES

if TYPE_CHECKING:  # algorithms, evaluation and writers are imported inside the handlers (a light parser)
    from ..data.universe import Universe



def fanout_arg(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if not (2 <= value <= MAX_FANOUT):
        raise argparse.ArgumentTypeError(f"expected a whole number between 2 and {MAX_FANOUT}, got {value}")
    return value


def share_arg(text: str) -> float:
    """A share of N in (0, 1]."""
    value = positive_float(text)
    if value > 1.0:
        raise argparse.ArgumentTypeError(f"expected a share of N in (0, 1], got {text!r}")
    return value


def _declared_universe(spec: str | None) -> Universe | None:
    """The declared universe (public; parsed before any data is read), or None when it will be derived."""
    from ..data.universe import parse_universe_spec

    return parse_universe_spec(spec) if spec else None


def _inputs(args: argparse.Namespace) -> list[str]:
    return [args.input, *universe_inputs(args.universe)]


# the method vocabulary and the checks are the Python API's (dprelease.api.setvalued): one code path
METHODS = api_setvalued.METHODS
DEFAULT_METHOD = api_setvalued.DEFAULT_METHOD


def _read(args: argparse.Namespace):
    return lambda: load_transactions(args.input, args.universe, args)


def _run_diffpart(args: argparse.Namespace) -> int:
    api_setvalued.check_method_options(args)
    prepare_output(args, args.output, inputs=[args.input, *universe_inputs(args.universe)])
    release = api_setvalued.release_diffpart(args, _read(args), cli_reporter(args))
    with timed(args, "write"):
        written = release.write(args.output)
    report_written(args, *written)
    return 0


def _run_basic(args: argparse.Namespace) -> int:
    prepare_output(args, args.output, inputs=[args.input, *universe_inputs(args.universe)])
    release = api_setvalued.release_basic(args, _read(args), cli_reporter(args))
    report_written(args, *release.write(args.output))
    return 0


def _run_stats(args: argparse.Namespace) -> int:
    from ..engine import as_transaction_data

    if getattr(args, "k", None) is not None:  # `stats -k` (commands.itemsets): the exact top k is mined
        limits.check_topk(f"stats -k {args.k}", args.k, released=False)
    db, universe = load_transactions(args.input, args.universe, args)
    with progress.phase("stats"):
        summary = as_transaction_data(db).summary()
    facts: dict[str, object] = {
        "N": summary.n_records,
        "items": universe.size,
        "items_occurring": int((db.item_supports() > 0).sum()),
        "avg_length": summary.n_entries / summary.n_records,
        "max_length": summary.max_length,
    }
    with progress.phase("stats"):
        for extend in STATS_EXTENSIONS:
            facts.update(extend(db, args))
    if args.json:
        print_json(facts)
    else:
        say(args, "non-private statistics, for the custodian only (do not publish):")
        for key, value in facts.items():
            print(f"{key}: {value}")
    return 0


# Other modules append callables (db, args) -> dict to add facts to `stats` (e.g. top-k facts).
STATS_EXTENSIONS: list = []


def _run_generate(args: argparse.Namespace) -> int:
    from ..data.generators import TRANSACTION_SHAPES, write_transaction_shape  # streamed in chunks
    from ..data.io import atomic_output

    _, default_records, default_items, default_mean, _ = TRANSACTION_SHAPES[args.shape]
    if args.shape == "dense-ties" and args.items is not None:
        raise ParameterError(f"--items: --shape dense-ties has a fixed universe of {default_items} items")
    if args.shape != "kosarak" and args.mean_length is not None:
        raise ParameterError(f"--mean-length: applies to --shape kosarak only (--shape {args.shape} has its own "
                             f"length distribution, mean about {default_mean:g})")
    records = default_records if args.records is None else args.records
    items = default_items if args.items is None else args.items
    mean_length = default_mean if args.mean_length is None else args.mean_length
    prepare_output(args, args.output, option="OUTPUT")
    limits.check_generate(records, items, mean_length)
    with atomic_output(args.output, "wb") as fh:
        n_records, items, mean = write_transaction_shape(fh, args.shape, records, items, mean_length, seed=args.seed)
    say(args, f"generated {n_records:,} records over {items:,} items "
              f"(mean length {mean:.2f}); universe: --universe 1..{items}")
    print(args.output)
    return 0


def _run_eval_counting(args: argparse.Namespace) -> int:
    from ..evaluation.counting import evaluate_counting_with_baselines
    from ..release import SetValuedRelease
    from ..evaluation.occurrence import occurrence_share
    from ..evaluation.shape import length_shape

    limits.check_queries(f"evaluate counting --queries {args.queries}", args.queries)
    raw, universe = load_transactions(args.raw, args.universe, args)
    with progress.phase(f"read {Path(args.released).name}"):
        back = SetValuedRelease.read(args.released, universe)
        released = back.to_db()
    with progress.phase("evaluate counting"):
        result = evaluate_counting_with_baselines(raw, released, n_queries=args.queries, seed=args.seed,
                                                  min_share=args.frequent_share)
        result["occurrence"] = occurrence_share(raw, released)
        result["lengths"] = length_shape(raw, released)  # record length distribution against the raw one
        from ..evaluation.coverage import setvalued_coverage

        coverage = setvalued_coverage(raw, back, args.queries, args.seed)  # true values inside the 95 % intervals
        if coverage is not None:
            result["coverage"] = coverage
    if released.n_records == 0:
        result["note"] = "the release is empty: every query answers 0"
    if args.json:
        _emit(args, result)
    else:
        print(_counting_table(result))
    return 0


def _counting_table(result: dict) -> str:
    """``evaluate counting`` in words: the release's mean relative errors beside the two baselines'."""
    base = result["baselines"]
    freq = result["frequent"]
    rows = [("workload", "release", "empty release", "uniform baskets")]
    rows.append((f"random queries ({sum(1 for _ in result['subsets'])} subsets)", result["mean_relative_error"],
                 base["empty"]["mean_relative_error"], base["uniform"]["mean_relative_error"]))
    rows.append((f"frequent itemsets (>= {100 * freq['min_share']:g} % of N, {freq['queries']:,} queries)",
                 freq["mean_relative_error"], base["empty"]["frequent"]["mean_relative_error"],
                 base["uniform"]["frequent"]["mean_relative_error"]))
    for i, sub in enumerate(freq["subsets"]):
        rows.append((f"  {sub['max_length']}-itemsets ({sub['queries']:,})", sub["mean_relative_error"],
                     base["empty"]["frequent"]["subsets"][i]["mean_relative_error"],
                     base["uniform"]["frequent"]["subsets"][i]["mean_relative_error"]))
    width = max(len(r[0]) for r in rows)
    lines = [f"{rows[0][0]:<{width}}  " + "  ".join(f"{h:>15}" for h in rows[0][1:])]
    lines += [f"{r[0]:<{width}}  " + "  ".join(f"{float(v):>15.4f}" for v in r[1:]) for r in rows[1:]]
    occ = result.get("occurrence") or {}
    if occ.get("records_exact") is not None:
        lines.append(f"released records equal to a raw record: {100 * occ['records_exact']:.1f} %; contained in "
                     f"one: {100 * occ['records_contained']:.1f} %")
    shape = result.get("lengths") or {}
    if shape:
        base = shape["baselines"]
        lines.append(f"record lengths: mean {shape['released_mean_length']:.2f} released, {shape['raw_mean_length']:.2f} "
                     f"raw; total variation distance {shape['tv']:.3f} (empty release {base['empty']:.3f}, single "
                     f"items {base['single_items']:.3f}, uniform subsets {base['uniform_subsets']:.3f})")
    lines.append("mean relative error |released - true| / max(true, 0.1 % of N); lower is better")
    if result.get("note"):
        lines.append(str(result["note"]))
    return "\n".join(lines)


def _run_eval_topk(args: argparse.Namespace) -> int:
    from ..evaluation import topk_utility
    from ..release import SetValuedRelease
    from ..evaluation.occurrence import occurrence_share
    from ..evaluation.shape import length_shape

    limits.check_topk(f"evaluate topk -k {args.k}", args.k, released=False)
    raw, universe = load_transactions(args.raw, args.universe, args)
    with progress.phase(f"read {Path(args.released).name}"):
        released = SetValuedRelease.read(args.released, universe).to_db()
    with progress.phase("evaluate topk"):
        result: dict[str, object] = {"k": args.k, "utility": topk_utility(raw, released, args.k),
                                     "occurrence": occurrence_share(raw, released),
                                     "lengths": length_shape(raw, released)}
    if released.n_records == 0:
        result["note"] = "the release is empty: utility 0"
    _emit(args, result)
    return 0


def _emit(args: argparse.Namespace, result: dict) -> None:
    if args.json:
        print_json(result)
    else:
        print(json.dumps(result, indent=2, allow_nan=False))


def _diffpart_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("--method faithful (the paper's Algorithm 1)")
    g.add_argument("--fanout", type=fanout_arg, default=None, metavar="F",
                   help=f"fan-out of the context-free taxonomy, 2..{MAX_FANOUT} (default {DEFAULT_FANOUT}, as in the "
                        "paper's experiments; each expansion tests 2^F - 1 combinations, so large values are "
                        "bounded by --max-output-records)")
    g.add_argument("--c1", type=positive_float, default=None, metavar="X",
                   help=f"leaf threshold constant: keep a leaf if its noisy count >= sqrt(2)*C1/budget (default {DEFAULT_C1})")
    g.add_argument("--c2", type=positive_float, default=None, metavar="Y",
                   help=f"partition threshold constant: expand if noisy size >= sqrt(2)*C2*height/alpha (default {DEFAULT_C2})")
    g.add_argument("--spurious-bound", type=positive_float, default=None, metavar="X",
                   help="improvement, off by default (faithful): raise every threshold so that at most X empty "
                        "combinations are expected to pass per partition operation (10 is a good value; "
                        "see docs/diffpart.md)")
    g.add_argument("--branching-bound", type=positive_float, default=None, metavar="X",
                   help="termination guard: where sub-partitions partition again, at most X (> 0) empty ones are "
                        f"expected to pass (default {DEFAULT_BRANCHING_BOUND}; the paper's thresholds can make "
                        "the number of empty partitions explode, e.g. on mushroom)")
    g.add_argument("--no-branching-guard", action="store_true",
                   help="the paper's thresholds exactly (may not terminate on universes with many height-1 nodes); "
                        "default: off (the guard is on)")


def _prefix_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("--method prefix (DiffPart-Prefix, the default; docs/diffpart.md)")
    g.add_argument("--selection-share", type=positive_float, default=None, metavar="X",
                   help=f"share of epsilon, in (0, 1), for the noisy item supports that order the items and select "
                        f"the frequent ones (default {DEFAULT_SELECTION_SHARE})")
    g.add_argument("--structure-share", type=positive_float, default=None, metavar="X",
                   help=f"share of epsilon, in (0, 1), for the PrivTree decisions that build the prefix hierarchy "
                        f"(default {DEFAULT_STRUCTURE_SHARE}, {DEFAULT_SHAPED_STRUCTURE_SHARE} with a --shape-share "
                        "above 0 or when auto fills; auto without the fill: 0.5/0.85 of what the selection and the "
                        "length histogram leave); the rest goes to the released counts")
    g.add_argument("--shape-share", type=share_or_auto, default=None, metavar="X|auto",
                   help=f"share of epsilon, in [0, 1), for the record length histogram and the supports of the "
                        f"frequent items generalized records drop (half each), from which the records get their "
                        f"dropped items back (basket lengths like the raw ones); 0: the bare generalized records, "
                        f"shorter than the raw ones. Default auto: {AUTO_LENGTH_SHARE} for the length histogram, "
                        f"then the fill (with as much again) only where (noisy mean length / |I|)^2 <= "
                        f"{FILL_PAIR_SHARE}: on sparse baskets, not on dense data where independent draws would "
                        "invent co-occurrences (docs/diffpart.md)")
    g.add_argument("--record-bound", type=positive_int, default=None, metavar="L",
                   help=f"a record adds min(1, L/|t|) to each of its items' supports, so L bounds its influence "
                        f"on the item order (default {DEFAULT_RECORD_BOUND})")
    g.add_argument("--max-items", type=positive_int, default=None, metavar="M",
                   help=f"at most M items, the most frequent by noisy support, form the hierarchy; records keep only "
                        f"these (default {DEFAULT_PREFIX_ITEMS}, maximum {MAX_PREFIX_ITEMS}; more items did not help "
                        f"where measured; 16-32 helped baskets whose items are close to independent, at up to a few "
                        f"hundred thousand records, and cost retail: docs/diffpart.md)")
    g.add_argument("--beta", type=positive_float, default=None, metavar="X",
                   help=f"PrivTree's beta (> 1): an empty cell is kept with probability below 1/X; larger X needs "
                        f"more records per level (default {DEFAULT_BETA:g})")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("diffpart", help="publish set-valued data with DiffPart",
                       description="Publish a transaction file under epsilon-DP with DiffPart (Chen et al., PVLDB "
                                   "2011): by default its prefix variant, which also works on basket data whose "
                                   "records are rarely repeated (docs/diffpart.md); --method faithful runs the "
                                   "paper's algorithm.")
    p.add_argument("input", metavar="INPUT", help="transaction file: one record per line, items separated by spaces")
    add_output(p)
    add_epsilon(p)
    p.add_argument("--method", choices=METHODS, default=None,
                   help=f"prefix (DiffPart-Prefix): partition over a private frequency-ordered item prefix hierarchy "
                        f"and release generalized records; faithful: the paper's Algorithm 1 (releases nothing on "
                        f"universes of thousands of items); recommended: the default, now {DEFAULT_METHOD}. Default "
                        f"{DEFAULT_METHOD}, or faithful when an option of the faithful method (--fanout, --c1, --c2, "
                        f"--spurious-bound, --branching-bound, --no-branching-guard) is given")
    _prefix_options(p)
    p.add_argument("--level-wise", action="store_true",
                   help="grow the partition tree (faithful) or the prefix trie (prefix) one level at a time, one data "
                        "pass per level, summing weighted supports exactly: what --engine spark runs, so a seeded "
                        "release here equals --engine spark's byte for byte (default: off on --engine local, which "
                        "builds in memory: for prefix the same release, for faithful the same distribution in another "
                        "order of draws; always on with --engine spark)")
    _diffpart_options(p)
    add_universe(p)
    add_seed(p)
    add_limits(p)
    add_quiet(p)
    add_ledger(p, release_cost(_inputs, checks=api_setvalued.diffpart_checks))
    add_engine(p)
    p.set_defaults(handler=_run_diffpart)

    p = sub.add_parser("basic", help="the Basic baseline: a noisy count for every possible record",
                       description="Publish with Basic: noisy counts of all 2^|I|-1 itemsets (small universes only).")
    p.add_argument("input", metavar="INPUT", help="transaction file: one record per line, items separated by spaces")
    add_output(p)
    add_epsilon(p)
    add_method(p, (FAITHFUL, RECOMMENDED), default=FAITHFUL,
               help_text="faithful (the default), the only method: Basic as DiffPart's section 4.1 defines it (a baseline; the best "
                         "set-valued releases come from `dprelease diffpart`); recommended names it too")
    p.add_argument("--max-items", type=positive_int, default=DEFAULT_MAX_ITEMS, metavar="N",
                   help=f"refuse universes of more than N items: Basic makes 2^N - 1 noisy counts "
                        f"(default {DEFAULT_MAX_ITEMS}, about a million cells)")
    add_universe(p)
    add_seed(p)
    add_limits(p)
    add_quiet(p)
    add_ledger(p, release_cost(_inputs, checks=api_setvalued.basic_checks))
    add_engine(p)
    p.set_defaults(handler=_run_basic)

    p = sub.add_parser("stats", help="non-private facts of a transaction file, for the custodian",
                       description="Exact (non-private) statistics: never publish them.")
    p.add_argument("input", metavar="INPUT", help="transaction file: one record per line, items separated by spaces")
    add_universe(p, required=False)
    p.add_argument("--json", action="store_true", help="print one JSON object instead of key: value lines")
    add_limits(p)
    add_quiet(p)
    for hook in STATS_OPTIONS:
        hook(p)
    add_engine(p)
    p.set_defaults(handler=_run_stats)

    p = sub.add_parser("generate", help="generate a kosarak-scale synthetic transaction file",
                       description="Generate a synthetic transaction file: by default sparse long-tail data (Zipf-like "
                                   "item popularity, log-normal record lengths, kosarak's shape); --shape picks "
                                   "another shape. It is generated data: label it so.")
    p.add_argument("output", metavar="OUTPUT", help="the transaction file to write (an existing one only with --force)")
    p.add_argument("--shape", choices=("kosarak", "dense-ties", "long-baskets"), default="kosarak",
                   help="kosarak: sparse click-stream (the default); dense-ties: 30 core items in nearly every "
                        "record, so the top itemsets tie within a few records of N (120 items); long-baskets: "
                        "sparse baskets over 5,000 items, mean length about 14 with 10%% of 30-80 items, bundles "
                        "of mid-frequency items (docs/unseen.md)")
    p.add_argument("--records", type=positive_int, default=None, metavar="N",
                   help="number of records (default 1000000 for kosarak, about kosarak's 990,002; 20000 for "
                        "dense-ties; 50000 for long-baskets)")
    p.add_argument("--items", type=positive_int, default=None, metavar="N",
                   help="size of the item universe 1..N (default 41270 for kosarak, kosarak's; 5000 for "
                        "long-baskets; dense-ties has 120, fixed)")
    p.add_argument("--mean-length", type=at_least_one, default=None, metavar="L",
                   help="kosarak only: mean record length, a number >= 1 (default 8.0, kosarak's 8.1)")
    p.add_argument("--seed", type=seed_arg, default=0, metavar="S", help="seed of the generator (default 0)")
    add_force(p)
    add_limits(p)
    add_quiet(p)
    p.set_defaults(handler=_run_generate)


# Other modules append callables (parser) -> None to add options to `stats`.
STATS_OPTIONS: list = []


def register_evaluate(kinds: argparse._SubParsersAction) -> None:
    p = kinds.add_parser("counting", help="relative error of counting queries, beside an empty and a uniform release",
                         description="Mean relative error of random counting queries on a set-valued release "
                                     "(DiffPart section 5.1) and of the frequent itemsets of 1 to 4 items "
                                     "(--frequent-share), each beside the error of two releases that never "
                                     "looked at the data: an empty one (it scores 1 on the frequent itemsets) and "
                                     "uniform random baskets of the raw record sizes. On sparse data most random "
                                     "queries have a true count of 0, so only the frequent workload can tell a "
                                     "release from nothing. Reads the raw data: for the custodian only.")
    p.add_argument("raw", metavar="RAW", help="the raw transaction file")
    p.add_argument("released", metavar="RELEASED", help="a release written by diffpart, basic or stream (with its manifest)")
    p.add_argument("--queries", type=positive_int, default=50_000, metavar="N",
                   help="number of random counting queries, in 5 subsets of growing length (default 50000, as the paper)")
    p.add_argument("--seed", type=seed_arg, default=0, metavar="S",
                   help="seed of the random query workload, of the sample of frequent itemsets and of the "
                        "uniform-baskets baseline (default 0)")
    p.add_argument("--frequent-share", type=share_arg, default=DEFAULT_FREQUENT_SHARE, metavar="X",
                   help="the frequent-itemset workload: itemsets of 1 to 4 items with support >= X * N in the raw "
                        f"data (default {DEFAULT_FREQUENT_SHARE:g}; of each length at most {DEFAULT_FREQUENT_QUERIES // 4:,}, a "
                        "seeded sample beyond)")
    add_universe(p, required=False)
    p.add_argument("--json", action="store_true",
                   help='print one line of JSON {"mean_relative_error": x, "subsets": [...], "frequent": {...}, '
                        '"baselines": {"empty": {...}, "uniform": {...}}, "occurrence": {...}} instead of a table')
    add_limits(p)
    add_quiet(p)
    add_engine(p)
    p.set_defaults(handler=_run_eval_counting)

    p = kinds.add_parser("topk", help="top-K frequent itemset utility (DiffPart appendix E)",
                         description="Top-K frequent itemset utility of a set-valued release (DiffPart appendix E): "
                                     "1 is perfect, 0 for an empty release. Reads the raw data: for the custodian only.")
    p.add_argument("raw", metavar="RAW", help="the raw transaction file")
    p.add_argument("released", metavar="RELEASED", help="a release written by diffpart, basic or stream (with its manifest)")
    p.add_argument("-k", type=positive_int, required=True, metavar="K", help="number of top itemsets compared (required)")
    add_universe(p, required=False)
    p.add_argument("--json", action="store_true", help='print one line {"k": K, "utility": u} instead of indented JSON')
    add_limits(p)
    add_quiet(p)
    add_engine(p)
    p.set_defaults(handler=_run_eval_topk)


def _run_experiment_diffpart(args: argparse.Namespace) -> int:
    from ..experiments.diffpart import DiffPartExperiment, run_diffpart_experiment

    out_dir = Path(args.out)
    inputs = [args.dataset, *universe_inputs(args.universe)]
    for name in _DIFFPART_EXPERIMENT_FILES:  # its own files in --out are replaced; an input never is
        f = out_dir / name
        prepare_output(args, f, inputs=inputs, option="--out", may_replace=lambda _p: True, make_parents=True)
    universe = _declared_universe(args.universe)
    if universe is not None and not args.no_faithful:
        for B in args.budgets:
            limits.check_diffpart(universe.size, args.fanout, B, args.c1 or DEFAULT_C1, None, what="experiment diffpart")
    limits.check_queries(f"experiment diffpart --queries {args.queries}", args.queries)
    limits.check_topk(f"experiment diffpart --ks {max(args.ks)}", max(args.ks), released=False)
    methods = sum((not args.no_faithful, not args.no_prefix, not args.no_basic, args.spurious_bound is not None))
    limits.check_runs(f"experiment diffpart --runs {args.runs}", args.runs, len(args.budgets) * max(1, methods))
    cfg = DiffPartExperiment(
        dataset=Path(args.dataset), universe=universe,
        out_dir=out_dir, budgets=args.budgets, ks=args.ks, runs=args.runs, fanout=args.fanout,
        c1=args.c1, c2=args.c2, queries=args.queries, seed=args.seed, with_basic=not args.no_basic,
        spurious_bound=args.spurious_bound, with_prefix=not args.no_prefix, with_faithful=not args.no_faithful,
    )
    summary = run_diffpart_experiment(cfg, log=lambda m: say(args, m))
    if args.json:
        print_json(summary)
    else:
        print(f"results: {cfg.out_dir}")
    return 0


_DIFFPART_EXPERIMENT_FILES = ("fig3_relative_error.csv", "fig8_topk_utility.csv", "fig3_relative_error.png",
                               "fig8_topk_utility.png", "methods_summary.csv", "summary.json")


def register_experiment(kinds: argparse._SubParsersAction) -> None:
    p = kinds.add_parser("diffpart", help="DiffPart Figures 3 and 8: relative error and top-K utility vs B",
                         description="Reproduce DiffPart's Figure 3 (vs Basic) and Figure 8 for the faithful "
                                     "algorithm and DiffPart-Prefix; writes CSV + PNG and methods_summary.csv (error, "
                                     "top-K utility, share of released records that occur in the data; seeded "
                                     "experiment mode). Replaces its own files in --out.")
    p.add_argument("--dataset", required=True, metavar="FILE",
                   help="transaction file (required; e.g. ../shared/datasets/msnbc/msnbc.dat)")
    add_universe(p, required=False)
    p.add_argument("--out", default="results/diffpart", metavar="DIR", help="output folder (default results/diffpart)")
    p.add_argument("--budgets", type=epsilon_list, default=(0.5, 0.75, 1.0, 1.25), metavar="B,B,...",
                   help="comma-separated total budgets B (default 0.5,0.75,1.0,1.25, as Figure 3)")
    p.add_argument("--ks", type=int_list, default=tuple(range(10, 101, 10)), metavar="K,K,...",
                   help="comma-separated K values > 0 of Figure 8 (default 10,20,...,100)")
    p.add_argument("--runs", type=positive_int, default=5, metavar="N", help="seeded runs per setting (default 5)")
    p.add_argument("--fanout", type=fanout_arg, default=DEFAULT_FANOUT, metavar="F",
                   help=f"DiffPart fan-out, 2..{MAX_FANOUT} (default {DEFAULT_FANOUT})")
    p.add_argument("--c1", type=positive_float, default=None, metavar="X", help=f"leaf threshold constant (default {DEFAULT_C1})")
    p.add_argument("--c2", type=positive_float, default=None, metavar="Y", help=f"partition threshold constant (default {DEFAULT_C2})")
    p.add_argument("--queries", type=positive_int, default=50_000, metavar="N",
                   help="counting queries of the workload (default 50000)")
    p.add_argument("--seed", type=seed_arg, default=0, metavar="S", help="base seed (experiment mode; default 0)")
    p.add_argument("--no-basic", action="store_true", help="skip the Basic baseline; default: off (Basic runs when |I| <= 20)")
    p.add_argument("--no-prefix", action="store_true",
                   help="skip DiffPart-Prefix (the default method of `dprelease diffpart`); default: off (it runs)")
    p.add_argument("--no-faithful", action="store_true", help="skip the faithful DiffPart; default: off (it runs)")
    p.add_argument("--spurious-bound", type=positive_float, default=None, metavar="X",
                   help="also run DiffPart with this spurious-combination bound (the improvement) beside the "
                        "faithful one; default: not run")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON line instead of the folder")
    add_limits(p)
    add_quiet(p)
    p.set_defaults(handler=_run_experiment_diffpart)
