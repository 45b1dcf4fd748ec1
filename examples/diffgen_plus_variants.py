"""Paired comparison of DiffGen+ settings (docs/diffgen.md, "Round 2"); not a test, not a benchmark.

Every variant sees the same splits (``split_table(table, 0, r)``) and the same noise seeds
(``1000 r + 7 + 1000 eps + offset``), so a post-processing change sees exactly the same selections.
Prints one JSON line per (variant, eps): mean and stdev of CA (%) over the runs, mean seconds per release.

    .venv/bin/python examples/diffgen_plus_variants.py --data ../shared/datasets/adult \\
        --schema examples/adult-schema.yaml --epsilon 0.1 0.25 0.5 1 --runs 10 \\
        --variants '{"plus": {}, "plus2": {"stop": "auto", "switch": 5000}}' [--offset 500000]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from dprelease.data.table import load_schema, read_table  # noqa: E402
from dprelease.experiments.diffgen import split_table  # noqa: E402
from dprelease.privacy import make_noise  # noqa: E402
from dprelease.relational.classify import generalized_accuracy  # noqa: E402
from dprelease.relational.diffgen_plus import diffgen_plus  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True, help="table (or the Adult folder)")
    p.add_argument("--schema", required=True, help="schema file")
    p.add_argument("--epsilon", type=float, nargs="+", required=True, help="budgets")
    p.add_argument("--runs", type=int, default=10, help="splits per budget (default 10)")
    p.add_argument("--variants", required=True, help="JSON object: name -> keyword arguments of diffgen_plus")
    p.add_argument("--offset", type=int, default=0, help="added to every noise seed (default 0: the first seed set)")
    args = p.parse_args()
    table = read_table(Path(args.data), load_schema(args.schema))
    splits = [split_table(table, 0, r) for r in range(args.runs)]
    for name, settings in json.loads(args.variants).items():
        for eps in args.epsilon:
            accs, secs = [], []
            for r, (train, test) in enumerate(splits):
                noise = make_noise(1000 * r + 7 + int(eps * 1000) + args.offset)
                t0 = time.perf_counter()
                release = diffgen_plus(train, eps, noise=noise, **settings)
                secs.append(time.perf_counter() - t0)
                accs.append(100.0 * generalized_accuracy(release, test))
            print(json.dumps({"variant": name, "epsilon": eps, "accuracy": round(statistics.fmean(accs), 2),
                              "stdev": round(statistics.stdev(accs), 2) if len(accs) > 1 else 0.0,
                              "seconds": round(statistics.fmean(secs), 3)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
