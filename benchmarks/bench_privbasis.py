"""Benchmark (not a test): PrivBasis on retail (k = 100) and on a generated kosarak-scale file
(1,000,000 transactions, 41,270 items; k = 200), beside the plain one-pass item count.

Two baselines are timed: (a) reading the file and counting every item once (`read + count`), and
(b) the in-memory count alone (`np.bincount` over the CSR items). PrivBasis is timed end to end from
the file (read + algorithm) and for the algorithm alone. Target: <= 5x the one pass.

    /work/venv/bin/python benchmarks/bench_privbasis.py [--kosarak PATH] [--repeat 3]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from dprelease.data.generators import kosarak_like
from dprelease.data.io import atomic_output, read_transactions, write_transactions
from dprelease.data.universe import Universe
from dprelease.itemsets.privbasis import privbasis
from dprelease.privacy import make_noise

REPO = Path(__file__).resolve().parents[1]
RETAIL = (REPO / ".." / "shared" / "datasets" / "retail" / "retail.dat").resolve()


def _best(fn, repeat: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def bench(path: Path, universe: Universe, k: int, repeat: int, secure: bool) -> dict:
    read_s, (db, _) = _best(lambda: read_transactions(path, universe), repeat)
    count_s, _ = _best(lambda: np.bincount(db.items, minlength=db.n_items), repeat)
    noise = (lambda: make_noise(None)) if secure else (lambda: make_noise(1))
    pb_s, rel = _best(lambda: privbasis(db, universe, k, 1.0, noise=noise()), repeat)
    one_pass = read_s + count_s
    return {"file": path.name, "N": db.n_records, "items": db.n_items, "k": k,
            "read_s": read_s, "count_s": count_s, "privbasis_s": pb_s,
            "lambda": rel.trace["lambda"], "bases": len(rel.trace["bases"]),
            "ratio_end_to_end": (read_s + pb_s) / one_pass, "ratio_algorithm_vs_count": pb_s / count_s,
            "ratio_algorithm_vs_one_pass": pb_s / one_pass}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kosarak", default="/tmp/kosarak_like_1M.dat")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--secure", action="store_true", help="time with the secure RNG (default: seeded)")
    args = ap.parse_args()
    kpath = Path(args.kosarak)
    if not kpath.exists():
        db = kosarak_like(1_000_000, 41_270, 8.0, seed=0)
        with atomic_output(kpath) as fh:
            write_transactions(fh, db, Universe.from_range(1, 41_270))
    rows = []
    if RETAIL.exists():
        rows.append(bench(RETAIL, Universe.from_range(0, 16469), 100, args.repeat, args.secure))
    rows.append(bench(kpath, Universe.from_range(1, 41_270), 200, args.repeat, args.secure))
    for r in rows:
        print(f"{r['file']}: N={r['N']:,} |I|={r['items']:,} k={r['k']}  read {r['read_s']:.3f}s  "
              f"item count {r['count_s']:.4f}s  PrivBasis {r['privbasis_s']:.3f}s (lambda={r['lambda']}, "
              f"w={r['bases']})  read+PB / read+count = {r['ratio_end_to_end']:.2f}x  "
              f"PB / (read+count) = {r['ratio_algorithm_vs_one_pass']:.2f}x  PB / count = {r['ratio_algorithm_vs_count']:.0f}x")


if __name__ == "__main__":
    main()
