"""``dprelease diffpart``, ``basic``, ``stats``, ``generate``, ``evaluate counting|topk``."""

from __future__ import annotations

import argparse
import json


from ..data.generators import kosarak_like
from ..data.io import atomic_output, write_transactions
from ..data.universe import Universe
from ..evaluation import evaluate_counting, topk_utility
from ..evaluation.occurrence import occurrence_share
from ..release import write_set_valued_release
from ..setvalued import DEFAULT_C1, DEFAULT_C2, DEFAULT_FANOUT, basic, diffpart
from ..setvalued.diffpart import DEFAULT_BRANCHING_BOUND
from ..setvalued.prefixpart import (
    DEFAULT_BETA, DEFAULT_RECORD_BOUND, DEFAULT_SELECTION_SHARE, DEFAULT_STRUCTURE_SHARE, prefix_diffpart,
)
from ..setvalued.prefixpart import DEFAULT_MAX_ITEMS as DEFAULT_PREFIX_ITEMS
from ..errors import ParameterError
from ..setvalued.basic import DEFAULT_MAX_ITEMS
from .common import (
    add_epsilon, add_output, add_quiet, add_seed, add_universe, load_transactions, noise_from_args,
    positive_int, print_json, report_written, say, timed,
)


# options that configure only the faithful algorithm (default None: "not given")
_FAITHFUL_ONLY = ("fanout", "c1", "c2", "spurious_bound", "branching_bound", "no_branching_guard")
_PREFIX_ONLY = ("selection_share", "structure_share", "record_bound", "max_items", "beta")


def _given(args: argparse.Namespace, names: tuple[str, ...]) -> list[str]:
    return ["--" + n.replace("_", "-") for n in names if getattr(args, n) not in (None, False)]


METHODS = ("prefix", "faithful")
DEFAULT_METHOD = "prefix"


def _run_diffpart(args: argparse.Namespace) -> int:
    other = _given(args, _FAITHFUL_ONLY if args.method == "prefix" else _PREFIX_ONLY)
    if other:
        wanted = "faithful" if args.method == "prefix" else "prefix"
        raise ParameterError(f"{', '.join(other)} only appl{'ies' if len(other) == 1 else 'y'} to --method {wanted}; "
                             f"add --method {wanted} (this run uses --method {args.method})")
    with timed(args, "read"):
        db, universe = load_transactions(args.input, args.universe, args)
    noise = noise_from_args(args)
    with timed(args, f"diffpart ({args.method})"):
        if args.method == "prefix":
            kw = {k: getattr(args, k) for k in _PREFIX_ONLY if getattr(args, k) is not None}
            release = prefix_diffpart(db, universe, args.epsilon, noise=noise, **kw)
        else:
            release = diffpart(db, universe, args.epsilon, noise=noise,
                               fanout=DEFAULT_FANOUT if args.fanout is None else args.fanout,
                               c1=DEFAULT_C1 if args.c1 is None else args.c1,
                               c2=DEFAULT_C2 if args.c2 is None else args.c2,
                               spurious_bound=args.spurious_bound,
                               branching_bound=None if args.no_branching_guard else
                               (DEFAULT_BRANCHING_BOUND if args.branching_bound is None else args.branching_bound),
                               progress=not args.quiet)
    with timed(args, "write"):
        paths = write_set_valued_release(release, args.output)
    report_written(args, *paths)
    return 0


def _run_basic(args: argparse.Namespace) -> int:
    db, universe = load_transactions(args.input, args.universe, args)
    with timed(args, "basic"):
        release = basic(db, universe, args.epsilon, noise=noise_from_args(args), max_items=args.max_items)
    paths = write_set_valued_release(release, args.output)
    report_written(args, *paths)
    return 0


def _run_stats(args: argparse.Namespace) -> int:
    db, universe = load_transactions(args.input, args.universe, args)
    lengths = db.lengths
    facts: dict[str, object] = {
        "N": db.n_records,
        "items": universe.size,
        "items_occurring": int((db.item_supports() > 0).sum()),
        "avg_length": float(lengths.mean()),
        "max_length": int(lengths.max()),
    }
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
    db = kosarak_like(args.records, args.items, args.mean_length, seed=args.seed)
    universe = Universe.from_range(1, args.items)
    with atomic_output(args.output) as fh:
        write_transactions(fh, db, universe)
    say(args, f"generated {db.n_records:,} records over {args.items:,} items "
              f"(mean length {db.lengths.mean():.2f}); universe: --universe 1..{args.items}")
    print(args.output)
    return 0


def _run_eval_counting(args: argparse.Namespace) -> int:
    raw, universe = load_transactions(args.raw, args.universe, args)
    released, _ = _released(args, universe)
    result = evaluate_counting(raw, released, n_queries=args.queries, seed=args.seed)
    result["occurrence"] = occurrence_share(raw, released)
    _emit(args, result)
    return 0


def _released(args: argparse.Namespace, universe: Universe):
    from ..data.io import read_transactions

    return read_transactions(args.released, universe)


def _run_eval_topk(args: argparse.Namespace) -> int:
    raw, universe = load_transactions(args.raw, args.universe, args)
    released, _ = _released(args, universe)
    _emit(args, {"k": args.k, "utility": topk_utility(raw, released, args.k),
                 "occurrence": occurrence_share(raw, released)})
    return 0


def _emit(args: argparse.Namespace, result: dict) -> None:
    if args.json:
        print_json(result)
    else:
        print(json.dumps(result, indent=2))


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("diffpart", help="publish set-valued data with DiffPart",
                       description="Publish a transaction file under epsilon-DP with DiffPart (Chen et al., PVLDB 2011): "
                                   "by default its prefix variant, which also works on basket data whose records "
                                   "are rarely repeated (docs/diffpart.md); --method faithful runs the paper's "
                                   "algorithm.")
    p.add_argument("input", metavar="INPUT", help="transaction file: one record per line, items separated by spaces")
    add_output(p)
    add_epsilon(p)
    p.add_argument("--method", choices=METHODS, default=DEFAULT_METHOD,
                   help=f"prefix: partition over a private frequency-ordered item prefix hierarchy and release "
                        f"generalized records (default {DEFAULT_METHOD}); faithful: the paper's Algorithm 1 "
                        "(releases nothing on universes of thousands of items)")
    g = p.add_argument_group("--method prefix")
    g.add_argument("--selection-share", type=float, default=None, metavar="X",
                   help=f"share of epsilon for the noisy item supports that order the items and select the frequent "
                        f"ones (default {DEFAULT_SELECTION_SHARE})")
    g.add_argument("--structure-share", type=float, default=None, metavar="X",
                   help=f"share of epsilon for the PrivTree decisions that build the prefix hierarchy "
                        f"(default {DEFAULT_STRUCTURE_SHARE}); the rest goes to the released counts")
    g.add_argument("--record-bound", type=positive_int, default=None, metavar="L",
                   help=f"a record adds min(1, L/|t|) to each of its items' supports, so L bounds its influence "
                        f"(default {DEFAULT_RECORD_BOUND})")
    g.add_argument("--max-items", type=positive_int, default=None, metavar="M",
                   help=f"at most M items (the most frequent, by noisy support) form the hierarchy; records keep "
                        f"only these (default and maximum {DEFAULT_PREFIX_ITEMS})")
    g.add_argument("--beta", type=float, default=None, metavar="X",
                   help=f"PrivTree's beta (> 1): an empty cell is kept with probability <= 1/(2X); larger X needs "
                        f"more records per level (default {DEFAULT_BETA:g})")
    g = p.add_argument_group("--method faithful")
    g.add_argument("--fanout", type=int, default=None, metavar="F",
                   help=f"fan-out of the context-free taxonomy (default {DEFAULT_FANOUT}, as in the paper's experiments)")
    g.add_argument("--c1", type=float, default=None, metavar="X",
                   help=f"leaf threshold constant: keep a leaf if its noisy count >= sqrt(2)*C1/budget (default {DEFAULT_C1})")
    g.add_argument("--c2", type=float, default=None, metavar="Y",
                   help=f"partition threshold constant: expand if noisy size >= sqrt(2)*C2*height/alpha (default {DEFAULT_C2})")
    g.add_argument("--spurious-bound", type=float, default=None, metavar="X",
                   help="improvement, off by default (faithful): raise every threshold so that at most X empty "
                        "combinations are expected to pass per partition operation (10 is a good value; "
                        "see docs/diffpart.md)")
    g.add_argument("--branching-bound", type=float, default=None, metavar="X",
                   help="termination guard: where sub-partitions partition again, at most X empty ones are "
                        f"expected to pass (default {DEFAULT_BRANCHING_BOUND}; the paper's thresholds can make "
                        "the number of empty partitions explode, e.g. on mushroom)")
    g.add_argument("--no-branching-guard", action="store_true",
                   help="the paper's thresholds exactly (may not terminate on universes with many height-1 nodes)")
    add_universe(p)
    add_seed(p)
    add_quiet(p)
    p.set_defaults(handler=_run_diffpart)

    p = sub.add_parser("basic", help="the Basic baseline: a noisy count for every possible record",
                       description="Publish with Basic: noisy counts of all 2^|I|-1 itemsets (small universes only).")
    p.add_argument("input", metavar="INPUT")
    add_output(p)
    add_epsilon(p)
    p.add_argument("--max-items", type=positive_int, default=DEFAULT_MAX_ITEMS, help="refuse larger universes")
    add_universe(p)
    add_seed(p)
    add_quiet(p)
    p.set_defaults(handler=_run_basic)

    p = sub.add_parser("stats", help="non-private facts of a transaction file, for the custodian",
                       description="Exact (non-private) statistics: never publish them.")
    p.add_argument("input", metavar="INPUT")
    add_universe(p)
    p.add_argument("--json", action="store_true")
    add_quiet(p)
    for hook in STATS_OPTIONS:
        hook(p)
    p.set_defaults(handler=_run_stats)

    p = sub.add_parser("generate", help="generate a kosarak-scale synthetic transaction file",
                       description="Generate a sparse long-tail transaction file (Zipf-like item popularity).")
    p.add_argument("output", metavar="OUTPUT")
    p.add_argument("--records", type=positive_int, default=1_000_000)
    p.add_argument("--items", type=positive_int, default=41_270)
    p.add_argument("--mean-length", type=float, default=8.0)
    p.add_argument("--seed", type=int, default=0)
    add_quiet(p)
    p.set_defaults(handler=_run_generate)


# Other modules append callables (parser) -> None to add options to `stats`.
STATS_OPTIONS: list = []


def register_evaluate(kinds: argparse._SubParsersAction) -> None:
    p = kinds.add_parser("counting", help="relative error of the counting-query workload (DiffPart sec. 5.1)")
    p.add_argument("raw", metavar="RAW")
    p.add_argument("released", metavar="RELEASED")
    p.add_argument("--queries", type=positive_int, default=50_000)
    p.add_argument("--seed", type=int, default=0, help="seed of the random query workload")
    add_universe(p)
    p.add_argument("--json", action="store_true")
    add_quiet(p)
    p.set_defaults(handler=_run_eval_counting)

    p = kinds.add_parser("topk", help="top-K frequent itemset utility (DiffPart appendix E)")
    p.add_argument("raw", metavar="RAW")
    p.add_argument("released", metavar="RELEASED")
    p.add_argument("-k", type=positive_int, required=True)
    add_universe(p)
    p.add_argument("--json", action="store_true")
    add_quiet(p)
    p.set_defaults(handler=_run_eval_topk)


def _floats(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from None


def _ints(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated whole numbers, got {text!r}") from None


def _run_experiment_diffpart(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ..data.universe import parse_universe_spec
    from ..experiments.diffpart import DiffPartExperiment, run_diffpart_experiment

    cfg = DiffPartExperiment(
        dataset=Path(args.dataset), universe=parse_universe_spec(args.universe) if args.universe else None,
        out_dir=Path(args.out), budgets=args.budgets, ks=args.ks, runs=args.runs, fanout=args.fanout,
        c1=args.c1, c2=args.c2, queries=args.queries, seed=args.seed, with_basic=not args.no_basic,
        spurious_bound=args.spurious_bound, with_prefix=not args.no_prefix, with_faithful=not args.no_faithful,
    )
    summary = run_diffpart_experiment(cfg, log=lambda m: say(args, m))
    if args.json:
        print_json(summary)
    else:
        print(f"results: {cfg.out_dir}")
    return 0


def register_experiment(kinds: argparse._SubParsersAction) -> None:
    p = kinds.add_parser("diffpart", help="DiffPart Figures 3 and 8: relative error and top-K utility vs B",
                         description="Reproduce DiffPart's Figure 3 (vs Basic) and Figure 8 for the faithful algorithm "
                                     "and DiffPart-Prefix; writes CSV + PNG and methods_summary.csv (error, top-K "
                                     "utility and the share of released records that occur in the data).")
    p.add_argument("--dataset", required=True, help="transaction file (e.g. ../shared/datasets/msnbc/msnbc.dat)")
    add_universe(p)
    p.add_argument("--out", default="results/diffpart", help="output folder (default results/diffpart)")
    p.add_argument("--budgets", type=_floats, default=(0.5, 0.75, 1.0, 1.25), help="comma-separated B values")
    p.add_argument("--ks", type=_ints, default=tuple(range(10, 101, 10)), help="comma-separated K values")
    p.add_argument("--runs", type=positive_int, default=5)
    p.add_argument("--fanout", type=int, default=DEFAULT_FANOUT)
    p.add_argument("--c1", type=float, default=None, help=f"default {DEFAULT_C1}")
    p.add_argument("--c2", type=float, default=None, help=f"default {DEFAULT_C2}")
    p.add_argument("--queries", type=positive_int, default=50_000)
    p.add_argument("--seed", type=int, default=0, help="base seed (experiment mode)")
    p.add_argument("--no-basic", action="store_true", help="skip the Basic baseline")
    p.add_argument("--no-prefix", action="store_true",
                   help="skip DiffPart-Prefix (the default method of `dprelease diffpart`; run by default)")
    p.add_argument("--no-faithful", action="store_true", help="skip the faithful DiffPart (run by default)")
    p.add_argument("--spurious-bound", type=float, default=None,
                   help="also run DiffPart with this spurious-combination bound (the improvement) beside the faithful one")
    p.add_argument("--json", action="store_true")
    add_quiet(p)
    p.set_defaults(handler=_run_experiment_diffpart)
