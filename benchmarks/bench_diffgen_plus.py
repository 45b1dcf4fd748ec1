"""Benchmark DiffGen+ and DiffGen+2 against faithful DiffGen and DiffP-C4.5 on Adult (not a test).

Wall time (best of 5) of one release on the Adult training split (seed 0, run 0) at each eps, as a ratio
to faithful DiffGen (h = 10) measured in the same run. AIM's time (minutes) comes from
`experiment diffgen-classification --methods aim` in its own venv (docs/diffgen.md); the target is
DiffGen+ <= 1/100 of it.

    .venv/bin/python benchmarks/bench_diffgen_plus.py [--epsilon 0.1 1]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from dprelease.data.table import load_schema, read_adult  # noqa: E402
from dprelease.experiments.diffgen import split_table  # noqa: E402
from dprelease.privacy import SeededNoise  # noqa: E402
from dprelease.relational import diffgen  # noqa: E402
from dprelease.relational.diffgen_plus import diffgen_plus, diffgen_plus2  # noqa: E402
from dprelease.relational.diffp_c45 import diffp_c45  # noqa: E402


def best(fn, repeat: int = 5) -> float:
    times = []
    for i in range(repeat):
        t0 = time.perf_counter()
        fn(i)
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epsilon", type=float, nargs="+", default=[0.1, 1.0], help="budgets (default 0.1 1)")
    args = p.parse_args()
    schema = load_schema(REPO / "examples" / "adult-schema.yaml")
    table = read_adult(REPO.parent / "shared" / "datasets" / "adult", schema)
    train, _ = split_table(table, 0, 0)
    print(f"Adult train split: {train.n_records} rows")
    for eps in args.epsilon:
        ref = best(lambda i, eps=eps: diffgen(train, eps, 10, noise=SeededNoise(i)))
        plus = best(lambda i, eps=eps: diffgen_plus(train, eps, noise=SeededNoise(i)))
        plus2 = best(lambda i, eps=eps: diffgen_plus2(train, eps, noise=SeededNoise(i)))
        c45 = best(lambda i, eps=eps: diffp_c45(train, eps, noise=SeededNoise(i)))
        print(f"eps={eps:g}: DiffGen h=10 {ref:.3f} s; DiffGen+ {plus:.3f} s ({plus / ref:.2f}x); "
              f"DiffGen+2 {plus2:.3f} s ({plus2 / ref:.2f}x); DiffP-C4.5 {c45:.3f} s ({c45 / ref:.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
