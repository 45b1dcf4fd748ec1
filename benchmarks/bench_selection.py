"""Cost of exact selection in secure mode: DiffGen on Adult, PrivBasis and TF on retail.

Each algorithm runs with the secure source (OpenDP's exact Gumbel report-noisy-max, sequential rounds over
score classes) and with a reference secure source that keeps float Gumbel-max on secure uniforms (the code
before the fix), in the same process; the script prints median seconds and the ratio exact / float.

    .venv/bin/python benchmarks/bench_selection.py [--reps 3]
"""

from __future__ import annotations

import argparse
import statistics
import time

from _harness import DATASETS, REPO

from dprelease.privacy import SecureNoise
from dprelease.privacy.noise import NoiseSource


class FloatGumbelSecureNoise(SecureNoise):
    """Secure bits, but the pre-fix float Gumbel-max selection (the reference)."""

    exact_selection = False
    gumbel_argmax = NoiseSource.gumbel_argmax
    gumbel_top_k = NoiseSource.gumbel_top_k


def _median_seconds(fn, make_noise, reps: int) -> float:
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn(make_noise())
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    from dprelease.data import parse_universe_spec, read_transactions
    from dprelease.data.table import load_schema, read_adult
    from dprelease.itemsets.privbasis import privbasis
    from dprelease.itemsets.tf import tf
    from dprelease.relational.diffgen import diffgen

    table = read_adult(DATASETS / "adult", load_schema(REPO / "examples" / "adult-schema.yaml"))
    db, u = read_transactions(DATASETS / "retail" / "retail.dat", parse_universe_spec("0..16469"))
    runs = {
        "diffgen adult eps=1 h=10 max": lambda nz: diffgen(table, 1.0, 10, noise=nz, score="max"),
        "diffgen adult eps=1 h=10 infogain": lambda nz: diffgen(table, 1.0, 10, noise=nz, score="infogain"),
        "privbasis retail k=50": lambda nz: privbasis(db, u, 50, 1.0, noise=nz),
        "privbasis retail k=100": lambda nz: privbasis(db, u, 100, 1.0, noise=nz),
        "tf exponential retail k=100 m=1": lambda nz: tf(db, u, 100, 1.0, 1, noise=nz, variant="exponential"),
    }
    print(f"{'run':40s} {'float s':>8s} {'exact s':>8s} {'ratio':>6s}")
    for name, fn in runs.items():
        ref = _median_seconds(fn, FloatGumbelSecureNoise, args.reps)
        exact = _median_seconds(fn, SecureNoise, args.reps)
        print(f"{name:40s} {ref:8.2f} {exact:8.2f} {exact / ref:6.2f}", flush=True)


if __name__ == "__main__":
    main()
