"""The whole-file transaction reader as it was before the chunked one (d760c56), kept as the reference
that tests compare :func:`dprelease.data.io.read_transactions` against (tests/data/test_fimi.py)."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import numpy as np

from dprelease.data.transactions import TransactionDB
from dprelease.data.universe import Universe
from dprelease.errors import InputError

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


def reference_read_transactions(path: str | os.PathLike, universe: Universe | None) -> tuple[TransactionDB, Universe]:
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
