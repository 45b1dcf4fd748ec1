"""Degree sequences under node differential privacy: RPS and its two baselines (issue 10, docs/rps.md).

Neighbouring graphs differ in one node and all its edges. Every method first projects the graph onto maximum
degree theta (a public bound) by edge addition (:mod:`.projection`), after which one node moves the projected
degrees of the *other* nodes by at most ``deg(x) <= theta`` in total (L1). The sensitivities that follow
(derived in docs/rps.md and checked by brute force in tests/test_rps_degrees.py):

=====================================================================  ===========
quantity of the projected graph (x removed)                              L1 bound
=====================================================================  ===========
degree histogram, or counts of any partition of [0, theta] in ranges    2 theta + 1
summed median qualities -|2L - n| of the regions of one RPS level       2 theta + 1
theta-cumulative histogram C[i] = |{v : deg(v) <= i}|, i = 0..theta     theta + 1
sorted degree sequence, top m (zero-padded), for any fixed m            2 theta
number of nodes                                                         1
=====================================================================  ===========

* ``rps``: RPS on the 1-D domain [0, theta] of degrees (Qardaji & Li, section 5): EM medians and leaf counts
  at sensitivity 2 theta + 1. One node touches several regions, so a level is one charge over all its regions
  (sequential, no parallel composition) and all leaves share one charge.
* ``hay``: Hay, Li, Miklau and Jensen (ICDM 2009): the sorted degree sequence plus Laplace noise, then
  constrained inference (isotonic regression), here at its node-DP sensitivity 2 theta; its length is a noisy
  node count (10% of epsilon).
* ``cumulative``: Day, Li and Lyu (SIGMOD 2016): the theta-cumulative histogram plus noise at sensitivity
  theta + 1, made monotone by isotonic regression (constrained inference), differenced into a histogram.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from ..data.graphs import Graph
from ..errors import ParameterError
from ..privacy import BudgetAccountant, NoiseSource, check_epsilon, noisy_counts
from ..relational.rps import (DEFAULT_SPLIT_SHARE, PointDomain, check_release_size, remaining_budget,
                              rps_partition, synthesize)
from ..release import records_run_start
from .projection import edge_addition

__all__ = ["DEGREE_METHODS", "DEGREE_SUMMARIES", "DegreeRelease", "rps_degrees", "hay_degrees", "cumulative_degrees", "release_degrees",
           "check_theta", "default_degree_depth", "HAY_NODE_SHARE"]

DEGREE_METHODS = ("rps", "hay", "cumulative")
DEGREE_SUMMARIES = ("counts", "cumulative")
HAY_NODE_SHARE = 0.1


@dataclass(frozen=True, eq=False)
class DegreeRelease:
    """A released degree sequence (sorted ascending), the method, theta, the accountant and manifest parts."""

    degrees: np.ndarray
    method: str
    theta: int
    accountant: BudgetAccountant
    manifest: dict[str, object] = field(default_factory=dict)

    @property
    def n_nodes(self) -> int:
        return int(self.degrees.size)


def check_theta(theta: object) -> int:
    """theta must be a whole number >= 1 (ParameterError otherwise)."""
    if isinstance(theta, bool):
        raise ParameterError(f"--theta must be a whole number >= 1, got {theta!r}")
    try:
        value = int(theta)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ParameterError(f"--theta must be a whole number >= 1, got {theta!r}") from None
    if value != theta or value < 1:
        raise ParameterError(f"--theta must be a whole number >= 1, got {theta!r}")
    return value


def default_degree_depth(theta: int) -> int:
    """ceil(log2(theta + 1)): deep enough for fixed partitioning to reach single degrees."""
    return max(1, math.ceil(math.log2(theta + 1)))


def _isotonic(values: np.ndarray) -> np.ndarray:
    from scipy.optimize import isotonic_regression

    if values.size == 0:
        return np.zeros(0)
    return np.asarray(isotonic_regression(np.asarray(values, dtype=np.float64), increasing=True).x)


@records_run_start
def rps_degrees(projected: np.ndarray, theta: int, epsilon: float, *, noise: NoiseSource, depth: int | None = None,
                split_share: float | None = None, partitioning: str = "balanced",
                summarize: str = "counts") -> DegreeRelease:
    """RPS on [0, theta]: node-DP sensitivity 2 theta + 1 for the medians.

    ``summarize="counts"`` (faithful): a noisy count per leaf (sensitivity 2 theta + 1), clamped at 0.
    ``summarize="cumulative"`` (improvement, measured in docs/rps.md): noisy cumulative counts at the leaves'
    upper ends, C(b) = |{v : deg(v) < b}| (sensitivity theta + 1), made nondecreasing by isotonic regression and
    differenced into leaf counts.
    """
    theta = check_theta(theta)
    if summarize not in DEGREE_SUMMARIES:
        raise ParameterError(f"--summarize must be one of {DEGREE_SUMMARIES}, got {summarize!r}")
    h = default_degree_depth(theta) if depth is None else depth
    delta = 2 * theta + 1
    domain = PointDomain(("degree",), np.array([0.0]), np.array([float(theta + 1)]), np.array([True]))
    part = rps_partition([np.asarray(projected, dtype=np.int64)], domain, epsilon, noise=noise, depth=h,
                         split_share=split_share, partitioning=partitioning, composition="nodes", sensitivity=delta,
                         count_leaves=summarize == "counts")
    if summarize == "cumulative":
        cum_exact = np.cumsum(part.counts)  # leaves in domain order: C at each leaf's upper end
        e_sum = remaining_budget(part.accountant.total, part.scope)
        noisy = noisy_counts(cum_exact, e_sum, scope=part.scope, noise=noise, sensitivity=theta + 1,
                             label="cumulative counts at the leaf boundaries (sensitivity theta + 1)")
        fit = np.maximum(np.rint(_isotonic(noisy.astype(np.float64))), 0).astype(np.int64)
        part = replace(part, counts=np.diff(np.concatenate([[0], fit])), count_epsilon=np.full(part.n_leaves, e_sum))
    check_release_size("degrees --method rps", int(np.maximum(part.counts, 0).sum()), 1)
    seed = noise.integers(2**62, 2)
    rng = np.random.Generator(np.random.PCG64([int(s) for s in seed]))
    (deg,) = synthesize(part.lo, part.hi, part.counts, domain.integer, rng)
    alpha = (DEFAULT_SPLIT_SHARE if partitioning == "balanced" else 0.0) if split_share is None else float(split_share)
    eps = part.accountant.total
    manifest = {
        "parameters": {"depth": int(h), "split_share": alpha, "partitioning": partitioning, "summarize": summarize},
        "budget_split": {"per_level": alpha * eps / h if h else 0.0, "leaf_counts": part.count_epsilon.max(initial=0.0),
                         "composition": "every level one charge over all its regions; one charge for all leaves"},
        "sensitivity": {"median_quality_per_level": delta,
                        **({"leaf_counts": delta} if summarize == "counts" else {"boundary_cumulative_counts": theta + 1})},
        "leaves": [[int(a), int(b) - 1] for a, b in zip(part.lo[:, 0], part.hi[:, 0])],
    }
    return DegreeRelease(np.sort(np.asarray(deg, dtype=np.int64)), "rps", theta, part.accountant, manifest)


@records_run_start
def hay_degrees(projected: np.ndarray, theta: int, epsilon: float, *, noise: NoiseSource,
                node_share: float = HAY_NODE_SHARE) -> DegreeRelease:
    """Sorted degree sequence + noise (sensitivity 2 theta) + isotonic regression; length = a noisy node count."""
    theta = check_theta(theta)
    eps = check_epsilon(epsilon)
    if not (0.0 < node_share < 1.0):
        raise ParameterError(f"node share must be in (0, 1), got {node_share!r}")
    acc = BudgetAccountant(eps)
    scope = acc.root()
    proj = np.sort(np.asarray(projected, dtype=np.int64))
    n_noisy = int(noisy_counts(np.array([proj.size]), node_share * eps, scope=scope, noise=noise, sensitivity=1,
                               label="node count (sensitivity 1)")[0])
    m = max(1, n_noisy)
    check_release_size("degrees --method hay", m, 1)
    seq = proj[-m:] if proj.size >= m else np.concatenate([np.zeros(m - proj.size, dtype=np.int64), proj])
    e_seq = remaining_budget(eps, scope)
    noisy = noisy_counts(seq, e_seq, scope=scope, noise=noise, sensitivity=2 * theta,
                         label="sorted degree sequence (sensitivity 2 theta)")
    fit = np.clip(np.rint(_isotonic(noisy.astype(np.float64))), 0, theta).astype(np.int64)
    manifest = {
        "parameters": {"node_share": node_share, "constrained_inference": "isotonic regression (PAVA)"},
        "budget_split": {"node_count": node_share * eps, "sorted_sequence": e_seq},
        "sensitivity": {"node_count": 1, "sorted_sequence": 2 * theta},
    }
    return DegreeRelease(np.sort(fit), "hay", theta, acc, manifest)


@records_run_start
def cumulative_degrees(projected: np.ndarray, theta: int, epsilon: float, *, noise: NoiseSource) -> DegreeRelease:
    """theta-cumulative histogram + noise (sensitivity theta + 1), isotonic regression, differenced."""
    theta = check_theta(theta)
    eps = check_epsilon(epsilon)
    acc = BudgetAccountant(eps)
    scope = acc.root()
    hist = np.bincount(np.asarray(projected, dtype=np.int64), minlength=theta + 1)[:theta + 1]
    cum = np.cumsum(hist)
    noisy = noisy_counts(cum, eps, scope=scope, noise=noise, sensitivity=theta + 1,
                         label="theta-cumulative histogram (sensitivity theta + 1)")
    fit = np.maximum(np.rint(_isotonic(noisy.astype(np.float64))), 0).astype(np.int64)
    counts = np.diff(np.concatenate([[0], fit]))
    deg = np.repeat(np.arange(theta + 1, dtype=np.int64), counts)
    manifest = {
        "parameters": {"constrained_inference": "isotonic regression (PAVA) of the cumulative counts"},
        "budget_split": {"cumulative_histogram": eps},
        "sensitivity": {"cumulative_histogram": theta + 1},
    }
    return DegreeRelease(deg, "cumulative", theta, acc, manifest)


@records_run_start
def release_degrees(graph: Graph, theta: int, epsilon: float, *, method: str = "rps", noise: NoiseSource,
                    depth: int | None = None, split_share: float | None = None,
                    partitioning: str = "balanced", summarize: str = "counts") -> DegreeRelease:
    """Project onto max degree theta (edge addition, public random node order), then release by ``method``."""
    theta = check_theta(theta)
    check_epsilon(epsilon)
    if method not in DEGREE_METHODS:
        raise ParameterError(f"--method must be one of {DEGREE_METHODS}, got {method!r}")
    if method != "rps" and (depth is not None or split_share is not None or partitioning != "balanced"
                            or summarize != "counts"):
        raise ParameterError("--depth, --split-share, --partitioning and --summarize apply to --method rps only")
    key = int(noise.integers(2**63 - 1, 1)[0])
    _, projected = edge_addition(graph, theta, key)
    if method == "rps":
        rel = rps_degrees(projected, theta, epsilon, noise=noise, depth=depth, split_share=split_share,
                          partitioning=partitioning, summarize=summarize)
    elif method == "hay":
        rel = hay_degrees(projected, theta, epsilon, noise=noise)
    else:
        rel = cumulative_degrees(projected, theta, epsilon, noise=noise)
    rel.manifest["projection"] = ("edge addition onto max degree theta (Day, Li and Lyu, SIGMOD 2016) in a stable "
                                  "public order: node priorities = keyed hash of the id, key from the noise source")
    return rel
