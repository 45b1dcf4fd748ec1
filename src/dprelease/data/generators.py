"""Synthetic transaction data for benchmarks and the bundled example.

:func:`kosarak_like` makes a sparse long-tail click-stream-like dataset: Zipf-like
item popularity and log-normal record lengths, the shape of kosarak (990,002
records, 41,270 items, mean length 8.1). It is *generated*: label it so wherever
its numbers are reported.
"""

from __future__ import annotations

import numpy as np

from .transactions import TransactionDB

__all__ = ["kosarak_like", "clustered_baskets"]


def kosarak_like(n_records: int = 1_000_000, n_items: int = 41_270, mean_length: float = 8.0,
                 zipf_exponent: float = 1.0, seed: int = 0) -> TransactionDB:
    """Records whose lengths are log-normal (heavy tail, >= 1) and whose items follow p(i) ~ 1/(i+2)^s."""
    rng = np.random.default_rng(seed)
    sigma = 1.0
    # log-normal mean = exp(mu + sigma^2/2); aim for the requested mean length after rounding up and de-duplication
    mu = np.log(max(mean_length - 0.5, 1.0)) - sigma**2 / 2
    lengths = np.clip(np.ceil(rng.lognormal(mu, sigma, n_records)), 1, 2500).astype(np.int64)
    weights = 1.0 / np.power(np.arange(n_items, dtype=np.float64) + 2.0, zipf_exponent)
    cdf = np.cumsum(weights)
    cdf /= cdf[-1]
    total = int(lengths.sum())
    items = np.searchsorted(cdf, rng.random(total), side="right").clip(0, n_items - 1)
    # a random permutation of ids, so popular items are not simply the small ids
    items = rng.permutation(n_items)[items]
    rows = np.repeat(np.arange(n_records, dtype=np.int64), lengths)
    return TransactionDB.from_pairs(rows, items, n_records, n_items)


def clustered_baskets(n_records: int = 3000, n_items: int = 12, seed: int = 7) -> TransactionDB:
    """A small shopping-basket dataset with a few co-bought groups (the bundled example)."""
    rng = np.random.default_rng(seed)
    groups = [np.array(g) for g in ([0, 1, 2], [3, 4], [5, 6, 7], [8], [9, 10, 11])]
    popularity = np.array([0.35, 0.25, 0.2, 0.12, 0.08])
    records: list[list[int]] = []
    for _ in range(n_records):
        chosen = rng.random(len(groups)) < popularity
        if not chosen.any():
            chosen[rng.integers(len(groups))] = True
        basket: set[int] = set()
        for g, on in zip(groups, chosen):
            if on:
                basket.update(int(i) for i in g if rng.random() < 0.7)
        if not basket:
            basket.add(int(rng.integers(n_items)))
        records.append(sorted(basket))
    return TransactionDB.from_lists(records, n_items)
