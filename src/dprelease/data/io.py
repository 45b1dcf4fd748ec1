"""Readers and writers for FIMI/SPMF-style transaction files, and atomic file output.

Format: one transaction per line, items separated by white space. Blank lines
and lines whose first non-blank character is ``#`` are skipped. An item repeated
within a line counts once. Lines may end in a trailing space (FIMI does).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import numpy as np

from .fimi import read_fimi
from .transactions import TransactionDB
from .universe import Universe

__all__ = [
    "read_transactions",
    "write_transactions",
    "write_weighted_itemsets",
    "atomic_output",
    "write_json_atomic",
]


def read_transactions(path: str | os.PathLike, universe: Universe | None) -> tuple[TransactionDB, Universe]:
    """Read a transaction file; map items to ids of ``universe`` (derived, with a warning, if None).

    Raises :class:`InputError` naming the file and line of the first item outside a
    declared universe, and for a file with no transaction. The file is read in blocks
    (``.gz`` streamed) and parsed with numpy: the peak memory is the CSR arrays plus one
    block's temporaries (:mod:`dprelease.data.fimi`).
    """
    return read_fimi(path, universe)


@contextmanager
def atomic_output(path: str | os.PathLike, mode: str = "w") -> Iterator[IO]:
    """Write to a temporary file beside ``path``; rename over it only if the block succeeds."""
    path = Path(path)
    if path.parent and not path.parent.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent or ".")
    try:
        with os.fdopen(fd, mode, **({} if "b" in mode else {"encoding": "utf-8", "newline": "\n"})) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def write_json_atomic(path: str | os.PathLike, obj: object) -> None:
    with atomic_output(path) as fh:
        json.dump(obj, fh, indent=2, sort_keys=False)
        fh.write("\n")


def _labels_array(universe: Universe) -> list[str]:
    return list(universe.labels)


def write_weighted_itemsets(handle: IO[str], itemsets: list[np.ndarray], counts: np.ndarray, universe: Universe) -> None:
    """Write ``counts[j]`` lines holding itemset j (item labels separated by one space)."""
    labels = _labels_array(universe)
    for items, count in zip(itemsets, np.asarray(counts).tolist()):
        if count <= 0:
            continue
        line = " ".join(labels[i] for i in np.asarray(items).tolist()) + "\n"
        handle.write(line * int(count))


def write_transactions(handle: IO[str], db: TransactionDB, universe: Universe) -> None:
    labels = _labels_array(universe)
    items = db.items.tolist()
    offsets = db.offsets.tolist()
    chunk: list[str] = []
    for r in range(db.n_records):
        chunk.append(" ".join(labels[i] for i in items[offsets[r] : offsets[r + 1]]))
        if len(chunk) >= 65536:
            handle.write("\n".join(chunk) + "\n")
            chunk = []
    if chunk:
        handle.write("\n".join(chunk) + "\n")
