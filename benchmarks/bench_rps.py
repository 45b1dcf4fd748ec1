"""Benchmark RPS (not a test). Prints ratios measured in the same run (the machine is shared).

1. Adult (45,222 rows): RPS (depth 10, eps 1) against DiffGen (h = 10, eps 1), the algorithms alone (best of 3)
   and the two commands end to end (read + release + write CSV, in fresh processes). Target: RPS < 2x DiffGen.
2. A 1,000,000-row table (Adult plus random variations of its records, as benchmarks/bench_diffgen.py makes
   it): RPS at depths 10 and 16 against one pyarrow read of the same CSV. Target: within 5x the read.
3. Utility (``--part utility``): range-count error (mean relative error, sanity bound 0.1% of N; 2,000 random
   queries over the public domain) of guided RPS (the default) and the paper's RPS (``--method faithful``)
   beside an empty table and a uniform table of N records, at eps 0.1, 0.5 and 1, mean over ``--seeds``
   releases, on Adult and on three generated tables of other shapes: a clinic table with a rare class and
   correlated numbers, the Bayesian-network table, and a taxi-trip table without a class (heavy tails, near
   functional dependencies). Target: guided <= 0.6 x uniform on Adult at eps = 1.

Both noise modes are timed: seeded (the experiments) and secure (the default for releases).

    .venv/bin/python benchmarks/bench_rps.py [--part speed|utility|all] [--rows 1000000] [--seeds 5]
        [--out results/rps/bench.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import dprelease_cmd, measure  # noqa: E402
from bench_diffgen import adult_frame, blow_up, header_schema  # noqa: E402

from dprelease.data.table import load_schema, read_adult, read_table  # noqa: E402
from dprelease.privacy import SecureNoise, SeededNoise  # noqa: E402
from dprelease.relational import diffgen  # noqa: E402
from dprelease.relational.rps import rps  # noqa: E402
from dprelease.relational.rps_guided import rps_guided  # noqa: E402

ADULT = REPO.parent / "shared" / "datasets" / "adult"
REPEATS = 3


def best(fn) -> float:
    t = float("inf")
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        fn()
        t = min(t, time.perf_counter() - t0)
    return t


def utility_tables():
    """(name, encoded table): Adult, then generated tables of other shapes (fixed generator seeds)."""
    import pandas as pd

    from dprelease.data import bayesnet, generators
    from dprelease.data.table import encode_frame, parse_schema

    yield "adult", read_adult(ADULT, load_schema(REPO / "examples" / "adult-schema.yaml"))
    frame, spec = generators.skewed_label_table(30_000, seed=1)
    yield "clinic (generated)", encode_frame(frame, parse_schema(spec))
    cols, _ = bayesnet.generate_bayesnet(50_000, seed=1)
    yield "bayesnet (generated)", encode_frame(pd.DataFrame(cols), parse_schema(bayesnet.SCHEMA))
    frame, spec = generators.unlabelled_table(30_000, seed=1)
    yield "trips, no class (generated)", encode_frame(frame, parse_schema(spec, require_class=False))


def utility(seeds: int) -> dict[str, object]:
    """Range-count error of guided and faithful RPS beside the empty and uniform tables (printed as a table)."""
    import numpy as np

    from dprelease.evaluation.ranges import answer, evaluate_ranges, make_range_workload, table_data
    from dprelease.relational.rps import table_domain
    from dprelease.relational.rps_guided import rps_guided

    out: dict[str, object] = {}
    print("| table | eps | guided (default) | faithful | empty | uniform | guided / uniform |")
    print("|---|---|---|---|---|---|---|")
    for name, table in utility_tables():
        dom = table_domain(table.schema)
        w = make_range_workload(dom, 2000, seed=0)
        raw = table_data(table)
        true = answer(raw, w)
        base = evaluate_ranges(raw, raw, w, raw_answers=true, domain=dom)["baselines"]
        for eps in (0.1, 0.5, 1.0):
            def err(release) -> float:
                return float(evaluate_ranges(raw, table_data(release.table), w, raw_answers=true)["mean_relative_error"])
            g = [err(rps_guided(table, eps, noise=SeededNoise(s))) for s in range(seeds)]
            f = [err(rps(table, eps, noise=SeededNoise(s))) for s in range(seeds)]
            row = {"guided": float(np.mean(g)), "guided_sd": float(np.std(g)), "faithful": float(np.mean(f)),
                   "empty": base["empty"], "uniform": base["uniform"]}
            out[f"{name} eps={eps}"] = row
            print(f"| {name} | {eps:g} | {row['guided']:.3f} ± {row['guided_sd']:.3f} | {row['faithful']:.2f} | "
                  f"{row['empty']:.3f} | {row['uniform']:.2f} | {row['guided'] / row['uniform']:.4f} |", flush=True)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--part", choices=("speed", "utility", "all"), default="all")
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--out", default=str(REPO / "results" / "rps" / "bench.json"))
    args = ap.parse_args()
    results: dict[str, object] = {}
    if args.part in ("utility", "all"):
        results["utility"] = utility(args.seeds)
    if args.part == "utility":
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(results, indent=2) + "\n")
        return 0
    schema = load_schema(REPO / "examples" / "adult-schema.yaml")
    adult = read_adult(ADULT, schema)
    for mode, make in (("seeded", lambda: SeededNoise(1)), ("secure", SecureNoise)):
        t_rps = best(lambda: rps(adult, 1.0, noise=make(), depth=10))
        t_dg = best(lambda: diffgen(adult, 1.0, 10, noise=make()))
        t_guided = best(lambda: rps_guided(adult, 1.0, noise=make()))
        results[f"adult_{mode}"] = {"rps_s": t_rps, "diffgen_s": t_dg, "rps_over_diffgen": t_rps / t_dg,
                                    "guided_s": t_guided, "guided_over_diffgen": t_guided / t_dg}
        print(json.dumps({"table": "adult", "mode": mode, **{k: round(v, 4) for k, v in results[f"adult_{mode}"].items()}}))
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        hs = header_schema(tmp)
        small = tmp / "adult.csv"
        adult_frame(adult).to_csv(small, index=False)
        cmd = dprelease_cmd()
        e2e = {}
        for name, extra in (("rps", ["--depth", "10"]), ("diffgen", ["--method", "faithful", "--specializations", "10"])):
            runs = [measure(cmd + [name, str(small), "--schema", str(hs), "--epsilon", "1", "-o",
                                   str(tmp / f"{name}.csv"), "-q", "--force", *extra]) for _ in range(REPEATS)]
            e2e[name] = min(r["seconds"] for r in runs)
        results["adult_cli"] = {"rps_s": e2e["rps"], "diffgen_s": e2e["diffgen"],
                                "rps_over_diffgen": e2e["rps"] / e2e["diffgen"]}
        print(json.dumps({"table": "adult", "mode": "cli end to end (secure)",
                          **{k: round(v, 4) for k, v in results["adult_cli"].items()}}))
        big = tmp / "big.csv"
        blow_up(adult_frame(adult), args.rows).to_csv(big, index=False)
        import pyarrow.csv as pacsv

        t_read = best(lambda: pacsv.read_csv(big))
        big_schema = load_schema(hs)
        t_validate = best(lambda: read_table(big, big_schema))
        table = read_table(big, big_schema)
        for depth in (10, 16):
            for mode, make in (("seeded", lambda: SeededNoise(1)), ("secure", SecureNoise)):
                t = best(lambda: rps(table, 1.0, noise=make(), depth=depth))
                key = f"rows{args.rows}_depth{depth}_{mode}"
                results[key] = {"pyarrow_read_s": t_read, "read_validate_s": t_validate, "rps_s": t,
                                "rps_over_pyarrow_read": t / t_read,
                                "read_rps_over_pyarrow_read": (t_validate + t) / t_read}
                print(json.dumps({"table": f"{args.rows} rows", "depth": depth, "mode": mode,
                                  **{k: round(v, 4) for k, v in results[key].items()}}))
        runs = [measure(cmd + ["rps", str(big), "--schema", str(hs), "--epsilon", "1", "-o", str(tmp / "big-out.csv"),
                               "-q", "--force", "--depth", "16"]) for _ in range(REPEATS)]
        t_cli = min(r["seconds"] for r in runs)
        results["big_cli"] = {"cli_s": t_cli, "pyarrow_read_s": t_read, "cli_over_pyarrow_read": t_cli / t_read}
        print(json.dumps({"table": f"{args.rows} rows", "mode": "cli end to end (secure), depth 16",
                          **{k: round(v, 4) for k, v in results["big_cli"].items()}}))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
