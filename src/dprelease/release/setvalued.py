"""A set-valued release (DiffPart, DiffPart-Prefix, Basic, a stream): records, as (itemset, count) pairs.

The body is a transaction file: ``counts[j]`` lines holding itemset j (item labels of the universe, separated by
one space), in the canonical order of :func:`canonical_itemset_order` -- a function of the released values
only. Reading it back groups equal consecutive lines into pairs again.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, IO, Any, ClassVar

import numpy as np

from .base import Written, check_kind
from .files import Manifest, read_manifest, write_with_manifest

if TYPE_CHECKING:
    from ..data.transactions import TransactionDB
    from ..data.universe import Universe
    from ..privacy.accountant import BudgetAccountant

__all__ = ["SetValuedRelease", "canonical_itemset_order", "write_set_valued_release"]

# Private switch (tests and the audit's "broken fixture" only; never set it in a release path): True sorts every
# SetValuedRelease canonically (see SetValuedRelease); False restores the order the algorithm produced, which leaks
# which cells were real and which test-and-generated. IncTDPart's node ids follow it too.
_CANONICAL_ORDER = True


def canonical_itemset_order(itemsets: list[np.ndarray], counts: np.ndarray) -> np.ndarray:
    """The canonical order of (itemset, count) pairs: by the sorted item-id tuple, then by count.

    A function of the released values only, so the order of a release reveals nothing the values do not
    (in particular not which cells were real and which were test-and-generated, DiffPart Procedure 1).
    """
    keys = [tuple(np.asarray(s, dtype=np.int64).tolist()) for s in itemsets]
    c = np.asarray(counts, dtype=np.int64).tolist()
    return np.asarray(sorted(range(len(keys)), key=lambda j: (keys[j], c[j])), dtype=np.int64)


@dataclass(frozen=True, eq=False)
class SetValuedRelease:
    """A sanitized set-valued dataset: ``counts[j]`` copies of ``itemsets[j]`` (item ids).

    The pairs are held in the canonical order of :func:`canonical_itemset_order` (each itemset's
    items ascending), so the writer and :meth:`to_db` never reveal the order an algorithm produced them in.
    """

    kind: ClassVar[str] = "setvalued"

    itemsets: list[np.ndarray]
    counts: np.ndarray
    universe: Universe
    manifest: Manifest = field(default_factory=dict)
    trace: list[Any] = field(default_factory=list, repr=False)  # algorithm trace (tests); never written
    accountant: BudgetAccountant | None = field(default=None, repr=False)  # its ledger, for tests

    def __post_init__(self) -> None:
        counts = np.asarray(self.counts, dtype=np.int64)
        if len(self.itemsets) != counts.size:
            raise ValueError("one count per itemset")
        if not _CANONICAL_ORDER:
            return
        sets = [np.sort(np.asarray(s, dtype=np.int64)) for s in self.itemsets]
        order = canonical_itemset_order(sets, counts)
        object.__setattr__(self, "itemsets", [sets[j] for j in order.tolist()])
        object.__setattr__(self, "counts", counts[order])

    @property
    def n_records(self) -> int:
        return int(np.asarray(self.counts, dtype=np.int64).clip(min=0).sum())

    def to_db(self) -> TransactionDB:
        """The released records as a transaction database (``counts[j]`` copies of itemset j)."""
        from ..data.transactions import TransactionDB

        return TransactionDB.from_weighted_itemsets(self.itemsets, self.counts, self.universe.size)

    def write(self, output: str | os.PathLike[str]) -> Written:
        """The transaction file and its manifest, as one unit."""
        from ..data.io import write_weighted_itemsets

        def body(handle: IO[Any]) -> None:
            write_weighted_itemsets(handle, self.itemsets, self.counts, self.universe)

        return Written(*write_with_manifest(output, body, self.manifest))

    @classmethod
    def read(cls, path: str | os.PathLike[str], universe: Universe) -> SetValuedRelease:
        """The release at ``path`` (checked against its manifest), its items mapped to ids of ``universe``; an
        empty release (DiffPart can release nothing) has no pairs."""
        from ..data.io import read_transactions
        from ..errors import InputError

        manifest = read_manifest(path)
        check_kind(path, manifest, cls.kind)
        facts = manifest.get("release")
        if isinstance(facts, dict) and facts.get("records") == 0:
            return cls([], np.zeros(0, dtype=np.int64), universe, manifest)
        try:
            db, _ = read_transactions(path, universe)
        except InputError as exc:
            if "no transactions" in str(exc):  # an empty body is an empty release
                return cls([], np.zeros(0, dtype=np.int64), universe, manifest)
            raise
        itemsets, counts = _runs(db)
        return cls(itemsets, counts, universe, manifest)


def _runs(db: TransactionDB) -> tuple[list[np.ndarray], np.ndarray]:
    """Equal consecutive records as (itemset, count) pairs: a release file holds each itemset's copies in a run."""
    offsets = np.asarray(db.offsets, dtype=np.int64)
    items = np.asarray(db.items)
    n = offsets.size - 1
    if n <= 0:
        return [], np.zeros(0, dtype=np.int64)
    lengths = np.diff(offsets)
    same_length = np.zeros(n, dtype=bool)
    same_length[1:] = lengths[1:] == lengths[:-1]
    record = np.repeat(np.arange(n, dtype=np.int64), lengths)  # the record of every entry
    position = np.arange(items.size, dtype=np.int64) - offsets[record]
    compare = same_length[record]  # entries whose record is as long as the one before it
    previous = offsets[np.maximum(record - 1, 0)] + position
    differs = np.zeros(items.size, dtype=bool)
    differs[compare] = items[compare] != items[previous[compare]]
    differs[~compare] = True
    repeat = same_length & (np.bincount(record[differs], minlength=n) == 0)
    starts = np.flatnonzero(~repeat)
    counts = np.diff(np.append(starts, n))
    return [items[offsets[s]:offsets[s + 1]].astype(np.int64) for s in starts.tolist()], counts.astype(np.int64)


def write_set_valued_release(release: SetValuedRelease, output: str | os.PathLike[str]) -> tuple[Path, Path]:
    """``release.write(output)`` as a (body, manifest) pair."""
    written = release.write(output)
    return written.body, written.manifest
