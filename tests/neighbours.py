"""One shared helper for the neighbouring-dataset tests of every algorithm.

A release is eps-DP when, for neighbours D and D' (one record added or removed) and every event E,
P[E|D] <= e^eps P[E|D'] and P[E|D'] <= e^eps P[E|D]. The helper estimates both probabilities from seeded
runs (deterministic) and allows 5 binomial standard errors on each side (plus 1e-3), like the DiffPart test
it generalises. The black-box audit (dprelease.audit) does the same with chosen events and confidence
bounds; these tests are the quick, per-algorithm guard beside it.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable

from dprelease.privacy import SeededNoise


def event_rates(run: Callable[[object, SeededNoise], object], data: object, events: Callable[[object], Iterable[str]],
                runs: int, seed: int) -> dict[str, float]:
    """The share of ``runs`` seeded runs of ``run(data, noise)`` in which each event occurs."""
    counts: Counter[str] = Counter()
    for r in range(runs):
        counts.update(set(events(run(data, SeededNoise(seed * 1_000_003 + r)))))
    return {event: n / runs for event, n in counts.items()}


def assert_neighbours_within_epsilon(run: Callable[[object, SeededNoise], object], d: object, d_prime: object,
                                     epsilon: float, events: Callable[[object], Iterable[str]], *,
                                     runs: int = 2000, z: float = 5.0) -> dict[str, tuple[float, float]]:
    """Assert P[E|D] <= e^eps P[E|D'] + tolerance (and the reverse) for every event seen on either side."""
    r1 = event_rates(run, d, events, runs, seed=1)
    r2 = event_rates(run, d_prime, events, runs, seed=2)
    bound = math.exp(epsilon)
    out = {}
    for event in sorted(set(r1) | set(r2)):
        p, q = r1.get(event, 0.0), r2.get(event, 0.0)
        se = math.sqrt((p * (1 - p) + q * (1 - q)) / runs) + 1e-3
        assert p <= bound * q + z * bound * se, (event, p, q)
        assert q <= bound * p + z * bound * se, (event, p, q)
        out[event] = (p, q)
    return out
