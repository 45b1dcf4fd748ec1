"""``dprelease stream init|append|status|release``: IncTDPart releases of a growing transaction file."""

from __future__ import annotations

import argparse
import sys

from ..setvalued.inctdpart import ROUTING_RULES, ACCOUNTING_RULES, DEFAULT_C1, DEFAULT_C2, DEFAULT_FANOUT, NEW_CELL_RULES, THETA_RULES
from ..setvalued.stream_state import DEFAULT_WAIT, append_batch, init_state, reemit, stream_status
from .common import add_epsilon, add_quiet, add_seed, add_universe, print_json, say, timed

__all__ = ["register", "register_experiment"]


def _nonneg_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, got {value}")
    return value


def _run_init(args: argparse.Namespace) -> int:
    st = init_state(args.state, epsilon=args.epsilon, updates=args.updates, fanout=args.fanout, c1=args.c1,
                    c2=args.c2, universe_spec=args.universe, seed=args.seed, theta_rule=args.theta_rule,
                    new_cells=args.new_cells, accounting=args.accounting)
    if st.accounting == "parallel":
        limit = "no limit on appends" if st.updates is None else f"at most {st.updates} updates"
        say(args, f"stream state {args.state}: epsilon {st.epsilon:g} on every append's own batch (parallel "
                  f"accounting), {limit}")
    else:
        say(args, f"stream state {args.state}: epsilon {st.epsilon:g} over the initial dataset + {st.updates} "
                  f"updates (epsilon' = {st.epsilon_per_append:.6g} per append)")
    if args.universe is None:
        print("warning: no --universe declared: the first append derives it from its batch, which reveals which "
              "items occur", file=sys.stderr)
    print(args.state)
    return 0


def _run_append(args: argparse.Namespace) -> int:
    with timed(args, "append"):
        info = append_batch(args.state, args.batch, args.output, wait=args.wait)
    for message in info["warnings"]:
        print(f"warning: {message}", file=sys.stderr)
    of = "" if info["updates"] is None else f" of {info['updates'] + 1}"
    say(args, f"append {info['append']}{of}: spent {info['epsilon']:.6g} ({info['accounting']} accounting), "
              f"total {info['epsilon_spent']:.6g}")
    print(f"release: {info['release']}")
    print(f"manifest: {info['manifest']}")
    return 0


def _run_status(args: argparse.Namespace) -> int:
    st = stream_status(args.state)
    if args.json:
        print_json(st.as_json())
    else:
        print(f"epsilon: {st.epsilon:g}")
        print(f"epsilon_spent: {st.epsilon_spent:.6g}")
        print(f"accounting: {st.accounting}")
        print(f"updates: {'no limit' if st.updates is None else st.updates}")
        print(f"appends: {st.appends}" + ("" if st.max_appends is None else f" of {st.max_appends}"))
    return 0


def _run_release(args: argparse.Namespace) -> int:
    info = reemit(args.state, args.output)
    say(args, f"re-emitted the release after append {info['appends'] - 1}; no budget spent")
    print(f"release: {info['release']}")
    print(f"manifest: {info['manifest']}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("stream", help="IncTDPart: incremental set-valued releases with a state file",
                       description="Publish a growing transaction dataset with IncTDPart (Zhang et al. 2013): "
                                   "declare epsilon and the update bound U once, then append batches.")
    ss = p.add_subparsers(dest="stream_command", metavar="ACTION", parser_class=type(p))
    ss.required = True

    q = ss.add_parser("init", help="create a stream state (epsilon, U, taxonomy parameters)")
    q.add_argument("state", metavar="STATE", help="the SQLite state file to create")
    add_epsilon(q)
    q.add_argument("--updates", "-U", type=_nonneg_int, default=None, metavar="U",
                   help="upper bound on updates after the initial dataset: with --accounting paper each append "
                        "spends epsilon/(U+1) (required); with parallel it is only a limit (default: none)")
    q.add_argument("--accounting", choices=ACCOUNTING_RULES, default="paper",
                   help="paper: appends compose sequentially, epsilon/(U+1) each, so a person with one record in "
                        "every batch is protected at epsilon (default); parallel: each append is charged epsilon "
                        "against its own batch only (batches are disjoint records), which protects each record at "
                        "epsilon but not a person contributing to several batches (docs/inctdpart.md)")
    q.add_argument("--fanout", type=int, default=DEFAULT_FANOUT, metavar="F",
                   help=f"fan-out of the item-free taxonomy (default {DEFAULT_FANOUT})")
    add_universe(q)
    q.add_argument("--c1", type=float, default=DEFAULT_C1, metavar="X",
                   help=f"theta_1 constant (eq. 6): split a node when p-sum >= theta_1 (default {DEFAULT_C1})")
    q.add_argument("--c2", type=float, default=DEFAULT_C2, metavar="Y",
                   help=f"theta_2 constant (eq. 7): release a leaf when p-sum >= theta_2 (default {DEFAULT_C2})")
    q.add_argument("--theta-rule", choices=THETA_RULES, default="example3",
                   help="example3: sqrt(2)C*sum(1/alpha)/n^2 (matches the paper's Example 3; default); "
                        "mean: eq. 6/7 as printed")
    q.add_argument("--new-cells", choices=NEW_CELL_RULES, default="first-visit",
                   help="first-visit: a split partition keeps its children (FollowPreviousTraces; default); "
                        "every-visit: test-and-generate new children at every visit")
    add_seed(q)
    add_quiet(q)
    q.set_defaults(handler=_run_init)

    q = ss.add_parser("append", help="append a batch (the first is the initial dataset) and write the release")
    q.add_argument("state", metavar="STATE")
    q.add_argument("batch", metavar="BATCH", help="transaction file: one record per line")
    q.add_argument("-o", "--output", required=True, metavar="RELEASE",
                   help="release file (written after the state commit); manifest to RELEASE.manifest.json")
    q.add_argument("--wait", type=float, default=DEFAULT_WAIT, metavar="SECONDS",
                   help=f"wait this long for another append to finish (default {DEFAULT_WAIT:g})")
    add_quiet(q)
    q.set_defaults(handler=_run_append)

    q = ss.add_parser("status", help="budget and appends of a stream state")
    q.add_argument("state", metavar="STATE")
    q.add_argument("--json", action="store_true",
                   help='print {"epsilon": E, "epsilon_spent": x, "updates": U or null, "appends": n, '
                        '"accounting": "paper"|"parallel", "epsilon_per_append": e}')
    q.set_defaults(handler=_run_status)

    q = ss.add_parser("release", help="write the latest release again (spends nothing)")
    q.add_argument("state", metavar="STATE")
    q.add_argument("-o", "--output", required=True, metavar="RELEASE")
    add_quiet(q)
    q.set_defaults(handler=_run_release)


def _run_experiment(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ..data.universe import parse_universe_spec
    from ..experiments.inctdpart import IncTDPartExperiment, run_inctdpart_experiment

    floats = lambda text: tuple(float(x) for x in text.split(","))  # noqa: E731
    ints = lambda text: tuple(int(x) for x in text.split(","))  # noqa: E731
    extra = {k: v for k, v in (("c1", args.c1), ("c2", args.c2), ("dp_c1", args.dp_c1), ("dp_c2", args.dp_c2))
             if v is not None}
    cfg = IncTDPartExperiment(
        dataset=Path(args.data), universe=parse_universe_spec(args.universe) if args.universe else None,
        out_dir=Path(args.out), label=args.label, initial=args.initial, batch=args.batch,
        updates=ints(args.updates), epsilons=floats(args.epsilons), runs=args.runs, fanout=args.fanout,
        theta_rule=args.theta_rule, new_cells=args.new_cells, accounting=args.accounting, routing=args.routing,
        queries=args.queries,
        seed=args.seed,
        methods=tuple(m.strip() for m in args.methods.split(",")), **extra)
    log = (lambda msg: None) if args.quiet else (lambda msg: print(msg, file=sys.stderr, flush=True))
    run_inctdpart_experiment(cfg, log=log)
    print(cfg.out_dir / "inctdpart_summary.csv")
    print(cfg.out_dir / "inctdpart_relative_error.png")
    return 0


def register_experiment(kinds: argparse._SubParsersAction) -> None:
    from pathlib import Path

    default_data = Path(__file__).resolve().parents[3] / ".." / "shared" / "datasets" / "msnbc" / "msnbc.dat"
    p = kinds.add_parser("inctdpart", help="IncTDPart vs Solutions 1 and 2: relative error vs U (section 5.1)")
    p.add_argument("--data", default=str(default_data.resolve()), metavar="FILE")
    p.add_argument("--universe", default="1..17", metavar="SPEC")
    p.add_argument("--label", default="MSNBC", help="dataset name in the CSV and plot (say 'generated' for synthetic)")
    p.add_argument("--out", default="results/inctdpart", metavar="DIR")
    p.add_argument("--initial", type=int, default=400_000)
    p.add_argument("--batch", type=int, default=10_000)
    p.add_argument("--updates", default="10,20,30,40,50", metavar="U,U,...")
    p.add_argument("--epsilons", default="0.5,0.75,1.0")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--fanout", type=int, default=DEFAULT_FANOUT)
    p.add_argument("--c1", type=float, default=None, help=f"IncTDPart theta_1 constant (default {DEFAULT_C1})")
    p.add_argument("--c2", type=float, default=None, help=f"IncTDPart theta_2 constant (default {DEFAULT_C2})")
    p.add_argument("--dp-c1", type=float, default=None, help="DiffPart leaf constant for the baselines")
    p.add_argument("--dp-c2", type=float, default=None, help="DiffPart partition constant for the baselines")
    p.add_argument("--theta-rule", choices=THETA_RULES, default="example3")
    p.add_argument("--new-cells", choices=NEW_CELL_RULES, default="first-visit")
    p.add_argument("--accounting", choices=ACCOUNTING_RULES, default="paper",
                   help="IncTDPart's accounting: paper (epsilon/(U+1) per append; default) or parallel (epsilon per "
                        "batch); the baselines are charged as in the paper either way")
    p.add_argument("--routing", choices=ROUTING_RULES, default="paper",
                   help="IncTDPart's routing of later batches: paper (a noisy count of every stored child of every "
                        "visited node; default) or free (split nodes route without counts; improvement)")
    p.add_argument("--methods", default="IncTDPart,Solution 1,Solution 2")
    p.add_argument("--queries", type=int, default=50_000)
    p.add_argument("--seed", type=int, default=0)
    add_quiet(p)
    p.set_defaults(handler=_run_experiment)
