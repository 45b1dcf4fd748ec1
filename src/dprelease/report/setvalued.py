"""The report of a set-valued release (DiffPart, Basic, an IncTDPart stream): DiffPart section 5's utility.

* counting queries: mean relative error of random itemset-count queries, by query length (section 5.1), and of
  the frequent-itemset workload (itemsets of 1-4 items with support >= 1 % of N), each beside the error of an
  empty release and of uniform random baskets of the raw record sizes (the numbers of ``evaluate counting``,
  :func:`dprelease.evaluation.counting.evaluate_counting_with_baselines`);
* top-K frequent itemset utility (appendix E, :func:`dprelease.evaluation.topk_utility_many`) beside the
  uniform baskets' (an empty release scores 0), with what moves it: the raw K-th support, the raw top-K
  itemsets missing from the release's top K and how close to the K-th support they are;
* the share of released records that occur in the raw data (``dprelease.evaluation.occurrence``
  where this version has it);
* plots: item supports raw vs released; relative error by query length; the raw top-K itemsets' supports
  in the release against their true supports.
"""

from __future__ import annotations

import numpy as np

from ..data.transactions import TransactionDB
from ..data.universe import Universe
from ..evaluation import topk_utility_many
from ..evaluation.counting import evaluate_counting_with_baselines, uniform_baskets
from ..itemsets.exact import itemset_supports, top_k_itemsets
from .page import Page, new_figure, square_axes

__all__ = ["setvalued_section"]

RAW_COLOR, REL_COLOR = "#1f77b4", "#d62728"


def _fmt(x: float | None, digits: int = 4) -> str:
    return "n/a" if x is None or not np.isfinite(x) else f"{x:.{digits}g}"


def setvalued_section(page: Page, raw: TransactionDB, released: TransactionDB, universe: Universe, *,
                      queries: int, seed: int, ks: tuple[int, ...] = (10, 50, 100)) -> dict[str, object]:
    """Append the utility section; returns the numbers (for tests and ``--json``)."""
    n_raw, n_rel = raw.n_records, released.n_records
    counting = evaluate_counting_with_baselines(raw, released, n_queries=queries, seed=seed)
    utility = topk_utility_many(raw, released, list(ks))
    # the uniform baskets of evaluate counting (same seed): their top-K utility is the baseline beside the release's
    uniform = topk_utility_many(raw, uniform_baskets(raw.n_items, raw.lengths, seed=seed), list(ks))
    occurrence = _occurrence(raw, released)
    out: dict[str, object] = {"raw_records": n_raw, "released_records": n_rel, "counting": counting,
                              "topk_utility": {str(k): v for k, v in utility.items()},
                              "topk_utility_uniform": {str(k): v for k, v in uniform.items()}, "occurrence": occurrence}
    base = counting["baselines"]
    freq = counting["frequent"]

    page.heading("Utility")
    cards = [("raw records (exact, N)", f"{n_raw:,}"), ("released records (noisy)", f"{n_rel:,}"),
             _beside("frequent-itemset queries: mean relative error", freq["mean_relative_error"],
                     base["empty"]["frequent"]["mean_relative_error"],
                     base["uniform"]["frequent"]["mean_relative_error"]),
             _beside("random counting queries: mean relative error", counting["mean_relative_error"],
                     base["empty"]["mean_relative_error"], base["uniform"]["mean_relative_error"])]
    cards += [(f"top-{k} utility, 1 is perfect; empty release 0, uniform baskets {_fmt(uniform[k], 3)}", _fmt(u, 3))
              for k, u in utility.items()]
    if occurrence is not None and occurrence.get("records_exact") is not None:
        cards.append(("released records equal to a raw record / contained in one",
                      f"{_pct(occurrence['records_exact'])} / {_pct(occurrence['records_contained'])}"))
    page.metrics(cards)
    if n_rel == 0:
        page.warning("The release is empty: every query answers 0 (relative errors are at most 1) and the top-K "
                     "utility is 0.")
    _counting_tables(page, counting, queries, seed)

    page.heading("Item supports", 3)
    _item_support_plot(page, raw, released, universe)

    page.heading(f"Top-{max(ks)} frequent itemsets", 3)
    _topk_plot(page, raw, released, max(ks))
    out["topk_detail"] = _topk_table(page, raw, released, utility, uniform)

    if occurrence is not None:
        page.heading("Released records that occur in the raw data", 3)
        page.table(("share", "exact record", "contained in a record"),
                   [("of released records", _pct(occurrence.get("records_exact")),
                     _pct(occurrence.get("records_contained"))),
                    ("of distinct released itemsets", _pct(occurrence.get("distinct_exact")),
                     _pct(occurrence.get("distinct_contained")))], numeric=(False, True, True),
                   caption="Exact: the released itemset equals a raw record. Contained: it is a subset of one (a "
                           "generalized record: a real record with items dropped is contained but not exact).")
    return out


def _beside(label: str, value: object, empty: object, uniform: object) -> tuple[str, str]:
    """A card: the release's number, its label naming the two baselines' numbers."""
    return (f"{label}; empty release {_fmt(float(empty), 3)}, uniform baskets {_fmt(float(uniform), 3)}",  # type: ignore[arg-type]
            _fmt(float(value), 3))  # type: ignore[arg-type]


def _counting_tables(page: Page, counting: dict, queries: int, seed: int) -> None:
    """The two workloads by query length, the release beside the empty and the uniform release, and a bar chart."""
    base = counting["baselines"]
    freq = counting["frequent"]
    page.heading("Counting queries by length", 3)
    page.paragraph(f"{queries:,} random itemset-count queries in 5 subsets of growing length (DiffPart section 5.1, "
                   f"seed {seed}), and the frequent-itemset workload: {freq['queries']:,} of the raw data's "
                   f"{freq['frequent_itemsets']:,} itemsets of 1-4 items with support ≥ {100 * freq['min_share']:g} % "
                   f"of N ({freq['min_count']:,} records), chosen from the raw data (the custodian's side). Relative "
                   "error |released − true| / max(true, 0.1 % of N). Beside the release: an empty release and N "
                   "uniform random baskets of the raw record sizes, which never looked at the items. On sparse data "
                   "most random queries have a true count of 0, so even an empty release scores well on them; the "
                   "frequent workload, where an empty release scores 1, is the one that can fail.", "note")
    rows = []
    for name, key, subsets in (("random", None, counting["subsets"]), ("frequent", "frequent", freq["subsets"])):
        for i, sub in enumerate(subsets):
            e = base["empty"][key]["subsets"][i] if key else base["empty"]["subsets"][i]
            u = base["uniform"][key]["subsets"][i] if key else base["uniform"]["subsets"][i]
            what = f"1 .. {sub['max_length']}" if key is None else f"{sub['max_length']} ({sub['queries']:,})"
            rows.append((name, what, _fmt(sub["mean_relative_error"]), _fmt(e["mean_relative_error"]),
                         _fmt(u["mean_relative_error"])))
    page.table(("workload", "query length", "release", "empty release", "uniform baskets"), rows,
               numeric=(False, False, True, True, True))
    subs = counting["subsets"] + freq["subsets"]
    labels = [f"1..{s['max_length']}" for s in counting["subsets"]] + [f"freq {s['max_length']}"
                                                                       for s in freq["subsets"]]
    values = {"release": [s["mean_relative_error"] for s in subs]}
    for name in ("empty", "uniform"):
        values[name] = ([s["mean_relative_error"] for s in base[name]["subsets"]]
                        + [s["mean_relative_error"] for s in base[name]["frequent"]["subsets"]])
    fig = new_figure(8.0, 3.8)
    ax = fig.add_subplot()
    x = np.arange(len(labels))
    for j, (name, color) in enumerate((("release", REL_COLOR), ("empty", "#adb5bd"), ("uniform", "#f59f00"))):
        ax.bar(x + (j - 1) * 0.27, values[name], 0.27, color=color,
               label={"release": "release", "empty": "empty release", "uniform": "uniform baskets"}[name])
    ax.set_xticks(x, labels, fontsize=8)
    ax.set_xlabel("random queries of 1..L items; frequent itemsets of L items")
    ax.set_ylabel("mean relative error")
    ax.set_yscale("log")
    ax.set_title("Relative error of counting queries by query length")
    ax.legend(fontsize=8)
    page.figure(fig, "bar chart: mean relative error of counting queries by query length, release vs baselines",
                "Each group is one subset of a workload; grey: an empty release; orange: uniform random baskets.")


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


def _topk_table(page: Page, raw: TransactionDB, released: TransactionDB, utility: dict[int, float],
               uniform: dict[int, float]) -> list[dict[str, object]]:
    """Top-K utility per K beside the uniform baskets', with what moves it: a raw top-K itemset missing from the
    release's top K counts as a full error of 1, and those misses sit where supports crowd near the K-th, so the
    utility need not fall steadily with K (a near-tie missed at K = 50 may be found again at K = 100)."""
    k_max = max(utility)
    raw_top = top_k_itemsets(raw, k_max)
    rel_top = top_k_itemsets(released, k_max) if released.n_records else []
    n_raw, n_rel = raw.n_records, max(released.n_records, 1)
    rows: list[dict[str, object]] = []
    for k, u in utility.items():
        top = raw_top[:k]
        if not top:
            continue
        rel_k = dict(rel_top[:k])
        kth = top[-1][1]
        missing = [c for s, c in top if s not in rel_k]
        found = [abs(c / n_raw - rel_k[s] / n_rel) / (c / n_raw) for s, c in top if s in rel_k]
        rows.append({"k": k, "utility": u, "uniform": uniform[k], "kth_support": kth, "missing": len(missing),
                     "missing_near_kth": sum(c <= 1.1 * kth for c in missing),
                     "utility_found": 1.0 - float(np.mean(found)) if found else float("nan")})
    page.table(("K", "top-K utility", "uniform baskets", "raw K-th support", "raw top-K missing from the release's "
                "top K", "of which within 10 % of the K-th support", "utility over the found ones"),
               [(r["k"], _fmt(r["utility"], 4), _fmt(r["uniform"], 4), f"{r['kth_support']:,}", r["missing"],
                 r["missing_near_kth"], _fmt(r["utility_found"], 4)) for r in rows],
               numeric=(True,) * 7,
               caption="Top-K utility: 1 − mean relative support error of the raw top-K itemsets in the release's "
                       "top K (DiffPart appendix E); an empty release scores 0. A raw top-K itemset that is not in "
                       "the release's top K counts as an error of 1, whatever its released support: such misses are "
                       "near-ties at the K-th support, whose order the noise shuffles, so the utility can fall and "
                       "rise again with K. The last column leaves the misses out.")
    return rows


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
    floor = square_axes(ax, np.concatenate([true, rel]))
    if floor is not None:
        rel = np.maximum(rel, floor)  # log axes: an itemset missing from the release at the bottom edge
    for L in sorted(set(lengths.tolist())):
        m = lengths == L
        ax.scatter(true[m], rel[m], s=16, alpha=0.7, label=f"{L}-itemsets")
    ax.set_xlabel("true support (fraction of raw records)")
    ax.set_ylabel("support in the release")
    ax.set_title(f"The raw top-{len(top)} itemsets: released vs true support")
    ax.legend()
    page.figure(fig, f"scatter of the raw top-{len(top)} itemsets' supports in the release against their true supports",
                "On the diagonal the release keeps the itemset's support exactly. The axes span the points' range "
                "(they need not start at 0; logarithmic where the supports span more than 20 times, with an "
                "itemset the release lacks at the bottom edge).")

