"""DiffGen section 5 on Adult: BA / CA / LA over random 2/3-1/3 splits, Figure 3 (CA vs h), TDS and peers.

Protocol (section 5, "Data Quality"): per run, a random 2/3 train / 1/3 test
split; DiffGen on the train split; the same final cut applied to the test split;
the tree of :mod:`dprelease.relational.classify` trained on the noisy generalized
train table (counts as weights) and scored on the generalized test records. BA:
the same tree on the raw split. LA: the majority class. Means over runs.
"""

from __future__ import annotations

import csv
import importlib.util
import os
import statistics
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..data.table import EncodedTable, TableSchema, read_table
from ..evaluation.splits import split_table
from ..privacy import make_noise
from ..relational.classify import (
    TREE_SETTINGS,
    baseline_accuracy,
    generalized_accuracy,
    lower_bound_accuracy,
    raw_features,
)
from ..relational.diffgen import diffgen
from ..relational.tds import tds

__all__ = ["RunRow", "split_table", "run_one", "classification_experiment", "summarize", "write_csv", "plot_figure3",
           "peers_available", "run_peer", "METHODS", "RECOMMENDED", "FAITHFUL", "release_method", "methods_experiment",
           "summarize_methods", "methods_json", "plot_methods"]


@dataclass(frozen=True, slots=True)
class RunRow:
    """One measured run: method (diffgen-max, diffgen-infogain, tds, mst, aim), its setting and accuracies."""

    method: str
    epsilon: float | None  # None for TDS (not DP)
    h: int
    run: int
    accuracy: float
    baseline_accuracy: float
    lower_bound_accuracy: float
    seconds: float


def run_one(args: tuple) -> list[RunRow]:
    """All (score, epsilon, h) settings of one run on one split (one process task)."""
    table, seed, run, scores, epsilons, hs, recycle, local, tds_k = args
    train, test = split_table(table, seed, run)
    ba = baseline_accuracy(train, test)
    la = lower_bound_accuracy(train, test)
    rows = []
    for score in scores:
        for eps in epsilons:
            for h in hs:
                noise = make_noise(int(np.random.default_rng([seed, run, int(eps * 1000), h, len(score)]).integers(2**62)))
                t0 = time.perf_counter()
                release = diffgen(train, eps, h, noise=noise, score=score, recycle=recycle, local=local)
                ca = generalized_accuracy(release, test)
                tag = "diffgen-" + score + ("-local" if local else "") + ("-recycle" if recycle else "")
                rows.append(RunRow(tag, eps, h, run, ca, ba, la, time.perf_counter() - t0))
    if tds_k:
        t0 = time.perf_counter()
        release = tds(train, tds_k)
        rows.append(RunRow(f"tds-k{tds_k}", None, len(release.trace), run, generalized_accuracy(release, test),
                           ba, la, time.perf_counter() - t0))
    return rows


def classification_experiment(table: EncodedTable, *, epsilons: list[float], hs: list[int], scores: list[str],
                              runs: int, seed: int = 0, recycle: bool = False, local: bool = False,
                              tds_k: int | None = None, jobs: int = 1) -> list[RunRow]:
    tasks = [(table, seed, r, scores, epsilons, hs, recycle, local, tds_k) for r in range(runs)]
    if jobs > 1 and runs > 1:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            parts = list(pool.map(run_one, tasks))
    else:
        parts = [run_one(t) for t in tasks]
    return [row for part in parts for row in part]


def summarize(rows: list[RunRow]) -> list[dict[str, object]]:
    """Mean and stdev over runs for every (method, epsilon, h)."""
    groups: dict[tuple, list[RunRow]] = {}
    for r in rows:
        key = (r.method, r.epsilon, r.h if not r.method.startswith("tds") else 0)
        groups.setdefault(key, []).append(r)
    out = []
    for (method, eps, h), rs in groups.items():
        acc = [r.accuracy for r in rs]
        out.append({
            "method": method, "epsilon": eps, "h": h if not method.startswith("tds") else None,
            "baseline_accuracy": statistics.fmean(r.baseline_accuracy for r in rs),
            "accuracy": statistics.fmean(acc),
            "lower_bound_accuracy": statistics.fmean(r.lower_bound_accuracy for r in rs),
            "runs": len(rs),
            "stdev": statistics.stdev(acc) if len(acc) > 1 else 0.0,
            "seconds_mean": statistics.fmean(r.seconds for r in rs),
        })
    return out


def write_csv(rows: list[dict[str, object]], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def plot_figure3(summary: list[dict[str, object]], path: Path, dataset: str = "Adult") -> None:
    """Figure 3: CA vs h for every epsilon, one panel per DiffGen score, BA and LA dotted."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    methods = sorted({s["method"] for s in summary if str(s["method"]).startswith("diffgen")},
                     key=lambda m: ("infogain" in m, m))  # Max first, as Figure 3.a
    fig, axes = plt.subplots(1, max(1, len(methods)), figsize=(5.5 * max(1, len(methods)), 4.2), squeeze=False)
    for ax, method in zip(axes[0], methods):
        rows = [s for s in summary if s["method"] == method]
        for eps in sorted({s["epsilon"] for s in rows}):
            pts = sorted((s["h"], 100 * s["accuracy"]) for s in rows if s["epsilon"] == eps)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=f"ε = {eps:g}")
        ba = statistics.fmean(s["baseline_accuracy"] for s in rows) * 100
        la = statistics.fmean(s["lower_bound_accuracy"] for s in rows) * 100
        ax.axhline(ba, ls=":", color="k", label=f"BA = {ba:.1f}%")
        ax.axhline(la, ls="--", color="grey", label=f"LA = {la:.1f}%")
        ax.set_title(f"{dataset}, {method}")
        ax.set_xlabel("number of specializations h")
        ax.set_ylabel("classification accuracy CA (%)")
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


# -- peers (optional extra: smartnoise-synth) ------------------------------------------------------
def peers_available() -> bool:
    return importlib.util.find_spec("snsynth") is not None


class _SampleMethod:
    """Stands in for an mbi model so that snsynth's ``sample`` draws with ``method="sample"`` (i.i.d.).

    mbi's default ``"round"`` (randomized rounding, column by column) co-orders the
    attributes and costs the classifier 4-11 points (measured in docs/diffgen.md).
    """

    def __init__(self, model):
        self._model = model

    def synthetic_data(self, rows=None, method="sample"):
        return self._model.synthetic_data(rows=rows, method="sample")

    def __getattr__(self, name):
        return getattr(self._model, name)


PEER_BINS = 32


def _edges(a, bins: str) -> np.ndarray:
    """Inner bin edges of a numeric attribute over its public bounds: PEER_BINS equal-width bins, or
    ``bins="grid"``: DiffGen+'s public split grid (equal-width + geometric points, ``split_grid``)."""
    if bins == "grid":
        from ..relational.diffgen_plus import split_grid

        return split_grid(a.lo, a.hi, a.integer, PEER_BINS - 1)
    return a.lo + (a.hi - a.lo) * np.arange(1, PEER_BINS) / PEER_BINS


def _binned(schema, columns, bins: str = "equal") -> dict[str, np.ndarray]:
    """Numeric attributes as bin codes over the schema's public bounds; categoricals as leaf codes."""
    out = {}
    for a, col in zip(schema.attributes, columns):
        if a.kind == "numeric":
            out[a.name] = np.searchsorted(_edges(a, bins), col, side="right").astype(np.int64)
        else:
            out[a.name] = np.asarray(col, dtype=np.int64)
    return out


def _bin_table(table: EncodedTable, codes: dict[str, np.ndarray], y: np.ndarray, bins: str = "equal") -> EncodedTable:
    """Back to an EncodedTable whose numeric values are bin midpoints (for the same tree features)."""
    cols = []
    for a in table.schema.attributes:
        v = np.asarray(codes[a.name], dtype=np.int64)
        if a.kind == "numeric":
            edges = np.concatenate([[a.lo], _edges(a, bins), [a.hi]])
            v = np.clip(v, 0, edges.size - 2)
            cols.append((edges[v] + edges[v + 1]) / 2.0)
        else:
            cols.append(v)
    return EncodedTable(table.schema, tuple(cols), np.asarray(y, dtype=np.int64))


def _class_workload(class_column: int) -> Any:
    """AIM's workload for classification: every 2- and 3-way marginal that contains the class (the column
    ``class_column`` of the frame AIM is fitted on), within AIM's cell limit, in place of all 2-way marginals."""
    import itertools

    def get_workload(data: Any, degree: int, max_cells: int, num_marginals: int | None = None) -> list[tuple]:
        cols = list(data.domain)
        target = cols[class_column]
        return [cl for d in (2, 3) for cl in itertools.combinations(cols, d)
                if target in cl and data.domain.size(cl) <= max_cells]

    return get_workload


def peer_sample(name: str, frame: Any, epsilon: float) -> tuple[Any, float]:
    """MST, AIM or ``aim-class`` (smartnoise-synth) fitted on ``frame`` (every column categorical codes, the class
    last) and sampled i.i.d., as many rows: the sample as a DataFrame, and the wall time of fit + sample."""
    import pandas as pd
    from snsynth import Synthesizer

    t0 = time.perf_counter()
    synth = Synthesizer.create("aim" if name == "aim-class" else name, epsilon=float(epsilon), verbose=False)
    if name == "aim-class":
        synth.get_workload = _class_workload(len(frame.columns) - 1)
    synth.fit(frame, preprocessor_eps=0.0, categorical_columns=list(frame.columns))
    synth.synthesizer = _SampleMethod(synth.synthesizer)
    sample = synth.sample(len(frame))
    seconds = time.perf_counter() - t0
    if not isinstance(sample, pd.DataFrame):
        sample = pd.DataFrame(list(sample), columns=list(frame.columns))
    return sample, seconds


def run_peer(name: str, table: EncodedTable, epsilon: float, seed: int, run: int, bins: str = "equal") -> RunRow:
    """MST or AIM (smartnoise-synth, optional) on the train split, sampled i.i.d.; the same tree on the synthetic data.

    Same split as DiffGen's run ``run``; CA on the binned test split. Wall time is fit + sample. ``aim-class`` is
    AIM with the marginals that contain the class as its workload (its set-up for classification) instead of its
    default all 2-way marginals.
    """
    import pandas as pd

    train, test = split_table(table, seed, run)
    schema = train.schema
    frame = pd.DataFrame({**_binned(schema, train.columns, bins), schema.class_attribute.name: train.y})
    sample, seconds = peer_sample(name, frame, epsilon)
    fake = _bin_table(train, {c: sample[c].to_numpy() for c in frame.columns},
                      sample[schema.class_attribute.name].to_numpy(), bins)
    binned_test = _bin_table(test, _binned(schema, test.columns, bins), test.y, bins)
    from ..relational.classify import make_tree

    tree = make_tree().fit(raw_features(fake), fake.y)
    acc = float((tree.predict(raw_features(binned_test)) == test.y).mean())
    return RunRow(name, epsilon, 0, run, acc, baseline_accuracy(train, test), lower_bound_accuracy(train, test), seconds)


def settings_note() -> dict[str, object]:
    return {"tree": dict(TREE_SETTINGS), "split": "random 2/3 train, 1/3 test per run"}


def load_adult(data: str | os.PathLike, schema: TableSchema) -> EncodedTable:
    return read_table(Path(data), schema)


# -- several methods side by side (accuracy vs epsilon) ----------------------------------
#: every name `--methods` accepts: "recommended" is the default of `dprelease diffgen` (RECOMMENDED), "faithful"
#: its --method faithful (FAITHFUL); the other variants stay here so that docs/diffgen.md's numbers can be reproduced
METHODS = ("diffgen", "diffgen-local", "diffgen-plus", "diffgen-plus2", "diffgen-plus3", "recommended", "faithful",
           "tds", "diffp-c45", "mst", "aim", "aim-class")
RECOMMENDED = "diffgen-plus3"
FAITHFUL = "diffgen"
_ALIASES = {"recommended": RECOMMENDED, "faithful": FAITHFUL}
PEERS = ("mst", "aim", "aim-class")


def release_method(name: str, train: EncodedTable, epsilon: float, h: int, noise):
    """One eps-DP release of a table method (a GeneralizedTable); ``recommended`` is :data:`RECOMMENDED`,
    ``faithful`` :data:`FAITHFUL`."""
    from ..relational.diffgen_plus import diffgen_plus, diffgen_plus2, diffgen_plus3

    name = _ALIASES.get(name, name)
    if name == "diffgen":
        return diffgen(train, epsilon, h, noise=noise)
    if name == "diffgen-local":
        return diffgen(train, epsilon, h, noise=noise, local=True)
    if name == "diffgen-plus":
        return diffgen_plus(train, epsilon, noise=noise)
    if name == "diffgen-plus2":
        return diffgen_plus2(train, epsilon, noise=noise)
    if name == "diffgen-plus3":
        return diffgen_plus3(train, epsilon, noise=noise)
    raise ValueError(f"not a table method: {name}")


def _method_seed(seed: int, run: int, eps: float, name: str) -> int:
    key = _ALIASES.get(name, name)  # an alias draws what the method it names draws
    return int(np.random.default_rng([seed, run, int(round(eps * 1e6)), sum(map(ord, key)), len(key)]).integers(2**62))


def run_methods_one(args: tuple) -> list[RunRow]:
    """Every (non-peer) method at every epsilon on split ``run``. Seconds: the release (or tree) only."""
    from ..relational.diffp_c45 import diffp_c45

    table, seed, run, methods, epsilons, h, tds_k = args
    train, test = split_table(table, seed, run)
    ba = baseline_accuracy(train, test)
    la = lower_bound_accuracy(train, test)
    rows = []
    for name in methods:
        if name in PEERS:
            continue
        if name == "tds":
            t0 = time.perf_counter()
            release = tds(train, tds_k)
            secs = time.perf_counter() - t0
            rows.append(RunRow("tds", None, len(release.trace), run, generalized_accuracy(release, test), ba, la, secs))
            continue
        for eps in epsilons:
            noise = make_noise(_method_seed(seed, run, eps, name))
            t0 = time.perf_counter()
            if name == "diffp-c45":
                model = diffp_c45(train, eps, noise=noise)
                secs = time.perf_counter() - t0
                acc = float((model.predict(test) == test.y).mean())
                rows.append(RunRow(name, eps, model.manifest["parameters"]["depth"], run, acc, ba, la, secs))
                continue
            release = release_method(name, train, eps, h, noise)
            secs = time.perf_counter() - t0
            hh = len(release.trace)
            rows.append(RunRow(name, eps, hh, run, generalized_accuracy(release, test), ba, la, secs))
    return rows


def methods_experiment(table: EncodedTable, *, methods: list[str], epsilons: list[float], h: int, runs: int,
                       seed: int = 0, tds_k: int = 5, jobs: int = 1, peer_runs: int | None = None,
                       progress=None) -> list[RunRow]:
    """All methods on the same splits (run r uses split (seed, r)); peers (MST/AIM) on the first ``peer_runs``."""
    tasks = [(table, seed, r, methods, epsilons, h, tds_k) for r in range(runs)]
    if jobs > 1 and runs > 1:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            parts = list(pool.map(run_methods_one, tasks))
    else:
        parts = [run_methods_one(t) for t in tasks]
    rows = [row for part in parts for row in part]
    for name in methods:
        if name in PEERS:
            for eps in epsilons:
                for r in range(runs if peer_runs is None else peer_runs):
                    if progress:
                        progress(f"{name} eps={eps:g} run {r}")
                    rows.append(run_peer(name, table, eps, seed, r))
    return rows


def summarize_methods(rows: list[RunRow]) -> list[dict[str, object]]:
    """Mean, stdev (percent) and mean seconds per (method, epsilon); TDS has epsilon None."""
    groups: dict[tuple, list[RunRow]] = {}
    for r in rows:
        groups.setdefault((r.method, r.epsilon), []).append(r)
    out = []
    for (method, eps), rs in groups.items():
        acc = [100.0 * r.accuracy for r in rs]
        out.append({
            "method": method, "epsilon": eps, "runs": len(rs),
            "accuracy": statistics.fmean(acc), "stdev": statistics.stdev(acc) if len(acc) > 1 else 0.0,
            "seconds": statistics.fmean(r.seconds for r in rs),
            "baseline_accuracy": 100.0 * statistics.fmean(r.baseline_accuracy for r in rs),
            "lower_bound_accuracy": 100.0 * statistics.fmean(r.lower_bound_accuracy for r in rs),
        })
    order = {m: i for i, m in enumerate(METHODS)}
    out.sort(key=lambda s: (order.get(str(s["method"]), len(order)), -1.0 if s["epsilon"] is None else s["epsilon"]))
    return out


def methods_json(rows: list[RunRow], summary: list[dict[str, object]]) -> dict[str, object]:
    """The methods JSON for one epsilon: BA and LA over the runs' splits, and each method's mean/stdev/seconds."""
    split_rows = {r.run: r for r in rows}
    return {
        "baseline_accuracy": 100.0 * statistics.fmean(r.baseline_accuracy for r in split_rows.values()),
        "lower_bound_accuracy": 100.0 * statistics.fmean(r.lower_bound_accuracy for r in split_rows.values()),
        "methods": {str(s["method"]): {"accuracy": s["accuracy"], "stdev": s["stdev"], "seconds": s["seconds"]}
                    for s in summary},
    }


def plot_methods(summary: list[dict[str, object]], path: Path, title: str = "Adult") -> None:
    """Accuracy vs epsilon, one labelled line per method, mean +- stdev as a band; not-DP TDS, BA, LA as lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .common import save_png

    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    methods = []
    for s in summary:
        if s["method"] not in methods:
            methods.append(s["method"])
    for m in methods:
        rows = sorted((s for s in summary if s["method"] == m), key=lambda s: s["epsilon"] or 0.0)
        if rows[0]["epsilon"] is None:  # TDS: not DP, one value
            mu, sd = rows[0]["accuracy"], rows[0]["stdev"]
            ax.axhline(mu, ls="-.", color="tab:brown", label=f"{m} (k-anonymity, not DP) {mu:.1f}%")
            ax.axhspan(mu - sd, mu + sd, color="tab:brown", alpha=0.08)
            continue
        xs = [s["epsilon"] for s in rows]
        mu = np.asarray([s["accuracy"] for s in rows])
        sd = np.asarray([s["stdev"] for s in rows])
        alias = f" = {_ALIASES[m]}" if m in _ALIASES else ""
        style = {"ls": "--", "marker": "x"} if m in _ALIASES else {"marker": "o"}
        (line,) = ax.plot(xs, mu, label=f"{m}{alias} ({rows[0]['runs']} runs)", **style)
        ax.fill_between(xs, mu - sd, mu + sd, color=line.get_color(), alpha=0.15)
    ba = statistics.fmean(s["baseline_accuracy"] for s in summary)
    la = statistics.fmean(s["lower_bound_accuracy"] for s in summary)
    ax.axhline(ba, ls=":", color="k", label=f"BA = {ba:.1f}%")
    ax.axhline(la, ls="--", color="grey", label=f"LA = {la:.1f}%")
    ax.set_xscale("log")
    ax.set_xlabel("privacy budget ε")
    ax.set_ylabel("classification accuracy CA (%)")
    ax.set_title(f"{title}: CA vs ε (mean ± stdev over runs)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    save_png(fig, path)
