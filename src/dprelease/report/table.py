"""The report of a table release: a generalized contingency table (DiffGen; TDS, not DP) or a synthetic table
(RPS; Mondrian, not DP), read back by :mod:`dprelease.release.table` (a
:class:`~dprelease.release.table.GeneralizedTable` or a :class:`~dprelease.release.table.SyntheticTable`).

* classification accuracy (DiffGen section 5): a C4.5-like tree (:mod:`dprelease.relational.classify`) trained
  on the release (a generalized table: on its cut values with the counts as weights; a synthetic table: on its
  records) and scored on every raw record (CA); the same tree trained on 2/3 of the raw records and scored on
  the rest (BA); the majority class (LA); and the confusion matrix of the release's tree. The release was made
  from these raw records, so CA is not a held-out score;
* range-count queries over the schema's public domain (:mod:`dprelease.evaluation.ranges`, the numbers of
  ``evaluate ranges``): relative error by number of constrained attributes, mean and median;
* a generalized table: every released cell x class count against the true count of the raw records in that
  cell; a synthetic table: the marginal distribution of each attribute, raw vs released.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..data.table import EncodedTable
from ..release.table import GeneralizedTable, SyntheticTable
from .page import Page, new_figure

__all__ = ["table_section"]

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
    from ..evaluation.splits import split_table
    from ..relational.classify import baseline_accuracy, cut_features, lower_bound_accuracy, make_tree, raw_features

    schema = raw.schema
    n_cls = schema.n_classes
    N = raw.n_records
    generalized = isinstance(release, GeneralizedTable)
    out: dict[str, object] = {"records": N}
    valid = np.ones(N, dtype=bool)
    if isinstance(release, GeneralizedTable):
        raw_cells = release.generalize(raw)
        valid = (raw_cells >= 0).all(axis=1)
        sizes = [len(c) for c in release.cut]
        x = np.repeat(cut_features(schema, sizes, release.cells), n_cls, axis=0)
        y = np.tile(np.arange(n_cls), release.cells.shape[0])
        w = np.asarray(release.counts, dtype=np.float64).reshape(-1)
        keep = w > 0
        x, y, w = x[keep], y[keep], w[keep]
        x_raw = cut_features(schema, sizes, np.where(raw_cells >= 0, raw_cells, 0))
        out["released_records"] = int(np.maximum(release.counts, 0).sum())
    else:
        synth = release.table
        x, y, w = raw_features(synth), synth.y, None
        x_raw = raw_features(raw)
        out["released_records"] = synth.n_records
    if y.size and np.unique(y).size > 1:
        pred = make_tree(seed).fit(x, y, sample_weight=w).predict(x_raw)
    else:  # nothing to learn from: predict the release's only class (or the first)
        pred = np.full(N, int(y[0]) if y.size else 0)
    ca = float((pred[valid] == raw.y[valid]).mean()) if valid.any() else float("nan")
    train, test = split_table(raw, seed, 0)
    ba = baseline_accuracy(train, test, seed)
    la = lower_bound_accuracy(raw, raw)
    confusion = np.zeros((n_cls, n_cls), dtype=np.int64)
    np.add.at(confusion, (raw.y[valid], pred[valid]), 1)
    ranges, errors = _ranges(raw, release_path, queries, seed)
    out.update({"accuracy_release": ca, "accuracy_raw_baseline": ba, "accuracy_majority": la,
                "confusion": confusion.tolist(), "range_queries": ranges,
                "records_outside_cells": int((~valid).sum())})

    page.heading("Utility")
    page.metrics([("raw records (exact, N)", f"{N:,}"),
                  ("released records" + (" (sum of noisy counts)" if generalized else ""),
                   f"{out['released_records']:,}"),
                  ("classification accuracy, tree trained on the release (CA)", f"{100 * ca:.2f} %"),
                  ("tree trained on raw records (BA)", f"{100 * ba:.2f} %"),
                  ("majority class (LA)", f"{100 * la:.2f} %"),
                  ("range queries: median relative error", _fmt(float(np.median(errors)) if errors.size else None, 3))])
    if (~valid).any():
        page.warning(f"{int((~valid).sum()):,} raw records fall outside the release's cells (the release does not "
                     f"cover the schema's domain); they are left out of CA.")

    page.heading("Classification (DiffGen section 5)", 3)
    page.paragraph("CA: a C4.5-like tree (entropy, pruned) trained on the release — " +
                   ("on its cut values, with the counts as weights" if generalized else "on its records") +
                   " — and scored on every raw record" + (" generalized to the release's cut" if generalized else "") +
                   ". The release was made from these records, so this is not a held-out score. BA: the same tree "
                   f"trained on a random 2/3 of the raw records and scored on the other third (seed {seed}). LA: "
                   "always the majority class.", "note")
    _confusion_plot(page, confusion, list(schema.class_attribute.values), schema.class_attribute.name)

    page.heading("Range queries", 3)
    page.paragraph(f"{ranges['queries']:,} random range-count queries over the schema's public domain (seed {seed}; "
                   "dprelease.evaluation.ranges, as `dprelease evaluate ranges`): each constrains 1 to "
                   f"{len(ranges['subsets'])} attributes to a random range. Relative error |released − true| / "
                   "max(true, 0.1 % of N)" + ("; a generalized row counts with the share of its box inside the "
                                              "query. Noisy counts rounded up from below 0 make sparse ranges "
                                              "overcount, so the mean can be far above the median." if generalized
                                              else "."), "note")
    subsets = ranges["subsets"]
    page.table(("attributes constrained", "queries", "mean relative error", "median relative error"),
               [(s_["dimensions"], s_["queries"], _fmt(s_["mean_relative_error"]), _fmt(s_["median_relative_error"]))
                for s_ in subsets], numeric=(True, True, True, True))
    fig = new_figure(6.6, 3.4)
    ax = fig.add_subplot()
    xs = np.arange(len(subsets))
    ax.bar(xs - 0.2, [s_["mean_relative_error"] for s_ in subsets], 0.4, color="#d62728", label="mean")
    ax.bar(xs + 0.2, [s_["median_relative_error"] for s_ in subsets], 0.4, color="#f59f00", label="median")
    ax.set_xticks(xs, [str(s_["dimensions"]) for s_ in subsets])
    ax.set_xlabel("attributes constrained")
    ax.set_ylabel("relative error")
    ax.set_title("Range-query error by number of constrained attributes")
    ax.legend()
    page.figure(fig, "bar chart of range-query relative error by number of constrained attributes")

    if isinstance(release, GeneralizedTable):
        true = np.zeros_like(release.counts)
        where = _cell_index(release, raw_cells)
        inside = where >= 0
        np.add.at(true, (where[inside], raw.y[inside]), 1)
        noisy = np.asarray(release.counts, dtype=np.int64)
        abs_err = np.abs(noisy - true)
        out["cells"] = int(noisy.size)
        out["cell_mean_absolute_error"] = float(abs_err.mean())
        out["cell_mean_relative_error"] = float((abs_err / np.maximum(true, max(0.001 * N, 1.0))).mean())
        page.heading("Released counts against true counts", 3)
        page.paragraph(f"{noisy.size:,} released counts (leaf partition x class). Mean absolute error "
                       f"{_fmt(out['cell_mean_absolute_error'], 4)} records; mean relative error "
                       f"{_fmt(out['cell_mean_relative_error'], 4)} (|released − true| / max(true, 0.1 % of N)).")
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
    else:
        page.heading("Marginals", 3)
        _marginals_plot(page, raw, release.table)
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
    ax.set_title("Confusion matrix of the release's tree on the raw records")
    page.figure(fig, "confusion matrix of the tree trained on the release, on the raw records",
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


def _ranges(raw: EncodedTable, release_path: Path, n: int, seed: int) -> tuple[dict[str, object], np.ndarray]:
    """Range-count queries (:mod:`dprelease.evaluation.ranges`): per number of constrained attributes, the
    mean (as ``evaluate ranges``) and the median relative error; and every query's error."""
    from ..evaluation.ranges import answer, make_range_workload, read_released, table_data
    from ..relational.rps import table_domain

    raw_boxes = table_data(raw)
    workload = make_range_workload(table_domain(raw.schema), n, seed=seed)
    true = answer(raw_boxes, workload)
    got = answer(read_released(release_path, raw.schema), workload)
    err = np.abs(got - true) / np.maximum(true, 0.001 * raw_boxes.total)  # = evaluate_ranges
    subsets = [{"dimensions": int(d), "queries": int((workload.dimensions == d).sum()),
                "mean_relative_error": float(err[workload.dimensions == d].mean()),
                "median_relative_error": float(np.median(err[workload.dimensions == d]))}
               for d in np.unique(workload.dimensions).tolist()]
    return {"queries": int(err.size), "mean_relative_error": float(err.mean()), "subsets": subsets}, err
