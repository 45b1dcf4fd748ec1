"""Degree sequences under node differential privacy: RPS and its two baselines (docs/rps.md).

Neighbouring inputs differ in one node x and all its edges, *as the command reads them* (the privacy unit).
Every method first projects the graph onto maximum degree theta (a public bound) by edge addition
(:mod:`.projection`), after which removing x moves the projected degrees of the *other* nodes by at most
``deg(x) <= theta`` in total (L1). What else moves depends on how the input defines the node set:

* ``"declared-nodes"`` (a complete node list is read with the edges, ``--nodes FILE``): x's friends stay, isolated
  if x was their only neighbour, so the node set changes by x alone. Every node is released, degree 0 included.
* ``"edge-list"`` (the edge file alone; the default): the nodes are the ids that occur in the file, so removing
  x's lines also removes every friend whose only edge was to x: the node set moves by up to x's *raw* degree,
  which theta does not bound. Only nodes of projected degree >= 1 are released. A friend that vanishes had
  projected degree 1 (its edge to x kept, at most theta of them: they are among the unit moves above) or 0 (not
  released either way), so every statistic of the nodes of projected degree >= 1 is bounded (lemma in
  docs/rps.md, "Degree sequences", checked by brute force on file-level neighbours in tests/graphs/test_rps_degrees.py).

L1 sensitivities (d = deg(x) <= theta; :func:`degree_sensitivities`):

============================================================  ===============  =================
quantity of the projected graph (x removed)                     declared-nodes   edge-list (deg>=1)
============================================================  ===============  =================
degree histogram; counts of any partition of the domain        2 theta + 1      2 theta + 1
summed median qualities -|2L - n| of one RPS level              2 theta + 1      2 theta + 1
cumulative counts: C[i] = #{deg <= i}, i = 0..theta             theta + 1        --
tail counts: T[i] = #{deg >= i}, i = 1..theta                   --               2 theta
tail counts at the lower ends of L leaves (RPS, cumulative)     --               min(L, theta) + theta
sorted degree sequence, top m (zero-padded), any fixed m        2 theta          2 theta
number of (released) nodes                                      1                theta + 1
============================================================  ===============  =================

* ``rps``: RPS on the 1-D domain of degrees, [0, theta] or [1, theta] (Qardaji & Li, section 5): EM medians and
  leaf counts at sensitivity 2 theta + 1. One node touches several regions, so a level is one charge over all
  its regions (sequential, no parallel composition) and all leaves share one charge.
* ``hay``: Hay, Li, Miklau and Jensen (ICDM 2009): the sorted degree sequence plus Laplace noise, then
  constrained inference (isotonic regression), here at its node-DP sensitivity 2 theta; its length is a noisy
  node count (10% of epsilon).
* ``cumulative``: Day, Li and Lyu (SIGMOD 2016): the theta-cumulative histogram plus noise at sensitivity
  theta + 1 (declared nodes), or the tail counts at 2 theta (edge list), made monotone by isotonic regression
  (constrained inference) and differenced into a histogram.
* ``cumulative`` with ``leaves="geometric"`` (the command's default, ``--method recommended``): from an edge list,
  the tail counts at the lower ends of public leaves only (:func:`geometric_leaves`: every degree up to
  :data:`FINE_DEGREES`, then leaves about 1/16 of their lower end wide), at sensitivity min(L, theta) + theta
  instead of 2 theta; the leaf counts are spread evenly over each leaf's degrees (post-processing). Up to
  theta = :data:`FINE_DEGREES` the leaves are single degrees and the release is Day et al.'s exactly; with
  declared nodes it is Day et al.'s at every theta (their cumulative counts already cost theta + 1).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np

from ..data.graphs import Graph
from ..errors import ParameterError
from ..privacy import BudgetAccountant, NoiseSource, check_epsilon, noisy_counts
from ..privacy.mechanisms import laplace_scale
from ..privacy.uncertainty import Intervals, count_intervals, dlap_half_width, dlap_sd, manifest_section
from ..relational.rps import (DEFAULT_SPLIT_SHARE, PointDomain, check_release_size, remaining_budget,
                              rps_partition, synthesize)
from ..release import build_manifest, records_run_start
from ..release.degrees import DegreeRelease
from .projection import edge_addition

__all__ = ["DEGREE_METHODS", "DEGREE_SUMMARIES", "DEGREE_MODELS", "EDGE_LIST", "DECLARED_NODES", "DegreeRelease",
           "rps_degrees", "hay_degrees", "cumulative_degrees", "release_degrees", "check_theta", "check_model",
           "default_degree_depth", "check_degree_depth", "degree_sensitivities", "released_degrees",
           "cumulative_statistic", "leaf_cumulative", "node_count", "sorted_top", "neighbours_text", "HAY_NODE_SHARE",
           "degrees_manifest", "CUMULATIVE_LEAVES", "FINE_DEGREES", "NARROW_LEAVES_ABOVE", "geometric_leaves",
           "grid_tail_counts", "spread_evenly"]

DEGREE_METHODS = ("rps", "hay", "cumulative")
DEGREE_SUMMARIES = ("counts", "cumulative")
EDGE_LIST = "edge-list"
DECLARED_NODES = "declared-nodes"
DEGREE_MODELS = (EDGE_LIST, DECLARED_NODES)
HAY_NODE_SHARE = 0.1
CUMULATIVE_LEAVES = ("every", "geometric")
# the geometric leaves: every degree up to FINE_DEGREES is its own leaf (most nodes of sparse graphs sit there and
# KS is decided there); above it a leaf starting at a is a // LEAF_WIDTH_DIVISOR degrees wide (16 leaves per
# doubling), so the tail counts cost min(L, theta) + theta instead of 2 theta at large theta. Above
# NARROW_LEAVES_ABOVE the divisor doubles (32 leaves per doubling: widths 2-3 below 128 instead of 4-7): there a
# wide leaf spreads a crowded stretch of degrees evenly and pools fewer noisy points than Day et al.'s single
# degrees, and over 150 seeds on seven graphs (docs/rps.md, benchmarks/bench_degree_leaves.py) the a // 16 leaves
# lost to Day et al. on a near-regular graph at theta = 128 while the a // 32 leaves won on every graph
FINE_DEGREES = 32
LEAF_WIDTH_DIVISOR = 16
NARROW_LEAVES_ABOVE = 64


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


def check_model(model: object) -> str:
    if model not in DEGREE_MODELS:
        raise ParameterError(f"the neighbour model must be one of {DEGREE_MODELS}, got {model!r}")
    return str(model)


def neighbours_text(model: str) -> str:
    """The privacy unit in words, for the manifest."""
    if check_model(model) == DECLARED_NODES:
        return ("one node and all its incident edges: its line in the node list and its lines in the edge file "
                "(its friends stay, isolated if it was their only neighbour)")
    return ("one node and all its incident edges: its lines in the edge file (friends left with no edge vanish "
            "from the input with it)")


def _low(model: str) -> int:
    """The smallest released degree: 0 with declared nodes, 1 from an edge list alone."""
    return 0 if check_model(model) == DECLARED_NODES else 1


def default_degree_depth(theta: int, model: str = EDGE_LIST) -> int:
    """ceil(log2(number of released degree values)): deep enough for fixed partitioning to reach single degrees.

    The values are 0..theta with declared nodes, 1..theta from an edge list alone."""
    values = int(theta) + 1 - _low(model)
    return max(1, math.ceil(math.log2(values))) if values > 1 else 1


def check_degree_depth(theta: int, depth: int, model: str = EDGE_LIST) -> str | None:
    """A public check of RPS's ``depth`` on the degree domain: refused (ParameterError) when no level past
    ``values - 1`` can split anything (the extra levels would only thin every level's median budget); a
    warning (returned) when deeper than :func:`default_degree_depth`, where fixed midpoints already reach single
    degrees; None otherwise."""
    theta = check_theta(theta)
    values = theta + 1 - _low(model)
    useful = default_degree_depth(theta, model)
    most = max(useful, values - 1)
    if depth > most:
        raise ParameterError(f"--depth {depth} is meaningless for theta = {theta}: the {values} degree value(s) "
                             f"cannot be split more than {most} time(s) along any path, and every extra level "
                             f"only thins each level's median budget (the default is {useful})")
    if depth > useful:
        return (f"--depth {depth} is past its useful range for theta = {theta}: fixed midpoints reach single "
                f"degrees at depth {useful} (the default); deeper levels only split what the balanced medians "
                f"left uneven, and each takes a share of the median budget")
    return None


def degree_sensitivities(theta: int, model: str = EDGE_LIST, n_leaves: int | None = None) -> dict[str, int]:
    """Every L1 sensitivity of the module's table (docs/rps.md, "Degree sequences") for one neighbour model.

    ``n_leaves``: the number L of RPS leaves, for the tail counts at their lower ends (edge list)."""
    theta = check_theta(theta)
    declared = check_model(model) == DECLARED_NODES
    leaves = theta if n_leaves is None else min(int(n_leaves), theta)
    return {"histogram": 2 * theta + 1, "median_quality_per_level": 2 * theta + 1,
            "cumulative": theta + 1 if declared else 2 * theta,
            "boundary_cumulative": theta + 1 if declared else leaves + theta,
            "sorted_sequence": 2 * theta, "node_count": 1 if declared else theta + 1}


def released_degrees(projected: np.ndarray, model: str = EDGE_LIST) -> np.ndarray:
    """The projected degrees of the nodes the model releases: all (declared nodes) or those >= 1 (edge list)."""
    deg = np.asarray(projected, dtype=np.int64)
    return deg if check_model(model) == DECLARED_NODES else deg[deg >= 1]


def cumulative_statistic(projected: np.ndarray, theta: int, model: str = EDGE_LIST) -> np.ndarray:
    """The vector Day et al.'s method adds noise to: C[i] = #{deg <= i}, i = 0..theta (declared nodes), or the
    tail counts T[i] = #{deg >= i}, i = 1..theta (edge list: a count of degree-0 nodes is unbounded there)."""
    deg = np.asarray(projected, dtype=np.int64)
    hist = np.bincount(deg, minlength=theta + 1)[:theta + 1]
    if check_model(model) == DECLARED_NODES:
        return np.cumsum(hist)
    return np.cumsum(hist[::-1])[::-1][1:]


def leaf_cumulative(counts: np.ndarray, model: str = EDGE_LIST) -> np.ndarray:
    """RPS's ``summarize="cumulative"`` vector from the exact leaf counts (leaves in domain order): C at each
    leaf's upper end (declared nodes) or the tail count at each leaf's lower end (edge list)."""
    c = np.asarray(counts, dtype=np.int64)
    return np.cumsum(c) if check_model(model) == DECLARED_NODES else np.cumsum(c[::-1])[::-1]


def node_count(projected: np.ndarray, model: str = EDGE_LIST) -> int:
    """The node count Hay's length is drawn from: every node, or the nodes of projected degree >= 1."""
    return int(released_degrees(projected, model).size)


def sorted_top(projected: np.ndarray, m: int) -> np.ndarray:
    """The m largest projected degrees, ascending, zero-padded at the front (zeros and padding are alike, so
    this is the same vector whether or not the nodes of degree 0 are in the input)."""
    proj = np.sort(np.asarray(projected, dtype=np.int64))
    return proj[-m:] if proj.size >= m else np.concatenate([np.zeros(m - proj.size, dtype=np.int64), proj])


def geometric_leaves(theta: int, model: str = EDGE_LIST) -> np.ndarray:
    """The lower ends of the recommended summary's leaves, a function of theta and the model only.

    Edge list: 1, 2, ..., then a_{i+1} = a_i + max(1, a_i // D): single degrees up to :data:`FINE_DEGREES`,
    then leaves about 1/D of their lower end wide, D = 16 up to theta = :data:`NARROW_LEAVES_ABOVE` and 32 above
    it. Declared nodes: every degree 0..theta (cumulative counts cost theta + 1 whatever the leaves, so coarser
    leaves would only lose resolution)."""
    theta = check_theta(theta)
    if check_model(model) == DECLARED_NODES:
        return np.arange(0, theta + 1, dtype=np.int64)
    divisor = LEAF_WIDTH_DIVISOR if theta <= NARROW_LEAVES_ABOVE else 2 * LEAF_WIDTH_DIVISOR
    ends = [1]
    while True:
        a = ends[-1]
        nxt = a + (1 if a < FINE_DEGREES else max(1, a // divisor))
        if nxt >= theta:  # theta is a leaf of its own: the projection piles the cut nodes there
            return np.asarray(ends + [theta] if a < theta else ends, dtype=np.int64)
        ends.append(nxt)


def grid_tail_counts(projected: np.ndarray, lower_ends: np.ndarray) -> np.ndarray:
    """T(a) = #{released nodes of projected degree >= a} at every leaf's lower end a (edge list; ascending ends)."""
    deg = np.sort(released_degrees(projected, EDGE_LIST))
    return (deg.size - np.searchsorted(deg, np.asarray(lower_ends, dtype=np.int64), side="left")).astype(np.int64)


def spread_evenly(lower_ends: np.ndarray, theta: int, counts: np.ndarray) -> np.ndarray:
    """``counts[i]`` degrees spread evenly over leaf i = [lower_ends[i], next end) (the last ends at theta):
    a + floor((k + 1/2) w / c), k = 0..c-1, sorted ascending. A function of the counts and the public leaves
    only (post-processing); a single-degree leaf gets all its count at its degree."""
    lo = np.asarray(lower_ends, dtype=np.int64)
    hi = np.concatenate([lo[1:], [int(theta) + 1]])
    c = np.maximum(np.asarray(counts, dtype=np.int64), 0)
    owner = np.repeat(np.arange(c.size), c)
    k = np.arange(owner.size) - np.repeat(np.cumsum(c) - c, c)
    width = (hi - lo)[owner]
    return np.sort(lo[owner] + ((2 * k + 1) * width) // (2 * c[owner]))


# Up to this many values, isotonic regression runs here (pool adjacent violators, about 0.2 microseconds a value);
# longer inputs go to scipy, whose import alone (scipy.optimize, 0.25-0.35 s) took longer than a whole release
# of the default degree summary, a few hundred noisy counts.
_SMALL_ISOTONIC = 200_000


def _isotonic(values: np.ndarray, increasing: bool = True) -> np.ndarray:
    """The least-squares non-decreasing (non-increasing) fit to ``values``, as scipy.optimize.isotonic_regression
    gives it (the tests compare the two)."""
    y = np.asarray(values, dtype=np.float64).reshape(-1)
    if y.size == 0:
        return np.zeros(0)
    if y.size > _SMALL_ISOTONIC:
        from scipy.optimize import isotonic_regression

        return np.asarray(isotonic_regression(y, increasing=increasing).x)
    return _pool_adjacent_violators(y) if increasing else _pool_adjacent_violators(y[::-1])[::-1]


def _pool_adjacent_violators(y: np.ndarray) -> np.ndarray:
    """Non-decreasing least-squares fit: values are taken left to right as blocks (sum, size); while a block's
    mean is below the previous block's, the two are pooled. Each block's mean is then its fitted value."""
    sums: list[float] = []
    sizes: list[int] = []
    for v in y.tolist():
        total, size = v, 1
        while sums and sums[-1] * size > total * sizes[-1]:  # previous mean > this mean (sizes are positive)
            total += sums.pop()
            size += sizes.pop()
        sums.append(total)
        sizes.append(size)
    return np.repeat(np.asarray(sums) / np.asarray(sizes, dtype=np.float64), sizes)


def _from_cumulative(noisy: np.ndarray, model: str) -> np.ndarray:
    """Counts from noisy cumulative (declared) or tail (edge list) counts: isotonic regression, clamped at 0,
    rounded, differenced (post-processing)."""
    declared = model == DECLARED_NODES
    fit = np.maximum(np.rint(_isotonic(noisy.astype(np.float64), increasing=declared)), 0).astype(np.int64)
    if declared:
        return np.diff(np.concatenate([[0], fit]))
    return fit - np.concatenate([fit[1:], [0]])


_MODEL_NOTE = {DECLARED_NODES: "every declared node, degree 0 included",
               EDGE_LIST: "the nodes of projected degree >= 1 (nodes of degree 0 are not released: from an edge "
                          "list alone, their number is not bounded under node-DP)"}


@records_run_start
def rps_degrees(projected: np.ndarray, theta: int, epsilon: float, *, noise: NoiseSource, depth: int | None = None,
                split_share: float | None = None, partitioning: str = "balanced",
                summarize: str = "counts", model: str = EDGE_LIST) -> DegreeRelease:
    """RPS on the released degree values (0..theta declared, 1..theta edge list): sensitivity 2 theta + 1 for
    the medians.

    ``summarize="counts"`` (faithful): a noisy count per leaf (sensitivity 2 theta + 1), clamped at 0.
    ``summarize="cumulative"`` (improvement, measured in docs/rps.md): noisy cumulative counts at the leaves'
    upper ends, C(b) = |{v : deg(v) < b}| (sensitivity theta + 1, declared nodes), or tail counts at their lower
    ends, T(a) = |{v : deg(v) >= a}| (sensitivity min(L, theta) + theta, edge list), made monotone by isotonic
    regression and differenced into leaf counts.
    """
    theta = check_theta(theta)
    model = check_model(model)
    if summarize not in DEGREE_SUMMARIES:
        raise ParameterError(f"--summarize must be one of {DEGREE_SUMMARIES}, got {summarize!r}")
    warnings: list[str] = []
    if depth is None:
        h = default_degree_depth(theta, model)
    else:
        h = depth
        warning = check_degree_depth(theta, h, model)
        if warning:
            warnings.append(warning)
    sens = degree_sensitivities(theta, model)
    delta = sens["histogram"]
    low = _low(model)
    domain = PointDomain(("degree",), np.array([float(low)]), np.array([float(theta + 1)]), np.array([True]))
    part = rps_partition([released_degrees(projected, model)], domain, epsilon, noise=noise, depth=h,
                         split_share=split_share, partitioning=partitioning, composition="nodes", sensitivity=delta,
                         count_leaves=summarize == "counts")
    summary_sens: dict[str, int] = {"leaf_counts": delta}
    if summarize == "cumulative":
        exact = leaf_cumulative(part.counts, model)  # leaves in domain order
        e_sum = remaining_budget(part.accountant.total, part.scope)
        if model == DECLARED_NODES:
            s_cum = sens["boundary_cumulative"]
            summary_sens = {"boundary_cumulative_counts": s_cum}
            label = "cumulative counts at the leaves' upper ends (sensitivity theta + 1)"
        else:
            s_cum = degree_sensitivities(theta, model, part.n_leaves)["boundary_cumulative"]
            summary_sens = {"boundary_tail_counts": s_cum}
            label = "tail counts at the leaves' lower ends (sensitivity min(leaves, theta) + theta)"
        noisy = noisy_counts(exact, e_sum, scope=part.scope, noise=noise, sensitivity=s_cum, label=label)
        part = replace(part, counts=_from_cumulative(noisy, model), count_epsilon=np.full(part.n_leaves, e_sum))
    if summarize == "cumulative":
        errors, bins = _cumulative_errors(np.asarray(noisy), laplace_scale(e_sum, s_cum), model, part.lo[:, 0], part.hi[:, 0] - 1,
                                          int(theta))
    else:
        # post-processing of the public scales (2 theta + 1)/eps_leaf: each leaf's count, clipped at 0 as released
        scales = np.asarray([laplace_scale(float(e), delta) for e in part.count_epsilon.tolist()])
        errors = count_intervals(np.maximum(part.counts, 0), scales, lower=0.0,
                                 label="the discrete Laplace noise of each leaf count (nodes per degree range)")
        bins = np.stack([part.lo[:, 0], part.hi[:, 0] - 1], axis=1).astype(np.int64)
    check_release_size("degrees --method rps", int(np.maximum(part.counts, 0).sum()), 1)
    seed = noise.integers(2**62, 2)
    rng = np.random.Generator(np.random.PCG64([int(s) for s in seed]))
    (deg,) = synthesize(part.lo, part.hi, part.counts, domain.integer, rng)
    alpha = (DEFAULT_SPLIT_SHARE if partitioning == "balanced" else 0.0) if split_share is None else float(split_share)
    eps = part.accountant.total
    manifest: dict[str, object] = {
        "parameters": {"depth": int(h), "split_share": alpha, "partitioning": partitioning, "summarize": summarize},
        "budget_split": {"per_level": alpha * eps / h if h else 0.0, "leaf_counts": part.count_epsilon.max(initial=0.0),
                         "composition": "every level one charge over all its regions; one charge for all leaves"},
        "sensitivity": {"median_quality_per_level": delta, **summary_sens},
        "leaves": [[int(a), int(b) - 1] for a, b in zip(part.lo[:, 0], part.hi[:, 0])],
        "released_nodes": _MODEL_NOTE[model],
        **({"warnings": warnings} if warnings else {}),
        "uncertainty": _uncertainty(errors, summarize == "cumulative"),
    }
    return DegreeRelease(np.sort(np.asarray(deg, dtype=np.int64)), "rps", theta, part.accountant, model=model,
                         details=manifest, errors=errors, bins=bins)


def _cumulative_errors(noisy: np.ndarray, scale: float, model: str, lo: np.ndarray, hi: np.ndarray, theta: int
                       ) -> tuple[Intervals, np.ndarray]:
    """Cumulative counts C (nodes of degree <= hi, declared nodes) or tail counts T (degree >= lo, edge list) as
    released after isotonic regression, each with the interval of one noisy count of ``scale`` (post-processing
    of public scales; the regression's own effect is measured, docs/accuracy.md)."""
    declared = model == DECLARED_NODES
    fit = np.maximum(np.rint(_isotonic(noisy.astype(np.float64), increasing=declared)), 0)
    bins = (np.stack([np.full(hi.size, _low(model)), hi], axis=1) if declared
            else np.stack([lo, np.full(lo.size, theta)], axis=1)).astype(np.int64)
    errors = count_intervals(fit, scale, lower=0.0,
                             label="the discrete Laplace noise of one " + ("cumulative" if declared else "tail")
                                   + " count (the isotonic regression applied after it is not in the interval)")
    return errors, bins


def _uncertainty(errors: Intervals, cumulative: bool) -> dict[str, object]:
    return manifest_section(
        accounts_for=errors.label, columns=("degree_lo", "degree_hi", "count", "sd", "low", "high"),
        formula="DLap(b), b = sensitivity/eps of the counts: sd = sqrt(2t)/(1-t), t = exp(-1/b); h = least integer "
                "with 2 t^(h+1)/(1+t) <= 0.05; [max(0, v - h), v + h]",
        ignores="the projection onto max degree theta (nodes above theta lose edges)"
                + ("; the isotonic regression" if cumulative else "")
                + "; the degrees drawn uniformly inside a leaf")


@records_run_start
def hay_degrees(projected: np.ndarray, theta: int, epsilon: float, *, noise: NoiseSource,
                node_share: float = HAY_NODE_SHARE, model: str = EDGE_LIST) -> DegreeRelease:
    """Sorted degree sequence + noise (sensitivity 2 theta) + isotonic regression; length = a noisy node count
    (sensitivity 1 declared, theta + 1 edge list; there the released degrees are clipped to [1, theta])."""
    theta = check_theta(theta)
    eps = check_epsilon(epsilon)
    model = check_model(model)
    if not (0.0 < node_share < 1.0):
        raise ParameterError(f"node share must be in (0, 1), got {node_share!r}")
    sens = degree_sensitivities(theta, model)
    acc = BudgetAccountant(eps)
    scope = acc.root()
    values = released_degrees(projected, model)
    n_noisy = int(noisy_counts(np.array([node_count(values, model)]), node_share * eps, scope=scope, noise=noise,
                               sensitivity=sens["node_count"],
                               label=f"node count (sensitivity {'1' if model == DECLARED_NODES else 'theta + 1'})")[0])
    m = max(1, n_noisy)
    check_release_size("degrees --method hay", m, 1)
    e_seq = remaining_budget(eps, scope)
    noisy = noisy_counts(sorted_top(values, m), e_seq, scope=scope, noise=noise, sensitivity=sens["sorted_sequence"],
                         label="sorted degree sequence (sensitivity 2 theta)")
    fit = np.clip(np.rint(_isotonic(noisy.astype(np.float64))), _low(model), theta).astype(np.int64)
    errors, section = _hay_errors(fit, theta, laplace_scale(e_seq, sens["sorted_sequence"]), n_noisy,
                                  laplace_scale(node_share * eps, sens["node_count"]))
    manifest = {
        "parameters": {"node_share": node_share, "constrained_inference": "isotonic regression (PAVA)"},
        "budget_split": {"node_count": node_share * eps, "sorted_sequence": e_seq},
        "sensitivity": {"node_count": sens["node_count"], "sorted_sequence": sens["sorted_sequence"]},
        "released_nodes": _MODEL_NOTE[model],
        "uncertainty": section,
    }
    return DegreeRelease(fit, "hay", theta, acc, model=model, details=manifest, errors=errors)


def _hay_errors(fit: np.ndarray, theta: int, scale: float, n_noisy: int, node_scale: float
                ) -> tuple[Intervals, dict[str, object]]:
    """Per line of Hay's release (ascending, line i estimates the i-th of the m largest projected degrees,
    zero-padded): the interval of that rank's noisy value, [max(0, v - h), min(theta, v + h)].

    Why the regression does not void it: the true sorted sequence is monotone, so the isotonic fit is no
    farther from it in the largest deviation than the noisy sequence was (PAVA is non-expansive in the sup
    norm); rounding an integer truth's estimate and clipping to [low, theta] move no value away from a truth in
    [0, theta] by more than the half-width allows (the one exception, a padded zero released as 1 from an edge
    list, is inside [max(0, 1 - h), ...] for any h >= 1). Per rank the level is then measured, not proved
    (docs/accuracy.md). The released length m carries the node count's noise; its interval is in the manifest."""
    h = float(dlap_half_width(scale))
    v = np.asarray(fit, dtype=np.float64)
    errors = Intervals(v, np.full(v.shape, dlap_sd(scale)), np.maximum(v - h, 0.0), np.minimum(v + h, float(theta)),
                       label="the discrete Laplace noise of each rank's degree (the isotonic regression after it "
                             "does not widen the largest deviation)")
    h_n = float(dlap_half_width(node_scale))
    section = manifest_section(
        accounts_for=errors.label, columns=("line", "degree", "sd", "low", "high"),
        formula="DLap(b), b = 2 theta/eps_sequence: sd = sqrt(2t)/(1-t), t = exp(-1/b); h = least integer with "
                "2 t^(h+1)/(1+t) <= 0.05; line i (ascending) estimates the i-th of the m largest projected degrees: "
                "[max(0, v - h), min(theta, v + h)]",
        ignores="the projection onto max degree theta; ranks beyond the noisy length m (true nodes not released, "
                "or zero-padded ranks released)",
        scale=scale, node_count={"value": int(n_noisy), "sd": dlap_sd(node_scale), "low": max(0.0, n_noisy - h_n),
                                 "high": n_noisy + h_n})
    return errors, section


@records_run_start
def cumulative_degrees(projected: np.ndarray, theta: int, epsilon: float, *, noise: NoiseSource,
                       model: str = EDGE_LIST, leaves: str = "every") -> DegreeRelease:
    """theta-cumulative histogram + noise (sensitivity theta + 1), isotonic regression, differenced; from an
    edge list, the tail counts T[1..theta] at sensitivity 2 theta instead.

    ``leaves="geometric"`` (the recommended summary): from an edge list, the tail counts at the lower ends of
    :func:`geometric_leaves` only, at sensitivity min(L, theta) + theta, each leaf's count spread evenly over its
    degrees. Where those leaves are every degree (theta <= :data:`FINE_DEGREES`, or declared nodes) the release
    is Day et al.'s, draw for draw."""
    theta = check_theta(theta)
    eps = check_epsilon(epsilon)
    model = check_model(model)
    if leaves not in CUMULATIVE_LEAVES:
        raise ParameterError(f"the cumulative leaves must be one of {CUMULATIVE_LEAVES}, got {leaves!r}")
    ends = geometric_leaves(theta, model) if leaves == "geometric" else None
    acc = BudgetAccountant(eps)
    if ends is not None and ends.size < theta + 1 - _low(model):
        deg, manifest, errors, bins = _geometric_cumulative(projected, theta, eps, acc, noise, ends)
    else:
        deg, manifest, errors, bins = _every_cumulative(projected, theta, eps, acc, noise, model)
    if leaves == "geometric":  # Day et al.'s own manifest stays as it was
        manifest["parameters"]["leaves"] = leaves
    manifest["released_nodes"] = _MODEL_NOTE[model]
    manifest["uncertainty"] = _uncertainty(errors, True)
    return DegreeRelease(deg, "cumulative", theta, acc, model=model, details=manifest, errors=errors, bins=bins)


def _every_cumulative(projected: np.ndarray, theta: int, eps: float, acc: BudgetAccountant, noise: NoiseSource,
                      model: str) -> tuple[np.ndarray, dict[str, Any], Intervals, np.ndarray]:
    """Day et al.'s release: a cumulative (declared) or tail (edge list) count at every degree."""
    sens = degree_sensitivities(theta, model)["cumulative"]
    stat = cumulative_statistic(projected, theta, model)
    label = ("theta-cumulative histogram (sensitivity theta + 1)" if model == DECLARED_NODES
             else "tail counts #{deg >= i}, i = 1..theta (sensitivity 2 theta)")
    noisy = noisy_counts(stat, eps, scope=acc.root(), noise=noise, sensitivity=sens, label=label)
    counts = _from_cumulative(noisy, model)  # post-processing of the noisy counts
    deg = np.repeat(np.arange(_low(model), theta + 1, dtype=np.int64), counts)
    key = "cumulative_histogram" if model == DECLARED_NODES else "tail_cumulative_histogram"
    points = np.arange(_low(model), theta + 1, dtype=np.int64)
    errors, bins = _cumulative_errors(np.asarray(noisy), laplace_scale(eps, sens), model, points, points, theta)
    manifest: dict[str, Any] = {
        "parameters": {"constrained_inference": "isotonic regression (PAVA) of the cumulative counts"},
        "budget_split": {key: eps},
        "sensitivity": {key: sens},
    }
    return deg, manifest, errors, bins


def _geometric_cumulative(projected: np.ndarray, theta: int, eps: float, acc: BudgetAccountant,
                          noise: NoiseSource, ends: np.ndarray
                          ) -> tuple[np.ndarray, dict[str, Any], Intervals, np.ndarray]:
    """Edge list: tail counts at the public leaves' lower ends (sensitivity min(L, theta) + theta: the removed
    node moves the T at the <= min(L, d) ends <= d, and each of the <= d unit moves one T), made monotone,
    differenced and spread evenly inside the leaves."""
    sens = degree_sensitivities(theta, EDGE_LIST, int(ends.size))["boundary_cumulative"]
    noisy = noisy_counts(grid_tail_counts(projected, ends), eps, scope=acc.root(), noise=noise, sensitivity=sens,
                         label="tail counts at the geometric leaves' lower ends (sensitivity min(leaves, theta) + "
                               "theta)")
    # post-processing of the noisy counts: isotonic regression, differences, an even spread inside each leaf
    deg = spread_evenly(ends, theta, _from_cumulative(noisy, EDGE_LIST))
    his = np.concatenate([ends[1:] - 1, [theta]])
    errors, bins = _cumulative_errors(np.asarray(noisy), laplace_scale(eps, sens), EDGE_LIST, ends, his, theta)
    manifest: dict[str, Any] = {
        "parameters": {"constrained_inference": "isotonic regression (PAVA) of the tail counts",
                       "within_leaf": "each leaf's count spread evenly over its degrees"},
        "budget_split": {"leaf_tail_counts": eps},
        "sensitivity": {"leaf_tail_counts": sens},
        "leaves": [[int(a), int(b)] for a, b in zip(ends, his)],
    }
    return deg, manifest, errors, bins


@records_run_start
def release_degrees(graph: Graph, theta: int, epsilon: float, *, method: str = "rps", noise: NoiseSource,
                    depth: int | None = None, split_share: float | None = None,
                    partitioning: str = "balanced", summarize: str = "counts",
                    model: str | None = None, node_list: str | None = None, leaves: str = "every") -> DegreeRelease:
    """Project onto max degree theta (edge addition, public random node order), then release by ``method``.

    ``leaves`` (cumulative only): ``"every"`` (Day et al.) or ``"geometric"`` (the command's recommended default;
    :func:`cumulative_degrees`).

    ``model``: the neighbour model (:data:`DEGREE_MODELS`); by default ``"declared-nodes"`` when the graph's node
    set was declared (``graph.declared_nodes``, a node list) and ``"edge-list"`` otherwise. Asking for
    ``"declared-nodes"`` on a graph whose nodes come from its edges is refused: its sensitivities do not hold
    for the neighbours such an input has. ``node_list``: where the declared node list was read (recorded in the
    manifest, so that an evaluation can count its isolated nodes).
    """
    theta = check_theta(theta)
    check_epsilon(epsilon)
    if model is None:
        model = DECLARED_NODES if graph.declared_nodes else EDGE_LIST
    model = check_model(model)
    if model == DECLARED_NODES and not graph.declared_nodes:
        raise ParameterError("the declared-nodes model needs a declared node list (--nodes FILE): from an edge "
                             "list alone, removing a node also removes its friends that have no other edge")
    if method not in DEGREE_METHODS:
        raise ParameterError(f"--method must be one of {DEGREE_METHODS}, got {method!r}")
    if method != "rps" and (depth is not None or split_share is not None or partitioning != "balanced"
                            or summarize != "counts"):
        raise ParameterError("--depth, --split-share, --partitioning and --summarize apply to --method rps only")
    if method != "cumulative" and leaves != "every":
        raise ParameterError("geometric leaves apply to the cumulative summary only")
    key = int(noise.integers(2**63 - 1, 1)[0])
    _, projected = edge_addition(graph, theta, key)
    if method == "rps":
        rel = rps_degrees(projected, theta, epsilon, noise=noise, depth=depth, split_share=split_share,
                          partitioning=partitioning, summarize=summarize, model=model)
    elif method == "hay":
        rel = hay_degrees(projected, theta, epsilon, noise=noise, model=model)
    else:
        rel = cumulative_degrees(projected, theta, epsilon, noise=noise, model=model, leaves=leaves)
    details = rel.details
    details["projection"] = ("edge addition onto max degree theta (Day, Li and Lyu, SIGMOD 2016) in a stable "
                             "public order: node priorities = keyed hash of the id, key from the noise source")
    details["model"] = model
    details["neighbours"] = neighbours_text(model)
    return replace(rel, manifest=degrees_manifest(rel, check_epsilon(epsilon), noise, node_list))


# the papers, as the manifest of each method names them
_CITATIONS = {
    "rps": "Qardaji and Li, ASIACCS 2012, on the degree domain [{low}, theta] (docs/rps.md)",
    "hay": "Hay, Li, Miklau and Jensen, Accurate estimation of the degree distribution of private networks, ICDM "
           "2009, at node-DP sensitivity",
    "cumulative": "Day, Li and Lyu, Publishing graph degree distribution with node differential privacy, SIGMOD 2016 "
                  "(theta-cumulative histogram){tail}",
}
_MODEL_NOTES = {
    DECLARED_NODES: "neighbour model declared-nodes: the node list given by --nodes is the node set (isolated nodes "
                    "included; its size is private and not published); a neighbour removes one node from it and its "
                    "edges from the edge file",
    EDGE_LIST: "neighbour model edge-list: the nodes are the ids that occur in the edge file, so removing a node's "
               "lines also removes its friends that have no other edge; only nodes of projected degree >= 1 are "
               "released, at sensitivities that hold for such neighbours (give --nodes FILE to release degree-0 "
               "nodes too)",
}


def degrees_manifest(rel: DegreeRelease, epsilon: float, noise: NoiseSource, node_list: str | None = None
                     ) -> dict[str, object]:
    """The manifest of a degree release, from the method's own facts (``rel.details``)."""
    details = rel.details
    model = rel.model
    params = {"theta": rel.theta, "method": rel.method, **details.get("parameters", {}),
              "projection": details["projection"]}
    facts = {"nodes": rel.n_nodes, "max_degree": int(rel.degrees.max(initial=0)),
             "format": "one degree per line, sorted ascending",
             "degrees": f"{_low(model)}..{rel.theta}: {details['released_nodes']}",
             **({"leaves": details["leaves"]} if "leaves" in details else {})}
    budget = {**details.get("budget_split", {}), "sensitivity": details.get("sensitivity", {})}
    tail = "" if model == DECLARED_NODES else ", as tail counts #{deg >= i}, i = 1..theta"
    if "leaves" in details and rel.method == "cumulative":
        tail = (", as tail counts #{deg >= a} at the lower ends a of geometric leaves (single degrees up to "
                f"{FINE_DEGREES}, then about a/{LEAF_WIDTH_DIVISOR} wide), each leaf's count spread evenly")
    citation = _CITATIONS[rel.method].format(low=_low(model), tail=tail)
    domain: dict[str, object] = {
        "source": "declared", "theta": rel.theta, "neighbour_model": model,
        "neighbours": "node-DP: one node and all its edges, on the files as read",
        "node_set": ("declared: the node list --nodes" if model == DECLARED_NODES else
                     "not public: the ids of the edge file; the release counts the nodes of projected degree >= 1 "
                     "under noise"),
        **({"node_list": str(node_list)} if model == DECLARED_NODES and node_list is not None else {})}
    notes = [citation, _MODEL_NOTES[model]] + [f"warning: {w}" for w in details.get("warnings", [])]
    manifest = build_manifest(f"degrees-{rel.method}", epsilon=epsilon, parameters=params, noise=noise,
                              accountant=rel.accountant, domain=domain, release=facts, budget_split=budget,
                              notes=notes, privacy_unit="node", neighbours=details["neighbours"])
    if "uncertainty" in details:
        manifest["uncertainty"] = details["uncertainty"]
    return manifest
