"""DiffGen+ : DiffGen (Mohammed et al., KDD 2011) with the budget spent where it buys accuracy (docs/diffgen.md).

The release is the same object as DiffGen's: a generalized contingency table over a
product cut (every combination of cut values, empty ones included) with noisy counts
per leaf partition x class. What changes is how the cut is chosen and how the counts
are post-processed; every change is switchable and measured in docs/diffgen.md.

Budget split (all on the one record set D; defaults count_share = 0.3, R and score "auto")::

    size             one noisy count of D (discrete Laplace)        0.01 eps   (only when R, the score or stop is auto)
    round i = 1..R   one exponential mechanism over {stop} u {categorical candidates}
                     u {(numeric candidate, grid split point)}        (1 - count_share)(eps - size) / R each
                                                     (schedule "increasing"/"decreasing": x R w_i / sum(w),
                                                      w_i = i or R + 1 - i; off by default)
    counts           every leaf partition x class, discrete Laplace  count_share (eps - size)
                     + the shares of the rounds not played (after "stop")
    total            = size + sum of the rounds + counts = eps (sequential; every spend is on all of D)

DiffGen+3 (:func:`diffgen_plus3`, the recommended method since round 3) fixes score = Gini gain + 1 x
misclassification gain (Delta 3), no "stop", and draws every round with the monotone exponential mechanism,
exp(eps_round u / Delta): the shifted score -(impurity of the cut after the candidate) moves the same way for
every candidate (docs/privacy.md section 4.7). Its split: size 0.01 eps, R rounds of 0.7 (eps - size) / R,
counts 0.3 (eps - size).

R = auto_rounds(eps * N~) and the score (TV below eps * N~ = 10,000, Gini above) come from the noisy size N~;
with ``stop="auto"`` (DiffGen+2, the recommended method, whose switch is at eps * N~ = 5,000) so does whether
"stop" is offered (only with TV).

Compared with Algorithm 1 (eps' = eps / (2(|A_n| + 2h)), line 3):

* no line 4 (|A_n| eps' for the numeric top splits) and no line 9 (h eps' for the new
  numeric children's split values): a numeric candidate's split point is drawn in the
  same exponential mechanism as the candidate, from a public grid of split points (the
  schema's bounds only), each candidate carrying total base measure 1 (eq. 6's
  measure weighting, normalised per candidate so that wide intervals do not win by
  their length);
* the score is a partition-local gain (sum over the leaf partitions of Link_v of the drop
  of the unnormalised Gini impurity, or of the TV deviation from the parent's class mix),
  sensitivity 2 (:func:`gini_gain`, :func:`tv_gain`) instead of eq. 4's Max over D_v (a
  split that keeps every child's majority scores like a useless one under Max);
* h is chosen by the data through the paid-for mechanism: "stop" is a candidate whose
  score is 0, every other candidate's score is its gain minus a public price per
  new leaf partition (``penalty x |classes| / eps_count``); after "stop" the rounds' shares go to
  the counts (adaptive sequential composition: the decision is a mechanism output);
* counts are post-processed (never re-read from the data): per class, the noisy cells
  are shifted down by one common amount and clipped at 0 so that they keep the noisy
  class total (Norm-Sub), instead of ``max(0, .)``, which adds ~b/2 phantom records of
  every class to every empty cell.
"""

from __future__ import annotations

import math

import numpy as np

from ..data.table import EncodedTable
from ..errors import ParameterError
from ..privacy import BudgetAccountant, NoiseSource, check_epsilon, exponential_mechanism, noisy_counts
from ..privacy.mechanisms import laplace_scale
from ..privacy.uncertainty import Intervals, count_intervals, manifest_section, shifted_clamp_intervals
from ..release import NEIGHBOURS_ROW, build_manifest, records_run_start
from ..release.table import GeneralizedTable
from .diffgen import CITATION, _ordered_cells, _splittable
from .partition import PartitionTree, cut_label

__all__ = ["diffgen_plus", "split_grid", "gini_gain", "tv_gain", "norm_sub", "auto_rounds", "GINI_SENSITIVITY",
           "smooth_toward_parents", "diffgen_plus2", "PLUS2_SWITCH",
           "SCORES_PLUS", "misclass_gain", "score_sensitivity", "diffgen_plus3", "PLUS3_MISCLASS"]

# Unnormalised Gini impurity G(n) = |n| - sum_k n_k^2 / |n| changes by a value in [0, 2) when one record
# is added (0 when it joins a pure majority, 2n/(n+1) when it is the first of its class among n others).
# A local gain G(p) - sum_c G(p_c) therefore moves by less than 2: only one partition and one child move.
GINI_SENSITIVITY = 2.0


def gini_sensitivity() -> float:
    """Delta u of the local Gini gain under add/remove-one-record neighbours (< 2, see module docstring)."""
    return GINI_SENSITIVITY


def score_sensitivity(score: str, misclass: float = 0.0) -> float:
    """Delta of a round's score: 2 for Gini or TV, plus ``misclass`` for the weighted misclassification gain.

    With Gini (+ misclass) the same Delta also bounds the one-sided move of the *shifted* score
    (docs/privacy.md section 4.7), which is what the monotone form needs.
    """
    return GINI_SENSITIVITY + float(misclass)


def _gini(counts: np.ndarray) -> np.ndarray:
    """Unnormalised Gini impurity of each row (last axis: classes); 0 for an empty row."""
    counts = np.asarray(counts, dtype=np.float64)
    n = counts.sum(axis=-1)
    sq = (counts * counts).sum(axis=-1)
    return n - np.divide(sq, n, out=np.zeros_like(n), where=n > 0)


def split_grid(lo: float, hi: float, integer: bool, size: int) -> np.ndarray:
    """Public split points strictly inside (lo, hi): half equal-width, half geometric from lo (skewed ranges).

    A function of the interval and ``size`` only (never of the data). ``x < s`` goes left.
    """
    span = hi - lo
    if integer:
        if span - 1 <= size:
            return lo + np.arange(1, int(span), dtype=np.float64)
        half = size // 2
        eq = lo + np.round(np.linspace(0, span, half + 2)[1:-1])
        geo = lo + np.round(np.exp(np.linspace(0.0, math.log(span), size - half + 2))[1:-1])
        pts = np.unique(np.concatenate([eq, geo]))
        return pts[(pts > lo) & (pts < hi)]
    if span <= 0:
        return np.zeros(0)
    half = size // 2
    eq = lo + np.linspace(0, span, half + 2)[1:-1]
    geo = lo + np.expm1(np.linspace(0.0, math.log1p(span), size - half + 2))[1:-1]
    pts = np.unique(np.concatenate([eq, geo]))
    return pts[(pts > lo) & (pts < hi)]


def norm_sub(noisy: np.ndarray, target: float) -> np.ndarray:
    """Non-negative integers summing to about ``target``: ``max(0, x - d)`` with one shift d for all cells.

    Post-processing of noisy counts (Norm-Sub, Wang et al., "Locally differentially private
    protocols for frequency estimation", 2017 line of work, here for central noise).
    """
    x = np.asarray(noisy, dtype=np.float64).ravel()
    if target <= 0 or x.size == 0:
        return np.zeros(np.shape(noisy), dtype=np.int64)
    out = np.maximum(0.0, x - norm_sub_shift(x, target))
    return np.floor(out + 0.5).astype(np.int64).reshape(np.shape(noisy))


def norm_sub_shift(noisy: np.ndarray, target: float) -> float:
    """The one shift d of :func:`norm_sub` (post-processing of noisy values; its error bars need it)."""
    x = np.asarray(noisy, dtype=np.float64).ravel()
    if target <= 0 or x.size == 0:
        return math.inf
    s = np.sort(x)[::-1]
    csum = np.cumsum(s)
    # d such that sum over the k largest (s_i - d) = target with s_k > d >= s_{k+1}
    k = np.arange(1, s.size + 1)
    d = (csum - target) / k
    nxt = np.concatenate([s[1:], [-np.inf]])
    ok = (s > d) & (d >= nxt)
    return float(d[np.flatnonzero(ok)[0]]) if ok.any() else float(d[-1])


def smooth_toward_parents(parent: np.ndarray, leaves: np.ndarray, counts: np.ndarray, strength: float) -> np.ndarray:
    """Leaf class counts with each leaf's class mix shrunk toward its parent partition's (post-processing).

    ``parent[p]``: the partition p was split from (-1 at the root; a child's id is larger than its
    parent's); ``counts``: (leaves, classes) released counts. A partition's counts are the sums of its
    leaves'; top-down, q_p = (n_p + strength q_parent) / (|n_p| + strength) (the root keeps its own
    mix), and a leaf's smoothed counts are |n_leaf| q_leaf, rounded. Leaf totals are kept (up to rounding).
    """
    counts = np.asarray(counts, dtype=np.float64)
    n_parts, n_cls = parent.size, counts.shape[1]
    est = np.zeros((n_parts, n_cls))
    est[leaves] = counts
    for p in range(n_parts - 1, 0, -1):  # children before parents (ids grow with depth)
        if parent[p] >= 0:
            est[parent[p]] += est[p]
    size = est.sum(axis=1)
    q = np.zeros((n_parts, n_cls))
    root_n = max(size[0], 1e-12)
    q[0] = est[0] / root_n if size[0] > 0 else np.full(n_cls, 1.0 / n_cls)
    for p in range(1, n_parts):
        q[p] = (est[p] + strength * q[parent[p]]) / (size[p] + strength)
    out = size[leaves, None] * q[leaves]
    return np.floor(out + 0.5).astype(np.int64)


class _Scorer:
    """Local gains of every candidate (and of every grid split of a numeric one) over the partitions of Link_v."""

    def __init__(self, tree: PartitionTree, grid: int, score: str, misclass: float = 0.0):
        self.tree = tree
        self.grid = grid
        self.score = score
        self.misclass = float(misclass)
        self.n_cls = tree.schema.n_classes
        self._grids: dict[int, np.ndarray] = {}

    def points(self, v: int) -> np.ndarray:
        if v not in self._grids:
            cv = self.tree.values[v]
            a = self.tree.schema.attributes[cv.attr]
            self._grids[v] = split_grid(cv.lo, cv.hi, a.integer, self.grid)
        return self._grids[v]

    def gains(self, v: int) -> np.ndarray:
        """Categorical v: one gain. Numeric v: one gain per grid split point (``x < s`` left)."""
        tree = self.tree
        link = tree.link[v]
        pos, rank = tree.positions(link)
        recs = tree.rec[pos]
        y = tree.table.y[recs]
        n_cls = self.n_cls
        cv = tree.values[v]
        a = tree.schema.attributes[cv.attr]
        parent = np.bincount(rank * n_cls + y, minlength=link.size * n_cls).reshape(link.size, n_cls)
        if a.kind == "categorical":
            k, kids = tree.child_index(v, recs)
            m = len(kids)
            cells = np.bincount((rank * m + k) * n_cls + y, minlength=link.size * m * n_cls
                                ).reshape(link.size, 1, m, n_cls)
        else:
            pts = self.points(v)
            if pts.size == 0:
                return np.zeros(0)
            b = np.searchsorted(pts, tree.table.columns[cv.attr][recs], side="right")  # bin 0: x < pts[0]
            nb = pts.size + 1
            binned = np.bincount((rank * nb + b) * n_cls + y, minlength=link.size * nb * n_cls
                                 ).reshape(link.size, nb, n_cls)
            left = np.cumsum(binned, axis=1)[:, :-1, :]  # (partitions, splits, classes)
            cells = np.stack([left, parent[:, None, :] - left], axis=2)  # (partitions, splits, 2, classes)
        gain = tv_gain(parent, cells) if self.score == "tv" else gini_gain(parent, cells)
        if self.misclass > 0.0:
            gain = gain + self.misclass * misclass_gain(parent, cells)
        return gain


def gini_gain(parent: np.ndarray, cells: np.ndarray) -> np.ndarray:
    """Sum over partitions of G(parent) - sum_children G(child), G(n) = |n| - sum_k n_k^2/|n|.

    ``parent``: (P, K) class counts; ``cells``: (P, S, m, K), S alternative splits into m children.
    Returns (S,). Sensitivity < 2 (module docstring).
    """
    return _gini(parent).sum() - _gini(cells).sum(axis=(0, 2))


def misclass_gain(parent: np.ndarray, cells: np.ndarray) -> np.ndarray:
    """Drop of the misclassification count E(n) = |n| - max_k n_k: sum_p (sum_c max_k n_pck - max_k n_pk).

    Shape as :func:`gini_gain`. E of one set moves by 0 or 1 when a record is added (never down), so this
    gain moves by at most 1 in either direction, and the *total* E of the cut after a candidate only up.
    """
    return np.max(cells, axis=-1).sum(axis=(0, 2)) - np.max(parent, axis=-1).sum()


def tv_gain(parent: np.ndarray, cells: np.ndarray) -> np.ndarray:
    """Sum over partitions and children of half the L1 distance between the child's class counts and
    its size times the parent's class mix: sum_p sum_c sum_k |n_pck - n_pc n_pk / n_p| / 2.

    Sensitivity < 2: adding a record of class j to child c of partition p moves child c's term by at most
    (1 - p'_j) + n_pc (1 - p_j)/(n_p + 1) and the other children's by at most (n_p - n_pc)(1 - p_j)/(n_p + 1)
    (the parent mix moves by (1 - p_j)/(n_p + 1) in L1/2); the sum is below 2. Shape as :func:`gini_gain`.
    """
    n_p = parent.sum(axis=-1)
    mix = np.divide(parent, n_p[:, None], out=np.zeros(parent.shape), where=n_p[:, None] > 0)
    n_c = cells.sum(axis=-1, keepdims=True)
    dev = np.abs(cells - n_c * mix[:, None, None, :]).sum(axis=-1) / 2.0
    return dev.sum(axis=(0, 2))


SCORES_PLUS = ("auto", "gini", "tv")
SCHEDULES = ("uniform", "increasing", "decreasing")
#: share of eps spent on the noisy record count that sizes the run (rounds, score, stop) when any is "auto"
SIZE_SHARE = 0.01
#: eps * N at which "auto" switches from the TV score to Gini (docs/diffgen.md, "DiffGen+": TV is the better
#: score while the selection is starved, Gini once it can afford to find small pure groups)
AUTO_GINI_AT = 10_000.0
#: DiffGen+2's switch (score and stop): TV with "stop" below eps * N~ = 5,000, Gini with every round played
#: above. Measured crossover (docs/diffgen.md, "Round 2"): TV + stop better at eps N~ = 3,000 / 4,500 (Adult)
#: and 3,333 (Bayesian network), Gini without stop better at 6,000 / 7,500 (Adult), equal at 6,667 (network)
PLUS2_SWITCH = 5_000.0


def auto_rounds(eps_n: float) -> int:
    """Rounds R from the effective sample size eps * N (noisy N): log2(eps N / 150), clipped to 3..12."""
    return int(min(12, max(3, round(math.log2(max(eps_n, 1.0) / 150.0)))))


@records_run_start
def diffgen_plus(table: EncodedTable, epsilon: float, *, noise: NoiseSource, rounds: int | None = None,
                 score: str = "auto", count_share: float = 0.3, grid: int = 32, penalty: float = 1.0,
                 stop: bool | str = True, postprocess: str = "normsub", smooth: float = 0.0,
                 schedule: str = "uniform", switch: float = AUTO_GINI_AT, misclass: float = 0.0,
                 monotone: bool = False) -> GeneralizedTable:
    """DiffGen+ (module docstring): a generalized contingency table over a product cut, eps-DP.

    ``rounds=None`` and ``score="auto"`` are decided from a noisy record count N~ (``SIZE_SHARE * eps``):
    R = :func:`auto_rounds` (eps N~), the score is TV below eps N~ = ``switch`` (default ``AUTO_GINI_AT``)
    and Gini above.
    ``stop="auto"`` (DiffGen+2, docs/diffgen.md round 2) offers the "stop" candidate only while the selection is
    starved (eps N~ below ``switch``, the TV regime) and plays all R rounds above it.
    ``smooth > 0`` shrinks every leaf's class mix toward its parent partition's (:func:`smooth_toward_parents`,
    post-processing of the released counts, no budget).
    ``misclass > 0`` adds that multiple of :func:`misclass_gain` to every candidate's score (sensitivity
    2 + misclass, :func:`score_sensitivity`). ``monotone=True`` (needs ``score="gini"``) draws each round with
    exp(eps_round u / Delta) instead of exp(eps_round u / (2 Delta)): valid because, shifted by a term common
    to all candidates (which leaves the mechanism's law unchanged), the Gini (+ misclassification) score of
    every candidate moves down, by less than Delta, when a record is added (docs/privacy.md section 4.7).
    """
    eps = check_epsilon(epsilon)
    _check_plus_options(rounds, score, count_share, grid, penalty, postprocess, stop, smooth, schedule, misclass,
                        monotone, switch)
    schema = table.schema
    n_cls = schema.n_classes
    accountant = BudgetAccountant(eps)
    scope = accountant.root()
    budget = eps
    n_noisy: int | None = None
    if rounds is None or score == "auto" or stop == "auto":
        # The run's size from paid-for information: one noisy count of D (sensitivity 1).
        eps_size = SIZE_SHARE * eps
        n_noisy = int(noisy_counts(np.asarray([table.n_records]), eps_size, scope=scope, noise=noise,
                                   label="size: noisy record count (sets rounds / score)")[0])
        budget -= eps_size
    eps_n = eps * max(n_noisy or 0, 0)
    n_rounds = int(rounds) if rounds is not None else auto_rounds(eps_n)
    used_score = score if score != "auto" else ("tv" if eps_n < switch else "gini")
    # "auto": stop only while starved; measured in docs/diffgen.md (the price of new partitions stops
    # the Gini regime too early: Adult eps = 0.5, 82.95 with stop, 83.58 without)
    use_stop = bool(eps_n < switch) if stop == "auto" else bool(stop)
    eps_round = (1.0 - count_share) * budget / n_rounds
    # Round i's share of the selection budget (1 - count_share)(eps - size): uniform, or weighted
    # i (increasing) or R + 1 - i (decreasing), normalised over the R rounds; a public function of R.
    weights = np.ones(n_rounds) if schedule == "uniform" else np.arange(1, n_rounds + 1, dtype=np.float64)
    if schedule == "decreasing":
        weights = weights[::-1].copy()
    round_eps = (1.0 - count_share) * budget * weights / weights.sum()
    eps_count_base = count_share * budget
    tree = PartitionTree(table)
    scorer = _Scorer(tree, int(grid), used_score, misclass)
    sensitivity = score_sensitivity(used_score, misclass)
    # Public price of a new leaf partition, in score units: penalty x classes / (count epsilon), i.e.
    # proportional to the noise the new cells will carry. "Stop" scores 0.
    price = penalty * n_cls / eps_count_base if use_stop else 0.0
    trace = []
    played = 0
    for i in range(1, n_rounds + 1):
        scores, bases, owner = _round_candidates(tree, scorer, price, use_stop)
        if len(owner) == int(use_stop):
            break  # nothing left to specialize: a function of the cut only; the rest goes to the counts
        # One exponential mechanism per round (eq. 5 with eqs. 6-7 folded in), sensitivity 2 (+ misclass);
        # monotone form only for Gini (+ misclassification), docs/privacy.md section 4.7.
        kind = used_score + (f" + {misclass:g} misclass" if misclass > 0 else "") + (", monotone" if monotone else "")
        pick = exponential_mechanism(np.concatenate(scores), float(round_eps[i - 1]), sensitivity=sensitivity,
                                     scope=scope, noise=noise, monotonic=bool(monotone),
                                     label=f"round {i}: candidate and split point ({kind})",
                                     log_base_measure=np.concatenate(bases))
        played = i
        v, j = owner[pick]
        if v < 0:
            break  # "stop" drawn: the remaining rounds' shares go to the counts
        cv = tree.values[v]
        a = schema.attributes[cv.attr]
        split = None if a.kind == "categorical" else float(scorer.points(v)[j])
        trace.append((i, cut_label(schema, cv), a.name, split))
        tree.specialize(v, split)

    count_eps = budget - math.fsum(round_eps[:played])
    noisy, shifts, cut, cells = _released_counts(tree, count_eps, scope, noise, postprocess, smooth)
    budget_split = {
        "size_noisy_count": eps - budget,
        "rounds": n_rounds,
        "rounds_played": played,
        "per_round_selection": eps_round if schedule == "uniform" else [float(e) for e in round_eps],
        "selection_total": math.fsum(round_eps[:played]),
        "schedule": schedule,
        "counts": count_eps,
        "formula": "size = 0.01 eps (if auto); round i = w_i / sum(w) x (1 - count_share)(eps - size), "
                   "w = 1 (uniform), i or R + 1 - i; "
                   "counts = eps - size - the rounds played",
    }
    parameters = {"method": "diffgen-plus2" if stop == "auto" else "diffgen-plus", "rounds": n_rounds,
                  "rounds_auto": rounds is None, "score": used_score, "score_requested": score,
                  "score_sensitivity": sensitivity, "misclass": float(misclass), "monotone": bool(monotone),
                  "count_share": count_share, "grid": int(grid), "penalty": penalty, "stop": use_stop,
                  "stop_requested": stop, "postprocess": postprocess, "smooth": smooth, "schedule": schedule,
                  "switch": switch, "specializations": len(trace)}
    errors = _count_errors(noisy, shifts, laplace_scale(count_eps, 1), postprocess, smooth)
    release = GeneralizedTable(schema, cut, cells, noisy.astype(np.int64), {}, trace, accountant, errors=errors)
    counts_note = ("counts: discrete Laplace, then per class one shift and clipping at 0 keeping the noisy class "
                   "total (Norm-Sub, post-processing)" if postprocess == "normsub" else
                   "counts: discrete Laplace, clipped at 0 (post-processing)")
    release.manifest.update(build_manifest(
        "diffgen", epsilon=eps, noise=noise, accountant=accountant, domain=schema.describe(), parameters=parameters,
        release=release.facts(), budget_split=budget_split,
        notes=[CITATION + "; DiffGen+ (docs/diffgen.md)", counts_note],
        privacy_unit="record", neighbours=NEIGHBOURS_ROW))
    release.manifest["uncertainty"] = table_uncertainty(errors, laplace_scale(count_eps, 1), postprocess, smooth)
    return release


def _check_plus_options(rounds: int | None, score: str, count_share: float, grid: int, penalty: float,
                        postprocess: str, stop: bool | str, smooth: float, schedule: str, misclass: float,
                        monotone: bool, switch: float) -> None:
    """DiffGen+'s options, checked before anything is drawn (public inputs only)."""
    if rounds is not None and int(rounds) < 1:
        raise ParameterError(f"rounds must be at least 1, got {rounds}")
    if score not in SCORES_PLUS:
        raise ParameterError(f"score must be one of {SCORES_PLUS}, got {score!r}")
    if not 0.0 < count_share < 1.0:
        raise ParameterError(f"count_share must be in (0, 1), got {count_share}")
    if int(grid) < 1:
        raise ParameterError(f"grid must be at least 1, got {grid}")
    if not penalty >= 0.0:
        raise ParameterError(f"penalty must be >= 0, got {penalty}")
    if postprocess not in ("normsub", "clip"):
        raise ParameterError(f"postprocess must be 'normsub' or 'clip', got {postprocess!r}")
    if stop not in (True, False, "auto"):
        raise ParameterError(f"stop must be true, false or 'auto', got {stop!r}")
    if not smooth >= 0.0:
        raise ParameterError(f"smooth must be >= 0, got {smooth}")
    if schedule not in SCHEDULES:
        raise ParameterError(f"schedule must be one of {SCHEDULES}, got {schedule!r}")
    if not (math.isfinite(misclass) and misclass >= 0.0):
        raise ParameterError(f"misclass must be a finite number >= 0, got {misclass}")
    if monotone not in (True, False):
        raise ParameterError(f"monotone must be true or false, got {monotone!r}")
    if monotone and score != "gini":
        # TV's local gain can move up for one candidate and down for another (no common shift fixes it)
        raise ParameterError("monotone=True needs score='gini' (the TV score is not monotone)")
    if not switch >= 0.0:
        raise ParameterError(f"switch must be >= 0, got {switch}")


def _round_candidates(tree: PartitionTree, scorer: "_Scorer", price: float, use_stop: bool
                      ) -> tuple[list[np.ndarray], list[np.ndarray], list[tuple[int, int]]]:
    """One round's candidates: the scores (gain minus the public price of the new partitions), the log base
    measures and, per candidate, (cut value, split point index); "stop" first (score 0) when offered."""
    schema = tree.table.schema
    scores: list[np.ndarray] = []
    bases: list[np.ndarray] = []
    owner: list[tuple[int, int]] = []
    if use_stop:
        scores.append(np.zeros(1))
        bases.append(np.zeros(1))
        owner.append((-1, -1))
    for v in tree.cut_values():
        if not _splittable(tree, v):
            continue
        g = scorer.gains(v)
        if g.size == 0:
            continue
        cv = tree.values[v]
        a = schema.attributes[cv.attr]
        m = len(a.taxonomy.children[cv.node]) if a.kind == "categorical" else 2
        new_parts = tree.link[v].size * (m - 1)  # a function of the cut only
        scores.append(g - price * new_parts)
        # each candidate carries base measure 1, spread evenly over its grid split points (eq. 6's
        # measure weighting, normalised per candidate so that a long interval does not win by its length)
        bases.append(np.full(g.size, -math.log(g.size)))
        owner.extend((v, j) for j in range(g.size))
    return scores, bases, owner


def _released_counts(tree: PartitionTree, count_eps: float, scope, noise: NoiseSource, postprocess: str,
                     smooth: float) -> tuple[np.ndarray, np.ndarray, object, object]:
    """The leaf x class counts with discrete Laplace noise at ``count_eps``, then post-processed (Norm-Sub per
    class or clipping, optional smoothing toward the parents), in the cut's canonical cell order; also the
    Norm-Sub shifts (for the error bars), the cut and its cells."""
    n_cls = tree.table.schema.n_classes
    leaves, exact = tree.leaf_class_counts()
    noisy = noisy_counts(exact, count_eps, scope=scope, noise=noise, label="leaf x class counts")
    shifts = np.zeros(n_cls)
    if postprocess == "normsub":
        # Post-processing: per class, one shift for all cells keeps the noisy class total (Norm-Sub).
        totals = noisy.sum(axis=0)
        shifts = np.asarray([norm_sub_shift(noisy[:, c], float(totals[c])) for c in range(n_cls)])
        noisy = np.stack([norm_sub(noisy[:, c], float(totals[c])) for c in range(n_cls)], axis=1)
    else:
        noisy = np.maximum(noisy, 0)
    if smooth > 0.0:
        # Post-processing: shrink each leaf's class mix toward its parent's by a pseudo-count of
        # smooth x |classes| / count_eps records (the noise each leaf's counts carry); no data read.
        noisy = smooth_toward_parents(tree.parent, leaves, noisy, smooth * n_cls / count_eps)
    cut, cells, order = _ordered_cells(tree, leaves)
    return noisy[order], shifts, cut, cells


def _count_errors(noisy: np.ndarray, shifts: np.ndarray, scale: float, postprocess: str, smooth: float
                  ) -> Intervals:
    """Each leaf x class count's 95 % interval (post-processing of the public scale and the noisy shifts)."""
    if postprocess == "normsub" and smooth <= 0.0:
        d = np.where(np.isfinite(shifts), shifts, 0.0)
        return shifted_clamp_intervals(noisy, np.tile(d, noisy.shape[0]), scale,
                                       label="the discrete Laplace noise of each leaf x class count, through the "
                                             "Norm-Sub shift and clipping")
    label = "the discrete Laplace noise of each leaf x class count"
    if smooth > 0.0:
        label += " (not the smoothing toward the parent partition, which moves counts further)"
    return count_intervals(noisy, scale, lower=0.0, label=label)


def table_uncertainty(errors: Intervals, scale: float, postprocess: str = "clip", smooth: float = 0.0
                      ) -> dict[str, object]:
    """The manifest's ``uncertainty`` for a generalized table's counts."""
    formula = "DLap(b), b = 1/eps_counts: sd = sqrt(2t)/(1-t), t = exp(-1/b); h = least integer with " \
              "2 t^(h+1)/(1+t) <= 0.05; "
    formula += ("[v + d - h - 0.5, v + d + h + 0.5] clipped at 0 (low 0 where v = 0), d = the class's Norm-Sub "
                "shift" if postprocess == "normsub" and smooth <= 0.0 else "[max(0, v - h), v + h]")
    return manifest_section(accounts_for=errors.label, formula=formula, columns=("sd", "low", "high"), scale=scale,
                            ignores="range counts over generalized cells spread a cell's count over its range: "
                                    "that bias is not in these intervals (docs/accuracy.md)")


def diffgen_plus2(table: EncodedTable, epsilon: float, *, noise: NoiseSource, rounds: int | None = None,
                  **settings) -> GeneralizedTable:
    """DiffGen+2 (docs/diffgen.md, round 2): DiffGen+ with ``stop="auto"``.

    The "stop" candidate and its price per new partition are offered only while eps N~ < ``PLUS2_SWITCH``
    = 5,000, where the score is TV (later rounds are nearly blind); above it the score is Gini and all R
    rounds are played. Same budget
    split as :func:`diffgen_plus` (the noisy size is always paid: it decides R, the score and the stop).
    """
    return diffgen_plus(table, epsilon, noise=noise, rounds=rounds,
                        **{"stop": "auto", "switch": PLUS2_SWITCH, **settings})


#: DiffGen+3's weight of the misclassification gain (score = Gini gain + 1 x misclassification gain, Delta = 3)
PLUS3_MISCLASS = 1.0


def diffgen_plus3(table: EncodedTable, epsilon: float, *, noise: NoiseSource, rounds: int | None = None,
                  **settings) -> GeneralizedTable:
    """DiffGen+3 (docs/diffgen.md, round 3; the default of ``dprelease diffgen``): every round scores Gini gain + 1 x misclassification gain (Delta = 3) and
    draws with the monotone exponential mechanism, exp(eps_round u / 3); no "stop", all R rounds.

    Budget split (Mohammed et al., KDD 2011, Algorithm 1 with eq. 5's exponential mechanism per round and
    line 12's Laplace counts; the size count is ours)::

        size       one noisy count of D (discrete Laplace, Delta 1)               0.01 eps  (sets R)
        round i    one exponential mechanism, monotone, Delta 3, i = 1..R          0.7 (eps - size) / R
        counts     every leaf partition x class (discrete Laplace, Delta 1)        0.3 (eps - size)
        total      size + R rounds + counts = eps (sequential composition)

    R = :func:`auto_rounds` (eps N~). Why the monotone form is eps-DP here: docs/privacy.md section 4.7.
    """
    release = diffgen_plus(table, epsilon, noise=noise, rounds=rounds,
                           **{"score": "gini", "misclass": PLUS3_MISCLASS, "monotone": True, "stop": False,
                              **settings})
    release.manifest["parameters"]["method"] = "diffgen-plus3"
    return release
