"""Synthetic data for benchmarks, the bundled example and data of shapes the shared datasets lack.

:func:`kosarak_like` makes a sparse long-tail click-stream-like dataset: Zipf-like
item popularity and log-normal record lengths, the shape of kosarak (990,002
records, 41,270 items, mean length 8.1). It is *generated*: label it so wherever
its numbers are reported.

Shapes that no shared dataset has (MSNBC, retail, mushroom, Adult and the SNAP collaboration graphs), so that
defaults can be checked on data nobody tuned them on (``benchmarks/bench_unseen.py``, docs/unseen.md):

* :func:`dense_near_ties`: dense transactions whose top itemsets' supports crowd within a few records of
  each other and of N (denser than mushroom, like pumsb/connect): separating the top k takes counts more
  precise than the noise of a DP release.
* :func:`long_baskets`: sparse baskets over thousands of items, mean length above 10 with a tail of 30-80-item
  records, Zipf-like popularity and bundles of mid-frequency items bought together (retail has long baskets
  but hardly any co-occurrence structure below its top items).
* :func:`skewed_label_table`: a table with a rare class (5 %) and correlated numeric and categorical
  attributes, with its schema; :func:`unlabelled_table`: a table with heavy-tailed, strongly correlated
  attributes and no class attribute at all.
* :func:`hub_graph` (heavy-tailed degrees with hubs far above any usual degree bound) and
  :func:`near_regular_graph` (almost every node at one degree): degree sequences unlike the collaboration
  graphs'.

Every generator is a function of its arguments and ``seed`` only (numpy PCG64 / networkx seeded), so a
benchmark names a dataset by its call.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from .transactions import TransactionDB

__all__ = ["kosarak_like", "kosarak_like_chunks", "write_kosarak_like", "clustered_baskets", "gaussian_mixture_points",
           "zipf_points", "integer_table_schema", "points_table", "dense_near_ties", "long_baskets",
           "TRANSACTION_SHAPES", "write_transaction_shape", "skewed_label_table", "unlabelled_table",
           "write_table_with_schema", "hub_graph", "near_regular_graph", "write_edge_list"]


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


# -- RPS experiment E1: d-dimensional integer data, N = 10^5, d = 2..8 ---------------------------
# Each generator returns d columns of whole numbers in [0, domain) and a binary label (a class for the table
# form). The table form (integer_table_schema + points_table) is imported lazily: pandas stays out of the CLI.


def gaussian_mixture_points(n: int = 100_000, d: int = 2, domain: int = 1024, components: int = 5,
                            seed: int = 0) -> tuple[list[np.ndarray], np.ndarray]:
    """A mixture of ``components`` axis-aligned Gaussians: means uniform in the middle 70% of the domain,
    standard deviations uniform in [3%, 12%] of it, Dirichlet(1) weights; rounded and clipped to the domain.
    The label is the component's parity."""
    rng = np.random.default_rng([seed, d, 1])
    weights = rng.dirichlet(np.ones(components))
    means = rng.uniform(0.15 * domain, 0.85 * domain, (components, d))
    sds = rng.uniform(0.03 * domain, 0.12 * domain, (components, d))
    comp = rng.choice(components, size=n, p=weights)
    x = rng.normal(means[comp], sds[comp])
    cols = [np.clip(np.rint(x[:, j]), 0, domain - 1).astype(np.int64) for j in range(d)]
    return cols, (comp % 2).astype(np.int64)


def zipf_points(n: int = 100_000, d: int = 2, domain: int = 1024, exponent: float = 1.2,
                seed: int = 0) -> tuple[list[np.ndarray], np.ndarray]:
    """Zipf-skewed, correlated: a shared latent z and an own term e_j, both with P(k) ~ (k+1)^-s on
    [0, domain); attribute j = min(domain-1, z + e_j), so the data crowd into one corner of the domain.
    The label is whether z >= 2."""
    rng = np.random.default_rng([seed, d, 2])
    p = np.arange(1, domain + 1, dtype=np.float64) ** -float(exponent)
    cdf = np.cumsum(p / p.sum())
    draw = lambda size: np.minimum(np.searchsorted(cdf, rng.random(size), side="right"), domain - 1)  # noqa: E731
    z = draw(n)
    cols = [np.minimum(z + draw(n), domain - 1).astype(np.int64) for _ in range(d)]
    return cols, (z >= 2).astype(np.int64)


def integer_table_schema(d: int, domain: int, name: str = "synthetic"):
    """A table schema for d integer attributes x1..xd with public bounds [0, domain) and a binary class."""
    from .table import parse_schema

    return parse_schema({"name": name, "class": {"name": "label", "values": ["0", "1"]},
                         "attributes": [{"name": f"x{j + 1}", "type": "numeric", "bounds": [0, domain],
                                         "integer": True} for j in range(d)]}, f"generated {name} schema")


def points_table(columns: list[np.ndarray], labels: np.ndarray, schema):
    """The generated columns as an encoded table of ``schema`` (from :func:`integer_table_schema`)."""
    from .table import EncodedTable

    return EncodedTable(schema, tuple(np.asarray(c, dtype=np.float64) for c in columns),
                        np.asarray(labels, dtype=np.int64))


# -- Shapes the shared datasets lack (benchmarks/bench_unseen.py, docs/unseen.md) ----------------------------
# Transaction shapes are generated in chunks of _CHUNK records, the random stream consumed chunk after chunk,
# so a file of any size is written in bounded memory and the data are a function of the arguments and the seed.

_CHUNK = 1 << 16


def _permutation(rng: np.random.Generator, n: int) -> np.ndarray:
    """Random item ids, so that popularity (or membership of the dense core) is not simply the small ids."""
    return rng.permutation(n)


def dense_near_ties_chunks(n_records: int = 20_000, n_core: int = 30, dropout: tuple[float, float] = (0.002, 0.02),
                           n_noise: int = 90, noise_top: float = 0.5, noise_decay: float = 0.7, seed: int = 0
                           ) -> Iterator[TransactionDB]:
    """:func:`dense_near_ties` as consecutive chunks (their concatenation is the same database)."""
    if not (0.0 <= dropout[0] <= dropout[1] < 1.0):
        raise ValueError(f"dropout must be 0 <= lo <= hi < 1, got {dropout}")
    rng = np.random.default_rng([seed, 24, 1])
    n_items = n_core + n_noise
    ids = _permutation(rng, n_items)
    keep_p = 1.0 - rng.uniform(dropout[0], dropout[1], n_core)
    noise_p = noise_top * np.power(np.arange(n_noise, dtype=np.float64) + 1.0, -noise_decay)
    p = np.concatenate([keep_p, noise_p])
    for lo in range(0, int(n_records), _CHUNK):
        m = min(_CHUNK, int(n_records) - lo)
        held = rng.random((m, n_items)) < p
        held[~held.any(axis=1), 0] = True  # a record holds at least one item (blank lines are not records)
        rows, cols = np.nonzero(held)
        yield TransactionDB.from_pairs(rows, ids[cols], m, n_items)


def dense_near_ties(n_records: int = 20_000, n_core: int = 30, dropout: tuple[float, float] = (0.002, 0.02),
                    n_noise: int = 90, noise_top: float = 0.5, noise_decay: float = 0.7,
                    seed: int = 0) -> TransactionDB:
    """Dense transactions whose top itemsets nearly tie, close to N.

    Every record holds each of ``n_core`` core items independently except for a small drop-out (each core
    item's drop-out rate is drawn uniformly from ``dropout``), plus noise items: noise item j (j = 1..n_noise)
    with probability ``noise_top * j^-noise_decay`` (0.5 down to about 0.02). Item ids are a random permutation.

    Why: census- and game-like dense data (pumsb, connect, chess) have dozens of items held by nearly every
    record; then the top k itemsets are singletons, pairs and triples of those items whose supports differ
    by a record or two and lie within a few percent of N. Mushroom (the only dense shared set) is far less
    crowded. With the defaults (N = 20,000, 120 items, mean length 34.7) the top 100 are 17 singletons,
    49 pairs, 33 triples and one quadruple of core items, with supports from N - 48 down to N - 251 and a
    median gap of one record between consecutive ones, while PrivBasis's noise sd of the k-th count at
    epsilon = 1 is tens to hundreds of records: the top 100 cannot be told apart from the next ones by the
    noisy counts, so a private method must not publish itemsets far below the k-th (the noise items, at
    most N/2, and their combinations are such itemsets).
    """
    return TransactionDB.concat(list(dense_near_ties_chunks(n_records, n_core, dropout, n_noise, noise_top,
                                                            noise_decay, seed)))


def long_baskets_chunks(n_records: int = 50_000, n_items: int = 5_000, zipf_exponent: float = 1.0,
                        short_median: float = 6.0, long_share: float = 0.1, long_range: tuple[int, int] = (30, 80),
                        n_bundles: int = 250, bundle_size: tuple[int, int] = (3, 8),
                        bundle_ranks: tuple[int, int] = (50, 2_000), bundles_per_record: float = 0.8,
                        bundle_keep: float = 0.85, seed: int = 0) -> Iterator[TransactionDB]:
    """:func:`long_baskets` as consecutive chunks (their concatenation is the same database)."""
    lo_rank, hi_rank = int(bundle_ranks[0]), min(int(bundle_ranks[1]), int(n_items))
    rng = np.random.default_rng([seed, 24, 2])
    ids = _permutation(rng, int(n_items))
    weights = 1.0 / np.power(np.arange(n_items, dtype=np.float64) + 2.0, zipf_exponent)
    cdf = np.cumsum(weights)
    cdf /= cdf[-1]
    sizes = rng.integers(bundle_size[0], bundle_size[1] + 1, n_bundles)
    # a small universe holds fewer bundles: those that fit in the rank window, in order (none below 50 items)
    n_bundles = int(np.searchsorted(np.cumsum(sizes), max(hi_rank - lo_rank, 0), side="right"))
    sizes = sizes[:n_bundles]
    members = rng.choice(np.arange(lo_rank, max(hi_rank, lo_rank)), size=int(sizes.sum()), replace=False)
    starts = np.concatenate([[0], np.cumsum(sizes)])
    bundle_w = 1.0 / np.power(np.arange(max(n_bundles, 1), dtype=np.float64) + 1.0, 0.8)
    bundle_cdf = np.cumsum(bundle_w) / bundle_w.sum()
    sigma = 0.6
    for lo in range(0, int(n_records), _CHUNK):
        m = min(_CHUNK, int(n_records) - lo)
        long_ = rng.random(m) < long_share
        short_len = np.clip(np.ceil(rng.lognormal(np.log(short_median), sigma, m)), 1, long_range[0] - 1)
        long_len = rng.integers(long_range[0], long_range[1] + 1, m)
        lengths = np.where(long_, long_len, short_len).astype(np.int64)
        base_items = np.searchsorted(cdf, rng.random(int(lengths.sum())), side="right").clip(0, n_items - 1)
        base_rows = np.repeat(np.arange(m, dtype=np.int64), lengths)
        n_b = rng.poisson(bundles_per_record if n_bundles else 0.0, m)
        chosen = np.minimum(np.searchsorted(bundle_cdf, rng.random(int(n_b.sum())), side="right"), n_bundles - 1)
        b_rows = np.repeat(np.arange(m, dtype=np.int64), n_b)
        per = sizes[chosen]
        flat_rows = np.repeat(b_rows, per)
        offs = np.repeat(starts[chosen], per) + (np.arange(int(per.sum())) - np.repeat(np.cumsum(per) - per, per))
        kept = rng.random(offs.size) < bundle_keep
        rows = np.concatenate([base_rows, flat_rows[kept]])
        items = np.concatenate([base_items, members[offs[kept]]])
        yield TransactionDB.from_pairs(rows, ids[items], m, int(n_items))


def long_baskets(n_records: int = 50_000, n_items: int = 5_000, zipf_exponent: float = 1.0,
                 short_median: float = 6.0, long_share: float = 0.1, long_range: tuple[int, int] = (30, 80),
                 n_bundles: int = 250, bundle_size: tuple[int, int] = (3, 8), bundle_ranks: tuple[int, int] = (50, 2_000),
                 bundles_per_record: float = 0.8, bundle_keep: float = 0.85, seed: int = 0) -> TransactionDB:
    """Sparse baskets, long ones among them, with bundles of mid-frequency items.

    A record draws ``L`` items (with repetition, kept once) from a Zipf-like popularity p(i) ~ 1/(i+2)^s over
    ``n_items`` items; L is log-normal with median ``short_median`` (cut below ``long_range[0]``) for most
    records and uniform on ``long_range`` (30-80 items) for a share ``long_share`` of them. It then adds
    Poisson(``bundles_per_record``) bundles, chosen with popularity ~ 1/b^0.8 among ``n_bundles`` bundles of
    3-8 distinct items whose popularity ranks lie in ``bundle_ranks`` (items outside the head), each bundle
    item kept with probability ``bundle_keep``. Item ids are a random permutation.

    Why: retail (the shared sparse set) has baskets as long (mean 10.3, up to 76) over 16,470 items, but its
    frequent itemsets are mostly the top few items and their pairs; here mid-frequency items are bought
    together, so a release that keeps only the most frequent items loses both the basket lengths and the
    co-occurrences below the head. With the defaults the mean length is 14.9 (median 11, maximum 84),
    10.5 % of the records hold 30 items or more, and the top 100 itemsets are 32 items, 51 pairs, 16
    triples and a quadruple: 15 of the pairs and all the longer itemsets lie inside the most popular
    bundle, whose items co-occur 13 times more often than their supports alone would give (the other pairs,
    of head items, under 2 times); the other bundles' itemsets follow below the top 100. A universe below 2,000 items holds fewer
    bundles (those that fit in the rank window), below 50 none.
    """
    return TransactionDB.concat(list(long_baskets_chunks(n_records, n_items, zipf_exponent, short_median,
                                                         long_share, long_range, n_bundles, bundle_size,
                                                         bundle_ranks, bundles_per_record, bundle_keep, seed)))


# name -> (chunk generator taking (records, items, mean_length, seed), default records, default items or None
# when the shape fixes its universe, expected mean length for the memory bound, one-line description)
TRANSACTION_SHAPES: dict[str, tuple[Any, int, int, float, str]] = {
    "kosarak": (lambda n, items, mean, seed: kosarak_like_chunks(n, items, mean, 1.0, seed, chunk_records=1 << 18),
                1_000_000, 41_270, 8.0, "sparse click-stream, Zipf-like items, log-normal lengths (kosarak's shape)"),
    "dense-ties": (lambda n, items, mean, seed: dense_near_ties_chunks(n, seed=seed),
                   20_000, 120, 35.0, "dense: 30 core items in nearly every record, top itemsets tie near N"),
    "long-baskets": (lambda n, items, mean, seed: long_baskets_chunks(n, items, seed=seed),
                     50_000, 5_000, 14.0, "sparse long baskets (mean ~14, 10% of 30-80 items), bundles of "
                                          "mid-frequency items"),
}


def write_transaction_shape(handle: BinaryIO, shape: str, n_records: int | None = None, n_items: int | None = None,
                            mean_length: float | None = None, seed: int = 0) -> tuple[int, int, float]:
    """Write a shape of :data:`TRANSACTION_SHAPES` as FIMI text (labels 1..n_items) chunk by chunk; returns
    (N, n_items, mean length). ``n_items`` applies to kosarak and long-baskets, ``mean_length`` to kosarak."""
    from .fimi import format_int_records

    make, default_n, default_items, default_mean, _ = TRANSACTION_SHAPES[shape]
    n_records = default_n if n_records is None else int(n_records)
    n_items = default_items if n_items is None or shape == "dense-ties" else int(n_items)
    mean_length = default_mean if mean_length is None else float(mean_length)
    n, entries = 0, 0
    for chunk in make(n_records, n_items, mean_length, seed):
        handle.write(format_int_records(chunk, first_label=1))
        n += chunk.n_records
        entries += int(chunk.items.size)
    return n, n_items, entries / max(n, 1)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def skewed_label_table(n_rows: int = 30_000, positive_rate: float = 0.05, seed: int = 0) -> tuple[Any, dict]:
    """A clinic-like table with a rare class, and its schema: (pandas DataFrame, schema mapping).

    Attributes (public bounds and taxonomies in the schema): age (integer 18..90, normal 48 +- 17);
    sex; region (Urban: centre, suburb / Rural: town, village, farm); smoking (never / Ever: former,
    current; more current smokers among young men); bmi (real, 12..60, rises with age and in rural
    regions); systolic blood pressure (integer; 105 + 0.45 age + 0.9 (bmi - 26) + 6 if current smoker +
    noise); cholesterol (integer; rises with age and bmi); visits (integer count, Poisson, rises with age
    and bmi). The class ``event`` (no/yes) is 1 with probability sigmoid(b0 + 0.05 (age - 48) + 0.03
    (systolic - 130) + 0.9 current + 0.4 former + 0.08 (bmi - 26) + 0.01 (chol - 200) + 0.3 male), b0 set
    by bisection so the mean probability is ``positive_rate`` (95/5 by default).

    Why: Adult's class is 24/76 and its numeric attributes are nearly independent; a rare class and
    attributes that move together test whether a synthetic table keeps the minority class and the joint
    ranges at all (a uniform table and "always no" are strong baselines here).
    """
    import pandas as pd

    rng = np.random.default_rng([seed, 24, 3])
    n = int(n_rows)
    age = np.clip(np.rint(rng.normal(48, 17, n)), 18, 90)
    male = rng.random(n) < 0.5
    region_names = ["centre", "suburb", "town", "village", "farm"]
    region = rng.choice(5, size=n, p=[0.35, 0.3, 0.15, 0.12, 0.08])
    rural = region >= 2
    p_current = np.clip(0.12 + 0.1 * male - 0.003 * (age - 48), 0.02, 0.6)
    p_former = np.clip(0.15 + 0.004 * (age - 48), 0.02, 0.6)
    u = rng.random(n)
    smoking = np.where(u < p_current, 2, np.where(u < p_current + p_former, 1, 0))
    bmi = np.clip(np.round(rng.normal(26 + 0.05 * (age - 48) + 1.0 * rural, 4.5), 1), 12.0, 59.9)
    systolic = np.clip(np.rint(105 + 0.45 * age + 0.9 * (bmi - 26) + 6 * (smoking == 2) + rng.normal(0, 11, n)),
                       80, 219)
    chol = np.clip(np.rint(170 + 0.8 * age + 1.5 * (bmi - 26) + rng.normal(0, 30, n)), 100, 399)
    visits = np.minimum(rng.poisson(np.exp(0.3 + 0.02 * (age - 18) + 0.04 * (bmi - 26))), 59)
    z = (0.05 * (age - 48) + 0.03 * (systolic - 130) + 0.9 * (smoking == 2) + 0.4 * (smoking == 1)
         + 0.08 * (bmi - 26) + 0.01 * (chol - 200) + 0.3 * male)
    lo, hi = -20.0, 20.0
    for _ in range(60):  # mean sigmoid(b0 + z) is increasing in b0
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if float(_sigmoid(mid + z).mean()) < positive_rate else (lo, mid)
    event = rng.random(n) < _sigmoid((lo + hi) / 2 + z)
    frame = pd.DataFrame({
        "age": age.astype(np.int64), "sex": np.where(male, "male", "female"),
        "region": np.asarray(region_names)[region], "smoking": np.asarray(["never", "former", "current"])[smoking],
        "bmi": bmi, "systolic": systolic.astype(np.int64), "cholesterol": chol.astype(np.int64),
        "visits": visits.astype(np.int64), "event": np.where(event, "yes", "no"),
    })
    schema = {
        "format": "dprelease-table-schema/1", "name": "clinic",
        "class": {"name": "event", "values": ["no", "yes"]},
        "attributes": [
            {"name": "age", "type": "numeric", "bounds": [18, 91], "integer": True},
            {"name": "sex", "type": "categorical", "taxonomy": {"Any": ["female", "male"]}},
            {"name": "region", "type": "categorical",
             "taxonomy": {"Any": [{"Urban": ["centre", "suburb"]}, {"Rural": ["town", "village", "farm"]}]}},
            {"name": "smoking", "type": "categorical",
             "taxonomy": {"Any": ["never", {"Ever": ["former", "current"]}]}},
            {"name": "bmi", "type": "numeric", "bounds": [12, 60], "integer": False},
            {"name": "systolic", "type": "numeric", "bounds": [80, 220], "integer": True},
            {"name": "cholesterol", "type": "numeric", "bounds": [100, 400], "integer": True},
            {"name": "visits", "type": "numeric", "bounds": [0, 60], "integer": True},
        ],
    }
    return frame, schema


def unlabelled_table(n_rows: int = 30_000, seed: int = 0) -> tuple[Any, dict]:
    """A taxi-trip-like table without a class attribute, and its schema (no ``class`` entry).

    hour (integer 0..23, peaks at 8 and 18); day (Weekday: mon..fri / Weekend: sat, sun); zone (Centre: c1-c3
    / Inner: i1-i4 / Outer: o1-o5, centre most frequent); distance (real km, log-normal, median 3 km, longer
    from outer zones, heavy tail to 100); duration (integer minutes, about 2.2 min per km, slower at rush hour);
    passengers (1..6); fare (real, 3.5 + 1.8 distance + 0.35 duration + noise); payment (cash / Electronic:
    card, app; cash less frequent at night and in the centre); tip (real, zero for cash, 5-25 % of the fare
    otherwise).

    Why: a synthetic table needs no class, yet RPS's schemas must declare one today; and the attributes here
    are heavy-tailed and nearly functions of one another (distance, duration, fare, tip), unlike Adult's.
    """
    import pandas as pd

    rng = np.random.default_rng([seed, 24, 4])
    n = int(n_rows)
    hour = np.where(rng.random(n) < 0.5, rng.normal(8.5, 2.0, n), rng.normal(18, 3.0, n))
    hour = np.mod(np.rint(hour), 24).astype(np.int64)
    day = rng.choice(7, size=n, p=[0.15, 0.15, 0.15, 0.16, 0.17, 0.12, 0.10])
    zones = ["c1", "c2", "c3", "i1", "i2", "i3", "i4", "o1", "o2", "o3", "o4", "o5"]
    zw = 1.0 / np.power(np.arange(12) + 1.0, 0.9)
    zone = rng.choice(12, size=n, p=zw / zw.sum())
    outer = zone >= 7
    distance = np.clip(np.round(rng.lognormal(np.log(3.0) + 0.6 * outer, 0.8), 2), 0.1, 99.99)
    rush = ((hour >= 7) & (hour <= 9)) | ((hour >= 17) & (hour <= 19))
    duration = np.clip(np.rint(2 + 2.2 * distance * (1 + 0.5 * rush) + rng.normal(0, 3, n)), 1, 299).astype(np.int64)
    passengers = np.minimum(1 + rng.poisson(0.4 + 0.5 * (day >= 5)), 6).astype(np.int64)
    fare = np.clip(np.round(3.5 + 1.8 * distance + 0.35 * duration + rng.normal(0, 1.5, n), 2), 2.5, 999.99)
    p_cash = np.clip(0.35 - 0.15 * (zone < 3) + 0.15 * ((hour < 6) | (hour >= 22)), 0.05, 0.9)
    u = rng.random(n)
    payment = np.where(u < p_cash, 0, np.where(u < p_cash + (1 - p_cash) * 0.6, 1, 2))
    tip = np.where(payment == 0, 0.0, np.round(fare * rng.uniform(0.05, 0.25, n), 2))
    tip = np.clip(tip, 0.0, 199.99)
    frame = pd.DataFrame({
        "hour": hour, "day": np.asarray(["mon", "tue", "wed", "thu", "fri", "sat", "sun"])[day],
        "zone": np.asarray(zones)[zone], "distance": distance, "duration": duration, "passengers": passengers,
        "fare": fare, "payment": np.asarray(["cash", "card", "app"])[payment], "tip": tip,
    })
    schema = {
        "format": "dprelease-table-schema/1", "name": "trips",
        "attributes": [
            {"name": "hour", "type": "numeric", "bounds": [0, 24], "integer": True},
            {"name": "day", "type": "categorical",
             "taxonomy": {"Any": [{"Weekday": ["mon", "tue", "wed", "thu", "fri"]}, {"Weekend": ["sat", "sun"]}]}},
            {"name": "zone", "type": "categorical",
             "taxonomy": {"Any": [{"Centre": zones[:3]}, {"Inner": zones[3:7]}, {"Outer": zones[7:]}]}},
            {"name": "distance", "type": "numeric", "bounds": [0, 100], "integer": False},
            {"name": "duration", "type": "numeric", "bounds": [1, 300], "integer": True},
            {"name": "passengers", "type": "numeric", "bounds": [1, 7], "integer": True},
            {"name": "fare", "type": "numeric", "bounds": [0, 1000], "integer": False},
            {"name": "payment", "type": "categorical", "taxonomy": {"Any": ["cash", {"Electronic": ["card", "app"]}]}},
            {"name": "tip", "type": "numeric", "bounds": [0, 200], "integer": False},
        ],
    }
    return frame, schema


def write_table_with_schema(frame: Any, schema: dict, csv_path: str | os.PathLike,
                            schema_path: str | os.PathLike, about: str = "") -> None:
    """Write a generated table as CSV (header row) and its schema as YAML beside it (``about``: comment lines
    at the top of the schema, e.g. the call that generated it)."""
    import yaml

    frame.to_csv(csv_path, index=False)
    header = "".join(f"# {line}\n" for line in about.splitlines())
    Path(schema_path).write_text(header + yaml.safe_dump(schema, sort_keys=False), encoding="utf-8")


def hub_graph(n_nodes: int = 5_000, edges_per_node: int = 4, triangle_prob: float = 0.3, seed: int = 0) -> Any:
    """A heavy-tailed graph with hubs: Holme and Kim's power-law cluster graph (networkx), preferential
    attachment of ``edges_per_node`` edges per new node, each followed by a triangle with probability
    ``triangle_prob``. With the defaults: mean degree 8, median 5, maximum about 350 (99th percentile 42).

    Why: the collaboration graphs' maximum degrees are 81 and 65 (facebook's 1,045 is one hub in a
    small-world graph); here hundreds of nodes lie above every usual degree bound theta, so the projection
    cuts a visible share of the edges and the release must get both the bulk and the cut tail right."""
    import networkx as nx

    return nx.powerlaw_cluster_graph(int(n_nodes), int(edges_per_node), float(triangle_prob), seed=int(seed))


def near_regular_graph(n_nodes: int = 4_000, degree: int = 24, drop_share: float = 0.05, seed: int = 0) -> Any:
    """A near-regular graph: a random ``degree``-regular graph (networkx) with a share ``drop_share`` of its
    edges removed at random: with the defaults 89 % of the nodes have degree 22, 23 or 24, all lie in 18..24
    (mean 22.8, sd 1.1).

    Why: every shared graph has a skewed degree distribution with most nodes at small degrees; a sequence
    concentrated on one value far from 0 tests whether a release puts its mass at the right place rather
    than spreading it over [0, theta] (its histogram is one spike, so a KS or EMD error shows at once)."""
    import networkx as nx

    rng = np.random.default_rng([seed, 24, 5])
    g = nx.random_regular_graph(int(degree), int(n_nodes), seed=int(rng.integers(2**31)))
    edges = sorted(g.edges())
    drop = rng.choice(len(edges), size=int(round(drop_share * len(edges))), replace=False)
    g.remove_edges_from([edges[i] for i in drop.tolist()])
    return g


def write_edge_list(graph: Any, path: str | os.PathLike) -> int:
    """Write ``graph``'s edges as a SNAP-style edge list (``u<TAB>v`` per line, u < v, sorted); returns the
    number of edges. Isolated nodes cannot appear in an edge list (pass a node list to ``degrees``)."""
    edges = sorted((min(u, v), max(u, v)) for u, v in graph.edges())
    with open(path, "w", encoding="utf-8") as fh:
        fh.writelines(f"{u}\t{v}\n" for u, v in edges)
    return len(edges)
