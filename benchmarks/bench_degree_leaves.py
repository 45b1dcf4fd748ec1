"""Benchmark (not a test): the recommended degree summary's leaves against Day et al.'s single degrees, many seeds.

``degrees``' default releases tail counts at the lower ends of public leaves (``geometric_leaves``: a function of
theta alone). This prints, for theta 64 / 128 / 256 and epsilon 1, the mean KS and EMD (``evaluate degrees``'s
``degree_metrics``, against the true unprojected degrees) with their standard errors over ``--seeds`` seeds of:

* ``day``: Day et al.'s theta-cumulative (every degree its own leaf, ``--method cumulative``);
* ``default``: the current leaves (single degrees up to 32, then a // 16 wide up to theta = 64, a // 32 above);
* ``a/16``: the earlier leaves, a // 16 wide above 32 at every theta (for the before / after);
* ``uniform``: a data-independent baseline, the true number of nodes with degrees uniform on 1..theta.

Graphs: the three SNAP graphs of ../shared/datasets/graphs (skipped with a message when absent) and four
generated ones of other shapes (``dprelease.data.generators``): ``hub`` (power law with clustering, mean degree
8), ``near-regular`` (24-regular less 5 % of its edges), ``dense-hub`` (the hub generator at 20 edges per node:
mean degree about 40, most nodes above 32) and ``near-regular-100`` (100-regular less 5 %: a spike between 64
and 128, where wide leaves spread it). A row is marked ``worse`` where a method's mean is above Day et al.'s.

    nice .venv/bin/python benchmarks/bench_degree_leaves.py [--seeds 150] [--thetas 64,128,256] [--work DIR]

150 seeds take about 4 minutes on one core (everything runs in this process, seeded noise).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from dprelease.data import generators as G  # noqa: E402
from dprelease.data.graphs import read_edge_list  # noqa: E402
from dprelease.evaluation.degrees import degree_metrics  # noqa: E402
from dprelease.graphs import degrees as D  # noqa: E402
from dprelease.privacy.noise import make_noise  # noqa: E402

DATASETS = ROOT.parent / "shared" / "datasets" / "graphs"
SHARED = {"ca-GrQc": "ca-grqc.txt", "ca-HepTh": "ca-hepth.txt", "facebook": "facebook.txt"}
GENERATED = {
    "hub": lambda: G.hub_graph(seed=0),
    "near-regular": lambda: G.near_regular_graph(seed=0),
    "dense-hub": lambda: G.hub_graph(n_nodes=4_000, edges_per_node=20, seed=1),
    "near-regular-100": lambda: G.near_regular_graph(n_nodes=3_000, degree=100, seed=2),
}


def sixteenth_leaves(theta: int, model: str = D.EDGE_LIST) -> np.ndarray:
    """The earlier rule: single degrees up to 32, then leaves a // 16 wide at every theta, theta its own leaf."""
    ends = [1]
    while True:
        a = ends[-1]
        nxt = a + (1 if a < D.FINE_DEGREES else max(1, a // 16))
        if nxt >= theta:
            return np.asarray(ends + [theta] if a < theta else ends, dtype=np.int64)
        ends.append(nxt)


def release(graph, theta: int, seed: int, method: str) -> np.ndarray:
    if method == "day":
        return D.release_degrees(graph, theta, 1.0, method="cumulative", noise=make_noise(seed)).degrees
    if method == "default":
        return D.release_degrees(graph, theta, 1.0, method="cumulative", noise=make_noise(seed),
                                 leaves="geometric").degrees
    if method == "a/16":
        saved = D.geometric_leaves
        D.geometric_leaves = sixteenth_leaves  # type: ignore[assignment]
        try:
            return D.release_degrees(graph, theta, 1.0, method="cumulative", noise=make_noise(seed),
                                     leaves="geometric").degrees
        finally:
            D.geometric_leaves = saved  # type: ignore[assignment]
    rng = np.random.default_rng([seed, theta])
    return rng.integers(1, theta + 1, graph.degrees().size)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=150)
    ap.add_argument("--thetas", default="64,128,256")
    ap.add_argument("--work", default="/tmp/dprelease-bench-degree-leaves")
    args = ap.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    paths: dict[str, Path] = {}
    for name, file in SHARED.items():
        p = DATASETS / file
        if p.exists():
            paths[name] = p
        else:
            print(f"skipped {name}: {p} not found (the shared datasets are absent)", file=sys.stderr)
    for name, make in GENERATED.items():
        p = work / f"{name}.txt"
        if not p.exists():
            G.write_edge_list(make(), p)
        paths[name] = p
    thetas = [int(t) for t in args.thetas.split(",")]
    print(f"epsilon 1, {args.seeds} seeds (mean ± standard error); 'worse' where the mean is above Day et al.'s\n")
    print("| graph | θ | method | leaves | KS | EMD |")
    print("|---|---|---|---|---|---|")
    for name, path in paths.items():
        graph = read_edge_list(path)
        true = graph.degrees()
        for theta in thetas:
            day: dict[str, float] = {}
            for method in ("day", "default", "a/16", "uniform"):
                ms = [degree_metrics(true, release(graph, theta, s, method)) for s in range(args.seeds)]
                cells = []
                for key in ("ks", "emd"):
                    v = np.array([m[key] for m in ms])
                    mean, se = float(v.mean()), float(v.std(ddof=1) / np.sqrt(v.size))
                    if method == "day":
                        day[key] = mean
                    digits = 4 if key == "ks" else 3  # as printed: equal means (facebook's KS at 64) are no loss
                    worse = method in ("default", "a/16") and round(mean, digits) > round(day[key], digits)
                    flag = " worse" if worse else ""
                    cells.append(f"{mean:.4f} ± {se:.4f}{flag}" if key == "ks" else f"{mean:.3f} ± {se:.3f}{flag}")
                leaves = {"day": theta, "default": D.geometric_leaves(theta).size,
                          "a/16": sixteenth_leaves(theta).size, "uniform": 0}[method]
                print(f"| {name} | {theta} | {method} | {leaves or '–'} | {cells[0]} | {cells[1]} |", flush=True)


if __name__ == "__main__":
    main()
