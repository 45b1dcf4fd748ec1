"""The engine interface: the exact data passes an algorithm asks of its data.

An algorithm is written once against :class:`TransactionData` (set-valued data) or :class:`TableData`
(relational tables). Each method is one pass over the records that returns an *exact aggregate grouped by
a key* (item, pair, basis bin, candidate itemset, partition x child mask, leaf x value x class): never
noise, never records. Noise, mechanisms and the accountant stay with the caller, on the driver. Two
implementations: :mod:`dprelease.engine.local` (numpy over the in-memory CSR arrays / encoded table) and
:mod:`dprelease.engine.spark` (pyspark DataFrames; executors run the same numpy kernels on their blocks of
records, :mod:`dprelease.engine.kernels`). Every result is returned in a canonical order (by key), so the
same data gives the same arrays, bit for bit, on either engine, and the same draws follow.

These aggregates are *not* private: they are the inputs of the mechanisms and never leave an algorithm
except through :mod:`dprelease.privacy`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from . import bitmasks, kernels
from .kernels import Partial

__all__ = ["TransactionData", "Partitioner", "LevelOp", "LengthSummary", "Candidates", "CountedCandidates",
           "TableData", "TableSplitter", "ValueCounts", "GroupCounts", "BoxDomain", "RegionRecords", "Kernel"]

# a pass's kernel: (a block of records, *extra arguments) -> its partial (key, key, count) arrays
Kernel = Callable[..., Partial]

# distinct values of an attribute over a record set, ascending (float64), and their class counts (int64, n x classes)
ValueCounts = tuple[np.ndarray, np.ndarray]


@dataclass(frozen=True, slots=True)
class LengthSummary:
    """Record count and lengths (non-private; ``stats`` and the algorithms' sizes)."""

    n_records: int
    n_entries: int  # item occurrences (sum of record lengths)
    max_length: int


@dataclass(frozen=True, slots=True)
class LevelOp:
    """One partition operation of a DiffPart level: partition ``pid`` is split by the children of a node.

    The node covers item ids ``[lo, hi)`` and its child b covers ``[lo + b*span, lo + (b+1)*span)``
    (:class:`~dprelease.data.taxonomy.ContextFreeTaxonomy`); a record's child mask has bit b set iff it
    holds an item under child b.
    """

    pid: int
    lo: int
    hi: int
    span: int
    leaf: bool = False  # the sub-partitions are leaf partitions: only their counts are needed, no routing


class Partitioner(ABC):
    """DiffPart's records routed to sub-partitions by child mask, one level of the partition tree at a time.

    Partition 0 (the root) holds every non-empty record. :meth:`level_counts` counts the records of each
    listed partition per child mask; :meth:`route` then moves the records of chosen (partition, mask) cells
    of those partitions to new partitions and forgets their other records. A partition that was not listed
    keeps its records: a level may be counted in one call (the level-wise loop: one data pass per level) or
    partition by partition (the loop that draws each partition's noise before counting the next).
    """

    @abstractmethod
    def level_counts(self, ops: list[LevelOp]) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        """pid -> (the distinct non-zero child masks in ascending order, their record counts), per op."""

    @abstractmethod
    def route(self, moves: list[tuple[int, int, int]]) -> None:
        """Apply (parent pid, mask, child pid) to the partitions of the last :meth:`level_counts`."""

    def close(self) -> None:
        """Release what the partitioner holds (cached records)."""
        return None


class TransactionData(ABC):
    """Set-valued data over item ids ``0..n_items-1`` (the declared universe), behind an engine."""

    n_items: int
    engine_name: str = "local"

    @abstractmethod
    def summary(self) -> LengthSummary:
        """N, the number of item occurrences and the longest record."""

    @property
    def n_records(self) -> int:
        return self.summary().n_records

    @abstractmethod
    def item_supports(self) -> np.ndarray:
        """Exact support of every item (int64, length ``n_items``)."""

    @abstractmethod
    def pair_supports(self, items: np.ndarray) -> np.ndarray:
        """Exact support of every pair of ``items``: symmetric int64 matrix, diagonal = item supports."""

    @abstractmethod
    def pair_counts(self, items: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(a, b, count) of the pairs of ``items`` that occur, a < b as positions in ``items``, sorted by (a, b)."""

    @abstractmethod
    def basis_bin_counts(self, bases: list[tuple[int, ...]]) -> list[np.ndarray]:
        """PrivBasis Algorithm 1 lines 7-11: per basis, the records whose intersection with it has mask m."""

    @abstractmethod
    def itemset_supports(self, itemsets: list[tuple[int, ...]]) -> np.ndarray:
        """Exact support of each itemset (an empty itemset counts every record)."""

    def flat_supports(self, items: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """:meth:`itemset_supports` of itemsets given flat: ``items`` of itemset j are the next ``lengths[j]``."""
        bounds = np.concatenate([[0], np.cumsum(lengths)]).tolist()
        return self.itemset_supports([tuple(items[a:b].tolist()) for a, b in zip(bounds[:-1], bounds[1:])])

    @abstractmethod
    def record_mask_counts(self) -> np.ndarray:
        """Records per bitmask of their items (Basic; needs ``n_items`` <= 30): length 2^n_items."""

    @abstractmethod
    def partitioner(self) -> Partitioner:
        """A fresh DiffPart partitioner whose root holds every non-empty record."""

    # --- passes written once over :meth:`run_pass` (a kernel of :mod:`dprelease.engine.kernels`) ---------

    def run_pass(self, kernel: Kernel, *extra: Any) -> Partial:
        """``kernel(block, *extra)`` on every block of records, partials added by key, sorted by key."""
        raise NotImplementedError(f"{type(self).__name__} runs no kernel passes")

    def candidates(self, base_items: np.ndarray) -> "Candidates":
        """A level-wise miner's candidate counter over ``base_items`` (:class:`Candidates`); by default each
        level's candidates are one :meth:`itemset_supports` pass."""
        return CountedCandidates(self, base_items)

    def length_histogram(self) -> tuple[np.ndarray, np.ndarray]:
        """(the record lengths that occur, ascending; the number of records of each length)."""
        lengths, _, counts = self.run_pass(kernels.length_histogram)
        return lengths, counts

    def projected_length_histogram(self, items: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(each m >= 1 that occurs as m = |t & items|, ascending; the number of records with that m)."""
        m, _, counts = self.run_pass(kernels.projected_length_histogram, np.sort(np.asarray(items, np.int64)))
        return m, counts

    def bounded_item_sums(self, ell: int) -> np.ndarray:
        """Per item, the sum over its records t of min(1, ell/|t|) (float64, the float nearest the exact sum:
        the same bits on every engine)."""
        return kernels.exact_sums(self.run_pass(kernels.bounded_item_digits, int(ell)), self.n_items)

    def bounded_pair_sums(self, items: np.ndarray, ell: int) -> np.ndarray:
        """Per pair of ``items`` (sorted; ``np.triu_indices`` order), the sum over the records t holding both of
        min(1, ell/C(|t & items|, 2)); exact as :meth:`bounded_item_sums`."""
        items = np.asarray(items, dtype=np.int64)
        n_pairs = items.size * (items.size - 1) // 2
        return kernels.exact_sums(self.run_pass(kernels.bounded_pair_digits, items, int(ell)), n_pairs)

    def prefix_hidden_sums(self, rank: np.ndarray, child: np.ndarray, is_class: np.ndarray, level: np.ndarray,
                           ell: int) -> np.ndarray:
        """DiffPart-Prefix, for a public trie: per rank, the sum over the records holding the item of that rank
        at or past their class's level of min(1, ell/h), h the number of such items of the record
        (:func:`kernels.prefix_hidden_digits`; exact sums, the same bits on every engine)."""
        m = int(np.count_nonzero(np.asarray(rank) >= 0))
        part = self.run_pass(kernels.prefix_hidden_digits, np.asarray(rank, np.int64), np.asarray(child, np.int64),
                             np.asarray(is_class, bool), np.asarray(level, np.int64), int(ell))
        return kernels.exact_sums(part, m)

    def prefix_level_counts(self, rank: np.ndarray, patterns: np.ndarray, level: int) -> np.ndarray:
        """DiffPart-Prefix, level ``level`` of the trie: for the kept cells with prefix ``patterns`` ((cells, words)
        masks of the item-rank bits below ``level``, :mod:`.bitmasks`), the non-empty records per (cell, bit
        ``level``), as the vector 2*cell + bit. A 1-D ``patterns`` is one word per cell."""
        patterns = np.asarray(patterns, dtype=np.int64)
        if patterns.ndim == 1:
            patterns = patterns[:, None]
        order = np.argsort(bitmasks.row_keys(patterns), kind="stable")
        part = self.run_pass(kernels.prefix_cells, np.asarray(rank, np.int64), patterns[order], order, int(level))
        out = np.zeros(2 * patterns.shape[0], dtype=np.int64)
        np.add.at(out, part[0] * 2 + part[1], part[2])
        return out

    def focused(self, items: np.ndarray) -> AbstractContextManager[None]:
        """A hint for the passes made inside the ``with`` block: they are over subsets of ``items`` (a miner's
        candidate items, projections, basis bins), except passes over every item. An engine may prepare for
        them (the local engine keeps the records projected onto ``items`` and serves such passes from it); the
        results are the same with or without the hint. By default: nothing."""
        return nullcontext()

    def close(self) -> None:
        """Release cached data."""
        return None


class Candidates(ABC):
    """The candidates of a level-wise itemset miner over fixed ``base_items``, one level at a time.

    The generators of a level are itemsets of base items (the single base items at first); a candidate is a
    generator extended by one base item, given as a row (generator index, base-item index) of ``pairs``.
    :meth:`supports` counts a level's candidates; :meth:`advance` makes some of them the next generators.
    """

    @abstractmethod
    def supports(self, generators: list[tuple[int, ...]], pairs: np.ndarray) -> np.ndarray:
        """Exact support of ``generators[g] + (base_items[r],)`` for each row (g, r) of ``pairs`` (int64)."""

    def advance(self, pairs: np.ndarray) -> None:
        """The candidates ``pairs`` (rows of the last :meth:`supports`) are the next level's generators, in order."""
        return None


class CountedCandidates(Candidates):
    """Each level's candidates counted by one :meth:`TransactionData.itemset_supports` pass (any engine)."""

    def __init__(self, data: TransactionData, base_items: np.ndarray):
        self.data = data
        self.base_items = np.asarray(base_items, dtype=np.int64)

    def supports(self, generators: list[tuple[int, ...]], pairs: np.ndarray) -> np.ndarray:
        base = self.base_items.tolist()
        return self.data.itemset_supports([generators[g] + (base[r],) for g, r in pairs.tolist()])


class TableData(ABC):
    """An encoded relational table (:class:`~dprelease.data.table.EncodedTable`) behind an engine.

    Columns are as in ``EncodedTable``: categorical attributes hold leaf codes, numeric ones values, the
    class column class codes. Every pass is a class-count table grouped by a key.
    """

    engine_name: str = "local"

    @property
    @abstractmethod
    def n_records(self) -> int:
        """N (non-private)."""

    schema: Any  # the TableSchema (public)

    @abstractmethod
    def splitter(self) -> "TableSplitter":
        """A fresh DiffGen partitioner whose root partition 0 holds every record."""

    @abstractmethod
    def regions(self, domain: "BoxDomain") -> "RegionRecords":
        """RPS's records over ``domain``: dimension 0 the class, dimension j + 1 the table's column j."""

    def close(self) -> None:
        """Release cached data."""
        return None


class TableSplitter(ABC):
    """DiffGen's leaf partitions over the records (section 4.3): each record knows its leaf partition id.

    Every method is one pass that returns class counts grouped by a key (attribute value, child, leaf).
    """

    @abstractmethod
    def value_counts(self, attrs: list[int]) -> dict[int, ValueCounts]:
        """Over every record, per attribute j in ``attrs``: its distinct values and their class counts."""

    @abstractmethod
    def split(self, leaves: np.ndarray, attr: int, m: int, child_of_leaf: np.ndarray | None,
              split: float | None, first: int) -> dict[int, ValueCounts]:
        """Specialize: a record of partition ``leaves[r]`` goes to partition ``first + r * m + k``, k its child
        (categorical: ``child_of_leaf[code]``; numeric: ``value >= split``). Returns, per child k, the
        distinct values of ``attr`` over the moved records with their class counts (the new candidates' scores)."""

    @abstractmethod
    def leaf_class_counts(self, leaves: np.ndarray) -> np.ndarray:
        """Exact class counts of each partition in ``leaves`` (len(leaves) x classes)."""

    def close(self) -> None:
        return None


# --- RPS (records routed to regions, level by level) -------------------------------------------------------


@dataclass(frozen=True, eq=False)
class GroupCounts:
    """``count[i]`` records of region ``region[i]`` hold ``value[i]`` on that region's split dimension.

    Sorted by (region, value): SELECT region, value, COUNT(*) ... GROUP BY region, value ORDER BY region, value.
    """

    region: np.ndarray
    value: np.ndarray
    count: np.ndarray


class BoxDomain(Protocol):
    """What a region engine reads of RPS's public domain: per dimension ``[lo, hi)`` and whether it is an integer
    lattice (:class:`~dprelease.relational.rps.PointDomain`)."""

    @property
    def lo(self) -> np.ndarray: ...

    @property
    def hi(self) -> np.ndarray: ...

    @property
    def integer(self) -> np.ndarray: ...


class RegionRecords(ABC):
    """The record-level work of one RPS run: records routed to regions, one level of the partition at a time.

    Every record starts in region 0. Each level is one grouped count (:meth:`value_counts`) and one routing pass
    (:meth:`route`); :meth:`sizes` counts the records per region. Exact aggregates only, in canonical order.
    """

    @abstractmethod
    def sizes(self, n_regions: int) -> np.ndarray:
        """Records per region of the current level (exact; only ever passed to a mechanism)."""

    @abstractmethod
    def value_counts(self, region_dim: np.ndarray) -> GroupCounts:
        """The level's one grouped count: per region r, the distinct values of dimension ``region_dim[r]``
        among its records with their counts (regions with ``region_dim < 0`` are skipped)."""

    @abstractmethod
    def route(self, region_dim: np.ndarray, pivots: np.ndarray, child_base: np.ndarray) -> None:
        """Move every record to its child region: ``child_base[r] + (value >= pivots[r])``; records of regions
        with ``child_base < 0`` (leaves) leave the engine."""

    def close(self) -> None:
        """Release cached records."""
        return None
