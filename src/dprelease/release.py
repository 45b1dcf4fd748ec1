"""Release objects and their manifests, written atomically.

A manifest holds only public facts: the algorithm, package version, epsilon,
every parameter, the RNG mode (and seed, in experiment mode), where the domain
came from, and facts of the *released* (noisy) data. Nothing computed from the
raw data goes in un-noised: no hash, no statistic, no run time.
"""

from __future__ import annotations

import datetime as _dt
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import __version__
from .data.io import atomic_output, write_json_atomic, write_weighted_itemsets
from .data.transactions import TransactionDB
from .data.universe import Universe
from .privacy.accountant import BudgetAccountant
from .privacy.noise import NoiseSource

__all__ = ["SetValuedRelease", "canonical_itemset_order", "build_manifest", "manifest_path", "write_set_valued_release", "write_with_manifest"]

# Private switch (tests and the audit's "broken fixture" only; never set it in a release path): True sorts every
# SetValuedRelease canonically (see SetValuedRelease); False restores the order the algorithm produced, which leaks
# which cells were real and which test-and-generated (issue 8, defect 1). IncTDPart's node ids follow it too.
_CANONICAL_ORDER = True

SEEDED_WARNING = "seeded experiment mode: reproducible, NOT for publication (noise is not hardened against floating-point attacks)"


def manifest_path(output: str | os.PathLike) -> Path:
    output = Path(output)
    return output.with_name(output.name + ".manifest.json")


def build_manifest(
    algorithm: str,
    *,
    epsilon: float,
    parameters: dict[str, object],
    noise: NoiseSource,
    accountant: BudgetAccountant | None,
    domain: dict[str, object] | None,
    release: dict[str, object],
    budget_split: dict[str, object] | None = None,
    notes: list[str] | None = None,
) -> dict[str, object]:
    rng = noise.describe()
    if noise.mode != "secure":
        rng["warning"] = SEEDED_WARNING
    manifest: dict[str, object] = {
        "algorithm": algorithm,
        "package": "dprelease",
        "version": __version__,
        "created_utc": _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat(),
        "epsilon": epsilon,
        "parameters": parameters,
        "rng": rng,
        "domain": domain,
        "privacy": accountant.summary() if accountant is not None else None,
        "budget_split": budget_split or {},
        "release": release,
    }
    if notes:
        manifest["notes"] = notes
    return manifest


def write_with_manifest(output: str | os.PathLike, write_body, manifest: dict[str, object], mode: str = "w") -> tuple[Path, Path]:
    """Write the release body (``write_body(handle)``) and then its manifest, each atomically."""
    output = Path(output)
    with atomic_output(output, mode) as handle:
        write_body(handle)
    mpath = manifest_path(output)
    write_json_atomic(mpath, manifest)
    return output, mpath


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

    itemsets: list[np.ndarray]
    counts: np.ndarray
    universe: Universe
    manifest: dict[str, object] = field(default_factory=dict)
    trace: list = field(default_factory=list, repr=False)  # algorithm trace (tests); never written
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
        return TransactionDB.from_weighted_itemsets(self.itemsets, self.counts, self.universe.size)


def write_set_valued_release(release: SetValuedRelease, output: str | os.PathLike) -> tuple[Path, Path]:
    return write_with_manifest(
        output, lambda fh: write_weighted_itemsets(fh, release.itemsets, release.counts, release.universe), release.manifest
    )
