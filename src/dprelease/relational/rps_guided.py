"""Guided RPS: the default synthetic-table method of ``dprelease rps`` (``--method recommended``).

The paper's RPS (:mod:`dprelease.relational.rps`, ``--method faithful``) splits a fixed number of levels h
round-robin and draws every value uniformly inside its final box. On a table of many attributes (Adult: 14
predictors, h = 10) most attributes are never split, so a released attribute is uniform over its whole public
range, however skewed the data are (capital gain is 0 for 92% of Adult; its range is 0..99,999): on range
counts it hardly beats a uniform table. Guided RPS pays for what the uniform rule lacks:

1. **Noisy 1-D marginals** (``MARGINAL_SHARE`` of epsilon, split evenly over the dimensions): an adaptive
   histogram per dimension (:mod:`dprelease.relational.marginals`).
2. **The partition**: binary splits of the public box domain, the dimension round-robin by depth (public),
   the pivot where the dimension's noisy marginal halves its mass inside the region (post-processing: a
   "median" that costs nothing), and **PrivTree's adaptive stopping** (Zhang, Xiao and Xie, SIGMOD 2016;
   ``PARTITION_SHARE`` of epsilon once, however deep the tree grows): dense regions go deep, empty ones
   stop at once, so the depth is chosen by the data through a paid mechanism instead of a fixed h.
3. **Leaf counts**: discrete Laplace at the rest of epsilon (the leaves are disjoint: one charge).
4. **Synthesis** (post-processing): ``max(0, count)`` records per leaf, every value drawn from its dimension's
   noisy marginal restricted to the leaf's range (uniform where that holds no mass).

Every record's chain is marginals + PrivTree + its leaf count = epsilon (sequential composition on one scope;
``remaining_budget`` rounds the last share down). A schema without a class has no class dimension; with one,
the class is dimension 0 and is split first (then the predictors, round-robin).
"""

from __future__ import annotations

import numpy as np

from ..data.table import EncodedTable
from ..engine.base import RegionRecords, TableData
from ..engine.local import LocalTable
from ..errors import ParameterError
from ..privacy import BudgetAccountant, NoiseSource, check_epsilon, noisy_counts
from ..privacy.accountant import BudgetScope
from ..privacy.privtree import PrivTreeSplitter
from .marginals import Marginal, noisy_marginals, paid_dimensions
from ..release import NEIGHBOURS_ROW, build_manifest, records_run_start
from .rps import (
    Partition, PointDomain, RPSRelease, check_release_size, leaf_error_bars, leaf_uncertainty, remaining_budget,
    table_domain,
)

__all__ = ["rps_guided", "guided_partition", "synthesize_guided", "MARGINAL_SHARE", "PARTITION_SHARE", "MAX_DEPTH"]

MARGINAL_SHARE = 0.5
PARTITION_SHARE = 0.1
MAX_DEPTH = 40  # a public cap on the partition's depth (PrivTree stops far above it on tables of this size)


def _round_robin(depth: int, lo: np.ndarray, hi: np.ndarray, integer: np.ndarray) -> np.ndarray:
    """The split dimension of every region: from ``depth mod D`` on, the first that can still be split
    (public); -1 where none can (a single cell)."""
    n_dims = lo.shape[1]
    splittable = np.where(integer[None, :], (hi - lo) >= 2, hi > lo)
    order = np.roll(np.arange(n_dims), -(depth % n_dims))
    ok = splittable[:, order]
    return np.where(ok.any(axis=1), order[np.argmax(ok, axis=1)], -1).astype(np.int64)


def _pivots(marginals: list[Marginal], dims: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Each region's pivot: where its dimension's noisy marginal halves the mass of its range (post-processing)."""
    piv = np.empty(dims.size)
    for j in np.unique(dims).tolist():
        m = dims == j
        piv[m] = marginals[j].split_points(a[m], b[m])
    return piv


def _grow(engine: RegionRecords, domain: PointDomain, marginals: list[Marginal],
          splitter: PrivTreeSplitter) -> list[tuple[np.ndarray, np.ndarray, np.ndarray, int, np.ndarray]]:
    """Split the domain until PrivTree stops every region; returns per depth the leaves that stopped there
    (lo, hi, exact sizes, depth, index among the regions of the depth)."""
    lo = domain.lo[None, :].astype(np.float64).copy()
    hi = domain.hi[None, :].astype(np.float64).copy()
    out: list[tuple[np.ndarray, np.ndarray, np.ndarray, int, np.ndarray]] = []
    for depth in range(MAX_DEPTH + 1):
        n_regions = lo.shape[0]
        sizes = engine.sizes(n_regions)  # exact; only ever passed to PrivTree or the leaf counts
        dims = _round_robin(depth, lo, hi, domain.integer) if depth < MAX_DEPTH else np.full(n_regions, -1)
        go = dims >= 0
        work = np.flatnonzero(go)
        if work.size:
            go[work] = splitter.test(sizes[work], depth + 1)
        stop = ~go
        if stop.any():
            out.append((lo[stop], hi[stop], sizes[stop], depth, np.flatnonzero(stop)))
        if not go.any():
            break
        go_idx = np.flatnonzero(go)
        d = dims[go_idx]
        piv = _pivots(marginals, d, lo[go_idx, d], hi[go_idx, d])
        pivots = np.zeros(n_regions)
        pivots[go_idx] = piv
        child_base = np.full(n_regions, -1, dtype=np.int64)
        child_base[go_idx] = 2 * np.arange(go_idx.size, dtype=np.int64)
        engine.route(np.where(go, dims, -1), pivots, child_base)
        new_lo = np.repeat(lo[go_idx], 2, axis=0)
        new_hi = np.repeat(hi[go_idx], 2, axis=0)
        rows = np.arange(go_idx.size)
        new_hi[2 * rows, d] = piv
        new_lo[2 * rows + 1, d] = piv
        lo, hi = new_lo, new_hi
    return out


def guided_partition(engine: RegionRecords, domain: PointDomain, epsilon: float, *,
                     noise: NoiseSource) -> tuple[Partition, list[Marginal]]:
    """Noisy marginals, a PrivTree-stopped partition with marginal pivots, and noisy leaf counts (ε-DP)."""
    eps = check_epsilon(epsilon)
    if domain.n_dims == 0:
        raise ParameterError("guided RPS needs at least one attribute")
    accountant = BudgetAccountant(eps)
    scope: BudgetScope = accountant.root()
    marginals = noisy_marginals(engine, domain.names, domain.lo, domain.hi, domain.integer, MARGINAL_SHARE * eps,
                                scope=scope, noise=noise)
    splitter = PrivTreeSplitter(PARTITION_SHARE * eps, beta=2.0, theta=0, scope=scope, noise=noise,
                                label="partition: PrivTree split decisions")
    out = _grow(engine, domain, marginals, splitter)
    lo, hi, sizes = (np.concatenate([x[k] for x in out]) for k in range(3))
    depth = np.concatenate([np.full(x[2].size, x[3], dtype=np.int64) for x in out])
    index = np.concatenate([x[4] for x in out]).astype(np.int64)
    e = remaining_budget(eps, scope)
    counts = noisy_counts(sizes, e, scope=scope, noise=noise, sensitivity=1,
                          label="leaf counts (disjoint leaves)").astype(np.int64)
    order = np.lexsort(lo.T[::-1])
    part = Partition(domain, lo[order], hi[order], counts[order], depth[order], np.full(counts.size, e),
                     index[order], accountant,
                     trace=[{"depth": int(k), "leaves": int((depth == k).sum())} for k in np.unique(depth).tolist()])
    return part, marginals


def synthesize_guided(part: Partition, counts: np.ndarray, marginals: list[Marginal], rng: np.random.Generator,
                      order_dim: int = 0) -> list[np.ndarray]:
    """``max(0, count)`` records per leaf, each value drawn from its dimension's noisy marginal restricted to the
    leaf's range (post-processing). Rows grouped by leaf in the partition's canonical order; inside a leaf,
    sorted by dimension ``order_dim`` (the other columns are i.i.d. given the leaf, so their draw order is
    already independent of the data's order)."""
    reps = np.maximum(np.asarray(counts, dtype=np.int64), 0)
    total = int(reps.sum())
    cols = []
    for j, m in enumerate(marginals):
        a = np.repeat(part.lo[:, j], reps)
        b = np.repeat(part.hi[:, j], reps)
        cols.append(m.sample(a, b, rng) if total else np.zeros(0, np.int64 if m.integer else np.float64))
    if total and cols:
        owner = np.repeat(np.arange(reps.size, dtype=np.int64), reps)
        c = cols[order_dim]
        cols[order_dim] = c[np.lexsort((c, owner))]
    return cols


@records_run_start
def rps_guided(table: EncodedTable | TableData, epsilon: float, *, noise: NoiseSource) -> RPSRelease:
    """Guided RPS on a relational table (the module docstring): the default of ``dprelease rps``."""
    schema = table.schema
    domain = table_domain(schema)
    data = table if isinstance(table, TableData) else LocalTable(table)  # another engine's records stay there
    regions = data.regions(domain)
    try:
        part, marginals = guided_partition(regions, domain, epsilon, noise=noise)
    finally:
        regions.close()
    check_release_size("rps", int(np.maximum(part.counts, 0).sum()), domain.n_dims)
    seed = noise.integers(2**62, 2)
    rng = np.random.Generator(np.random.PCG64([int(s) for s in seed]))
    cols = synthesize_guided(part, part.counts, marginals, rng, order_dim=1 if domain.n_dims > 1 else 0)
    predictors = tuple(c if a.kind == "categorical" else c.astype(np.float64)
                       for a, c in zip(schema.attributes, cols[1:]))
    synthetic = EncodedTable(schema, predictors, cols[0])
    eps = part.accountant.total
    names = [n for n, keep in zip(domain.names, [schema.has_class] + [True] * len(schema.attributes)) if keep]
    budget = {
        "formula": "marginals (PrivTree cells + counts per dimension, sequential over the dimensions) + one PrivTree "
                   "over the partition + leaf counts (disjoint leaves) = eps for every record",
        "marginals": MARGINAL_SHARE * eps,
        "marginal_per_dimension": MARGINAL_SHARE * eps / max(1, paid_dimensions(domain.lo, domain.hi, domain.integer)),
        "partition_privtree": PARTITION_SHARE * eps, "leaf_counts": float(part.count_epsilon[0]),
    }
    parameters = {"method": "guided", "max_depth": MAX_DEPTH, "marginal_share": MARGINAL_SHARE,
                  "partition_share": PARTITION_SHARE, "dimension_order": names,
                  "split_rule": "round-robin by depth (the class first, if any); pivot where the dimension's noisy "
                                "marginal halves the region's mass; PrivTree stops"}
    leaves = leaf_error_bars(part, part.counts)
    release = RPSRelease(schema, synthetic, {}, part.accountant, partition=part, leaves=leaves)
    release.manifest.update(build_manifest(
        "rps", epsilon=check_epsilon(epsilon), parameters=parameters, noise=noise, accountant=part.accountant,
        domain=schema.describe(), release={**release.facts(), "max_leaf_depth": int(part.depth.max())},
        budget_split=budget, privacy_unit="record", neighbours=NEIGHBOURS_ROW,
        notes=["guided RPS: noisy 1-D marginals, a PrivTree-stopped partition split where the marginals halve the "
               "mass, noisy leaf counts; values drawn from the marginals inside each leaf (docs/rps.md)"]))
    release.manifest["uncertainty"] = leaf_uncertainty(leaves, schema, "the records inside a leaf follow the noisy "
                                                     "marginals, not the data")
    return release
