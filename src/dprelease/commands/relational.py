"""``dprelease diffgen``, ``dprelease tds`` and ``dprelease experiment diffgen-classification``."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

from typing import TYPE_CHECKING

from ..data.io import write_json_atomic
from ..release import build_manifest, manifest_path
from .common import add_epsilon, add_output, add_quiet, add_seed, epsilon_arg, noise_from_args, positive_int, print_json, say, timed

if TYPE_CHECKING:
    from ..relational.diffgen import GeneralizedTable

__all__ = ["register", "register_experiment", "records_path"]

SCORES = ("max", "infogain")  # == dprelease.relational.scores.SCORES (checked in tests/test_cli.py)
# == dprelease.experiments.diffgen.METHODS (checked in tests/test_diffgen_plus.py)
METHODS = ("diffgen", "diffgen-local", "diffgen-plus", "recommended", "tds", "diffp-c45", "mst", "aim")
RELEASE_METHODS = ("diffgen", "diffgen-local", "diffgen-plus", "recommended")

# pandas/pyarrow (data.table, relational.diffgen, relational.tds) are imported inside the handlers, so
# that `dprelease --help` and the set-valued commands start without them.


def records_path(output: str | Path) -> Path:
    """Where ``--records`` puts the expanded record form: OUTPUT with ``.records`` before its suffix."""
    output = Path(output)
    return output.with_name(f"{output.stem}.records{output.suffix or '.csv'}")


def _write_release(release: GeneralizedTable, output: str, records: bool, manifest: dict) -> list[Path]:
    from ..data.table import write_frame

    written = [Path(output)]
    write_frame(release.arrow(), output)
    if records:
        rp = records_path(output)
        write_frame(release.arrow(records=True), rp)
        written.append(rp)
    manifest["release"]["files"] = {"contingency_table": str(Path(output).name),
                                    **({"records": records_path(output).name} if records else {})}
    write_json_atomic(manifest_path(output), manifest)
    return written + [manifest_path(output)]


def _release_facts(release: GeneralizedTable) -> dict[str, object]:
    return {
        "final_cut": release.cut_labels(),
        "leaf_partitions": int(release.cells.shape[0]),
        "rows": int(release.cells.shape[0] * release.schema.n_classes),
        "released_records": release.n_records,  # sum of the noisy counts (post-processing)
        "columns": [a.name for a in release.schema.attributes] + [release.schema.class_attribute.name, "count"],
    }


def _run_diffgen(args: argparse.Namespace) -> int:
    from ..data.table import load_schema, read_table
    from ..relational.diffgen import diffgen

    schema = load_schema(args.schema)
    with timed(args, "read"):
        table = read_table(args.table, schema)
    from ..errors import ParameterError

    method = "diffgen-plus" if args.method == "recommended" else args.method  # our best eps-DP method
    if method in ("diffgen", "diffgen-local") and args.specializations is None:
        raise ParameterError(f"--specializations is required for --method {args.method}")
    noise = noise_from_args(args)
    notes = ["Mohammed, Chen, Fung and Yu, Differentially private data release for data mining, KDD 2011 (Algorithm 1)",
             "counts: discrete Laplace, rounded to non-negative integers (post-processing)"]
    with timed(args, "diffgen"):
        if method == "diffgen-plus":
            from ..relational.diffgen_plus import diffgen_plus

            release = diffgen_plus(table, args.epsilon, noise=noise, rounds=args.specializations)
            notes = [notes[0] + "; DiffGen+ (dprelease issue 13: docs/diffgen.md)",
                     "counts: discrete Laplace, then per class one shift and clipping at 0 keeping the noisy class "
                     "total (Norm-Sub, post-processing)"]
        else:
            release = diffgen(table, args.epsilon, args.specializations, noise=noise, score=args.score,
                              recycle=args.recycle, local=args.local or method == "diffgen-local")
    parts = release.manifest
    parts["parameters"].setdefault("method", args.method)
    manifest = build_manifest(
        "diffgen", epsilon=args.epsilon, parameters=parts["parameters"], noise=noise, accountant=release.accountant,
        domain=schema.describe(), release=_release_facts(release), budget_split=parts["budget_split"], notes=notes)
    with timed(args, "write"):
        paths = _write_release(release, args.output, args.records, manifest)
    for p in paths:
        print(p)
    return 0


def _run_tds(args: argparse.Namespace) -> int:
    from ..data.table import load_schema, read_table
    from ..relational.tds import tds

    schema = load_schema(args.schema)
    table = read_table(args.table, schema)
    print("warning: TDS publishes a k-anonymous table with EXACT counts: it is NOT differentially private",
          file=sys.stderr)
    with timed(args, "tds"):
        release = tds(table, args.k)
    manifest = {
        "algorithm": "tds",
        "package": "dprelease",
        "privacy": {"model": f"{args.k}-anonymity", "differentially_private": False,
                    "warning": "exact counts and data-dependent choices: NOT differential privacy"},
        "parameters": release.manifest["parameters"],
        "domain": schema.describe(),
        "release": _release_facts(release),
        "notes": ["Fung, Wang and Yu, Anonymizing classification data for privacy preservation, TKDE 2007"],
    }
    for p in _write_release(release, args.output, args.records, manifest):
        print(p)
    return 0


def _table_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("table", metavar="TABLE", help="CSV (header row unless the schema lists 'columns') or Parquet; "
                                                   "a directory holding adult.data/adult.test reads Adult")
    p.add_argument("--schema", required=True, metavar="SCHEMA", help="YAML/JSON schema: attributes, taxonomies, bounds, class")
    add_output(p)
    p.add_argument("--records", action="store_true",
                   help="also write the expanded record form (a row per counted record) to OUTPUT.records.EXT")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("diffgen", help="publish a table for classification with DiffGen (epsilon-DP)",
                       description="Generalize a table by h specializations chosen under epsilon-DP and publish noisy "
                                   "counts of every leaf partition x class (Mohammed et al., KDD 2011).")
    _table_args(p)
    add_epsilon(p)
    p.add_argument("--specializations", "-H", type=positive_int, default=None, metavar="H",
                   help="number of specializations h (the paper's Figure 3 peaks near 10 on Adult); required for "
                        "--method diffgen/diffgen-local; for diffgen-plus the number of rounds (default: chosen "
                        "from a noisy record count)")
    p.add_argument("--method", choices=RELEASE_METHODS, default="diffgen",
                   help="release method: diffgen (default: faithful Algorithm 1), diffgen-local (= --local), "
                        "diffgen-plus (issue 13), recommended (our best eps-DP method, now diffgen-plus)")
    p.add_argument("--score", choices=SCORES, default="max", help="candidate score: Max (default) or InfoGain")
    p.add_argument("--recycle", action="store_true",
                   help="improvement: give unused line-9 budget to the counts (default: faithful, charged as reserved)")
    p.add_argument("--local", action="store_true",
                   help="improvement: score candidates by Max within the current partitions (sensitivity 1)")
    add_seed(p)
    add_quiet(p)
    p.set_defaults(handler=_run_diffgen)

    p = sub.add_parser("tds", help="TDS k-anonymity baseline (NOT differentially private)",
                       description="Top-down specialization to a k-anonymous table (Fung et al.). NOT differentially private.")
    _table_args(p)
    p.add_argument("-k", type=positive_int, default=5, help="anonymity threshold k (default 5)")
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


def _run_methods(args: argparse.Namespace, table) -> int:
    """Issue 13: several methods on the same splits; one table (CSV) and one plot (PNG); JSON for one epsilon."""
    from ..experiments import diffgen as exp
    from ..experiments.common import write_csv

    methods = _parse_methods(args.methods)
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
    out = Path(args.out_dir or "results/diffgen-methods")
    write_csv(out / "methods_runs.csv", [asdict(r) for r in rows])
    write_csv(out / "methods_summary.csv", summary)
    exp.plot_methods(summary, out / "methods_accuracy.png", title=Path(args.data).name or "table")
    say(args, f"wrote {out}/methods_summary.csv, methods_runs.csv, methods_accuracy.png")
    if args.json and len(args.epsilon) == 1:
        print_json(exp.methods_json(rows, summary))
    elif args.json:
        print_json(summary)
    else:
        for s in summary:
            print(json.dumps({k: (round(v, 4) if isinstance(v, float) else v) for k, v in s.items()}))
    return 0


def _run_experiment(args: argparse.Namespace) -> int:
    from ..data.table import load_schema, read_table
    from ..errors import ParameterError
    from ..experiments import diffgen as exp

    schema = load_schema(args.schema)
    table = read_table(args.data, schema)
    if args.methods:
        return _run_methods(args, table)
    if not args.specializations:
        raise ParameterError("--specializations is required unless --methods is given")
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
        exp.write_csv([asdict(r) for r in rows],
                      out / "diffgen_runs.csv")
        exp.write_csv(summary, out / "diffgen_summary.csv")
        if not single:
            exp.plot_figure3(summary, out / "diffgen_figure3.png")
        say(args, f"wrote {out}/diffgen_runs.csv, diffgen_summary.csv" + ("" if single else ", diffgen_figure3.png"))
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
    p = kinds.add_parser("diffgen-classification", help="DiffGen section 5: BA/CA/LA on Adult, Figure 3",
                         description="Random 2/3-1/3 splits; DiffGen on the train split; a C4.5-like entropy tree on "
                                     "the noisy generalized data; CA on the generalized test split; BA and LA.")
    p.add_argument("--data", required=True, metavar="DIR", help="the Adult directory (adult.data + adult.test) or a table")
    p.add_argument("--schema", default=str(Path(__file__).resolve().parents[3] / "examples" / "adult-schema.yaml"),
                   help="table schema (default: examples/adult-schema.yaml)")
    p.add_argument("--epsilon", "-e", type=epsilon_arg, nargs="+", required=True, metavar="E")
    p.add_argument("--specializations", "-H", type=positive_int, nargs="+", default=None, metavar="H",
                   help="h values (required without --methods; with --methods the first is DiffGen's h, default 10)")
    p.add_argument("--runs", type=positive_int, default=10)
    p.add_argument("--methods", default=None, metavar="LIST",
                   help=f"comma-separated methods to compare on the same splits ({','.join(METHODS)}; "
                        "recommended = our best eps-DP method); writes a table and a plot to --out-dir "
                        "(default results/diffgen-methods); default: off (DiffGen only, today's output)")
    p.add_argument("--peer-runs", type=positive_int, default=None, metavar="R",
                   help="runs of mst/aim with --methods (default: --runs); they take minutes each")
    p.add_argument("--score", choices=[*SCORES, "both"], default="max")
    p.add_argument("--seed", type=int, default=0, help="seed of the splits and the (seeded, experiment-mode) noise")
    p.add_argument("--recycle", action="store_true", help="improvement: unused line-9 budget to the counts")
    p.add_argument("--local", action="store_true", help="improvement: partition-local Max scores")
    p.add_argument("--tds", type=positive_int, default=None, metavar="K", help="also run TDS with this k (not DP)")
    p.add_argument("--peers", action="store_true", help="also run MST and AIM (smartnoise-synth, if installed)")
    p.add_argument("--jobs", type=positive_int, default=1, help="worker processes over runs")
    p.add_argument("--out-dir", default=None, metavar="DIR", help="write per-run and summary CSV (+ Figure 3 PNG)")
    p.add_argument("--json", action="store_true")
    add_quiet(p)
    p.set_defaults(handler=_run_experiment)
