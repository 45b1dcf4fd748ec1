"""A set-valued release (DiffPart, DiffPart-Prefix, Basic, a stream): records, as (itemset, count) pairs.

The body is a transaction file: ``counts[j]`` lines holding itemset j (item labels of the universe, separated by
one space), in the canonical order of :func:`canonical_itemset_order` -- a function of the released values
only. Reading it back groups equal consecutive lines into pairs again.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, IO, Any, ClassVar

import numpy as np

from ..data.transactions import ItemsetRows, spans
from ..privacy.uncertainty import Estimate, Intervals, count_intervals
from .base import Written, check_kind
from .files import Manifest, read_manifest, write_with_manifest

if TYPE_CHECKING:
    from ..data.transactions import TransactionDB
    from ..data.universe import Universe
    from ..privacy.accountant import BudgetAccountant

__all__ = ["SetValuedRelease", "canonical_itemset_order", "canonical_distinct_rows", "take_rows",
           "write_set_valued_release", "intervals_path"]

# Private switch (tests and the audit's "broken fixture" only; never set it in a release path): True sorts every
# SetValuedRelease canonically (see SetValuedRelease); False restores the order the algorithm produced, which leaks
# which cells were real and which test-and-generated. IncTDPart's node ids follow it too.
_CANONICAL_ORDER = True


def canonical_itemset_order(itemsets: Sequence[np.ndarray], counts: np.ndarray) -> np.ndarray:
    """The canonical order of (itemset, count) pairs: by the sorted item-id tuple, then by count (ties kept in
    input order: Python's stable sort of (tuple, count)).

    A function of the released values only, so the order of a release reveals nothing the values do not
    (in particular not which cells were real and which were test-and-generated, DiffPart Procedure 1).
    """
    rows = _as_rows(itemsets)
    return _lexicographic_order(rows.flat, rows.lengths, np.asarray(counts, dtype=np.int64))


def _as_rows(itemsets: Sequence[np.ndarray]) -> ItemsetRows:
    """Itemsets as one flat array (as they are if they already are)."""
    if isinstance(itemsets, ItemsetRows):
        return itemsets
    sets = [np.asarray(s, dtype=np.int64).reshape(-1) for s in itemsets]
    offsets = np.zeros(len(sets) + 1, dtype=np.int64)
    np.cumsum(np.fromiter((s.size for s in sets), dtype=np.int64, count=len(sets)), out=offsets[1:])
    return ItemsetRows(np.concatenate(sets) if offsets[-1] else np.zeros(0, dtype=np.int64), offsets)


def canonical_distinct_rows(rows: ItemsetRows) -> tuple[np.ndarray, np.ndarray]:
    """The distinct itemsets of ``rows`` (items ascending in each) in canonical order, with how many rows hold each:
    (one row index per distinct itemset, in canonical order; its number of rows). The sort finds the runs of
    identical rows as it orders them, so no second comparison of neighbours is needed."""
    n = len(rows)
    order, lo, hi = _lexicographic_runs(rows.flat, rows.lengths, np.zeros(n, dtype=np.int64))
    head = np.ones(n, dtype=bool)
    inner = spans(lo + 1, hi - lo - 1)  # every row of a run of identical rows but its first
    head[inner] = False
    at = np.flatnonzero(head)
    return order[at], np.diff(np.append(at, n)).astype(np.int64)


def _lexicographic_order(flat: np.ndarray, lengths: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Rows (``flat`` cut into runs of ``lengths``) ordered as Python orders (tuple, count), stably
    (:func:`_lexicographic_runs`)."""
    return _lexicographic_runs(flat, lengths, counts)[0]


def _lexicographic_runs(flat: np.ndarray, lengths: np.ndarray, counts: np.ndarray
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows (``flat`` cut into runs of ``lengths``) ordered as Python orders (tuple, count), stably; with the runs
    of identical itemsets (two or more rows) as positions [lo, hi) of that order.

    Pass by pass over windows of one 64-bit word: each item id + 1 takes the fewest bytes that hold the largest
    id (0 past the row's end, so a tuple sorts before its extensions), a window holds 8 // bytes positions, and
    its bytes read big-endian as one unsigned integer order windows as their items do. The rows still tied after
    the earlier windows are sorted by it, a stable sort inside each tied run. Runs that stay tied go on to the
    next window only while their rows go on; rows tied to the end are the same itemset and are ordered by count.
    Most rows part in the first window (one integer sort of all rows), so the later passes touch few rows, and no
    table of the longest row's width is made."""
    n = lengths.size
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    start = np.cumsum(lengths) - lengths
    size = _id_bytes(flat)
    w = 8 // size  # positions per window
    order = np.arange(n, dtype=np.int64)
    seg_lo, seg_hi = np.zeros(1, dtype=np.int64), np.full(1, n, dtype=np.int64)  # tied runs of ``order``
    same_lo: list[np.ndarray] = []  # runs of identical itemsets
    same_hi: list[np.ndarray] = []
    k = 0
    while seg_lo.size:
        sizes = seg_hi - seg_lo
        pos = spans(seg_lo, sizes)
        rows = order[pos]
        seg = np.repeat(np.arange(seg_lo.size), sizes)
        keys = _window_keys(flat, start[rows], lengths[rows], k, size)
        # by run, then by key, stably (one run: the key alone)
        perm = np.argsort(keys, kind="stable") if seg_lo.size == 1 else np.lexsort((keys, seg))
        order[pos] = rows[perm]
        sk, ss = keys[perm], seg[perm]
        head = np.ones(perm.size, dtype=bool)
        head[1:] = (sk[1:] != sk[:-1]) | (ss[1:] != ss[:-1])
        run_lo = np.flatnonzero(head)
        run_hi = np.append(run_lo[1:], perm.size)
        longest = np.maximum.reduceat(lengths[rows[perm]], run_lo)
        tied = run_hi - run_lo > 1
        run_lo, run_hi = run_lo[tied], run_hi[tied]
        more = longest[tied] > k + w  # a row goes on past the window: compare on (a row that ended pads with 0)
        same_lo.append(pos[run_lo[~more]])
        same_hi.append(pos[run_hi[~more] - 1] + 1)
        seg_lo, seg_hi = pos[run_lo[more]], pos[run_hi[more] - 1] + 1
        k += w
    lo, hi = np.concatenate(same_lo), np.concatenate(same_hi)
    if lo.size:  # identical itemsets: by count, stably
        sizes = hi - lo
        pos = spans(lo, sizes)
        rows = order[pos]
        order[pos] = rows[np.lexsort((counts[rows], np.repeat(np.arange(lo.size), sizes)))]
    return order, lo, hi


def _id_bytes(flat: np.ndarray) -> int:
    """The fewest bytes (1, 2, 4 or 8) that hold every item id + 1 of ``flat``."""
    top = int(flat.max(initial=0)) + 1
    return next(b for b in (1, 2, 4, 8) if b == 8 or top < 1 << (8 * b))


def _window_keys(flat: np.ndarray, start: np.ndarray, lengths: np.ndarray, k: int, size: int) -> np.ndarray:
    """For rows starting at ``start`` in ``flat`` with ``lengths``: items k .. k + w - 1 (w = 8 // ``size``; those
    the row has), each id + 1 in ``size`` bytes, big-endian in one uint64, 0 past the row's end. Keys order rows
    as their items at those positions do, a row that ended before one that goes on (no rows x w index)."""
    w = 8 // size
    part = np.clip(lengths - k, 0, w)
    window = np.zeros(start.size * w, dtype=f">u{size}")
    window[spans(np.arange(start.size, dtype=np.int64) * w, part)] = flat[spans(start + k, part)] + 1
    return window.view(">u8").astype(np.uint64)


def _in_canonical_order(rows: ItemsetRows, counts: np.ndarray) -> bool:
    """Whether ``rows`` (items ascending in each) already stand in canonical order: every row at or after the one
    before it as Python orders (tuple, count).

    Neighbours are compared window by window (:func:`_window_keys`): a pair whose keys differ is decided there,
    and only the pairs still equal go on to the next window, while both rows go on; a pair equal to the end of
    both rows is one itemset twice, in order when the counts do not fall. Neighbours in canonical order usually
    part within their first few items, so most of each row is never read."""
    n = len(rows)
    if n < 2:
        return True
    lengths = rows.lengths
    start = rows.offsets[:-1]
    size = _id_bytes(rows.flat)
    w = 8 // size
    pair = np.arange(n - 1, dtype=np.int64)  # pair i: rows i and i + 1, still equal so far
    k = 0
    while pair.size:
        a = _window_keys(rows.flat, start[pair], lengths[pair], k, size)
        b = _window_keys(rows.flat, start[pair + 1], lengths[pair + 1], k, size)
        if (b < a).any():
            return False
        pair = pair[b == a]
        k += w
        ended = np.maximum(lengths[pair], lengths[pair + 1]) <= k  # equal keys: both rows ended, the same itemset
        if (counts[pair[ended] + 1] < counts[pair[ended]]).any():
            return False
        pair = pair[~ended]
    return True


def _sorted_itemsets(itemsets: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Each itemset as an int64 array with its items ascending (:func:`_sorted_rows`)."""
    return list(_sorted_rows(_as_rows(itemsets)))


def _sorted_rows(rows: ItemsetRows) -> ItemsetRows:
    """``rows`` with each itemset's items ascending (the rows already ascending are checked at once)."""
    flat = rows.flat
    if flat.size < 2:
        return rows
    down = np.flatnonzero(flat[1:] <= flat[:-1]) + 1
    inside = down[~np.isin(down, rows.offsets[:-1])]
    if inside.size == 0:
        return rows
    flat = flat.copy()
    for j in np.unique(np.searchsorted(rows.offsets[:-1], inside, side="right") - 1).tolist():
        a, b = int(rows.offsets[j]), int(rows.offsets[j + 1])
        flat[a:b] = np.sort(flat[a:b])
    return ItemsetRows(flat, rows.offsets)


def take_rows(rows: ItemsetRows, order: np.ndarray) -> ItemsetRows:
    """The itemsets of ``rows`` in ``order`` (one gather)."""
    lengths = rows.lengths[order]
    offsets = np.zeros(order.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return ItemsetRows(rows.flat[spans(rows.offsets[:-1][order], lengths)], offsets)


@dataclass(frozen=True, eq=False)
class SetValuedRelease:
    """A sanitized set-valued dataset: ``counts[j]`` copies of ``itemsets[j]`` (item ids).

    The pairs are held in the canonical order of :func:`canonical_itemset_order` (each itemset's
    items ascending), so the writer and :meth:`to_db` never reveal the order an algorithm produced them in.
    """

    kind: ClassVar[str] = "setvalued"

    itemsets: list[np.ndarray] | ItemsetRows  # ItemsetRows: one flat array (releases of about N distinct records)
    counts: np.ndarray
    universe: Universe
    manifest: Manifest = field(default_factory=dict)
    trace: list[Any] = field(default_factory=list, repr=False)  # algorithm trace (tests); never written
    accountant: BudgetAccountant | None = field(default=None, repr=False)  # its ledger, for tests
    # Where each released count carries its own noise (a stream's p-sums: one count per append it took): every
    # pair's noise sd and interval half-width (public scales); None where one scale holds for all (the manifest's).
    pair_sd: np.ndarray | None = field(default=None, repr=False)
    pair_half: np.ndarray | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        counts = np.asarray(self.counts, dtype=np.int64)
        if len(self.itemsets) != counts.size:
            raise ValueError("one count per itemset")
        per_pair = [a for a in (self.pair_sd, self.pair_half) if a is not None]
        if per_pair and (len(per_pair) != 2 or any(np.asarray(a).size != counts.size for a in per_pair)):
            raise ValueError("pair_sd and pair_half go together, one value per itemset")
        if not _CANONICAL_ORDER:
            return
        # one flat array, sorted and ordered without an object per itemset; a list given stays a list
        rows = _sorted_rows(_as_rows(self.itemsets))
        # (already in order, e.g. the fill's records, ordered where they were grouped: no sort, no copy)
        in_order = _in_canonical_order(rows, counts)
        order = np.arange(counts.size) if in_order else _lexicographic_order(rows.flat, rows.lengths, counts)
        taken = rows if in_order else take_rows(rows, order)
        object.__setattr__(self, "itemsets", taken if isinstance(self.itemsets, ItemsetRows) else list(taken))
        object.__setattr__(self, "counts", counts[order])
        if per_pair:
            object.__setattr__(self, "pair_sd", np.asarray(self.pair_sd, dtype=np.float64)[order])
            object.__setattr__(self, "pair_half", np.asarray(self.pair_half, dtype=np.float64)[order])

    @property
    def n_records(self) -> int:
        return int(np.asarray(self.counts, dtype=np.int64).clip(min=0).sum())

    def to_db(self) -> TransactionDB:
        """The released records as a transaction database (``counts[j]`` copies of itemset j)."""
        from ..data.transactions import TransactionDB

        return TransactionDB.from_weighted_itemsets(self.itemsets, self.counts, self.universe.size)

    @property
    def cell_scale(self) -> float | None:
        """The discrete Laplace scale of each released count (at most, where it varies), from the manifest's
        ``uncertainty`` (public); None when the release does not say."""
        section = self.manifest.get("uncertainty")
        scale = section.get("scale") if isinstance(section, dict) else None
        return float(scale) if isinstance(scale, (int, float)) else None

    def intervals(self) -> Intervals | None:
        """Each released (itemset, count) pair's noise sd and 95 % interval, in the release's order (None when
        the noise scale is unknown). Post-processing of the public scale."""
        section = self.manifest.get("uncertainty") or {}
        label = str(section.get("accounts_for", "")) if isinstance(section, dict) else ""
        if self.pair_sd is not None and self.pair_half is not None:
            v = np.asarray(self.counts, dtype=np.float64)
            return Intervals(v, np.asarray(self.pair_sd, dtype=np.float64), np.maximum(v - self.pair_half, 0.0),
                             v + self.pair_half, label=label)
        scale = self.cell_scale
        if scale is None:
            return None
        return count_intervals(np.asarray(self.counts), scale, lower=0.0, label=str(section.get("accounts_for", "")))

    def count(self, itemset: Iterable[int]) -> Estimate:
        """How many released records contain ``itemset`` (item ids), with its interval: see
        :func:`dprelease.release.queries.itemset_count`."""
        from .queries import itemset_count

        return itemset_count(self, itemset)

    def write(self, output: str | os.PathLike[str]) -> Written:
        """The transaction file and its manifest, as one unit; a release whose cells are direct noisy counts
        (Basic) also writes their error bars to a companion CSV (:func:`intervals_path`), listed in the manifest."""
        from ..data.io import write_weighted_itemsets

        def body(handle: IO[Any]) -> None:
            write_weighted_itemsets(handle, self.itemsets, self.counts, self.universe)

        section = self.manifest.get("uncertainty")
        if not (isinstance(section, dict) and section.get("file")):
            return Written(*write_with_manifest(output, body, self.manifest))
        side = intervals_path(output)
        errors = self.intervals()
        labels = self.universe.labels

        def side_body(handle: IO[Any]) -> None:  # post-processing of the public scale
            handle.write("itemset,count,sd,low,high\n")
            if errors is None:
                return
            for j, items in enumerate(self.itemsets):
                handle.write(f"{' '.join(labels[int(i)] for i in items)},{int(self.counts[j])},"
                             f"{float(errors.sd[j]):.3f},{float(errors.low[j]):g},{float(errors.high[j]):g}\n")

        manifest = {**self.manifest, "uncertainty": {**section, "file": side.name}}
        body_path, mpath = write_with_manifest(output, body, manifest, extra=[(side, side_body, "w")])
        return Written(body_path, mpath, (side,))

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
        section = manifest.get("uncertainty")
        if isinstance(section, dict) and section.get("per_value") and section.get("file"):
            sd, half = _read_pair_errors(Path(path).with_name(str(section["file"])), counts)
            return cls(itemsets, counts, universe, manifest, pair_sd=sd, pair_half=half)
        return cls(itemsets, counts, universe, manifest)


def _read_pair_errors(side: Path, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The per-pair sd and half-width from a release's companion CSV (rows in the body's order)."""
    import csv

    from ..errors import InputError

    try:
        with open(side, newline="", encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
    except OSError as exc:
        raise InputError(f"{side}: cannot read the release's error bars ({exc.strerror or exc})") from None
    if len(rows) != counts.size:
        raise InputError(f"{side}: {len(rows)} rows of error bars for {counts.size} released itemsets")
    try:
        sd = np.asarray([float(r["sd"]) for r in rows])
        half = np.asarray([float(r["high"]) - float(r["count"]) for r in rows])
    except (KeyError, TypeError, ValueError):
        raise InputError(f"{side}: not a release's error-bar file (columns itemset,count,sd,low,high)") from None
    return sd, half


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


def intervals_path(output: str | os.PathLike[str]) -> Path:
    """Where a set-valued release's error bars go: OUTPUT.intervals.csv (a companion listed in the manifest)."""
    output = Path(output)
    return output.with_name(output.name + ".intervals.csv")


def write_set_valued_release(release: SetValuedRelease, output: str | os.PathLike[str]) -> tuple[Path, Path]:
    """``release.write(output)`` as a (body, manifest) pair."""
    written = release.write(output)
    return written.body, written.manifest
