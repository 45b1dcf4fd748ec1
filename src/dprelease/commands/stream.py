"""``dprelease stream init|append|status|release``: IncTDPart releases of a growing transaction file."""

from __future__ import annotations

import argparse
import sys

from ..setvalued.inctdpart import DEFAULT_C1, DEFAULT_C2, DEFAULT_FANOUT, NEW_CELL_RULES, THETA_RULES
from ..setvalued.stream_state import DEFAULT_WAIT, append_batch, init_state, reemit, stream_status
from .common import add_epsilon, add_quiet, add_seed, add_universe, print_json, say, timed


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
                    new_cells=args.new_cells)
    say(args, f"stream state {args.state}: epsilon {st.epsilon:g} over the initial dataset + {st.updates} updates "
              f"(epsilon' = {st.epsilon / (st.updates + 1):.6g} per append)")
    if args.universe is None:
        print("warning: no --universe declared: the first append derives it from its batch, which reveals which "
              "items occur", file=sys.stderr)
    print(args.state)
    return 0


def _run_append(args: argparse.Namespace) -> int:
    with timed(args, "append"):
        info = append_batch(args.state, args.batch, args.output, wait=args.wait)
    say(args, f"append {info['append']} of {info['updates'] + 1}: spent {info['epsilon']:.6g}, "
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
        print(f"updates: {st.updates}")
        print(f"appends: {st.appends} of {st.updates + 1}")
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
    q.add_argument("--updates", "-U", type=_nonneg_int, required=True, metavar="U",
                   help="upper bound on updates after the initial dataset; each append spends epsilon/(U+1)")
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
                   help='print {"epsilon": E, "epsilon_spent": x, "updates": U, "appends": n}')
    q.set_defaults(handler=_run_status)

    q = ss.add_parser("release", help="write the latest release again (spends nothing)")
    q.add_argument("state", metavar="STATE")
    q.add_argument("-o", "--output", required=True, metavar="RELEASE")
    add_quiet(q)
    q.set_defaults(handler=_run_release)
