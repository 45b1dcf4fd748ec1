"""The manifest of a release: public facts only, assembled once, by the algorithm that makes the release.

A manifest holds only public facts: the algorithm, package version, epsilon, every parameter, the RNG mode (and
seed, in experiment mode), where the domain came from, facts of the *released* (noisy) data, and, once written,
the sha256 of the released body (the body is public, so its hash is too; :mod:`.files`). Nothing computed from
the raw data goes in un-noised: no hash of the input, no statistic, no run time. ``created_utc`` is the time the
run *started* (to the second), so it carries no run time either.
"""

from __future__ import annotations

import datetime as _dt
import functools
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, TypeVar

from .. import __version__

if TYPE_CHECKING:
    from ..privacy.accountant import BudgetAccountant
    from ..privacy.noise import NoiseSource

__all__ = [
    "build_manifest", "run_started", "records_run_start", "run_start", "EPSILON_WARN_ABOVE", "epsilon_notes",
    "release_size_note", "add_notes", "PRIVACY_UNITS", "NEIGHBOURS_LINE", "NEIGHBOURS_ROW", "SEEDED_WARNING",
]

SEEDED_WARNING = "seeded experiment mode: reproducible, NOT for publication (noise is not hardened against floating-point attacks)"

# Above this total epsilon a release is barely private (at 1e308 DiffPart's release is the raw data,
# sorted): allowed, but said on stderr by the CLI and in the manifest's notes.
EPSILON_WARN_ABOVE = 100.0

_RUN_START: ContextVar[_dt.datetime | None] = ContextVar("dprelease_run_start", default=None)

F = TypeVar("F", bound=Callable[..., Any])


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
        yield _RUN_START.get() or _now()
    finally:
        _RUN_START.reset(token)


def records_run_start(fn: F) -> F:
    """Decorator for an algorithm's entry point: its manifest's ``created_utc`` is the call's start."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with run_started():
            return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


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


def add_notes(manifest: dict[str, Any], notes: Iterable[str]) -> None:
    """Append notes (public: warnings about parameters, sizes) to a manifest's ``notes``, once each, after the
    notes it holds (so the order is the order in which they were found)."""
    notes = list(notes)
    if not notes:
        return
    have = manifest.setdefault("notes", [])
    if have is None:
        have = manifest["notes"] = []
    for note in notes:
        if note not in have:
            have.append(note)
