"""Reproduce DiffPart's Figure 3 (relative error vs B, per query subset, DiffPart vs Basic) and
Figure 8 (top-K frequent itemset utility vs K) on a transaction dataset; CSV + PNG. Beside the
faithful algorithm it runs DiffPart-Prefix (the default of ``dprelease diffpart``) and reports, per
method and B, the share of released records that occur in the data (``methods_summary.csv``).

Every error stands beside the same error of two data-independent releases (columns ``*_empty``: no
record; ``*_uniform``: uniform random baskets of the raw record sizes; :mod:`dprelease.evaluation.counting`),
and ``methods_summary.csv`` adds the frequent-itemset workload (itemsets of 1-4 items with support >= 1 % of
N), on which an empty release scores 1: on sparse data the random workload alone cannot tell a release from
nothing.

Runs use the seeded experiment mode (run r of a setting uses seed ``seed + r``), so a
reproduction is repeatable; the secure default is for releases.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..data.io import atomic_output, read_transactions
from ..data.universe import Universe
from ..evaluation import SupportCounter, evaluate_counting, make_workload
from ..evaluation.counting import counting_baselines, frequent_workload
from ..evaluation.occurrence import occurrence_share
from ..evaluation.topk import topk_utility_many
from ..privacy import make_noise
from ..setvalued import basic, diffpart
from ..setvalued.prefixpart import prefix_diffpart
from .common import mean_se, save_png, write_csv

__all__ = ["DiffPartExperiment", "run_diffpart_experiment"]


@dataclass(frozen=True)
class DiffPartExperiment:
    dataset: Path
    universe: Universe | None
    out_dir: Path
    budgets: tuple[float, ...] = (0.5, 0.75, 1.0, 1.25)
    ks: tuple[int, ...] = (10, 20, 30, 40, 50, 60, 70, 80, 90, 100)
    runs: int = 5
    fanout: int = 10
    c1: float | None = None
    c2: float | None = None
    queries: int = 50_000
    seed: int = 0
    with_basic: bool = True
    spurious_bound: float | None = None  # also run "DiffPart+bound" (the improvement) when set
    with_prefix: bool = True  # also run "DiffPart-Prefix" (the default method of `dprelease diffpart`)
    with_faithful: bool = True


def run_diffpart_experiment(cfg: DiffPartExperiment, log=print) -> dict[str, object]:
    # an experiment publishes nothing: without a declared universe it is derived (with the leak warning)
    db, universe = read_transactions(cfg.dataset, cfg.universe, derive=cfg.universe is None)
    workload = make_workload(db.n_items, int(db.lengths.max()), n_queries=cfg.queries, seed=cfg.seed)
    raw_counter = SupportCounter(db)
    frequent = frequent_workload(db, seed=cfg.seed)
    # the two data-independent releases every row is shown beside (the same for every method and B)
    base = counting_baselines(db, workload=workload, frequent=frequent, raw_counter=raw_counter, seed=cfg.seed)
    log(f"baselines: mean RE empty {base['empty']['mean_relative_error']:.4f} uniform "
        f"{base['uniform']['mean_relative_error']:.4f}; frequent-itemset RE empty "
        f"{base['empty']['frequent']['mean_relative_error']:.4f} uniform "
        f"{base['uniform']['frequent']['mean_relative_error']:.4f}")
    kwargs = {k: v for k, v in (("c1", cfg.c1), ("c2", cfg.c2)) if v is not None}
    methods = (["DiffPart"] if cfg.with_faithful else []) + (["DiffPart-Prefix"] if cfg.with_prefix else []) \
        + (["DiffPart+bound"] if cfg.spurious_bound is not None else []) \
        + (["Basic"] if cfg.with_basic and universe.size <= 20 else [])
    fig3_rows: list[dict[str, object]] = []
    fig8_rows: list[dict[str, object]] = []
    method_rows: list[dict[str, object]] = []
    for B in cfg.budgets:
        for method in methods:
            per_subset: list[list[float]] = [[] for _ in workload.subsets]
            overall: list[float] = []
            overall_frequent: list[float] = []
            utilities: dict[int, list[float]] = {k: [] for k in cfg.ks}
            shares: dict[str, list[float]] = {"records": [], "records_exact": [], "records_contained": []}
            for r in range(cfg.runs):
                noise = make_noise(cfg.seed + 1000 * r + 1)
                if method == "DiffPart-Prefix":
                    rel = prefix_diffpart(db, universe, B, noise=noise)
                elif method.startswith("DiffPart"):
                    bound = cfg.spurious_bound if method == "DiffPart+bound" else None
                    rel = diffpart(db, universe, B, noise=noise, fanout=cfg.fanout, spurious_bound=bound, **kwargs)
                else:
                    rel = basic(db, universe, B, noise=noise)
                released = rel.to_db()
                occ = occurrence_share(db, released, raw_counter=raw_counter)
                shares["records"].append(float(released.n_records))
                for key in ("records_exact", "records_contained"):
                    if occ[key] is not None:
                        shares[key].append(occ[key])
                res = evaluate_counting(db, released, workload=workload, raw_counter=raw_counter, frequent=frequent)
                overall.append(res["mean_relative_error"])
                overall_frequent.append(res["frequent"]["mean_relative_error"])
                for i, sub in enumerate(res["subsets"]):
                    per_subset[i].append(sub["mean_relative_error"])
                for k, u in topk_utility_many(db, released, cfg.ks).items():
                    utilities[k].append(u)
            for i, L in enumerate(workload.max_lengths):
                m, se = mean_se(per_subset[i])
                fig3_rows.append({"method": method, "epsilon": B, "subset": i + 1, "max_length": L,
                                  "max_length_pct": round(100 * L / int(db.lengths.max())),
                                  "mean_relative_error": m, "stderr": se, "runs": cfg.runs,
                                  **_beside(base, lambda r, i=i: r["subsets"][i]["mean_relative_error"])})
            m, se = mean_se(overall)
            fig3_rows.append({"method": method, "epsilon": B, "subset": "all", "max_length": "",
                              "max_length_pct": "", "mean_relative_error": m, "stderr": se, "runs": cfg.runs,
                              **_beside(base, lambda r: r["mean_relative_error"])})
            m_f, se_f = mean_se(overall_frequent)
            for k in cfg.ks:
                m_u, se_u = mean_se(utilities[k])
                fig8_rows.append({"method": method, "epsilon": B, "k": k, "utility": m_u, "stderr": se_u,
                                  "runs": cfg.runs})
            k_top = cfg.ks[-1]
            m_top, se_top = mean_se(utilities[k_top])
            method_rows.append({
                "method": method, "epsilon": B, "runs": cfg.runs, "mean_relative_error": m, "re_stderr": se,
                **_beside(base, lambda r: r["mean_relative_error"]),
                "frequent_error": m_f, "frequent_stderr": se_f,
                **_beside(base, lambda r: r["frequent"]["mean_relative_error"], "frequent_error"),
                f"top{k_top}_utility": m_top, "utility_stderr": se_top,
                "released_records": float(np.mean(shares["records"])),
                # shares over the runs that released anything (None when none did)
                "share_records_exact": float(np.mean(shares["records_exact"])) if shares["records_exact"] else None,
                "share_records_contained": (float(np.mean(shares["records_contained"]))
                                            if shares["records_contained"] else None),
            })
            log(f"{method:15s} B={B:<5} mean RE {m:.4f}  frequent-itemset RE {m_f:.4f}  top-{k_top} utility {m_top:.3f}  "
                f"released {method_rows[-1]['released_records']:.0f} records")
    cfg.out_dir.mkdir(parents=True, exist_ok=True)
    write_csv(cfg.out_dir / "fig3_relative_error.csv", fig3_rows)
    write_csv(cfg.out_dir / "fig8_topk_utility.csv", fig8_rows)
    write_csv(cfg.out_dir / "methods_summary.csv", method_rows)
    _plot(cfg, fig3_rows, fig8_rows, methods)
    summary = {"dataset": str(cfg.dataset), "runs": cfg.runs, "fanout": cfg.fanout,
               "relative_error": fig3_rows, "topk_utility": fig8_rows, "methods": method_rows,
               "frequent_workload": frequent.summary(), "baselines": base,
               "out_dir": str(cfg.out_dir)}
    with atomic_output(cfg.out_dir / "summary.json") as fh:
        json.dump(summary, fh, indent=1)
    return summary


def _beside(base: dict[str, dict], value, prefix: str = "relative_error") -> dict[str, float]:
    """The baselines' numbers for a row's columns: ``{prefix}_empty`` and ``{prefix}_uniform``."""
    return {f"{prefix}_empty": value(base["empty"]), f"{prefix}_uniform": value(base["uniform"])}


def _plot(cfg: DiffPartExperiment, fig3: list[dict], fig8: list[dict], methods: list[str]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = len(cfg.budgets)
    fig, axes = plt.subplots(1, n, figsize=(4 * n, 3.4), sharey=False)
    axes = np.atleast_1d(axes)
    for ax, B in zip(axes, cfg.budgets):
        for method, marker in zip(methods, "o^sd"):
            rows = [r for r in fig3 if r["method"] == method and r["epsilon"] == B and r["subset"] != "all"]
            ax.errorbar([r["max_length_pct"] for r in rows], [r["mean_relative_error"] for r in rows],
                        yerr=[r["stderr"] for r in rows], marker=marker, label=method, capsize=2)
        rows = [r for r in fig3 if methods and r["method"] == methods[0] and r["epsilon"] == B
                and r["subset"] != "all"]
        for key, label, style in (("relative_error_empty", "empty release", ":"),
                                  ("relative_error_uniform", "uniform baskets", "--")):
            ax.plot([r["max_length_pct"] for r in rows], [r[key] for r in rows], linestyle=style, color="#555",
                    label=label)
        ax.set_title(f"B = {B}")
        ax.set_xlabel("max query length (% of max|t|)")
        ax.set_yscale("log")
    axes[0].set_ylabel("average relative error")
    axes[0].legend()
    fig.suptitle(f"DiffPart Figure 3 on {cfg.dataset.name} (f = {cfg.fanout}, {cfg.runs} runs)")
    fig.tight_layout()
    save_png(fig, cfg.out_dir / "fig3_relative_error.png")

    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for method, style in (("DiffPart", "-"), ("DiffPart-Prefix", ":"), ("DiffPart+bound", "--")):
        for B in cfg.budgets:
            rows = [r for r in fig8 if r["method"] == method and r["epsilon"] == B]
            if rows:
                ax.errorbar([r["k"] for r in rows], [r["utility"] for r in rows], yerr=[r["stderr"] for r in rows],
                            marker="o", linestyle=style, label=f"{method}, B = {B}", capsize=2)
    ax.set_xlabel("K")
    ax.set_ylabel("top-K utility")
    ax.set_ylim(0, 1.02)
    ax.legend(fontsize=7, ncol=2)
    ax.set_title(f"DiffPart Figure 8 on {cfg.dataset.name} (f = {cfg.fanout}, {cfg.runs} runs)")
    fig.tight_layout()
    save_png(fig, cfg.out_dir / "fig8_topk_utility.png")


