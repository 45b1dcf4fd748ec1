"""The shape of a set-valued release: how far its record length distribution lies from the raw one.

TV = 1/2 sum_l |P_raw(l) - P_rel(l)|, the total variation distance between the two record length
distributions (non-empty records; an empty release counts as all its mass at length 0, TV = 1). Beside it,
data-independent baselines, computed from the universe size and the raw distribution only:

* ``empty``: a release with no record (TV = 1);
* ``single_items``: every record one item (the shortest non-empty release; TV = 1 - P_raw(1));
* ``uniform_subsets``: every record a uniformly random subset of the universe (lengths Binomial(|I|, 1/2)).

Reads the raw data: for the custodian only.
"""

from __future__ import annotations

import numpy as np

from ..data.transactions import TransactionDB

__all__ = ["length_distribution", "length_tv", "length_shape"]


def length_distribution(lengths: np.ndarray) -> np.ndarray:
    """P(l) for l = 0..max over the non-empty records (index = length); all mass at 0 when there is none."""
    lengths = np.asarray(lengths, dtype=np.int64)
    lengths = lengths[lengths > 0]
    if lengths.size == 0:
        return np.array([1.0])
    return np.bincount(lengths) / float(lengths.size)


def length_tv(p: np.ndarray, q: np.ndarray) -> float:
    """Total variation distance of two length distributions (index = length)."""
    n = max(p.size, q.size)
    return 0.5 * float(np.abs(np.pad(p, (0, n - p.size)) - np.pad(q, (0, n - q.size))).sum())


def _uniform_subsets(n_items: int) -> np.ndarray:
    from scipy.stats import binom

    pmf = binom.pmf(np.arange(n_items + 1), n_items, 0.5)
    pmf[0] = 0.0
    return pmf / pmf.sum()


def length_shape(raw: TransactionDB, released: TransactionDB) -> dict[str, object]:
    """Mean record lengths of both, the TV distance of their length distributions and its baselines."""
    if not np.any(raw.lengths > 0):
        raise ValueError("the raw data has no non-empty record")
    p_raw = length_distribution(raw.lengths)
    p_rel = length_distribution(released.lengths)
    rel = released.lengths[released.lengths > 0]
    return {
        "raw_mean_length": float(raw.lengths[raw.lengths > 0].mean()),
        "released_mean_length": float(rel.mean()) if rel.size else 0.0,
        "tv": length_tv(p_raw, p_rel),
        "baselines": {"empty": 1.0, "single_items": length_tv(p_raw, np.array([0.0, 1.0])),
                      "uniform_subsets": length_tv(p_raw, _uniform_subsets(raw.n_items))},
    }
