"""The report's error-bar section: released values with their 95 % intervals, beside the true values.

Custodian-side, like the rest of the report: it reads the raw data to say which intervals hold the true value
(:mod:`dprelease.evaluation.coverage`). The intervals themselves come from the release (public scales only).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ..privacy.uncertainty import Estimate, Intervals
from .page import Page

if TYPE_CHECKING:
    from ..data.table import EncodedTable
    from ..data.transactions import TransactionDB
    from ..release.itemsets import ItemsetRelease
    from ..release.setvalued import SetValuedRelease

__all__ = ["error_bars_section", "estimates_section", "setvalued_bars", "itemset_bars", "table_bars", "degree_bars"]

ROWS = 20  # released values listed in the table (the coverage figure counts all of them)


def _num(x: float) -> str:
    return "n/a" if not np.isfinite(x) else (f"{x:,.0f}" if float(x).is_integer() else f"{x:,.1f}")


def _section(page: Page, title: str, meaning: str, names: Sequence[str], value: np.ndarray, low: np.ndarray,
             high: np.ndarray, truth: np.ndarray) -> dict[str, object]:
    inside = (low <= truth) & (truth <= high)
    page.heading(title, 3)
    coverage = float(inside.mean()) if inside.size else float("nan")
    page.metrics([("values with an interval", f"{inside.size:,}"),
                  ("true value inside its 95 % interval", f"{100 * coverage:.1f} %" if inside.size else "n/a"),
                  ("mean interval width", _num(float(np.mean(high - low))) if inside.size else "n/a")])
    page.paragraph(meaning, "note")
    rows = [(names[i] if i < len(names) else "", _num(value[i]), f"± {_num((high[i] - low[i]) / 2)}", f"{_num(low[i])} – {_num(high[i])}",
             _num(truth[i]), "yes" if inside[i] else "no") for i in range(min(ROWS, inside.size))]
    page.table(["value of", "released", "±", "95 % interval", "true", "inside"], rows,
               numeric=[False, True, True, True, True, False],
               caption=f"The first {len(rows)} of {inside.size:,} released values.")
    return {"coverage": coverage, "values": int(inside.size)}


def error_bars_section(page: Page, names: Sequence[str], intervals: Intervals | None, truth: np.ndarray,
                       meaning: str) -> dict[str, object] | None:
    """Direct noisy values: each with its interval and the true value; None (nothing shown) without intervals."""
    if intervals is None:
        return None
    return _section(page, "Error bars (95 %)", meaning, names, np.asarray(intervals.value, dtype=np.float64),
                    np.asarray(intervals.low), np.asarray(intervals.high), np.asarray(truth, dtype=np.float64))


def estimates_section(page: Page, names: Sequence[str], estimates: list[Estimate], truth: np.ndarray
                      ) -> dict[str, object] | None:
    """Derived answers (item counts, range counts) with their intervals and the true values."""
    if not estimates or not np.isfinite(estimates[0].sd):
        return None
    meaning = estimates[0].label
    return _section(page, "Error bars of derived counts (95 %)", f"What the intervals hold: {meaning}.", names,
                    np.asarray([e.value for e in estimates]), np.asarray([e.low for e in estimates]),
                    np.asarray([e.high for e in estimates]), np.asarray(truth, dtype=np.float64))


def _with(result: dict[str, object], bars: dict[str, object] | None) -> dict[str, object]:
    return {**result, "error_bars": bars} if bars else result


def setvalued_bars(page: Page, raw: TransactionDB, release: SetValuedRelease, result: dict[str, object]
                   ) -> dict[str, object]:
    """Every item's released count (``release.count((item,))``) with its interval, against its true support."""
    from ..itemsets.exact import itemset_supports

    items = [(i,) for i in range(min(release.universe.size, 200))]
    truth = itemset_supports(raw, items) if items else np.zeros(0)
    bars = estimates_section(page, [release.universe.labels[i[0]] for i in items],
                             [release.count(i) for i in items], truth)
    return _with(result, bars)


def itemset_bars(page: Page, raw: TransactionDB, release: ItemsetRelease, result: dict[str, object]
                 ) -> dict[str, object]:
    """A top-k release's counts with their intervals, against the true supports."""
    from ..itemsets.exact import itemset_supports

    labels = release.universe.labels
    truth = itemset_supports(raw, release.itemsets) if release.itemsets else np.zeros(0)
    section = release.manifest.get("uncertainty")
    meaning = section.get("accounts_for", "") if isinstance(section, dict) else ""
    bars = error_bars_section(page, [" ".join(labels[i] for i in s) for s in release.itemsets], release.intervals(),
                              truth, f"What the intervals hold: {meaning}.")
    return _with(result, bars)


def table_bars(page: Page, raw: EncodedTable, release: Any, result: dict[str, object]) -> dict[str, object]:
    """A generalized table's leaf x class counts (or a synthetic table's leaf counts) with their intervals,
    against the true counts."""
    if getattr(release, "leaves", None) is not None:
        from ..evaluation.coverage import leaf_truth

        leaves = release.leaves
        names = [f"leaf {i + 1}" for i in range(min(ROWS, leaves.lo.shape[0]))]
        return _with(result, error_bars_section(page, names, leaves.errors, leaf_truth(raw, release),
                                                f"What the intervals hold: {leaves.errors.label}."))
    errors = getattr(release, "errors", None)
    if errors is None:
        return result
    cells = release.generalize(raw)
    lookup = {tuple(r): i for i, r in enumerate(np.asarray(release.cells).tolist())}
    idx = np.asarray([lookup.get(tuple(r), -1) for r in cells.tolist()], dtype=np.int64)
    n_cls = raw.schema.n_classes
    ok = idx >= 0
    truth = np.bincount(idx[ok] * n_cls + np.asarray(raw.y)[ok], minlength=release.counts.size)
    labels = release.cut_labels()
    classes = raw.schema.class_attribute.values
    names = []
    for i in range(min(ROWS, release.counts.size)):
        row, c = divmod(i, n_cls)
        names.append(", ".join(labels[a.name][int(release.cells[row, j])] for j, a in enumerate(raw.schema.attributes))
                     + f"; {classes[c]}")
    bars = error_bars_section(page, names, errors, truth, f"What the intervals hold: {errors.label}.")
    return _with(result, bars)


def degree_bars(page: Page, true_degrees: np.ndarray, release: Any, theta: int | None, result: dict[str, object]
                ) -> dict[str, object]:
    """A degree release's intervals (the counts per degree range behind the sequence, or Hay's degree per rank)
    against the raw graph's: exact where theta is at or above the largest degree (the projection then keeps every
    edge); below that the raw degrees are not what the noise was added to, and the note says so."""
    from ..evaluation.coverage import degree_truth

    errors = release.intervals()
    if errors is None:
        return result
    deg = np.asarray(true_degrees, dtype=np.int64)
    truth = degree_truth(deg, release)
    if release.bins is None:
        names = [f"line {i + 1}" for i in range(min(ROWS, len(errors)))]
    else:
        names = [f"degrees {lo}-{hi}" for lo, hi in np.asarray(release.bins)[:ROWS].tolist()]
    note = f"What the intervals hold: {errors.label}."
    if theta is not None and deg.size and int(deg.max()) > theta:
        note += (f" The true values are the raw graph's, whose largest degree ({int(deg.max())}) is above theta "
                 f"({theta}): the projection lowered some degrees before the noise, so they are not exactly what "
                 f"the noise was added to.")
    return _with(result, error_bars_section(page, names, errors, truth, note))
