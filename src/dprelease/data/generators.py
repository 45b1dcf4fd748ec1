"""Synthetic transaction data for benchmarks and the bundled example.

:func:`kosarak_like` makes a sparse long-tail click-stream-like dataset: Zipf-like
item popularity and log-normal record lengths, the shape of kosarak (990,002
records, 41,270 items, mean length 8.1). It is *generated*: label it so wherever
its numbers are reported.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO

import numpy as np

from .transactions import TransactionDB

__all__ = ["kosarak_like", "kosarak_like_chunks", "write_kosarak_like", "clustered_baskets"]


def kosarak_like(n_records: int = 1_000_000, n_items: int = 41_270, mean_length: float = 8.0,
                 zipf_exponent: float = 1.0, seed: int = 0) -> TransactionDB:
    """Records whose lengths are log-normal (heavy tail, >= 1) and whose items follow p(i) ~ 1/(i+2)^s."""
    return TransactionDB.concat(list(kosarak_like_chunks(n_records, n_items, mean_length, zipf_exponent, seed,
                                                         chunk_records=max(int(n_records), 1))))


def kosarak_like_chunks(n_records: int = 1_000_000, n_items: int = 41_270, mean_length: float = 8.0,
                        zipf_exponent: float = 1.0, seed: int = 0, *, chunk_records: int = 1 << 18
                        ) -> Iterator[TransactionDB]:
    """:func:`kosarak_like` as consecutive chunks of ``chunk_records`` records (their concatenation is the
    same database for the same seed), so a file of any size is written in bounded memory.

    The random stream is consumed exactly as in one piece: the lengths first, then one uniform per item
    occurrence, then the id permutation. The permutation is drawn up front from a copy of the generator
    advanced past the item draws (PCG64 jumps ahead in O(log n)).
    """
    rng = np.random.default_rng(seed)
    sigma = 1.0
    # log-normal mean = exp(mu + sigma^2/2); aim for the requested mean length after rounding up and de-duplication
    mu = np.log(max(mean_length - 0.5, 1.0)) - sigma**2 / 2
    lengths = np.empty(int(n_records), dtype=np.int16)  # <= 2500
    step = 1 << 20
    for lo in range(0, int(n_records), step):
        hi = min(lo + step, int(n_records))
        lengths[lo:hi] = np.clip(np.ceil(rng.lognormal(mu, sigma, hi - lo)), 1, 2500)
    weights = 1.0 / np.power(np.arange(n_items, dtype=np.float64) + 2.0, zipf_exponent)
    cdf = np.cumsum(weights)
    cdf /= cdf[-1]
    total = int(lengths.sum(dtype=np.int64))
    ahead = np.random.PCG64()
    ahead.state = rng.bit_generator.state
    ahead.advance(total)  # one 64-bit draw per uniform double
    # a random permutation of ids, so popular items are not simply the small ids
    perm = np.random.Generator(ahead).permutation(n_items)
    for lo in range(0, int(n_records), int(chunk_records)):
        hi = min(lo + int(chunk_records), int(n_records))
        part = lengths[lo:hi].astype(np.int64)
        items = np.searchsorted(cdf, rng.random(int(part.sum())), side="right").clip(0, n_items - 1)
        rows = np.repeat(np.arange(hi - lo, dtype=np.int64), part)
        yield TransactionDB.from_pairs(rows, perm[items], hi - lo, n_items)


def write_kosarak_like(handle: BinaryIO, n_records: int = 1_000_000, n_items: int = 41_270,
                       mean_length: float = 8.0, zipf_exponent: float = 1.0, seed: int = 0) -> tuple[int, float]:
    """Write :func:`kosarak_like` as FIMI text (labels 1..n_items) chunk by chunk; returns (N, mean length).

    The bytes are those ``write_transactions`` gives for the whole database over ``--universe 1..n_items``.
    """
    from .fimi import format_int_records

    n, entries = 0, 0
    for chunk in kosarak_like_chunks(n_records, n_items, mean_length, zipf_exponent, seed):
        handle.write(format_int_records(chunk, first_label=1))
        n += chunk.n_records
        entries += int(chunk.items.size)
    return n, entries / max(n, 1)


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
