"""Release objects and their manifests; a release body and its manifest are written and read as one unit.

A manifest holds only public facts: the algorithm, package version, epsilon,
every parameter, the RNG mode (and seed, in experiment mode), where the domain
came from, facts of the *released* (noisy) data, and the sha256 of the released
body (the body is public, so its hash is too). Nothing computed from the raw data
goes in un-noised: no hash of the input, no statistic, no run time. ``created_utc``
is the time the run *started* (to the second), so it carries no run time either.

Writing (:func:`write_with_manifest`): the body goes to a temp file, its sha256
goes into the manifest, the manifest goes to a temp file, then the manifest is
renamed into place and then the body. A run killed between the two renames leaves
a new manifest beside an old body: :func:`read_manifest` (used by every command
that reads a release) sees the hashes differ and refuses the pair, naming both
files. Temp files left by killed runs are removed by the next run on the same
output (see :func:`dprelease.data.io.remove_stale_temps`).
"""

from __future__ import annotations

import datetime as _dt
import functools
import json
import math
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TypeVar

import numpy as np

from . import __version__
from .data.io import StagedFile, file_sha256, write_weighted_itemsets
from .data.transactions import TransactionDB
from .data.universe import Universe
from .errors import InputError
from .privacy.accountant import BudgetAccountant
from .privacy.noise import NoiseSource

__all__ = [
    "SetValuedRelease", "canonical_itemset_order", "build_manifest", "manifest_path", "write_set_valued_release",
    "write_with_manifest", "read_manifest", "run_started", "records_run_start", "run_start", "EPSILON_WARN_ABOVE",
    "epsilon_notes", "release_size_note", "PRIVACY_UNITS", "NEIGHBOURS_LINE", "NEIGHBOURS_ROW",
]

# Private switch (tests and the audit's "broken fixture" only; never set it in a release path): True sorts every
# SetValuedRelease canonically (see SetValuedRelease); False restores the order the algorithm produced, which leaks
# which cells were real and which test-and-generated (issue 8, defect 1). IncTDPart's node ids follow it too.
_CANONICAL_ORDER = True

SEEDED_WARNING = "seeded experiment mode: reproducible, NOT for publication (noise is not hardened against floating-point attacks)"

# Above this total epsilon a release is barely private (at 1e308 DiffPart's release is the raw data,
# sorted): allowed, but said on stderr by the CLI and in the manifest's notes.
EPSILON_WARN_ABOVE = 100.0

_RUN_START: ContextVar[_dt.datetime | None] = ContextVar("dprelease_run_start", default=None)

F = TypeVar("F", bound=Callable[..., object])


def _now() -> _dt.datetime:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0)


def run_start() -> _dt.datetime:
    """When the current run started (set by :func:`run_started`); now, outside any run."""
    return _RUN_START.get() or _now()


@contextmanager
def run_started(at: _dt.datetime | None = None) -> Iterator[_dt.datetime]:
    """Mark the start of a run (the CLI at command start, an algorithm at entry); an outer mark wins."""
    current = _RUN_START.get()
    if current is not None:
        yield current
        return
    token = _RUN_START.set(at or _now())
    try:
        yield _RUN_START.get()  # type: ignore[misc]
    finally:
        _RUN_START.reset(token)


def records_run_start(fn: F) -> F:
    """Decorator for an algorithm's entry point: its manifest's ``created_utc`` is the call's start."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with run_started():
            return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def manifest_path(output: str | os.PathLike) -> Path:
    output = Path(output)
    return output.with_name(output.name + ".manifest.json")


def epsilon_notes(epsilon: float | None) -> list[str]:
    """The warning for a total epsilon above the sane range (empty list otherwise)."""
    if epsilon is None or not (epsilon > EPSILON_WARN_ABOVE):
        return []
    return [f"epsilon = {epsilon:g} is above {EPSILON_WARN_ABOVE:g}: the noise is negligible and the release is "
            f"close to the raw data; it is differentially private only in name"]


def release_size_note(what: str, size: int, unit: str, requested: int | None = None) -> str | None:
    """The note for an empty or short release (its size is public: it is the release itself), or None."""
    if size == 0:
        return f"{what} released no {unit} (no noisy count passed its threshold): the release is empty"
    if requested is not None and size < requested:
        return f"{what} released {size:,} {unit}, fewer than the {requested:,} requested"
    return None


def _describe_noise(noise: NoiseSource | Sequence[NoiseSource] | None) -> dict[str, object]:
    if noise is None:
        return {"mode": "none", "seed": None, "note": "no randomness: the algorithm is deterministic"}
    if isinstance(noise, Sequence):
        sources = [dict(n.describe()) for n in noise]
        modes = sorted({str(s.get("mode")) for s in sources})
        rng: dict[str, object] = {"mode": modes[0] if len(modes) == 1 else "mixed", "seed": None,
                                  "sources": sources}
        if any(m != "secure" for m in modes):
            rng["warning"] = SEEDED_WARNING
        return rng
    rng = dict(noise.describe())
    if noise.mode != "secure":
        rng["warning"] = SEEDED_WARNING
    return rng


# What one neighbouring step changes in what a command reads: the top-level ``privacy_unit`` of a manifest
# (a short token; the ledger and the report read it) and ``privacy.neighbours`` (the same in words). The
# epsilon-DP claim holds for inputs that differ in one such unit, so a custodian whose people span several
# units (two lines of one basket file, one patient in two rows) must merge them before the release.
PRIVACY_UNITS = ("record", "node", "person")
NEIGHBOURS_LINE = ("one record: one line of the transaction file (or one row of a Parquet list column) added or "
                   "removed, every other line unchanged")
NEIGHBOURS_ROW = "one record: one row of the table added or removed, every other row unchanged"


def build_manifest(
    algorithm: str,
    *,
    epsilon: float | None,
    parameters: dict[str, object],
    noise: NoiseSource | Sequence[NoiseSource] | None,
    accountant: BudgetAccountant | None,
    domain: dict[str, object] | None,
    release: dict[str, object],
    budget_split: dict[str, object] | None = None,
    notes: list[str] | None = None,
    privacy: dict[str, object] | None = None,
    privacy_unit: str | None = None,
    neighbours: str | None = None,
) -> dict[str, object]:
    """The manifest of a release: public facts only (see the module docstring).

    ``privacy_unit`` (one of :data:`PRIVACY_UNITS`) and ``neighbours`` (in words) state what neighbouring
    inputs differ in; a non-DP release (TDS, Mondrian) states neither.

    ``noise`` may be a list (one source per part, e.g. Solution 1's per-batch runs: each is listed)
    or None (a deterministic, non-DP algorithm such as TDS); ``privacy`` overrides the accountant's
    summary (TDS: k-anonymity). A total epsilon above :data:`EPSILON_WARN_ABOVE` adds a note.
    """
    manifest: dict[str, object] = {
        "algorithm": algorithm,
        "package": "dprelease",
        "version": __version__,
        "created_utc": run_start().isoformat(),
        "epsilon": epsilon,
        "parameters": parameters,
        "rng": _describe_noise(noise),
        "domain": domain,
        "privacy": privacy if privacy is not None else (accountant.summary() if accountant is not None else None),
        "budget_split": budget_split or {},
        "release": release,
    }
    if privacy_unit is not None:
        if privacy_unit not in PRIVACY_UNITS:
            raise ValueError(f"privacy_unit must be one of {PRIVACY_UNITS}, got {privacy_unit!r}")
        manifest["privacy_unit"] = privacy_unit
        if isinstance(manifest["privacy"], dict) and neighbours:
            manifest["privacy"] = {**manifest["privacy"], "neighbours": neighbours}
    all_notes = list(notes or []) + [n for n in epsilon_notes(epsilon) if n not in (notes or [])]
    if all_notes:
        manifest["notes"] = all_notes
    return manifest


def _strict_json(manifest: dict[str, object]) -> str:
    try:
        return json.dumps(manifest, indent=2, sort_keys=False, allow_nan=False) + "\n"
    except ValueError:
        bad = [k for k, v in _walk(manifest) if isinstance(v, float) and not math.isfinite(v)]
        raise ValueError(f"manifest holds a non-finite number at {bad}: a parameter escaped validation") from None


def _walk(obj: object, prefix: str = "") -> Iterator[tuple[str, object]]:
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _walk(v, f"{prefix}.{k}" if prefix else str(k))
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            yield from _walk(v, f"{prefix}[{i}]")
    else:
        yield prefix, obj


def write_with_manifest(
    output: str | os.PathLike,
    write_body: Callable[[IO], None],
    manifest: dict[str, object],
    mode: str = "w",
    *,
    extra: Sequence[tuple[str | os.PathLike, Callable[[IO], None], str]] = (),
) -> tuple[Path, Path]:
    """Write the body (``write_body(handle)``) and its manifest as one unit; returns (body, manifest) paths.

    The manifest records the body's file name and sha256 (``body``, ``body_sha256``) and those of
    any ``extra`` files (``(path, write, mode)``, e.g. DiffGen's record form) under ``other_files``.
    Order: every file to a temp file; manifest renamed into place; then the bodies. A crash leaves
    either the old pair, or a new manifest whose hashes the old bodies do not match (refused by
    :func:`read_manifest`). Nothing is renamed if any write fails.
    """
    output = Path(output)
    mpath = manifest_path(output)
    staged: list[StagedFile] = []
    try:
        body = StagedFile(output, mode)
        staged.append(body)
        write_body(body.handle)
        others: dict[str, str] = {}
        for path, writer, xmode in extra:
            sf = StagedFile(path, xmode)
            staged.append(sf)
            writer(sf.handle)
            others[Path(path).name] = sf.sha256()
        full = dict(manifest)
        full["body"] = output.name
        full["body_sha256"] = body.sha256()
        if others:
            full["other_files"] = others
        text = _strict_json(full)
        man = StagedFile(mpath, "w")
        staged.append(man)
        man.handle.write(text)
        man.commit()  # manifest first ...
        for sf in staged:
            if sf is not man:
                sf.commit()  # ... then the bodies
    except BaseException:
        for sf in staged:
            sf.discard()
        raise
    return output, mpath


def read_manifest(output: str | os.PathLike, *, verify: bool = True) -> dict[str, object]:
    """The manifest of the release at ``output``, after checking that the pair belongs together.

    Raises :class:`InputError` naming both files when the manifest is missing or unreadable,
    or when the body's sha256 (or another listed file's) differs from the one the manifest records.
    """
    output = Path(output)
    mpath = manifest_path(output)
    try:
        text = mpath.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise InputError(f"{output}: no manifest {mpath} beside it; a release is read together with the "
                         f"manifest dprelease wrote for it") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{mpath}: cannot read the manifest of {output} ({exc})") from None
    try:
        manifest = json.loads(text)
    except ValueError as exc:
        raise InputError(f"{mpath}: not a dprelease manifest (not JSON: {exc})") from None
    if not isinstance(manifest, dict) or manifest.get("package") != "dprelease":
        raise InputError(f"{mpath}: not a dprelease manifest")
    if not verify:
        return manifest
    expected = manifest.get("body_sha256")
    if not isinstance(expected, str):
        raise InputError(f"{mpath} records no body_sha256 (written by an older dprelease?), so it cannot be "
                         f"checked against {output}; re-run the release")
    if manifest.get("body") not in (None, output.name):
        raise InputError(f"{mpath} is the manifest of {manifest.get('body')!r}, not of {output}")
    files = [(output, expected)] + [(output.with_name(name), sha) for name, sha in
                                    dict(manifest.get("other_files") or {}).items()]
    for path, sha in files:
        try:
            actual = file_sha256(path)
        except OSError as exc:
            raise InputError(f"{path}: cannot read the release listed in {mpath} ({exc.strerror or exc})") from None
        if actual != sha:
            raise InputError(f"{path} does not match its manifest {mpath} (sha256 differs): they come from "
                             f"different runs (e.g. a run killed while writing); re-run the release")
    return manifest


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
