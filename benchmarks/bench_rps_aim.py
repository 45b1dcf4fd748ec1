"""Benchmark (not a test): range-count error of AIM beside RPS's default on the same table and workload.

RPS's target on Adult is a range-count error of at most 0.6 x the uniform table's at epsilon = 1; this script puts
AIM (smartnoise-synth, its default workload of all 2-way marginals) on the same footing: the whole table, the
same 10,000 queries (``evaluate ranges``' workload, seed 0), the same scorer, beside the uniform table over the
schema's domain and RPS's default (``dprelease rps``).

AIM needs categorical columns: each numeric attribute is cut into the experiments' 32 equal-width bins over its
*public* bounds (``dprelease.experiments.diffgen``'s peer binning), categoricals are their taxonomy leaves, the
class is a column. Its synthetic rows are read back as boxes (a numeric value is its bin ``[lo-hi)``, spread
uniformly inside by the scorer, as an RPS leaf is), so AIM pays for its binning as RPS pays for its leaves. AIM is
(epsilon, delta = 1e-9)-DP by its own accounting; RPS is epsilon-DP.

smartnoise-synth is not a dependency of dprelease: run this in its own environment (docs/diffgen.md, "Peers")::

    python3 -m venv /work/synthvenv && /work/synthvenv/bin/pip install torch==2.13.0 && \\
        /work/synthvenv/bin/pip install smartnoise-synth==1.0.8 scikit-learn pyarrow PyYAML matplotlib
    OMP_NUM_THREADS=1 PYTHONPATH=src /work/synthvenv/bin/python benchmarks/bench_rps_aim.py --epsilon 1 --seeds 1

Prints one line per run and a markdown table (mean over seeds); ``--json PATH`` keeps every run.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
ADULT = (REPO / ".." / "shared" / "datasets" / "adult" / "adult.data").resolve()
SCHEMA = REPO / "examples" / "adult-schema.yaml"


def aim_boxes(table, epsilon: float, seed: int, workload: str = "default"):
    """AIM fitted on the binned table and sampled i.i.d. (N rows), as the scorer's boxes; and its wall time."""
    import pandas as pd

    from dprelease.evaluation.ranges import released_boxes
    from dprelease.experiments.diffgen import _binned, _edges, peer_sample

    schema = table.schema
    klass = schema.class_attribute
    frame = pd.DataFrame({**_binned(schema, table.columns), klass.name: table.y})
    np.random.seed(seed)  # snsynth/mbi draw from numpy's global generator
    sample, seconds = peer_sample("aim-class" if workload == "class" else "aim", frame, epsilon)
    out = {}
    for a in schema.attributes:
        codes = sample[a.name].to_numpy().astype(np.int64)
        if a.kind == "numeric":
            edges = np.concatenate([[a.lo], _edges(a, "equal"), [a.hi]])
            codes = np.clip(codes, 0, edges.size - 2)
            labels = np.array([f"[{edges[i]:.17g}-{edges[i + 1]:.17g})" for i in range(edges.size - 1)])
        else:
            labels = np.asarray([str(x) for x in a.taxonomy.leaf_labels])
        out[a.name] = labels[codes]
    out[klass.name] = np.asarray([str(v) for v in klass.values])[sample[klass.name].to_numpy().astype(np.int64)]
    synthetic = pd.DataFrame(out)
    synthetic["count"] = "1"
    return released_boxes(synthetic, schema, where="AIM's sample"), seconds


def rps_error(raw_path: Path, schema_path: Path, epsilon: float, seed: int, work: Path, queries: int) -> float:
    """``dprelease rps`` (its default) then ``evaluate ranges``, both through the CLI as a user runs them."""
    import contextlib
    import io

    from dprelease.cli import main as cli

    out = work / f"rps-adult-{epsilon}-{seed}.csv"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        rc = cli(["rps", str(raw_path), "--schema", str(schema_path), "--epsilon", str(epsilon), "--seed", str(seed),
                  "-o", str(out), "--force", "-q"])
    if rc != 0:
        raise SystemExit(f"rps exited {rc}")
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(io.StringIO()):
        rc = cli(["evaluate", "ranges", str(raw_path), str(out), "--schema", str(schema_path),
                  "--queries", str(queries), "--json", "-q"])
    if rc != 0:
        raise SystemExit(f"evaluate ranges exited {rc}")
    return float(json.loads(buf.getvalue())["mean_relative_error"])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epsilon", type=float, nargs="+", default=[1.0])
    p.add_argument("--seeds", type=int, default=1, help="runs per epsilon, seeds 1..S (default 1)")
    p.add_argument("--queries", type=int, default=10_000)
    p.add_argument("--workload", choices=("default", "class"), default="default",
                   help="AIM's workload: all 2-way marginals (default) or the 2- and 3-way ones with the class")
    p.add_argument("--work", type=Path, default=Path("/tmp/dprelease-bench-rps-aim"))
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args(argv)
    if not ADULT.exists():
        print(f"skipped: {ADULT} not found (the shared datasets are absent)")
        return 0
    from dprelease.data.table import load_schema, read_table
    from dprelease.evaluation.ranges import evaluate_ranges, make_range_workload, range_baselines, table_data
    from dprelease.relational.rps import table_domain

    args.work.mkdir(parents=True, exist_ok=True)
    schema = load_schema(SCHEMA)
    table = read_table(ADULT, schema)
    raw = table_data(table)
    domain = table_domain(schema)
    workload = make_range_workload(domain, args.queries, seed=0)
    baselines = {k: float(v["mean_relative_error"]) for k, v in range_baselines(raw, domain, workload).items()}
    print(f"Adult: N = {int(raw.total):,}; data-independent tables: "
          + ", ".join(f"{k} {v:.3f}" for k, v in baselines.items()), flush=True)
    runs = []
    for eps in args.epsilon:
        for seed in range(1, args.seeds + 1):
            boxes, seconds = aim_boxes(table, eps, seed, args.workload)
            aim = float(evaluate_ranges(raw, boxes, workload)["mean_relative_error"])
            t = time.perf_counter()
            rps = rps_error(ADULT, SCHEMA, eps, seed, args.work, args.queries)
            runs.append({"epsilon": eps, "seed": seed, "aim": aim, "aim_seconds": seconds, "rps": rps,
                         "rps_seconds": time.perf_counter() - t})
            print(f"epsilon {eps:g} seed {seed}: AIM ({args.workload} workload) {aim:.3f} in {seconds:.0f} s; "
                  f"RPS default {rps:.3f}", flush=True)
    print("\n| ε | runs | AIM range error | AIM time | RPS default | uniform table | empty table |")
    print("|---|---|---|---|---|---|---|")
    for eps in args.epsilon:
        rs = [r for r in runs if r["epsilon"] == eps]
        print(f"| {eps:g} | {len(rs)} | {np.mean([r['aim'] for r in rs]):.3f} | "
              f"{np.mean([r['aim_seconds'] for r in rs]):.0f} s | {np.mean([r['rps'] for r in rs]):.3f} | "
              f"{baselines.get('uniform', float('nan')):.3f} | {baselines.get('empty', float('nan')):.3f} |")
    if args.json:
        args.json.write_text(json.dumps({"baselines": baselines, "runs": runs, "workload": args.workload}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
