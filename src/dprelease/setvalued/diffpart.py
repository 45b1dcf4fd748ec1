"""DiffPart (Chen et al., PVLDB 2011): Algorithm 1 with Procedure 1 (SubPart_Gen).

Budget split (section 4.1, Algorithm 1 line 5; section 4.2; Appendix F.4):

* B/2 is reserved for the leaf counts; the other B/2 (``unused`` = B~ of the root)
  guides the partitioning.
* A non-leaf partition p spends alpha = p.B~ / |InternalNodes(p.cut)| (Theorem 4.1)
  on the noisy sizes of *all* its sub-partitions at once: they hold disjoint records,
  so by parallel composition (Theorem B.2) one alpha covers them. Each child gets
  B~ = p.B~ - alpha (Procedure 1, lines 8-9 and 16-17).
* The partitioning whose sub-partitions are leaf partitions (p.cut has one internal
  node, of height 1) spends no alpha of its own: its noisy counts use B/2 + p.B~
  with threshold sqrt(2)*C1/(B/2 + p.B~) (Algorithm 1, lines 12-13) and are the
  released leaf counts. So every partitioning chain sums to exactly B (the sum in
  section 4.2 with n_m = 1), which the accountant checks on every charge.

Non-leaf thresholds are sqrt(2)*C2*height(p.cut)/alpha (Procedure 1 line 6).
Empty sub-partitions are never enumerated: :func:`threshold_counts` draws how many
of the 2^l - 1 - |S| empty combinations pass, then that many distinct ones are
drawn uniformly (test-and-generate, Procedure 1 lines 11-17).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from ..data.taxonomy import ContextFreeTaxonomy
from ..data.transactions import TransactionDB
from ..data.universe import Universe
from ..engine.base import LevelOp, TransactionData
from ..engine.kernels import child_masks_range
from ..engine.local import LocalTransactions, as_transaction_data
from ..errors import ParameterError
from ..privacy import (
    BudgetAccountant,
    BudgetScope,
    NoiseSource,
    check_epsilon,
    threshold_counts,
    uniform_choice,
    zero_cell_threshold,
)
from ..limits import WorkMeter, diffpart_range_notes
from ..privacy.mechanisms import laplace_scale
from ..privacy.uncertainty import manifest_section
from ..release import (
    SetValuedRelease, add_notes, build_manifest, records_run_start, release_size_note, NEIGHBOURS_LINE,
)

__all__ = [
    "DEFAULT_FANOUT", "DEFAULT_C1", "DEFAULT_C2", "MAX_FANOUT", "TraceEvent", "diffpart", "sub_cuts", "child_masks",
    "replace_node", "distinct_empty_masks", "DEFAULT_BRANCHING_BOUND", "choose_expansion_node", "operation_budget",
    "PartitionStep", "partition_steps", "ThresholdRule", "threshold_rule",
]

# Section 5 uses f = 10. Section 4.1: "C2 slightly greater than 1 ... C1 in [1, C2]"; we take
# C1 = C2 = 1.5, the upper end of "slightly greater". Measured on MSNBC (B = 1, f = 10, 3 seeded
# runs, docs/diffpart.md): C1 = C2 = 1.1 gives top-100 utility 0.67, 1.5 gives 0.84, 2.0 gives 0.95.
DEFAULT_FANOUT = 10
DEFAULT_C1 = 1.5
DEFAULT_C2 = 1.5
MAX_FANOUT = 52
DEFAULT_BRANCHING_BOUND = 0.5  # termination guard, see threshold_rule() and docs/diffpart.md

_SQRT2 = math.sqrt(2.0)
_NO_MASKS = np.zeros(0, dtype=np.int64)


@dataclass(frozen=True, slots=True)
class TraceEvent:
    """One partition operation: the cut, the node expanded, the epsilon charged, and the threshold.

    ``kind`` is ``partition`` (non-leaf sub-partitions, budget alpha) or ``leaf_counts``
    (the sub-partitions are leaf partitions; budget B/2 + B~). ``kept`` is how many
    sub-partitions passed the threshold (noisy).
    """

    kind: str
    cut: tuple[int, ...]
    node: int
    epsilon: float
    threshold: float
    kept: int


@dataclass(slots=True)
class _Partition:
    cut: tuple[int, ...]  # taxonomy node ids, sorted by the first item they cover
    pid: int  # the partitioner's id of its records (-1: a test-and-generate partition, no records)
    unused: float  # B~: partitioning budget not yet spent on this chain
    scope: BudgetScope
    tag: object = None  # the caller's tag (PartitionStep.tag)


def sub_cuts(taxonomy: ContextFreeTaxonomy, cut: tuple[int, ...], node: int) -> list[tuple[int, ...]]:
    """All 2^l - 1 cuts made by replacing ``node`` in ``cut`` with a non-empty set of its children."""
    kids = taxonomy.children(node)
    return [replace_node(cut, node, kids, mask) for mask in range(1, 1 << kids.size)]


def replace_node(cut: tuple[int, ...], node: int, kids: np.ndarray, mask: int) -> tuple[int, ...]:
    chosen = tuple(int(kids[b]) for b in range(kids.size) if mask >> b & 1)
    at = cut.index(node)
    return cut[:at] + chosen + cut[at + 1 :]


def child_masks(db: TransactionDB, rows: np.ndarray, taxonomy: ContextFreeTaxonomy, node: int,
                block: int = 1 << 16) -> np.ndarray:
    """For each record in ``rows``: bit b set iff the record has an item under child b of ``node``
    (:func:`~dprelease.engine.kernels.child_masks_range` over the node's item range)."""
    return child_masks_range(db, rows, int(taxonomy.lo[node]), int(taxonomy.hi[node]), int(taxonomy.span[node]),
                             block)


def choose_expansion_node(taxonomy: ContextFreeTaxonomy, cut: np.ndarray, noise: NoiseSource) -> int:
    """The node to expand: uniform among the cut's nodes of largest height (section 4.1; data-independent)."""
    heights = taxonomy.height[cut]
    candidates = cut[heights == heights.max()]
    return int(candidates[uniform_choice(candidates.size, noise)]) if candidates.size > 1 else int(candidates[0])


def operation_budget(taxonomy: ContextFreeTaxonomy, cut: np.ndarray, unused: float, leaf_reserve: float
                     ) -> tuple[int, bool, float]:
    """(|InternalNodes(cut)|, whether the sub-partitions are leaves, the operation's epsilon).

    Non-leaf: alpha = unused / |InternalNodes(cut)| (Algorithm 1 line 5, Procedure 1 line 9, Theorem 4.1).
    Leaf level (one internal node, of height 1): leaf_reserve + unused (Algorithm 1 line 12).
    """
    n_internal = int(taxonomy.internal_below[cut].sum())
    leaf_level = n_internal == 1
    return n_internal, leaf_level, (leaf_reserve + unused) if leaf_level else unused / n_internal


def distinct_empty_masks(n_children: int, exclude: np.ndarray, k: int, noise: NoiseSource) -> np.ndarray:
    """k distinct uniform masks in [1, 2^l - 1] that are not in ``exclude`` (the non-empty ones)."""
    if k == 0:
        return np.zeros(0, dtype=np.int64)
    full = (1 << n_children) - 1
    # Enumerate the pool only when it is small or the draw takes a good part of it; otherwise draw by
    # rejection (O(k) expected): a permutation of 2^20 masks per operation made --fanout 20 take minutes.
    if full <= (1 << 12) or 4 * (exclude.size + k) > full:
        pool = np.setdiff1d(np.arange(1, full + 1, dtype=np.int64), exclude, assume_unique=True)
        return pool[noise.permutation(pool.size)[:k]]
    taken = set(int(x) for x in exclude.tolist())
    out: list[int] = []
    while len(out) < k:
        for m in (noise.integers(full, 2 * (k - len(out))) + 1).tolist():
            if m not in taken:
                taken.add(m)
                out.append(m)
                if len(out) == k:
                    break
    return np.asarray(out, dtype=np.int64)


@dataclass(slots=True)
class PartitionStep:
    """One partition operation of DiffPart's loop (Algorithm 1 / Procedure 1), as yielded by :func:`partition_steps`.

    ``masks``/``values``: every kept sub-partition (noisy count >= threshold; real and test-and-generated),
    real ones first in ascending mask order, then the generated ones in the order drawn; ``generated[j]`` says
    which is which (never publish it: only the canonical order of the cells may leave). ``tag`` is the caller's
    tag of the partition. Before resuming the generator, the caller may set ``descend`` to the list of (index
    into ``masks``, tag) of the kept non-leaf sub-partitions to partition further, in the order to visit them;
    ``None`` (default) descends into every kept one, in the order above (DiffPart).
    """

    cut: tuple[int, ...]
    node: int
    kids: np.ndarray
    leaf_level: bool
    n_internal: int
    epsilon: float
    threshold: float
    masks: np.ndarray
    values: np.ndarray
    generated: np.ndarray
    unused_after: float
    scope: BudgetScope
    n_records: int  # records in the partition (trace only)
    queued: int  # partitions waiting in the queue (the work meter's count of noisy decisions)
    tag: object = None
    descend: list[tuple[int, object]] | None = None


# threshold(leaf_level, eps_op, n_combos, n_internal, height) -> the operation's threshold (public values only)
ThresholdRule = Callable[[bool, float, int, int, int], float]


@dataclass(frozen=True, slots=True)
class _Operation:
    """A partition operation before its data: the node expanded (a draw) and its budget (public)."""

    node: int
    kids: np.ndarray
    n_internal: int
    leaf_level: bool
    epsilon: float
    height: int

    @property
    def n_combos(self) -> int:
        return (1 << self.kids.size) - 1

    def level_op(self, tax: ContextFreeTaxonomy, pid: int) -> LevelOp:
        v = self.node
        return LevelOp(pid, int(tax.lo[v]), int(tax.hi[v]), int(tax.span[v]), leaf=self.leaf_level)


def _operation(tax: ContextFreeTaxonomy, p: _Partition, budget: float, noise: NoiseSource) -> _Operation:
    cut = np.asarray(p.cut, dtype=np.int64)
    node = choose_expansion_node(tax, cut, noise)
    n_internal, leaf_level, eps_op = operation_budget(tax, cut, p.unused, budget / 2.0)
    return _Operation(node, tax.children(node), n_internal, leaf_level, eps_op, int(tax.height[cut].max()))


def partition_steps(data: TransactionDB | TransactionData, tax: ContextFreeTaxonomy, budget: float,
                    threshold: ThresholdRule, *, noise: NoiseSource, scope: BudgetScope, tag: object = None,
                    level_wise: bool = False) -> Iterator[PartitionStep]:
    """DiffPart's top-down partitioning of ``data`` under ``budget`` (= B) as a generator of :class:`PartitionStep`.

    The one partition loop of the package: :func:`diffpart` and IncTDPart's first append (TBP-Tree_(0) =
    DiffPart(T, H, epsilon'), IncTDPart Algorithm 1 line 4) both run it, on any engine, through the engine's
    :class:`~dprelease.engine.base.Partitioner` (partition 0 holds every record with at least one item: an empty
    record holds no item of any cut, so it belongs to no partition). Budget split as in the module docstring (B/2
    partitioning, alpha per operation, leaf counts B/2 + unused); ``threshold`` gives each operation's threshold.

    Partitions are visited in the paper's FIFO order, a level of the partition tree being the queue's next
    stretch. Two orders of the draws, from the same distribution: by default a partition's expansion node is
    drawn just before its own noisy counts (its records are counted alone, between the two); ``level_wise``
    draws every node of a level first, counts the whole level in one data pass, then draws each partition's
    noisy counts (one pass per level: what another engine runs). Seeded releases differ between the two orders,
    never between engines on one order.
    """
    if tax.is_leaf(tax.root):
        return
    partitioner = as_transaction_data(data).partitioner()
    level = [_Partition((tax.root,), 0, budget / 2.0, scope, tag)]
    next_pid = 1
    try:
        while level:
            ops = [_operation(tax, p, budget, noise) for p in level] if level_wise else []
            listed = [op.level_op(tax, p.pid) for p, op in zip(level, ops) if p.pid >= 0]
            counts = partitioner.level_counts(listed) if listed else {}
            next_level: list[_Partition] = []
            moves: list[tuple[int, int, int]] = []
            for i, p in enumerate(level):
                if level_wise:
                    op = ops[i]
                else:
                    op = _operation(tax, p, budget, noise)
                    counts = partitioner.level_counts([op.level_op(tax, p.pid)]) if p.pid >= 0 else {}
                nonempty, sizes = counts.get(p.pid, (_NO_MASKS, _NO_MASKS))
                thr = threshold(op.leaf_level, op.epsilon, op.n_combos, op.n_internal, op.height)
                res = threshold_counts(sizes, op.n_combos - nonempty.size, op.epsilon, thr, scope=p.scope,
                                       noise=noise, label="leaf counts" if op.leaf_level else "partition")
                empty_masks = distinct_empty_masks(op.kids.size, nonempty, res.zero_passed.size, noise)
                passed = np.flatnonzero(res.passed)
                step = PartitionStep(
                    p.cut, op.node, op.kids, op.leaf_level, op.n_internal, op.epsilon, thr,
                    np.concatenate([nonempty[passed], empty_masks]),
                    np.concatenate([res.explicit[passed], res.zero_passed]),
                    np.concatenate([np.zeros(passed.size, dtype=bool), np.ones(empty_masks.size, dtype=bool)]),
                    p.unused - op.epsilon, p.scope, int(sizes.sum()), len(level) - i - 1 + len(next_level), p.tag)
                yield step
                own_moves: list[tuple[int, int, int]] = []
                if not op.leaf_level:  # leaf partitions are not partitioned again
                    order = step.descend if step.descend is not None else [(j, None) for j in range(step.masks.size)]
                    for j, child_tag in order:
                        mask, pid = int(step.masks[j]), -1
                        if not step.generated[j]:  # a real cell: its records move to a new partition
                            pid, next_pid = next_pid, next_pid + 1
                            own_moves.append((p.pid, mask, pid))
                        next_level.append(_Partition(replace_node(p.cut, op.node, op.kids, mask), pid,
                                                     step.unused_after, p.scope.branch(), child_tag))
                if level_wise:
                    moves.extend(own_moves)
                elif p.pid >= 0:
                    partitioner.route(own_moves)
            if listed:
                partitioner.route(moves)
            level = next_level
    finally:
        partitioner.close()


def _validate(epsilon: float, fanout: int, c1: float, c2: float, spurious_bound: float | None = None,
              branching_bound: float | None = None) -> float:
    eps = check_epsilon(epsilon)
    if not (2 <= int(fanout) <= MAX_FANOUT):
        raise ParameterError(f"--fanout must be between 2 and {MAX_FANOUT}, got {fanout}")
    for name, value in (("--c1", c1), ("--c2", c2), ("--spurious-bound", spurious_bound),
                        ("--branching-bound", branching_bound)):
        if value is not None and not (value > 0 and math.isfinite(value)):
            raise ParameterError(f"{name} must be a finite number > 0, got {value}")
    return eps


@records_run_start
def diffpart(
    db: TransactionDB | TransactionData,
    universe: Universe,
    epsilon: float,
    *,
    noise: NoiseSource,
    fanout: int = DEFAULT_FANOUT,
    c1: float = DEFAULT_C1,
    c2: float = DEFAULT_C2,
    keep_trace: bool = False,
    progress: bool = False,
    spurious_bound: float | None = None,
    branching_bound: float | None = DEFAULT_BRANCHING_BOUND,
    level_wise: bool | None = None,
) -> SetValuedRelease:
    """Sanitize ``db`` with DiffPart under ``epsilon``-DP; returns the release (item ids) with its manifest.

    ``level_wise`` (default: only when ``db`` lives on another engine, e.g. Spark) draws a whole level's expansion
    nodes before one data pass counts the level (:func:`partition_steps`); the local default draws each
    partition's node just before its counts. Both draw from the same distribution; the order of the draws
    differs, so seeded releases differ between the two orders (not between engines on the same order).

    ``spurious_bound`` (default None: the paper's thresholds) raises each threshold so that at most
    that many empty combinations are expected to pass per partition operation (docs/diffpart.md).
    ``branching_bound`` (default 0.5; None turns it off) is the termination guard: at operations whose
    children partition again, at most that many empty children are expected.
    """
    B = _validate(epsilon, fanout, c1, c2, spurious_bound, branching_bound)
    data = as_transaction_data(db)
    if level_wise is None:
        level_wise = not isinstance(data, LocalTransactions)
    if data.n_items != universe.size:
        raise ParameterError("the database and the universe disagree on the number of items")
    tax = ContextFreeTaxonomy.build(universe.size, int(fanout))
    meter = WorkMeter("diffpart")  # stops the run past the output/memory limits, from noisy counts only
    accountant = BudgetAccountant(B, keep_ledger=keep_trace)
    trace: list[TraceEvent] = []
    out_sets: list[np.ndarray] = []
    out_counts: list[int] = []
    root_scope = accountant.root()
    # An empty record holds no item of any cut, so it belongs to no partition (it is still a record, in no
    # cell, as under Basic): releasing it as a cell of mask 0 would publish an empty itemset.
    if tax.is_leaf(tax.root):
        # One-item universe: the only partition is already a leaf; all of B goes to its count.
        n_nonempty = int(data.item_supports()[0]) if data.n_items else 0
        res = threshold_counts(np.array([n_nonempty]), 0, B, _SQRT2 * c1 / B, scope=root_scope, noise=noise,
                               label="leaf counts")
        if res.passed[0]:
            out_sets.append(np.array([0], dtype=np.int64))
            out_counts.append(int(res.explicit[0]))

    bar = _progress_bar(progress)
    for step in partition_steps(data, tax, B, threshold_rule(c1, c2, branching_bound, spurious_bound), noise=noise,
                                scope=root_scope, level_wise=level_wise):
        if keep_trace:
            trace.append(TraceEvent("leaf_counts" if step.leaf_level else "partition", step.cut, step.node,
                                    step.epsilon, step.threshold, int(step.masks.size)))
        if step.leaf_level:
            meter.released(step.masks.size, int(np.clip(step.values, 0, None).sum()))
            for mask, value in zip(step.masks.tolist(), step.values.tolist()):
                out_sets.append(np.asarray(replace_node(step.cut, step.node, step.kids, mask), dtype=np.int64))
                out_counts.append(int(value))
        else:  # the default descent (every kept cell, real ones first) is DiffPart's
            meter.queued(step.queued + step.masks.size)
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    n_released = int(np.clip(out_counts, 0, None).sum()) if out_counts else 0
    manifest = _manifest(B, fanout, c1, c2, branching_bound, spurious_bound, noise, accountant, universe, n_released,
                         len(out_counts))
    return SetValuedRelease(out_sets, np.asarray(out_counts, dtype=np.int64), universe, manifest,
                            trace=trace, accountant=accountant)


def threshold_rule(c1: float, c2: float, branching_bound: float | None, spurious_bound: float | None
                   ) -> ThresholdRule:
    """DiffPart's threshold of a partition operation, from public values only."""

    def threshold(leaf_level: bool, eps_op: float, n_combos: int, n_internal: int, height: int) -> float:
        if leaf_level:
            t = _SQRT2 * c1 / eps_op  # Algorithm 1, line 13
        else:
            t = _SQRT2 * c2 * height / eps_op  # Procedure 1, line 6
        if branching_bound is not None and not leaf_level and n_internal >= 3:
            # Termination guard (on by default; a documented deviation from the paper). The
            # children of this operation will partition again, so every empty combination that
            # passes starts a subtree of empty partitions. With the paper's thresholds a cut of
            # several height-1 nodes (f = 10) lets ~61 of 1,023 empty combinations through, and
            # each of those does the same: the work grows without bound (mushroom: > 6 GB).
            # Keep the expected number of empty children <= branching_bound (< 1: subcritical).
            t = max(t, zero_cell_threshold(n_combos, eps_op, branching_bound))
        if spurious_bound is not None:
            # Improvement (off by default): at most `spurious_bound` of the 2^l - 1 combinations
            # are expected to pass with a true count of 0.
            t = max(t, zero_cell_threshold(n_combos, eps_op, spurious_bound))
        return t

    return threshold


def _manifest(B: float, fanout: int, c1: float, c2: float, branching_bound: float | None,
              spurious_bound: float | None, noise: NoiseSource, accountant: BudgetAccountant, universe: Universe,
              n_released: int, n_distinct: int) -> dict[str, object]:
    size_note = release_size_note("diffpart", n_released, "records")
    manifest = build_manifest(
        "diffpart",
        epsilon=B,
        notes=[size_note] if size_note else None,
        parameters={"fanout": int(fanout), "c1": c1, "c2": c2, "branching_bound": branching_bound}
        | ({"spurious_bound": spurious_bound} if spurious_bound is not None else {}),
        noise=noise,
        accountant=accountant,
        domain=universe.describe(),
        release={"records": n_released, "distinct_records": n_distinct},
        budget_split={
            "leaf_counts": "B/2 + unused partitioning budget of the chain (Algorithm 1, line 12)",
            "partitioning": "B/2 in all; alpha = B~/|InternalNodes(cut)| per partition operation "
                            "(Algorithm 1 line 5, Procedure 1 lines 8-9, Theorem 4.1)",
            "chain_total": "exactly B on every chain that ends in a leaf partition (section 4.2, Appendix F.4)",
        },
        privacy_unit="record", neighbours=NEIGHBOURS_LINE,
    )
    # parameters past their useful range (public rules of dprelease.limits; the CLI also says them on stderr)
    add_notes(manifest, diffpart_range_notes(universe.size, fanout, B, c1, c2, spurious_bound))
    manifest["uncertainty"] = manifest_section(  # public: the leaf counts get at least B/2
        accounts_for="the discrete Laplace noise of each released leaf count, at its largest scale 2/B (a chain's "
                     "leaf counts get B/2 plus what its partitioning left unused, so the true scale is at most this)",
        formula="DLap(b), b = 2/B per cell; an itemset count sums n released cells: sd = sqrt(n) sd(DLap(b)), "
                "half-width z sd, z = ln(20)/sqrt(2)",
        ignores="records of partitions pruned by the thresholds and of zero cells generated by test-and-generate "
                "(structure); coverage measured in docs/accuracy.md",
        scale=laplace_scale(B / 2.0, 1))
    return manifest


def _progress_bar(enabled: bool):
    if not enabled:
        return None
    if not sys.stderr.isatty():  # no carriage returns in a log file or a pipe
        return None
    from tqdm import tqdm

    return tqdm(desc="diffpart partitions", unit=" partitions", file=sys.stderr, mininterval=1.0, delay=1.5, leave=False)
