"""A top-k itemset release (PrivBasis, TF): itemsets with noisy counts and frequencies.

The body is a CSV with the header ``itemset,count,frequency``: items of an itemset separated by one space
(universe labels), counts with three decimals, frequencies with eight significant digits. The writer adds the
file's columns and what ``frequency`` means to the manifest's ``release`` facts.
"""

from __future__ import annotations

import csv
import io
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, IO, Any, ClassVar

import numpy as np

from .base import Written, check_kind
from .files import Manifest, read_manifest, write_with_manifest

if TYPE_CHECKING:
    from ..data.universe import Universe
    from ..privacy.accountant import BudgetAccountant

__all__ = ["ItemsetRelease", "HEADER"]

HEADER = ("itemset", "count", "frequency")
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

    def file_manifest(self) -> Manifest:
        """The manifest as written: the release facts open with the CSV's rows, columns and frequency rule."""
        facts = self.manifest.get("release")
        facts = dict(facts) if isinstance(facts, dict) else {}
        return {**self.manifest, "release": {"rows": facts.pop("rows", len(self.itemsets)), "columns": list(HEADER),
                                             "frequency": FREQUENCY, **facts}}

    def write(self, output: str | os.PathLike[str]) -> Written:
        """The CSV and its manifest, as one unit."""
        labels = self.universe.labels

        def body(handle: IO[Any]) -> None:
            writer = csv.writer(handle, lineterminator="\n")
            writer.writerow(HEADER)
            for items, count, freq in zip(self.itemsets, self.counts.tolist(), self.frequencies.tolist()):
                writer.writerow((" ".join(labels[i] for i in items), f"{count:.3f}", f"{freq:.8g}"))

        return Written(*write_with_manifest(output, body, self.file_manifest()))

    @classmethod
    def read(cls, path: str | os.PathLike[str], universe: Universe) -> ItemsetRelease:
        """The published itemsets at ``path`` (checked against the manifest), as item ids of ``universe``.

        The file must not be binary; a UTF-8 byte-order mark is dropped; a bad row is named by its line."""
        manifest = read_manifest(path)
        check_kind(path, manifest, cls.kind)
        itemsets, counts, freqs = read_itemset_csv(path, universe)
        return cls(itemsets, counts, freqs, universe, manifest)


def read_itemset_csv(path: str | os.PathLike[str], universe: Universe
                     ) -> tuple[list[tuple[int, ...]], np.ndarray, np.ndarray]:
    """The rows of an itemset CSV: item-id tuples, counts and frequencies (InputError names a bad row's line)."""
    from ..errors import InputError

    itemsets: list[tuple[int, ...]] = []
    counts: list[float] = []
    freqs: list[float] = []
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
    if not rows or tuple(h.strip() for h in rows[0]) != HEADER:
        raise InputError(f"{path}:1: expected the header 'itemset,count,frequency'")
    for lineno, row in enumerate(rows[1:], start=2):
        if not row:
            continue
        if len(row) != 3:
            raise InputError(f"{path}:{lineno}: expected 3 fields, got {len(row)}")
        tokens = row[0].split()
        ids = universe.ids_of_tokens(tokens) if tokens else np.zeros(0, dtype=np.int64)
        if not tokens or (ids < 0).any():
            raise InputError(f"{path}:{lineno}: itemset {row[0]!r} is empty or not in the universe")
        try:
            counts.append(float(row[1]))
            freqs.append(float(row[2]))
        except ValueError:
            raise InputError(f"{path}:{lineno}: count and frequency must be numbers") from None
        itemsets.append(tuple(sorted(int(i) for i in ids.tolist())))
    return itemsets, np.asarray(counts), np.asarray(freqs)
