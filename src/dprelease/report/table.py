"""The report of a generalized table (DiffGen; TDS, which is not DP): DiffGen section 5's utility and more.

The release is read back into a :class:`~dprelease.relational.diffgen.GeneralizedTable`: its cut is the set of
labels in each attribute's column (taxonomy node names, ``[lo, hi)`` intervals), its cells the labelled rows.

* classification accuracy (section 5): a C4.5-like tree (:mod:`dprelease.relational.classify`) trained on the
  release (counts as weights) and scored on the raw records under the release's cut (CA); the same tree
  trained on 2/3 of the raw records and scored on the rest (BA); the majority class (LA); and the confusion
  matrix of the release's tree. The release was made from these raw records, so CA is not a held-out score;
* count error: every released cell x class count against the true count of the raw records in that cell;
* range queries: random count queries that restrict 1, 2 or 3 attributes to a contiguous range of their cut
  values (in domain order) and optionally the class, answered from the release and from the raw data;
  relative error |released - true| / max(true, 0.1 % of N), as DiffPart's counting queries.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from ..data.table import EncodedTable, TableSchema
from ..errors import InputError
from .page import Page, new_figure

__all__ = ["read_generalized_table", "table_section"]

_INTERVAL = re.compile(r"^\[\s*([^,\s]+)\s*,\s*([^)\s]+)\s*\)$")


def _read_frame(path: Path):
    import pandas as pd

    try:
        if path.suffix.lower() == ".parquet":
            frame = pd.read_parquet(path)
            return frame.astype({c: str for c in frame.columns if c != "count"})
        return pd.read_csv(path, dtype=str, keep_default_na=False)
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: not a readable generalized table ({exc})") from None


def read_generalized_table(path: str | Path, schema: TableSchema):
    """A published generalized contingency table (written by diffgen or tds) as a GeneralizedTable."""
    from ..relational.diffgen import GeneralizedTable
    from ..relational.partition import CutValue

    path = Path(path)
    frame = _read_frame(path)
    names = [a.name for a in schema.attributes]
    cls = schema.class_attribute
    missing = [c for c in (*names, cls.name, "count") if c not in frame.columns]
    if missing:
        raise InputError(f"{path}: not a table released under this schema (no column {', '.join(missing)})")
    cut: list[tuple[CutValue, ...]] = []
    index_cols = []
    for j, a in enumerate(schema.attributes):
        labels = sorted(set(frame[a.name].tolist()))
        values: dict[str, CutValue] = {}
        for label in labels:
            if a.kind == "categorical":
                nodes = [u for u, lab in enumerate(a.taxonomy.labels) if lab == label]
                if len(nodes) != 1:
                    raise InputError(f"{path}: column {a.name}: {label!r} is "
                                     f"{'not a node' if not nodes else 'not a unique node'} of the schema's taxonomy")
                u = nodes[0]
                values[label] = CutValue(j, u, float(a.taxonomy.lo[u]), float(a.taxonomy.hi[u]))
            else:
                m = _INTERVAL.match(label)
                if not m:
                    raise InputError(f"{path}: column {a.name}: {label!r} is not an interval [lo, hi)")
                values[label] = CutValue(j, -1, float(m.group(1)), float(m.group(2)))
        ordered = sorted(values, key=lambda lab: (values[lab].lo, values[lab].hi))
        cut.append(tuple(values[lab] for lab in ordered))
        pos = {lab: i for i, lab in enumerate(ordered)}
        index_cols.append(np.asarray([pos[v] for v in frame[a.name].tolist()], dtype=np.int64))
    try:
        klass = np.asarray([cls.values.index(cls.aliases.get(v, v)) for v in frame[cls.name].tolist()], dtype=np.int64)
        count = np.asarray([int(float(v)) for v in frame["count"].tolist()], dtype=np.int64)
    except ValueError:
        raise InputError(f"{path}: a class value or count is not one the schema allows") from None
    keys = np.stack(index_cols, axis=1) if index_cols else np.zeros((len(frame), 0), dtype=np.int64)
    cells, inverse = np.unique(keys, axis=0, return_inverse=True)
    counts = np.zeros((cells.shape[0], schema.n_classes), dtype=np.int64)
    np.add.at(counts, (inverse.reshape(-1), klass), count)
    return GeneralizedTable(schema, tuple(cut), cells, counts)


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


def table_section(page: Page, raw: EncodedTable, release, *, queries: int, seed: int) -> dict[str, object]:
    """Append the utility section; returns the numbers."""
    from ..relational.classify import baseline_accuracy, cut_features, lower_bound_accuracy, make_tree

    schema = release.schema
    n_cls = schema.n_classes
    N = raw.n_records
    raw_cells = release.generalize(raw)
    where = _cell_index(release, raw_cells)
    outside = int((where < 0).sum())
    true = np.zeros_like(release.counts)
    inside = where >= 0
    np.add.at(true, (where[inside], raw.y[inside]), 1)
    noisy = np.asarray(release.counts, dtype=np.int64)

    # classification (section 5)
    sizes = [len(c) for c in release.cut]
    x = np.repeat(cut_features(schema, sizes, release.cells), n_cls, axis=0)
    yr = np.tile(np.arange(n_cls), release.cells.shape[0])
    w = noisy.reshape(-1).astype(np.float64)
    keep = w > 0
    valid_raw = (raw_cells >= 0).all(axis=1)
    xt = cut_features(schema, sizes, np.where(raw_cells >= 0, raw_cells, 0))
    if keep.any():
        tree = make_tree(seed).fit(x[keep], yr[keep], sample_weight=w[keep])
        pred = tree.predict(xt)
    else:
        pred = np.zeros(N, dtype=np.int64)
    ca = float((pred[valid_raw] == raw.y[valid_raw]).mean()) if valid_raw.any() else float("nan")
    from ..experiments.diffgen import split_table

    train, test = split_table(raw, seed, 0)
    ba = baseline_accuracy(train, test, seed)
    la = lower_bound_accuracy(raw, raw)
    confusion = np.zeros((n_cls, n_cls), dtype=np.int64)
    np.add.at(confusion, (raw.y[valid_raw], pred[valid_raw]), 1)

    # counts
    abs_err = np.abs(noisy - true)
    sanity = max(0.001 * N, 1.0)
    rel_cell = abs_err / np.maximum(true, sanity)
    by_dim, errors = _range_queries(release, true, noisy, queries, seed, sanity)

    out = {"records": N, "released_records": int(np.maximum(noisy, 0).sum()), "cells": int(noisy.size),
           "accuracy_release": ca, "accuracy_raw_baseline": ba, "accuracy_majority": la,
           "confusion": confusion.tolist(), "cell_mean_absolute_error": float(abs_err.mean()),
           "cell_mean_relative_error": float(rel_cell.mean()), "range_query_relative_error": by_dim,
           "records_outside_cells": outside}

    page.heading("Utility")
    page.metrics([("raw records (exact, N)", f"{N:,}"),
                  ("released records (sum of noisy counts)", f"{out['released_records']:,}"),
                  ("classification accuracy, tree trained on the release (CA)", f"{100 * ca:.2f} %"),
                  ("tree trained on raw records (BA)", f"{100 * ba:.2f} %"),
                  ("majority class (LA)", f"{100 * la:.2f} %"),
                  ("median range-query relative error", _fmt(float(np.median(errors)) if errors.size else None, 3))])
    if outside:
        page.warning(f"{outside:,} raw records fall outside the release's cells (the release does not cover the "
                     f"schema's domain); they are left out of CA and the counts.")

    page.heading("Classification (DiffGen section 5)", 3)
    page.paragraph("CA: a C4.5-like tree (entropy, pruned) trained on the released table with the counts as weights, "
                   "scored on every raw record generalized to the release's cut. The release was made from these "
                   "records, so this is not a held-out score. BA: the same tree trained on a random 2/3 of the raw "
                   f"records and scored on the other third (seed {seed}). LA: always the majority class.", "note")
    cls_names = list(schema.class_attribute.values)
    fig = new_figure(5.2, 4.4)
    ax = fig.add_subplot()
    shares = confusion / np.maximum(confusion.sum(axis=1, keepdims=True), 1)
    ax.imshow(shares, cmap="Blues", vmin=0, vmax=1)
    for i in range(n_cls):
        for j in range(n_cls):
            ax.text(j, i, f"{confusion[i, j]:,}\n{100 * shares[i, j]:.1f} %", ha="center", va="center",
                    color="white" if shares[i, j] > 0.6 else "black", fontsize=9)
    ax.set_xticks(range(n_cls), cls_names)
    ax.set_yticks(range(n_cls), cls_names)
    ax.set_xlabel(f"predicted {schema.class_attribute.name}")
    ax.set_ylabel(f"true {schema.class_attribute.name}")
    ax.set_title("Confusion matrix of the release's tree on the raw records")
    page.figure(fig, "confusion matrix of the tree trained on the release, on the raw records",
                "Rows: true class; cells: records and their share of the row.")

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

    page.heading("Range queries", 3)
    page.paragraph(f"{queries:,} random count queries (seed {seed}): each restricts 1, 2 or 3 attributes to a "
                   "contiguous range of their cut values in domain order, and half of them also the class. Relative "
                   "error |released − true| / max(true, 0.1 % of N). Counts rounded up from negative noise make "
                   "sparse ranges overcount, so the mean is heavier than the median.", "note")
    page.table(("attributes restricted", "queries", "mean relative error", "median relative error"),
               [(d, n, _fmt(e), _fmt(m)) for d, (n, e, m) in by_dim.items()], numeric=(True, True, True, True))
    fig = new_figure(6.0, 3.4)
    ax = fig.add_subplot()
    labels = [str(d) for d in by_dim]
    ax.bar(np.arange(len(labels)) - 0.2, [e for _, e, _ in by_dim.values()], 0.4, color="#d62728", label="mean")
    ax.bar(np.arange(len(labels)) + 0.2, [m for _, _, m in by_dim.values()], 0.4, color="#f59f00", label="median")
    ax.set_xticks(np.arange(len(labels)), labels)
    ax.legend()
    ax.set_xlabel("attributes restricted")
    ax.set_ylabel("mean relative error")
    ax.set_title("Range-query error by number of attributes")
    page.figure(fig, "bar chart of range-query relative error by number of restricted attributes")
    return out


def _range_queries(release, true: np.ndarray, noisy: np.ndarray, n: int, seed: int, sanity: float
                   ) -> tuple[dict[int, tuple[int, float, float]], np.ndarray]:
    """Random range count queries over the released cells (module docstring): per number of restricted
    attributes, (queries, mean relative error, median relative error); and every query's error."""
    rng = np.random.default_rng(seed)
    cells = release.cells
    d = cells.shape[1]
    n_cls = true.shape[1]
    sizes = np.asarray([len(c) for c in release.cut], dtype=np.int64)
    dims = [k for k in (1, 2, 3) if k <= d]
    per = max(1, n // max(len(dims), 1))
    released = np.maximum(noisy, 0).astype(np.float64)
    truth = true.astype(np.float64)
    result: dict[int, tuple[int, float, float]] = {}
    all_err = []
    for k in dims:
        lo = np.zeros((per, d), dtype=np.int64)  # unrestricted: the whole cut [0, size)
        hi = np.broadcast_to(sizes, (per, d)).copy()
        attrs = np.argsort(rng.random((per, d)), axis=1)[:, :k]  # k distinct attributes per query
        rows = np.repeat(np.arange(per), k)
        a = attrs.reshape(-1)
        lo_a = rng.integers(0, sizes[a])
        hi_a = lo_a + 1 + rng.integers(0, sizes[a] - lo_a)  # lo < hi <= size
        lo[rows, a], hi[rows, a] = lo_a, hi_a
        klass = np.where(rng.random(per) < 0.5, rng.integers(0, n_cls, per), -1)
        errs = np.empty(per)
        for start in range(0, per, 256):  # chunks of queries x cells x attributes booleans
            sl = slice(start, min(start + 256, per))
            inside = ((cells[None, :, :] >= lo[sl, None, :]) & (cells[None, :, :] < hi[sl, None, :])).all(axis=2)
            t_all, r_all = inside @ truth, inside @ released  # queries x classes
            kc = klass[sl]
            pick = np.clip(kc, 0, n_cls - 1)[:, None]
            t = np.where(kc >= 0, np.take_along_axis(t_all, pick, 1)[:, 0], t_all.sum(axis=1))
            r = np.where(kc >= 0, np.take_along_axis(r_all, pick, 1)[:, 0], r_all.sum(axis=1))
            errs[sl] = np.abs(r - t) / np.maximum(t, sanity)
        result[k] = (per, float(errs.mean()), float(np.median(errs)))
        all_err.append(errs)
    return result, (np.concatenate(all_err) if all_err else np.zeros(0))
