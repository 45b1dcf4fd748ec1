"""Range-count utility of a released table (RPS: the paper's experiments E1 and E2).

A query constrains ``dimensions`` attributes, chosen uniformly without repetition, each to a range whose two
end points are drawn uniformly from the attribute's public domain (integer lattice: inclusive ``[a, b]`` of
whole numbers or leaf codes in the taxonomy's depth-first order; reals: ``[a, b)``). The workload is split in
equal subsets by the number of constrained attributes, 1 .. min(D, 8). The answer on a table is the number of
records inside the query box; the relative error is ``|Q(D~) - Q(D)| / max(Q(D), s)`` with DiffPart's sanity
bound ``s = 0.1%`` of the raw table's size (DiffPart section 5.1).

Released rows may be generalized (DiffGen's ``--records`` output or its contingency table with a ``count``
column): a row holding a taxonomy node or an interval ``[lo-hi)`` / ``[lo, hi)`` counts with the fraction of its box inside
the query, i.e. its records are spread uniformly over the box (the uniform rule RPS and Mondrian synthesize with).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from ..errors import InputError
from ..relational.rps import PointDomain, table_domain, table_points

__all__ = ["RangeWorkload", "BoxData", "make_range_workload", "points_data", "answer", "evaluate_ranges", "uniform_answers",
           "read_released", "released_boxes", "answer_histogram", "table_data", "MAX_DIMENSIONS"]

MAX_DIMENSIONS = 8
_INTERVAL = re.compile(r"^\[\s*(-?[0-9.eE+]+)\s*[-,]\s*(-?[0-9.eE+]+)\s*\)$")  # [lo-hi) or [lo, hi)


@dataclass(frozen=True, eq=False)
class RangeWorkload:
    """Queries as half-open boxes ``[lo, hi)`` over every dimension (unconstrained: the whole domain)."""

    dimensions: np.ndarray  # per query, how many attributes it constrains
    lo: np.ndarray  # Q x D
    hi: np.ndarray
    constrained: np.ndarray  # Q x D bool

    @property
    def n_queries(self) -> int:
        return int(self.dimensions.size)


@dataclass(frozen=True, eq=False)
class BoxData:
    """Weighted boxes ``[lo, hi)`` per dimension (a lattice point v is ``[v, v+1)``; a real point has lo == hi)."""

    lo: np.ndarray  # m x D
    hi: np.ndarray
    weight: np.ndarray
    integer: np.ndarray  # per dimension
    points: bool  # every box is a single lattice cell or a real point: answers are plain counts

    @property
    def total(self) -> float:
        return float(self.weight.sum())


def make_range_workload(domain: PointDomain, n_queries: int = 10_000, *, seed: int = 0,
                        dims: Sequence[int] | None = None, max_dimensions: int = MAX_DIMENSIONS) -> RangeWorkload:
    """Random range-count queries over the public domain (data-independent)."""
    rng = np.random.default_rng(seed)
    if dims is None:  # a dimension of one value (the implicit class of a schema without one) constrains nothing
        width = domain.hi - domain.lo
        pool = np.flatnonzero(np.where(domain.integer, width >= 2, width > 0))
    else:
        pool = np.asarray(list(dims), dtype=np.int64)
    top = int(min(pool.size, max_dimensions))
    per = max(1, int(n_queries) // top)
    n_dims = domain.n_dims
    lo = np.tile(domain.lo.astype(np.float64), (per * top, 1))
    hi = np.tile(domain.hi.astype(np.float64), (per * top, 1))
    mask = np.zeros((per * top, n_dims), dtype=bool)
    count = np.repeat(np.arange(1, top + 1), per)
    for q in range(per * top):
        chosen = rng.choice(pool, size=int(count[q]), replace=False)
        for j in chosen.tolist():
            a, b = float(domain.lo[j]), float(domain.hi[j])
            if domain.integer[j]:
                x, y = np.sort(rng.integers(int(a), int(b), 2))
                lo[q, j], hi[q, j] = float(x), float(y + 1)
            else:
                x, y = np.sort(rng.uniform(a, b, 2))
                lo[q, j], hi[q, j] = x, y
            mask[q, j] = True
    return RangeWorkload(count, lo, hi, mask)


def points_data(columns: Sequence[np.ndarray], domain: PointDomain) -> BoxData:
    """Records as points (one per row, weight 1)."""
    lo = np.stack([np.asarray(c, dtype=np.float64) for c in columns], axis=1) if columns else np.zeros((0, 0))
    hi = lo + domain.integer[None, :].astype(np.float64)
    return BoxData(lo, hi, np.ones(lo.shape[0]), domain.integer.copy(), True)


def _answer_points(data: BoxData, w: RangeWorkload, chunk: int) -> np.ndarray:
    cols = []
    for j in range(data.lo.shape[1]):
        c = data.lo[:, j]
        cols.append(c.astype(np.int32) if data.integer[j] and np.abs(c).max(initial=0) < 2**31 else c)
    weighted = not np.all(data.weight == 1.0)
    out = np.zeros(w.n_queries)
    n = data.lo.shape[0]
    for s in range(0, w.n_queries, chunk):
        e = min(s + chunk, w.n_queries)
        mask = np.ones((e - s, n), dtype=bool)
        cons = w.constrained[s:e]
        for j in np.flatnonzero(cons.any(axis=0)).tolist():
            rows = np.flatnonzero(cons[:, j])
            col = cols[j]
            a = w.lo[s:e][rows, j].astype(col.dtype)[:, None]
            b = w.hi[s:e][rows, j]
            if data.integer[j]:
                b = b.astype(col.dtype)[:, None]
                hit = (col >= a) & (col < b)
            else:
                hit = (col >= a) & (col < b[:, None])
            mask[rows] &= hit
        out[s:e] = mask @ data.weight if weighted else mask.sum(axis=1)
    return out


def _answer_boxes(data: BoxData, w: RangeWorkload, chunk: int) -> np.ndarray:
    out = np.zeros(w.n_queries)
    width = data.hi - data.lo
    for s in range(0, w.n_queries, chunk):
        e = min(s + chunk, w.n_queries)
        frac = np.ones((e - s, data.lo.shape[0]))
        cons = w.constrained[s:e]
        for j in np.flatnonzero(cons.any(axis=0)).tolist():
            rows = np.flatnonzero(cons[:, j])
            a = w.lo[s:e][rows, j][:, None]
            b = w.hi[s:e][rows, j][:, None]
            lo_j, hi_j, wd = data.lo[:, j], data.hi[:, j], width[:, j]
            overlap = np.clip(np.minimum(hi_j, b) - np.maximum(lo_j, a), 0.0, None)
            point = wd <= 0
            with np.errstate(divide="ignore", invalid="ignore"):
                f = np.where(point, ((lo_j >= a) & (lo_j < b)).astype(np.float64), overlap / np.where(point, 1, wd))
            frac[rows] *= f
        out[s:e] = frac @ data.weight
    return out


def answer(data: BoxData, workload: RangeWorkload, chunk: int = 64) -> np.ndarray:
    """The answer of every query on the data (counts, or expected counts for generalized rows)."""
    if data.lo.shape[0] == 0:
        return np.zeros(workload.n_queries)
    return _answer_points(data, workload, chunk) if data.points else _answer_boxes(data, workload, chunk)


def uniform_answers(domain: PointDomain, workload: RangeWorkload, n_records: float) -> np.ndarray:
    """Expected answers of a table of ``n_records`` records drawn uniformly over the public domain (a baseline that
    never looked at the data, beyond its size): the size times each query box's share of the domain."""
    width = (domain.hi - domain.lo).astype(np.float64)
    share = np.where(workload.constrained, (workload.hi - workload.lo) / np.where(width > 0, width, 1.0), 1.0)
    return float(n_records) * np.prod(share, axis=1)


def evaluate_ranges(raw: BoxData, released: BoxData, workload: RangeWorkload, *,
                    raw_answers: np.ndarray | None = None, domain: PointDomain | None = None) -> dict[str, object]:
    """Mean relative error (sanity bound 0.1% of |raw|) over the workload and per number of dimensions.

    With ``domain``, also the same errors of two data-independent baselines, ``empty`` (no record: every
    error is at most 1) and ``uniform`` (|raw| records uniform over the domain), and the errors split by the
    true answer's size (``below_sanity_bound``: answers under 0.1% of |raw|, where the relative error punishes
    any overestimate without bound and the empty table is nearly exact; ``at_or_above``). A relative error with
    a sanity bound is asymmetric, so the empty table is a hard baseline on workloads of mostly tiny answers.
    """
    true = answer(raw, workload) if raw_answers is None else raw_answers
    got = answer(released, workload)
    sanity = 0.001 * raw.total
    err = np.abs(got - true) / np.maximum(true, sanity)
    subsets = [{"dimensions": int(d), "mean_relative_error": float(err[workload.dimensions == d].mean())}
               for d in np.unique(workload.dimensions).tolist()]
    out: dict[str, object] = {"mean_relative_error": float(err.mean()), "subsets": subsets}
    if domain is None:
        return out
    errors = {"release": err, "empty": true / np.maximum(true, sanity),
              "uniform": np.abs(uniform_answers(domain, workload, raw.total) - true) / np.maximum(true, sanity)}
    out["baselines"] = {k: float(v.mean()) for k, v in errors.items() if k != "release"}
    for d, sub in zip(np.unique(workload.dimensions).tolist(), subsets):
        sub["baselines"] = {k: float(v[workload.dimensions == d].mean()) for k, v in errors.items() if k != "release"}
    small = true < sanity
    out["by_answer"] = {name: {"queries": int(m.sum()), **{k: float(v[m].mean()) if m.any() else None
                                                           for k, v in errors.items()}}
                        for name, m in (("below_sanity_bound", small), ("at_or_above", ~small))}
    return out


# -- reading a released table (points or generalized rows) --------------------------------------------------
def _label_ranges(tax) -> dict[str, tuple[float, float]]:
    out: dict[str, tuple[float, float]] = {}
    for node in range(len(tax.labels)):
        out.setdefault(str(tax.labels[node]), (float(tax.lo[node]), float(tax.hi[node])))
    for code, label in enumerate(tax.leaf_labels):  # a leaf label always means the leaf
        out[str(label)] = (float(code), float(code + 1))
    return out


def read_released(path: str | os.PathLike, schema) -> BoxData:
    """A released table (read by :func:`dprelease.release.table.table_frame`: checked against its manifest) as
    boxes under the schema (:func:`released_boxes`)."""
    from ..release.table import table_frame

    return released_boxes(table_frame(path), schema, where=str(Path(path)))


def released_boxes(frame, schema, where: str = "the table") -> BoxData:
    """The rows of a released table (every value a string) as boxes under the schema: plain values, taxonomy
    nodes, ``[lo-hi)`` intervals, and an optional ``count`` column (weights). Identical rows are merged; an error
    names ``where``, the row and the column."""
    import pandas as pd

    path = where
    domain = table_domain(schema)
    names = list(domain.names)
    missing = [c for c in schema.column_names if c not in frame.columns]
    if missing:
        raise InputError(f"{path}: missing column(s) {missing}")
    m = len(frame)
    lo = np.empty((m, len(names)))
    hi = np.empty((m, len(names)))
    klass = schema.class_attribute

    def fail(row: int, col: str, value: str, why: str) -> InputError:
        return InputError(f"{path}: row {row + 1} (line {row + 2}), column {col!r}: {value!r} {why}")

    if not schema.has_class:  # no class column: every row holds the one implicit value
        codes = np.zeros(m, dtype=np.int64)
    else:
        labels = frame[klass.name].str.strip()
        codes = pd.Index(list(klass.values)).get_indexer(labels.replace(klass.aliases) if klass.aliases else labels)
    if (codes < 0).any():
        j = int(np.flatnonzero(codes < 0)[0])
        raise fail(j, klass.name, frame[klass.name].iloc[j], "is not a declared class value")
    lo[:, 0], hi[:, 0] = codes, codes + 1
    for k, a in enumerate(schema.attributes, start=1):
        raw = frame[a.name].str.strip()
        if a.kind == "categorical":
            ranges = _label_ranges(a.taxonomy)
            uniq, inv = np.unique(raw.to_numpy(dtype=str), return_inverse=True)
            table = np.empty((uniq.size, 2))
            for i, u in enumerate(uniq.tolist()):
                if u not in ranges:
                    j = int(np.flatnonzero(inv == i)[0])
                    raise fail(j, a.name, u, "is neither a leaf nor a node of the declared taxonomy")
                table[i] = ranges[u]
            lo[:, k], hi[:, k] = table[inv, 0], table[inv, 1]
            continue
        values = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=np.float64)
        lo[:, k] = values
        hi[:, k] = values + (1.0 if a.integer else 0.0)
        bad = ~np.isfinite(values)
        for j in np.flatnonzero(bad).tolist():
            match = _INTERVAL.match(raw.iloc[j])
            if not match:
                raise fail(j, a.name, raw.iloc[j], "is neither a number nor an interval [lo-hi)")
            lo[j, k], hi[j, k] = float(match.group(1)), float(match.group(2))
        if ((lo[:, k] < a.lo) | (hi[:, k] > a.hi + (1.0 if a.integer else 0.0)) | (hi[:, k] < lo[:, k])).any():
            j = int(np.flatnonzero((lo[:, k] < a.lo) | (hi[:, k] > a.hi + (1 if a.integer else 0)))[0])
            raise fail(j, a.name, raw.iloc[j], f"lies outside the declared bounds [{a.lo:g}, {a.hi:g})")
    weight = np.ones(m)
    if "count" in frame.columns and "count" not in schema.column_names:
        weight = pd.to_numeric(frame["count"], errors="coerce").to_numpy(dtype=np.float64)
        if not np.isfinite(weight).all():
            j = int(np.flatnonzero(~np.isfinite(weight))[0])
            raise fail(j, "count", frame["count"].iloc[j], "is not a number")
        weight = np.maximum(weight, 0.0)
    both = np.hstack([lo, hi])
    uniq, inv = np.unique(both, axis=0, return_inverse=True) if m else (both, np.zeros(0, dtype=np.int64))
    w = np.bincount(inv.ravel(), weights=weight, minlength=uniq.shape[0]) if m else weight
    lo_u, hi_u = uniq[:, :len(names)], uniq[:, len(names):]
    width = hi_u - lo_u
    points = bool(np.all(np.where(domain.integer[None, :], width == 1, width == 0)))
    return BoxData(lo_u, hi_u, w, domain.integer.copy(), points)


def table_data(table) -> BoxData:
    """An encoded table (raw or synthetic) as points."""
    return points_data(table_points(table), table_domain(table.schema))


def answer_histogram(hist: np.ndarray, domain: PointDomain, workload: RangeWorkload) -> np.ndarray:
    """Answers from a (noisy) histogram over the whole lattice domain: sums of cells, by d-dimensional prefix
    sums and inclusion-exclusion over the 2^d corners of every query box."""
    pre = np.asarray(hist, dtype=np.float64)
    for axis in range(pre.ndim):
        pre = np.cumsum(pre, axis=axis)
    pre = np.pad(pre, [(1, 0)] * pre.ndim)
    lo = (workload.lo - domain.lo[None, :]).astype(np.int64)
    hi = (workload.hi - domain.lo[None, :]).astype(np.int64)
    out = np.zeros(workload.n_queries)
    n_dims = pre.ndim
    for corner in range(1 << n_dims):
        idx = tuple(np.where((corner >> j) & 1, lo[:, j], hi[:, j]) for j in range(n_dims))
        sign = -1.0 if bin(corner).count("1") % 2 else 1.0
        out += sign * pre[idx]
    return out
