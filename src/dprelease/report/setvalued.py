"""The report of a set-valued release (DiffPart, Basic, an IncTDPart stream): DiffPart section 5's utility.

* counting queries: mean relative error of random itemset-count queries, by query length (section 5.1,
  :func:`dprelease.evaluation.evaluate_counting`);
* top-K frequent itemset utility (appendix E, :func:`dprelease.evaluation.topk_utility_many`);
* the share of released records that occur in the raw data (``dprelease.evaluation.occurrence``
  where this version has it);
* plots: item supports raw vs released; relative error by query length; the raw top-K itemsets' supports
  in the release against their true supports.
"""

from __future__ import annotations

import numpy as np

from ..data.transactions import TransactionDB
from ..data.universe import Universe
from ..evaluation import evaluate_counting, topk_utility_many
from ..itemsets.exact import itemset_supports, top_k_itemsets
from .page import Page, new_figure

__all__ = ["setvalued_section"]

RAW_COLOR, REL_COLOR = "#1f77b4", "#d62728"


def _fmt(x: float | None, digits: int = 4) -> str:
    return "n/a" if x is None or not np.isfinite(x) else f"{x:.{digits}g}"


def setvalued_section(page: Page, raw: TransactionDB, released: TransactionDB, universe: Universe, *,
                      queries: int, seed: int, ks: tuple[int, ...] = (10, 50, 100)) -> dict[str, object]:
    """Append the utility section; returns the numbers (for tests and ``--json``)."""
    n_raw, n_rel = raw.n_records, released.n_records
    counting = evaluate_counting(raw, released, n_queries=queries, seed=seed)
    utility = topk_utility_many(raw, released, list(ks))
    occurrence = _occurrence(raw, released)
    out: dict[str, object] = {"raw_records": n_raw, "released_records": n_rel, "counting": counting,
                              "topk_utility": {str(k): v for k, v in utility.items()}, "occurrence": occurrence}

    page.heading("Utility")
    cards = [("raw records (exact, N)", f"{n_raw:,}"), ("released records (noisy)", f"{n_rel:,}"),
             ("mean relative error, counting queries", _fmt(counting["mean_relative_error"]))]
    cards += [(f"top-{k} utility (1 is perfect)", _fmt(u, 3)) for k, u in utility.items()]
    if occurrence is not None and occurrence.get("records_exact") is not None:
        cards.append(("released records that occur in the raw data", f"{100 * occurrence['records_exact']:.1f} %"))
    page.metrics(cards)
    if n_rel == 0:
        page.warning("The release is empty: every query answers 0 (relative errors are at most 1) and the top-K "
                     "utility is 0.")

    page.heading("Counting queries by length", 3)
    page.paragraph(f"{queries:,} random itemset-count queries in 5 subsets of growing length (DiffPart section 5.1, "
                   f"seed {seed}). Relative error |released − true| / max(true, 0.1 % of N).", "note")
    subsets = counting["subsets"]
    lengths = [int(s["max_length"]) for s in subsets]
    errors = [float(s["mean_relative_error"]) for s in subsets]
    page.table(("query length", "mean relative error"),
               [(f"1 .. {L}", _fmt(e)) for L, e in zip(lengths, errors)], numeric=(False, True))
    fig = new_figure(7.5, 3.6)
    ax = fig.add_subplot()
    ax.bar([f"1..{L}" for L in lengths], errors, color=REL_COLOR)
    ax.set_xlabel("query length")
    ax.set_ylabel("mean relative error")
    ax.set_title("Relative error of counting queries by query length")
    page.figure(fig, "bar chart: mean relative error of counting queries by query length",
                "Each bar is one subset of the workload: queries of 1 to L items.")

    page.heading("Item supports", 3)
    _item_support_plot(page, raw, released, universe)

    page.heading(f"Top-{max(ks)} frequent itemsets", 3)
    _topk_plot(page, raw, released, max(ks))
    page.table(("K", "top-K utility"), [(k, _fmt(u, 4)) for k, u in utility.items()], numeric=(True, True),
               caption="1 − mean relative support error of the raw top-K itemsets in the release's top K "
                       "(DiffPart appendix E); 0 for an empty release.")

    if occurrence is not None:
        page.heading("Released records that occur in the raw data", 3)
        page.table(("share", "exact record", "contained in a record"),
                   [("of released records", _pct(occurrence.get("records_exact")),
                     _pct(occurrence.get("records_contained"))),
                    ("of distinct released itemsets", _pct(occurrence.get("distinct_exact")),
                     _pct(occurrence.get("distinct_contained")))], numeric=(False, True, True))
    return out


def _pct(x: object) -> str:
    return "n/a" if x is None else f"{100 * float(x):.1f} %"  # type: ignore[arg-type]


def _occurrence(raw: TransactionDB, released: TransactionDB) -> dict[str, object] | None:
    from ..evaluation.occurrence import occurrence_share

    return occurrence_share(raw, released)


def _item_support_plot(page: Page, raw: TransactionDB, released: TransactionDB, universe: Universe) -> None:
    f_raw = raw.item_supports() / max(raw.n_records, 1)
    f_rel = released.item_supports() / max(released.n_records, 1) if released.n_records else np.zeros(raw.n_items)
    labels = list(universe.labels)
    if raw.n_items <= 40:
        x = np.arange(raw.n_items)
        fig = new_figure(8.0, 3.8)
        ax = fig.add_subplot()
        ax.bar(x - 0.2, f_raw, 0.4, label="raw", color=RAW_COLOR)
        ax.bar(x + 0.2, f_rel, 0.4, label="released", color=REL_COLOR)
        ax.set_xticks(x, labels, rotation=90 if raw.n_items > 20 else 0)
        ax.set_xlabel("item")
    else:
        fig = new_figure(6.4, 5.0)
        ax = fig.add_subplot()
        floor = 0.5 / max(raw.n_records, released.n_records, 1)
        keep = (f_raw > 0) | (f_rel > 0)
        ax.scatter(np.maximum(f_raw[keep], floor), np.maximum(f_rel[keep], floor), s=6, alpha=0.5, color=REL_COLOR)
        lim = [floor, 1.0]
        ax.plot(lim, lim, color="#555", linewidth=1, label="released = raw")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("raw support (fraction of records)")
        ax.set_ylabel("released support")
    ax.set_ylabel("support (fraction of records)" if raw.n_items <= 40 else "released support")
    ax.set_title("Item supports: raw vs released")
    ax.legend()
    page.figure(fig, "item supports in the raw data and in the release",
                "Support = share of records holding the item (each dataset over its own size)."
                + ("" if raw.n_items <= 40 else f" One dot per item ({int(((f_raw > 0) | (f_rel > 0)).sum()):,} "
                                                  f"items occur); zero supports drawn at the bottom edge."))


def _topk_plot(page: Page, raw: TransactionDB, released: TransactionDB, k: int) -> None:
    top = top_k_itemsets(raw, k)
    if not top:
        page.paragraph("The raw data has no itemsets.")
        return
    sets = [s for s, _ in top]
    true = np.asarray([c for _, c in top], dtype=np.float64) / raw.n_records
    rel = (itemset_supports(released, sets) / released.n_records if released.n_records
           else np.zeros(len(sets)))
    fig = new_figure(6.4, 4.8)
    ax = fig.add_subplot()
    lengths = np.asarray([len(s) for s in sets])
    for L in sorted(set(lengths.tolist())):
        m = lengths == L
        ax.scatter(true[m], rel[m], s=16, alpha=0.7, label=f"{L}-itemsets")
    hi = float(max(true.max(), rel.max(), 1e-9)) * 1.05
    ax.plot([0, hi], [0, hi], color="#555", linewidth=1)
    ax.set_xlim(0, hi)
    ax.set_ylim(0, hi)
    ax.set_xlabel("true support (fraction of raw records)")
    ax.set_ylabel("support in the release")
    ax.set_title(f"The raw top-{len(top)} itemsets: released vs true support")
    ax.legend()
    page.figure(fig, f"scatter of the raw top-{len(top)} itemsets' supports in the release against their true supports",
                "On the diagonal the release keeps the itemset's support exactly.")
