"""Degree-sequence utility (RPS, experiment E3, ``evaluate degrees``): KS, L1 and Earth Mover's distance.

With F and p the empirical CDF and normalised histogram of a degree sequence over the degrees 0, 1, 2, ...:

* ``ks``  = max_k |F_true(k) - F_released(k)| (Kolmogorov-Smirnov distance),
* ``l1``  = sum_k |p_true(k) - p_released(k)| (L1 distance of the normalised histograms, in [0, 2]),
* ``emd`` = sum_k |F_true(k) - F_released(k)| (Earth Mover's / Wasserstein-1 distance of the two normalised
  sequences, in degree units).

An empty released sequence has p = 0 and F = 1 (all of nothing at degree 0): ks = 1, l1 = 1, emd = mean degree.

The true sequence is every node of the input as read: the ids of the edge file (the edge-list model releases
only nodes of projected degree >= 1, and an edge file has no isolated node but a self-loop's), or the declared
node list with its isolated nodes at degree 0 (``evaluate degrees --nodes``).
"""

from __future__ import annotations

import numpy as np

__all__ = ["degree_metrics"]


def degree_metrics(true_degrees: np.ndarray, released_degrees: np.ndarray) -> dict[str, float]:
    t = np.asarray(true_degrees, dtype=np.int64)
    r = np.asarray(released_degrees, dtype=np.int64)
    top = int(max(t.max(initial=0), r.max(initial=0))) + 1
    pt = np.bincount(t, minlength=top) / max(t.size, 1)
    pr = np.bincount(r, minlength=top) / r.size if r.size else np.zeros(top)
    ft = np.cumsum(pt)
    fr = np.cumsum(pr) if r.size else np.ones(top)
    return {"ks": float(np.abs(ft - fr).max()), "l1": float(np.abs(pt - pr).sum()), "emd": float(np.abs(ft - fr).sum())}
