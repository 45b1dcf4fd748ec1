"""The report of a top-k itemset release (PrivBasis, TF): PrivBasis section 5's utility.

* FNR = missed true top-k itemsets / k, the tie-aware recall and the median relative error of the published
  frequencies: the numbers of ``evaluate itemsets`` (:mod:`dprelease.evaluation.itemsets`);
* plots: the published itemsets' noisy counts against their true supports; the true top-k in rank order,
  published or missed.
"""

from __future__ import annotations

import numpy as np

from ..data.transactions import TransactionDB
from ..data.universe import Universe
from ..itemsets.exact import itemset_supports, top_k_itemsets
from .page import Page, new_figure, square_axes

__all__ = ["itemsets_section"]


def _fmt(x: float | None, digits: int = 4) -> str:
    return "n/a" if x is None or not np.isfinite(x) else f"{x:.{digits}g}"


def itemsets_section(page: Page, raw: TransactionDB, universe: Universe, published: list[tuple[int, ...]],
                     counts: np.ndarray, frequencies: np.ndarray, k: int) -> dict[str, object]:
    """Append the utility section; returns the numbers."""
    from ..evaluation.itemsets import itemset_metrics  # FNR, tie-aware recall, median relative error

    true_top = top_k_itemsets(raw, k)
    metrics = {key: float(v) for key, v in itemset_metrics(raw, published, frequencies, k, true_top).items()}
    recall = metrics.get("tie_aware_recall")
    truth = {s for s, _ in true_top}
    hits = len(truth & set(published))
    metrics["precision"] = hits / len(published) if published else float("nan")
    supports = itemset_supports(raw, published) if published else np.zeros(0, dtype=np.int64)

    page.heading("Utility")
    cards = [("k", str(k)), ("itemsets published", f"{len(published):,}"),
             ("false negative rate, FNR (an empty release: 1)", _fmt(metrics["fnr"], 3)),
             ("published itemsets in the true top-k", _fmt(metrics["precision"], 3)),
             ("median relative error of frequencies (every frequency published as 0: 1)",
              _fmt(metrics["median_relative_error"], 3))]
    if recall is not None:
        cards.append(("tie-aware recall (an empty release: 0)", _fmt(recall, 3)))
    page.metrics(cards)
    page.paragraph("FNR: share of the exact top-k itemsets (ties broken as dprelease.itemsets.exact does) that "
                   "are not published (PrivBasis section 5). Relative error: |published frequency − true "
                   "frequency| / true frequency, median over the published itemsets.", "note")
    if not published:
        page.warning("Nothing was published: FNR 1.")

    page.heading("Published counts against true supports", 3)
    fig = new_figure(6.4, 4.8)
    ax = fig.add_subplot()
    if published:
        inside = np.asarray([s in truth for s in published])
        floor = square_axes(ax, np.concatenate([supports, counts]))  # fitted to the points, not from 0
        shown = np.maximum(counts, floor) if floor is not None else counts  # log axes: counts <= 0 at the edge
        xs = np.maximum(supports, floor) if floor is not None else supports
        ax.scatter(xs[inside], shown[inside], s=18, alpha=0.75, color="#2b8a3e", label="in the true top-k")
        if (~inside).any():
            ax.scatter(xs[~inside], shown[~inside], s=18, alpha=0.75, color="#d62728", marker="x",
                       label="not in the true top-k")
        ax.legend()
    ax.set_xlabel("true support (records)")
    ax.set_ylabel("published noisy count")
    ax.set_title("Published itemsets: noisy count vs true support")
    page.figure(fig, "scatter of published noisy counts against true supports",
                "One point per published itemset; on the diagonal the count is exact. The axes span the points' "
                "range (they need not start at 0; logarithmic where the values span more than 20 times, with "
                "counts at or below 0 at the bottom edge).")

    page.heading(f"The true top-{k}", 3)
    fig = new_figure(8.0, 3.8)
    ax = fig.add_subplot()
    if true_top:
        ranks = np.arange(1, len(true_top) + 1)
        sup = np.asarray([c for _, c in true_top])
        got = np.asarray([s in set(published) for s, _ in true_top])
        if got.any():
            ax.bar(ranks[got], sup[got], color="#2b8a3e", label="published", width=0.9)
        if (~got).any():
            ax.bar(ranks[~got], sup[~got], color="#adb5bd", label="missed", width=0.9)
        ax.legend()
    ax.set_xlabel("rank in the raw data")
    ax.set_ylabel("true support (records)")
    ax.set_title(f"True top-{k} itemsets: published or missed")
    page.figure(fig, f"bar chart of the true top-{k} supports, published or missed")

    labels = universe.labels
    rows = []
    order = np.argsort(-supports, kind="stable") if published else []
    for j in list(order)[:200]:
        s = published[int(j)]
        rows.append((" ".join(labels[i] for i in s), f"{counts[int(j)]:.0f}", int(supports[int(j)]),
                     "yes" if s in truth else "no"))
    page.table(("published itemset", "noisy count", "true support", "in true top-k"), rows,
               numeric=(False, True, True, False),
               caption="Published itemsets by true support" + (" (first 200)" if len(published) > 200 else ""))
    return {"k": k, **metrics}

