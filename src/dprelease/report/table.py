"""The report of a table release: a generalized contingency table (DiffGen; TDS, not DP) or a synthetic table
(RPS; Mondrian, not DP), read back by :mod:`dprelease.release.table` (a
:class:`~dprelease.release.table.GeneralizedTable` or a :class:`~dprelease.release.table.SyntheticTable`).

* classification accuracy (DiffGen section 5), all on the same held-out third of the raw records: a C4.5-like
  tree (:mod:`dprelease.relational.classify`) trained on the release (a generalized table: on its cut values
  with the counts as weights; a synthetic table: on its records) (CA); the same tree trained on the other two
  thirds (BA); their majority class (LA); and the confusion matrix of the release's tree;
* range-count queries over the schema's public domain (:mod:`dprelease.evaluation.ranges`, the numbers of
  ``evaluate ranges``): relative error by number of constrained attributes, mean and median, beside an empty
  table's and a uniform table's (N records spread over the public domain);
* a generalized table: every released cell x class count against the true count of the raw records in that
  cell; a synthetic table: the marginal distribution of each attribute, raw vs released.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..data.table import EncodedTable
from ..release.table import GeneralizedTable, SyntheticTable
from .page import Page, new_figure

__all__ = ["table_section", "LARGE_SHARE"]

LARGE_SHARE = 0.01  # a range query is "large" when its true count is at least 1 % of N

def _fmt(x: float | None, digits: int = 4) -> str:
    return "n/a" if x is None or not np.isfinite(x) else f"{x:.{digits}g}"


def _cell_index(release, raw_cells: np.ndarray) -> np.ndarray:
    """Row of ``release.cells`` holding each raw record's generalized cell (-1: outside the released cells)."""
    out = np.full(raw_cells.shape[0], -1, dtype=np.int64)
    valid = (raw_cells >= 0).all(axis=1)
    if not valid.any():
        return out
    sizes = np.asarray([len(c) for c in release.cut], dtype=np.int64)
    radix = np.concatenate([[1], np.cumprod(sizes[::-1])[:-1]])[::-1]
    rel_key = release.cells @ radix
    order = np.argsort(rel_key)
    raw_key = raw_cells[valid] @ radix
    pos = np.searchsorted(rel_key[order], raw_key)
    pos = np.minimum(pos, len(order) - 1)
    hit = rel_key[order][pos] == raw_key
    out[np.flatnonzero(valid)[hit]] = order[pos[hit]]
    return out


def table_section(page: Page, raw: EncodedTable, release: GeneralizedTable | SyntheticTable, release_path: Path, *,
                  queries: int, seed: int) -> dict[str, object]:
    """Append the utility section for ``release`` (read from ``release_path``, whose rows the range queries
    count); returns the numbers."""
    generalized = isinstance(release, GeneralizedTable)
    out: dict[str, object] = {"records": raw.n_records}
    raw_cells = release.generalize(raw) if isinstance(release, GeneralizedTable) else None
    outside = int((~(raw_cells >= 0).all(axis=1)).sum()) if raw_cells is not None else 0
    out["released_records"] = (int(np.maximum(release.counts, 0).sum()) if isinstance(release, GeneralizedTable)
                               else release.table.n_records)
    accuracy, confusion = _classification(raw, release, seed)
    ranges = _ranges(raw, release_path, queries, seed)
    out.update(accuracy)
    out.update({"confusion": confusion.tolist(), "range_queries": ranges, "records_outside_cells": outside})
    _headline(page, out, generalized)
    _classification_text(page, out, generalized, seed)
    _confusion_plot(page, confusion, list(raw.schema.class_attribute.values), raw.schema.class_attribute.name)
    _ranges_section(page, ranges, generalized, seed)
    if isinstance(release, GeneralizedTable):
        assert raw_cells is not None
        out.update(_cells_section(page, raw, release, raw_cells))
    else:
        page.heading("Marginals", 3)
        _marginals_plot(page, raw, release.table)
    return out


def _classification(raw: EncodedTable, release: GeneralizedTable | SyntheticTable, seed: int
                    ) -> tuple[dict[str, float | int], np.ndarray]:
    """CA, BA and LA on the same held-out third of the raw records (DiffGen section 5's split, seed ``seed``):
    the tree trained on the release, the tree trained on the other two thirds, the majority class of those;
    and the confusion matrix of the release's tree on that third."""
    from ..evaluation.splits import split_table
    from ..relational.classify import baseline_accuracy, cut_features, lower_bound_accuracy, make_tree, raw_features

    schema = raw.schema
    n_cls = schema.n_classes
    train, test = split_table(raw, seed, 0)
    valid = np.ones(test.n_records, dtype=bool)
    if isinstance(release, GeneralizedTable):
        sizes = [len(c) for c in release.cut]
        x = np.repeat(cut_features(schema, sizes, release.cells), n_cls, axis=0)
        y = np.tile(np.arange(n_cls), release.cells.shape[0])
        w: np.ndarray | None = np.asarray(release.counts, dtype=np.float64).reshape(-1)
        keep = w > 0  # type: ignore[operator]
        x, y, w = x[keep], y[keep], w[keep]  # type: ignore[index]
        test_cells = release.generalize(test)
        valid = (test_cells >= 0).all(axis=1)
        x_test = cut_features(schema, sizes, np.where(test_cells >= 0, test_cells, 0))
    else:
        x, y, w = raw_features(release.table), release.table.y, None
        x_test = raw_features(test)
    if y.size and np.unique(y).size > 1:
        pred = make_tree(seed).fit(x, y, sample_weight=w).predict(x_test)
    else:  # nothing to learn from: predict the release's only class (or the first)
        pred = np.full(test.n_records, int(y[0]) if y.size else 0)
    ca = float((pred[valid] == test.y[valid]).mean()) if valid.any() else float("nan")
    confusion = np.zeros((n_cls, n_cls), dtype=np.int64)
    np.add.at(confusion, (test.y[valid], pred[valid]), 1)
    return ({"accuracy_release": ca, "accuracy_raw_baseline": baseline_accuracy(train, test, seed),
             "accuracy_majority": lower_bound_accuracy(train, test), "test_records": int(test.n_records),
             "test_records_outside_cells": int((~valid).sum())}, confusion)


def _headline(page: Page, out: dict[str, object], generalized: bool) -> None:
    """The utility cards: every number beside its baseline."""
    ranges: dict = out["range_queries"]  # type: ignore[assignment]

    def large(result: dict) -> str:
        return _fmt(result["large_median_relative_error"], 3)

    page.heading("Utility")
    page.metrics([("raw records (exact, N)", f"{out['records']:,}"),
                  ("released records" + (" (sum of noisy counts)" if generalized else ""),
                   f"{out['released_records']:,}"),
                  ("held-out accuracy, tree trained on the release (CA)", _pct2(out["accuracy_release"])),
                  ("held-out accuracy, tree trained on raw records (BA)", _pct2(out["accuracy_raw_baseline"])),
                  ("majority class (LA)", _pct2(out["accuracy_majority"])),
                  (f"range queries holding ≥ {100 * LARGE_SHARE:g} % of N: median relative error; empty table "
                   f"{large(ranges['baselines']['empty'])}, uniform table {large(ranges['baselines']['uniform'])}",
                   large(ranges))])
    if out["records_outside_cells"]:
        page.warning(f"{out['records_outside_cells']:,} raw records fall outside the release's cells (the release "
                     f"does not cover the schema's domain); those of the held-out third are left out of CA.")


def _pct2(x: object) -> str:
    v = float(x)  # type: ignore[arg-type]
    return f"{100 * v:.2f} %" if np.isfinite(v) else "n/a"


def _classification_text(page: Page, out: dict[str, object], generalized: bool, seed: int) -> None:
    page.heading("Classification (DiffGen section 5)", 3)
    page.paragraph(f"One random split of the raw records (seed {seed}): {out['test_records']:,} held-out records, a "
                   "third, score every classifier. CA: a C4.5-like tree (entropy, pruned) trained on the release — " +
                   ("on its cut values, with the counts as weights; the held-out records are generalized to the "
                    "release's cut" if generalized else "on its records") +
                   ". BA: the same tree trained on the other two thirds of the raw records. LA: always the majority "
                   "class of those two thirds. The release was made from all the raw records (the report cannot "
                   "re-run it on two thirds), so the held-out third is unseen by both trees but not by the release; "
                   "ε-differential privacy bounds what the release carries of any one of them.", "note")


def _ranges_section(page: Page, ranges: dict[str, object], generalized: bool, seed: int) -> None:
    page.heading("Range queries", 3)
    subsets: list[dict] = ranges["subsets"]  # type: ignore[assignment]
    page.paragraph(f"{ranges['queries']:,} random range-count queries over the schema's public domain (seed {seed}; "
                   "dprelease.evaluation.ranges, as `dprelease evaluate ranges`): each constrains 1 to "
                   f"{len(subsets)} attributes to a random range. Relative error |released − true| / "
                   "max(true, 0.1 % of N)" + ("; a generalized row counts with the share of its box inside the "
                                              "query. Noisy counts rounded up from below 0 make sparse ranges "
                                              "overcount, so the mean can be far above the median" if generalized
                                              else "") +
                   ". Beside the release, two tables that never looked at the data: an empty one and N records "
                   "spread uniformly over the public domain. Most random ranges hold almost no record, so an empty "
                   "table scores well on them (an empty answer costs at most 1, an overcount without bound); on the "
                   f"{ranges['large_queries']:,} queries whose true count is at least {100 * LARGE_SHARE:g} % of N "
                   "an empty table scores 1, and their median is the headline (a few heavy overcounts of skewed "
                   "attributes drive the mean above 1 for any table that spreads records over a box).", "note")
    base_: dict = ranges["baselines"]  # type: ignore[assignment]
    page.table(("queries", "release", "empty table", "uniform table"),
               [(f"all {ranges['queries']:,}: mean", _fmt(ranges["mean_relative_error"]),  # type: ignore[arg-type]
                 _fmt(base_["empty"]["mean_relative_error"]), _fmt(base_["uniform"]["mean_relative_error"])),
                (f"all {ranges['queries']:,}: median", _fmt(ranges["median_relative_error"]),  # type: ignore[arg-type]
                 _fmt(base_["empty"]["median_relative_error"]), _fmt(base_["uniform"]["median_relative_error"])),
                (f"true count ≥ {100 * LARGE_SHARE:g} % of N ({ranges['large_queries']:,}): mean",
                 _fmt(ranges["large_mean_relative_error"]),  # type: ignore[arg-type]
                 _fmt(base_["empty"]["large_mean_relative_error"]), _fmt(base_["uniform"]["large_mean_relative_error"])),
                (f"true count ≥ {100 * LARGE_SHARE:g} % of N: median", _fmt(ranges["large_median_relative_error"]),  # type: ignore[arg-type]
                 _fmt(base_["empty"]["large_median_relative_error"]),
                 _fmt(base_["uniform"]["large_median_relative_error"]))],
               numeric=(False, True, True, True))
    base: dict = ranges["baselines"]  # type: ignore[assignment]
    page.table(("attributes constrained", "queries", "mean relative error", "median relative error",
                "median: empty table", "median: uniform table"),
               [(s_["dimensions"], s_["queries"], _fmt(s_["mean_relative_error"]), _fmt(s_["median_relative_error"]),
                 _fmt(base["empty"]["subsets"][i]["median_relative_error"]),
                 _fmt(base["uniform"]["subsets"][i]["median_relative_error"])) for i, s_ in enumerate(subsets)],
               numeric=(True,) * 6)
    fig = new_figure(6.6, 3.4)
    ax = fig.add_subplot()
    xs = np.arange(len(subsets))
    ax.bar(xs - 0.3, [s_["median_relative_error"] for s_ in subsets], 0.3, color="#d62728", label="release")
    ax.bar(xs, [s_["median_relative_error"] for s_ in base["empty"]["subsets"]], 0.3, color="#adb5bd",
           label="empty table")
    ax.bar(xs + 0.3, [s_["median_relative_error"] for s_ in base["uniform"]["subsets"]], 0.3, color="#f59f00",
           label="uniform table")
    ax.set_xticks(xs, [str(s_["dimensions"]) for s_ in subsets])
    ax.set_xlabel("attributes constrained")
    ax.set_ylabel("median relative error")
    ax.set_title("Range-query error by number of constrained attributes")
    ax.legend()
    page.figure(fig, "bar chart of the median range-query relative error by number of constrained attributes, "
                     "release vs an empty and a uniform table")


def _cells_section(page: Page, raw: EncodedTable, release: GeneralizedTable, raw_cells: np.ndarray
                   ) -> dict[str, object]:
    """Every released cell x class count against the true count of the raw records in that cell."""
    N = raw.n_records
    true = np.zeros_like(release.counts)
    where = _cell_index(release, raw_cells)
    inside = where >= 0
    np.add.at(true, (where[inside], raw.y[inside]), 1)
    noisy = np.asarray(release.counts, dtype=np.int64)
    abs_err = np.abs(noisy - true)
    out: dict[str, object] = {"cells": int(noisy.size), "cell_mean_absolute_error": float(abs_err.mean()),
                              "cell_mean_relative_error": float((abs_err / np.maximum(true, max(0.001 * N, 1.0)))
                                                                .mean())}
    page.heading("Released counts against true counts", 3)
    page.paragraph(f"{noisy.size:,} released counts (leaf partition x class). Mean absolute error "
                   f"{_fmt(out['cell_mean_absolute_error'], 4)} records; mean relative error "  # type: ignore[arg-type]
                   f"{_fmt(out['cell_mean_relative_error'], 4)} (|released − true| / max(true, 0.1 % of N)).")  # type: ignore[arg-type]
    fig = new_figure(6.4, 4.8)
    ax = fig.add_subplot()
    ax.scatter(true.reshape(-1) + 1, np.maximum(noisy.reshape(-1), 0) + 1, s=6, alpha=0.4, color="#d62728")
    hi = float(max(true.max(), noisy.max(), 1)) + 1
    ax.plot([1, hi], [1, hi], color="#555", linewidth=1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("true count + 1")
    ax.set_ylabel("released count + 1")
    ax.set_title("Every released cell count against the true count")
    page.figure(fig, "log-log scatter of released cell counts against true counts")
    return out


def _confusion_plot(page: Page, confusion: np.ndarray, names: list[str], class_name: str) -> None:
    n_cls = len(names)
    fig = new_figure(5.2, 4.4)
    ax = fig.add_subplot()
    shares = confusion / np.maximum(confusion.sum(axis=1, keepdims=True), 1)
    ax.imshow(shares, cmap="Blues", vmin=0, vmax=1)
    for i in range(n_cls):
        for j in range(n_cls):
            ax.text(j, i, f"{confusion[i, j]:,}\n{100 * shares[i, j]:.1f} %", ha="center", va="center",
                    color="white" if shares[i, j] > 0.6 else "black", fontsize=9)
    ax.set_xticks(range(n_cls), names)
    ax.set_yticks(range(n_cls), names)
    ax.set_xlabel(f"predicted {class_name}")
    ax.set_ylabel(f"true {class_name}")
    ax.set_title("Confusion matrix of the release's tree on the held-out records")
    page.figure(fig, "confusion matrix of the tree trained on the release, on the held-out third of the raw records",
                "Rows: true class; cells: records and their share of the row.")


def _marginals_plot(page: Page, raw: EncodedTable, synth: EncodedTable, most: int = 6) -> None:
    """Each attribute's distribution (and the class's), raw vs released, as shares of each table."""
    schema = raw.schema
    attrs = list(enumerate(schema.attributes))[:most]
    cols = 3 if len(attrs) + 1 > 2 else len(attrs) + 1
    rows = -(-(len(attrs) + 1) // cols)
    fig = new_figure(9.0, 2.6 * rows)
    axes = fig.subplots(rows, cols, squeeze=False).reshape(-1)
    for ax, (j, a) in zip(axes, attrs):
        r, s_ = raw.columns[j], synth.columns[j]
        if a.kind == "categorical":
            k = a.taxonomy.n_leaves
            pr = np.bincount(r, minlength=k) / max(r.size, 1)
            ps = np.bincount(s_, minlength=k) / max(s_.size, 1)
            xs = np.arange(k)
            ax.bar(xs - 0.2, pr, 0.4, color="#1f77b4", label="raw")
            ax.bar(xs + 0.2, ps, 0.4, color="#d62728", label="released")
            ax.set_xticks(xs, list(a.taxonomy.leaf_labels) if k <= 8 else [""] * k, rotation=45, fontsize=7)
        else:
            edges = np.linspace(a.lo, a.hi, 21)
            ax.hist(r, bins=edges, weights=np.full(r.size, 1 / max(r.size, 1)), histtype="step", color="#1f77b4",
                    label="raw")
            ax.hist(s_, bins=edges, weights=np.full(s_.size, 1 / max(s_.size, 1)), histtype="step",
                    color="#d62728", label="released")
        ax.set_title(a.name, fontsize=9)
    ax = axes[len(attrs)]
    k = schema.n_classes
    ax.bar(np.arange(k) - 0.2, np.bincount(raw.y, minlength=k) / max(raw.n_records, 1), 0.4, color="#1f77b4",
           label="raw")
    ax.bar(np.arange(k) + 0.2, np.bincount(synth.y, minlength=k) / max(synth.n_records, 1), 0.4, color="#d62728",
           label="released")
    ax.set_xticks(np.arange(k), list(schema.class_attribute.values), fontsize=7)
    ax.set_title(f"class: {schema.class_attribute.name}", fontsize=9)
    ax.legend(fontsize=7)
    for extra in axes[len(attrs) + 1:]:
        extra.set_visible(False)
    shown = "" if len(schema.attributes) <= most else f" (the first {most} attributes)"
    page.figure(fig, "marginal distribution of each attribute, raw vs released",
                f"Share of each table's records per value (categorical) or per 1/20 of the public bounds (numeric){shown}.")


def _ranges(raw: EncodedTable, release_path: Path, n: int, seed: int) -> dict[str, object]:
    """Range-count queries (:mod:`dprelease.evaluation.ranges`): per number of constrained attributes, the
    mean (as ``evaluate ranges``) and the median relative error, for the release and (key ``baselines``) for an
    empty table and a uniform table over the public domain; and over the large queries (true count at least
    :data:`LARGE_SHARE` of N), where an empty table scores 1."""
    from ..evaluation.ranges import BoxData, answer, make_range_workload, read_released, table_data, uniform_table
    from ..relational.rps import table_domain

    raw_boxes = table_data(raw)
    domain = table_domain(raw.schema)
    workload = make_range_workload(domain, n, seed=seed)
    true = answer(raw_boxes, workload)
    empty = BoxData(np.zeros((0, domain.n_dims)), np.zeros((0, domain.n_dims)), np.zeros(0), domain.integer.copy(),
                    True)
    results: dict[str, dict[str, object]] = {}
    large = true >= LARGE_SHARE * raw_boxes.total  # where an empty answer costs 1: the queries that can fail
    for name, data in (("release", read_released(release_path, raw.schema)), ("empty", empty),
                       ("uniform", uniform_table(domain, raw_boxes.total))):
        err = np.abs(answer(data, workload) - true) / np.maximum(true, 0.001 * raw_boxes.total)  # = evaluate_ranges
        results[name] = {"queries": int(err.size), "mean_relative_error": float(err.mean()),
                         "median_relative_error": float(np.median(err)), "large_queries": int(large.sum()),
                         "large_mean_relative_error": float(err[large].mean()) if large.any() else float("nan"),
                         "large_median_relative_error": float(np.median(err[large])) if large.any() else float("nan"),
                         "subsets": [{"dimensions": int(d), "queries": int((workload.dimensions == d).sum()),
                                      "mean_relative_error": float(err[workload.dimensions == d].mean()),
                                      "median_relative_error": float(np.median(err[workload.dimensions == d]))}
                                     for d in np.unique(workload.dimensions).tolist()]}
    out = results["release"]
    out["baselines"] = {"empty": results["empty"], "uniform": results["uniform"]}
    return out
