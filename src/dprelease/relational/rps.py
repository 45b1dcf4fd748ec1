"""RPS: Recursive Partitioning and Summarization (Qardaji & Li, ASIACCS 2012, section 3).

Tuples are points of a multi-dimensional public domain. RPS recursively splits the region holding the data in
two (section 3.1: partition), stops (stop) and summarizes every final region by a noisy count (summarize); the
synthetic dataset draws ``max(0, count)`` points uniformly inside each final region. The text stops at its
Algorithm 1; our readings fill it in (docs/rps.md, "Readings"):

* **Regions and splits.** A region is a box: per dimension a range ``[lo, hi)`` of an integer lattice
  (categorical leaf codes in the taxonomy's depth-first order, integer attributes, class codes) or of the reals.
  The split dimension is chosen without the data: round-robin by depth (depth l starts at dimension
  ``l mod D``) over the dimensions whose range still holds more than one value. Binary split at a pivot x:
  ``t.A < x`` left, ``t.A >= x`` right. A table's class is split at the last level (so each final
  predictor box carries per-class counts), or first (``class_split``).
* **Balanced partitioning** picks x with the exponential-mechanism median of :mod:`dprelease.privacy.median`;
  **fixed partitioning** takes the midpoint and spends nothing (alpha = 0).
* **Budget** (per record, i.e. per root-to-leaf chain)::

      eps_level = alpha * eps / h                 every level's pivots (regions of a level are disjoint: parallel)
      leaf count = (1 - alpha) * eps + eps_level * (levels the region did not use)     discrete Laplace, Delta = 1

  so every chain sums to exactly eps (the accountant checks each spend; ``remaining_budget`` rounds the last
  share down so the float sum never passes eps). With the optional noisy-count stop, a region spends half of
  its level's budget (all of it under fixed partitioning) on a noisy size first, and stops when it is below
  the threshold; what it did not use goes to its leaf count.
* **Stop**: depth h, a region that is a single cell, or (optionally) the noisy-count stop.

Composition ``"records"`` (a table; neighbours differ in one record) charges per level on disjoint regions and
lets a region that stopped early keep its unused level budget. Composition ``"nodes"`` (a degree sequence under
node-DP, :mod:`dprelease.graphs.degrees`) cannot use parallel composition across regions, since one node moves
several regions; there every level is one charge over all regions with the caller's joint sensitivity and every
leaf gets the same budget.

The per-level data work (one grouped count per level and one routing pass) is the engine's
:class:`~dprelease.engine.base.RegionRecords`: in memory (:class:`~dprelease.engine.local.LocalRegions`) or on
Spark, with the same counts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Sequence

import numpy as np

from ..data.table import EncodedTable, TableSchema
from ..engine.base import RegionRecords, TableData
from ..engine.local import LocalRegions, LocalTable
from ..errors import ParameterError
from ..privacy import BudgetAccountant, NoiseSource, check_epsilon, noisy_counts
from ..privacy.accountant import BudgetScope
from ..privacy.mechanisms import laplace_scale
from ..privacy.median import check_sensitivity, median_intervals, private_medians
from ..privacy.uncertainty import count_intervals, manifest_section
from ..release import NEIGHBOURS_ROW, build_manifest, records_run_start
from ..release.table import LeafBoxes, SyntheticTable

__all__ = ["PointDomain", "Partition", "RPSRelease",
           "remaining_budget", "choose_dimensions", "rps_partition", "rps", "table_domain", "table_points",
           "synthesize", "validate_parameters", "work_estimate", "check_release_size", "consistent_leaf_counts", "flat_histogram", "DEFAULT_DEPTH", "DEFAULT_SPLIT_SHARE", "PARTITIONINGS"]

DEFAULT_DEPTH = 10
DEFAULT_SPLIT_SHARE = 0.3
CLASS_SPLITS = ("first", "last")
DEFAULT_CLASS_SPLIT = "last"
PARTITIONINGS = ("balanced", "fixed")
COMPOSITIONS = ("records", "nodes")


@dataclass(frozen=True, eq=False)
class PointDomain:
    """The public domain: dimension names and per dimension ``[lo, hi)`` and whether it is an integer lattice."""

    names: tuple[str, ...]
    lo: np.ndarray
    hi: np.ndarray
    integer: np.ndarray

    @property
    def n_dims(self) -> int:
        return len(self.names)

    def cells(self) -> float:
        """Number of lattice cells (inf when a dimension is real)."""
        if not self.integer.all():
            return math.inf
        return float(np.prod(self.hi - self.lo, dtype=np.float64))


def remaining_budget(total: float, scope: BudgetScope) -> float:
    """The largest float e with (what the chain spent) + e <= total, exactly (so a last share never overshoots)."""
    rest = Fraction(total) - Fraction(scope.chain_spent)
    value = float(rest)
    if Fraction(value) > rest:
        value = math.nextafter(value, 0.0)
    return value


def choose_dimensions(depth: int, lo: np.ndarray, hi: np.ndarray, integer: np.ndarray,
                      last_dim: int | None = None, max_depth: int | None = None) -> np.ndarray:
    """Round-robin by depth over the dimensions that can still be split (data-independent); -1 = single cell.

    With ``last_dim``, that dimension is split only at depth ``max_depth - 1`` (where it goes first) and the
    round-robin runs over the others; a region where it cannot be split falls back to the round-robin.
    """
    n_dims = lo.shape[1]
    splittable = np.where(integer[None, :], (hi - lo) >= 2, hi > lo)
    pool = np.arange(n_dims)
    if last_dim is not None:
        pool = pool[pool != last_dim]
    dims = np.full(lo.shape[0], -1, dtype=np.int64)
    if pool.size:
        start = depth % pool.size
        order = np.roll(pool, -start)
        ok = splittable[:, order]
        first = np.argmax(ok, axis=1)
        dims = np.where(ok.any(axis=1), order[first], -1)
    if last_dim is not None:
        at_last = max_depth is not None and depth == max_depth - 1
        can = splittable[:, last_dim]
        dims = np.where(can & (at_last | (dims < 0)), last_dim, dims)
    return dims.astype(np.int64)


@dataclass(frozen=True, eq=False)
class Partition:
    """The leaves of one RPS run: boxes ``lo[i], hi[i]`` (canonical order: by lower corner), their noisy
    counts (int64, may be negative), depth, the epsilon of their count and their index among the regions of
    their depth; the accountant, a level trace and (``keep_inner``) every level's noisy sizes and splits."""

    domain: PointDomain
    lo: np.ndarray
    hi: np.ndarray
    counts: np.ndarray
    depth: np.ndarray
    count_epsilon: np.ndarray
    region_index: np.ndarray
    accountant: BudgetAccountant
    trace: list = field(default_factory=list, repr=False)
    inner: list = field(default_factory=list, repr=False)  # per level: {"noisy", "epsilon", "split"}
    scope: BudgetScope | None = field(default=None, repr=False)  # count_leaves=False: where the summary is charged

    @property
    def n_leaves(self) -> int:
        return int(self.counts.size)


def validate_parameters(epsilon: float, depth: int, split_share: float | None, partitioning: str,
              stop_threshold: float | None) -> tuple[float, int, float]:
    """Check RPS's options (before any data is read); returns (epsilon, depth, split share alpha)."""
    eps = check_epsilon(epsilon)
    if isinstance(depth, bool) or int(depth) != depth or int(depth) < 0:
        raise ParameterError(f"--depth must be a whole number >= 0, got {depth!r}")
    if partitioning not in PARTITIONINGS:
        raise ParameterError(f"--partitioning must be one of {PARTITIONINGS}, got {partitioning!r}")
    needs_budget = (partitioning == "balanced" or stop_threshold is not None) and int(depth) > 0
    alpha = (DEFAULT_SPLIT_SHARE if needs_budget else 0.0) if split_share is None else float(split_share)
    if not math.isfinite(alpha) or not (0.0 <= alpha < 1.0):
        raise ParameterError(f"--split-share must be a number in [0, 1), got {split_share!r}")
    if needs_budget and alpha == 0.0:
        raise ParameterError("--split-share must be > 0 for balanced partitioning or a noisy-count stop "
                             "(the medians and stop counts are paid from it)")
    if not needs_budget and alpha != 0.0:
        raise ParameterError("--split-share has no use with --partitioning fixed (midpoints cost no budget) "
                             "unless a noisy-count stop is asked for")
    if stop_threshold is not None and not math.isfinite(float(stop_threshold)):
        raise ParameterError(f"--stop-threshold must be a finite number, got {stop_threshold!r}")
    return eps, int(depth), alpha


@dataclass(eq=False)
class _PartitionRun:
    """The state of one :func:`rps_partition` run: its budget shares, the current level's regions (boxes), the
    current accountant scope, and what was released so far (leaves, inner counts, a level trace)."""

    eps: float
    h: int
    partitioning: str
    stop_threshold: float | None
    composition: str
    delta: float
    keep_inner: bool
    last_dim: int | None
    domain: PointDomain
    engine: RegionRecords
    noise: NoiseSource
    scope: BudgetScope
    eps_stop: float
    eps_median: float
    eps_inner: float
    lo: np.ndarray
    hi: np.ndarray
    leaves: list = field(default_factory=list)
    inner: list = field(default_factory=list)
    trace: list = field(default_factory=list)

    def emit(self, mask: np.ndarray, sizes: np.ndarray, leaf_scope: BudgetScope, level: int, why: str) -> None:
        """The regions of ``mask`` become leaves: a noisy count each (records), or counted jointly at the end (nodes)."""
        idx = np.flatnonzero(mask)
        if self.composition == "nodes":  # counted jointly at the end
            self.leaves.append((self.lo[idx], self.hi[idx], sizes[idx], level, math.nan, idx))
            return
        e = remaining_budget(self.eps, leaf_scope)
        noisy = noisy_counts(sizes[idx], e, scope=leaf_scope, noise=self.noise, sensitivity=1,
                             label=f"leaf counts: regions stopped at depth {level} ({why})")
        self.leaves.append((self.lo[idx], self.hi[idx], noisy, level, e, idx))

    def branch(self, go_on: bool = True) -> BudgetScope:
        """A scope for the regions that stop here; ``self.scope`` becomes the one of the regions that go on
        (records: two disjoint record sets; nodes: one scope for all)."""
        if self.composition == "records" and go_on:
            leaf_scope, self.scope = self.scope.branch(), self.scope.branch()
            return leaf_scope
        return self.scope

    def stop_test(self, go: np.ndarray, sizes: np.ndarray, level: int) -> np.ndarray:
        """The noisy-count stop: regions of ``go`` whose noisy size is below the threshold become leaves."""
        work = np.flatnonzero(go)
        noisy = noisy_counts(sizes[work], self.eps_stop, scope=self.scope, noise=self.noise, sensitivity=self.delta,
                             label=f"stop test: noisy sizes, depth {level}")
        stopped = np.zeros(go.size, dtype=bool)
        stopped[work[noisy < float(self.stop_threshold)]] = True  # type: ignore[arg-type]
        go = go & ~stopped
        if stopped.any():
            self.emit(stopped, sizes, self.branch(bool(go.any())), level, "noisy count below the threshold")
        return go

    def pivots(self, go_idx: np.ndarray, dims_go: np.ndarray, level: int) -> np.ndarray:
        """The pivot of every region that splits: EM medians (balanced) or midpoints (fixed)."""
        n_regions = self.lo.shape[0]
        d = dims_go[go_idx]
        a, b = self.lo[go_idx, d], self.hi[go_idx, d]
        lattice = self.domain.integer[d]
        if self.partitioning != "balanced":
            return np.where(lattice, a + np.floor((b - a) / 2.0), (a + b) / 2.0)
        # A region whose range has one split point (a lattice range of width 2, e.g. a binary class) has
        # one pivot: public, no mechanism. A level made only of such regions spends nothing.
        piv = np.where(lattice, a + 1.0, 0.0)
        multi = ~(lattice & (b - a == 2))
        if multi.any():
            groups = self.engine.value_counts(dims_go)
            local = np.full(n_regions, -1, dtype=np.int64)
            local[go_idx[multi]] = np.arange(int(multi.sum()))
            g_local = local[groups.region]
            keep = g_local >= 0
            iv = median_intervals(int(multi.sum()), g_local[keep], groups.value[keep], groups.count[keep],
                                  a[multi], b[multi], lattice[multi])
            piv[multi] = private_medians(iv, self.eps_median, sensitivity=self.delta, scope=self.scope,
                                         noise=self.noise, label=f"median pivots, depth {level}")
        return piv

    def split(self, go: np.ndarray, dims: np.ndarray, level: int) -> None:
        """Split every region of ``go`` at its pivot; the children become the next level's regions."""
        n_regions = self.lo.shape[0]
        go_idx = np.flatnonzero(go)
        dims_go = np.where(go, dims, -1)
        d = dims[go_idx]
        piv = self.pivots(go_idx, dims_go, level)
        pivots = np.zeros(n_regions, dtype=np.float64)
        pivots[go_idx] = piv
        child_base = np.full(n_regions, -1, dtype=np.int64)
        child_base[go_idx] = 2 * np.arange(go_idx.size, dtype=np.int64)
        self.engine.route(dims_go, pivots, child_base)
        if self.keep_inner:
            self.inner[-1]["split"] = go_idx
        new_lo = np.repeat(self.lo[go_idx], 2, axis=0)
        new_hi = np.repeat(self.hi[go_idx], 2, axis=0)
        rows = np.arange(go_idx.size)
        new_hi[2 * rows, d] = piv
        new_lo[2 * rows + 1, d] = piv
        self.lo, self.hi = new_lo, new_hi
        self.trace.append({"depth": level, "regions": int(n_regions), "split": int(go_idx.size),
                           "stopped": int(n_regions - go_idx.size)})

    def level(self, level: int) -> bool:
        """One level: single cells stop, inner counts, the stop test, the split; False when no region goes on."""
        n_regions = self.lo.shape[0]
        dims = (choose_dimensions(level, self.lo, self.hi, self.domain.integer, self.last_dim, self.h)
                if level < self.h else np.full(n_regions, -1))
        single = dims < 0
        stop_on = self.stop_threshold is not None
        # region sizes are read only where a mechanism needs them (leaves, stop tests, inner counts)
        sizes = self.engine.sizes(n_regions) if (single.any() or stop_on or self.keep_inner) else None
        if self.keep_inner and level < self.h:
            inner_noisy = noisy_counts(sizes, self.eps_inner, scope=self.scope, noise=self.noise, sensitivity=1,
                                       label=f"inner counts, depth {level} (consistency)")
            self.inner.append({"noisy": inner_noisy, "epsilon": self.eps_inner, "split": np.zeros(0, dtype=np.int64)})
        if single.all():
            self.emit(single, sizes, self.scope, level, "depth h" if level == self.h else "single cells")
            self.trace.append({"depth": level, "regions": int(n_regions), "split": 0, "stopped": int(n_regions)})
            return False
        if single.any():
            self.emit(single, sizes, self.branch(), level, "single cells")
        go = ~single
        if stop_on:
            go = self.stop_test(go, sizes, level)
            if not go.any():
                self.trace.append({"depth": level, "regions": int(n_regions), "split": 0, "stopped": int(n_regions)})
                return False
        self.split(go, dims, level)
        return True

    def finish(self, count_leaves: bool) -> list:
        """The leaves as (lo, hi, counts, depth, count epsilon, index); under ``"nodes"`` one joint count charge."""
        leaves = self.leaves
        if self.composition == "nodes" and not count_leaves:
            return [(x[0], x[1], x[2], x[3], math.nan, x[5]) for x in leaves]
        if self.composition == "nodes":
            # Every level was one charge over all regions; one more charge covers every leaf (equal budgets).
            e = remaining_budget(self.eps, self.scope)
            sizes_all = np.concatenate([x[2] for x in leaves])
            noisy_all = noisy_counts(sizes_all, e, scope=self.scope, noise=self.noise, sensitivity=self.delta,
                                     label="leaf counts (all leaves, joint sensitivity)")
            bounds = np.cumsum([0] + [x[2].size for x in leaves])
            return [(x[0], x[1], noisy_all[bounds[i]:bounds[i + 1]], x[3], e, x[5]) for i, x in enumerate(leaves)]
        return leaves


def rps_partition(columns: Sequence[np.ndarray], domain: PointDomain, epsilon: float, *, noise: NoiseSource,
                  depth: int = DEFAULT_DEPTH, split_share: float | None = None, partitioning: str = "balanced",
                  stop_threshold: float | None = None, composition: str = "records", sensitivity: float = 1.0,
                  keep_inner: bool = False, regions: RegionRecords | None = None,
                  last_dim: int | None = None, count_leaves: bool = True) -> Partition:
    """Partition (balanced: EM medians; fixed: midpoints), stop, and summarize every leaf with a noisy count.

    ``columns[j]`` holds every record's value in dimension j (inside ``domain``). ``sensitivity`` is the L1
    sensitivity of a level's sizes/counts and of a level's summed median qualities under the neighbouring
    relation: 1 for records (``composition="records"``), the caller's bound for ``"nodes"``.
    ``keep_inner`` also releases every inner level's region sizes (for constrained inference), each level with
    (1 - alpha) eps / (h + 1) of the count share. ``last_dim`` is split at the last level only
    (:func:`choose_dimensions`). ``count_leaves=False`` (``"nodes"`` only) leaves the leaf budget unspent and
    returns exact leaf sizes as ``counts`` for the caller's own summary (which must spend the rest of the scope:
    ``Partition.scope``).
    """
    eps, h, alpha = validate_parameters(epsilon, depth, split_share, partitioning, stop_threshold)
    if composition not in COMPOSITIONS:
        raise ValueError(f"composition must be one of {COMPOSITIONS}")
    delta = check_sensitivity(sensitivity)
    if keep_inner and composition != "records":
        raise ParameterError("consistency (kept inner counts) is implemented for tables only")
    if not count_leaves and composition != "nodes":
        raise ValueError("count_leaves=False is for composition='nodes' (one summary charge over all leaves)")
    accountant = BudgetAccountant(eps)
    eps_level = alpha * eps / h if h else 0.0
    # The stop test takes half of a level's budget under balanced partitioning (the median the other half),
    # all of it under fixed partitioning (midpoints are free).
    eps_stop = (eps_level / 2.0 if partitioning == "balanced" else eps_level) if stop_threshold is not None else 0.0
    run = _PartitionRun(
        eps, h, partitioning, stop_threshold, composition, delta, keep_inner, last_dim, domain,
        regions if regions is not None else LocalRegions(columns, domain), noise, accountant.root(),
        eps_stop, eps_level - eps_stop if partitioning == "balanced" else 0.0,
        (1.0 - alpha) * eps / (h + 1) if keep_inner else 0.0,
        domain.lo[None, :].astype(np.float64).copy(), domain.hi[None, :].astype(np.float64).copy())
    for level in range(h + 1):
        if not run.level(level):
            break
    leaves = run.finish(count_leaves)
    all_lo = np.concatenate([x[0] for x in leaves])
    all_hi = np.concatenate([x[1] for x in leaves])
    counts = np.concatenate([x[2] for x in leaves]).astype(np.int64)
    depth_of = np.concatenate([np.full(x[2].size, x[3], dtype=np.int64) for x in leaves])
    eps_of = np.concatenate([np.full(x[2].size, x[4]) for x in leaves])
    index_of = np.concatenate([x[5] for x in leaves]).astype(np.int64)
    order = np.lexsort(all_lo.T[::-1]) if domain.n_dims else np.arange(counts.size)
    return Partition(domain, all_lo[order], all_hi[order], counts[order], depth_of[order], eps_of[order],
                     index_of[order], accountant, run.trace, run.inner, run.scope if not count_leaves else None)


def _dlap_variance(epsilon: np.ndarray) -> np.ndarray:
    """Variance of discrete Laplace noise of scale 1/epsilon: 2t/(1-t)^2 with t = exp(-epsilon)."""
    t = np.exp(-np.asarray(epsilon, dtype=np.float64))
    return 2.0 * t / (1.0 - t) ** 2


def consistent_leaf_counts(part: Partition) -> np.ndarray:
    """Leaf counts made consistent with every level's noisy sizes (constrained inference on the partition tree).

    Least squares with each measurement weighted by its inverse variance, in two passes as in Hay et al.,
    VLDB 2010 (section 4), generalised to a binary tree of uneven depth and per-node variances: bottom-up,
    ``z_v`` combines v's own measurements with the sum of its children's ``z``; top-down, each child receives
    a share of its parent's residual proportional to its variance. Post-processing only. Returns floats.
    """
    levels = part.inner
    leaf_meas: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    for lev in np.unique(part.depth).tolist():
        m = part.depth == lev
        leaf_meas[lev] = (part.region_index[m], part.counts[m].astype(np.float64),
                          _dlap_variance(part.count_epsilon[m]))
    n_at = [1]  # regions per level: children 2k, 2k+1 belong to the k-th region that split
    for lv in levels:
        if not lv["split"].size:
            break
        n_at.append(2 * int(lv["split"].size))
    n_levels = len(n_at)
    split_of = [levels[i]["split"] if i < len(levels) else np.zeros(0, dtype=np.int64) for i in range(n_levels)]
    z: list[np.ndarray] = [np.zeros(0)] * n_levels
    var: list[np.ndarray] = [np.zeros(0)] * n_levels
    for lev in range(n_levels - 1, -1, -1):  # bottom-up
        info = np.zeros(n_at[lev])
        prec = np.zeros(n_at[lev])
        if lev < len(levels):
            v_in = float(_dlap_variance(np.asarray(levels[lev]["epsilon"])))
            info += np.asarray(levels[lev]["noisy"], dtype=np.float64) / v_in
            prec += 1.0 / v_in
        sp = split_of[lev]
        if sp.size:
            s_kids = z[lev + 1][0::2] + z[lev + 1][1::2]
            v_kids = var[lev + 1][0::2] + var[lev + 1][1::2]
            info[sp] += s_kids / v_kids
            prec[sp] += 1.0 / v_kids
        if lev in leaf_meas:
            idx, val, v_leaf = leaf_meas[lev]
            info[idx] += val / v_leaf
            prec[idx] += 1.0 / v_leaf
        z[lev] = info / prec
        var[lev] = 1.0 / prec
    final = [x.copy() for x in z]
    for lev in range(n_levels - 1):  # top-down: split each parent's residual in proportion to the variances
        sp = split_of[lev]
        if not sp.size:
            continue
        zl, zr = z[lev + 1][0::2], z[lev + 1][1::2]
        vl, vr = var[lev + 1][0::2], var[lev + 1][1::2]
        resid = final[lev][sp] - (zl + zr)
        final[lev + 1][0::2] = zl + resid * vl / (vl + vr)
        final[lev + 1][1::2] = zr + resid * vr / (vl + vr)
    result = np.empty(part.counts.size)
    for lev, (idx, _, _) in leaf_meas.items():
        result[part.depth == lev] = final[lev][idx]
    return result


# -- tables -----------------------------------------------------------------------------------------------
def table_domain(schema: TableSchema) -> PointDomain:
    """RPS dimensions of a table: the class (dimension 0), then the predictors in schema order.
    Categorical: leaf codes; numeric: the declared bounds. Where the class is split is :func:`rps`'s
    ``class_split``: at the last level (default) or first."""
    names = [schema.class_attribute.name] + [a.name for a in schema.attributes]
    lo = [0.0] + [0.0 if a.kind == "categorical" else float(a.lo) for a in schema.attributes]
    hi = [float(schema.n_classes)] + [float(a.taxonomy.n_leaves) if a.kind == "categorical" else float(a.hi)
                                      for a in schema.attributes]
    integer = [True] + [a.kind == "categorical" or bool(a.integer) for a in schema.attributes]
    return PointDomain(tuple(names), np.asarray(lo), np.asarray(hi), np.asarray(integer, dtype=bool))


def table_points(table: EncodedTable) -> list[np.ndarray]:
    """The table's records as RPS dimensions (class, then predictors)."""
    return [table.y] + list(table.columns)


def synthesize(lo: np.ndarray, hi: np.ndarray, counts: np.ndarray, integer: np.ndarray,
               rng: np.random.Generator, order_dim: int = 0) -> list[np.ndarray]:
    """``max(0, count)`` points per box, each dimension uniform in the box (post-processing).

    Lattice dimensions come out as int64, real ones as float64. Rows are grouped by box in the given
    (canonical) order and, inside a box, sorted by their value in dimension ``order_dim``. Only that column
    is sorted: the other columns of a box are i.i.d. draws independent of it, so leaving them in draw order
    has the same distribution as carrying them along with the sort.
    """
    reps = np.maximum(np.asarray(counts, dtype=np.int64), 0)
    total = int(reps.sum())
    cols = []
    for j in range(lo.shape[1]):
        a = np.repeat(lo[:, j], reps)
        b = np.repeat(hi[:, j], reps)
        if integer[j]:
            cols.append(rng.integers(a.astype(np.int64), b.astype(np.int64)) if total else np.zeros(0, np.int64))
        else:
            cols.append(a + rng.random(total) * (b - a))
    if total and lo.shape[1]:
        owner = np.repeat(np.arange(reps.size, dtype=np.int64), reps)
        c = cols[order_dim]
        cols[order_dim] = c[np.lexsort((c, owner))]
    return cols


@dataclass(frozen=True, eq=False)
class RPSRelease(SyntheticTable):
    """A synthetic table made by RPS, with its partition (leaves and noisy counts) and manifest."""

    partition: Partition | None = field(default=None, kw_only=True, repr=False)

    def facts(self) -> dict[str, object]:
        """The manifest's release facts: functions of the release only."""
        schema = self.schema
        return {
            "records": self.n_records,  # sum of max(0, noisy leaf count): post-processing
            "leaves": self.partition.n_leaves if self.partition is not None else None,
            "columns": schema.column_names,
            "order": "by leaf (sorted by its lower corner: class, then the predictors in schema order), then by the "
                     "first predictor's generated value (ties in draw order)",
        }


def _dlap_positive_mean(epsilon: float) -> float:
    """E[max(0, X)] for X ~ DLap(1/epsilon): t/(1-t)^2 * (1-t)/(1+t) = t/((1-t)(1+t)), t = exp(-epsilon)."""
    t = math.exp(-epsilon)
    return t / ((1.0 - t) * (1.0 + t))


def work_estimate(n_dims: int, cells: float, epsilon: float, depth: int, split_share: float | None,
                  partitioning: str, stop_threshold: float | None = None) -> tuple[float, float]:
    """Public estimate, before the data is read: (records the empty leaves alone release on average, memory bytes).

    At most min(2^h, cells) leaves; an empty leaf releases E[max(0, DLap(1/eps_leaf))] records, eps_leaf >=
    (1 - alpha) eps (its smallest value). Memory: the leaf boxes and those records, 8 bytes per value, x4.
    """
    _, h, alpha = validate_parameters(epsilon, depth, split_share, partitioning, stop_threshold)
    leaves = min(2.0 ** h, cells)
    records = leaves * _dlap_positive_mean((1.0 - alpha) * float(epsilon))
    memory = 4.0 * 8.0 * n_dims * (2.0 * leaves + records)
    return records, memory


def check_release_size(what: str, records: int, n_dims: int) -> None:
    """Stop before synthesizing past the work limits; ``records`` is a sum of noisy counts (post-processing)."""
    from .. import limits

    limits.check(what, records=float(records), memory=4.0 * 8.0 * n_dims * float(records),
                 why="the sum of the noisy leaf counts")


@records_run_start
def rps(table: EncodedTable | TableData, epsilon: float, *, noise: NoiseSource, depth: int = DEFAULT_DEPTH,
        split_share: float | None = None, partitioning: str = "balanced", stop_threshold: float | None = None,
        consistency: bool = False, class_split: str = DEFAULT_CLASS_SPLIT) -> RPSRelease:
    """RPS on a relational table: partition, summarize, synthesize (section 3; readings in docs/rps.md).

    ``class_split="last"`` (default) splits the class at depth h - 1 of every region and runs the round-robin
    over the predictors, so the two halves of a final predictor box hold its per-class counts (as DiffGen's
    leaf x class counts); ``"first"`` splits the class at the root, so each class gets its own boxes
    (measured worse for classification: docs/rps.md).

    ``consistency=True`` (an option, measured in docs/rps.md): every level's region sizes are released too,
    each level with an equal share (1 - alpha) eps / (h + 1) of the count budget, and the leaf counts are made
    consistent with them (constrained inference over the partition tree, Hay et al., VLDB 2010) before
    synthesizing.
    """
    if class_split not in CLASS_SPLITS:
        raise ParameterError(f"--class-split must be one of {CLASS_SPLITS}, got {class_split!r}")
    schema = table.schema
    domain = table_domain(schema)
    data = table if isinstance(table, TableData) else LocalTable(table)  # another engine's records stay there
    regions = data.regions(domain)
    try:
        part = rps_partition([], domain, epsilon, noise=noise, depth=depth, split_share=split_share,
                             partitioning=partitioning, stop_threshold=stop_threshold, keep_inner=consistency,
                             last_dim=0 if class_split == "last" else None, regions=regions)
    finally:
        regions.close()
    counts = part.counts
    if consistency:
        counts = np.rint(consistent_leaf_counts(part)).astype(np.int64)
    check_release_size("rps", int(np.maximum(counts, 0).sum()), domain.n_dims)
    seed = noise.integers(2**62, 2)
    rng = np.random.Generator(np.random.PCG64([int(s) for s in seed]))
    cols = synthesize(part.lo, part.hi, counts, domain.integer, rng, order_dim=1 if domain.n_dims > 1 else 0)
    y = cols[0]
    predictors = tuple(c if a.kind == "categorical" else c.astype(np.float64)
                       for a, c in zip(schema.attributes, cols[1:]))
    synthetic = EncodedTable(schema, predictors, y)
    eps = part.accountant.total
    h = int(depth)
    alpha = float(split_share) if split_share is not None else (
        DEFAULT_SPLIT_SHARE if (partitioning == "balanced" or stop_threshold is not None) else 0.0)
    budget = {
        "formula": "eps_level = alpha eps / h per level (disjoint regions: parallel); leaf count = (1 - alpha) eps "
                   "+ the level budget a region did not use; every root-to-leaf chain sums to eps",
        "split_share_alpha": alpha,
        "per_level": alpha * eps / h if h else 0.0,
        "median_per_level": (alpha * eps / h) * (0.5 if stop_threshold is not None else 1.0)
        if partitioning == "balanced" and h else 0.0,
        "stop_test_per_level": ((alpha * eps / h) * (0.5 if partitioning == "balanced" else 1.0))
        if stop_threshold is not None and h else 0.0,
        "leaf_counts_at_depth_h": (1.0 - alpha) * eps,
        "inner_counts_per_level": (1.0 - alpha) * eps / (h + 1) if consistency else 0.0,
    }
    parameters = {"depth": h, "split_share": alpha, "partitioning": partitioning, "stop_threshold": stop_threshold,
                  "consistency": consistency, "class_split": class_split,
                  "dimension_order": (list(domain.names[1:]) + [domain.names[0]] if class_split == "last"
                                      else list(domain.names)),
                  "split_rule": "round-robin by depth" + (" over the predictors; the class at depth h - 1"
                                                          if class_split == "last" else "")}
    leaves = leaf_error_bars(part, counts, " (before the consistency step, which lowers it)" if consistency else "")
    release = RPSRelease(schema, synthetic, {}, part.accountant, partition=part, leaves=leaves)
    release.manifest.update(build_manifest(
        "rps", epsilon=check_epsilon(epsilon), parameters=parameters, noise=noise, accountant=part.accountant,
        domain=schema.describe(), release=release.facts(), budget_split=budget, privacy_unit="record",
        neighbours=NEIGHBOURS_ROW,
        notes=["Qardaji and Li, Recursive partitioning and summarization, ASIACCS 2012 (readings: docs/rps.md)",
               "leaf counts: discrete Laplace; max(0, count) records per leaf, each value uniform in the leaf "
               "(post-processing)"]))
    release.manifest["uncertainty"] = leaf_uncertainty(leaves, schema, "the records spread uniformly inside it")
    return release


def leaf_error_bars(part: Partition, counts: np.ndarray, label_suffix: str = "") -> LeafBoxes:
    """The leaves with each released count's 95 % interval: post-processing of the public scales 1/eps_leaf
    (each count clipped at 0 as it is used)."""
    scales = np.asarray([laplace_scale(float(e), 1) for e in part.count_epsilon.tolist()])
    errors = count_intervals(np.maximum(counts, 0), scales, lower=0.0,
                             label="the discrete Laplace noise of each leaf count" + label_suffix)
    return LeafBoxes(np.asarray(part.lo, dtype=np.float64), np.asarray(part.hi, dtype=np.float64), errors)


def leaf_uncertainty(leaves: LeafBoxes, schema: TableSchema, inside: str) -> dict[str, object]:
    """The manifest's ``uncertainty`` section of a synthetic table's leaf counts; ``inside``: how the records
    lie inside a leaf (what a range count over part of one ignores)."""
    return manifest_section(
        accounts_for=leaves.errors.label, columns=tuple(leaves.names(schema)[-4:]),
        formula="DLap(b), b = 1/eps_leaf per leaf: sd = sqrt(2t)/(1-t), t = exp(-1/b); h = least integer with "
                "2 t^(h+1)/(1+t) <= 0.05; [max(0, v - h), v + h]; leaves as boxes [lo, hi) over the class and the "
                "attributes (categories as leaf codes in the taxonomy's depth-first order)",
        ignores=f"range counts over part of a leaf: {inside} (docs/accuracy.md)")


# -- the flat noisy histogram baseline (experiment E1, "where it fits") ------------------------------------
FLAT_MAX_CELLS = 1 << 22


def flat_histogram(columns: Sequence[np.ndarray], domain: PointDomain, epsilon: float, *,
                   noise: NoiseSource) -> tuple[np.ndarray, BudgetAccountant]:
    """A noisy count of every lattice cell of the domain (disjoint cells: sensitivity 1, one charge of eps).

    Refuses domains of more than ``FLAT_MAX_CELLS`` cells or with a real dimension.
    """
    eps = check_epsilon(epsilon)
    cells = domain.cells()
    if not math.isfinite(cells) or cells > FLAT_MAX_CELLS:
        raise ParameterError(f"a flat histogram of {cells:.3g} cells does not fit (limit {FLAT_MAX_CELLS})")
    shape = tuple(int(x) for x in (domain.hi - domain.lo))
    idx = np.ravel_multi_index(tuple((np.asarray(c) - lo).astype(np.int64) for c, lo in zip(columns, domain.lo)), shape)
    counts = np.bincount(idx, minlength=int(cells)).reshape(shape)
    acc = BudgetAccountant(eps)
    noisy = noisy_counts(counts, eps, scope=acc.root(), noise=noise, sensitivity=1, label="flat histogram cells")
    return noisy, acc
