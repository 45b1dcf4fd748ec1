"""``dprelease diffgen``, ``dprelease tds`` and ``dprelease experiment diffgen-classification``."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

from .. import limits
from ..api import tables as api_tables
from .common import (
    FAITHFUL, RECOMMENDED, add_engine, cli_reporter, add_epsilon, add_ledger, add_limits, add_method, add_output, add_quiet,
    add_seed, epsilon_arg, positive_int, prepare_output, print_json, release_cost, say, seed_arg,
    timed,
)

__all__ = ["register", "register_experiment"]

SCORES = ("max", "infogain")  # == dprelease.relational.scores.SCORES (checked in tests/commands/test_cli.py)
# == dprelease.experiments.diffgen.METHODS (checked in tests/relational/test_diffgen_plus.py): the experiment keeps every
# variant, so that the published numbers of docs/diffgen.md can be reproduced
METHODS = ("diffgen", "diffgen-local", "diffgen-plus", "diffgen-plus2", "diffgen-plus3", "recommended", "faithful",
           "tds", "diffp-c45", "mst", "aim", "aim-class")
# `dprelease diffgen --method`: the default is DiffGen+3 (docs/diffgen.md: the best epsilon-DP method measured);
# faithful is Algorithm 1 of Mohammed et al.
RELEASE_METHODS = (RECOMMENDED, FAITHFUL)
_LOCAL = "diffgen-local"  # an old name: --method faithful --local (the parser maps it, with a note)
_RENAMED: dict[str, tuple[str | None, str]] = {
    "diffgen": (FAITHFUL, "it is now --method faithful (DiffGen, the paper's Algorithm 1)"),
    "diffgen-local": (_LOCAL, "it is now --method faithful --local"),
    "diffgen-plus3": (RECOMMENDED, "DiffGen+3 is now the default, --method recommended"),
    **{old: (None, f"{old} is no longer offered: DiffGen+3, the default (--method recommended), supersedes it; "
                   f"`dprelease experiment diffgen-classification --methods {old}` reproduces its published numbers")
       for old in ("diffgen-plus", "diffgen-plus2")},
}

# pandas/pyarrow (data.table, relational.diffgen, relational.tds) are imported inside the handlers, so
# that `dprelease --help` and the set-valued commands start without them.


def _records_companion(args: argparse.Namespace) -> list[Path]:
    """The record form's path (``--records``), checked with the output before anything is computed."""
    from ..release.table import records_path

    return [records_path(args.output)] if args.records and Path(args.output).name else []


def _report_written(written) -> None:
    print(f"release: {written.body}")
    for rp in written.others:
        print(f"records: {rp}")
    print(f"manifest: {written.manifest}")


def _table_inputs(args: argparse.Namespace) -> list[str]:
    table = Path(args.table)
    inputs = [str(table), args.schema]
    if table.is_dir():
        inputs += [str(table / n) for n in ("adult.data", "adult.test")]
    return inputs


def _schema(args: argparse.Namespace):
    """The declared schema, with --delimiter applied."""
    return api_tables.table_schema(args)


# the checks and runs are the Python API's (dprelease.api.tables): one code path
_diffgen_method = api_tables.diffgen_method
_diffgen_checks = api_tables.diffgen_checks


def _run_diffgen(args: argparse.Namespace) -> int:
    _diffgen_method(args)
    prepare_output(args, args.output, inputs=_table_inputs(args), companions=_records_companion(args))
    release = api_tables.release_diffgen(args, lambda _schema: args.table, cli_reporter(args))
    with timed(args, "write"):
        _report_written(release.write(args.output, records=args.records))
    return 0


def _run_tds(args: argparse.Namespace) -> int:
    from ..data.table import read_table
    from ..relational.tds import tds

    prepare_output(args, args.output, inputs=_table_inputs(args), companions=_records_companion(args))
    schema = _schema(args)
    table = read_table(args.table, schema)
    print("warning: TDS publishes a k-anonymous table with EXACT counts: it is NOT differentially private",
          file=sys.stderr)
    with timed(args, "tds"):
        release = tds(table, args.k)
    _report_written(release.write(args.output, records=args.records))
    return 0


def delimiter_arg(text: str) -> str:
    from ..data.table import _delimiter
    from ..errors import InputError

    try:
        return _delimiter(text, "--delimiter")
    except InputError as exc:
        raise argparse.ArgumentTypeError(str(exc).replace("--delimiter ", "", 1)) from None


def _add_delimiter(p: argparse.ArgumentParser) -> None:
    p.add_argument("--delimiter", type=delimiter_arg, default=None, metavar="C",
                   help="field separator of a CSV table: one character, or tab, semicolon, pipe "
                        "(default: the schema's 'delimiter', else ',')")


def _table_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("table", metavar="TABLE", help="CSV (header row unless the schema lists 'columns') or Parquet; "
                                                   "a directory holding adult.data/adult.test reads Adult")
    p.add_argument("--schema", required=True, metavar="SCHEMA",
                   help="YAML/JSON schema (required): attributes, taxonomies, bounds, class; see docs/diffgen.md")
    _add_delimiter(p)
    add_output(p, help_text="the generalized contingency table, CSV or .parquet (required); its manifest goes to "
                            "OUTPUT.manifest.json. An existing file or manifest is replaced only with --force; the folder must exist")
    p.add_argument("--records", action="store_true",
                   help="also write the expanded record form (a row per counted record) to OUTPUT.records.EXT")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("diffgen", help="publish a table for classification with DiffGen (epsilon-DP)",
                       description="Generalize a table by specializations chosen under epsilon-DP and publish noisy "
                                   "counts of every leaf partition x class (DiffGen, Mohammed et al., KDD 2011): by "
                                   "default DiffGen+3, the best method measured in docs/diffgen.md; --method "
                                   "faithful runs the paper's Algorithm 1.")
    _table_args(p)
    add_epsilon(p)
    p.add_argument("--specializations", "-H", type=positive_int, default=None, metavar="H",
                   help="recommended: the number of rounds (default: chosen from a noisy record count); faithful: "
                        "the number of specializations h (required; the paper's Figure 3 peaks near 10 on Adult). "
                        "Bounded by --max-output-records: the table has a row per leaf partition and class")
    add_method(p, RELEASE_METHODS, default=None, renamed=_RENAMED,
               help_text="recommended (the default): DiffGen+3 (docs/diffgen.md): every round scores Gini gain + "
                         "misclassification gain and draws with the monotone exponential mechanism, counts "
                         "post-processed by Norm-Sub; faithful: DiffGen, the paper's Algorithm 1 (Mohammed et al., "
                         "KDD 2011; the one --engine spark runs). Default recommended, or faithful when --score, "
                         "--recycle or --local is given")
    p.add_argument("--score", choices=SCORES, default=None,
                   help="--method faithful: candidate score, Max (default) or InfoGain")
    p.add_argument("--recycle", action="store_true",
                   help="--method faithful, improvement: give unused line-9 budget to the counts (default: off, "
                        "charged as reserved, as the paper)")
    p.add_argument("--local", action="store_true",
                   help="--method faithful, improvement: score candidates by Max within the current partitions "
                        "(sensitivity 1); default: off")
    add_engine(p)
    add_seed(p)
    add_limits(p)
    add_quiet(p)
    add_ledger(p, release_cost(_table_inputs, checks=_diffgen_checks, companions=_records_companion))
    p.set_defaults(handler=_run_diffgen)

    p = sub.add_parser("tds", help="TDS k-anonymity baseline (NOT differentially private)",
                       description="Top-down specialization to a k-anonymous table (Fung et al.). NOT differentially private.")
    _table_args(p)
    p.add_argument("-k", type=positive_int, default=5, metavar="K", help="anonymity threshold k (default 5)")
    add_method(p, (FAITHFUL, RECOMMENDED), default=FAITHFUL,
               help_text="faithful (the default), the only method: TDS as Fung et al. define it (a k-anonymity baseline, not DP); "
                         "recommended names it too")
    add_quiet(p)
    p.set_defaults(handler=_run_tds)


def _parse_methods(text: str) -> list[str]:
    from ..errors import ParameterError

    names = [m.strip() for m in text.split(",") if m.strip()]
    unknown = [m for m in names if m not in METHODS]
    if not names or unknown:
        raise ParameterError(f"--methods: unknown method {', '.join(unknown) or repr(text)}; "
                             f"choose from {','.join(METHODS)}")
    return list(dict.fromkeys(names))


def _run_methods(args: argparse.Namespace, table, methods: list[str], out: Path) -> int:
    """Several methods on the same splits; one table (CSV) and one plot (PNG); JSON for one epsilon."""
    from ..experiments import diffgen as exp
    from ..experiments.common import write_csv

    peers = [m for m in methods if m in exp.PEERS]
    if peers and not exp.peers_available():
        say(args, f"{','.join(peers)}: smartnoise-synth is not importable here; skipped (run from its own venv: "
                  "python3 -m venv /tmp/synthvenv && /tmp/synthvenv/bin/pip install smartnoise-synth==1.0.8 "
                  "scikit-learn pyarrow PyYAML matplotlib; "
                  "PYTHONPATH=src /tmp/synthvenv/bin/python -m dprelease.cli ...)")
        methods = [m for m in methods if m not in exp.PEERS]
    h = args.specializations[0] if args.specializations else 10
    with timed(args, "experiment"):
        rows = exp.methods_experiment(table, methods=methods, epsilons=args.epsilon, h=h, runs=args.runs,
                                      seed=args.seed, tds_k=args.tds or 5, jobs=args.jobs, peer_runs=args.peer_runs,
                                      progress=lambda m: say(args, m))
    summary = exp.summarize_methods(rows)
    write_csv(out / "methods_runs.csv", [asdict(r) for r in rows])
    write_csv(out / "methods_summary.csv", summary)
    exp.plot_methods(summary, out / "methods_accuracy.png", title=table.schema.name or Path(args.data).name)
    say(args, f"wrote {out}/methods_summary.csv, methods_runs.csv, methods_accuracy.png")
    if args.json and len(args.epsilon) == 1:
        print_json(exp.methods_json(rows, summary))
    elif args.json:
        print_json(summary)
    else:
        for s in summary:
            print(json.dumps({k: (round(v, 4) if isinstance(v, float) else v) for k, v in s.items()}))
    return 0


_EXPERIMENT_FILES = ("diffgen_runs.csv", "diffgen_summary.csv", "diffgen_figure3.png")
_METHODS_FILES = ("methods_runs.csv", "methods_summary.csv", "methods_accuracy.png")


def _experiment_schema(args: argparse.Namespace):
    """--schema, or the Adult schema for the Adult folder only (any other table must declare its own)."""
    from ..errors import ParameterError

    data = Path(args.data)
    if args.schema is None:
        if not (data.is_dir() and (data / "adult.data").exists()):
            raise ParameterError(f"--schema is required for {data}: the bundled Adult schema applies only to the "
                                 f"Adult folder (adult.data + adult.test)")
        from .. import examples

        args.schema = str(examples.path("adult-schema.yaml"))
    return _schema(args)


def _run_experiment(args: argparse.Namespace) -> int:
    from ..errors import ParameterError

    schema = _experiment_schema(args)  # before the heavy imports: a missing --schema is refused at once
    from ..data.table import read_table
    from ..experiments import diffgen as exp

    args.table = args.data
    inputs = _table_inputs(args)
    if args.methods:
        methods = _parse_methods(args.methods)  # a bad name is refused before any work
        out = Path(args.out_dir or "results/diffgen-methods")
        for name in _METHODS_FILES:
            prepare_output(args, out / name, inputs=inputs, option="--out-dir", may_replace=lambda _p: True, make_parents=True)
        limits.check_diffgen(schema, max(args.specializations or [10]), what="experiment diffgen-classification")
        limits.check_runs(f"experiment diffgen-classification --runs {args.runs}", args.runs,
                          len(args.epsilon) * len(methods))
        say(args, f"table {args.data}, schema {args.schema} ({schema.name})")
        return _run_methods(args, read_table(args.data, schema), methods, out)
    if not args.specializations:
        raise ParameterError("--specializations is required unless --methods is given")
    limits.check_runs(f"experiment diffgen-classification --runs {args.runs}", args.runs,
                      len(args.epsilon) * len(args.specializations) * (2 if args.score == "both" else 1))
    if args.out_dir:
        for name in _EXPERIMENT_FILES:  # its own files are replaced; an input never is
            prepare_output(args, Path(args.out_dir) / name, inputs=inputs, option="--out-dir", may_replace=lambda _p: True, make_parents=True)
    limits.check_diffgen(schema, max(args.specializations), what="experiment diffgen-classification")
    say(args, f"table {args.data}, schema {args.schema} ({schema.name})")
    table = read_table(args.data, schema)
    scores = list(SCORES) if args.score == "both" else [args.score]
    single = len(args.epsilon) == 1 and len(args.specializations) == 1 and len(scores) == 1
    with timed(args, "experiment"):
        rows = exp.classification_experiment(table, epsilons=args.epsilon, hs=args.specializations, scores=scores,
                                             runs=args.runs, seed=args.seed, recycle=args.recycle, local=args.local,
                                             tds_k=args.tds, jobs=args.jobs)
    if args.peers:
        if not exp.peers_available():
            say(args, "peers: smartnoise-synth is not installed in this environment; skipped "
                     "(it needs its own virtual environment: see docs/diffgen.md)")
        else:
            for name in ("mst", "aim"):
                for eps in args.epsilon:
                    for r in range(args.runs):
                        rows.append(exp.run_peer(name, table, eps, args.seed, r))
    summary = exp.summarize(rows)
    if args.out_dir:
        out = Path(args.out_dir)
        exp.write_csv([asdict(r) for r in rows], out / "diffgen_runs.csv")
        exp.write_csv(summary, out / "diffgen_summary.csv")
        exp.plot_figure3(summary, out / "diffgen_figure3.png", dataset=schema.name)
        say(args, f"wrote {out}/diffgen_runs.csv, diffgen_summary.csv, diffgen_figure3.png")
    main = [s for s in summary if str(s["method"]).startswith("diffgen")]
    if args.json and single:
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


def register_experiment(kinds: argparse._SubParsersAction) -> None:
    p = kinds.add_parser("diffgen-classification",
                         help="DiffGen section 5: BA/CA/LA of a classifier on a DiffGen table (Adult or any "
                              "table with a schema), Figure 3",
                         description="Random 2/3-1/3 splits; DiffGen on the train split; a C4.5-like entropy tree on "
                                     "the noisy generalized data; CA on the generalized test split; BA and LA. "
                                     "The figure is titled with the schema's name.")
    p.add_argument("--data", required=True, metavar="PATH",
                   help="the table (required): the Adult directory (adult.data + adult.test), or a CSV/Parquet "
                        "table with its --schema")
    p.add_argument("--schema", default=None, metavar="SCHEMA",
                   help="table schema; required unless --data is the Adult directory (default there: the "
                        "bundled Adult schema, examples/adult-schema.yaml)")
    _add_delimiter(p)
    p.add_argument("--epsilon", "-e", type=epsilon_arg, nargs="+", required=True, metavar="E",
                   help="one or more total budgets (required)")
    p.add_argument("--specializations", "-H", type=positive_int, nargs="+", default=None, metavar="H",
                   help="one or more numbers of specializations h (required without --methods; with --methods the "
                        "first is DiffGen's h, default 10)")
    p.add_argument("--runs", type=positive_int, default=10, metavar="N", help="random splits (runs) per setting (default 10)")
    p.add_argument("--score", choices=[*SCORES, "both"], default="max",
                   help="DiffGen candidate score: max, infogain or both (default max)")
    p.add_argument("--seed", type=seed_arg, default=0, metavar="S",
                   help="seed of the splits and the (seeded, experiment-mode) noise (default 0)")
    p.add_argument("--methods", default=None, metavar="LIST",
                   help=f"comma-separated methods to compare on the same splits ({','.join(METHODS)}; "
                        "recommended = DiffGen+3, the default of `dprelease diffgen`; faithful = diffgen, its "
                        "--method faithful; the others are the variants measured in docs/diffgen.md); writes a table "
                        "and a plot to --out-dir (default results/diffgen-methods); default: off (DiffGen only)")
    p.add_argument("--peer-runs", type=positive_int, default=None, metavar="R",
                   help="runs of mst/aim with --methods (default: --runs); they take minutes each")
    p.add_argument("--recycle", action="store_true", help="improvement: unused line-9 budget to the counts")
    p.add_argument("--local", action="store_true", help="improvement: partition-local Max scores")
    p.add_argument("--tds", type=positive_int, default=None, metavar="K",
                   help="also run TDS with this k (not DP); default: not run")
    p.add_argument("--peers", action="store_true", help="also run MST and AIM (smartnoise-synth, if installed)")
    p.add_argument("--jobs", type=positive_int, default=1, metavar="N", help="worker processes over runs (default 1)")
    p.add_argument("--out-dir", default=None, metavar="DIR",
                   help="write per-run and summary CSV and the Figure 3 PNG here; default: print only")
    p.add_argument("--json", action="store_true", help="print JSON instead of one line per setting")
    add_limits(p)
    add_quiet(p)
    p.set_defaults(handler=_run_experiment)
