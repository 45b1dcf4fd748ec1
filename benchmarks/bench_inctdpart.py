"""Benchmark (not a test): IncTDPart append cost against routing the batch once and against DiffPart.

    /work/venv/bin/python benchmarks/bench_inctdpart.py [--data msnbc.dat] [--universe 1..17] [--out DIR]

Measures, on MSNBC (initial 400,000 random records, batches of 10,000, f = 10, epsilon = 1):

* ``route once``: reading the batch file + one vectorised routing pass of its records
  (child masks of every record at the root's split, as DiffPart's first level does);
* ``append (memory)``: :meth:`TBPTree.append` on a tree built from the 400,000 records;
* ``append (state)``: ``stream append`` end to end (read batch, SQLite transaction, commit,
  release file written atomically), median over several appends;
* the whole U = 50 run through the state (init + 51 appends) against DiffPart once on the
  same 900,000 records.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from dprelease.data.io import atomic_output, read_transactions, write_transactions
from dprelease.data.universe import parse_universe_spec
from dprelease.privacy import make_noise
from dprelease.setvalued.diffpart import child_masks, diffpart
from dprelease.setvalued.inctdpart import TBPTree, append_seed
from dprelease.setvalued.stream_state import append_batch, init_state, load_tree, reemit

ROOT = Path(__file__).resolve().parents[1]


def _t(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str((ROOT / ".." / "shared" / "datasets" / "msnbc" / "msnbc.dat").resolve()))
    ap.add_argument("--universe", default="1..17")
    ap.add_argument("--initial", type=int, default=400_000)
    ap.add_argument("--batch", type=int, default=10_000)
    ap.add_argument("--updates", type=int, default=50)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", default=str(ROOT / "results" / "inctdpart"))
    args = ap.parse_args()
    universe = parse_universe_spec(args.universe)
    db, _ = read_transactions(args.data, universe)
    perm = np.random.default_rng(0).permutation(db.n_records)
    U = args.updates
    work = Path(tempfile.mkdtemp(prefix="bench_inctdpart_"))
    try:
        files = []
        for i in range(U + 1):
            rows = perm[: args.initial] if i == 0 else perm[args.initial + (i - 1) * args.batch:
                                                            args.initial + i * args.batch]
            path = work / f"b{i}.dat"
            with atomic_output(path) as fh:
                write_transactions(fh, db.subset(np.sort(rows)), universe)
            files.append(path)
        results: dict[str, object] = {"dataset": args.data, "initial": args.initial, "batch": args.batch,
                                      "updates": U, "epsilon": args.epsilon}

        # routing the batch once: read + child masks at the root's split
        tree0 = TBPTree(universe.size, args.epsilon, U)
        route = []
        for i in range(1, args.repeats + 1):
            t, (b, _) = _t(lambda: read_transactions(files[i], universe))
            t2, _ = _t(lambda: child_masks(b, np.arange(b.n_records), tree0.taxonomy, tree0.taxonomy.root))
            route.append(t + t2)
        results["route_once_s"] = statistics.median(route)

        # in-memory append on a tree from the initial records
        tree = TBPTree(universe.size, args.epsilon, U)
        init_db, _ = read_transactions(files[0], universe)
        results["initial_append_memory_s"], _ = _t(lambda: tree.append(init_db, make_noise(append_seed(1, 0))))
        mem = []
        for i in range(1, args.repeats + 1):
            b, _ = read_transactions(files[i], universe)
            t, _ = _t(lambda: tree.append(b, make_noise(append_seed(1, i))))
            mem.append(t)
        results["append_memory_s"] = statistics.median(mem)

        # end to end through the SQLite state: the whole U = 50 run
        state = work / "s.db"
        t_init, _ = _t(lambda: init_state(state, epsilon=args.epsilon, updates=U, fanout=10, c1=tree.c1, c2=tree.c2,
                                          universe_spec=args.universe, seed=1))
        per = []
        t_run0 = time.perf_counter()
        for i in range(U + 1):
            t, _ = _t(lambda: append_batch(state, files[i], work / "release.dat"))
            per.append(t)
        results["whole_run_state_s"] = time.perf_counter() - t_run0 + t_init
        results["initial_append_state_s"] = per[0]
        results["append_state_median_s"] = statistics.median(per[1:])
        results["append_state_max_s"] = max(per[1:])
        results["append_state_first5_s"] = [round(x, 4) for x in per[1:6]]
        results["append_state_last5_s"] = [round(x, 4) for x in per[-5:]]
        results["reemit_release_s"] = statistics.median(
            [_t(lambda: reemit(state, work / "again.dat"))[0] for _ in range(3)])
        results["load_tree_s"] = statistics.median([_t(lambda: load_tree(state))[0] for _ in range(3)])
        final_tree, _ = load_tree(state)
        results["tree_nodes_final"] = len(final_tree.nodes)
        results["state_bytes"] = state.stat().st_size

        # DiffPart once on the same data
        full_rows = np.sort(perm[: args.initial + U * args.batch])
        full = db.subset(full_rows)
        results["diffpart_initial_s"], _ = _t(lambda: diffpart(init_db, universe, args.epsilon / (U + 1),
                                                               noise=make_noise(3)))
        results["diffpart_full_s"], _ = _t(lambda: diffpart(full, universe, args.epsilon / (U + 1),
                                                            noise=make_noise(3)))
        results["append_over_route"] = results["append_state_median_s"] / results["route_once_s"]
        results["append_state_minus_release_over_route"] = (
            results["append_state_median_s"] - results["reemit_release_s"] + results["load_tree_s"]) / results["route_once_s"]
        results["append_memory_over_route"] = results["append_memory_s"] / results["route_once_s"]
        results["whole_run_over_diffpart_full"] = results["whole_run_state_s"] / results["diffpart_full_s"]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with atomic_output(out / "bench_inctdpart.json") as fh:
        json.dump(results, fh, indent=2)
    for k, v in results.items():
        print(f"{k}: {round(v, 4) if isinstance(v, float) else v}")


if __name__ == "__main__":
    main()
