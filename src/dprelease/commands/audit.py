"""``dprelease audit ALGORITHM``: the black-box privacy audit on built-in neighbouring datasets (docs/audit.md)."""

from __future__ import annotations

import argparse
import sys

from .common import epsilon_arg, positive_int, print_json

_DEFAULT_EPSILON = 1.0  # = dprelease.audit.DEFAULT_EPSILON (not imported: the parser stays light)
_DEFAULT_RUNS = 20_000  # = dprelease.audit.DEFAULT_RUNS
_DEFAULT_CANDIDATES = 8  # = dprelease.audit.DEFAULT_CANDIDATES


def _list(args: argparse.Namespace) -> int:
    from ..audit import algorithms, cases_for

    for name in algorithms():
        print(name)
        if not args.quiet:
            for case in cases_for(name, args.epsilon):
                note = f"  [skipped: {case.skip}]" if case.skip else ""
                print(f"  {case.name}: {case.description}{note}")
    return 0


def _run(args: argparse.Namespace) -> int:
    if args.list:
        return _list(args)
    if args.algorithm is None:
        print("dprelease audit: error: ALGORITHM is required (see dprelease audit --list)", file=sys.stderr)
        return 2
    from ..audit import run_audit

    seed = None if args.secure else args.seed
    result = run_audit(args.algorithm, epsilon=args.epsilon, runs=args.runs, seed=seed, secure=args.secure,
                       candidates=args.candidates, only=args.case, progress=not args.quiet)
    if args.json:
        print_json(result.as_json())
    else:
        print(f"audit of {result.algorithm}: epsilon = {result.epsilon:g}, {result.runs:,} runs per case, "
              f"{result.mode} noise" + (f" (seed {result.seed})" if result.seed is not None else "")
              + f", {100 * (1 - result.alpha):g} % confidence for the whole audit")
        for c in result.cases:
            if c.skipped:
                print(f"  {c.name}: skipped ({c.skipped})")
                continue
            if c.error:
                print(f"  {c.name}: ERROR, {c.error}")
                continue
            verdict = "VIOLATION" if c.violation else "ok"
            print(f"  {c.name}: lower bound {c.epsilon_lower_bound:.3f} (epsilon {c.epsilon:g}) {verdict}; "
                  f"event {c.event!r}, {c.direction}, rates {c.p_d:.4f} on D, {c.p_d_prime:.4f} on D'")
        print(f"epsilon lower bound: {result.epsilon_lower_bound:.3f}; "
              + ("VIOLATION" if result.violation else "no violation")
              + (f"; cases that raised on every run: {', '.join(result.errors)}" if result.errors else ""))
    return 1 if (result.violation or result.errors) else 0


def register(sub: argparse._SubParsersAction) -> None:
    help_text = "black-box privacy audit: run an algorithm on built-in neighbouring datasets and bound its epsilon"
    p = sub.add_parser("audit", help=help_text, description=help_text + ". Exit 1 on a violation (docs/audit.md).")
    p.add_argument("algorithm", nargs="?", metavar="ALGORITHM",
                   help="algorithm or mechanism to audit (diffpart, basic, stream, privbasis, tf, diffgen, "
                        "noisy_counts, ...); --list shows them all with their cases")
    p.add_argument("--epsilon", "-e", type=epsilon_arg, default=_DEFAULT_EPSILON, metavar="E",
                   help=f"privacy budget each case runs with and is checked against (default {_DEFAULT_EPSILON:g})")
    p.add_argument("--runs", type=positive_int, default=_DEFAULT_RUNS, metavar="N",
                   help=f"runs per case, alternating D and D' (at least 8; default {_DEFAULT_RUNS:,}); "
                        "half choose the candidate events, half test them")
    p.add_argument("--seed", type=int, default=None, metavar="S",
                   help="master seed of the per-run seeded noise, for a reproducible audit "
                        "(default: a fresh seed, printed in the result)")
    p.add_argument("--secure", action="store_true",
                   help="draw every run's noise from the secure RNG instead of seeded numpy (much slower; "
                        "default off)")
    p.add_argument("--case", metavar="TEXT", default=None,
                   help="audit only the cases whose name contains TEXT (default: every case)")
    p.add_argument("--candidates", type=positive_int, default=_DEFAULT_CANDIDATES, metavar="M",
                   help=f"candidate events chosen per case on the first half of the runs (default {_DEFAULT_CANDIDATES})")
    p.add_argument("--list", action="store_true", help="list the algorithms and their cases, then exit (default off)")
    p.add_argument("--json", action="store_true",
                   help="print one JSON object: algorithm, epsilon, runs, epsilon_lower_bound, event, violation, "
                        "and one entry per case (default off: a table)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar on stderr (default off)")
    p.set_defaults(handler=_run)
