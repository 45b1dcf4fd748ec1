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
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ParameterError
from ..privacy.uncertainty import LEVEL, Estimate, sum_multiplier

if TYPE_CHECKING:
    from ..data.table import TableSchema
    from .table import GeneralizedTable

__all__ = ["table_query", "box_fractions", "box_estimate", "generalized_count", "UNIFORM_NOTE", "CLIP_NOTE"]

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
