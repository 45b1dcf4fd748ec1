"""Coverage of the published 95 % error bars on the real datasets (not a test; docs/accuracy.md).

Per dataset and kind of value, over ``--seeds`` seeded releases: the share of true values inside the intervals
a release ships, and the mean interval width.

* direct noisy values: PrivBasis and TF counts (the k released rows), Basic cells (all 2^|I| - 1, MSNBC only:
  the other universes are too large for Basic), DiffGen leaf x class counts (DiffGen+3, the default, and the
  paper's DiffGen), RPS leaf counts;
* derived answers: ``count(itemset)`` on DiffPart-Prefix (default), DiffPart and stream (IncTDPart-Prefix,
  4 appends, its p-sums) releases over ``--queries``
  random itemsets of 1-3 items taken from random records; range counts on DiffGen and RPS tables over
  ``--queries`` random range queries (evaluation.ranges' workload);
* degree releases of ca-GrQc (theta = 128): the counts behind the sequence (RPS's leaf counts, the cumulative
  summaries), each against the true count of its degree range.

    nice -n 10 .venv/bin/python benchmarks/bench_coverage.py --seeds 10 --queries 1000 [--datasets msnbc,adult]

Prints one JSON line per (dataset, kind) and, at the end, a markdown table.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from dprelease.data import parse_universe_spec, read_transactions  # noqa: E402
from dprelease.evaluation import coverage as cov  # noqa: E402
from dprelease.privacy import SeededNoise  # noqa: E402

DATA = (REPO / ".." / "shared" / "datasets").resolve()
SETS = {"msnbc": ("msnbc/msnbc.dat", "1..17"), "retail": ("retail/retail.dat", None),
        "mushroom": ("mushroom/mushroom.dat", None)}
EPSILON = 1.0


def transactions(name: str, args: argparse.Namespace) -> dict[str, list[dict[str, float]]]:
    from dprelease.itemsets.privbasis import privbasis
    from dprelease.itemsets.tf import tf
    from dprelease.setvalued.basic import basic
    from dprelease.setvalued.diffpart import diffpart
    from dprelease.setvalued.prefixpart import prefix_diffpart

    path, spec = SETS[name]
    db, universe = read_transactions(DATA / path, parse_universe_spec(spec) if spec else None, derive=spec is None)
    out: dict[str, list[dict[str, float]]] = defaultdict(list)
    for seed in range(args.seeds):
        def noise(k: int, seed: int = seed) -> SeededNoise:
            return SeededNoise(1000 * seed + k)

        queries = cov.random_itemsets(db, args.queries, np.random.default_rng(seed))
        kinds = {
            "direct: PrivBasis counts (k=100)":
                lambda: cov.itemset_rows_coverage(db, privbasis(db, universe, 100, EPSILON, noise=noise(1))),
            "direct: TF counts (k=100, m=2)":
                lambda: cov.itemset_rows_coverage(db, tf(db, universe, 100, EPSILON, m=2, noise=noise(2))),
            "direct: Basic cells (all)":
                lambda: cov.basic_cells_coverage(db, basic(db, universe, EPSILON, noise=noise(3))),
            "derived: count(itemset), Basic":
                lambda q=queries: cov.itemset_count_coverage(db, basic(db, universe, EPSILON, noise=noise(3)), q),
            "derived: count(itemset), DiffPart-Prefix":
                lambda q=queries: cov.itemset_count_coverage(
                    db, prefix_diffpart(db, universe, EPSILON, noise=noise(4)), q),
            "derived: count(itemset), stream (IncTDPart-Prefix, 4 appends)":
                lambda q=queries: cov.itemset_count_coverage(db, stream_release(db, universe, noise(6)), q),
            "direct: stream p-sums (IncTDPart, the paper's, 4 appends; two-item cells)":
                lambda: paper_stream_psums(db, noise(7)),
            "derived: count(itemset), stream (IncTDPart, the paper's, 4 appends)":
                lambda q=queries: cov.itemset_count_coverage(db, stream_release(db, universe, noise(7), paper=True), q),
            "derived: count(itemset), DiffPart":
                lambda q=queries: cov.itemset_count_coverage(db, diffpart(db, universe, EPSILON, noise=noise(5)), q),
        }
        for kind, run in kinds.items():
            if ("Basic" in kind and universe.size > 20) or (kind.endswith("DiffPart") and args.skip_faithful):
                continue
            if args.only and args.only not in kind:
                continue
            out[kind].append(run())
        print(f"# {name} seed {seed} done", file=sys.stderr, flush=True)
    return out


def stream_release(db, universe, noise, *, paper: bool = False):
    """A stream over ``db`` cut into 4 batches of consecutive records (U = 3), released after the last: the prefix
    partitioning (the default), or with ``paper`` the paper's IncTDPart (its TBP-tree)."""
    from dprelease.setvalued.incprefix import PrefixStream
    from dprelease.setvalued.inctdpart import TBPTree

    stream = (TBPTree if paper else PrefixStream)(universe.size, EPSILON, 3)
    cuts = np.linspace(0, db.n_records, 5).astype(int)
    for lo, hi in zip(cuts[:-1], cuts[1:]):
        stream.append(db.view(int(lo), int(hi)), noise)
    return stream.release(universe, {"mode": "seeded"})


def paper_stream_psums(db, noise):
    """Direct p-sums where their truth is known without replaying the routing: the records of items {0, 1} only
    (their two-item taxonomy's cells are the leaves, counted on every append), so a leaf's true p-sum is its
    itemset's records over all batches."""
    from dprelease.data import parse_universe_spec
    from dprelease.data.transactions import TransactionDB

    lists = [[i for i in r if i < 2] for r in db.to_lists()]
    small = TransactionDB.from_lists([r for r in lists if r], 2)
    release = stream_release(small, parse_universe_spec("1..2"), noise, paper=True)
    truth: dict[tuple[int, ...], int] = {}
    for r in small.to_lists():
        key = tuple(sorted(r))
        truth[key] = truth.get(key, 0) + 1
    errors = release.intervals()
    values = np.asarray([truth.get(tuple(s.tolist()), 0) for s in release.itemsets], dtype=np.float64)
    return cov.summary(errors.covers(values), errors.high - errors.low, values)


def adult(args: argparse.Namespace) -> dict[str, list[dict[str, float]]]:
    from dprelease.data.table import load_schema, read_adult
    from dprelease.relational.diffgen import diffgen
    from dprelease.relational.diffgen_plus import diffgen_plus3
    from dprelease.relational.rps import rps
    from dprelease.relational.rps_guided import rps_guided

    table = read_adult(DATA / "adult", load_schema(REPO / "examples" / "adult-schema.yaml"))
    out: dict[str, list[dict[str, float]]] = defaultdict(list)
    for seed in range(args.seeds):
        runs = {"DiffGen+3": diffgen_plus3(table, EPSILON, noise=SeededNoise(1000 * seed + 1)),
                "DiffGen": diffgen(table, EPSILON, 10, noise=SeededNoise(1000 * seed + 2)),
                "RPS": rps(table, EPSILON, noise=SeededNoise(1000 * seed + 3)),  # the paper's (faithful)
                "guided RPS": rps_guided(table, EPSILON, noise=SeededNoise(1000 * seed + 4))}  # rps's default
        for method, release in runs.items():
            if args.only and args.only not in method:
                continue
            is_rps = method.endswith("RPS")
            direct = (cov.rps_leaves_coverage(table, release) if is_rps
                      else cov.generalized_cells_coverage(table, release))
            kind = "leaf counts" if is_rps else "leaf x class counts"
            out[f"direct: {method} {kind}"].append(direct)
            ranges = cov.range_coverage(table, release, args.queries, seed)
            out[f"derived: range counts, {method}"].append(ranges["interval"])
            out[f"derived: range counts, {method} (noise-only interval)"].append(ranges["noise_only"])
        print(f"# adult seed {seed} done", file=sys.stderr, flush=True)
    return out


def graph(args: argparse.Namespace) -> dict[str, list[dict[str, float]]]:
    from dprelease.data.graphs import read_edge_list
    from dprelease.graphs.degrees import release_degrees

    g = read_edge_list(DATA / "graphs" / "ca-grqc.txt")
    true = g.degrees()
    theta = 128  # above the largest degree (81): the projection keeps every edge, so the truth is the raw degrees
    out: dict[str, list[dict[str, float]]] = defaultdict(list)
    runs = {"direct: RPS degree histogram (leaf counts, the paper's)": dict(method="rps"),
            "direct: RPS cumulative summary (tail counts after isotonic regression)":
                dict(method="rps", summarize="cumulative"),
            "direct: Day et al. tail counts (after isotonic regression)": dict(method="cumulative"),
            "direct: degrees default, tail counts on geometric ranges (after isotonic regression)":
                dict(method="cumulative", leaves="geometric"),
            "direct: Hay et al. degree per rank (after isotonic regression)": dict(method="hay")}
    for seed in range(args.seeds):
        for k, (kind, options) in enumerate(runs.items()):
            if args.only and args.only not in kind:
                continue
            release = release_degrees(g, theta, EPSILON, noise=SeededNoise(1000 * seed + k), **options)
            measure = cov.degree_ranks_coverage if options.get("method") == "hay" else cov.degree_bins_coverage
            out[kind].append(measure(true, release))
    return out


def pooled(rows: list[dict[str, float]]) -> dict[str, float]:
    n = sum(r["values"] for r in rows)
    inside = sum(r["coverage"] * r["values"] for r in rows if r["values"])
    width = sum(r["mean_width"] * r["values"] for r in rows if r["values"])
    truth = sum(r.get("mean_truth", 0.0) * r["values"] for r in rows if r["values"])
    per_seed = [r["coverage"] for r in rows if r["values"]]
    return {"values": n, "coverage": inside / n if n else float("nan"), "mean_width": width / n if n else float("nan"),
            "mean_truth": truth / n if n else float("nan"),
            "min_seed_coverage": min(per_seed) if per_seed else float("nan"), "seeds": len(rows)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--datasets", default="msnbc,retail,mushroom,adult,ca-grqc")
    ap.add_argument("--skip-faithful", action="store_true", help="leave out DiffPart (the paper's), the slowest")
    ap.add_argument("--only", default="", help="run only the kinds whose name holds this text")
    args = ap.parse_args()
    table = []
    for name in args.datasets.split(","):
        start = time.perf_counter()
        if name == "adult":
            results = adult(args)
        elif name in SETS:
            results = transactions(name, args)
        elif name == "ca-grqc":
            results = graph(args)
        else:
            raise SystemExit(f"unknown dataset {name}")
        for kind, rows in results.items():
            p = pooled(rows)
            table.append((name, kind, p))
            print(json.dumps({"dataset": name, "kind": kind, **{k: round(v, 4) for k, v in p.items()}}), flush=True)
        print(f"# {name}: {time.perf_counter() - start:.0f} s", file=sys.stderr)
    print(f"\n| dataset | kind of value | values | coverage | lowest seed | mean width | mean true value |  (eps = "
          f"{EPSILON}, {args.seeds} seeds, {args.queries} queries)")
    print("|---|---|---|---|---|---|---|")
    for name, kind, p in table:
        print(f"| {name} | {kind} | {p['values']} | {100 * p['coverage']:.1f} % | "
              f"{100 * p['min_seed_coverage']:.1f} % | {p['mean_width']:.1f} | {p['mean_truth']:.1f} |")


if __name__ == "__main__":
    main()
