"""Derived answers with error bars: range counts on table releases, itemset counts on set-valued releases.

A range count on a table release adds up released counts of boxes (DiffGen's leaf x class cells, RPS's leaves),
each weighted by the share of its box the query covers (its records are taken as spread uniformly over the box,
the rule the synthesizers and the range evaluator use). The noise of that sum is a weighted sum of independent
discrete Laplace draws with public scales, so its sd and interval follow :mod:`dprelease.privacy.uncertainty`
(post-processing: no data is read, nothing is charged). What the interval does not hold is said in the
estimate's label: the share of a box's records inside the query is assumed, not known (uniform spreading),
and counts clipped at 0 (or shifted by Norm-Sub) are biased upward on empty boxes.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ParameterError
from ..privacy.uncertainty import LEVEL, Estimate, dlap_half_width, dlap_sd, sum_multiplier

from ..data.table import CategoricalAttribute, TableSchema

if TYPE_CHECKING:
    from .setvalued import SetValuedRelease
    from .table import GeneralizedTable

__all__ = ["table_query", "box_query", "generalized_boxes", "box_fractions", "box_estimate", "generalized_count", "itemset_count", "cells_containing",
           "UNIFORM_NOTE", "CLIP_NOTE"]

UNIFORM_NOTE = ("ignores the uniform spreading of a box's count over the part of it the query covers (the "
                "true share is not released)")
CLIP_NOTE = "counts clipped at 0 are biased upward on empty boxes"

# one query dimension: ("codes", mask over lattice codes) or ("interval", lo, hi, integer)
QueryDim = tuple[Any, ...]


def _codes(names: list[str], wanted: object, what: str, taxonomy: Any = None) -> np.ndarray:
    """A mask over the codes 0..len(names)-1 of ``wanted`` (a label, or a list of labels; with a taxonomy, any
    node's label stands for the leaves below it)."""
    labels = [wanted] if isinstance(wanted, str) else list(wanted)  # type: ignore[call-overload]
    mask = np.zeros(len(names), dtype=bool)
    for label in labels:
        label = str(label)
        if taxonomy is not None:
            nodes = [u for u, lab in enumerate(taxonomy.labels) if lab == label]
            if nodes:
                u = nodes[0]
                mask[int(taxonomy.lo[u]):int(taxonomy.hi[u])] = True
                continue
        elif label in names:
            mask[names.index(label)] = True
            continue
        raise ParameterError(f"{what}: {label!r} is not one of its values")
    return mask


def table_query(schema: TableSchema, ranges: Mapping[str, object]) -> list[QueryDim]:
    """Per dimension (the class first, then the attributes in schema order) the query's constraint: a numeric
    attribute takes ``(lo, hi)`` (half-open), a categorical one or the class a label or a list of labels."""
    cls = schema.class_attribute
    dims: list[QueryDim] = [("codes", np.ones(len(cls.values), dtype=bool))]
    dims += [("codes", np.ones(a.taxonomy.n_leaves, dtype=bool)) if isinstance(a, CategoricalAttribute)
             else ("interval", -math.inf, math.inf, bool(getattr(a, "integer", False))) for a in schema.attributes]
    names = [a.name for a in schema.attributes]
    for key, wanted in ranges.items():
        if key == cls.name:
            dims[0] = ("codes", _codes(list(cls.values), cls.aliases.get(str(wanted), wanted)
                                       if isinstance(wanted, str) else wanted, key))
            continue
        if key not in names:
            raise ParameterError(f"count: no attribute {key!r} in the schema (attributes: {', '.join(names)}, "
                                 f"class: {cls.name})")
        j = names.index(key)
        a = schema.attributes[j]
        if a.kind == "categorical":
            dims[j + 1] = ("codes", _codes(list(a.taxonomy.leaf_labels), wanted, key, a.taxonomy))  # type: ignore[union-attr]
        else:
            try:
                lo, hi = (float(x) for x in wanted)  # type: ignore[attr-defined]
            except (TypeError, ValueError):
                raise ParameterError(f"count: {key} takes a range (lo, hi), got {wanted!r}") from None
            dims[j + 1] = ("interval", lo, hi, bool(getattr(a, "integer", False)))
    return dims


def box_fractions(dims: list[QueryDim], lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Per box ``[lo, hi)`` (m x D): the share of it inside the query (product over dimensions)."""
    frac = np.ones(lo.shape[0], dtype=np.float64)
    for j, dim in enumerate(dims):
        a, b = lo[:, j].astype(np.float64), hi[:, j].astype(np.float64)
        if dim[0] == "codes":
            cum = np.concatenate([[0], np.cumsum(dim[1])]).astype(np.float64)
            ai, bi = a.astype(np.int64), b.astype(np.int64)
            frac *= (cum[bi] - cum[ai]) / np.maximum(bi - ai, 1)
            continue
        _, qlo, qhi, integer = dim
        if integer:
            inside = np.maximum(np.ceil(np.minimum(b, qhi)) - np.ceil(np.maximum(a, qlo)), 0.0)
            frac *= inside / np.maximum(np.ceil(b) - np.ceil(a), 1.0)
        else:
            width = b - a
            overlap = np.maximum(np.minimum(b, qhi) - np.maximum(a, qlo), 0.0)
            point = (a >= qlo) & (a < qhi)
            frac *= np.where(width > 0, overlap / np.where(width > 0, width, 1.0), point.astype(np.float64))
    return frac


def box_estimate(values: np.ndarray, sd: np.ndarray, frac: np.ndarray, *, clipped: bool, level: float = LEVEL,
                 what: str = "counts") -> Estimate:
    """The answer sum(frac v) (uniform spreading inside a box), with an interval that holds the true count up to
    noise whatever the spreading: a box the query cuts may have none or all of its records inside, so
    low = (boxes wholly inside) - z sd, high = (every box it touches) + z sd, z from
    :func:`dprelease.privacy.uncertainty.sum_multiplier`. The noise-only interval around the value (uniform
    spreading taken as true) is ``noise_low``/``noise_high``."""
    on = frac > 0
    f, v, s = frac[on], np.asarray(values, dtype=np.float64)[on], np.asarray(sd, dtype=np.float64)[on]
    z = sum_multiplier(level)
    value = float(np.sum(f * v))
    sdev = float(math.sqrt(float(np.sum((f * s) ** 2))))
    whole = f == 1.0
    bias = np.zeros(f.size)
    if clipped:
        # a count clipped at 0 is biased upward by at most E[max(0, X)] <= sd / (2 sqrt 2) (discrete or continuous
        # Laplace); only counts near 0 (v <= z sd) can be clipped noticeably: the low end moves down by that much
        near = v <= z * s
        bias[near] = s[near] / (2.0 * math.sqrt(2.0))

    def half(sds: np.ndarray) -> float:
        return float(math.ceil(z * math.sqrt(float(np.sum(sds**2))) - 1e-9))

    low = float(np.sum(v[whole])) - float(np.sum(bias[whole])) - half(s[whole])
    high = float(np.sum(v)) + half(s)
    noise_half = z * sdev
    noise_low = value - float(np.sum(f * bias)) - noise_half
    label = (f"the noise of the {f.size} released {what} the query touches (z sd, z = {z:.2f})"
             + (f", and the upward bias of the {int(np.count_nonzero(bias))} counts near 0 (clipped)" if clipped
                else ""))
    cut = int(np.count_nonzero(~whole))
    if cut:
        label += (f"; {cut} of them are cut by the query and may hold none or all of their records inside it "
                  f"(the share is not released): the interval spans both; the value spreads them uniformly, and "
                  f"noise_low/noise_high hold the noise-only interval around it, which {UNIFORM_NOTE}")
    return Estimate(value, sdev, max(0.0, low), high, level, label, max(0.0, noise_low), value + noise_half)


def box_query(schema: TableSchema, lo: np.ndarray, hi: np.ndarray) -> list[QueryDim]:
    """A query given as a half-open box over the table's dimensions (the class, then the attributes; lattice
    codes for categories, as :func:`dprelease.relational.rps.table_domain` orders them)."""
    sizes = [schema.n_classes] + [a.taxonomy.n_leaves if isinstance(a, CategoricalAttribute) else 0
                                  for a in schema.attributes]
    dims: list[QueryDim] = []
    for j, size in enumerate(sizes):
        if size:
            codes = np.arange(size)
            dims.append(("codes", (codes >= lo[j]) & (codes < hi[j])))
        else:
            a = schema.attributes[j - 1]
            dims.append(("interval", float(lo[j]), float(hi[j]), bool(getattr(a, "integer", False))))
    return dims


def generalized_boxes(table: GeneralizedTable) -> tuple[np.ndarray, np.ndarray]:
    """The leaf x class cells of a generalized table as boxes [lo, hi) (rows as ``counts.reshape(-1)``)."""
    n_cls = table.schema.n_classes
    rows = table.cells.shape[0]
    lo = np.zeros((rows * n_cls, len(table.cut) + 1))
    hi = np.zeros((rows * n_cls, len(table.cut) + 1))
    lo[:, 0] = np.tile(np.arange(n_cls), rows)
    hi[:, 0] = lo[:, 0] + 1
    for j, cut in enumerate(table.cut):
        clo = np.asarray([cv.lo for cv in cut], dtype=np.float64)
        chi = np.asarray([cv.hi for cv in cut], dtype=np.float64)
        lo[:, j + 1] = np.repeat(clo[table.cells[:, j]], n_cls)
        hi[:, j + 1] = np.repeat(chi[table.cells[:, j]], n_cls)
    return lo, hi


def generalized_count(table: GeneralizedTable, ranges: Mapping[str, object] | list[QueryDim]) -> Estimate:
    """A range count on a generalized contingency table (DiffGen): its leaf x class cells as boxes."""
    dims = table_query(table.schema, ranges) if isinstance(ranges, Mapping) else ranges
    lo, hi = generalized_boxes(table)
    frac = box_fractions(dims, lo, hi)
    values = np.asarray(table.counts, dtype=np.float64).reshape(-1)
    if table.errors is None:
        return Estimate(float(np.sum(frac * values)), math.nan, math.nan, math.nan,
                        label="no noise scale known (a release without error bars, or not DP)")
    return box_estimate(values, table.errors.sd, frac, clipped=True, what="leaf x class counts")


def _cell_index(release: SetValuedRelease) -> tuple[np.ndarray, np.ndarray]:
    """(starts, cells): the released cells holding item i are ``cells[starts[i]:starts[i + 1]]`` (cached)."""
    cached = release.__dict__.get("_cell_index")
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    lengths = np.fromiter((len(s) for s in release.itemsets), dtype=np.int64, count=len(release.itemsets))
    items = np.concatenate([np.asarray(s, dtype=np.int64) for s in release.itemsets]) if lengths.size else \
        np.zeros(0, dtype=np.int64)
    owner = np.repeat(np.arange(lengths.size, dtype=np.int64), lengths)
    order = np.argsort(items, kind="stable")
    starts = np.zeros(release.universe.size + 1, dtype=np.int64)
    np.cumsum(np.bincount(items, minlength=release.universe.size), out=starts[1:])
    index = (starts, owner[order])
    object.__setattr__(release, "_cell_index", index)
    return index


def cells_containing(release: SetValuedRelease, items: list[int]) -> np.ndarray:
    """The indices of the released cells whose itemset contains every one of ``items``."""
    if not items:
        return np.arange(len(release.itemsets), dtype=np.int64)
    starts, cells = _cell_index(release)
    out: np.ndarray | None = None
    for i in sorted(items, key=lambda i: int(starts[i + 1] - starts[i])):
        here = cells[starts[i]:starts[i + 1]]
        out = here if out is None else np.intersect1d(out, here, assume_unique=True)
        if out.size == 0:
            break
    assert out is not None
    return out


def itemset_count(release: SetValuedRelease, itemset: Iterable[int], level: float = LEVEL) -> Estimate:
    """The number of released records that contain ``itemset``, with its interval.

    Basic publishes every one of the 2^|I| - 1 cells (clipped at 0), so the answer sums the noisy counts of all
    2^(|I| - |X|) cells holding X: its sd counts all of them, and the low end allows the upward bias of the
    clipped cells near 0. A DiffPart-family release publishes the cells that passed its thresholds: the interval
    holds the noise of the released cells summed (noise only); records in pruned partitions, records stopped
    early, or cut down to their frequent items (DiffPart-Prefix) are not in it, and its coverage is measured in
    docs/accuracy.md rather than promised.
    """
    items = sorted({int(i) for i in itemset})
    n = release.universe.size
    if any(i < 0 or i >= n for i in items):
        raise ParameterError(f"count: item ids must lie in 0..{n - 1}")
    cells = cells_containing(release, items)
    values = np.asarray(release.counts, dtype=np.float64)[cells]
    value = float(values.sum())
    section = release.manifest.get("uncertainty")
    ignores = str(section.get("ignores", "")) if isinstance(section, dict) else ""
    if release.pair_sd is not None and release.pair_half is not None:
        sd = float(math.sqrt(float(np.sum(np.asarray(release.pair_sd)[cells] ** 2))))
        half = float(np.asarray(release.pair_half)[cells][0]) if values.size == 1 else float(
            math.ceil(sum_multiplier(level) * sd - 1e-9))
        return _noise_only(value, sd, half, values.size, ignores, level)
    scale = release.cell_scale
    if scale is None:
        return Estimate(value, math.nan, math.nan, math.nan, level,
                        "no noise scale known (the release's manifest states none)")
    cell_sd = dlap_sd(scale)
    z = sum_multiplier(level)
    if str(release.manifest.get("algorithm", "")).lower() == "basic":
        n_cells = 2.0 ** (n - len(items)) - (1.0 if not items else 0.0)
        near = float(np.sum(values <= z * cell_sd)) + (n_cells - values.size)  # unreleased cells are at 0
        sd = math.sqrt(n_cells) * cell_sd
        half = float(math.ceil(z * sd - 1e-9)) if n_cells > 1 else float(dlap_half_width(scale, level))
        bias = near * cell_sd / (2.0 * math.sqrt(2.0))
        return Estimate(value, sd, max(0.0, value - bias - half), value + half, level,
                        f"the noise of all {n_cells:.0f} cells holding the itemset, and the upward bias of the "
                        f"{near:.0f} cells clipped at 0 or near it (exact noise scale 1/eps)")
    sd = math.sqrt(values.size) * cell_sd
    half = float(math.ceil(z * sd - 1e-9)) if values.size > 1 else float(dlap_half_width(scale, level))
    return _noise_only(value, sd, half, values.size, ignores, level)


def _noise_only(value: float, sd: float, half: float, n_cells: int, ignores: str, level: float) -> Estimate:
    """A DiffPart-family itemset count's noise-only estimate and its label."""
    # The manifest's text already points to the measured coverage; the label says it once, at its end.
    ignores = ignores.removesuffix("; coverage measured in docs/accuracy.md")
    return Estimate(value, sd, max(0.0, value - half), value + half, level,
                    f"noise only: the noise of the {n_cells} released cells holding the itemset"
                    + (f"; ignores {ignores}" if ignores else "")
                    + "; not a confidence interval for the true count: the structure's bias usually dominates "
                      "(measured coverage in docs/accuracy.md)", max(0.0, value - half), value + half)
