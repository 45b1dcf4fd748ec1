"""RPS experiments (docs/rps.md): E1 synthetic range counts, E2 Adult, E3 degree sequences; CSV + PNG.

Every run uses the seeded experiment mode (seeds derived from the base seed and the setting), so a
reproduction repeats exactly; releases for publication use the secure default.

* E1: d-dimensional integer data (Gaussian mixture, Zipf-skewed; N = 10^5, domain [0, 1024)^d, d = 2..8),
  random range-count queries over the d attributes, mean relative error (sanity bound 0.1% of N): RPS
  balanced vs fixed over depths h and epsilon in {0.1, 0.5, 1}, and a flat noisy histogram where it fits
  (d = 2: 2^20 cells).
* E2: Adult (45,222 rows) with DiffGen's protocol (random 2/3-1/3 splits, the same classifier): RPS's
  synthetic table vs Mondrian (k-anonymity, NOT DP) vs DiffGen (Max, h = 10); MST/AIM figures are quoted
  from docs/diffgen.md. Also the range-count error of every release on the whole table.
* E3: ca-GrQc, ca-HepTh, Facebook; epsilon in {0.1, 0.25, 0.5, 1, 2}; RPS vs Hay vs theta-cumulative over a
  theta sweep; KS, L1, EMD against the true (unprojected) degrees. The inputs are edge files alone, so every
  release is in the edge-list neighbour model (what ``dprelease degrees`` does without ``--nodes``).

Every range-count row carries, beside its own error, those of two tables that never looked at the data
(``empty_relative_error``; ``uniform_relative_error``: the raw table's size spread uniformly over the public
domain): a release is only useful where it is clearly below both. E3's rows carry ``ks_uniform``,
``l1_uniform`` and ``emd_uniform``: the same distances for the node count spread evenly over 0..theta.
"""

from __future__ import annotations

import statistics
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from .. import examples
from ..data.table import EncodedTable
from ..privacy import make_noise
from .common import mean_se, save_png, write_csv

__all__ = ["ExperimentConfig", "synthetic_accuracy", "classification_runs", "summarize_classification",
           "run_e1", "run_e2", "run_e3", "PEER_FIGURES"]

# MST and AIM on Adult, DiffGen's protocol, one run each (seed 0, run 0): docs/diffgen.md, "Peers".
PEER_FIGURES = {("mst", 1.0): 79.26, ("aim", 1.0): 83.24, ("mst", 0.1): 72.99, ("aim", 0.1): 80.11}


@dataclass(frozen=True)
class ExperimentConfig:
    out: Path
    adult: Path = Path("../shared/datasets/adult")
    graphs: Path = Path("../shared/datasets/graphs")
    runs: int | None = None
    seed: int = 0
    quick: bool = False
    jobs: int = 1


def _seed(*parts: object) -> int:
    """A reproducible seed from the setting (strings hashed stably)."""
    ints = [p if isinstance(p, int) else int(round(float(p) * 1000)) if isinstance(p, float)
            else sum((i + 1) * ord(c) for i, c in enumerate(str(p))) for p in parts]
    return int(np.random.default_rng(ints).integers(2**62))


# -- classification (E2 and `experiment rps-classification`) -------------------------------------------------
def synthetic_accuracy(synth: EncodedTable, test: EncodedTable, seed: int = 0) -> float:
    """CA of a synthetic table: the DiffGen classifier trained on it, scored on the raw test split."""
    from ..relational.classify import make_tree, raw_features

    if synth.n_records == 0 or np.unique(synth.y).size < 2:
        label = int(synth.y[0]) if synth.n_records else 0
        return float((test.y == label).mean())
    tree = make_tree(seed).fit(raw_features(synth), synth.y)
    return float((tree.predict(raw_features(test)) == test.y).mean())


def _classification_task(args: tuple) -> list:
    from ..relational.classify import baseline_accuracy, generalized_accuracy, lower_bound_accuracy
    from ..relational.diffgen import diffgen
    from ..relational.mondrian import expand, mondrian
    from ..relational.rps import rps
    from ..evaluation.splits import split_table
    from .diffgen import RunRow

    table, seed, run, epsilons, variants, ks, diffgen_h = args
    train, test = split_table(table, seed, run)
    ba = baseline_accuracy(train, test)
    la = lower_bound_accuracy(train, test)
    rows = []
    for name, params, depths in variants:
        for eps in epsilons:
            for h in depths:
                noise = make_noise(_seed(seed, run, eps, h, name))
                t0 = time.perf_counter()
                rel = rps(train, eps, noise=noise, depth=h, **params)
                ca = synthetic_accuracy(rel.table, test)
                rows.append(RunRow(name, eps, h, run, ca, ba, la, time.perf_counter() - t0))
    if diffgen_h:
        for eps in epsilons:
            t0 = time.perf_counter()
            rel = diffgen(train, eps, diffgen_h, noise=make_noise(_seed(seed, run, eps, diffgen_h, "diffgen")))
            rows.append(RunRow("diffgen-max", eps, diffgen_h, run, generalized_accuracy(rel, test), ba, la,
                               time.perf_counter() - t0))
    for k in ks:
        t0 = time.perf_counter()
        synth = expand(mondrian(train, k), np.random.default_rng(_seed(seed, run, k, "mondrian")))
        rows.append(RunRow(f"mondrian-k{k}", None, k, run, synthetic_accuracy(synth, test), ba, la,
                           time.perf_counter() - t0))
    return rows


def classification_runs(table: EncodedTable, *, epsilons: list[float], depths: list[int], runs: int, seed: int = 0,
                        partitionings: list[str] = ("balanced",), split_share: float | None = None,
                        mondrian_ks: list[int] = (), diffgen_h: int | None = None, jobs: int = 1,
                        variants: list[tuple[str, dict, list[int]]] | None = None) -> list:
    """Per run: one 2/3-1/3 split; RPS (each setting), DiffGen and Mondrian on the train split; CA on the test.

    ``variants`` (name, rps keyword arguments, depths) replaces the default ``rps-<partitioning>`` settings.
    """
    if variants is None:
        variants = [(f"rps-{p}", {"partitioning": p, "split_share": split_share}, list(depths)) for p in partitionings]
    tasks = [(table, seed, r, list(epsilons), variants, list(mondrian_ks), diffgen_h) for r in range(runs)]
    if jobs > 1 and runs > 1:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            parts = list(pool.map(_classification_task, tasks))
    else:
        parts = [_classification_task(t) for t in tasks]
    return [row for part in parts for row in part]


def summarize_classification(rows: list) -> list[dict[str, object]]:
    """Mean and stdev of CA over runs for every (method, epsilon, depth or k)."""
    groups: dict[tuple, list] = {}
    for r in rows:
        groups.setdefault((r.method, r.epsilon, r.h), []).append(r)
    out = []
    for (method, eps, h), rs in groups.items():
        acc = [r.accuracy for r in rs]
        out.append({"method": method, "epsilon": eps, "h": h,
                    "baseline_accuracy": statistics.fmean(r.baseline_accuracy for r in rs),
                    "accuracy": statistics.fmean(acc),
                    "lower_bound_accuracy": statistics.fmean(r.lower_bound_accuracy for r in rs),
                    "runs": len(rs), "stdev": statistics.stdev(acc) if len(acc) > 1 else 0.0,
                    "seconds_mean": statistics.fmean(r.seconds for r in rs)})
    return out


# -- E1 -----------------------------------------------------------------------------------------------------
def _e1_task(args: tuple) -> list[dict[str, object]]:
    from ..data.generators import gaussian_mixture_points, zipf_points
    from ..evaluation.ranges import answer, answer_histogram, evaluate_ranges, make_range_workload, points_data
    from ..evaluation.ranges import range_baselines
    from ..relational.rps import (FLAT_MAX_CELLS, PointDomain, consistent_leaf_counts, flat_histogram,
                                  rps_partition, synthesize)

    gen, d, n, domain_size, epsilons, variants, runs, queries, seed = args
    make = {"gaussian": gaussian_mixture_points, "zipf": zipf_points}[gen]
    cols, _ = make(n, d, domain_size, seed=seed)
    domain = PointDomain(tuple(f"x{j + 1}" for j in range(d)), np.zeros(d), np.full(d, float(domain_size)),
                         np.ones(d, dtype=bool))
    workload = make_range_workload(domain, queries, seed=seed)
    raw = points_data(cols, domain)
    true = answer(raw, workload)
    sanity = 0.001 * n
    beside = _beside(range_baselines(raw, domain, workload, raw_answers=true))
    rows = []
    for eps in epsilons:
        for method, params, depths in variants:
            for h in depths:
                errs, subs, leaves, records, secs = [], [], [], [], []
                for r in range(runs):
                    noise = make_noise(_seed(seed, gen, d, eps, method, h, r))
                    t0 = time.perf_counter()
                    consistency = bool(params.get("consistency"))
                    kw = {k: v for k, v in params.items() if k != "consistency"}
                    part = rps_partition(cols, domain, eps, noise=noise, depth=h, keep_inner=consistency, **kw)
                    counts = np.rint(consistent_leaf_counts(part)).astype(np.int64) if consistency else part.counts
                    rng = np.random.default_rng(_seed(seed, gen, d, eps, method, h, r, "synth"))
                    synth = synthesize(part.lo, part.hi, counts, domain.integer, rng)
                    secs.append(time.perf_counter() - t0)
                    res = evaluate_ranges(raw, points_data(synth, domain), workload, raw_answers=true)
                    errs.append(res["mean_relative_error"])
                    subs.append([s["mean_relative_error"] for s in res["subsets"]])
                    leaves.append(part.n_leaves)
                    records.append(int(np.maximum(counts, 0).sum()))
                m, se = mean_se(errs)
                row = {"generator": gen, "d": d, "method": method, "epsilon": eps, "depth": h,
                       "mean_relative_error": m, "stderr": se, "runs": runs,
                       **beside, "leaves": float(np.mean(leaves)),
                       "synthetic_records": float(np.mean(records)), "seconds": float(np.mean(secs))}
                for k, v in enumerate(np.mean(subs, axis=0).tolist(), start=1):
                    row[f"mre_{k}d"] = v
                rows.append(row)
        if domain_size ** d <= FLAT_MAX_CELLS:
            errs, subs = [], []
            for r in range(runs):
                noisy, _ = flat_histogram(cols, domain, eps, noise=make_noise(_seed(seed, gen, d, eps, "flat", r)))
                got = answer_histogram(noisy, domain, workload)
                err = np.abs(got - true) / np.maximum(true, sanity)
                errs.append(float(err.mean()))
                subs.append([float(err[workload.dimensions == k].mean()) for k in np.unique(workload.dimensions)])
            m, se = mean_se(errs)
            row = {"generator": gen, "d": d, "method": "flat-histogram", "epsilon": eps, "depth": "",
                   "mean_relative_error": m, "stderr": se, "runs": runs, **beside,
                   "leaves": float(domain_size ** d),
                   "synthetic_records": "", "seconds": ""}
            for k, v in enumerate(np.mean(subs, axis=0).tolist(), start=1):
                row[f"mre_{k}d"] = v
            rows.append(row)
    return rows


def _beside(base: dict[str, dict]) -> dict[str, float]:
    """The data-independent tables' mean relative errors (empty; uniform over the public domain), the columns
    every range-count row shows beside its own."""
    return {f"{name}_relative_error": float(base[name]["mean_relative_error"]) for name in ("empty", "uniform")}


def _pool_map(fn, tasks: list, jobs: int) -> list:
    if jobs > 1 and len(tasks) > 1:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            return list(pool.map(fn, tasks))
    return [fn(t) for t in tasks]


def _normalise_rows(rows: list[dict[str, object]]) -> list[dict[str, object]]:
    keys: list[str] = []
    for r in rows:
        for k in r:
            if k not in keys:
                keys.append(k)
    return [{k: r.get(k, "") for k in keys} for r in rows]


def run_e1(cfg: ExperimentConfig, log: Callable[[str], None] = print) -> list[Path]:
    quick = cfg.quick
    n = 20_000 if quick else 100_000
    ds = [2, 4] if quick else [2, 4, 8]
    epsilons = [0.1, 1.0] if quick else [0.1, 0.5, 1.0]
    depths = [8, 12] if quick else [8, 12, 16]
    some = [8, 12]
    deep = [12, 16] if quick else [16, 20]
    variants = [("rps-balanced", {"partitioning": "balanced"}, depths),
                ("rps-fixed", {"partitioning": "fixed"}, depths),
                ("rps-balanced+consistency", {"partitioning": "balanced", "consistency": True}, some),
                ("rps-balanced+stop10", {"partitioning": "balanced", "stop_threshold": 10.0}, deep),
                ("rps-fixed+stop10", {"partitioning": "fixed", "stop_threshold": 10.0}, deep)]
    runs = cfg.runs or (1 if quick else 2)
    queries = 500 if quick else 1000
    tasks = [(gen, d, n, 1024, epsilons, variants, runs, queries, cfg.seed) for gen in ("gaussian", "zipf") for d in ds]
    log(f"E1: {len(tasks)} datasets x {len(epsilons)} eps x {len(variants)} variants x {runs} runs")
    rows = [r for part in _pool_map(_e1_task, tasks, cfg.jobs) for r in part]
    out = cfg.out
    write_csv(out / "e1_range_counts.csv", _normalise_rows(rows))
    _plot_e1(rows, out / "e1_range_counts.png")
    return [out / "e1_range_counts.csv", out / "e1_range_counts.png"]


def _plot_e1(rows: list[dict[str, object]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    gens = sorted({str(r["generator"]) for r in rows})
    epsilons = sorted({float(r["epsilon"]) for r in rows})
    fig, axes = plt.subplots(len(gens), len(epsilons), figsize=(4.2 * len(epsilons), 3.4 * len(gens)), squeeze=False)
    for i, gen in enumerate(gens):
        for j, eps in enumerate(epsilons):
            ax = axes[i][j]
            sel = [r for r in rows if r["generator"] == gen and float(r["epsilon"]) == eps]
            for method, style in (("rps-balanced", "o-"), ("rps-fixed", "s--")):
                pts = {}
                for r in sel:
                    if r["method"] == method:
                        d = int(r["d"])
                        if d not in pts or float(r["mean_relative_error"]) < pts[d]:
                            pts[d] = float(r["mean_relative_error"])
                xs = sorted(pts)
                ax.plot(xs, [pts[x] for x in xs], style, label=f"{method} (best h)")
            flat = [(int(r["d"]), float(r["mean_relative_error"])) for r in sel if r["method"] == "flat-histogram"]
            if flat:
                ax.plot([f[0] for f in flat], [f[1] for f in flat], "k^", label="flat histogram")
            ax.set_yscale("log")
            ax.set_title(f"{gen}, ε = {eps:g}")
            ax.set_xlabel("dimensions d")
            ax.set_ylabel("mean relative error")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7)
    fig.tight_layout()
    save_png(fig, path)


# -- E2 -----------------------------------------------------------------------------------------------------
def _generalized_boxes(rel) -> object:
    """DiffGen's released contingency table (noisy counts clipped at 0) as weighted boxes (uniform spreading)."""
    from ..evaluation.ranges import BoxData
    from ..relational.rps import table_domain

    schema = rel.schema
    n_cls = schema.n_classes
    n_cells = rel.cells.shape[0]
    lo = np.zeros((n_cells * n_cls, 1 + len(schema.attributes)))
    hi = np.zeros_like(lo)
    cls = np.tile(np.arange(n_cls), n_cells)
    lo[:, 0], hi[:, 0] = cls, cls + 1
    for j in range(len(schema.attributes)):
        cut = rel.cut[j]
        c_lo = np.asarray([cv.lo for cv in cut])
        c_hi = np.asarray([cv.hi for cv in cut])
        idx = np.repeat(rel.cells[:, j], n_cls)
        lo[:, j + 1], hi[:, j + 1] = c_lo[idx], c_hi[idx]
    w = np.maximum(np.asarray(rel.counts, dtype=np.float64).reshape(-1), 0.0)
    return BoxData(lo, hi, w, table_domain(schema).integer.copy(), False)


def _e2_ranges_task(args: tuple) -> list[dict[str, object]]:
    from ..evaluation.ranges import answer, evaluate_ranges, make_range_workload, range_baselines, table_data
    from ..relational.diffgen import diffgen
    from ..relational.mondrian import expand, mondrian
    from ..relational.rps import rps, table_domain

    table, epsilons, depths, ks, queries, runs, seed = args
    workload = make_range_workload(table_domain(table.schema), queries, seed=seed)
    raw = table_data(table)
    true = answer(raw, workload)
    beside = _beside(range_baselines(raw, table_domain(table.schema), workload, raw_answers=true))
    rows = []

    def add(method, eps, h, results):
        m, se = mean_se([x["mean_relative_error"] for x in results])
        row = {"method": method, "epsilon": eps, "h": h, "mean_relative_error": m, "stderr": se, "runs": len(results),
               **beside}
        for k, sub in enumerate(results[0]["subsets"]):
            row[f"mre_{sub['dimensions']}d"] = float(np.mean([x["subsets"][k]["mean_relative_error"] for x in results]))
        rows.append(row)

    for eps in epsilons:
        for part in ("balanced", "fixed"):
            for h in depths:
                res = [evaluate_ranges(raw, table_data(rps(table, eps, noise=make_noise(_seed(seed, r, eps, h, part, "rng")),
                                                           depth=h, partitioning=part).table), workload, raw_answers=true)
                       for r in range(runs)]
                add(f"rps-{part}", eps, h, res)
        res = [evaluate_ranges(raw, _generalized_boxes(diffgen(table, eps, 10, noise=make_noise(_seed(seed, r, eps, "dg")))),
                               workload, raw_answers=true) for r in range(runs)]
        add("diffgen-max", eps, 10, res)
    for k in ks:
        groups = mondrian(table, k)
        res = [evaluate_ranges(raw, table_data(expand(groups, np.random.default_rng(_seed(seed, r, k, "mo")))), workload,
                               raw_answers=true) for r in range(runs)]
        add(f"mondrian-k{k}", None, k, res)
    return rows


def run_e2(cfg: ExperimentConfig, log: Callable[[str], None] = print) -> list[Path]:
    from ..data.table import load_schema, read_table

    quick = cfg.quick
    table = read_table(cfg.adult, load_schema(examples.path("adult-schema.yaml")))
    epsilons = [0.1, 1.0] if quick else [0.1, 0.25, 0.5, 1.0]
    depths = [10] if quick else [8, 10, 12]
    ks = [10, 100] if quick else [10, 25, 50, 100, 250, 500]
    runs = cfg.runs or (2 if quick else 5)
    log(f"E2 classification: {runs} splits, eps {epsilons}, depths {depths}, Mondrian k {ks}, DiffGen h = 10")
    two = depths[:1] if quick else [10]
    variants = [("rps-balanced", {"partitioning": "balanced"}, depths),
                ("rps-fixed", {"partitioning": "fixed"}, depths),
                ("rps-balanced-classfirst", {"partitioning": "balanced", "class_split": "first"}, two),
                ("rps-fixed-classfirst", {"partitioning": "fixed", "class_split": "first"}, two if quick else [])]
    rows = classification_runs(table, epsilons=epsilons, depths=depths, runs=runs, seed=cfg.seed,
                               variants=variants, mondrian_ks=ks, diffgen_h=10, jobs=cfg.jobs)
    summary = summarize_classification(rows)
    for (name, eps), acc in PEER_FIGURES.items():
        summary.append({"method": f"{name} (docs/diffgen.md, 1 run)", "epsilon": eps, "h": "",
                        "baseline_accuracy": "", "accuracy": acc / 100.0, "lower_bound_accuracy": "", "runs": 1,
                        "stdev": "", "seconds_mean": ""})
    out = cfg.out
    from dataclasses import asdict

    write_csv(out / "e2_classification_runs.csv", [asdict(r) for r in rows])
    write_csv(out / "e2_classification_summary.csv", summary)
    _plot_e2(summary, out / "e2_classification.png")
    log("E2 range counts on the whole table")
    r_runs = 1 if quick else 3
    queries = 1000 if quick else 5000
    ranges = _e2_ranges_task((table, epsilons, depths, ks, queries, r_runs, cfg.seed))
    write_csv(out / "e2_range_counts.csv", _normalise_rows(ranges))
    return [out / "e2_classification_runs.csv", out / "e2_classification_summary.csv", out / "e2_classification.png",
            out / "e2_range_counts.csv"]


def _plot_e2(summary: list[dict[str, object]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    for method, style in (("rps-balanced", "o-"), ("rps-fixed", "s--"), ("diffgen-max", "d-.")):
        best: dict[float, float] = {}
        for s in summary:
            if s["method"] == method:
                e = float(s["epsilon"])
                best[e] = max(best.get(e, 0.0), 100 * float(s["accuracy"]))
        xs = sorted(best)
        if xs:
            ax.plot(xs, [best[x] for x in xs], style, label=method + (" (best h)" if method.startswith("rps") else ", h=10"))
    for s in summary:
        if str(s["method"]).startswith("mondrian"):
            ax.axhline(100 * float(s["accuracy"]), lw=0.8, ls=":", color="tab:gray")
            ax.text(1.02, 100 * float(s["accuracy"]), str(s["method"]).replace("mondrian-", "M "), fontsize=7,
                    transform=ax.get_yaxis_transform(), va="center")
    for peer, marker in (("mst", "x"), ("aim", "*")):
        pts = sorted((float(s["epsilon"]), 100 * float(s["accuracy"])) for s in summary
                     if str(s["method"]).startswith(peer + " (docs/diffgen"))
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker, color="k", ls="none",
                    label=f"{peer.upper()} (docs/diffgen.md, 1 run)")
    ba = [float(s["baseline_accuracy"]) for s in summary if s["baseline_accuracy"] != ""]
    la = [float(s["lower_bound_accuracy"]) for s in summary if s["lower_bound_accuracy"] != ""]
    if ba:
        ax.axhline(100 * statistics.fmean(ba), color="k", lw=1, label="BA")
        ax.axhline(100 * statistics.fmean(la), color="k", ls="--", lw=1, label="LA")
    ax.set_xscale("log")
    ax.set_xlabel("ε")
    ax.set_ylabel("classification accuracy on the raw test split (%)")
    ax.set_title("Adult, DiffGen protocol: RPS vs Mondrian (dotted, NOT DP) vs DiffGen")
    ax.legend(fontsize=7, loc="lower right")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    save_png(fig, path)


# -- E3 -----------------------------------------------------------------------------------------------------
GRAPH_FILES = {"ca-GrQc": "ca-grqc.txt", "ca-HepTh": "ca-hepth.txt", "Facebook": "facebook.txt"}


def _e3_task(args: tuple) -> list[dict[str, object]]:
    from ..data.graphs import read_edge_list
    from ..evaluation.degrees import degree_metrics
    from ..graphs.degrees import DECLARED_NODES, EDGE_LIST, cumulative_degrees, hay_degrees, rps_degrees
    from ..graphs.projection import edge_addition

    name, path, theta, epsilons, runs, seed = args
    graph = read_edge_list(path)
    model = DECLARED_NODES if graph.declared_nodes else EDGE_LIST
    true = graph.degrees()
    # beside every row: a sequence that never looked at the graph (the node count spread evenly over 0..theta)
    flat = degree_metrics(true, (np.arange(true.size, dtype=np.int64) * (theta + 1)) // max(true.size, 1))
    acc: dict[tuple, list] = {}
    for r in range(runs):
        key = _seed(seed, name, theta, r, "order")
        _, proj = edge_addition(graph, theta, key)
        for eps in epsilons:
            for method in ("rps-balanced", "rps-fixed", "rps-balanced+cum", "rps-fixed+cum", "hay", "cumulative"):
                noise = make_noise(_seed(seed, name, theta, r, eps, method))
                if method.startswith("rps"):
                    part, _, summ = method.partition("+")
                    rel = rps_degrees(proj, theta, eps, noise=noise, partitioning=part.split("-")[1],
                                      summarize="cumulative" if summ == "cum" else "counts", model=model)
                elif method == "hay":
                    rel = hay_degrees(proj, theta, eps, noise=noise, model=model)
                else:
                    rel = cumulative_degrees(proj, theta, eps, noise=noise, model=model)
                met = degree_metrics(true, rel.degrees)
                acc.setdefault((eps, method), []).append((met["ks"], met["l1"], met["emd"], rel.n_nodes))
    rows = []
    for (eps, method), vals in acc.items():
        arr = np.asarray(vals, dtype=np.float64)
        row = {"graph": name, "theta": theta, "epsilon": eps, "method": method, "model": model, "runs": len(vals),
               **{f"{k}_uniform": flat[k] for k in ("ks", "l1", "emd")}}
        for k, label in enumerate(("ks", "l1", "emd", "nodes")):
            m, se = mean_se(arr[:, k].tolist())
            row[label] = m
            if label != "nodes":
                row[f"{label}_stderr"] = se
        rows.append(row)
    return rows


def run_e3(cfg: ExperimentConfig, log: Callable[[str], None] = print) -> list[Path]:
    quick = cfg.quick
    epsilons = [0.1, 1.0] if quick else [0.1, 0.25, 0.5, 1.0, 2.0]
    thetas = [32] if quick else [16, 32, 64, 128, 256]
    runs = cfg.runs or (2 if quick else 20)
    tasks = [(name, cfg.graphs / fname, theta, epsilons, runs, cfg.seed)
             for name, fname in GRAPH_FILES.items() for theta in thetas]
    log(f"E3: 3 graphs x thetas {thetas} x eps {epsilons} x 6 methods x {runs} runs")
    rows = [r for part in _pool_map(_e3_task, tasks, cfg.jobs) for r in part]
    out = cfg.out
    write_csv(out / "e3_degrees.csv", rows)
    _plot_e3(rows, out / "e3_degrees.png")
    return [out / "e3_degrees.csv", out / "e3_degrees.png"]


def _plot_e3(rows: list[dict[str, object]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    graphs = list(dict.fromkeys(str(r["graph"]) for r in rows))
    metrics = ("ks", "l1", "emd")
    fig, axes = plt.subplots(len(graphs), len(metrics), figsize=(4.2 * len(metrics), 3.2 * len(graphs)), squeeze=False)
    styles = {"rps-balanced": "o-", "rps-fixed": "s--", "rps-balanced+cum": "o:", "rps-fixed+cum": "s:",
              "hay": "v-.", "cumulative": "^-"}
    for i, g in enumerate(graphs):
        for j, metric in enumerate(metrics):
            ax = axes[i][j]
            for method, style in styles.items():
                best: dict[float, float] = {}
                for r in rows:
                    if r["graph"] == g and r["method"] == method:
                        e = float(r["epsilon"])
                        best[e] = min(best.get(e, np.inf), float(r[metric]))
                xs = sorted(best)
                ax.plot(xs, [best[x] for x in xs], style, label=f"{method} (best θ)")
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_title(f"{g}: {metric.upper()}")
            ax.set_xlabel("ε")
            ax.grid(alpha=0.3)
            if i == 0 and j == 0:
                ax.legend(fontsize=7)
    fig.tight_layout()
    save_png(fig, path)
