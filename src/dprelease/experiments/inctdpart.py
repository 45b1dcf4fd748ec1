"""Reproduce IncTDPart's section 5.1 (Figures 4-5): relative error after the last update vs U, per epsilon.

Setting (section 5.1): an initial dataset of ``initial`` random records and U updates of
``batch`` further records drawn without replacement; relative error of the counting-query
workload (DiffPart section 5.1, :mod:`dprelease.evaluation.counting`) on T_U, and of the frequent-itemset
workload (itemsets of 1-4 items with support >= 1 % of N), each beside the same error of an empty release
and of uniform random baskets of T_U's record sizes (columns ``*_empty``, ``*_uniform``), for

* IncTDPart (the TBP-tree, epsilon/(U+1) per append; :mod:`dprelease.setvalued.inctdpart`),
* Solution 1 (DiffPart per batch with the full epsilon, releases merged),
* Solution 2 (DiffPart on the whole T_U with epsilon/(U+1): the last of U+1 re-publications),
* IncTDPart-Prefix (optional, ``--methods``): the stream over DiffPart-Prefix's trie
  (:mod:`dprelease.setvalued.incprefix`), charged like IncTDPart (``--accounting``).

Runs use the seeded experiment mode (run r: data sample and noise from ``seed + r``;
IncTDPart's append i uses :func:`append_seed`), so a reproduction is repeatable.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from ..data.io import atomic_output, read_transactions
from ..data.universe import Universe
from ..errors import InputError
from ..evaluation.counting import SupportCounter, counting_baselines, evaluate_counting, frequent_workload, make_workload
from ..evaluation.topk import topk_utility
from ..privacy import make_noise
from ..setvalued.baselines import solution1, solution2
from ..setvalued.diffpart import DEFAULT_C1 as DP_C1
from ..setvalued.diffpart import DEFAULT_C2 as DP_C2
from ..setvalued.incprefix import PrefixStream
from ..setvalued.inctdpart import DEFAULT_C1, DEFAULT_C2, TBPTree, append_seed
from .common import mean_se, save_png, write_csv

__all__ = ["IncTDPartExperiment", "run_inctdpart_experiment", "METHODS"]

METHODS = ("IncTDPart", "Solution 1", "Solution 2", "IncTDPart-Prefix")
DEFAULT_METHODS = ("IncTDPart", "Solution 1", "Solution 2")


@dataclass(frozen=True)
class IncTDPartExperiment:
    dataset: Path
    universe: Universe | None
    out_dir: Path
    label: str = "MSNBC"
    initial: int = 400_000
    batch: int = 10_000
    updates: tuple[int, ...] = (10, 20, 30, 40, 50)
    epsilons: tuple[float, ...] = (0.5, 0.75, 1.0)
    runs: int = 3
    fanout: int = 10
    c1: float = DEFAULT_C1  # IncTDPart theta_1 constant (eq. 6)
    c2: float = DEFAULT_C2  # IncTDPart theta_2 constant (eq. 7)
    dp_c1: float = DP_C1  # DiffPart (baselines) leaf constant
    dp_c2: float = DP_C2  # DiffPart (baselines) partition constant
    theta_rule: str = "example3"
    new_cells: str = "first-visit"
    accounting: str = "paper"  # IncTDPart's: "paper" (epsilon/(U+1) per append) or "parallel" (epsilon per batch)
    routing: str = "paper"  # IncTDPart's: "paper" (R2: count every stored child) or "free" (improvement)
    queries: int = 50_000
    seed: int = 0
    methods: tuple[str, ...] = field(default=DEFAULT_METHODS)
    refine: bool = True  # IncTDPart-Prefix: accumulate, then split
    expand: bool = True  # IncTDPart-Prefix: fill in generalized classes' dropped items (post-processing)
    topk: int | None = None  # also the top-K utility (DiffPart Appendix E) of every release



def run_inctdpart_experiment(cfg: IncTDPartExperiment, log=print) -> dict[str, object]:
    """Run every (U, epsilon, method, run); write raw and summary CSVs, a PNG and a JSON of the config."""
    # an experiment publishes nothing: without a declared universe it is derived (with the leak warning)
    db, universe = read_transactions(cfg.dataset, cfg.universe, derive=cfg.universe is None)
    need = cfg.initial + max(cfg.updates) * cfg.batch
    if need > db.n_records:
        raise InputError(f"{cfg.dataset}: {db.n_records:,} records, but --initial {cfg.initial:,} + "
                         f"{max(cfg.updates)} updates x --batch {cfg.batch:,} needs {need:,}; lower them")
    cfg.out_dir.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, object]] = []
    for r in range(cfg.runs):
        seed = cfg.seed + r
        perm = np.random.default_rng(seed).permutation(db.n_records)
        init = db.subset(np.sort(perm[: cfg.initial]))
        updates = [db.subset(np.sort(perm[cfg.initial + i * cfg.batch : cfg.initial + (i + 1) * cfg.batch]))
                   for i in range(max(cfg.updates))]
        for U in cfg.updates:
            batches = [init] + updates[:U]
            raw = db.subset(np.sort(perm[: cfg.initial + U * cfg.batch]))
            workload = make_workload(raw.n_items, int(raw.lengths.max()), n_queries=cfg.queries, seed=seed)
            counter = SupportCounter(raw)
            frequent = frequent_workload(raw, seed=seed)
            # the data-independent releases every row of this T_U is shown beside (empty; uniform baskets)
            base = counting_baselines(raw, workload=workload, frequent=frequent, raw_counter=counter, seed=seed)
            beside = {f"{key}_{name}": value for name, b in base.items() for key, value in
                      (("relative_error", b["mean_relative_error"]),
                       ("frequent_error", b["frequent"]["mean_relative_error"]))}  # type: ignore[index]
            for eps in cfg.epsilons:
                for method in cfg.methods:
                    t0 = time.perf_counter()
                    if method == "IncTDPart":
                        tree = TBPTree(universe.size, eps, U, fanout=cfg.fanout, c1=cfg.c1, c2=cfg.c2,
                                       theta_rule=cfg.theta_rule, new_cells=cfg.new_cells,
                                       accounting=cfg.accounting, routing=cfg.routing)
                        for i, b in enumerate(batches):
                            tree.append(b, make_noise(append_seed(seed, i)))
                        release = tree.release(universe, {"mode": "seeded", "seed": seed})
                    elif method == "IncTDPart-Prefix":
                        stream = PrefixStream(universe.size, eps, U, accounting=cfg.accounting, refine=cfg.refine,
                                              expand=cfg.expand)
                        for i, b in enumerate(batches):
                            stream.append(b, make_noise(append_seed(seed, i)))
                        release = stream.release(universe, {"mode": "seeded", "seed": seed})
                    elif method == "Solution 1":
                        release = solution1(batches, universe, eps, fanout=cfg.fanout, c1=cfg.dp_c1, c2=cfg.dp_c2,
                                            noises=[make_noise(append_seed(seed + 7919, i)) for i in range(U + 1)])
                    elif method == "Solution 2":
                        release = solution2(raw, universe, eps, U, noise=make_noise(append_seed(seed + 104729, U)),
                                            fanout=cfg.fanout, c1=cfg.dp_c1, c2=cfg.dp_c2)
                    else:
                        raise ValueError(f"unknown method {method!r}")
                    seconds = time.perf_counter() - t0
                    res = evaluate_counting(raw, release.to_db(), workload=workload, raw_counter=counter,
                                            frequent=frequent)
                    row = {"dataset": cfg.label, "method": method, "U": U, "epsilon": eps, "run": r,
                           "relative_error": res["mean_relative_error"],
                           "frequent_error": res["frequent"]["mean_relative_error"],  # type: ignore[index]
                           **beside, "released_records": release.n_records,
                           "true_records": raw.n_records, "seconds": round(seconds, 3)}
                    if cfg.topk:
                        row["topk_utility"] = topk_utility(raw, release.to_db(), cfg.topk)
                    rows.append(row)
                    log(f"{cfg.label} run {r} U={U} eps={eps} {method}: RE {row['relative_error']:.4f} "
                        f"({row['released_records']} records, {seconds:.1f} s)")
    summary = _summarise(rows)
    write_csv(cfg.out_dir / "inctdpart_runs.csv", rows)
    write_csv(cfg.out_dir / "inctdpart_summary.csv", summary)
    config = {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(cfg).items() if k != "universe"}
    config["universe"] = universe.describe()
    with atomic_output(cfg.out_dir / "inctdpart_config.json") as fh:
        json.dump(config, fh, indent=2)
    _plot(cfg, summary, cfg.out_dir / "inctdpart_relative_error.png")
    return {"rows": rows, "summary": summary}


# the frequent-itemset workload's error and the baselines' errors (empty release; uniform baskets of the raw
# record sizes), averaged beside each method's relative error
_BESIDE = ("frequent_error", "relative_error_empty", "relative_error_uniform", "frequent_error_empty",
           "frequent_error_uniform")


def _summarise(rows: list[dict[str, object]]) -> list[dict[str, object]]:
    keys = sorted({(r["dataset"], r["method"], r["U"], r["epsilon"]) for r in rows},
                  key=lambda k: (k[0], k[3], k[2], METHODS.index(k[1]) if k[1] in METHODS else 9))
    out = []
    for ds, m, U, eps in keys:
        sel = [r for r in rows if (r["dataset"], r["method"], r["U"], r["epsilon"]) == (ds, m, U, eps)]
        mean, se = mean_se([float(r["relative_error"]) for r in sel])
        out.append({"dataset": ds, "method": m, "U": U, "epsilon": eps, "runs": len(sel),
                    "relative_error_mean": round(mean, 6), "relative_error_se": round(se, 6),
                    "released_records_mean": round(float(np.mean([r["released_records"] for r in sel])), 1),
                    "seconds_mean": round(float(np.mean([r["seconds"] for r in sel])), 3)}
                   | ({"topk_utility_mean": round(float(np.mean([r["topk_utility"] for r in sel])), 6)}
                      if "topk_utility" in sel[0] else {})
                   | {f"{key}_mean": round(float(np.mean([float(r[key]) for r in sel])), 6)  # type: ignore[arg-type]
                      for key in _BESIDE if key in sel[0]})
    return out


def _plot(cfg: IncTDPartExperiment, summary: list[dict[str, object]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(cfg.epsilons), figsize=(4.2 * len(cfg.epsilons), 3.6), squeeze=False)
    for ax, eps in zip(axes[0], cfg.epsilons):
        for m, marker in zip(cfg.methods, "osd^v"):
            pts = [s for s in summary if s["method"] == m and s["epsilon"] == eps]
            if not pts:
                continue
            ax.errorbar([p["U"] for p in pts], [p["relative_error_mean"] for p in pts],
                        yerr=[p["relative_error_se"] for p in pts], marker=marker, capsize=3, label=m)
        ax.set_title(f"{cfg.label}, epsilon = {eps:g}")
        ax.set_xlabel("U (upper bound on updates)")
        ax.set_ylabel("relative error after the last update")
        ax.set_yscale("log")
        ax.grid(True, alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.suptitle(f"IncTDPart vs Solutions 1, 2 ({cfg.runs} run(s), f = {cfg.fanout})", fontsize=10)
    fig.tight_layout()
    save_png(fig, path)
