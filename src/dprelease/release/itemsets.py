"""A top-k itemset release (PrivBasis, TF): itemsets with noisy counts and frequencies.

The body is a CSV with the header ``itemset,count,frequency``: items of an itemset separated by one space
(universe labels), counts with three decimals, frequencies with eight significant digits. A release that knows
its counts' noise (PrivBasis, TF) adds ``sd,low,high`` after them: each count's noise standard deviation and
its 95 % interval (:mod:`dprelease.privacy.uncertainty`; the manifest's ``uncertainty`` says what they account
for). The writer adds the file's columns and what ``frequency`` means to the manifest's ``release`` facts.
"""

from __future__ import annotations

import csv
import io
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, IO, Any, ClassVar

import numpy as np

from .base import Written, check_kind
from .files import Manifest, read_manifest, write_with_manifest

from ..privacy.uncertainty import LEVEL, Estimate, Intervals

if TYPE_CHECKING:
    from ..data.universe import Universe
    from ..privacy.accountant import BudgetAccountant

__all__ = ["ItemsetRelease", "HEADER", "ERROR_COLUMNS"]

HEADER = ("itemset", "count", "frequency")
ERROR_COLUMNS = ("sd", "low", "high")  # after HEADER, when the release knows its counts' noise
FREQUENCY = "noisy count / noisy N (N from the noisy release itself)"


@dataclass(frozen=True, eq=False)
class ItemsetRelease:
    """A published list of itemsets (item ids) with noisy counts and frequencies, plus its manifest."""

    kind: ClassVar[str] = "itemsets"

    itemsets: list[tuple[int, ...]]
    counts: np.ndarray
    frequencies: np.ndarray
    universe: Universe
    manifest: Manifest = field(default_factory=dict)
    trace: dict[str, object] = field(default_factory=dict, repr=False)  # noisy intermediates (tests); never written
    accountant: BudgetAccountant | None = field(default=None, repr=False)
    errors: Intervals | None = field(default=None, repr=False)  # per-count sd and 95 % interval (public scales)

    @property
    def columns(self) -> tuple[str, ...]:
        return HEADER + (ERROR_COLUMNS if self.errors is not None else ())

    def intervals(self) -> Intervals | None:
        """Each released count's noise sd and 95 % interval (arrays, in row order); None when unknown."""
        return self.errors

    def count(self, itemset: tuple[int, ...] | list[int]) -> Estimate | None:
        """The released count of ``itemset`` (item ids) with its interval, or None when it was not released."""
        key = tuple(sorted(int(i) for i in itemset))
        for j, items in enumerate(self.itemsets):
            if tuple(sorted(items)) == key:
                value = float(self.counts[j])
                if self.errors is None:
                    return Estimate(value, math.nan, math.nan, math.nan, label="no noise scale known")
                e = self.errors
                return Estimate(value, float(e.sd[j]), float(e.low[j]), float(e.high[j]), e.level, e.label)
        return None

    def file_manifest(self) -> Manifest:
        """The manifest as written: the release facts open with the CSV's rows, columns and frequency rule."""
        facts = self.manifest.get("release")
        facts = dict(facts) if isinstance(facts, dict) else {}
        return {**self.manifest, "release": {"rows": facts.pop("rows", len(self.itemsets)),
                                             "columns": list(self.columns), "frequency": FREQUENCY, **facts}}

    def write(self, output: str | os.PathLike[str]) -> Written:
        """The CSV and its manifest, as one unit."""
        labels = self.universe.labels

        errors = self.errors

        def body(handle: IO[Any]) -> None:
            writer = csv.writer(handle, lineterminator="\n")
            writer.writerow(self.columns)
            for j, (items, count, freq) in enumerate(zip(self.itemsets, self.counts.tolist(),
                                                         self.frequencies.tolist())):
                row = [" ".join(labels[i] for i in items), f"{count:.3f}", f"{freq:.8g}"]
                if errors is not None:  # post-processing of public noise scales
                    row += [f"{float(errors.sd[j]):.3f}", f"{float(errors.low[j]):.3f}", f"{float(errors.high[j]):.3f}"]
                writer.writerow(row)

        return Written(*write_with_manifest(output, body, self.file_manifest()))

    @classmethod
    def read(cls, path: str | os.PathLike[str], universe: Universe) -> ItemsetRelease:
        """The published itemsets at ``path`` (checked against the manifest), as item ids of ``universe``.

        The file must not be binary; a UTF-8 byte-order mark is dropped; a bad row is named by its line."""
        manifest = read_manifest(path)
        check_kind(path, manifest, cls.kind)
        itemsets, counts, freqs, extra = read_itemset_csv(path, universe, with_errors=True)
        errors = None
        if extra is not None:
            section = manifest.get("uncertainty")
            section = section if isinstance(section, dict) else {}
            errors = Intervals(counts, extra[:, 0], extra[:, 1], extra[:, 2], float(section.get("level", LEVEL)),
                               str(section.get("accounts_for", "")))
        return cls(itemsets, counts, freqs, universe, manifest, errors=errors)


def read_itemset_csv(path: str | os.PathLike[str], universe: Universe, *, with_errors: bool = False) -> Any:
    """The rows of an itemset CSV: item-id tuples, counts and frequencies (InputError names a bad row's line);
    ``with_errors``: also the ``sd,low,high`` columns as an n x 3 array (None when the file has none)."""
    from ..errors import InputError

    itemsets: list[tuple[int, ...]] = []
    counts: list[float] = []
    freqs: list[float] = []
    extra: list[list[float]] = []
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot read the published itemsets ({exc.strerror})") from None
    if b"\x00" in raw:
        raise InputError(f"{path}: not a text file (it holds NUL bytes); expected the CSV written by privbasis or tf")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise InputError(f"{path}:{line}: not valid UTF-8 text; expected the CSV written by privbasis or tf") from None
    try:
        rows = list(csv.reader(io.StringIO(text, newline="")))
    except csv.Error as exc:
        raise InputError(f"{path}: not a readable CSV ({exc})") from None
    header = tuple(h.strip() for h in rows[0]) if rows else ()
    if header not in (HEADER, HEADER + ERROR_COLUMNS):
        raise InputError(f"{path}:1: expected the header 'itemset,count,frequency' (optionally ',sd,low,high')")
    width = len(header)
    for lineno, row in enumerate(rows[1:], start=2):
        if not row:
            continue
        if len(row) != width:
            raise InputError(f"{path}:{lineno}: expected {width} fields, got {len(row)}")
        tokens = row[0].split()
        ids = universe.ids_of_tokens(tokens) if tokens else np.zeros(0, dtype=np.int64)
        if not tokens or (ids < 0).any():
            raise InputError(f"{path}:{lineno}: itemset {row[0]!r} is empty or not in the universe")
        try:
            counts.append(float(row[1]))
            freqs.append(float(row[2]))
            if width > 3:
                extra.append([float(x) for x in row[3:]])
        except ValueError:
            raise InputError(f"{path}:{lineno}: count, frequency, sd, low and high must be numbers") from None
        itemsets.append(tuple(sorted(int(i) for i in ids.tolist())))
    if not with_errors:
        return itemsets, np.asarray(counts), np.asarray(freqs)
    errors = np.asarray(extra, dtype=np.float64).reshape(-1, 3) if width > 3 else None
    return itemsets, np.asarray(counts), np.asarray(freqs), errors
