"""``dprelease report RAW RELEASE -o report.html``: one self-contained HTML page about a release (custodian only)."""

from __future__ import annotations

import argparse

from .common import add_force, add_quiet, positive_int, prepare_output, print_json, say, seed_arg, timed, \
    universe_inputs

__all__ = ["register"]

_KINDS = ("setvalued", "itemsets", "table", "degrees")  # == dprelease.report.KINDS (checked in tests)


def _run(args: argparse.Namespace) -> int:
    from ..data.io import atomic_output
    from ..release import manifest_path
    from ..report import build_report

    inputs = [args.raw, args.release, str(manifest_path(args.release)), *universe_inputs(args.universe),
              *([args.schema] if args.schema else [])]
    out = prepare_output(args, args.output, inputs=inputs)  # never an input; an existing file only with --force
    with timed(args, "report"):
        report = build_report(args.raw, args.release, kind=args.kind, universe=args.universe, schema=args.schema,
                              queries=args.queries, seed=args.seed, k=args.k)
    with atomic_output(out, "w") as fh:
        fh.write(report.html)
    say(args, f"{report.kind} report with {report.figures} figures; it reads the raw data: for the custodian only, "
              f"do not publish it")
    if args.json:
        print_json({"report": str(out), "kind": report.kind, "metrics": report.metrics})
    else:
        print(f"report: {out}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="an HTML page about a release: manifest in words, utility, plots (custodian only)",
                       description="One self-contained HTML page about a release: its manifest in words, the utility "
                                   "metrics of its kind and plots. It reads the RAW data: for the custodian only, never "
                                   "publish it. It opens offline (nothing external is loaded).")
    p.add_argument("raw", metavar="RAW", help="the raw data the release was made from (transactions, or a table)")
    p.add_argument("release", metavar="RELEASE", help="the release (with its manifest beside it)")
    p.add_argument("--kind", choices=_KINDS, default=None,
                   help="the kind of release (default: read from the release's manifest)")
    p.add_argument("--universe", metavar="SPEC", default=None,
                   help="the item universe of set-valued and itemset releases (default: the one the manifest records)")
    p.add_argument("--schema", metavar="SCHEMA", default=None,
                   help="the table schema of a table release (default: the schema file the manifest names)")
    p.add_argument("-o", "--output", required=True, metavar="REPORT", help="the HTML page to write (required)")
    add_force(p)
    p.add_argument("--queries", type=positive_int, default=None, metavar="N",
                   help="random counting queries: itemset counts of a set-valued release (default 50000, as DiffPart "
                        "section 5.1), range counts of a table (default 5000)")
    p.add_argument("--seed", type=seed_arg, default=0, metavar="S", help="seed of the query workload and splits (default 0)")
    p.add_argument("-k", type=positive_int, default=None, metavar="K",
                   help="k of an itemset release (default: the manifest's k)")
    p.add_argument("--json", action="store_true", help="print the metrics as one JSON object; default: the path")
    add_quiet(p)
    p.set_defaults(handler=_run)
