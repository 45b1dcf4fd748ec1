"""``evaluate counting`` before and after vectorising (not a test).

The workload (DiffPart sec. 5.1) is 50,000 random queries over the universe; the old evaluator answered them
one at a time (tests/reference_counting.py keeps it), the new one all at once. On a generated kosarak-like
file (41,270 items) and on the real retail data it prints, as CPU seconds and ratios: reading the raw file,
making the workload, building the counters, answering the queries (old and new), and the answers' equality.

    .venv/bin/python benchmarks/bench_counting.py [--records 100000] [--queries 50000]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "tests"))

from reference_counting import ReferenceSupportCounter  # noqa: E402

from dprelease.data import parse_universe_spec, read_transactions  # noqa: E402
from dprelease.data.generators import write_kosarak_like  # noqa: E402
from dprelease.engine.supports import SupportCounter  # noqa: E402
from dprelease.evaluation.counting import make_workload  # noqa: E402

DATASETS = REPO.parent / "shared" / "datasets"


def _cpu(fn):
    t = time.process_time()
    out = fn()
    return time.process_time() - t, out


def bench(path: Path, spec: str, label: str, n_queries: int) -> dict[str, object]:
    universe = parse_universe_spec(spec)
    t_read, (db, _) = _cpu(lambda: read_transactions(path, universe))
    t_work, wl = _cpu(lambda: make_workload(db.n_items, int(db.lengths.max()), n_queries=n_queries, seed=0))
    t_old_build, old = _cpu(lambda: ReferenceSupportCounter(db))
    t_old, old_answers = _cpu(lambda: [old.count_many(q) for q in wl.subsets])
    t_new_build, new = _cpu(lambda: SupportCounter(db))
    t_new, new_answers = _cpu(lambda: [new.count_flat(*wl.flat(i)) for i in range(len(wl.subsets))])
    same = all(np.array_equal(a, b) for a, b in zip(old_answers, new_answers))
    old_total, new_total = t_old_build + t_old, t_new_build + t_new
    return {"data": label, "N": db.n_records, "items": db.n_items, "queries": n_queries, "read_s": round(t_read, 3),
            "workload_s": round(t_work, 3), "old_counter_s": round(old_total, 3), "new_counter_s": round(new_total, 3),
            "answer_speedup": round(old_total / new_total, 1),
            "old_fixed_cost_over_read": round((t_work + old_total) / t_read, 1),
            "new_fixed_cost_over_read": round((t_work + new_total) / t_read, 1), "identical_answers": same}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=50_000)
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "kosarak-like.dat"
        with open(path, "wb") as fh:
            write_kosarak_like(fh, args.records, 41_270, 8.0, seed=0)
        rows.append(bench(path, "1..41270", f"kosarak-like (generated, {args.records:,})", args.queries))
    retail = DATASETS / "retail" / "retail.dat"
    if retail.exists():
        rows.append(bench(retail, "0..16469", "retail", args.queries))
    else:
        print(f"skipping retail: {retail} not found", file=sys.stderr)
    for r in rows:
        print(json.dumps(r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
