"""DiffGen (Mohammed, Chen, Fung and Yu, KDD 2011): Algorithm 1, with the implementation of section 4.3.

Budget split (Algorithm 1 line 3 and Theorem 4.1), all on the one record set D::

    eps' = eps / (2 (|A_n| + 2h))
    line 4   split value of each numeric attribute's top interval   |A_n| x eps'   (sequential)
    line 7   candidate selection, once per round (eq. 5)              h x eps'
    line 9   split values of the new numeric children (eqs. 6-7)      h x eps'   (the two children are
             disjoint record sets: one eps' per round, parallel composition)
    line 12  noisy count of every leaf partition x class              eps / 2    (DLap of scale 2/eps)
    total = eps' (|A_n| + 2h) + eps/2 = eps

Where a round specializes a categorical value (no new numeric candidate) the
line-9 share is unused. Faithful mode (default) charges it anyway as
"reserved, unused" so the ledger always sums to exactly eps (an upper bound on
the loss). ``recycle=True`` (an improvement, switchable and measured in
docs/diffgen.md) instead adds every unused share to the line-12 count budget,
which adaptive sequential composition allows: the shares left over are a
function of earlier mechanism outputs only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from ..data.table import EncodedTable
from ..errors import ParameterError
from ..privacy import BudgetAccountant, NoiseSource, check_epsilon, exponential_mechanism, noisy_counts
from ..privacy.accountant import BudgetScope
from ..privacy.mechanisms import exponential_mechanism_disjoint, laplace_scale
from ..privacy.uncertainty import count_intervals
from ..limits import diffgen_range_notes
from ..release import NEIGHBOURS_ROW, build_manifest, records_run_start
from ..release.table import GeneralizedTable
from .partition import CutValue, PartitionTree, SplitIntervals, cut_label, ordered_cut, split_intervals
from .scores import SCORES, score_sensitivity, score_table, split_scores

if TYPE_CHECKING:
    from ..engine.base import TableData

__all__ = ["GeneralizedTable", "diffgen", "epsilon_prime", "split_candidates", "draw_split_point", "CITATION"]

# the paper, as every DiffGen manifest (DiffGen+ included) names it
CITATION = "Mohammed, Chen, Fung and Yu, Differentially private data release for data mining, KDD 2011 (Algorithm 1)"


def epsilon_prime(epsilon: float, n_numeric: int, h: int) -> float:
    """Algorithm 1 line 3: eps' = eps / (2(|A_n^pr| + 2h))."""
    return epsilon / (2.0 * (n_numeric + 2 * h))


def _splittable(tree: PartitionTree, v: int) -> bool:
    cv = tree.values[v]
    a = tree.schema.attributes[cv.attr]
    if a.kind == "categorical":
        return not a.taxonomy.is_leaf(cv.node)
    return (cv.hi - cv.lo >= 2) if a.integer else (cv.hi > cv.lo)


def _category_table(tree: PartitionTree, v: int, records: np.ndarray) -> np.ndarray:
    """|D_c^cls| for c in child(v), from the records of D_v (collected in the specialization scan)."""
    return tree.category_table(v, records)


@dataclass(frozen=True, slots=True)
class _Candidate:
    """A candidate's split point (numeric), class-count table over its children and score."""

    split: float | None
    table: np.ndarray
    score: float


def split_candidates(values: np.ndarray, y: np.ndarray, n_classes: int, lo: float, hi: float, integer: bool,
                     score: str) -> tuple[SplitIntervals, np.ndarray, np.ndarray]:
    """Eq. 6 inputs: the equal-score intervals of split points, their scores and log measures (log |Omega(I_i)|)."""
    iv = split_intervals(values, y, n_classes, lo, hi, integer)
    return iv, split_scores(iv.left, iv.total, score), np.log(iv.measure)


def draw_split_point(iv: SplitIntervals, g: int, noise: NoiseSource) -> float:
    """Eq. 7: a split point uniform in the chosen interval (data-independent given the interval: no charge)."""
    if iv.integer:
        return float(iv.low[g] + noise.integers(int(iv.measure[g]), 1)[0])
    return float(iv.low[g] + noise.uniform(1)[0] * (iv.high[g] - iv.low[g]))


def _choose_splits(tree: PartitionTree, values: list[int], records: list[np.ndarray], eps: float, score: str,
                   du: float, scope: BudgetScope, noise: NoiseSource, label: str, disjoint: bool) -> list[_Candidate]:
    """Eqs. 6-7: an interval by the exponential mechanism weighted by its measure, then a uniform point in it."""
    blocks, bases, ivs = [], [], []
    for v, recs in zip(values, records):
        iv = tree.value_split_intervals(v, recs)  # eq. 6's inputs (an engine: from its grouped counts)
        sc, base = split_scores(iv.left, iv.total, score), np.log(iv.measure)
        blocks.append(sc)
        bases.append(base)
        ivs.append(iv)
    if disjoint:
        picks = exponential_mechanism_disjoint(blocks, eps, sensitivity=du, scope=scope, noise=noise, label=label,
                                               log_base_measures=bases)
    else:
        (block,), (base,) = blocks, bases
        picks = [exponential_mechanism(block, eps, sensitivity=du, scope=scope, noise=noise, label=label,
                                       log_base_measure=base)]
    out = []
    for iv, g, sc in zip(ivs, picks, blocks):
        s = draw_split_point(iv, g, noise)
        left = iv.left[g]
        out.append(_Candidate(s, np.stack([left, iv.total - left]), float(sc[g])))
    return out


def _local_max(tree: PartitionTree, v: int, split: float | None) -> float:
    """Max summed over the leaf partitions on Link_v: sum_p sum_c max_cls |P_c^cls| (sensitivity 1).

    A record lies in one leaf partition and one child, so it moves one class count
    of one (partition, child) cell by one and the score by at most one.
    """
    link = tree.link[v]
    pos, rank = tree.positions(link)
    if pos.size == 0:
        return 0.0
    recs = tree.rec[pos]
    k, kids = tree.child_index(v, recs, split)
    n_cls = tree.schema.n_classes
    m = len(kids)
    cells = np.bincount((rank * m + k) * n_cls + tree.table.y[recs], minlength=link.size * m * n_cls)
    return float(cells.reshape(-1, n_cls).max(axis=1).sum())


@records_run_start
def diffgen(table: EncodedTable | TableData, epsilon: float, specializations: int, *, noise: NoiseSource,
            score: str = "max", recycle: bool = False, local: bool = False) -> GeneralizedTable:
    """Algorithm 1: h specializations chosen by the exponential mechanism, then noisy leaf x class counts.

    ``local=True`` (improvement, Max only): score a candidate by Max within each leaf
    partition it touches instead of over D_v as a whole (eq. 4 is global), so a
    split that separates the classes *given the current partitions* is rewarded.
    Same sensitivity (1) and budget; costs one scan of D per round.

    ``table`` may be an engine's :class:`~dprelease.engine.base.TableData` (``--engine spark``): the
    partition tree's bookkeeping stays here, its record passes run on the engine
    (:mod:`dprelease.relational.engine_tree`), and the same counts feed the same draws in the same order.
    """
    eps = check_epsilon(epsilon)
    h = int(specializations)
    if h < 1:
        raise ParameterError(f"--specializations must be at least 1, got {specializations}")
    if score not in SCORES:
        raise ParameterError(f"--score must be one of {SCORES}, got {score!r}")
    if local and score != "max":
        raise ParameterError("partition-local scores are implemented for --score max only")
    schema = table.schema
    numeric = schema.numeric
    eps_p = epsilon_prime(eps, len(numeric), h)
    du = score_sensitivity(score, schema.n_classes)
    accountant = BudgetAccountant(eps)
    scope = accountant.root()
    if isinstance(table, EncodedTable):
        tree = PartitionTree(table)
    else:
        from .engine_tree import EngineTree

        if local:
            raise ParameterError("--local (diffgen-local) runs on --engine local only")
        tree = EngineTree(table)
    cand: dict[int, _Candidate] = {}
    unused = 0.0
    all_records = tree.root_records()

    # Lines 1-2 are the PartitionTree's root. Line 4: split value of every numeric top value (sequential).
    for j in numeric:
        v = tree.cut[j][0]
        if not _splittable(tree, v):
            if recycle:
                unused += eps_p
            else:
                scope.spend(eps_p, f"line 4: reserved, unused ({schema.attributes[j].name} cannot be split)",
                            mechanism="reserved")
            continue
        (cand[v],) = _choose_splits(tree, [v], [all_records], eps_p, score, du, scope, noise,
                                    f"line 4: split value of {schema.attributes[j].name}", disjoint=False)
    # Line 5: scores of the categorical top values, one scan of D.
    for j, a in enumerate(schema.attributes):
        v = tree.cut[j][0]
        if a.kind == "categorical" and _splittable(tree, v):
            t = _category_table(tree, v, all_records)
            cand[v] = _Candidate(None, t, score_table(t, score))

    trace = []
    for i in range(1, h + 1):
        ids = [v for v in tree.cut_values() if v in cand]
        if not ids:  # every value is a taxonomy leaf / unit interval: a function of the cut only
            rest = 2 * eps_p * (h - i + 1)
            if recycle:
                unused += rest
            else:
                scope.spend(rest, f"lines 7+9: reserved, unused (rounds {i}..{h}: nothing left to specialize)",
                            mechanism="reserved")
            break
        # Line 7 (eq. 5).
        if local:
            scores = np.asarray([_local_max(tree, v, cand[v].split) for v in ids])
        else:
            scores = np.asarray([cand[v].score for v in ids])
        pick = exponential_mechanism(scores, eps_p, sensitivity=du, scope=scope,
                                     noise=noise, label=f"line 7: candidate selection, round {i}")
        v = ids[pick]
        chosen = cand.pop(v)
        trace.append((i, cut_label(schema, tree.values[v]), schema.attributes[tree.values[v].attr].name, chosen.split))
        # Line 8: the one scan of D_v.
        kids, kid_records = tree.specialize_counts(v, chosen.split)  # D_c's counts stay with the tree
        # Lines 9-10: new numeric children get split values (one eps' for both: disjoint records);
        # new categorical children get their counts from the same scan.
        num_kids = [(c, r) for c, r in zip(kids, kid_records)
                    if schema.attributes[tree.values[c].attr].kind == "numeric" and _splittable(tree, c)]
        if num_kids:
            picked = _choose_splits(tree, [c for c, _ in num_kids], [r for _, r in num_kids], eps_p, score, du,
                                    scope, noise, f"line 9: split values of the new numeric values, round {i}",
                                    disjoint=True)
            for (c, _), cd in zip(num_kids, picked):
                cand[c] = cd
        elif recycle:
            unused += eps_p
        else:
            scope.spend(eps_p, f"line 9: reserved, unused (round {i} made no new numeric value)",
                        mechanism="reserved")
        for c, r in zip(kids, kid_records):
            if schema.attributes[tree.values[c].attr].kind == "categorical" and _splittable(tree, c):
                t = _category_table(tree, c, r)
                cand[c] = _Candidate(None, t, score_table(t, score))

    # Line 12: noisy counts of every leaf partition x class (disjoint cells: sensitivity 1).
    count_eps = eps / 2.0 + unused
    leaves, exact = tree.leaf_class_counts()
    noisy = noisy_counts(exact, count_eps, scope=scope, noise=noise, label="line 12: leaf x class counts")
    noisy = np.maximum(noisy, 0)  # post-processing: round to non-negative integers

    cut, cells, order = _ordered_cells(tree, leaves)
    noisy = noisy[order]
    budget_split = {
        "epsilon_prime": eps_p,
        "formula": "eps' = eps / (2 (|A_n| + 2h)) (Algorithm 1 line 3)",
        "line_4_numeric_split_values": len(numeric) * eps_p,
        "line_7_candidate_selection": h * eps_p,
        "line_9_new_numeric_split_values": h * eps_p,
        "line_12_noisy_counts": count_eps,
        "recycled_unused": unused if recycle else 0.0,
    }
    # post-processing of the public scale: each count's interval, clipped at 0 as the count is
    errors = count_intervals(noisy, laplace_scale(count_eps, 1), lower=0.0,
                             label="the discrete Laplace noise of each leaf x class count")
    release = GeneralizedTable(schema, cut, cells, noisy.astype(np.int64), {}, trace, accountant, errors=errors)
    manifest = build_manifest(
        "diffgen", epsilon=eps, noise=noise, accountant=accountant, domain=schema.describe(),
        parameters={"specializations": h, "score": score, "score_sensitivity": du, "recycle": recycle,
                    "local_scores": local, "method": "diffgen-local" if local else "diffgen"},
        release=release.facts(), budget_split=budget_split,
        # -H past what the schema allows: a public rule of dprelease.limits (the CLI also says it on stderr)
        notes=[CITATION, "counts: discrete Laplace, rounded to non-negative integers (post-processing)",
               *diffgen_range_notes(schema, h)],
        privacy_unit="record", neighbours=NEIGHBOURS_ROW,
    )
    from .diffgen_plus import table_uncertainty

    manifest["uncertainty"] = table_uncertainty(errors, laplace_scale(count_eps, 1))
    return replace(release, manifest=manifest)


def _ordered_cells(tree: PartitionTree, leaves: np.ndarray
                   ) -> tuple[tuple[tuple[CutValue, ...], ...], np.ndarray, np.ndarray]:
    """The final cut in domain order, each leaf's cut indices with rows sorted by the cut (never by data),
    and that row order (to apply to the counts)."""
    cut, lookups = [], []
    for ids in tree.cut:
        order = ordered_cut(tree.values, ids)
        cut.append(tuple(tree.values[v] for v in order))
        lookup = np.full(len(tree.values), -1, dtype=np.int64)
        lookup[np.asarray(order, dtype=np.int64)] = np.arange(len(order), dtype=np.int64)
        lookups.append(lookup)
    order = _row_order(tree, leaves, lookups, [len(ids) for ids in tree.cut])
    ordered = leaves[order]
    cells = np.empty((leaves.size, len(tree.cut)), dtype=np.int64)  # built in its final order: no second copy
    for j, lookup in enumerate(lookups):
        cells[:, j] = lookup[tree.gen[ordered, j]]
    return tuple(cut), cells, order


def _row_order(tree: PartitionTree, leaves: np.ndarray, lookups: list[np.ndarray], sizes: list[int]) -> np.ndarray:
    """The order of the leaves by their cut indices (first attribute most significant), as ``np.lexsort`` of the
    cell columns: by one mixed-radix key where it fits in 63 bits."""
    if not leaves.size:
        return np.zeros(0, dtype=np.int64)
    if math.prod(max(z, 1) for z in sizes) >= 1 << 62:
        cells = np.stack([lookup[tree.gen[leaves, j]] for j, lookup in enumerate(lookups)], axis=1)
        return np.lexsort(cells.T[::-1])
    key = np.zeros(leaves.size, dtype=np.int64)
    for j, (lookup, z) in enumerate(zip(lookups, sizes)):
        key *= max(z, 1)
        key += lookup[tree.gen[leaves, j]]
    return np.argsort(key, kind="stable")
