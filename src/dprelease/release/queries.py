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

if TYPE_CHECKING:
    from ..data.table import TableSchema
    from .setvalued import SetValuedRelease
    from .table import GeneralizedTable

__all__ = ["table_query", "box_fractions", "box_estimate", "generalized_count", "itemset_count", "cells_containing",
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
    dims += [("codes", np.ones(a.taxonomy.n_leaves, dtype=bool)) if a.kind == "categorical"
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
    """sum(frac v) with the sd of sum(frac X) (X: each value's own noise) and the interval z sd around it
    (:func:`dprelease.privacy.uncertainty.sum_half_width`: exact for one whole box)."""
    on = frac > 0
    f, v, s = frac[on], np.asarray(values, dtype=np.float64)[on], np.asarray(sd, dtype=np.float64)[on]
    value = float(np.sum(f * v))
    sdev = float(math.sqrt(float(np.sum((f * s) ** 2))))
    whole = bool(np.all(f == 1.0))
    z = sum_multiplier(level)
    half = z * sdev
    if whole and f.size:
        half = float(math.ceil(half - 1e-9))
    label = f"the noise of the {f.size} released {what} summed into the answer (z sd, z = {z:.2f})"
    bias = 0.0
    if clipped:
        # a count clipped at 0 is biased upward by at most E[max(0, X)] <= sd / (2 sqrt 2) (discrete or continuous
        # Laplace); only counts near 0 (v <= z sd) can be clipped noticeably: the low end moves down by that much
        near = v <= z * s
        bias = float(np.sum(f[near] * s[near])) / (2.0 * math.sqrt(2.0))
        label += f"; the low end also allows the upward bias of the {int(near.sum())} counts near 0 (clipped)"
    if not whole:
        label += "; " + UNIFORM_NOTE
    return Estimate(value, sdev, max(0.0, value - bias - half), value + half, level, label)


def generalized_count(table: GeneralizedTable, ranges: Mapping[str, object]) -> Estimate:
    """A range count on a generalized contingency table (DiffGen): its leaf x class cells as boxes."""
    schema = table.schema
    dims = table_query(schema, ranges)
    n_cls = schema.n_classes
    rows = table.cells.shape[0]
    lo = np.zeros((rows * n_cls, len(dims)))
    hi = np.zeros((rows * n_cls, len(dims)))
    lo[:, 0] = np.tile(np.arange(n_cls), rows)
    hi[:, 0] = lo[:, 0] + 1
    for j, cut in enumerate(table.cut):
        clo = np.asarray([cv.lo for cv in cut], dtype=np.float64)
        chi = np.asarray([cv.hi for cv in cut], dtype=np.float64)
        lo[:, j + 1] = np.repeat(clo[table.cells[:, j]], n_cls)
        hi[:, j + 1] = np.repeat(chi[table.cells[:, j]], n_cls)
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
    section = release.manifest.get("uncertainty")
    ignores = str(section.get("ignores", "")) if isinstance(section, dict) else ""
    return Estimate(value, sd, max(0.0, value - half), value + half, level,
                    f"noise only: the noise of the {values.size} released cells holding the itemset"
                    + (f"; ignores {ignores}" if ignores else ""))
