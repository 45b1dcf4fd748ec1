"""DiffPart-Prefix: DiffPart's top-down partitioning over a private frequency-ordered prefix hierarchy.

A DiffPart-family release (same input, same output format) for data whose records are
*not* heavily repeated: instead of releasing only records that occur verbatim many
times, records are generalized by dropping their least frequent items, and a generalized
record is released with the (noisy) number of records it stands for. See docs/diffpart.md,
"DiffPart-Prefix", for the literature behind each step and the measured before/after.

Mechanisms composed sequentially on the whole input (budget split, ``epsilon`` = B):

1. **Item order** (``selection_share`` * B, default 0.15 B). Weighted item supports, each
   record contributing min(1, l/|t|) to each of its items (L1 sensitivity l = ``record_bound``,
   the truncation of Zeng, Naughton and Cai, PVLDB 2012), plus Laplace(l/B1) noise
   (``noisy_values``). Items are ordered by noisy support; on universes larger than
   ``max_items`` the first ``max_items`` whose noisy support passes (l/B1) ln(|I|/2) (at most
   one item expected to pass on noise alone) form the frequent part F of the universe
   (private selection of the frequent part, as in PrivBasis, Li et al. PVLDB 2012, section 4).
2. **Structure** (``structure_share`` * B, default 0.45 B; 0.5 B without the shape step). Level j of the hierarchy splits every
   kept prefix class P (records whose items among the first j-1 of F are exactly P) into the
   two cells "P without item j" and "P with item j" (a binary trie over F in noisy frequency
   order, the FP-tree's prefix order of Han, Pei and Yin, SIGMOD 2000). Which cells are kept
   is decided by PrivTree's biased test (Zhang, Xiao and Xie, SIGMOD 2016), whose cost does
   not grow with the depth (:mod:`dprelease.privacy.privtree`): this replaces DiffPart's
   alpha = B~/|InternalNodes|, which on a 16,470-item universe leaves every threshold above
   the data (section 4.1 of the paper; docs/diffpart.md).
3. **Counts** (the rest: 0.3 B by default, 0.35 B without the shape step). Every record ends in
   exactly one *class*: the cell in which its path failed the test, or its kept cell at the last level. The classes are
   disjoint, so one vector of exact discrete Laplace counts (sensitivity 1) covers them all
   (DiffPart Theorem B.2). A class is released as its generalized record: its prefix pattern,
   i.e. the record with the items after the failing level dropped.
4. **Shape** (``shape_share`` * B, default 0.1 B, half to each of two mechanisms; the structure then defaults
   to 0.45 B). The record length histogram (discrete Laplace, sensitivity 1) and, for the public trie, each
   frequent item's weighted support among the records whose class drops it (Laplace, sensitivity
   ``record_bound``). By post-processing of these, the class counts and the item supports, every released
   record gets a target length and draws its dropped items (:mod:`dprelease.setvalued.shape`), so the release
   keeps the raw basket lengths. ``shape_share=0`` releases the bare generalized records.

Post-processing (no budget): classes whose noisy count is below ``merge_below`` noise scales
(1/B3, at least 1) are merged bottom-up into their parent prefix (zero-mean noise of empty cells cancels instead of adding
spurious records); the empty pattern (records with no item of F) is released, when the universe
has items outside F, as single items shared out in proportion to their clipped noisy supports, so the
release keeps the right number of records (top-k supports are relative to it).

Every chain (a record's path through the mechanisms) sums to exactly B.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..data.transactions import ItemsetRows, TransactionDB
from ..data.universe import Universe
from ..engine.base import TransactionData
from ..engine import bitmasks, kernels
from ..engine import local as local_engine
from ..engine.local import LocalTransactions, as_transaction_data
from .. import limits
from ..errors import ParameterError
from ..privacy import BudgetAccountant, BudgetScope, NoiseSource, check_epsilon, noisy_counts, noisy_values
from ..privacy.privtree import PrivTreeSplitter
from ..privacy.mechanisms import laplace_scale
from ..privacy.uncertainty import manifest_section
from .shape import length_distribution, length_edges, noisy_length_bins, shaped_release
from ..release import (
    SetValuedRelease, add_notes, build_manifest, records_run_start, release_size_note, NEIGHBOURS_LINE,
)

__all__ = [
    "prefix_diffpart", "PrefixLevel", "MAX_PREFIX_ITEMS", "DEFAULT_MAX_ITEMS", "DEFAULT_SELECTION_SHARE",
    "DEFAULT_STRUCTURE_SHARE", "DEFAULT_RECORD_BOUND", "DEFAULT_BETA", "DEFAULT_THETA", "DEFAULT_MERGE_BELOW",
    "DEFAULT_SHAPE_SHARE", "DEFAULT_SHAPED_STRUCTURE_SHARE", "FILL_SHAPE_SHARE", "AUTO", "AUTO_LENGTH_SHARE",
    "FILL_PAIR_SHARE", "auto_bare_structure_share",
    "PrefixTree", "build_prefix_tree", "build_prefix_tree_levelwise",
]

# records and trie patterns are bit masks over F in int64 words of 62 bits (engine/bitmasks.py); eight words
# bound the trie's depth and the masks' memory (64 bytes per record) before the data is read
MAX_PREFIX_ITEMS = 8 * bitmasks.WORD_BITS
DEFAULT_MAX_ITEMS = 62
DEFAULT_SELECTION_SHARE = 0.15
DEFAULT_STRUCTURE_SHARE = 0.5
DEFAULT_RECORD_BOUND = 5
DEFAULT_BETA = 2.0
DEFAULT_THETA = 0
DEFAULT_MERGE_BELOW = 1.0  # in units of the count noise scale 1/eps_counts
DEFAULT_SELECTION_FALSE = 1.0
# Share of B for the two statistics from which generalized records get their dropped items back (half each:
# the record length histogram, the hidden frequent-item supports; setvalued/shape.py); 0 releases the bare
# generalized records. With it the structure share defaults to 0.45 (0.5 without), so the counts keep 0.3.
# Chosen on retail, MSNBC, mushroom (epsilon 0.5 and 1, 3 seeds; structure 0.4 / 0.45 / 0.5 and a length-only
# share of 0.03 / 0.05 tried) and checked on the generated long-baskets and dense-ties sets: docs/diffpart.md.
# The fill (records given back their dropped items), measured in docs/diffpart.md ("Baskets that keep their shape"),
# brings the released basket lengths to the raw ones and lowers the error on the frequent itemsets on every set
# measured, but its items are drawn independently given the class, so where records hold a large share of the
# universe it invents co-occurrences (mushroom's random counting error 0.16 -> 1.4, worse than an empty release).
# The default ("auto") therefore decides from a noisy statistic: it pays AUTO_LENGTH_SHARE of B for the record
# length histogram first; d = the noisy mean length / |I| is the chance that a record holds a given item on
# average, so two items drawn independently meet in about d^2 of the records: the fill runs iff d^2 is at most
# FILL_PAIR_SHARE (0.1 % of the records, the sanity bound of the counting workload: below it an invented pair
# stays within the error a workload tolerates). Then the hidden supports get as much again, as with 0.1.
# Otherwise the rest of B is split between the structure and the counts as without the fill.
AUTO = "auto"
DEFAULT_SHAPE_SHARE: float | str = AUTO
FILL_SHAPE_SHARE = 0.1  # the share docs/diffpart.md measured with the fill (``--shape-share 0.1``)
AUTO_LENGTH_SHARE = FILL_SHAPE_SHARE / 2  # "auto": the length histogram, paid before the decision
FILL_PAIR_SHARE = 1e-3  # "auto": fill iff (noisy mean length / |I|)^2 is at most this
DEFAULT_SHAPED_STRUCTURE_SHARE = 0.45


@dataclass(frozen=True, slots=True)
class PrefixLevel:
    """One level of the trie (trace for tests): the item split on, cells tested, cells kept."""

    level: int
    item: int
    cells: int
    kept: int


def _validate(epsilon: float, selection_share: float, structure_share: float, record_bound: int, max_items: int,
              beta: float, theta: int, merge_below: float, shape_share: float = 0.0) -> float:
    eps = check_epsilon(epsilon)
    for name, value in (("--selection-share", selection_share), ("--structure-share", structure_share)):
        if not (0.0 < value < 1.0):
            raise ParameterError(f"{name} must be strictly between 0 and 1, got {value}")
    if not (0.0 <= shape_share < 1.0):
        raise ParameterError(f"--shape-share must be at least 0 and below 1, got {shape_share}")
    if selection_share + structure_share + shape_share >= 1.0:
        raise ParameterError("--selection-share + --structure-share + --shape-share must be below 1 (the rest goes "
                             f"to the counts), got {selection_share} + {structure_share} + {shape_share}")
    if int(record_bound) != record_bound or record_bound < 1:
        raise ParameterError(f"--record-bound must be a whole number >= 1, got {record_bound}")
    if int(max_items) != max_items or not (1 <= max_items <= MAX_PREFIX_ITEMS):
        raise ParameterError(f"--max-items must be a whole number between 1 and {MAX_PREFIX_ITEMS}, got {max_items}")
    if not (beta > 1 and math.isfinite(beta)):
        raise ParameterError(f"--beta must be a finite number > 1, got {beta}")
    if int(theta) != theta:
        raise ParameterError(f"--theta must be a whole number, got {theta}")
    if not (merge_below >= 0 and math.isfinite(merge_below)):
        raise ParameterError(f"--merge-below must be a finite number >= 0, got {merge_below}")
    return eps


@records_run_start
def prefix_diffpart(
    db: TransactionDB,
    universe: Universe,
    epsilon: float,
    *,
    noise: NoiseSource,
    selection_share: float = DEFAULT_SELECTION_SHARE,
    structure_share: float | None = None,
    record_bound: int = DEFAULT_RECORD_BOUND,
    max_items: int = DEFAULT_MAX_ITEMS,
    beta: float = DEFAULT_BETA,
    theta: int = DEFAULT_THETA,
    merge_below: float = DEFAULT_MERGE_BELOW,
    selection_false: float = DEFAULT_SELECTION_FALSE,
    shape_share: float | str = DEFAULT_SHAPE_SHARE,
    keep_trace: bool = False,
    level_wise: bool | None = None,
) -> SetValuedRelease:
    """Sanitize ``db`` under ``epsilon``-DP with DiffPart-Prefix (module docstring); returns the release.

    ``db`` is an in-memory database or an engine's data (:mod:`dprelease.engine`). ``level_wise`` (default: only
    when ``db`` lives on another engine, e.g. Spark) builds the trie with one engine pass per level
    (:func:`build_prefix_tree_levelwise`); with a seed it gives the same release on every engine. The in-memory
    build (:func:`build_prefix_tree`) sorts the records once by their prefix keys instead; both sum the weighted
    supports exactly, so they give the same release too.

    A number ``shape_share`` > 0 of B pays for a noisy record length histogram and noisy supports of the
    frequent items the generalized records drop (half each); the records then get their dropped items back by
    post-processing (:mod:`dprelease.setvalued.shape`). 0 releases the bare generalized records (this method's
    release before the fill, byte for byte with a seed). ``structure_share`` defaults to
    ``DEFAULT_SHAPED_STRUCTURE_SHARE`` with the fill and ``DEFAULT_STRUCTURE_SHARE`` without.

    ``shape_share="auto"`` (the default) pays ``AUTO_LENGTH_SHARE`` of B for the length histogram first and fills
    only where the noisy mean length is a small share of the universe (``FILL_PAIR_SHARE``; the comment at
    ``AUTO``): then as with 0.1; else the rest of B is split between the structure and the counts in the
    proportions of the bare release (the structure share, when given, is kept either way)."""
    auto = isinstance(shape_share, str)
    if auto and shape_share != AUTO:
        raise ParameterError(f"--shape-share must be a number in [0, 1) or {AUTO!r}, got {shape_share!r}")
    given_structure = structure_share
    if structure_share is None:
        structure_share = DEFAULT_SHAPED_STRUCTURE_SHARE if auto or shape_share > 0 else DEFAULT_STRUCTURE_SHARE
    B = _validate(epsilon, selection_share, structure_share, record_bound, max_items, beta, theta, merge_below,
                  FILL_SHAPE_SHARE if auto else float(shape_share))
    if level_wise is None:
        level_wise = not isinstance(db, (TransactionDB, LocalTransactions))
    if isinstance(db, LocalTransactions) and not level_wise:
        db = db.db
    elif level_wise:
        db = as_transaction_data(db)
    if db.n_items != universe.size:
        raise ParameterError("the database and the universe disagree on the number of items")
    n = universe.size
    accountant = BudgetAccountant(B, keep_ledger=keep_trace)
    scope = accountant.root()
    eps_order = selection_share * B
    bins = None
    shape_info: dict[str, object] = {}
    if auto:
        # The length histogram first: whether to fill is a function of it (a noisy value) and of |I| (public).
        eps_lengths = AUTO_LENGTH_SHARE * B
        bins = _length_bins(db, n, eps_lengths, scope=scope, noise=noise)
        fill, shape_info = _fill_decision(bins, n, eps_lengths)
        if not fill and given_structure is None:
            structure_share = auto_bare_structure_share(selection_share)
        eps_hidden = eps_lengths if fill else 0.0
        applied_share = (eps_lengths + eps_hidden) / B
    else:
        eps_lengths = float(shape_share) * B / 2  # and as much for the hidden frequent-item supports
        eps_hidden = eps_lengths
        applied_share = float(shape_share)
    eps_tree = structure_share * B
    eps_counts = B - eps_order - eps_tree - eps_lengths - eps_hidden  # they add up to B on every chain

    trace: list[PrefixLevel] = []
    cells_out: list[_SortedCells] = []
    options = dict(scope=scope, noise=noise, record_bound=record_bound, max_items=max_items, beta=beta, theta=theta,
                   selection_false=selection_false, trace=trace if keep_trace else None)
    if level_wise:
        tree, node_counts = build_prefix_tree_levelwise(db, n, eps_order, eps_tree, **options)  # type: ignore[arg-type]
    else:
        tree, node_counts = build_prefix_tree(db, n, eps_order, eps_tree, cells_out=cells_out,
                                              **options)  # type: ignore[arg-type]
    m = tree.m
    total, merge_at = _class_counts(tree, node_counts, eps_counts, merge_below, scope=scope, noise=noise)
    shaped = None
    if eps_hidden > 0:
        cutoff = (record_bound / eps_order) * math.log(n / (2.0 * selection_false)) if n > max_items else 0.0
        if bins is None:
            bins = _length_bins(db, n, eps_lengths, scope=scope, noise=noise)
            limits.check("diffpart-prefix: the fill",
                         memory=_fill_memory(length_distribution(bins, length_edges(n), eps_lengths)),
                         why="noisy records x noisy mean length; --shape-share 0 releases the bare records")
        shaped = _shaped(db, tree, total, merge_at, bins, eps_lengths, eps_hidden, record_bound=record_bound,
                         cutoff=cutoff, scope=scope, noise=noise, cells=cells_out[0] if cells_out else None)
    if auto:
        shape_info["filled"] = shaped is not None
    itemsets, counts = shaped if shaped is not None else tree.release(total, merge_at)
    n_released = int(counts.sum()) if counts.size else 0
    cap = limits.current().max_output_records
    if n_released > cap:  # a noisy count: refusing on it is post-processing
        raise limits.WorkLimitError(f"diffpart-prefix: the release has {n_released:,} records (noisy count), over "
                                    f"--max-output-records {cap:,}; raise --max-output-records")
    size_note = release_size_note("diffpart-prefix", n_released, "records")
    manifest = build_manifest(
        "diffpart-prefix",
        epsilon=B,
        notes=[size_note] if size_note else None,
        parameters={"selection_share": selection_share, "structure_share": structure_share,
                    "record_bound": int(record_bound), "max_items": int(max_items), "beta": float(beta),
                    "theta": int(theta), "merge_below": float(merge_below),
                    "shape_share": AUTO if auto else float(shape_share)},
        noise=noise,
        accountant=accountant,
        domain=universe.describe(),
        release={"records": n_released, "distinct_records": len(itemsets),
                 "frequent_items": m, "privtree_scale": tree.lam, "privtree_depth_bias": tree.delta,
                 **({"shape": shape_info} if auto else {})},
        budget_split={
            "item_order": f"{selection_share} B: weighted item supports, Laplace(l/eps) with l = record_bound",
            "structure": f"{structure_share} B: PrivTree split decisions over the whole trie (one charge, any depth)",
            "lengths": (f"{AUTO_LENGTH_SHARE} B first: records per length bin, discrete Laplace (sensitivity 1); "
                        f"the fill runs iff (noisy mean length / |I|)^2 <= {FILL_PAIR_SHARE}, and then as much "
                        "again for the hidden frequent-item supports (else the structure and the counts share the "
                        "rest)" if auto else
                        f"{shape_share} B: records per length bin, discrete Laplace (sensitivity 1), and the hidden "
                        "frequent-item supports (half each)")
                       + "; the generalized records get their dropped items back from them (post-processing)",
            "counts": "the rest: one discrete Laplace count per disjoint class (sensitivity 1)",
            "chain_total": "exactly B on every chain (sequential composition of the four)",
        },
        privacy_unit="record", neighbours=NEIGHBOURS_LINE,
    )
    # budget shares past their useful range (public rules of dprelease.limits; the CLI also says them on stderr)
    default_structure, default_shape = ((DEFAULT_SHAPED_STRUCTURE_SHARE, FILL_SHAPE_SHARE) if applied_share > 0
                                        else (DEFAULT_STRUCTURE_SHARE, 0.0))
    if auto:
        default_structure, default_shape = structure_share, applied_share
    add_notes(manifest, limits.prefix_range_notes(selection_share, structure_share, DEFAULT_SELECTION_SHARE,
                                                  default_structure, applied_share, default_shape))
    note = fill_memory_note(manifest)
    if note:  # the fill was wanted but would not fit --max-memory (a noisy estimate)
        add_notes(manifest, [note])
    manifest["uncertainty"] = manifest_section(  # public: the count budget's scale
        accounts_for="the discrete Laplace noise of each released class count (a cell merged from several classes "
                     "carries more)",
        formula="DLap(b), b = 1/eps_counts per cell; an itemset count sums n released cells: sd = sqrt(n) "
                "sd(DLap(b)), half-width z sd, z = ln(20)/sqrt(2)",
        ignores="records cut down to their frequent items, records of infrequent prefixes, and classes merged "
                "into their parent (structure); coverage measured in docs/accuracy.md",
        scale=laplace_scale(eps_counts, 1))
    return SetValuedRelease(itemsets, counts, universe, manifest, trace=trace, accountant=accountant)


def _class_counts(tree: "PrefixTree", node_counts: np.ndarray, eps_counts: float, merge_below: float, *,
                  scope: BudgetScope, noise: NoiseSource) -> tuple[np.ndarray, int]:
    """Step 3: one noisy count per disjoint class (sensitivity 1): the noisy totals per node and the count below
    which a class is merged into its parent prefix (post-processing, :meth:`PrefixTree.release`)."""
    classes = np.flatnonzero(tree.is_class)
    released = noisy_counts(node_counts[classes], eps_counts, scope=scope, noise=noise, label="class counts")
    total = np.zeros(tree.n_nodes, dtype=np.int64)
    total[classes] = released
    merge_at = max(1, math.ceil(merge_below / eps_counts - 1e-9))
    return total, merge_at


def auto_bare_structure_share(selection_share: float) -> float:
    """"auto" without the fill: the structure's share of what the selection and the length histogram leave, in
    the bare release's proportion structure : counts = 0.5 : 0.35."""
    rest = 1.0 - selection_share - AUTO_LENGTH_SHARE
    return rest * DEFAULT_STRUCTURE_SHARE / (1.0 - DEFAULT_SELECTION_SHARE)


def _length_bins(db: TransactionData | TransactionDB, n_items: int, eps_lengths: float, *, scope: BudgetScope,
                 noise: NoiseSource) -> np.ndarray:
    """The record length histogram over the public bins of ``length_edges(n_items)``, discrete Laplace at
    ``eps_lengths`` (sensitivity 1: a record is in one bin)."""
    if isinstance(db, TransactionDB):
        lengths, counts = np.unique(db.lengths, return_counts=True)
    else:
        lengths, counts = db.length_histogram()
    return noisy_length_bins(lengths, counts, length_edges(n_items), eps_lengths, scope=scope, noise=noise)


def _fill_decision(bins: np.ndarray, n_items: int, eps_lengths: float) -> tuple[bool, dict[str, object]]:
    """"auto": fill iff the noisy length distribution is non-empty and (its mean / |I|)^2 <= ``FILL_PAIR_SHARE``
    (post-processing of the noisy histogram and the public |I|); with the values it was decided on."""
    dist = length_distribution(bins, length_edges(n_items), eps_lengths)
    mass = float(dist.sum())
    mean = float((dist * np.arange(dist.size)).sum() / mass) if mass > 0 else 0.0
    density = mean / n_items
    fill = mass > 0 and density**2 <= FILL_PAIR_SHARE
    info: dict[str, object] = {"noisy_mean_length": round(mean, 3), "density": density,
                               "rule": f"fill iff (noisy mean length / |I|)^2 <= {FILL_PAIR_SHARE} and the fill's "
                                       "memory (noisy records x noisy mean length) fits --max-memory"}
    need = _fill_memory(dist)
    if fill and need > limits.current().max_memory:
        fill = False
        info["memory"] = (f"the fill would need about {limits.format_size(need)}, over the limit of "
                          f"{limits.format_size(limits.current().max_memory)}: the bare records are released")
    return fill, info


def fill_memory_note(manifest: dict[str, Any]) -> str | None:
    """The note of a release whose fill did not fit ``--max-memory`` (its manifest's ``release.shape.memory``),
    or None."""
    shape = (manifest.get("release") or {}).get("shape")
    memory = shape.get("memory") if isinstance(shape, dict) else None
    return f"diffpart-prefix: {memory}; raise --max-memory to fill the records" if memory else None


def _fill_memory(dist: np.ndarray) -> float:
    """The fill's memory, estimated from the noisy length distribution (``length_distribution`` of the noisy
    histogram: post-processing): records x mean length x ``limits.FILL_BYTES_PER_ITEM``."""
    return float(limits.FILL_BYTES_PER_ITEM * (dist * np.arange(dist.size)).sum())


def _shaped(db: TransactionData | TransactionDB, tree: "PrefixTree", total: np.ndarray, merge_at: int,
            bins: np.ndarray, eps_lengths: float, eps_hidden: float, *, record_bound: int, cutoff: float,
            scope: BudgetScope, noise: NoiseSource, cells: _SortedCells | None = None
            ) -> tuple[ItemsetRows, np.ndarray] | None:
    """Step 4: given the noisy length ``bins`` (:func:`_length_bins` at ``eps_lengths``), for the public trie,
    each frequent item's support among the records whose class drops it (Laplace at ``eps_hidden``, sensitivity
    ``record_bound``: a record's h such items get min(1, record_bound/h) each). Then the generalized records are
    filled to them (post-processing of these, the noisy class totals and the noisy item supports; shape.py). None
    when the noisy histogram holds nothing: the bare classes are released. The exact supports come from the build's
    sorted ``cells`` where it has them (in memory, one word of ranks), else from a pass of the engine: the same
    sums either way."""
    edges = length_edges(tree.n_items)
    merged = tree.merged(total, merge_at)
    out = np.flatnonzero(merged >= merge_at)
    data = LocalTransactions(db) if isinstance(db, TransactionDB) else db
    rank = np.full(tree.n_items, -1, dtype=np.int64)
    rank[tree.F] = np.arange(tree.m)
    exact = cells.hidden_sums(tree.level, tree.m, record_bound) if cells is not None else None
    if exact is None:
        exact = data.prefix_hidden_sums(rank, tree.child, tree.is_class, tree.level, record_bound)
    hidden = noisy_values(exact, eps_hidden, scope=scope, noise=noise, label="hidden frequent-item supports",
                          sensitivity=float(record_bound))
    return shaped_release(tree.pattern[out], merged[out], tree.level[out], tree.F, tree.noisy_support, bins, edges,
                          eps_lengths, record_bound=record_bound, cutoff=cutoff, noise=noise, hidden_f=hidden)


@dataclass(eq=False)
class PrefixTree:
    """The public structure of a DiffPart-Prefix run: the ordered frequent items and the trie of cells.

    Node 0 is the root (empty prefix); node v has ``pattern[v]`` (a row of int64 words, :mod:`..engine.bitmasks`:
    rank r's bit set iff the prefix holds the item of rank r), ``parent[v]``,
    ``level[v]`` and, when it was kept below the last level, its two cells ``child[v] = (without, with)``.
    ``is_class[v]``: records end in v (a failed cell, or a kept cell of the last level). Everything here is a
    function of public inputs and noisy values (the item order, the PrivTree decisions).
    """

    F: np.ndarray
    n_items: int
    pattern: np.ndarray
    parent: np.ndarray
    level: np.ndarray
    is_class: np.ndarray
    child: np.ndarray
    noisy_support: np.ndarray
    lam: float
    delta: int

    @property
    def m(self) -> int:
        return int(self.F.size)

    @property
    def n_nodes(self) -> int:
        return int(self.pattern.shape[0])

    def classes_of(self, db: TransactionDB) -> np.ndarray:
        """The class of every record of ``db``: where its path through the kept cells ends (deterministic, no
        noise; :func:`bitmasks.trie_leaves`); -1 for an empty record (it belongs to no class)."""
        rank = np.full(self.n_items, -1, dtype=np.int64)
        rank[self.F] = np.arange(self.m)
        node = bitmasks.trie_leaves(bitmasks.item_masks(db, rank, self.pattern.shape[1]), self.child, self.is_class)
        node[db.lengths == 0] = -1
        return node

    def merged(self, total: np.ndarray, merge_at: int | np.ndarray) -> np.ndarray:
        """Post-processing of noisy class totals: those below ``merge_at`` (one value, or one per node) merged
        into their parent prefix, deepest first; a node is released where the result is >= ``merge_at``."""
        total = np.asarray(total, dtype=np.int64).copy()
        for lev in range(int(self.level.max(initial=0)), 0, -1):
            at = np.flatnonzero((self.level == lev) & (total < merge_at) & (total != 0))
            if at.size:
                np.add.at(total, self.parent[at], total[at])
                total[at] = 0
        return total

    def release(self, total: np.ndarray, merge_at: int | np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
        """Post-processing of noisy class totals: :meth:`merged`, then the released patterns as item-id sets
        (canonical order)."""
        total = self.merged(total, merge_at)
        out = np.flatnonzero(total >= merge_at)
        return _patterns_to_itemsets(self.pattern[out], total[out], self.F, self.n_items, self.noisy_support)


def build_prefix_tree(db: TransactionDB, n_items: int, eps_order: float, eps_tree: float, *, scope: BudgetScope,
                      noise: NoiseSource, record_bound: int = DEFAULT_RECORD_BOUND, max_items: int = DEFAULT_MAX_ITEMS,
                      beta: float = DEFAULT_BETA, theta: int = DEFAULT_THETA,
                      selection_false: float = DEFAULT_SELECTION_FALSE,
                      trace: list[PrefixLevel] | None = None, cells_out: list[_SortedCells] | None = None
                      ) -> tuple[PrefixTree, np.ndarray]:
    """Steps 1-2 of DiffPart-Prefix on ``db`` (item order at ``eps_order``, PrivTree structure at ``eps_tree``,
    both charged on ``scope``): the public tree and the (exact) non-empty records per node, non-zero at class
    nodes only. ``cells_out`` receives the records' sorted keys with the classes' ranges (exact data: never
    part of a release), from which the fill's hidden supports are summed without another pass.

    Memory: the weighted supports are summed block by block (the exact digit sums both engines use, so the
    supports, hence the draws, are the ones :func:`build_prefix_tree_levelwise` gets); each record is then one
    64-bit sort key (:func:`prefix_sort_keys`), on which every cell of the trie is a range. So the build holds
    8 bytes per record beside the CSR arrays."""
    # 1. item order and the frequent part F (weighted supports: L1 sensitivity record_bound)
    supports = LocalTransactions(db).bounded_item_sums(record_bound)
    F, noisy_support = _item_order(supports, n_items, eps_order, scope=scope, noise=noise, record_bound=record_bound,
                                   max_items=max_items, selection_false=selection_false)
    del supports
    rank = np.full(n_items, -1, dtype=np.int64)
    rank[F] = np.arange(F.size)
    cells = _SortedCells(prefix_sort_keys(db, rank, bitmasks.n_words(F.size)),
                         int(np.count_nonzero(db.lengths == 0)))
    tree, node_counts = _grow_tree(F, noisy_support, n_items, cells, eps_tree, scope=scope, noise=noise, beta=beta,
                                   theta=theta, trace=trace)
    if cells_out is not None:
        cells_out.append(cells)
    return tree, node_counts


def build_prefix_tree_levelwise(data: TransactionData, n_items: int, eps_order: float, eps_tree: float, *,
                                scope: BudgetScope, noise: NoiseSource, record_bound: int = DEFAULT_RECORD_BOUND,
                                max_items: int = DEFAULT_MAX_ITEMS, beta: float = DEFAULT_BETA,
                                theta: int = DEFAULT_THETA, selection_false: float = DEFAULT_SELECTION_FALSE,
                                trace: list[PrefixLevel] | None = None) -> tuple[PrefixTree, np.ndarray]:
    """:func:`build_prefix_tree` with its data passes on an engine (:mod:`dprelease.engine`): the weighted supports
    are one pass (summed exactly, :meth:`TransactionData.bounded_item_sums`), each level's cell counts one pass
    (:meth:`TransactionData.prefix_level_counts`), and the records per class one more. The same counts reach the
    same mechanisms in the same order on every engine. Returns the tree and the records per node (each class's
    count is its cell's count at the level where it stopped: no further pass)."""
    supports = data.bounded_item_sums(record_bound)
    F, noisy_support = _item_order(supports, n_items, eps_order, scope=scope, noise=noise, record_bound=record_bound,
                                   max_items=max_items, selection_false=selection_false)
    rank = np.full(n_items, -1, dtype=np.int64)
    rank[F] = np.arange(F.size)
    return _grow_tree(F, noisy_support, n_items, _EngineCells(data, rank), eps_tree, scope=scope, noise=noise,
                      beta=beta, theta=theta, trace=trace)


def _item_order(supports: np.ndarray, n_items: int, eps_order: float, *, scope: BudgetScope, noise: NoiseSource,
                record_bound: int, max_items: int, selection_false: float) -> tuple[np.ndarray, np.ndarray]:
    """Step 1: the noisy weighted supports and F, the frequent items in noisy-support order."""
    noisy_support = noisy_values(supports, eps_order, scope=scope, noise=noise, label="weighted item supports",
                                 sensitivity=float(record_bound))
    order = np.argsort(-noisy_support, kind="stable")  # ties by item id: public
    if n_items > max_items:
        cutoff = (record_bound / eps_order) * math.log(n_items / (2.0 * selection_false))
        order = order[:max_items]
        order = order[noisy_support[order] >= cutoff]
    return order.astype(np.int64), noisy_support


def prefix_sort_keys(db: TransactionDB, rank: np.ndarray, words: int) -> np.ndarray:
    """Every record's :func:`bitmasks.item_masks` row as its :func:`bitmasks.prefix_keys` key, sorted (one per
    record: uint64 with one word, a byte string of 8 bytes per word with more).

    Sorted so, the records of a trie cell at level j (those whose ranks below j form one pattern) are one
    contiguous range, and the cell's two children split it where rank j's bit turns on. Records with no ranked
    item (key 0) come first. The masks are filled block by block (no per-occurrence array of the whole
    database)."""
    masks = np.empty((db.n_records, words), dtype=np.int64)
    lo = 0
    for block in local_engine.record_views(db, local_engine.PASS_ROWS):
        masks[lo : lo + block.n_records] = bitmasks.item_masks(block, rank, words)
        lo += block.n_records
    keys = bitmasks.prefix_keys(masks, inplace=True)  # the masks' memory holds the keys
    keys.sort()
    return keys


class _SortedCells:
    """The records of an in-memory database as sorted prefix keys (:func:`prefix_sort_keys`): each active cell
    is a range [lo, hi) of them, so a level's counts are one ``searchsorted`` per cell (no per-record state)."""

    def __init__(self, keys: np.ndarray, n_empty: int):
        self.keys = keys
        # an empty record holds no item, so it belongs to no class (as in DiffPart; it would be released as an empty itemset): the
        # empty records are the first n_empty keys (all 0), outside the root's range
        self.lo = np.array([n_empty], dtype=np.int64)
        self.hi = np.array([keys.size], dtype=np.int64)
        self._cell_lo = self._cell_hi = np.zeros(0, dtype=np.int64)
        self._class_lo: list[np.ndarray] = []  # the ranges of the cells that failed, level by level
        self._class_hi: list[np.ndarray] = []
        self.class_nodes: np.ndarray | None = None  # the node of each range, once the tree is grown

    def root_count(self) -> int:
        return int(self.hi[0] - self.lo[0])

    def counts(self, level: int, active_pattern: np.ndarray) -> np.ndarray:
        split_key = bitmasks.prefix_keys(bitmasks.with_bit(active_pattern, level, np.ones(len(active_pattern))))
        # keys of a cell share its top `level` bits, so the first key >= split_key lies inside [lo, hi]
        split = np.searchsorted(self.keys, split_key).astype(np.int64)
        self._cell_lo = np.stack([self.lo, split], axis=1).reshape(-1)  # cells (parent order, bit), as numbered
        self._cell_hi = np.stack([split, self.hi], axis=1).reshape(-1)
        return self._cell_hi - self._cell_lo

    def advance(self, kept: np.ndarray) -> None:
        self._class_lo.append(self._cell_lo[~kept])
        self._class_hi.append(self._cell_hi[~kept])
        self.lo, self.hi = self._cell_lo[kept], self._cell_hi[kept]

    def class_ranges(self) -> tuple[np.ndarray, np.ndarray]:
        """Each class's range of keys, in the order :func:`_grow_tree` numbers the classes (the failed cells level
        by level, then the kept cells of the last level): the ranges cover the non-empty records once each."""
        return np.concatenate([*self._class_lo, self.lo]), np.concatenate([*self._class_hi, self.hi])

    def hidden_sums(self, level: np.ndarray, m: int, ell: int) -> np.ndarray | None:
        """:meth:`TransactionData.prefix_hidden_sums` from the sorted keys of the grown tree's classes (``level``:
        every node's): a class's records are its range of keys, and a key is its record's mask with the bits
        reversed, so neither a pass over the records nor a walk of the trie is needed. The same exact digit sums,
        block by block, hence the same floats. None where the keys are not one word (``m`` > 62: byte strings)."""
        if self.keys.dtype != np.uint64:
            return None
        if self.class_nodes is None:
            raise ValueError("the tree is not grown yet")
        lo, hi = self.class_ranges()
        held = np.flatnonzero(hi > lo)  # (a class may hold no record)
        order = held[np.argsort(lo[held], kind="stable")]  # the ranges tile the keys after the empty records
        lo, hi, nodes = lo[order], hi[order], self.class_nodes[order]
        first, last = (int(lo[0]), int(hi[-1])) if lo.size else (0, 0)
        step = local_engine.PASS_ROWS
        parts = []
        for a in range(first, last, step):  # a block of keys at a time: memory bounded as the engine's pass
            b = min(a + step, last)
            masks = bitmasks.reverse_bits(self.keys[a:b].copy()).view(np.int64)[:, None]
            i, j = int(np.searchsorted(hi, a, side="right")), int(np.searchsorted(lo, b))  # the ranges in [a, b)
            levels = np.repeat(level[nodes[i:j]], np.minimum(hi[i:j], b) - np.maximum(lo[i:j], a))
            parts.append(kernels.hidden_rank_digits(masks, levels, m, ell))
        return kernels.exact_sums(kernels.merge(parts), m)


class _EngineCells:
    """The same counts from an engine: a level's cells are found from the records' item-rank bits (no state)."""

    def __init__(self, data: TransactionData, rank: np.ndarray):
        self.data, self.rank = data, rank

    def root_count(self) -> int:
        lengths, counts = self.data.length_histogram()
        return int(counts[lengths > 0].sum())

    def counts(self, level: int, active_pattern: np.ndarray) -> np.ndarray:
        if active_pattern.shape[0] == 0:  # every record is in a class already: no pass
            return np.zeros(0, dtype=np.int64)
        return self.data.prefix_level_counts(self.rank, active_pattern, level)

    def advance(self, kept: np.ndarray) -> None:
        return None


def _grow_tree(F: np.ndarray, noisy_support: np.ndarray, n_items: int, cells, eps_tree: float, *, scope: BudgetScope,
               noise: NoiseSource, beta: float, theta: int, trace: list[PrefixLevel] | None
               ) -> tuple[PrefixTree, np.ndarray]:
    """Step 2: the binary trie over F, level by level, with PrivTree decisions (one charge for the whole tree);
    ``cells`` gives each level's cell counts (and follows the records, for an in-memory database). Returns the
    tree and the exact non-empty records per node, non-zero at class nodes only: a class's count is its cell's
    count at the level where it stopped (or the last level's), so no pass is needed for them."""
    m = int(F.size)
    words = bitmasks.n_words(m)
    splitter = PrivTreeSplitter(eps_tree, beta=beta, theta=int(theta), scope=scope, noise=noise,
                                label="prefix structure (PrivTree)")
    # nodes: 0 = root (empty prefix); every tested cell becomes a node (kept: internal; failed: a class)
    pattern = [np.zeros((1, words), dtype=np.int64)]
    parent = [np.full(1, -1, dtype=np.int64)]
    level_of = [np.zeros(1, dtype=np.int64)]
    is_class = [np.zeros(1, dtype=bool)]
    child_rows: list[tuple[np.ndarray, np.ndarray]] = []  # (parent ids, their first cell id)
    n_nodes = 1
    active = np.zeros(1, dtype=np.int64)  # node ids of the kept cells of the last level
    active_pattern = np.zeros((1, words), dtype=np.int64)
    class_ids: list[np.ndarray] = []
    class_counts: list[np.ndarray] = []
    active_counts = np.array([cells.root_count()]) if m == 0 else np.zeros(0, dtype=np.int64)
    for j in range(m):
        n_cells = 2 * active.size
        counts = cells.counts(j, active_pattern)
        kept = splitter.test(counts, depth=j + 1)
        ids = n_nodes + np.arange(n_cells, dtype=np.int64)  # cells numbered by (parent order, bit): public
        child_rows.append((active, ids[0::2]))
        cell_bit = np.tile(np.array([0, 1], dtype=np.int64), active.size)
        cell_pattern = bitmasks.with_bit(np.repeat(active_pattern, 2, axis=0), j, cell_bit)
        pattern.append(cell_pattern)
        parent.append(np.repeat(active, 2))
        level_of.append(np.full(n_cells, j + 1, dtype=np.int64))
        is_class.append(~kept)
        n_nodes += n_cells
        cells.advance(kept)
        class_ids.append(ids[~kept])
        class_counts.append(counts[~kept])
        active, active_pattern, active_counts = ids[kept], cell_pattern[kept], counts[kept]
        if trace is not None:
            trace.append(PrefixLevel(j + 1, int(F[j]), int(n_cells), int(kept.sum())))
    # kept cells of the last level (or the root, if F is empty) are classes too
    if isinstance(cells, _SortedCells):
        cells.class_nodes = np.concatenate([*class_ids, active])
    flags = np.concatenate(is_class)
    flags[active] = True
    node_counts = np.zeros(n_nodes, dtype=np.int64)
    for ids_, counts_ in zip([*class_ids, active], [*class_counts, active_counts]):
        node_counts[ids_] = counts_
    child = np.full((n_nodes, 2), -1, dtype=np.int64)
    for par, first in child_rows:
        child[par, 0] = first
        child[par, 1] = first + 1
    tree = PrefixTree(F, int(n_items), np.concatenate(pattern), np.concatenate(parent), np.concatenate(level_of),
                      flags, child, noisy_support, splitter.lam, splitter.delta)
    return tree, node_counts


def apportion(total: int, weights: np.ndarray) -> np.ndarray:
    """``total`` split over ``weights`` (>= 0) in proportion, rounded by largest remainder (ties: lower index)."""
    w = np.asarray(weights, dtype=np.float64)
    if total <= 0 or w.size == 0:
        return np.zeros(w.size, dtype=np.int64)
    if not (w.sum() > 0):
        w = np.ones(w.size)
    share = w / w.sum() * total
    base = np.floor(share).astype(np.int64)
    left = int(total - base.sum())
    if left > 0:
        rem = share - base
        base[np.lexsort((np.arange(w.size), -rem))[:left]] += 1
    return base


def _patterns_to_itemsets(patterns: np.ndarray, counts: np.ndarray, F: np.ndarray, n_items: int,
                          noisy_support: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
    """Item-id sets of the released patterns, canonically ordered; the empty pattern becomes single outside items."""
    m = F.size
    merged: dict[tuple[int, ...], int] = {}
    bits = bitmasks.mask_bits(patterns, m)
    held = bits.sum(axis=1)
    items = F[np.nonzero(bits)[1]]  # row by row, ranks ascending
    for its, c in zip(np.split(items, np.cumsum(held)[:-1]), counts.tolist()):
        if its.size:
            key = tuple(sorted(its.tolist()))
            merged[key] = merged.get(key, 0) + int(c)
    empty = int(counts[held == 0].sum()) if counts.size else 0
    if empty > 0 and m < n_items:
        # post-processing of noisy values: records with no item of F become one outside item each, shared
        # out in proportion to the clipped noisy supports (deterministic: a re-emitted release is the same)
        outside = np.setdiff1d(np.arange(n_items, dtype=np.int64), F)
        k = apportion(empty, np.clip(noisy_support[outside], 0.0, None))
        for i, c in zip(outside[k > 0].tolist(), k[k > 0].tolist()):
            merged[(int(i),)] = merged.get((int(i),), 0) + int(c)
    keys = sorted(merged)
    return [np.asarray(k, dtype=np.int64) for k in keys], np.asarray([merged[k] for k in keys], dtype=np.int64)
