"""PrivTree split decisions over a tree of disjoint cells, with integer counts and discrete Laplace noise.

After Zhang, Xiao and Xie, *PrivTree: A Differentially Private Algorithm for Hierarchical
Decompositions*, SIGMOD 2016, section 3 (Algorithm 2, Theorem 3.1). A cell at depth d with
record count c is *split* (kept and refined further) iff

    max(theta - delta, c - d*delta) + DLap(lam) >= theta.

This is the paper's biased count b(v) = max(c(v) - depth(v)*delta, theta - delta) and test
b(v) + noise > theta, with integers: depths count from 1 (the paper's root is depth 0; the shift is the
paper's test with threshold theta + delta), discrete Laplace noise, and ``>=``.

The whole set of decisions of one tree costs ``epsilon`` once, however deep the tree grows,
because the biased count c - d*delta of the cells on one record's path falls by at least
delta per level, so the privacy losses of the decisions along the path form a geometric series.

Privacy argument (docs/privacy.md section 4.8), in OpenDP's form:

* Claim: the list of decisions is ``epsilon``-DP under add/remove-one-record neighbours, with
  ``epsilon = (1/lam) * (1 + e^(-1/lam) / (1 - e^(-delta/lam)))`` (:func:`privtree_epsilon`), which is at most
  the charged ``(1/lam) * (1 + e^(-1/lam) * beta/(beta - 1))`` when delta >= lam ln(beta)
  (:func:`~dprelease.privacy.accountant.privtree_theorem_epsilon`; the paper's (2 beta - 1)/((beta - 1) lam)
  has no factor e^(-1/lam): continuous noise and real counts).
* What the code guarantees: integer ``theta`` and ``delta``; the bias of a depth-d cell is exactly
  d*delta; exact discrete Laplace noise of scale ``lam`` (OpenDP in secure mode); the budget is
  charged on the caller's scope before the first decision is drawn, as one typed ``"privtree"`` event
  (lam, delta, beta) from which :func:`~dprelease.privacy.accountant.epsilon_of` re-derives it.
* What the caller must guarantee: (1) the cells tested at one depth hold disjoint sets of records;
  (2) every cell tested at depth d+1 is a subset of the records of a cell that was *split* at
  depth d (depth-1 cells: subsets of the input), so a record's cells form one path and their
  counts never increase along it; (3) each depth is tested at most once per record path (one
  :meth:`PrivTreeSplitter.test` call per depth); (4) which cells exist at depth d+1 is a function
  of the public inputs and the decisions at depth <= d only (never of counts directly), so cells
  with count 0 are tested like the others.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import ParameterError
from .accountant import BudgetScope, check_epsilon, privtree_theorem_epsilon
from .noise import NoiseSource

__all__ = ["PrivTreeSplitter", "privtree_epsilon", "privtree_scale"]


def privtree_epsilon(lam: float, delta: int) -> float:
    """The privacy loss of all split decisions with noise scale ``lam`` and depth bias ``delta`` per level.

    One decision on a record's path costs at most 1/lam; every earlier split on that path had a
    biased count at least theta + k*delta (k = 0, 1, ...), where the log-ratio of the split
    probabilities is at most e^(-(k*delta + 1)/lam)/lam. Summing: (1/lam)(1 + t/(1 - t^delta)),
    t = e^(-1/lam).
    """
    if not (lam > 0 and math.isfinite(lam)):
        raise ParameterError(f"PrivTree noise scale must be a finite number > 0, got {lam!r}")
    if int(delta) != delta or delta < 1:
        raise ParameterError(f"PrivTree depth bias must be a whole number >= 1, got {delta!r}")
    t = math.exp(-1.0 / lam)
    return (1.0 + t / (-math.expm1(-float(delta) / lam))) / lam


def privtree_scale(epsilon: float, beta: float) -> tuple[float, int]:
    """(lam, delta) for a total of ``epsilon``: delta = ceil(lam * ln(beta)), so an empty cell splits
    with probability t^delta/(1+t) <= 1/(beta*(1+t)) < 1/beta, t = e^(-1/lam) (PrivTree's choice:
    with beta >= the fan-out, an empty cell has fewer than one split child on average, so empty
    subtrees stay finite).

    lam is the smallest scale (to 1e-12 relative) with privtree_epsilon(lam, delta) <= epsilon.
    """
    eps = check_epsilon(epsilon)
    if not (beta > 1 and math.isfinite(beta)):
        raise ParameterError(f"PrivTree beta must be a finite number > 1, got {beta!r}")
    # (1/lam)(1 + e^(-1/lam) * beta/(beta - 1)) >= privtree_epsilon(lam, ceil(lam ln beta)); it falls as lam grows.
    # The charge is this bound (the typed event's epsilon_of), so it is evaluated by the one shared function.
    def bound(lam: float) -> float:
        return privtree_theorem_epsilon(lam, beta)

    lo, hi = 1e-9, 1.0 / eps
    while bound(hi) > eps:
        lo, hi = hi, hi * 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if bound(mid) > eps:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * hi:
            break
    lam = hi
    delta = max(1, math.ceil(lam * math.log(beta)))
    if privtree_epsilon(lam, delta) > eps * (1 + 1e-12):  # never: t^delta <= 1/beta
        raise AssertionError("PrivTree scale does not meet its budget")
    return lam, delta


class PrivTreeSplitter:
    """Split decisions for one tree; charges ``epsilon`` to ``scope`` once, at construction.

    ``theta`` (integer) is the split threshold; ``beta`` (> 1) sets delta = ceil(lam ln beta).
    Call :meth:`test` once per depth, with the counts of every cell at that depth (see the module
    docstring for what the caller guarantees).
    """

    def __init__(self, epsilon: float, *, beta: float, theta: int = 0, scope: BudgetScope, noise: NoiseSource,
                 label: str):
        if int(theta) != theta:
            raise ParameterError(f"PrivTree threshold must be a whole number, got {theta!r}")
        self.epsilon = check_epsilon(epsilon, "PrivTree epsilon")
        self.lam, self.delta = privtree_scale(self.epsilon, beta)
        self.beta = float(beta)
        self.theta = int(theta)
        self._noise = noise
        self._last_depth = 0
        # charge, then draw: one typed event, re-derived by epsilon_of as privtree_theorem_epsilon(lam, beta)
        scope.spend(self.epsilon, label, mechanism="privtree", sensitivity=1.0, scale=self.lam,
                    depth_bias=self.delta, beta=self.beta)

    def bias(self, depth: int) -> int:
        """The depth bias d*delta subtracted from a depth-d count."""
        return int(depth) * self.delta

    def test(self, counts: np.ndarray, depth: int) -> np.ndarray:
        """Boolean mask: which of these depth-``depth`` cells split (are kept and refined)."""
        depth = int(depth)
        if depth != self._last_depth + 1:
            raise ValueError(f"PrivTree depths must be tested in order 1, 2, ...; got {depth} after {self._last_depth}")
        self._last_depth = depth
        counts = np.asarray(counts, dtype=np.int64)
        floor = self.theta - self.delta
        biased = np.maximum(counts - self.bias(depth), floor)
        return np.asarray(biased + self._noise.discrete_laplace(self.lam, counts.size) >= self.theta, dtype=bool)
