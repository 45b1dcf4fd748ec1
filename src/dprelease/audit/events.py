"""Helpers that turn a release into event names (strings) for :class:`~dprelease.audit.AuditCase`.

An event is anything a reader of the release can check: the whole release as written (contents and
order), whether an itemset appears, its count, where it stands relative to another, a count above a
threshold, the chosen split. Cases combine these helpers; names only need to be stable and distinct.
"""

from __future__ import annotations

import json
import math
from typing import Iterable, Sequence

import numpy as np

__all__ = ["itemset_label", "set_valued_events", "written_release_events", "ranked_events", "value_events",
           "manifest_events", "VOLATILE_MANIFEST_KEYS"]

# Manifest keys that differ from run to run whatever the data (clock, per-run seed, body digest): left out.
VOLATILE_MANIFEST_KEYS = frozenset({"created_utc", "started_utc", "rng", "release_id", "body_sha256", "sha256",
                                    "run_started_utc", "date"})


def itemset_label(itemset: Iterable[int]) -> str:
    """``{0,3,7}`` for the item ids of an itemset (sorted)."""
    return "{" + ",".join(str(int(i)) for i in sorted(int(x) for x in itemset)) + "}"


def _order_events(labels: Sequence[str], max_order: int) -> list[str]:
    if len(labels) > max_order:
        return []
    return [f"{labels[i]} before {labels[j]}" for i in range(len(labels)) for j in range(i + 1, len(labels))]


def set_valued_events(itemsets: Sequence[Iterable[int]], counts: Sequence[int] | np.ndarray, *,
                      grid: Iterable[int] = (), max_order: int = 40, prefix: str = "") -> list[str]:
    """Events of a weighted set-valued release, in the order it is stored and written.

    The whole release as one string (contents and order), the number of distinct records and the total,
    ``has X`` and ``X=c`` for every itemset, ``X>=g`` for every threshold g in ``grid`` it reaches, and
    ``X before Y`` for every ordered pair (when at most ``max_order`` itemsets are released).
    """
    labels = [itemset_label(s) for s in itemsets]
    values = [int(c) for c in np.asarray(counts).tolist()]
    grid = sorted(set(int(g) for g in grid))
    total = sum(max(0, c) for c in values)
    out = [prefix + "release " + ";".join(f"{lab}:{c}" for lab, c in zip(labels, values)),
           f"{prefix}distinct={len(labels)}", f"{prefix}total={total}"]
    out += [f"{prefix}total>={g}" for g in grid if total >= g]
    for lab, c in zip(labels, values):
        out.append(f"{prefix}has {lab}")
        out.append(f"{prefix}{lab}={c}")
        out += [f"{prefix}{lab}>={g}" for g in grid if c >= g]
    out += [prefix + e for e in _order_events(labels, max_order)]
    return out


def written_release_events(text: str, *, grid: Iterable[int] = (), max_order: int = 40, prefix: str = "") -> list[str]:
    """:func:`set_valued_events` of a release *file* body (one record per line, copies adjacent), as written.

    Runs of identical lines are one itemset with its count; items keep their written labels.
    """
    labels: list[tuple[str, ...]] = []
    counts: list[int] = []
    for line in text.splitlines():
        key = tuple(line.split())
        if labels and labels[-1] == key:
            counts[-1] += 1
        else:
            labels.append(key)
            counts.append(1)
    names = ["{" + ",".join(k) + "}" for k in labels]
    grid = sorted(set(int(g) for g in grid))
    total = sum(counts)
    out = [prefix + "file " + ";".join(f"{n}:{c}" for n, c in zip(names, counts)),
           f"{prefix}distinct={len(names)}", f"{prefix}total={total}"]
    out += [f"{prefix}total>={g}" for g in grid if total >= g]
    for n, c in zip(names, counts):
        out.append(f"{prefix}has {n}")
        out.append(f"{prefix}{n}={c}")
        out += [f"{prefix}{n}>={g}" for g in grid if c >= g]
    out += [prefix + e for e in _order_events(names, max_order)]
    return out


def ranked_events(labels: Sequence[str], *, prefix: str = "", max_order: int = 40) -> list[str]:
    """Events of a ranked list (top-k itemsets, chosen candidates): the list, membership, ranks and pair order."""
    out = [prefix + "list " + ";".join(labels), f"{prefix}size={len(labels)}"]
    for r, lab in enumerate(labels):
        out.append(f"{prefix}has {lab}")
        out.append(f"{prefix}rank {r} = {lab}")
    out += [prefix + e for e in _order_events(list(labels), max_order)]
    return out


def value_events(name: str, value: float, grid: Iterable[float], *, prefix: str = "") -> list[str]:
    """Events of one released real value: ``name>=g`` for each threshold reached, and its grid cell."""
    grid = sorted(set(float(g) for g in grid))
    v = float(value)
    if math.isnan(v):
        return [f"{prefix}{name} is nan"]
    out = [f"{prefix}{name}>={g:g}" for g in grid if v >= g]
    pos = int(np.searchsorted(np.asarray(grid), v, side="right"))
    lo = f"{grid[pos - 1]:g}" if pos > 0 else "-inf"
    hi = f"{grid[pos]:g}" if pos < len(grid) else "inf"
    out.append(f"{prefix}{name} in [{lo},{hi})")
    return out


def _strip(obj: object) -> object:
    if isinstance(obj, dict):
        return {k: _strip(v) for k, v in obj.items() if k not in VOLATILE_MANIFEST_KEYS}
    if isinstance(obj, list):
        return [_strip(v) for v in obj]
    return obj


def manifest_events(manifest: dict[str, object], *, prefix: str = "") -> list[str]:
    """The manifest without its clock/seed/digest fields, as one event."""
    return [prefix + "manifest " + json.dumps(_strip(manifest), sort_keys=True, default=str)]
