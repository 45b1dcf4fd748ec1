"""Incremental releases over DiffPart-Prefix's tree: IncTDPart's framework with the prefix partitioning.

IncTDPart (Zhang et al., 2013) sanitizes the initial dataset with "any set-valued data sanitization
algorithm" (section 4.1), keeps the resulting partition tree and, for every update, routes the batch's
records down that tree and adds their noisy counts to the nodes' p-sums (Definition 6). Here the tree is
DiffPart-Prefix's (:mod:`dprelease.setvalued.prefixpart`): a private frequency-ordered prefix trie.

Budget (``epsilon_append`` = epsilon/(U+1) under the paper's accounting, epsilon under parallel accounting):

* append 0 (the initial dataset): DiffPart-Prefix's three mechanisms -- item order, PrivTree structure,
  class counts: 0.15/0.5/0.35 of epsilon_append under the paper's accounting, 0.1/0.7/0.2 under parallel
  accounting (``STREAM_SHARES``) -- composed sequentially on the batch;
* append i >= 1: the batch's records are routed down the public trie (no budget: the structure is a
  function of earlier noisy outputs); every record ends in exactly one class, so one vector of exact
  discrete Laplace counts of all classes (sensitivity 1) costs epsilon_append, added to the p-sums.

Refinement (``refine=True``; "accumulate, then split"): after an append, a class whose p-sum passes
``refine_at`` noise scales, and which is not at the last level, is split by post-processing: its two
cells become classes that collect counts from the next append on, while the class keeps its p-sum as
the generalized record of the records seen so far. Deciding on p-sums already paid for costs nothing.

The release (post-processing of the p-sums): classes whose p-sum is below ``merge_below`` times their own
noise scale sqrt(sum 1/eps_m^2) are merged bottom-up into their parent prefix; each remaining class is a
record pattern with p-sum copies (:meth:`PrefixTree.release`).

Expansion (``expand=True``, the default of new streams; post-processing, no budget): a class that stopped at
level L is a *generalized* record -- its records' items of rank >= L are unknown, and releasing the bare
prefix drops them all. :func:`expand_classes` fills them in: for every rank r, the item's count still missing
from the release (its noisy support from append 0, scaled by the released total over append 0's noisy total,
minus its count in the classes that know bit r) is shared over the classes that do not know bit r, in
proportion to their counts (independence within a class). Inputs: the noisy p-sums, the noisy item supports
and append 0's noisy total -- all already paid for -- so the release stays epsilon-DP.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..data.transactions import TransactionDB
from ..data.universe import Universe
from ..engine import bitmasks
from ..errors import BudgetExceededError, ParameterError
from ..privacy import BudgetAccountant, NoiseSource, check_epsilon, noisy_counts
from ..privacy.uncertainty import manifest_section
from ..release import SetValuedRelease, build_manifest
from .inctdpart import StreamAccounting, _NoiseInfo, resolve_privacy_unit
from .prefixpart import (
    DEFAULT_BETA, DEFAULT_MERGE_BELOW, DEFAULT_RECORD_BOUND, DEFAULT_SELECTION_SHARE,
    DEFAULT_STRUCTURE_SHARE, PrefixTree, _patterns_to_itemsets, build_prefix_tree,
)

__all__ = ["PrefixStream", "DEFAULT_REFINE_AT", "STREAM_SHARES", "STREAM_MAX_ITEMS", "expand_classes"]

# the stream's F: one 62-bit word of ranks, so that the state keeps each trie pattern as one INTEGER
STREAM_MAX_ITEMS = bitmasks.WORD_BITS

DEFAULT_REFINE_AT = 8.0  # noise scales: a class this far above zero has records to refine
# Under parallel accounting the first append spends more on the structure than a one-off DiffPart-Prefix
# release (0.15/0.5/0.35): every later append counts every class again at the full epsilon, so the initial
# counts matter less and the trie more. Under the paper's accounting every append has only epsilon/(U+1)
# and the initial counts carry most of the data, so the one-off split is kept. Measured on MSNBC (section 5
# grid, 3 seeds; docs/inctdpart.md): parallel 0.1/0.7 is 0.096-0.142 against 0.101-0.152 for 0.15/0.5; paper
# 0.15/0.5 is better at U >= 30 (0.266-0.289 against 0.285-0.353 at U = 50).
STREAM_SHARES = {"parallel": (0.1, 0.7), "paper": (DEFAULT_SELECTION_SHARE, DEFAULT_STRUCTURE_SHARE)}


@dataclass(eq=False)
class PrefixStream(StreamAccounting):
    """The state of a prefix stream in memory: parameters, the ledger, the trie and the classes' p-sums."""

    n_items: int
    epsilon: float
    updates: int | None
    accounting: str = "paper"
    refine: bool = False
    refine_at: float = DEFAULT_REFINE_AT
    merge_below: float = DEFAULT_MERGE_BELOW
    selection_share: float | None = None  # default by accounting: STREAM_SHARES
    structure_share: float | None = None
    beta: float = DEFAULT_BETA
    privacy_unit: str | None = None  # resolved in __post_init__ (inctdpart.resolve_privacy_unit)
    max_batches_per_person: int | None = None
    expand: bool = False  # fill in the dropped items of generalized classes (post-processing; expand_classes)
    initial_total: int | None = None  # append 0's noisy total (the sum of its noisy class counts)
    ledger: list[float] = field(default_factory=list)
    tree: PrefixTree | None = None
    psum: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    inv2: np.ndarray = field(default_factory=lambda: np.zeros(0))  # sum of 1/eps^2 of each node's counts
    n: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # counts in each p-sum

    def __post_init__(self) -> None:
        self.epsilon = check_epsilon(self.epsilon)
        if self.accounting not in ("paper", "parallel"):
            raise ParameterError(f"--accounting must be paper or parallel, got {self.accounting!r}")
        if self.updates is None and self.accounting == "paper":
            raise ParameterError("--updates is required with --accounting paper (each append spends epsilon/(U+1))")
        if self.updates is not None and (int(self.updates) != self.updates or self.updates < 0):
            raise ParameterError(f"--updates must be a whole number >= 0, got {self.updates}")
        self.privacy_unit, self.max_batches_per_person = resolve_privacy_unit(
            self.accounting, self.privacy_unit, self.max_batches_per_person, self.updates)
        if not (self.refine_at > 0 and math.isfinite(self.refine_at)):
            raise ParameterError(f"refine threshold must be a finite number > 0, got {self.refine_at}")
        sel, struct = STREAM_SHARES[self.accounting]
        self.selection_share = sel if self.selection_share is None else float(self.selection_share)
        self.structure_share = struct if self.structure_share is None else float(self.structure_share)

    # -- budget: epsilon_prime, max_appends, appends, epsilon_spent, accountant (StreamAccounting) ---------

    # -- one append ---------------------------------------------------------------------------------------
    def append(self, db: TransactionDB, noise: NoiseSource) -> dict[str, object]:
        """Sanitize one batch under epsilon_append and fold it into the p-sums; returns what changed."""
        if db.n_items != self.n_items:
            raise ParameterError("the batch and the stream disagree on the number of items")
        k = self.appends
        if self.max_appends is not None and k >= self.max_appends:
            raise BudgetExceededError(
                f"the stream allows the initial dataset plus U = {self.updates} updates ({self.max_appends} appends) "
                f"and all {k} have been made: append refused, nothing changed")
        eps = self.epsilon_prime
        _, stream_scope = self._replay()
        stream_scope.spend(eps, f"append {k}", mechanism="composite")  # BudgetExceededError before any noise
        scope = BudgetAccountant(eps, keep_ledger=False).root()
        new_nodes = 0
        if self.tree is None:
            eps_counts = eps * (1.0 - self.selection_share - self.structure_share)
            self.tree, true_all = build_prefix_tree(
                db, self.n_items, self.selection_share * eps, self.structure_share * eps, scope=scope,
                noise=noise, record_bound=DEFAULT_RECORD_BOUND, max_items=STREAM_MAX_ITEMS, beta=self.beta)
            self.psum = np.zeros(self.tree.n_nodes, dtype=np.int64)
            self.inv2 = np.zeros(self.tree.n_nodes)
            self.n = np.zeros(self.tree.n_nodes, dtype=np.int64)
            new_nodes = self.tree.n_nodes
        else:
            eps_counts = eps
            record_class = self.tree.classes_of(db)
            true_all = np.bincount(record_class[record_class >= 0], minlength=self.tree.n_nodes)
        classes = np.flatnonzero(self.tree.is_class)
        true = true_all[classes]
        noisy = noisy_counts(true, eps_counts, scope=scope, noise=noise, label="class counts")
        self.psum[classes] += noisy
        if k == 0:
            self.initial_total = int(noisy.sum())  # a noisy value: post-processing of append 0's counts
        self.inv2[classes] += 1.0 / eps_counts**2
        self.n[classes] += 1
        if self.refine:
            new_nodes += self._refine()
        self.ledger.append(eps)
        return {"append": k, "epsilon": eps, "classes": int(classes.size), "new_nodes": new_nodes,
                "counts": list(zip(classes.tolist(), noisy.tolist(), [eps_counts] * classes.size))}

    def _refine(self) -> int:
        """Post-processing ("accumulate, then split"): split classes whose p-sum passes refine_at noise scales."""
        t = self.tree
        assert t is not None
        cand = np.flatnonzero(t.is_class & (t.level < t.m) & (t.child[:, 0] < 0)
                              & (self.psum >= self.refine_at * np.sqrt(np.maximum(self.inv2, 1e-300))))
        if cand.size == 0:
            return 0
        first = t.n_nodes + 2 * np.arange(cand.size, dtype=np.int64)  # new cells in ascending parent id: public
        j = t.level[cand]  # the next level's item rank
        bits = np.tile(np.array([0, 1], dtype=np.int64), cand.size)
        par = np.repeat(cand, 2)
        t.pattern = np.concatenate([t.pattern, bitmasks.with_bit(t.pattern[par], np.repeat(j, 2), bits)])
        t.parent = np.concatenate([t.parent, par])
        t.level = np.concatenate([t.level, np.repeat(j + 1, 2)])
        t.is_class = np.concatenate([t.is_class, np.ones(2 * cand.size, dtype=bool)])
        t.child = np.concatenate([t.child, np.full((2 * cand.size, 2), -1, dtype=np.int64)])
        t.child[cand, 0], t.child[cand, 1] = first, first + 1
        # the split class keeps its p-sum (the generalized record of the records seen so far) but is no
        # longer a class: new records go down to its cells
        t.is_class[cand] = False
        self.psum = np.concatenate([self.psum, np.zeros(2 * cand.size, dtype=np.int64)])
        self.inv2 = np.concatenate([self.inv2, np.zeros(2 * cand.size)])
        self.n = np.concatenate([self.n, np.zeros(2 * cand.size, dtype=np.int64)])
        return 2 * int(cand.size)

    # -- the release ----------------------------------------------------------------------------------
    def released(self) -> tuple[list[np.ndarray], np.ndarray]:
        t = self.tree
        if t is None:
            return [], np.zeros(0, dtype=np.int64)
        need = np.maximum(1, np.ceil(self.merge_below * np.sqrt(self.inv2) - 1e-9)).astype(np.int64)
        need[self.inv2 == 0] = need.max()  # nodes never counted hold only merged mass: the strictest rule
        if self.expand and self.initial_total:
            total = t.merged(self.psum, need)
            out = np.flatnonzero(total >= need)
            pats, cnts = expand_classes(t, t.pattern[out], total[out], t.level[out], self.initial_total)
            return _patterns_to_itemsets(pats, cnts, t.F, t.n_items, t.noisy_support)
        return t.release(self.psum, need)

    def release(self, universe: Universe, noise_info: dict[str, object]) -> SetValuedRelease:
        """The current release with its manifest (post-processing only: spends nothing; deterministic)."""
        sets, counts = self.released()
        manifest = build_manifest(
            "inctdpart-prefix", epsilon=self.epsilon,
            parameters={"updates": self.updates, "accounting": self.accounting, "refine": self.refine,
                        "refine_at": self.refine_at, "merge_below": self.merge_below, "expand": self.expand,
                        "epsilon_per_append": self.epsilon_prime, "appends": self.appends}
            | self._unit_parameters(),
            noise=_NoiseInfo(noise_info), accountant=self.accountant(), domain=universe.describe(),
            release={"records": int(counts.sum()) if counts.size else 0, "distinct_records": len(sets)},
            budget_split={
                "per_append": ("epsilon on each append's own batch (parallel composition over disjoint batches "
                               "for a record; a person in k batches is charged k appends)"
                               if self.accounting == "parallel" else "epsilon/(U+1) per append (sequential)"),
                "append_0": f"DiffPart-Prefix: {self.selection_share} item order, {self.structure_share} PrivTree "
                            f"structure, the rest class counts",
                "updates": "all of it on one count per class (the batch routed down the public trie)",
                "release": "p-sums of the classes, merged below one noise scale (post-processing)"
                           + ("; generalized classes expanded by the noisy item supports (post-processing)"
                              if self.expand else ""),
            },
        )
        self._add_uncertainty(manifest)
        return SetValuedRelease(sets, counts, universe, self.with_privacy_unit(manifest))

    def _add_uncertainty(self, manifest: dict[str, object]) -> None:
        """The p-sums' error bars (post-processing of the public per-append scales): a class's p-sum adds one
        discrete Laplace count per append it took, of variance <= 2/eps_k^2, so sqrt(sum 1/eps_k^2) (inv2), at
        its largest over the classes, is a single scale whose Laplace variance bounds every p-sum's."""
        if self.tree is None or not self.inv2.size or float(self.inv2.max()) <= 0:
            return
        manifest["uncertainty"] = manifest_section(
            accounts_for="the discrete Laplace noise summed into each released p-sum (every append's class "
                         "count), at the largest p-sum's scale (a cell merged from several classes carries more)",
            formula="b = sqrt(max over classes of sum_k 1/eps_k^2); a count summing n released cells: sd = sqrt(n) "
                    "sd(DLap(b)), half-width z sd, z = ln(20)/sqrt(2)",
            ignores="records cut down to their frequent items, classes merged into their parent and generalized "
                    "classes (structure); coverage measured in docs/accuracy.md",
            scale=math.sqrt(float(self.inv2.max())))


def expand_classes(tree: PrefixTree, patterns: np.ndarray, counts: np.ndarray, levels: np.ndarray,
                   initial_total: int) -> tuple[np.ndarray, np.ndarray]:
    """Fill in the items a generalized class dropped (post-processing of noisy values only; module docstring).

    ``patterns``/``counts``/``levels``: the released classes ((classes, words) bit masks over F, noisy totals,
    the level at which each stopped: bits of rank < level are known). For rank r, p_r = (S_r - known_r) /
    hidden_r, clipped to [0, 1]: S_r the noisy weighted support of F[r] from append 0 scaled by (released total /
    ``initial_total``), known_r the released count with bit r set among classes that know bit r, hidden_r the
    count of those that do not. Then, rank by rank, round(count * p_r) of every class that does not know bit r gets the item
    (deterministic rounding: the same p-sums give the same release). Returns patterns and counts (> 0).
    """
    m = tree.m
    pats = np.asarray(patterns, dtype=np.int64)
    if pats.ndim == 1:  # one word per class
        pats = pats[:, None]
    cnts = np.asarray(counts, dtype=np.int64)
    levs = np.asarray(levels, dtype=np.int64)
    total = int(cnts.sum())
    if m == 0 or total <= 0 or initial_total <= 0:
        return pats, cnts
    support = np.clip(tree.noisy_support[tree.F], 0.0, None) * (total / float(initial_total))
    for r in range(m):
        knows = levs > r
        known = float(cnts[knows & (bitmasks.bit_column(pats, r) == 1)].sum())
        hidden_at = np.flatnonzero(~knows)
        hidden = float(cnts[hidden_at].sum())
        if hidden <= 0:
            continue
        p = min(1.0, max(0.0, (float(support[r]) - known) / hidden))
        w = np.rint(cnts[hidden_at] * p).astype(np.int64)
        add = w > 0
        if not add.any():
            continue
        cnts[hidden_at] -= w
        pats = np.concatenate([pats, bitmasks.with_bit(pats[hidden_at[add]], r, np.ones(int(add.sum())))])
        cnts = np.concatenate([cnts, w[add]])
        levs = np.concatenate([levs, levs[hidden_at[add]]])
        keep = cnts > 0
        pats, cnts, levs = pats[keep], cnts[keep], levs[keep]
    return pats, cnts
