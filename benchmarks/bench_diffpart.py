"""Benchmark (not a test): DiffPart end to end through the CLI beside a plain Python support-count pass.

    python benchmarks/bench_diffpart.py [--repeat 3] [--skip-generated]

Per input, three runs of `dprelease diffpart` (seeded, epsilon 1): the bare generalized records of
DiffPart-Prefix (`--shape-share 0`), the default that replaced them (the same, its records filled on sparse
baskets), and the paper's algorithm (`--method faithful --fanout 10`). Printed: wall time, its ratio to the
plain pass, peak memory, records released, and the default's time over the bare release's (what the fill costs
end to end).
Targets: on full MSNBC, wall time <= 4x the plain pass and peak memory < 2 GB. Also reports retail (16,470
items) and a *generated* kosarak-scale file (1,000,000 records, 41,270 items, mean length 8, Zipf-like
popularity; made by `dprelease generate`).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from _harness import DATASETS, best_of, dprelease_cmd, measure, plain_pass


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip-generated", action="store_true")
    ap.add_argument("--secure", action="store_true", help="secure RNG (default: seeded experiment mode)")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="dprelease-bench-"))
    cases = [
        ("MSNBC", DATASETS / "msnbc" / "msnbc.dat", "1..17"),
        ("retail", DATASETS / "retail" / "retail.dat", "0..16469"),
    ]
    if not args.skip_generated:
        gen = tmp / "kosarak_like.dat"
        subprocess.run(dprelease_cmd() + ["generate", str(gen), "--records", "1000000", "--items", "41270",
                                          "--seed", "0", "--quiet"], check=True, stdout=subprocess.DEVNULL)
        cases.append(("kosarak-like (generated)", gen, "1..41270"))
    runs = [("bare", ["--shape-share", "0"]), ("default", []), ("faithful", ["--method", "faithful", "--fanout", "10"])]
    print(f"{'dataset':26s} {'run':9s} {'plain pass s':>12s} {'diffpart s':>10s} {'ratio':>6s} {'peak MB':>8s} "
          f"{'released':>9s} {'/ bare':>7s}")
    for name, path, universe in cases:
        if not path.exists():
            print(f"{name:26s} skipped: {path} not found")
            continue
        base = best_of(args.repeat, plain_pass, path)
        seconds = {}
        for run_name, extra in runs:
            out = tmp / f"{path.stem}.{run_name}.dat"
            cmd = dprelease_cmd() + ["diffpart", str(path), "--universe", universe, "--epsilon", "1", *extra,
                                     "-o", str(out), "--quiet", "--force"] + ([] if args.secure else ["--seed", "1"])
            run = best_of(args.repeat, measure, cmd)
            seconds[run_name] = run["seconds"]
            released = sum(1 for _ in open(out))
            versus = f"{run['seconds'] / seconds['bare']:7.2f}" if "bare" in seconds else f"{'':7s}"
            print(f"{name:26s} {run_name:9s} {base['seconds']:12.2f} {run['seconds']:10.2f} "
                  f"{run['seconds'] / base['seconds']:6.2f} {run['peak_kib'] / 1024:8.0f} {released:9d} {versus}")
        print(f"{name:26s} default / bare = {seconds['default'] / seconds['bare']:.2f}x")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
