"""IncTDPart (Zhang et al., 2013): incremental set-valued releases over a TBP-tree.

Budget split (section 4.2 and Theorems 2 and 4):

* epsilon' = epsilon / (U + 1) per release (Algorithm 1, line 3). The initial dataset
  and each of the at most U updates is one *append*; each append is charged
  epsilon' once on the stream's accountant (sequential composition, Theorem 3), so
  U + 1 appends spend exactly epsilon and the (U + 2)-th is refused before any
  noise is drawn.
* Inside one append the DiffPart split is used on the batch (section 4.1 and
  Procedure 1 line 5): epsilon'/2 guides partitioning, a partition operation at
  node p spends alpha = p.unused / |InternalNodes(p.cut)| (Procedure 1, lines 5 and
  14-15) on noisy counts of *all* 2^l - 1 sub-partitions at once (disjoint records:
  parallel composition), and the leaf-level operation spends epsilon'/2 + unused,
  so every chain of one append sums to at most epsilon' (checked by an accountant
  with total epsilon').

Thresholds (section 4.3): a node whose p-sum is built from noisy counts with budgets
alpha_1..alpha_n is compared with theta = sqrt(2) * C * sum_m(1/alpha_m) / n^2 --
the mean of eq. 6 (C = C1, partitioning) or eq. 7 (C = C2, leaf release) taken per
count, the reading that reproduces Example 3 (alpha_1 = alpha_2 = epsilon'/6 gives
theta_1 = 3*sqrt(2)*C1/epsilon') and reduces to the static sqrt(2)*C/alpha for n = 1.
See docs/inctdpart.md for every reading of Procedure 1.

Reading of Procedure 1 that keeps the guarantee (each point is post-processing of
noisy counts, so which nodes exist, are visited or are released never depends on
the raw data except through a mechanism):

* (R2) a node visited in an append gets one noisy count of the batch's records for
  every stored child (also when the true count is 0);
* (R3) a cell that is not stored becomes a node only when its noisy count passes the
  new-cell threshold; cells with no record go through test-and-generate (never
  enumerated); ``new_cells="semi"`` instead stores every cell with noisy count >= 1
  (eq. 5, "0 < p-sum"), which reproduces Example 2 but grows without bound;
* (R4, default ``new_cells="first-visit"``) a partition split in an earlier append
  keeps its split (FollowPreviousTraces): records go down its stored children only,
  and new cells are tested the first time a node is split; ``"every-visit"`` tests
  them again at every visit (lines 18-23 at face value);
* (R5) a stored child is *non-empty* when p-sum >= theta_1 (eq. 5) and is then
  visited; otherwise it is *semi-non-empty*, keeps its p-sum and is not visited;
* (R6) the release is every stored leaf partition whose p-sum >= theta_2, with p-sum
  copies (leaf p-sums, section 4.1);
* (R7) for new non-leaf cells the threshold is at least ln(n_new/2)/alpha, n_new the
  public number of cells not stored, so false partitions cannot multiply.

The initial dataset is append 0 on an empty tree: DiffPart's partitioning with
these thresholds, which builds TBP-Tree_(0) (Algorithm 1, line 4).

Two loops run an append, both through :meth:`TBPTree._operate` (one partition operation, on the driver, from a
node's exact counts per child mask): the one partition loop over the in-memory arrays (default), and the
level-wise loop (:meth:`TBPTree._append_level_wise`, one data pass per level of the tree through the engine's
``Partitioner``), which ``stream append --engine spark`` runs and ``--level-wise`` runs locally.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from ..data.taxonomy import ContextFreeTaxonomy
from ..data.transactions import TransactionDB
from ..data.universe import Universe
from ..engine.base import LevelOp, TransactionData
from ..engine.kernels import group_by_mask
from ..engine.local import LocalTransactions, as_transaction_data
from ..errors import BudgetExceededError, ParameterError
from ..privacy.accountant import round_up
from ..privacy import (
    BudgetAccountant, BudgetScope, NoiseSource, ThresholdRelease, check_epsilon, noisy_counts, threshold_counts,
    zero_cell_threshold,
)
from ..privacy.uncertainty import dlap_half_width, dlap_variance, manifest_section, sum_multiplier
from ..release import setvalued as _release_module  # its _CANONICAL_ORDER switch (tests, the audit)
from ..release import SetValuedRelease, build_manifest
from .diffpart import (
    partition_steps,
    DEFAULT_FANOUT,
    MAX_FANOUT,
    child_masks,
    choose_expansion_node,
    distinct_empty_masks,
    operation_budget,
    replace_node,
)

__all__ = [
    "DEFAULT_C1", "DEFAULT_C2", "DEFAULT_FANOUT", "TBPNode", "TBPTree", "AppendDelta", "RouteEvent",
    "p_sum_threshold", "append_seed", "NODE_CLASSES", "THETA_RULES", "NEW_CELL_RULES", "PRIVACY_UNITS",
    "resolve_privacy_unit", "privacy_unit_text", "StreamAccounting", "StreamBudget",
]

_SQRT2 = math.sqrt(2.0)
_NO_MASKS = np.zeros(0, dtype=np.int64)  # a node that no record of the batch reaches

# Section 4.3 leaves C1, C2 to the publisher. Every visit of a split partition tests its
# 2^l - 1 cells again (not once, as in DiffPart), and a false non-leaf cell is visited and
# tested in turn: about (2^l - 1) * exp(-sqrt(2)*C1)/2 false children per visit, which stays
# below 1 (no runaway growth) for l = 10 when C1 > ln(1023)/sqrt(2) = 4.9. Leaves do not
# recurse, so C2 = 3 (about 7 false leaves per leaf-level visit for l = 10) is enough.
# Kept here (not imported) so tuning DiffPart does not silently change a stream's thresholds.
DEFAULT_C1 = 5.0
DEFAULT_C2 = 3.0

# node classes kept in the state (Definition 7 plus the root and the leaf partitions)
NODE_CLASSES = ("root", "non-empty", "semi-non-empty", "leaf-released", "leaf-held")


THETA_RULES = ("example3", "mean")
# paper: epsilon/(U+1) per append, appends compose sequentially (Theorems 2-4).
# parallel: each append reads only its own batch (disjoint records) plus earlier noisy outputs, so it is
# charged the full epsilon against that batch and appends compose in parallel (docs/inctdpart.md).
ACCOUNTING_RULES = ("paper", "parallel")
# paper: FollowPreviousTraces spends alpha on a noisy count of every stored child of every visited node (R2).
# free: a split node's non-empty children are followed without a count (the split is public); only
# semi-non-empty children are counted, and the leaf counts get the whole append budget.
ROUTING_RULES = ("paper", "free")
NEW_CELL_RULES = ("first-visit", "every-visit", "semi")
# What two neighbouring streams differ by (the unit a stream's epsilon protects):
# person: one person's records, at most one in each batch, in any number of batches (the paper's accounting
#   protects it at epsilon over the whole stream; parallel accounting at min(K, U + 1) * epsilon with a public
#   bound K on the batches a person's records are in);
# record: one record in one batch (parallel accounting protects it at epsilon); it protects a person only
#   when every person has at most one record in the whole stream.
PRIVACY_UNITS = ("person", "record")


def resolve_privacy_unit(accounting: str, privacy_unit: str | None, max_batches_per_person: int | None,
                         updates: int | None, *, required: bool = False) -> tuple[str, int | None]:
    """The privacy unit a stream declares, checked against its accounting; returns (unit, K).

    The paper's accounting protects a person (its default; ``record`` and K are refused: they would
    declare less than holds, or a bound that changes nothing). Parallel accounting protects a record; a
    person only with a bound on the batches a person's records are in, K or U + 1 (else refused).
    ``required``: parallel accounting without a declaration is refused (``stream init``); in-memory
    research runs default to ``record``, which is what parallel accounting protects."""
    if max_batches_per_person is not None:
        k = max_batches_per_person
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ParameterError(f"--max-batches-per-person must be a whole number >= 1, got {k!r}")
        max_batches_per_person = int(k)
    if privacy_unit is not None and privacy_unit not in PRIVACY_UNITS:
        raise ParameterError(f"--privacy-unit must be one of {', '.join(PRIVACY_UNITS)}, got {privacy_unit!r}")
    if accounting == "paper":
        if privacy_unit == "record":
            raise ParameterError("--privacy-unit record goes with --accounting parallel: the paper's accounting "
                                 "(epsilon/(U+1) per append) protects a person across batches (--privacy-unit "
                                 "person)")
        if max_batches_per_person is not None:
            raise ParameterError("--max-batches-per-person goes with --accounting parallel --privacy-unit person "
                                 "(the paper's accounting protects a person in every batch already)")
        return "person", None
    if privacy_unit is None:
        if required:
            raise ParameterError("--accounting parallel needs --privacy-unit: record (epsilon protects one record "
                                 "in one batch, a person only if they have one record in the whole stream) or "
                                 "person (with --max-batches-per-person K: K*epsilon per person)")
        privacy_unit = "record"
    if privacy_unit == "record":
        if max_batches_per_person is not None:
            raise ParameterError("--max-batches-per-person goes with --privacy-unit person (a record is in one "
                                 "batch)")
        return "record", None
    if max_batches_per_person is None and updates is None:
        raise ParameterError("--accounting parallel --privacy-unit person needs a bound on the batches a person's "
                             "records are in: --max-batches-per-person K (K*epsilon per person) or --updates U "
                             "((U+1)*epsilon); without a bound use --accounting paper")
    return "person", max_batches_per_person


def privacy_unit_text(privacy_unit: str, max_batches_per_person: int | None = None) -> str:
    """What two neighbouring streams differ by, in words (manifests and ``stream status``)."""
    if privacy_unit == "record":
        return ("one record in one batch; a person is protected at this epsilon only if they have one record in "
                "the whole stream")
    bound = "" if max_batches_per_person is None else f", in at most {max_batches_per_person} batches"
    return f"one person's records, at most one in each batch{bound}"


def p_sum_threshold(inv_alpha_sum: float, n: int, c: float, rule: str = "example3") -> float:
    """theta for a p-sum of n noisy counts whose budgets have sum(1/alpha_m) = inv_alpha_sum (eqs. 6-7).

    theta = sqrt(2)*C*sum_m(1/alpha_m)/n^2: the mean of the per-count thresholds
    sqrt(2)*C/alpha_m (eq. 6/7) divided by n. Example 3: alpha_1 = alpha_2 = e'/6
    gives 3*sqrt(2)*C1/e'. For n = 1 it is the static threshold sqrt(2)*C/alpha.
    ``rule="mean"`` is eq. 6/7 as printed (the plain mean, 6*sqrt(2)*C1/e' on Example 3).
    """
    if n <= 0:
        return math.inf
    if rule == "mean":
        return _SQRT2 * c * inv_alpha_sum / n
    return _SQRT2 * c * inv_alpha_sum / (n * n)


def append_seed(seed: int, append_no: int) -> int:
    """Seed of append ``append_no`` of a seeded (experiment-mode) stream: reproducible, distinct per append."""
    state = np.random.SeedSequence([int(seed) & (2**63 - 1), int(append_no)]).generate_state(2, np.uint32)
    return int(state[0]) << 32 | int(state[1])


@dataclass(slots=True)
class TBPNode:
    """One partition of the TBP-tree: a hierarchy cut, its p-sum and the expansion chosen for it.

    ``mask`` says which children of the parent's expanded taxonomy node the cut took;
    ``expand`` is the taxonomy node this partition is split on (-1 until first
    visited; chosen uniformly among the highest nodes, data-independent).
    ``psum``/``n``/``inv_alpha`` summarise its noisy counts (the history is in the state); ``noise_var`` is the
    variance of the noise summed into ``psum`` (the sum of each count's discrete Laplace variance, public scales).
    """

    id: int
    parent: int
    mask: int
    cut: tuple[int, ...]
    leaf: bool
    created: int
    expand: int = -1
    psum: int = 0
    n: int = 0
    inv_alpha: float = 0.0
    noise_var: float = 0.0
    children: dict[int, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RouteEvent:
    """A visited partition in one append: node id, the taxonomy node split, epsilon, rows routed in."""

    node: int
    expand: int
    epsilon: float
    records: int
    leaf_level: bool


@dataclass(slots=True)
class AppendDelta:
    """What one append changed: new nodes, new noisy counts (node, nc, alpha), newly fixed expansions."""

    append_no: int
    epsilon: float
    seed: int | None
    new_nodes: list[int] = field(default_factory=list)
    counts: list[tuple[int, int, float]] = field(default_factory=list)
    expanded: list[int] = field(default_factory=list)
    trace: list[RouteEvent] = field(default_factory=list)
    chain_max: float = 0.0


class StreamAccounting:
    """The budget of a stream, shared by :class:`TBPTree` and the prefix stream: ``epsilon``, ``updates`` (U or
    None), ``accounting`` ("paper": epsilon/(U+1) per append, sequential, Theorem 3; "parallel": epsilon per
    append against its own disjoint batch) and ``ledger`` (epsilon charged per append, in order)."""

    epsilon: float
    updates: int | None
    accounting: str
    ledger: list[float]
    privacy_unit: str
    max_batches_per_person: int | None

    @property
    def epsilon_prime(self) -> float:
        """The budget of one append: epsilon' = epsilon / (U + 1) (Algorithm 1, line 3), or epsilon (parallel)."""
        if self.accounting == "parallel":
            return self.epsilon
        assert self.updates is not None
        return self.epsilon / (self.updates + 1)

    @property
    def unit_batches(self) -> int:
        """How many appends' budgets one privacy unit can be charged: U + 1 (paper: a person in every batch),
        1 (parallel, record), min(K, U + 1) (parallel, person)."""
        if self.accounting == "paper":
            assert self.updates is not None
            return self.updates + 1
        if self.privacy_unit == "record":
            return 1
        bounds = [b for b in (self.max_batches_per_person, None if self.updates is None else self.updates + 1)
                  if b is not None]
        assert bounds  # resolve_privacy_unit refuses a person without a bound
        return int(min(bounds))

    @property
    def privacy_unit_epsilon(self) -> float:
        """What one privacy unit can lose over the whole stream, as the stream's accountants admit it: the
        exact sum of ``unit_batches`` appends' charges, rounded up (the ledger reserves this at init)."""
        return round_up(self.unit_batches * Fraction(self.epsilon_prime))

    def privacy_unit_facts(self) -> dict[str, object]:
        """The privacy unit for manifests and ``stream status``: the unit, its epsilon, the neighbours."""
        out: dict[str, object] = {"privacy_unit": self.privacy_unit,
                                  "privacy_unit_epsilon": self.privacy_unit_epsilon,
                                  "neighbours": privacy_unit_text(self.privacy_unit, self.max_batches_per_person)}
        if self.max_batches_per_person is not None:
            out["max_batches_per_person"] = self.max_batches_per_person
        return out

    def _unit_parameters(self) -> dict[str, object]:
        out: dict[str, object] = {"privacy_unit": self.privacy_unit}
        if self.max_batches_per_person is not None:
            out["max_batches_per_person"] = self.max_batches_per_person
        return out

    def with_privacy_unit(self, manifest: dict[str, object]) -> dict[str, object]:
        """The manifest with its privacy unit stated: at the top (``privacy_unit``) and, in ``privacy``, the
        epsilon one unit can lose over the whole stream and what neighbouring streams differ by."""
        manifest["privacy_unit"] = self.privacy_unit
        privacy = manifest.get("privacy")
        if isinstance(privacy, dict):
            privacy.update(self.privacy_unit_facts())
        return manifest

    @property
    def max_appends(self) -> int | None:
        """The initial dataset plus U updates; None when unlimited (parallel accounting without --updates)."""
        return None if self.updates is None else self.updates + 1

    @property
    def appends(self) -> int:
        return len(self.ledger)

    @property
    def epsilon_spent(self) -> float:
        """Sequential: the sum of the appends' charges. Parallel: the largest (disjoint batches)."""
        if self.accounting == "parallel":
            return float(max(self.ledger, default=0.0))
        return float(math.fsum(self.ledger))

    def accountant(self) -> BudgetAccountant:
        """The stream's accountant with every past append replayed (paper: sequential, Theorem 3; parallel:
        one branch per batch)."""
        return self._replay()[0]

    def _replay(self) -> tuple[BudgetAccountant, BudgetScope]:
        """The stream's accountant and the scope the next append is charged on (before any noise)."""
        acc = BudgetAccountant(self.epsilon)
        root = acc.root()
        if self.accounting == "parallel":
            branches = [root.branch() for _ in range(len(self.ledger) + 1)]  # one disjoint batch each
            for i, eps in enumerate(self.ledger):
                branches[i].spend(eps, f"append {i}", mechanism="composite")
            return acc, branches[-1]
        for i, eps in enumerate(self.ledger):
            root.spend(eps, f"append {i}", mechanism="composite")
        return acc, root


@dataclass(eq=False)
class StreamBudget(StreamAccounting):
    """A stream's budget without its tree: what ``stream status`` shows and ``stream init --ledger`` reserves."""

    epsilon: float
    updates: int | None
    accounting: str
    privacy_unit: str
    max_batches_per_person: int | None = None
    ledger: list[float] = field(default_factory=list)

    @classmethod
    def declare(cls, epsilon: float, updates: int | None, accounting: str, privacy_unit: str | None,
                max_batches_per_person: int | None, *, required: bool = False) -> "StreamBudget":
        """Checks the declaration (:func:`resolve_privacy_unit`) before anything is made or reserved."""
        if accounting not in ACCOUNTING_RULES:
            raise ParameterError(f"--accounting must be one of {', '.join(ACCOUNTING_RULES)}, got {accounting!r}")
        if updates is None and accounting == "paper":
            raise ParameterError("--updates is required with --accounting paper (each append spends epsilon/(U+1))")
        unit, k = resolve_privacy_unit(accounting, privacy_unit, max_batches_per_person, updates, required=required)
        return cls(check_epsilon(epsilon), updates, accounting, unit, k)


class TBPTree(StreamAccounting):
    """The IncTDPart state in memory: parameters, the ledger of appends and the TBP-tree (section 4)."""

    def __init__(self, n_items: int, epsilon: float, updates: int | None, *, fanout: int = DEFAULT_FANOUT,
                 c1: float = DEFAULT_C1, c2: float = DEFAULT_C2, theta_rule: str = "example3",
                 new_cells: str = "first-visit", accounting: str = "paper", routing: str = "paper",
                 privacy_unit: str | None = None, max_batches_per_person: int | None = None):
        self.epsilon = check_epsilon(epsilon)
        if routing not in ROUTING_RULES:
            raise ParameterError(f"--routing must be one of {', '.join(ROUTING_RULES)}, got {routing!r}")
        self.routing = routing
        if accounting not in ACCOUNTING_RULES:
            raise ParameterError(f"--accounting must be one of {', '.join(ACCOUNTING_RULES)}, got {accounting!r}")
        self.accounting = accounting
        if updates is None and accounting == "paper":
            raise ParameterError("--updates is required with --accounting paper (each append spends epsilon/(U+1))")
        if updates is not None and (int(updates) != updates or int(updates) < 0):
            raise ParameterError(f"--updates must be a whole number >= 0, got {updates}")
        self.privacy_unit, self.max_batches_per_person = resolve_privacy_unit(
            accounting, privacy_unit, max_batches_per_person, updates)
        if not (2 <= int(fanout) <= MAX_FANOUT):
            raise ParameterError(f"--fanout must be between 2 and {MAX_FANOUT}, got {fanout}")
        for name, value in (("--c1", c1), ("--c2", c2)):
            if not (value > 0 and math.isfinite(value)):
                raise ParameterError(f"{name} must be a finite number > 0, got {value}")
        if theta_rule not in THETA_RULES:
            raise ParameterError(f"theta rule must be one of {', '.join(THETA_RULES)}, got {theta_rule!r}")
        if new_cells not in NEW_CELL_RULES:
            raise ParameterError(f"new-cell rule must be one of {', '.join(NEW_CELL_RULES)}, got {new_cells!r}")
        self.theta_rule = theta_rule
        self.new_cells = new_cells
        if n_items < 2:
            raise ParameterError("the item universe needs at least 2 items for a TBP-tree")
        self.updates: int | None = None if updates is None else int(updates)  # parallel: an optional limit
        self.fanout = int(fanout)
        self.c1 = float(c1)
        self.c2 = float(c2)
        self.n_items = int(n_items)
        self.taxonomy = ContextFreeTaxonomy.build(self.n_items, self.fanout)
        self.ledger: list[float] = []  # epsilon charged per append, in order
        root = self.taxonomy.root
        self.nodes: list[TBPNode] = [TBPNode(0, -1, 0, (root,), False, 0)]

    # -- parameters: epsilon_prime, max_appends, appends, epsilon_spent, accountant (StreamAccounting)

    # -- node classes (Definition 7, eq. 5) ---------------------------------------------
    def theta1(self, node: TBPNode) -> float:
        return p_sum_threshold(node.inv_alpha, node.n, self.c1, self.theta_rule)

    def theta2(self, node: TBPNode) -> float:
        return p_sum_threshold(node.inv_alpha, node.n, self.c2, self.theta_rule)

    def node_class(self, node: TBPNode) -> str:
        if node.id == 0:
            return "root"
        if node.leaf:
            return "leaf-released" if node.psum >= self.theta2(node) else "leaf-held"
        return "non-empty" if node.psum >= self.theta1(node) else "semi-non-empty"

    # -- one append (Algorithm 1 lines 4 and 7-11; Procedure 1) -----------------------------
    def append(self, db: TransactionDB | TransactionData, noise: NoiseSource, *, seed: int | None = None,
               keep_trace: bool = False, level_wise: bool = False) -> AppendDelta:
        """Route the batch down the tree under epsilon' and update p-sums; returns the delta to persist.

        ``level_wise`` (forced when ``db`` lives on another engine, e.g. Spark) visits the tree one level at a
        time with one data pass per level (:meth:`_append_level_wise`); the default is the one partition loop
        on the in-memory arrays. Both make the same decisions from the same distribution; the order of the
        draws differs, so seeded results differ between the loops (never between engines on the level-wise one).
        """
        if db.n_items != self.n_items:
            raise ParameterError("the batch and the stream disagree on the number of items")
        if not isinstance(db, (TransactionDB, LocalTransactions)):
            level_wise = True
        n = self.appends
        if self.max_appends is not None and n >= self.max_appends:
            raise BudgetExceededError(
                f"the stream allows the initial dataset plus U = {self.updates} updates ({self.max_appends} appends) "
                f"and all {n} have been made: append refused, nothing changed")
        eps_p = self.epsilon_prime
        _, stream_scope = self._replay()
        stream_scope.spend(eps_p, f"append {n}", mechanism="composite")  # BudgetExceededError before any noise
        inner = BudgetAccountant(eps_p, keep_ledger=False)
        delta = AppendDelta(n, eps_p, seed)
        if level_wise:
            self._append_level_wise(as_transaction_data(db), noise, delta, inner, eps_p, keep_trace)
            self.ledger.append(eps_p)
            return delta
        local_db: TransactionDB = db.db if isinstance(db, LocalTransactions) else db  # type: ignore[assignment]
        if n == 0 and len(self.nodes) == 1:
            self._first_append(local_db, noise, delta, inner, eps_p, keep_trace)
            self.ledger.append(eps_p)
            return delta
        tax = self.taxonomy
        # an empty record belongs to no cell (it would be released as an empty itemset), as in DiffPart
        queue = deque([(0, np.flatnonzero(local_db.lengths > 0).astype(np.int64), eps_p / 2.0, inner.root())])
        while queue:
            pid, rows, unused, scope = queue.popleft()
            p = self.nodes[pid]
            first_visit = p.expand < 0
            if first_visit:  # Procedure 1 line 6: a data-independent choice among the highest nodes
                p.expand = choose_expansion_node(tax, np.asarray(p.cut, dtype=np.int64), noise)
                delta.expanded.append(pid)
            nonempty, sizes, rows_sorted, bounds = group_by_mask(child_masks(local_db, rows, tax, p.expand), rows)
            pos_of_nonempty = {int(m): j for j, m in enumerate(nonempty.tolist())}
            for child_id, mask, child_unused, child_scope in self._operate(
                    p, first_visit, nonempty, sizes, unused, eps_p, scope, noise, delta, keep_trace):
                k = pos_of_nonempty.get(mask)
                child_rows = rows_sorted[bounds[k] : bounds[k + 1]] if k is not None else rows[:0]
                queue.append((child_id, child_rows, child_unused, child_scope))
        self.ledger.append(eps_p)
        return delta

    def _append_level_wise(self, data: TransactionData, noise: NoiseSource, delta: AppendDelta,
                           inner: BudgetAccountant, eps_p: float, keep_trace: bool) -> None:
        """The append one level of the TBP-tree at a time, through the engine's partitioner: per
        level, every first-visited node's expansion is drawn (in visiting order), then one data pass counts the
        batch's records of every visited node per child mask (:meth:`Partitioner.level_counts`), then each node's
        operation runs on the driver (:meth:`_operate`, in visiting order), and the records of the children to
        visit are moved down (:meth:`Partitioner.route`). The visiting order is the one partition loop's (a
        level is the next stretch of its FIFO queue), so node ids are assigned in the same canonical order; the
        first append is this loop on the bare root (the same operations as DiffPart(T, H, epsilon'))."""
        tax = self.taxonomy
        partitioner = data.partitioner()  # partition 0: every non-empty record of the batch (the root's)
        # (node id, the partitioner's id of its records or -1 when none reach it, unused budget, scope)
        level: list[tuple[int, int, float, BudgetScope]] = [(0, 0, eps_p / 2.0, inner.root())]
        try:
            while level:
                first: list[bool] = []
                for nid, _, _, _ in level:
                    p = self.nodes[nid]
                    first.append(p.expand < 0)
                    if p.expand < 0:  # Procedure 1 line 6: a data-independent choice among the highest nodes
                        p.expand = choose_expansion_node(tax, np.asarray(p.cut, dtype=np.int64), noise)
                        delta.expanded.append(nid)
                ops = [LevelOp(pid, int(tax.lo[v]), int(tax.hi[v]), int(tax.span[v]))
                       for nid, pid, _, _ in level if pid >= 0 for v in (self.nodes[nid].expand,)]
                counts = partitioner.level_counts(ops) if ops else {}
                next_level: list[tuple[int, int, float, BudgetScope]] = []
                moves: list[tuple[int, int, int]] = []
                for (nid, pid, unused, scope), first_visit in zip(level, first):
                    nonempty, sizes = counts.get(pid, (_NO_MASKS, _NO_MASKS))
                    present = set(nonempty.tolist())
                    for child_id, mask, child_unused, child_scope in self._operate(
                            self.nodes[nid], first_visit, nonempty, sizes, unused, eps_p, scope, noise, delta,
                            keep_trace):
                        if mask in present:  # its records move down (node ids are unique: they name the partition)
                            moves.append((pid, mask, child_id))
                            next_level.append((child_id, child_id, child_unused, child_scope))
                        else:  # no record of the batch reaches it
                            next_level.append((child_id, -1, child_unused, child_scope))
                if ops:
                    partitioner.route(moves)
                level = next_level
        finally:
            partitioner.close()

    def _operate(self, p: TBPNode, first_visit: bool, nonempty: np.ndarray, sizes: np.ndarray, unused: float,
                 eps_p: float, scope: BudgetScope, noise: NoiseSource, delta: AppendDelta, keep_trace: bool
                 ) -> list[tuple[int, int, float, BudgetScope]]:
        """One partition operation at node ``p`` (split on ``p.expand``), given the batch's exact counts of its
        records per child mask (``nonempty`` ascending, ``sizes``), on the driver: the noisy counts, the
        accounting, the new nodes and the p-sum updates. Returns the children to visit next, in order, as
        (node id, mask, unused budget, scope); the caller routes the records of each mask to its child."""
        tax = self.taxonomy
        cut = np.asarray(p.cut, dtype=np.int64)
        v = p.expand
        kids = tax.children(v)
        n_combos = (1 << kids.size) - 1
        n_records = int(sizes.sum())
        # alpha (Procedure 1, lines 5 and 14-15), or epsilon'/2 + unused for the leaf counts
        n_internal, leaf_level, eps_op = operation_budget(tax, cut, unused, eps_p / 2.0)
        c = self.c2 if leaf_level else self.c1
        theta_new = _SQRT2 * c / eps_op  # eq. 6/7 with one count (a node with no p-sum yet)
        # "semi": a new cell is stored when its p-sum (one noisy count) is > 0, eq. 5, and is
        # semi-non-empty below theta_1; the empty cells pass the same test (test-and-generate)
        create_at = 1.0 if self.new_cells == "semi" else theta_new

        existing = np.fromiter(p.children.keys(), dtype=np.int64, count=len(p.children))
        if self.new_cells == "first-visit" and not first_visit:
            # FollowPreviousTraces: a partition split in an earlier append keeps its children;
            # the batch's records in other cells stop here (the set of children is public)
            keep = np.isin(nonempty, existing)
            nonempty, sizes = nonempty[keep], sizes[keep]
            n_records = int(sizes.sum())
            explicit = np.sort(existing)
            n_imp = 0
            if self.routing == "free" and not leaf_level:
                return self._route_freely(p, v, explicit, nonempty, sizes, unused, eps_op, scope, noise, delta,
                                          keep_trace)
        else:
            explicit = np.union1d(existing, nonempty)
            n_imp = n_combos - explicit.size
        true_counts = np.zeros(explicit.size, dtype=np.int64)
        true_counts[np.searchsorted(explicit, nonempty)] = sizes
        if not leaf_level and self.new_cells != "semi":
            # Safety floor (ours, public inputs only): new non-leaf cells are visited and tested
            # in turn, so keep the expected number of false ones per operation at most 1
            # (P(DLap >= theta) ~ exp(-alpha*theta)/2, hence the 2).
            n_new = n_imp + int(explicit.size - existing.size)
            if n_new > 2:
                create_at = max(create_at, zero_cell_threshold(n_new, eps_op, 2.0))
        res = threshold_counts(true_counts, n_imp, eps_op, create_at, scope=scope,
                               noise=noise, label="leaf counts" if leaf_level else "partition")
        empty_masks = distinct_empty_masks(kids.size, explicit, res.zero_passed.size, noise)
        if keep_trace:
            delta.trace.append(RouteEvent(p.id, v, eps_op, n_records, leaf_level))
        delta.chain_max = max(delta.chain_max, scope.chain_spent)

        visit = self._store_cells(p, kids, explicit, res, empty_masks, eps_op, leaf_level, delta)
        child_unused = unused - eps_op
        return [(child_id, mask, child_unused, scope.branch()) for child_id, mask in visit]

    def _store_cells(self, p: TBPNode, kids: np.ndarray, explicit: np.ndarray, res: ThresholdRelease,
                     empty_masks: np.ndarray, eps_op: float, leaf_level: bool, delta: AppendDelta
                     ) -> list[tuple[int, int]]:
        """The noisy counts of an operation at ``p`` added to its children's p-sums (new cells that pass become
        nodes); returns the (child id, mask) of the children whose p-sum passes theta_1, in visiting order."""
        v = p.expand
        inv = 1.0 / eps_op
        # Every cell that releases a noisy count here, real (explicit) and test-and-generated (empty)
        # mixed, in ascending mask order: node ids, the visiting order and so every row of the state are
        # then a function of public inputs and noisy values only (an order that put the real cells first would
        # reveal which cells hold records). That old order is kept behind the private switch of
        # dprelease.release.setvalued for the audit's broken fixture.
        cells: list[tuple[int, int, int]] = []  # (mask, noisy count, explicit index or -1 if generated)
        cells.extend((int(mask), int(res.explicit[j]), j) for j, mask in enumerate(explicit.tolist()))
        cells.extend((int(mask), int(nc), -1) for mask, nc in zip(empty_masks.tolist(), res.zero_passed.tolist()))
        if _release_module._CANONICAL_ORDER:
            cells.sort(key=lambda cell: cell[0])
        visit: list[tuple[int, int]] = []
        for mask, nc, j in cells:
            if j >= 0:
                child_id = p.children.get(mask)
                if child_id is None:
                    if not res.passed[j]:
                        continue  # a new cell below theta: its noisy count is dropped (Procedure 1 line 18)
                    child_id = self._new_child(p, v, kids, mask, delta.append_no)
                    delta.new_nodes.append(child_id)
                child = self.nodes[child_id]
                child.psum += nc
                child.n += 1
                child.inv_alpha += inv
                child.noise_var += dlap_variance(inv)
            else:  # test-and-generate (lines 20-23)
                child_id = self._new_child(p, v, kids, mask, delta.append_no)
                child = self.nodes[child_id]
                child.psum, child.n, child.inv_alpha, child.noise_var = nc, 1, inv, dlap_variance(inv)
                delta.new_nodes.append(child_id)
            delta.counts.append((child_id, nc, eps_op))
            if not leaf_level and child.psum >= self.theta1(child):
                visit.append((child_id, mask))
        return visit

    def _first_append(self, db: TransactionDB, noise: NoiseSource, delta: AppendDelta, inner: BudgetAccountant,
                      eps_p: float, keep_trace: bool) -> None:
        """TBP-Tree_(0) = DiffPart(T, H, epsilon') (Algorithm 1, line 4): DiffPart's own partition loop
        (:func:`~dprelease.setvalued.diffpart.partition_steps`) with IncTDPart's thresholds (section 4.3, R7),
        storing every kept cell as a node and descending into those whose p-sum passes theta_1."""

        def threshold(leaf_level: bool, eps_op: float, n_combos: int, n_internal: int, height: int) -> float:
            if self.new_cells == "semi":
                return 1.0  # eq. 5: stored when its p-sum (one noisy count) is > 0
            t = _SQRT2 * (self.c2 if leaf_level else self.c1) / eps_op  # eq. 6/7 with one count
            if not leaf_level and n_combos > 2:
                t = max(t, zero_cell_threshold(n_combos, eps_op, 2.0))  # R7 safety floor (every cell is new)
            return t

        for step in partition_steps(db, self.taxonomy, eps_p, threshold, noise=noise, scope=inner.root(), tag=0):
            p = self.nodes[int(step.tag)]
            p.expand = step.node
            delta.expanded.append(p.id)
            if keep_trace:
                delta.trace.append(RouteEvent(p.id, step.node, step.epsilon, step.n_records, step.leaf_level))
            delta.chain_max = max(delta.chain_max, step.scope.chain_spent)
            inv = 1.0 / step.epsilon
            descend: list[tuple[int, object]] = []
            # children in ascending mask order, real and test-and-generated mixed (canonical node ids)
            order = np.argsort(step.masks, kind="stable") if _release_module._CANONICAL_ORDER \
                else np.arange(step.masks.size)
            for j in order.tolist():
                child_id = self._new_child(p, step.node, step.kids, int(step.masks[j]), 0)
                child = self.nodes[child_id]
                child.psum, child.n, child.inv_alpha = int(step.values[j]), 1, inv
                child.noise_var = dlap_variance(inv)
                delta.new_nodes.append(child_id)
                delta.counts.append((child_id, int(step.values[j]), step.epsilon))
                if not step.leaf_level and child.psum >= self.theta1(child):
                    descend.append((j, child_id))
            step.descend = descend

    def _route_freely(self, p: TBPNode, v: int, explicit: np.ndarray, nonempty: np.ndarray, sizes: np.ndarray,
                      unused: float, eps_op: float, scope: BudgetScope, noise: NoiseSource, delta: AppendDelta,
                      keep_trace: bool) -> list[tuple[int, int, float, BudgetScope]]:
        """Improvement (``routing="free"``): a non-leaf node split in an earlier append keeps its children
        (public), so the batch's records go down them without a noisy count of the non-empty ones; only the
        semi-non-empty children are counted (their p-sums decide whether they split). Non-empty children keep
        the whole unused budget, so the leaf counts below get epsilon'/2 + epsilon'/2 = epsilon'.
        Returns the children to visit as :meth:`_operate` does."""
        size_of = dict(zip(nonempty.tolist(), sizes.tolist()))
        kids_ids = [p.children[int(m)] for m in explicit.tolist()]
        semi = [cid for cid in kids_ids if self.nodes[cid].psum < self.theta1(self.nodes[cid])]
        if keep_trace:
            delta.trace.append(RouteEvent(p.id, v, eps_op if semi else 0.0, int(sizes.sum()), False))
        visits: list[tuple[int, int, float, BudgetScope]] = []
        for cid in kids_ids:  # non-empty children: routed, nothing spent (children ids ascend with masks)
            if cid not in semi:
                visits.append((cid, self.nodes[cid].mask, unused, scope.branch()))
        if not semi:
            return visits
        semi_scope = scope.branch()  # their records are disjoint from the non-empty children's
        true = np.array([size_of.get(self.nodes[cid].mask, 0) for cid in semi], dtype=np.int64)
        noisy = noisy_counts(true, eps_op, scope=semi_scope, noise=noise, label="semi-non-empty counts")
        delta.chain_max = max(delta.chain_max, semi_scope.chain_spent)
        for cid, nc in zip(semi, noisy.tolist()):
            child = self.nodes[cid]
            child.psum += int(nc)
            child.n += 1
            child.inv_alpha += 1.0 / eps_op
            child.noise_var += dlap_variance(1.0 / eps_op)
            delta.counts.append((cid, int(nc), eps_op))
            if child.psum >= self.theta1(child):
                visits.append((cid, child.mask, unused - eps_op, semi_scope.branch()))
        return visits

    def _new_child(self, p: TBPNode, v: int, kids: np.ndarray, mask: int, created: int) -> int:
        cut = replace_node(p.cut, v, kids, mask)
        leaf = bool((self.taxonomy.height[np.asarray(cut, dtype=np.int64)] == 0).all())
        node = TBPNode(len(self.nodes), p.id, int(mask), cut, leaf, created)
        self.nodes.append(node)
        p.children[int(mask)] = node.id
        return node.id

    # -- the release (leaf p-sums, Procedure 1 lines 24-25) ---------------------------------
    def _released_nodes(self) -> list[TBPNode]:
        return [node for node in self.nodes
                if node.leaf and node.n > 0 and node.psum >= self.theta2(node) and node.psum > 0]

    def released_leaves(self) -> tuple[list[np.ndarray], np.ndarray]:
        """Item-id sets and p-sums of every stored leaf partition with p-sum >= theta_2."""
        nodes = self._released_nodes()
        return ([np.asarray(node.cut, dtype=np.int64) for node in nodes],
                np.asarray([int(node.psum) for node in nodes], dtype=np.int64))

    def leaf_errors(self) -> tuple[np.ndarray, np.ndarray]:
        """Per released leaf (the order of :meth:`released_leaves`): the sd of the noise summed into its p-sum
        and the half-width of its 95 % interval -- exact for one count, z sd for a sum
        (:mod:`dprelease.privacy.uncertainty`). Post-processing of the public per-count scales."""
        nodes = self._released_nodes()
        sd = np.sqrt(np.asarray([node.noise_var for node in nodes], dtype=np.float64))
        z = sum_multiplier()
        half = np.asarray([float(dlap_half_width(node.inv_alpha)) if node.n == 1 else math.ceil(z * s - 1e-9)
                           for node, s in zip(nodes, sd.tolist())], dtype=np.float64)
        return sd, half

    def release(self, universe: Universe, noise_info: dict[str, object]) -> SetValuedRelease:
        """The current release T~_n with its manifest (post-processing only: spends nothing)."""
        sets, counts = self.released_leaves()
        sd, half = self.leaf_errors()
        manifest = build_manifest(
            "inctdpart",
            epsilon=self.epsilon,
            parameters={"updates": self.updates, "fanout": self.fanout, "c1": self.c1, "c2": self.c2,
                        "theta_rule": self.theta_rule, "new_cells": self.new_cells,
                        "epsilon_per_append": self.epsilon_prime, "appends": self.appends}
            | ({"accounting": self.accounting} if self.accounting != "paper" else {}) | self._unit_parameters(),
            noise=_NoiseInfo(noise_info),
            accountant=self.accountant(),
            domain=universe.describe(),
            release={"records": int(counts.sum()) if counts.size else 0, "distinct_records": int(counts.size)},
            budget_split={
                "per_append": ("epsilon on each append's own batch; batches are disjoint, so appends compose in "
                               "parallel for a record; a person in k batches is charged k appends (docs/privacy.md "
                               "section 4)") if self.accounting == "parallel" else
                              "epsilon' = epsilon/(U+1) (Algorithm 1 line 3; Theorems 2-4)",
                "within_append": "DiffPart split: epsilon'/2 partitioning, alpha = unused/|InternalNodes(cut)|; "
                                 "leaf counts epsilon'/2 + unused (section 4.2, Procedure 1 lines 5, 14-15)",
                "thresholds": "theta = sqrt(2)*C*sum(1/alpha_m)/n^2 over a node's n noisy counts "
                              "(eqs. 6-7 read to match Example 3); theta_1 with C1, theta_2 with C2",
                "release": "p-sums of leaf partitions with p-sum >= theta_2 (post-processing)",
            },
        )
        manifest["uncertainty"] = manifest_section(
            accounts_for="the discrete Laplace noise summed into each released p-sum (one count per append the "
                         "partition took, each of scale 1/alpha, its budget)",
            formula="sd = sqrt(sum over the p-sum's counts of Var DLap(1/alpha)), Var DLap(b) = 2t/(1-t)^2, "
                    "t = exp(-1/b); one count: the exact half-width (least h with 2 t^(h+1)/(1+t) <= 0.05); "
                    "several: ceil(z sd), z = ln(20)/sqrt(2); [max(0, v - h), v + h]; an itemset count sums the "
                    "variances of the released p-sums holding it",
            ignores="records of batches a partition did not count (it was created later, or its parent was not "
                    "visited), partitions held below theta_2 and the selection of p-sums that passed it; coverage "
                    "measured in docs/accuracy.md",
            columns=("itemset", "count", "sd", "low", "high"), file=True, per_value=True)
        return SetValuedRelease(sets, counts, universe, self.with_privacy_unit(manifest), pair_sd=sd,
                                pair_half=half)


class _NoiseInfo:
    """Stands in for the noise source when a manifest is rebuilt from the state (re-emit)."""

    def __init__(self, info: dict[str, object]):
        self.mode = str(info.get("mode", "secure"))
        self.seed = info.get("seed")
        self._info = dict(info)

    def describe(self) -> dict[str, object]:
        return dict(self._info)
