"""Benchmark (not a test): DiffPart-Prefix's default with F of M frequent items (``--max-items``), M up to and past 62.

For retail (../shared/datasets, skipped with a message when absent), mushroom, and the generated long-baskets,
kosarak-like (100,000 records) and dense-ties sets, at epsilon 0.5 and 1 and seeds 0..S-1, the default release
(``prefix_diffpart``, shape share "auto") with each M prints the mean of: |F| (the items that passed the
selection cutoff), the released mean record length and its length TV, top-100 utility, the error of
``evaluate counting``'s frequent-itemset workload and of its random workload (10,000 queries, seed 0), and the
seconds of one release. The baselines of both workloads (empty release, uniform baskets) are printed once per set.

    nice .venv/bin/python benchmarks/bench_prefix_items.py [--sets retail,long-baskets,kosarak-like]
        [--max-items 16,32,62,124,248] [--seeds 3] [--queries 10000]

Generated sets: long-baskets, kosarak-like, dense-ties, and other shapes of the same generators (kos-long,
long-steep, long-flat, kos-short, long-wide, kos-steep, kosarak-1m).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from dprelease.data import generators as G  # noqa: E402
from dprelease.data.io import read_transactions  # noqa: E402
from dprelease.data.universe import Universe, parse_universe_spec  # noqa: E402
from dprelease.evaluation.counting import evaluate_counting_with_baselines  # noqa: E402
from dprelease.evaluation.shape import length_shape  # noqa: E402
from dprelease.evaluation.topk import topk_utility  # noqa: E402
from dprelease.privacy import make_noise  # noqa: E402
from dprelease.setvalued.prefixpart import prefix_diffpart  # noqa: E402

DATASETS = ROOT.parent / "shared" / "datasets"
SHARED = {"retail": ("retail/retail.dat", "0..16469"), "mushroom": ("mushroom/mushroom.dat", "1..119")}
GENERATED = {"long-baskets": lambda: G.long_baskets(), "kosarak-like": lambda: G.kosarak_like(n_records=100_000),
             "dense-ties": lambda: G.dense_near_ties(),
             # other shapes of the same generators (docs/diffpart.md, "Why no rule chooses M")
             "kos-long": lambda: G.kosarak_like(n_records=100_000, mean_length=16.0),
             "long-steep": lambda: G.long_baskets(zipf_exponent=1.4),
             "long-flat": lambda: G.long_baskets(zipf_exponent=0.7, n_records=30_000),
             "kos-short": lambda: G.kosarak_like(n_records=200_000, mean_length=4.0, n_items=20_000, seed=3),
             "long-wide": lambda: G.long_baskets(n_records=40_000, n_items=20_000, zipf_exponent=1.1,
                                                 short_median=9.0, seed=4),
             "kos-steep": lambda: G.kosarak_like(n_records=60_000, mean_length=10.0, zipf_exponent=1.3,
                                                 n_items=8_000, seed=5),
             "kosarak-1m": lambda: G.kosarak_like(n_records=1_000_000)}


def load(name: str):
    if name in SHARED:
        path, spec = SHARED[name]
        if not (DATASETS / path).exists():
            return None
        u = parse_universe_spec(spec)
        return read_transactions(DATASETS / path, u)[0], u
    db = GENERATED[name]()
    return db, Universe.from_range(0, db.n_items - 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sets", default="retail,long-baskets,kosarak-like")
    ap.add_argument("--max-items", default="16,32,62,124,248")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--queries", type=int, default=10_000, help="queries of the random counting workload")
    args = ap.parse_args()
    ms = [int(x) for x in args.max_items.split(",")]
    print("| set | ε | M | \\|F\\| | mean length (raw) | length TV | top-100 | frequent-itemset error | "
          "random error | seconds |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name in args.sets.split(","):
        loaded = load(name)
        if loaded is None:
            print(f"skipped {name}: not found under {DATASETS} (the shared datasets are absent)", file=sys.stderr)
            continue
        db, u = loaded
        base = None
        for eps in (0.5, 1.0):
            for m in ms:
                rows = []
                for seed in range(args.seeds):
                    t = time.perf_counter()
                    rel = prefix_diffpart(db, u, eps, noise=make_noise(seed), max_items=m)
                    secs = time.perf_counter() - t
                    rdb = rel.to_db()
                    shape = length_shape(db, rdb)
                    ev = evaluate_counting_with_baselines(db, rdb, n_queries=args.queries, seed=0)
                    base = ev["baselines"]
                    rows.append([rel.manifest["release"]["frequent_items"], shape["released_mean_length"],
                                 shape["tv"], topk_utility(db, rdb, 100), ev["frequent"]["mean_relative_error"],
                                 ev["mean_relative_error"], secs])
                a = np.asarray(rows, dtype=float)
                mean = a.mean(axis=0)
                se = a[:, 3].std(ddof=1) / np.sqrt(len(rows)) if len(rows) > 1 else 0.0
                print(f"| {name} | {eps:g} | {m} | {mean[0]:.0f} | {mean[1]:.2f} ({shape['raw_mean_length']:.2f}) | "
                      f"{mean[2]:.3f} | {mean[3]:.3f} ± {se:.3f} | {mean[4]:.3f} | {mean[5]:.4f} | {mean[6]:.2f} |",
                      flush=True)
        if base is not None:
            print(f"| {name} | baselines | empty: frequent {base['empty']['frequent']['mean_relative_error']:.3f}, "
                  f"random {base['empty']['mean_relative_error']:.4f}; uniform baskets: frequent "
                  f"{base['uniform']['frequent']['mean_relative_error']:.3f}, random "
                  f"{base['uniform']['mean_relative_error']:.4f} | | | | | | | | |", flush=True)


if __name__ == "__main__":
    main()
