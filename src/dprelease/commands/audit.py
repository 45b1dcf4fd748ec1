"""``dprelease audit ALGORITHM``: the black-box privacy audit on built-in neighbouring datasets (docs/audit.md)."""

from __future__ import annotations

import argparse
import sys

from .common import epsilon_arg, positive_int, print_json

_DEFAULT_EPSILON = 1.0  # = dprelease.audit.DEFAULT_EPSILON (not imported: the parser stays light)
_DEFAULT_RUNS = 20_000  # = dprelease.audit.DEFAULT_RUNS
_DEFAULT_CANDIDATES = 8  # = dprelease.audit.DEFAULT_CANDIDATES
_DEFAULT_BUDGET = 90.0  # = dprelease.audit.search.DEFAULT_BUDGET


def _list(args: argparse.Namespace) -> int:
    from ..audit import algorithms, cases_for

    for name in algorithms():
        print(name)
        if not args.quiet:
            for case in cases_for(name, args.epsilon):
                note = f"  [skipped: {case.skip}]" if case.skip else ""
                print(f"  {case.name}: {case.description}{note}")
    return 0


def _power(x: float) -> str:
    return "none at these runs" if x == float("inf") else f"{x:.3f}"


def _indent(text: str, prefix: str = "    ") -> str:
    return "\n".join(prefix + line for line in text.splitlines()) if text else prefix + "(empty)"


def _file_text(d: object) -> str:
    import dataclasses

    if dataclasses.is_dataclass(d) and not isinstance(d, type):
        return "\n".join(f"  {f.name}:\n" + _indent(getattr(d, f.name)) for f in dataclasses.fields(d)
                         if getattr(d, f.name) is not None)
    if isinstance(d, tuple):
        return "\n".join(f"  file {j}:\n" + _indent(t) for j, t in enumerate(d))
    return _indent(d if isinstance(d, str) else repr(d))


def _search(args: argparse.Namespace) -> int:
    from ..audit.search import search

    if args.secure or args.case is not None:
        print("dprelease audit: error: --search does not go with " + ("--secure" if args.secure else "--case")
              + " (the search draws seeded noise and builds its own pairs)", file=sys.stderr)
        return 2
    res = search(args.algorithm, epsilon=args.epsilon, budget=_search_budget(args), seed=args.seed, runs=args.runs,
                 candidates=args.candidates, progress=not args.quiet)
    if args.json:
        print_json(res.as_json())
        return 1 if res.violation else 0
    conf = res.confirmation
    print(f"search of {res.algorithm}: epsilon = {res.epsilon:g}, budget {res.budget:g} s, seed {res.seed}: "
          f"{res.pairs:,} pairs estimated ({res.search_runs:,} runs), {res.elapsed:.1f} s"
          + ("; stopped early (the best pair's estimate is well above its claim)" if res.stopped_early else ""))
    if res.case is None or conf is None:
        print("no pair could be built")
        return 2
    params = ", ".join(f"{k} = {v}" for k, v in res.config.items() if not k.startswith("_"))
    print(f"worst pair found: neighbour = {res.unit}; {params}")
    print("  D:")
    print(_file_text(res.case.d))
    print("  D' = D with:")
    print(_indent(res.difference()))
    verdict = "VIOLATION" if conf.violation else "no violation"
    print(f"confirmation on {conf.runs:,} fresh runs: lower bound {conf.epsilon_lower_bound:.3f} (claim "
          f"{conf.epsilon:g}) {verdict}; event {conf.event!r}, {conf.direction}, rates {conf.p_d:.4f} on D, "
          f"{conf.p_d_prime:.4f} on D'")
    print(f"power: a loss of {_power(conf.power)} on event {conf.power_event!r} would be flagged "
          f"({100 * (1 - res.alpha):g} % confidence)")
    print(f"search estimate (biased upward by the selection): {res.estimate:+.3f} over the claim "
          f"({res.estimate_event!r})")
    return 1 if res.violation else 0


def _run(args: argparse.Namespace) -> int:
    if args.list:
        return _list(args)
    if args.algorithm is None:
        print("dprelease audit: error: ALGORITHM is required (see dprelease audit --list)", file=sys.stderr)
        return 2
    if args.search:
        return _search(args)
    if args.budget is not None:
        print("dprelease audit: error: --budget applies to --search only", file=sys.stderr)
        return 2
    from ..audit import run_audit

    seed = None if args.secure else args.seed
    runs = _DEFAULT_RUNS if args.runs is None else args.runs
    result = run_audit(args.algorithm, epsilon=args.epsilon, runs=runs, seed=seed, secure=args.secure,
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
                  f"event {c.event!r}, {c.direction}, rates {c.p_d:.4f} on D, {c.p_d_prime:.4f} on D'; "
                  f"power {_power(c.power)}")
        print(f"epsilon lower bound: {result.epsilon_lower_bound:.3f}; "
              + ("VIOLATION" if result.violation else "no violation")
              + (f"; cases that raised on every run: {', '.join(result.errors)}" if result.errors else ""))
    return 1 if (result.violation or result.errors) else 0


def _search_budget(args: argparse.Namespace) -> float:
    return _DEFAULT_BUDGET if args.budget is None else args.budget


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not (value > 0 and value < float("inf")):
        raise argparse.ArgumentTypeError(f"must be a number of seconds > 0, got {text!r}")
    return value


def register(sub: argparse._SubParsersAction) -> None:
    help_text = "black-box privacy audit: run an algorithm on built-in neighbouring datasets and bound its epsilon"
    p = sub.add_parser("audit", help=help_text, description=help_text + ". Exit 1 on a violation (docs/audit.md).")
    p.add_argument("algorithm", nargs="?", metavar="ALGORITHM",
                   help="algorithm or mechanism to audit (diffpart, basic, stream, privbasis, tf, diffgen, "
                        "noisy_counts, ...); --list shows them all with their cases")
    p.add_argument("--epsilon", "-e", type=epsilon_arg, default=_DEFAULT_EPSILON, metavar="E",
                   help=f"privacy budget each case runs with and is checked against (default {_DEFAULT_EPSILON:g})")
    p.add_argument("--runs", type=positive_int, default=None, metavar="N",
                   help=f"runs per case, alternating D and D' (at least 8; default {_DEFAULT_RUNS:,}); "
                        "half choose the candidate events, half test them. With --search: the fresh runs that "
                        "confirm the worst pair (default: what the budget leaves, 2,000 to 20,000)")
    p.add_argument("--search", action="store_true",
                   help="search for the worst neighbouring pair of input files (small random datasets mutated "
                        "toward the extremes), then confirm it on fresh runs (default off: the built-in pairs)")
    p.add_argument("--budget", type=_seconds, default=None, metavar="SECONDS",
                   help=f"with --search: seconds for the search and its confirmation (default {_DEFAULT_BUDGET:g})")
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
