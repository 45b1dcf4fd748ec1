"""Random sources for every mechanism: a secure default and a seeded experiment mode.

* :class:`SecureNoise` (default): exact discrete Laplace and floating-point-safe
  Laplace from OpenDP's vetted samplers (which read the operating system's CSPRNG);
  uniforms, Gumbels, integer choices and binomials from ``os.urandom``.
* :class:`SeededNoise` (``--seed``): numpy's PCG64 with a fixed seed. Fast and
  reproducible, for experiments only; it is *not* hardened against floating-point
  attacks, and every manifest records that a release was made with it.

Only :mod:`dprelease.privacy` draws noise; algorithms ask a mechanism for it.
"""

from __future__ import annotations

import math
import os
from abc import ABC, abstractmethod
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from ..errors import ParameterError

if TYPE_CHECKING:
    from opendp.mod import Measurement

__all__ = ["NoiseSource", "SecureNoise", "SeededNoise", "make_noise", "geometric_from_discrete_laplace",
           "sequential_gumbel_rounds"]

_TWO_53 = float(2**53)


class NoiseSource(ABC):
    """Interface of a random source. ``mode`` and ``seed`` go into every manifest.

    ``exact_selection`` is true when :meth:`gumbel_argmax` and :meth:`gumbel_top_k` sample the exponential
    mechanism's law exactly (no float Gumbel); mechanisms then avoid float-only shortcuts as well.
    """

    mode: str = "abstract"
    seed: int | None = None
    exact_selection: bool = False

    @abstractmethod
    def discrete_laplace(self, scale: float, size: int) -> np.ndarray:
        """``size`` draws with P(x) proportional to exp(-|x|/scale), x integer (int64)."""

    @abstractmethod
    def laplace(self, scale: float, size: int) -> np.ndarray:
        """``size`` draws of continuous Laplace(0, scale) (float64)."""

    @abstractmethod
    def uniform(self, size: int) -> np.ndarray:
        """``size`` uniforms in the open interval (0, 1)."""

    @abstractmethod
    def integers(self, high: int, size: int) -> np.ndarray:
        """``size`` uniform integers in [0, high)."""

    @abstractmethod
    def binomial(self, n: int, p: float) -> int:
        """One Binomial(n, p) draw."""

    def add_laplace(self, values: np.ndarray, scale: float) -> np.ndarray:
        """``values`` (float64) plus i.i.d. continuous Laplace(0, scale) noise.

        The secure source hands the true values to OpenDP's measurement, which adds the noise and rounds
        on one lattice whatever the value (floating-point safe); adding noise drawn around 0 afterwards
        would undo that. The seeded source adds numpy draws (not hardened).
        """
        values = np.asarray(values, dtype=np.float64)
        out: np.ndarray = values + self.laplace(scale, values.size).reshape(values.shape)
        return out

    def gumbel(self, size: int) -> np.ndarray:
        """Standard Gumbel draws, -log(-log U): the noise of the Gumbel-max exponential mechanism."""
        out: np.ndarray = -np.log(-np.log(self.uniform(size)))
        return out

    def gumbel_argmax(self, scores: np.ndarray, scale: float, log_base_measure: np.ndarray | None = None) -> int:
        """An index i drawn with probability proportional to mu_i * exp(scores_i / scale) (exponential mechanism).

        Default: Gumbel-max in log space, argmax(scores/scale + log mu + G), with this source's float Gumbels
        (fast; not hardened against floating-point attacks). :class:`SecureNoise` samples it exactly.
        """
        logw = np.asarray(scores, dtype=np.float64) / scale
        if log_base_measure is not None:
            logw = logw + np.asarray(log_base_measure, dtype=np.float64)
        return int(np.argmax(logw + self.gumbel(logw.size)))

    def gumbel_top_k(self, scores: np.ndarray, k: int, scale: float) -> np.ndarray:
        """k distinct indices with the law of k rounds of :meth:`gumbel_argmax` without replacement, in pick order.

        Default: the k largest of scores/scale + G (one-shot Gumbel top-k, the same law as the rounds).
        """
        keyed = np.asarray(scores, dtype=np.float64) / scale
        keyed = keyed + self.gumbel(keyed.size)
        k = int(min(k, keyed.size))
        if k <= 0:
            return np.zeros(0, dtype=np.int64)
        top = np.argpartition(-keyed, k - 1)[:k]
        return top[np.argsort(-keyed[top], kind="stable")].astype(np.int64)

    def permutation(self, n: int) -> np.ndarray:
        """A uniformly random permutation of range(n) (sort by independent uniforms)."""
        return np.argsort(self.uniform(n), kind="stable")

    def describe(self) -> dict[str, object]:
        return {"mode": self.mode, "seed": self.seed}


def geometric_from_discrete_laplace(y: np.ndarray) -> np.ndarray:
    """Map discrete Laplace draws to Geometric draws on {0, 1, ...} with P(j) = (1-t) t^j.

    With t = exp(-1/scale), x >= 0 maps to x and x < 0 maps to -x-1; the two
    pre-images of j have mass c(t^j + t^(j+1)) = (1-t) t^j, so this is exact.
    """
    return np.where(y >= 0, y, -y - 1)


@lru_cache(maxsize=256)
def _opendp_laplace(scale: float, atom: str) -> Measurement:
    """OpenDP's Laplace measurement on vectors: exact discrete Laplace for i64, float-safe for f64.

    Imports the core modules only (``opendp.prelude`` also pulls in scikit-learn).
    """
    import opendp.domains as domains
    import opendp.measurements as measurements
    import opendp.metrics as metrics
    from opendp.mod import enable_features

    enable_features("contrib")
    atom_domain = domains.atom_domain(T=atom) if atom == "i64" else domains.atom_domain(T=atom, nan=False)
    return measurements.make_laplace(domains.vector_domain(atom_domain), metrics.l1_distance(T=atom), scale=scale)


@lru_cache(maxsize=256)
def _opendp_gumbel_max(scale: float) -> Measurement:
    """OpenDP's report-noisy-max with *Gumbel* noise of the given scale (an exact sampler).

    In opendp 0.16 the Gumbel variant of ``make_noisy_max`` is the one built for
    ``zero_concentrated_divergence`` (the ``max_divergence`` one adds exponential noise: permute-and-flip,
    a different law; the deprecated ``make_report_noisy_max_gumbel`` is that one too). We use it for its
    sampler only: argmax of score_i + Gumbel(scale), compared in exact arithmetic, which *is* the
    exponential mechanism P(i) ~ exp(score_i/scale); the pure-DP claim (epsilon = 2*Delta/scale, or
    Delta/scale for monotone scores) is McSherry-Talwar's, charged by the caller.
    """
    import opendp.domains as domains
    import opendp.measurements as measurements
    import opendp.measures as measures
    import opendp.metrics as metrics
    from opendp.mod import enable_features

    enable_features("contrib")
    space = (domains.vector_domain(domains.atom_domain(T="f64", nan=False)), metrics.linf_distance(T="f64"))
    return measurements.make_noisy_max(*space, measures.zero_concentrated_divergence(), scale=scale)


def sequential_gumbel_rounds(noise: "NoiseSource", scores: np.ndarray, k: int, scale: float, n_implicit: int = 0,
                             implicit_score: float = 0.0) -> tuple[np.ndarray, int]:
    """k exponential-mechanism rounds without replacement (P ~ exp(score/scale) each), via ``noise.gumbel_argmax``.

    Candidates with equal scores are exchangeable, so each round picks a *score class* with base measure = the
    number of its members not yet picked (``n_implicit`` further candidates scoring ``implicit_score`` are one
    more class), then a member uniformly (exact integers; implicit members are drawn by the caller). This is
    exactly the law of picking among the members one by one, and costs per round the number of distinct
    scores: 583 for retail's 16,470 item counts, a few thousand for TF's 3.6 million pair counts.
    Returns (explicit indices in pick order, number of implicit candidates picked).
    """
    scores = np.asarray(scores, dtype=np.float64)
    values, inverse = np.unique(scores, return_inverse=True)
    inverse = inverse.reshape(-1)
    order = np.argsort(inverse, kind="stable")
    sizes = np.bincount(inverse, minlength=values.size).astype(np.int64)
    bounds = np.concatenate([[0], np.cumsum(sizes)])
    members = [order[bounds[g] : bounds[g + 1]].copy() for g in range(values.size)]
    class_scores = np.append(values, float(implicit_score))
    left = np.append(sizes, int(n_implicit))
    k = int(min(k, int(left.sum())))
    picked: list[int] = []
    implicit_picked = 0
    for _ in range(k):
        live = np.flatnonzero(left > 0)
        g = int(live[noise.gumbel_argmax(class_scores[live], scale, np.log(left[live].astype(np.float64)))])
        if g == values.size:
            implicit_picked += 1
        else:
            j = int(noise.integers(int(left[g]), 1)[0])
            pool = members[g]
            picked.append(int(pool[j]))
            pool[j] = pool[left[g] - 1]  # swap-remove: the first left[g] entries are the members not yet picked
        left[g] -= 1
    return np.asarray(picked, dtype=np.int64), implicit_picked


class SecureNoise(NoiseSource):
    """Default source: OpenDP's exact samplers and the operating system's CSPRNG.

    Vectors go to OpenDP as contiguous numpy arrays, which it takes as one buffer; a Python list is checked and
    converted element by element in Python (7 ms more for retail's 16,470 item supports)."""

    mode = "secure"
    seed = None
    exact_selection = True

    def gumbel_argmax(self, scores: np.ndarray, scale: float, log_base_measure: np.ndarray | None = None) -> int:
        # Exact: OpenDP compares score_i + Gumbel(scale) in arbitrary precision. The base measure is folded
        # into the score, s_i = q_i + scale * log mu_i (a float step on public mu and the score: known limit).
        utilities = np.asarray(scores, dtype=np.float64)
        if log_base_measure is not None:
            utilities = utilities + float(scale) * np.asarray(log_base_measure, dtype=np.float64)
        _check_utilities(utilities)
        return int(_opendp_gumbel_max(float(scale))(np.ascontiguousarray(utilities, dtype=np.float64)))

    def gumbel_top_k(self, scores: np.ndarray, k: int, scale: float) -> np.ndarray:
        # Exact sequential rounds over score classes (OpenDP's make_noisy_top_k samples the same law but
        # took 17-23 s on retail's 16,470 item counts; the rounds take about 1 s).
        utilities = np.asarray(scores, dtype=np.float64)
        _check_utilities(utilities)
        return sequential_gumbel_rounds(self, utilities, k, scale)[0]

    def discrete_laplace(self, scale: float, size: int) -> np.ndarray:
        if size == 0:
            return np.zeros(0, dtype=np.int64)
        meas = _opendp_laplace(float(scale), "i64")
        return np.asarray(meas(np.zeros(int(size), dtype=np.int64)), dtype=np.int64)

    def laplace(self, scale: float, size: int) -> np.ndarray:
        if size == 0:
            return np.zeros(0, dtype=np.float64)
        meas = _opendp_laplace(float(scale), "f64")
        return np.asarray(meas(np.zeros(int(size), dtype=np.float64)), dtype=np.float64)

    def add_laplace(self, values: np.ndarray, scale: float) -> np.ndarray:
        values = np.asarray(values, dtype=np.float64)
        if values.size == 0:
            return values.copy()
        if not np.isfinite(values).all():
            raise ParameterError("Laplace mechanism: every value must be a finite number")
        meas = _opendp_laplace(float(scale), "f64")
        return np.asarray(meas(np.ascontiguousarray(values.reshape(-1))), dtype=np.float64).reshape(values.shape)

    def _uint64(self, size: int) -> np.ndarray:
        return np.frombuffer(os.urandom(8 * int(size)), dtype=np.uint64)

    def uniform(self, size: int) -> np.ndarray:
        # 53 random bits, shifted by half a step so 0 and 1 never occur.
        bits = self._uint64(size) >> np.uint64(11)
        return (bits.astype(np.float64) + 0.5) / _TWO_53

    def integers(self, high: int, size: int) -> np.ndarray:
        if high <= 0:
            raise ValueError("high must be positive")
        high = int(high)
        limit = (2**64 // high) * high  # reject the top sliver so every residue is equally likely
        out = np.empty(int(size), dtype=np.int64)
        filled = 0
        while filled < size:
            draw = self._uint64(size - filled)
            draw = draw[draw < np.uint64(limit)] if limit < 2**64 else draw
            take = draw % np.uint64(high)
            out[filled : filled + take.size] = take.astype(np.int64)
            filled += take.size
        return out

    def binomial(self, n: int, p: float) -> int:
        """Binomial(n, p) for any 0 <= n < 2^63, exact up to the float scale of its geometric gaps.

        Geometric skips: the gaps between successes of n Bernoulli(p) trials are i.i.d. Geometric(p)
        (failures before a success); the draw is the number of successes whose position is <= n. Each gap
        is OpenDP's exact discrete Laplace of scale s = -1/log1p(-p), folded onto {0, 1, ...}
        (:func:`geometric_from_discrete_laplace`), which is exactly Geometric with success probability
        p' = 1 - exp(-1/s), within a few ulps of p (the only float step; s is public). No 32-bit API is
        involved, so n >= 2^31 is exact too. Cost: about min(p, 1 - p) * n + 1 gap
        draws (for p > 1/2, n - Binomial(n, 1 - p), where 1 - p is exact).
        """
        n, p = _check_binomial(n, p)
        if n == 0 or p == 0.0:
            return 0
        if p == 1.0:
            return n
        if p > 0.5:
            return n - self.binomial(n, 1.0 - p)
        scale = -1.0 / math.log1p(-p)
        remaining = n  # trials left
        successes = 0
        while True:
            expected = remaining * p
            size = int(min(1 << 20, expected + 6.0 * math.sqrt(expected) + 16.0))
            gaps = geometric_from_discrete_laplace(self.discrete_laplace(scale, size)).astype(np.uint64)
            steps = np.minimum(gaps, np.uint64(remaining)) + np.uint64(1)  # each <= remaining + 1 <= 2^63
            # The running sum passes `remaining` before it can wrap around 2^64 (every step is <= 2^63),
            # so the first index past `remaining` is found correctly even if later sums wrap.
            positions = np.cumsum(steps, dtype=np.uint64)
            past = positions > np.uint64(remaining)
            if past.any():
                return successes + int(np.argmax(past))
            successes += size
            remaining -= int(positions[-1])


def _check_utilities(utilities: np.ndarray) -> None:
    if np.isnan(utilities).any() or np.isposinf(utilities).any():
        raise ParameterError("exponential mechanism: every score must be a number below +inf")


def _check_binomial(n: int, p: float) -> tuple[int, float]:
    if isinstance(n, bool) or int(n) != n or not (0 <= int(n) < 2**63):
        raise ParameterError(f"binomial: n must be a whole number in [0, 2^63), got {n!r}")
    p = float(p)
    if not (0.0 <= p <= 1.0):
        raise ParameterError(f"binomial: p must be a probability in [0, 1], got {p!r}")
    return int(n), p


class SeededNoise(NoiseSource):
    """Experiment mode: numpy PCG64 with a fixed seed (recorded in the manifest)."""

    mode = "seeded"

    def __init__(self, seed: int):
        self.seed = int(seed)
        self.rng = np.random.Generator(np.random.PCG64(self.seed))

    def discrete_laplace(self, scale: float, size: int) -> np.ndarray:
        # Difference of two Geometric(1 - exp(-1/scale)) draws is discrete Laplace.
        p = -math.expm1(-1.0 / float(scale))
        return self.rng.geometric(p, size) - self.rng.geometric(p, size)

    def laplace(self, scale: float, size: int) -> np.ndarray:
        return self.rng.laplace(0.0, float(scale), size)

    def uniform(self, size: int) -> np.ndarray:
        u = self.rng.random(size)
        return np.where(u == 0.0, 0.5 / _TWO_53, u)

    def integers(self, high: int, size: int) -> np.ndarray:
        return self.rng.integers(0, int(high), size, dtype=np.int64)

    def binomial(self, n: int, p: float) -> int:
        n, p = _check_binomial(n, p)
        if n == 0 or p == 0.0:
            return 0
        return int(self.rng.binomial(n, p))

    def gumbel(self, size: int) -> np.ndarray:
        return self.rng.gumbel(0.0, 1.0, size)


def make_noise(seed: int | None = None) -> NoiseSource:
    """Secure noise unless a seed is given (experiment mode).

    >>> make_noise().mode, make_noise(7).mode
    ('secure', 'seeded')
    >>> int(SecureNoise().binomial(2**40, 1.0))
    1099511627776
    """
    return SecureNoise() if seed is None else SeededNoise(seed)
