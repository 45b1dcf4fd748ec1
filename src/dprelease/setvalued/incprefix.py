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
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..data.transactions import TransactionDB
from ..data.universe import Universe
from ..errors import BudgetExceededError, ParameterError
from ..privacy import BudgetAccountant, NoiseSource, check_epsilon, noisy_counts
from ..release import SetValuedRelease, build_manifest
from .inctdpart import StreamAccounting, _NoiseInfo
from .prefixpart import (
    DEFAULT_BETA, DEFAULT_MAX_ITEMS, DEFAULT_MERGE_BELOW, DEFAULT_RECORD_BOUND, DEFAULT_SELECTION_SHARE,
    DEFAULT_STRUCTURE_SHARE, PrefixTree, build_prefix_tree,
)

__all__ = ["PrefixStream", "DEFAULT_REFINE_AT", "STREAM_SHARES"]

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
            self.tree, record_class = build_prefix_tree(
                db, self.n_items, self.selection_share * eps, self.structure_share * eps, scope=scope,
                noise=noise, record_bound=DEFAULT_RECORD_BOUND, max_items=DEFAULT_MAX_ITEMS, beta=self.beta)
            self.psum = np.zeros(self.tree.n_nodes, dtype=np.int64)
            self.inv2 = np.zeros(self.tree.n_nodes)
            self.n = np.zeros(self.tree.n_nodes, dtype=np.int64)
            new_nodes = self.tree.n_nodes
        else:
            eps_counts = eps
            record_class = self.tree.classes_of(db)
        classes = np.flatnonzero(self.tree.is_class)
        true = np.bincount(record_class[record_class >= 0], minlength=self.tree.n_nodes)[classes]
        noisy = noisy_counts(true, eps_counts, scope=scope, noise=noise, label="class counts")
        self.psum[classes] += noisy
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
        t.pattern = np.concatenate([t.pattern, t.pattern[par] | (bits << np.repeat(j, 2))])
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
        return t.release(self.psum, need)

    def release(self, universe: Universe, noise_info: dict[str, object]) -> SetValuedRelease:
        """The current release with its manifest (post-processing only: spends nothing; deterministic)."""
        sets, counts = self.released()
        manifest = build_manifest(
            "inctdpart-prefix", epsilon=self.epsilon,
            parameters={"updates": self.updates, "accounting": self.accounting, "refine": self.refine,
                        "refine_at": self.refine_at, "merge_below": self.merge_below,
                        "epsilon_per_append": self.epsilon_prime, "appends": self.appends},
            noise=_NoiseInfo(noise_info), accountant=self.accountant(), domain=universe.describe(),
            release={"records": int(counts.sum()) if counts.size else 0, "distinct_records": len(sets)},
            budget_split={
                "per_append": ("epsilon on each append's own batch (parallel composition over disjoint batches)"
                               if self.accounting == "parallel" else "epsilon/(U+1) per append (sequential)"),
                "append_0": f"DiffPart-Prefix: {self.selection_share} item order, {self.structure_share} PrivTree "
                            f"structure, the rest class counts",
                "updates": "all of it on one count per class (the batch routed down the public trie)",
                "release": "p-sums of the classes, merged below one noise scale (post-processing)",
            },
        )
        return SetValuedRelease(sets, counts, universe, manifest)
