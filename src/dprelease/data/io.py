"""Readers and writers for FIMI/SPMF-style transaction files, and atomic file output.

Format: one transaction per line, items separated by white space. Blank lines
and lines whose first non-blank character is ``#`` are skipped. An item repeated
within a line counts once. Lines may end in a trailing space (FIMI does).
"""

from __future__ import annotations

import gzip
import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import numpy as np

from ..errors import InputError
from .transactions import TransactionDB
from .universe import Universe

__all__ = [
    "read_transactions",
    "write_transactions",
    "write_weighted_itemsets",
    "atomic_output",
    "write_json_atomic",
]

_ALLOWED = np.zeros(256, dtype=bool)
_ALLOWED[[9, 10, 13, 32]] = True
_ALLOWED[48:58] = True
_POW10 = 10 ** np.arange(19, dtype=np.int64)


def _read_bytes(path: Path) -> bytes:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return raw


def _strip_comments(raw: bytes) -> bytes:
    # Keep line count (so line numbers stay right): blank out comment lines.
    lines = raw.split(b"\n")
    return b"\n".join(b"" if ln.lstrip().startswith(b"#") else ln for ln in lines)


def _parse_integer_tokens(raw: bytes) -> tuple[np.ndarray, np.ndarray] | None:
    """Vectorised parse of a file made only of digits and white space.

    Returns (values, line index of each token), or None when the file needs the
    general path (other characters, or a number too long for int64).
    """
    a = np.frombuffer(raw, dtype=np.uint8)
    if a.size == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    if not _ALLOWED[a].all():
        return None
    isdig = (a >= 48) & (a <= 57)
    edge = np.diff(isdig.view(np.int8), prepend=np.int8(0), append=np.int8(0))
    starts = np.flatnonzero(edge == 1)
    if starts.size == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    lens = np.flatnonzero(edge == -1) - starts
    del edge, isdig
    longest = int(lens.max())
    if longest > 18:
        return None
    # numpy's C text parser reads every white-space separated number; the byte scan above
    # tells which line each one is on. If the counts disagree, parse by Horner's rule.
    values = np.fromstring(raw, dtype=np.int64, sep=" ")
    if values.size != starts.size:
        values = _horner(a, starts, lens, longest)
    newlines = np.flatnonzero(a == 10)
    line_of_token = np.searchsorted(newlines, starts)
    return values, line_of_token


def _horner(a: np.ndarray, starts: np.ndarray, lens: np.ndarray, longest: int) -> np.ndarray:
    values = np.zeros(starts.size, dtype=np.int64)
    for place in range(longest):
        live = lens > place
        digit = a[np.minimum(starts + place, a.size - 1)].astype(np.int64) - 48
        values = np.where(live, values * 10 + digit, values)
    return values


def _error_line(path: Path, line_index: int, message: str) -> InputError:
    return InputError(f"{path}:{line_index + 1}: {message}")


def read_transactions(path: str | os.PathLike, universe: Universe | None) -> tuple[TransactionDB, Universe]:
    """Read a transaction file; map items to ids of ``universe`` (derived, with a warning, if None).

    Raises :class:`InputError` naming the file and line of the first item outside a
    declared universe, and for a file with no transaction.
    """
    path = Path(path)
    raw = _read_bytes(path)
    if b"#" in raw:
        raw = _strip_comments(raw)
    parsed = _parse_integer_tokens(raw)
    if parsed is not None:
        values, line_of_token = parsed
        if values.size == 0:
            raise InputError(f"{path}: no transactions (the file is empty or has only comments/blank lines)")
        if universe is None:
            universe = Universe.derived_from_values(values)
        ids = universe.ids_of_ints(values)
        bad = np.flatnonzero(ids < 0)
        if bad.size:
            j = int(bad[0])
            raise _error_line(path, int(line_of_token[j]),
                              f"item {int(values[j])} is not in the declared universe ({universe.spec})")
    else:
        tokens, lines = _general_tokens(raw, path)
        if not tokens:
            raise InputError(f"{path}: no transactions (the file is empty or has only comments/blank lines)")
        if universe is None:
            universe = Universe.derived_from_tokens(tokens)
        ids = universe.ids_of_tokens(tokens)
        bad = np.flatnonzero(ids < 0)
        if bad.size:
            j = int(bad[0])
            raise _error_line(path, int(lines[j]), f"item {tokens[j]!r} is not in the declared universe ({universe.spec})")
        line_of_token = np.asarray(lines, dtype=np.int64)
    # Records are the non-blank lines, in file order (line_of_token never decreases).
    new_line = np.empty(line_of_token.size, dtype=bool)
    new_line[0] = True
    np.not_equal(line_of_token[1:], line_of_token[:-1], out=new_line[1:])
    rows = np.cumsum(new_line, dtype=np.int64) - 1
    n_rows = int(rows[-1]) + 1
    db = TransactionDB.from_pairs(rows, ids, n_rows, universe.size)
    return db, universe


def _general_tokens(raw: bytes, path: Path) -> tuple[list[str], list[int]]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n")
        raise InputError(f"{path}:{line + 1}: not valid UTF-8 text") from None
    tokens: list[str] = []
    lines: list[int] = []
    for index, line in enumerate(text.split("\n")):
        parts = line.split()
        if parts:
            tokens.extend(parts)
            lines.extend([index] * len(parts))
    return tokens, lines


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
