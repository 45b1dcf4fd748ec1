"""Private medians for RPS balanced partitioning (Qardaji & Li, ASIACCS 2012, section 3).

"Balanced partitioning picks a median pivot with the exponential mechanism." For a region whose records
have values ``v`` on the split attribute and public domain ``[lo, hi)``, the candidates are the public
domain points ``x`` strictly inside the region (integer lattice: ``lo+1 .. hi-1``; real: ``(lo, hi)``),
never data values, and the quality is

    q(x) = -| |{t : t.A < x}| - |{t : t.A >= x}| | = -|2 L(x) - n|,      L(x) = |{t : t.A < x}|,

which moves by at most 1 when one record is added or removed (L and n move by at most 1 each, in the same
direction for the record itself). The choice is x with probability proportional to exp(eps * q(x) / (2 Delta)).

Linear time (as in the private kd-trees of Cormode et al., ICDE 2012): q is constant on the runs of candidates
between consecutive distinct data values, so each run is one candidate of the exponential mechanism weighted by
its measure (number of lattice points, or length); a uniform point inside the chosen run then has exactly the
distribution of the exponential mechanism over points (post-processing, no charge).

:func:`private_medians` does this for many regions at once. The caller guarantees that the regions' qualities
have *joint* sensitivity ``sensitivity``: for disjoint record sets (RPS on a table, one level of the tree) that
is 1 per record (parallel composition, one charge); for node-DP degree sequences one node moves several
regions' qualities and the caller passes the summed bound (docs/rps.md). Seeded (experiment) mode draws all
Gumbel keys at once in numpy; secure mode goes through
:func:`~dprelease.privacy.mechanisms.exponential_mechanism_disjoint`, i.e. OpenDP's exact Gumbel-max per
region (the run measure folded into the score: a float step on public values, the privacy package's known
limit). Both use the scale 2 Delta / eps rounded up and charge ``epsilon`` once, before anything is drawn, as one
typed exponential-mechanism event (sensitivity Delta, that Gumbel scale, one round, not monotonic).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import ParameterError
from .accountant import BudgetScope, check_epsilon
from .mechanisms import exponential_mechanism_disjoint, selection_scale
from .noise import NoiseSource

__all__ = ["MedianIntervals", "median_intervals", "exponential_medians", "draw_in_intervals", "private_medians",
           "check_sensitivity"]


def check_sensitivity(sensitivity: float, name: str = "sensitivity") -> float:
    """Return ``sensitivity`` as a float, or raise :class:`ParameterError` unless it is finite and > 0."""
    try:
        value = float(sensitivity)
    except (TypeError, ValueError):
        raise ParameterError(f"{name} must be a number > 0, got {sensitivity!r}") from None
    if not (value > 0.0) or not math.isfinite(value):
        raise ParameterError(f"{name} must be a finite number > 0, got {sensitivity!r}")
    return value


@dataclass(frozen=True, eq=False)
class MedianIntervals:
    """Equal-quality runs of split candidates of R regions, flat and grouped by region.

    Run i of region ``region[i]``: integer lattice candidates ``low[i] .. high[i]`` (``measure`` of them), or
    the real interval ``(low[i], high[i])`` of length ``measure``; every candidate in it has quality
    ``quality[i] = -|2 L - n|``. ``start[r] : start[r+1]`` are region r's runs (every region has at least one).
    """

    region: np.ndarray
    start: np.ndarray
    low: np.ndarray
    high: np.ndarray
    measure: np.ndarray
    quality: np.ndarray
    integer: np.ndarray  # per region

    @property
    def n_regions(self) -> int:
        return int(self.start.size - 1)


def median_intervals(n_regions: int, group_region: np.ndarray, group_value: np.ndarray, group_count: np.ndarray,
                     lo: np.ndarray, hi: np.ndarray, integer: np.ndarray) -> MedianIntervals:
    """Group the split candidates of each region into runs of equal quality (no record-level work).

    ``group_*``: every distinct value of the region's split attribute among its records with its count,
    sorted by (region, value); ``lo, hi, integer``: per region, the public domain ``[lo, hi)`` of the split
    attribute and whether it is an integer lattice. Every region must be splittable (``hi - lo >= 2`` on a
    lattice, ``hi > lo`` for reals); a region may hold no records (its single run has quality 0).
    """
    r_n = int(n_regions)
    group_region = np.asarray(group_region, dtype=np.int64)
    group_value = np.asarray(group_value, dtype=np.float64)
    group_count = np.asarray(group_count, dtype=np.int64)
    lo = np.asarray(lo, dtype=np.float64)
    hi = np.asarray(hi, dtype=np.float64)
    integer = np.asarray(integer, dtype=bool)
    if lo.shape != (r_n,) or hi.shape != (r_n,) or integer.shape != (r_n,):
        raise ValueError("lo, hi and integer need one entry per region")
    k = np.bincount(group_region, minlength=r_n)
    first_group = np.concatenate([[0], np.cumsum(k)])  # region r's groups: first_group[r] .. first_group[r+1]-1
    g_n = int(group_region.size)
    total = g_n + r_n
    region_of = np.repeat(np.arange(r_n, dtype=np.int64), k + 1)
    # run j of region r ends at its j-th distinct value; the last run ends at hi
    pos_group = np.arange(g_n, dtype=np.int64) + group_region
    pos_final = first_group[1:] + np.arange(r_n, dtype=np.int64)
    end = np.empty(total, dtype=np.float64)
    end[pos_group] = group_value
    end[pos_final] = hi
    begin = np.empty(total, dtype=np.float64)
    begin[1:] = end[:-1]
    run_first = first_group[:-1] + np.arange(r_n, dtype=np.int64)
    begin[run_first] = lo
    cum = np.concatenate([[0], np.cumsum(group_count)])
    left = np.empty(total, dtype=np.int64)  # L(x) = records < x, for x in the run
    left[pos_group] = cum[:-1][np.arange(g_n)] - cum[first_group[group_region]]
    n_r = cum[first_group[1:]] - cum[first_group[:-1]]
    left[pos_final] = n_r
    quality = -np.abs(2 * left - n_r[region_of])
    is_int = integer[region_of]
    # integer: candidates x in (begin, end] and in [lo+1, hi-1]; real: the open interval (begin, end)
    low = np.where(is_int, begin + 1.0, begin)
    high = np.where(is_int, np.minimum(end, hi[region_of] - 1.0), end)
    measure = np.where(is_int, high - low + 1.0, high - low)
    keep = measure > 0
    region_of, low, high, measure, quality = region_of[keep], low[keep], high[keep], measure[keep], quality[keep]
    counts = np.bincount(region_of, minlength=r_n)
    if r_n and (counts == 0).any():
        raise ValueError("a region without split candidates is not splittable")
    start = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return MedianIntervals(region_of, start, low, high, measure, quality.astype(np.float64), integer)


def exponential_medians(iv: MedianIntervals, epsilon: float, *, sensitivity: float, scope: BudgetScope,
                        noise: NoiseSource, label: str) -> np.ndarray:
    """For every region, the index (into ``iv``'s flat arrays) of one run, chosen with probability
    proportional to ``measure * exp(epsilon * quality / (2 * sensitivity))``. Charges ``epsilon`` once."""
    eps = check_epsilon(epsilon, "median epsilon")
    delta = check_sensitivity(sensitivity, "median sensitivity")
    r_n = iv.n_regions
    if r_n == 0:
        return np.zeros(0, dtype=np.int64)
    log_measure = np.log(iv.measure)
    # P(run) ~ measure * exp(quality / scale), scale = 2 Delta / eps rounded up (the safe side): one exponential
    # mechanism event (one round; the quality -|2L - n| is not monotone), whichever path draws it
    scale = selection_scale(eps, delta)
    if noise.mode == "seeded":
        scope.spend(eps, label, mechanism="exponential", sensitivity=delta, scale=scale)
        keys = log_measure + iv.quality / scale + noise.gumbel(iv.quality.size)
        best = np.maximum.reduceat(keys, iv.start[:-1])
        hit = np.flatnonzero(keys == best[iv.region])
        first = np.ones(hit.size, dtype=bool)
        first[1:] = iv.region[hit[1:]] != iv.region[hit[:-1]]
        return hit[first].astype(np.int64)
    # A region with a single run picks it with probability 1: no sampler call (same distribution). The charge
    # is made once either way.
    n_runs = np.diff(iv.start)
    multi = np.flatnonzero(n_runs > 1)
    out = iv.start[:-1].copy()
    if multi.size == 0:
        scope.spend(eps, label, mechanism="exponential", sensitivity=delta, scale=scale)
        return out
    blocks = [iv.quality[iv.start[r]:iv.start[r + 1]] for r in multi.tolist()]
    bases = [log_measure[iv.start[r]:iv.start[r + 1]] for r in multi.tolist()]
    picks = exponential_mechanism_disjoint(blocks, eps, sensitivity=delta, scope=scope, noise=noise, label=label,
                                           log_base_measures=bases)
    out[multi] += np.asarray(picks, dtype=np.int64)
    return out


def draw_in_intervals(iv: MedianIntervals, runs: np.ndarray, noise: NoiseSource) -> np.ndarray:
    """A uniform candidate inside each chosen run (a lattice point, or a real point): post-processing, no charge."""
    runs = np.asarray(runs, dtype=np.int64)
    u = noise.uniform(runs.size)
    low, measure = iv.low[runs], iv.measure[runs]
    lattice = iv.integer[iv.region[runs]]
    step = np.minimum(np.floor(u * measure), measure - 1.0)
    return np.asarray(np.where(lattice, low + step, low + u * measure), dtype=np.float64)


def private_medians(intervals: MedianIntervals, epsilon: float, *, sensitivity: float, scope: BudgetScope,
                    noise: NoiseSource, label: str) -> np.ndarray:
    """One private median pivot per region (exponential mechanism over runs, then a uniform point in the run).

    A record goes left of pivot x when its value is < x. Charges ``epsilon`` once on ``scope``.
    """
    runs = exponential_medians(intervals, epsilon, sensitivity=sensitivity, scope=scope, noise=noise, label=label)
    return draw_in_intervals(intervals, runs, noise)
