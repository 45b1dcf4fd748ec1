"""Noisy one-dimensional marginals over a public box domain, and what is read off them for free.

Each dimension's marginal is an adaptive histogram: PrivTree (:mod:`dprelease.privacy.privtree`) decides which
cells of a binary tree over the dimension's public range ``[lo, hi)`` are split (at midpoints: public), then the
final cells get discrete-Laplace counts. A small lattice range (at most ``FLAT_WIDTH`` values) skips the tree and
counts every value. The noisy counts, clamped at 0, are a piecewise-uniform density ``F`` over the range; a
lattice value v occupies ``[v, v + 1)``.

Everything after the counts is post-processing of paid-for values: :meth:`Marginal.split_points` (the point
that halves the marginal's mass inside a range: a free "median" pivot) and :meth:`Marginal.sample` (values
drawn from the marginal restricted to a range).

Privacy (add/remove one record): a record lies in one cell per depth of each dimension's tree and in one final
cell, so one dimension costs its PrivTree charge plus one count charge (the final cells are disjoint); the
dimensions compose sequentially. Every charge is typed (``privtree``, ``discrete_laplace``) and goes to the
caller's scope.
"""

from __future__ import annotations

from dataclasses import dataclass

import math

import numpy as np

from ..engine.base import RegionRecords
from ..privacy import NoiseSource, noisy_counts
from ..privacy.accountant import BudgetScope
from ..privacy.privtree import PrivTreeSplitter

__all__ = ["Marginal", "noisy_marginals", "paid_dimensions", "FLAT_WIDTH", "MAX_MARGINAL_DEPTH", "TREE_SHARE"]

FLAT_WIDTH = 64  # lattice ranges up to this many values are counted value by value (no tree)
MAX_MARGINAL_DEPTH = 24  # a cell of a real range is at least 2^-24 of the range wide (public cap)
THRESHOLD = 1.0
TREE_SHARE = 0.5  # share of a dimension's budget for its PrivTree decisions (the rest: the cells' counts)


@dataclass(frozen=True, eq=False)
class Marginal:
    """A released 1-D marginal: cells ``[edges[i], edges[i+1])`` with non-negative weights (noisy counts
    clamped at 0), uniform inside a cell; ``integer``: values are whole numbers (a value v is ``[v, v+1)``)."""

    edges: np.ndarray
    weights: np.ndarray
    integer: bool

    def _cdf(self) -> np.ndarray:
        return np.concatenate([[0.0], np.cumsum(self.weights, dtype=np.float64)])

    def mass(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Marginal mass inside ``[a, b)`` (piecewise uniform)."""
        cdf = self._cdf()
        return np.interp(b, self.edges, cdf) - np.interp(a, self.edges, cdf)

    def _inverse(self, a: np.ndarray, b: np.ndarray, share: np.ndarray) -> np.ndarray:
        """The point x in [a, b] with mass([a, x)) = share * mass([a, b)); uniform in [a, b) where the mass is 0."""
        cdf = self._cdf()
        fa, fb = np.interp(a, self.edges, cdf), np.interp(b, self.edges, cdf)
        target = fa + share * (fb - fa)
        # the cell holding the target (right-continuous), then linear inside it
        k = np.clip(np.searchsorted(cdf, target, side="right") - 1, 0, self.weights.size - 1)
        w = self.weights[k]
        with np.errstate(divide="ignore", invalid="ignore"):
            inside = np.where(w > 0, (target - cdf[k]) / w, 0.0)
        x = self.edges[k] + inside * (self.edges[k + 1] - self.edges[k])
        x = np.clip(x, a, b)
        return np.where(fb - fa > 0, x, a + share * (b - a))

    def split_points(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """A pivot strictly inside each range that halves the marginal mass of ``[a, b)`` (post-processing).

        Lattice: a whole number in ``a + 1 .. b - 1`` (the ranges hold at least two values); reals: in (a, b).
        """
        a = np.asarray(a, dtype=np.float64)
        b = np.asarray(b, dtype=np.float64)
        x = self._inverse(a, b, np.full(a.shape, 0.5))
        if self.integer:
            return np.clip(np.rint(x), a + 1.0, b - 1.0)
        lo = np.nextafter(a, np.inf)
        hi = np.nextafter(b, -np.inf)
        return np.clip(x, lo, np.maximum(lo, hi))

    def sample(self, a: np.ndarray, b: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One value per entry, drawn from the marginal restricted to ``[a, b)`` (uniform there if it has no
        mass). Lattice values come out as int64 in ``a .. b - 1``."""
        a = np.asarray(a, dtype=np.float64)
        b = np.asarray(b, dtype=np.float64)
        x = self._inverse(a, b, rng.random(a.shape))
        if self.integer:
            return np.clip(np.floor(x), a, b - 1.0).astype(np.int64)
        return np.clip(x, a, np.maximum(a, np.nextafter(b, -np.inf)))


def _cell_sizes(values: np.ndarray, cum: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Records with a value in each ``[a, b)`` (values sorted, ``cum`` their cumulative counts with a leading 0)."""
    return cum[np.searchsorted(values, b, side="left")] - cum[np.searchsorted(values, a, side="left")]


def _privtree_cells(values: np.ndarray, counts: np.ndarray, lo: float, hi: float, integer: bool,
                    splitter: PrivTreeSplitter) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The final cells of one dimension's PrivTree (midpoint splits); returns (a, b, exact sizes)."""
    cum = np.concatenate([[0], np.cumsum(counts, dtype=np.int64)])
    a, b = np.array([lo]), np.array([hi])
    done_a, done_b = [], []
    for depth in range(1, MAX_MARGINAL_DEPTH + 1):
        can = (b - a >= 2) if integer else (b > a)
        done_a.append(a[~can])
        done_b.append(b[~can])
        a, b = a[can], b[can]
        if not a.size:
            break
        split = splitter.test(_cell_sizes(values, cum, a, b), depth)
        done_a.append(a[~split])
        done_b.append(b[~split])
        a, b = a[split], b[split]
        if not a.size:
            break
        mid = np.floor((a + b) / 2.0) if integer else (a + b) / 2.0
        a, b = np.concatenate([a, mid]), np.concatenate([mid, b])
    done_a.append(a)
    done_b.append(b)
    ca, cb = np.concatenate(done_a), np.concatenate(done_b)
    order = np.argsort(ca, kind="stable")
    ca, cb = ca[order], cb[order]
    return ca, cb, _cell_sizes(values, cum, ca, cb)


def _denoise(noisy: np.ndarray, epsilon: float) -> np.ndarray:
    """Cell weights from noisy counts (post-processing): a cell whose noisy count does not pass
    ``ln(cells) / epsilon`` gets 0, the others keep their count. An empty cell passes with probability below
    1/cells, so the empty tails of a wide public range stay (nearly) empty instead of taking noise as mass."""
    tau = THRESHOLD * math.log(max(2, noisy.size)) / epsilon
    return np.where(noisy > tau, noisy, 0).astype(np.float64)


def _one_marginal(values: np.ndarray, counts: np.ndarray, lo: float, hi: float, integer: bool, epsilon: float,
                  name: str, scope: BudgetScope, noise: NoiseSource) -> Marginal:
    """One dimension's noisy marginal at a total of ``epsilon`` (tree decisions + cell counts)."""
    if integer and hi - lo <= 1:  # one value: the marginal is known (all records), nothing to pay
        return Marginal(np.array([lo, hi]), np.ones(1), True)
    if integer and hi - lo <= FLAT_WIDTH:
        a = np.arange(lo, hi, dtype=np.float64)
        b = a + 1.0
        cum = np.concatenate([[0], np.cumsum(counts, dtype=np.int64)])
        sizes, eps_counts = _cell_sizes(values, cum, a, b), epsilon
    else:
        splitter = PrivTreeSplitter(TREE_SHARE * epsilon, beta=2.0, theta=0, scope=scope, noise=noise,
                                    label=f"marginal of {name}: PrivTree split decisions")
        a, b, sizes = _privtree_cells(values, counts, lo, hi, integer, splitter)
        eps_counts = (1.0 - TREE_SHARE) * epsilon
    noisy = noisy_counts(sizes, eps_counts, scope=scope, noise=noise, sensitivity=1,
                         label=f"marginal of {name}: cell counts")
    weights = _denoise(noisy, eps_counts)
    return Marginal(np.concatenate([a, b[-1:]]), weights, bool(integer))


def paid_dimensions(lo: np.ndarray, hi: np.ndarray, integer: np.ndarray) -> int:
    """How many dimensions hold more than one value (a one-value dimension's marginal is known: it costs nothing)."""
    width = np.asarray(hi, dtype=np.float64) - np.asarray(lo, dtype=np.float64)
    return int(np.sum(np.where(integer, width >= 2, width > 0)))


def noisy_marginals(engine: RegionRecords, names, lo: np.ndarray, hi: np.ndarray, integer: np.ndarray,
                    epsilon: float, *, scope: BudgetScope, noise: NoiseSource) -> list[Marginal]:
    """Every dimension's noisy marginal, ``epsilon / D`` each (sequential composition), read with the engine's
    grouped count while every record is still in region 0 (before any routing)."""
    n_dims = len(names)
    eps_dim = epsilon / max(1, paid_dimensions(lo, hi, integer))
    out = []
    for j in range(n_dims):
        dims = np.array([j], dtype=np.int64)
        groups = engine.value_counts(dims)
        values = np.asarray(groups.value, dtype=np.float64)
        counts = np.asarray(groups.count, dtype=np.int64)
        out.append(_one_marginal(values, counts, float(lo[j]), float(hi[j]), bool(integer[j]), eps_dim,
                                 str(names[j]), scope, noise))
    return out
