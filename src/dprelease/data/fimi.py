"""Chunked, vectorised reading of FIMI/SPMF-style transaction files into CSR arrays.

The file is read in blocks (``CHUNK_BYTES``, cut at the last line break; ``.gz`` is decompressed as a
stream), each block is parsed with a few numpy passes over its bytes, mapped to item ids and appended to
a :class:`~dprelease.data.transactions.CSRBuilder`. Nothing is held per line or per token as a Python
object on the integer path, and no copy of the whole file exists at any time: the peak is the final CSR
arrays plus one block's temporaries (docs/scale.md has the measurements).

Format rules (the same as :func:`dprelease.data.io.read_transactions` always had): one transaction per
line, items separated by white space (a trailing space is fine, CRLF too); blank lines and lines whose
first non-blank character is ``#`` are skipped; an item repeated within a line counts once.

A block made only of digits and white space takes the integer path: token boundaries from a byte scan,
values by SWAR (eight ASCII digits decoded with three multiplications), line of each token by a search
over the line breaks. Any other byte (letters, signs, UTF-8) sends that block to the general path, which
splits decoded text like ``str.split()``; a universe with non-integer labels always uses the general path
(labels are matched exactly). :func:`iter_transaction_chunks` yields the parsed blocks as CSR chunks, so a
later engine can consume them without materialising the whole database.
"""

from __future__ import annotations

import gzip
import os
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np

from ..errors import InputError
from .transactions import CSRBuilder, TransactionDB, canonical_records
from .universe import Universe, require_universe

__all__ = ["CHUNK_BYTES", "TransactionChunk", "iter_transaction_chunks", "read_fimi", "format_int_records",
           "check_not_a_table", "TABLE_HINT"]

CHUNK_BYTES = 256 << 10  # bytes per block: its temporaries (~12x) stay in cache and do not grow with the file
_PAD = 8  # spaces before each block, so an 8-byte window ending at any token stays inside the buffer

_ALLOWED = np.zeros(256, dtype=bool)  # the integer path: digits, space, tab, CR, LF
_ALLOWED[[9, 10, 13, 32]] = True
_ALLOWED[48:58] = True
_LSTRIP = np.zeros(256, dtype=bool)  # what bytes.lstrip() removes (the comment rule), minus LF
_LSTRIP[[9, 11, 12, 13, 32]] = True

# SWAR decoding of up to 8 ASCII digits held in a little-endian uint64 (the last digit in the top byte).
_U64 = np.uint64
_KEEP = np.array([0] + [((1 << (8 * n)) - 1) << (8 * (8 - n)) for n in range(1, 9)], dtype=_U64)
_ZEROS = _U64(0x3030303030303030)
_STEPS = ((_U64(0x0F0F0F0F0F0F0F0F), _U64(2561), _U64(8)),
          (_U64(0x00FF00FF00FF00FF), _U64(6553601), _U64(16)),
          (_U64(0x0000FFFF0000FFFF), _U64(42949672960001), _U64(32)))
_MAX_DIGITS = 18  # longer numbers do not fit int64 safely: the general path takes them


@dataclass(frozen=True, slots=True)
class TransactionChunk:
    """Consecutive records of a file: ``lengths`` (> 0 each) and their item ids (sorted, distinct per record).

    ``first_line`` is the 0-based line number where the block starts (comment and blank lines count).
    """

    lengths: np.ndarray  # int64
    items: np.ndarray  # int32 ids of the universe
    first_line: int

    @property
    def n_records(self) -> int:
        return int(self.lengths.size)


# --- blocks -----------------------------------------------------------------------------------------------


_BOM = b"\xef\xbb\xbf"


def _is_gzip(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(2) == b"\x1f\x8b"
    except OSError:
        return False


def _open(path: Path) -> BinaryIO:
    try:
        fh = open(path, "rb")
        magic = fh.read(2)
        fh.seek(0)
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if magic == b"\x1f\x8b":
        return gzip.GzipFile(fileobj=fh, mode="rb")  # type: ignore[return-value]
    return fh


def _blocks(path: Path, chunk_bytes: int) -> Iterator[tuple[bytes, int]]:
    """Yield (buffer, n_lines): ``_PAD`` spaces, then whole lines, the last ending in a line break.

    Reports the bytes read from disk (compressed ones for ``.gz``) to the progress bar of the running step."""
    from .. import progress

    pad = b" " * _PAD
    try:
        size = os.path.getsize(path)
    except OSError:
        size = 0
    with _open(path) as fh:
        raw = getattr(fh, "fileobj", fh)  # a .gz: the compressed file under the decompressor
        done = 0
        pending: list[bytes] = []  # the start of a line longer than a block
        first = True
        while True:
            try:
                block = fh.read(chunk_bytes)
                while first and block and len(block) < len(_BOM):  # tiny blocks: the mark whole before the check
                    more = fh.read(chunk_bytes)
                    if not more:
                        break
                    block += more
            except (OSError, EOFError, zlib.error) as exc:
                if _is_gzip(path):
                    raise InputError(f"{path}: not a readable .gz file: truncated or corrupt ({exc})") from None
                raise InputError(f"{path}: cannot read ({getattr(exc, 'strerror', None) or exc})") from None
            if not block:
                break
            if progress.enabled():
                try:
                    pos = raw.tell()
                except (OSError, ValueError):
                    pos = done
                progress.advance(pos - done, "B", size or None)
                done = pos
            if first:
                first = False
                if block[:3] == _BOM:  # a UTF-8 byte-order mark (some editors write one): not part of an item
                    block = block[3:]
            cut = block.rfind(b"\n")
            if cut < 0:
                pending.append(block)
                continue
            buf = b"".join((pad, *pending, memoryview(block)[: cut + 1]))
            pending = [block[cut + 1 :]]
            yield buf, buf.count(b"\n")
        rest = b"".join(pending)
        if rest:
            yield pad + rest + b"\n", 1 + rest.count(b"\n")


# --- parsing one block ------------------------------------------------------------------------------------


def _blank_comments(a: np.ndarray) -> np.ndarray:
    """A copy of the block with every comment line (first non-blank byte '#') turned into spaces."""
    hashes = np.flatnonzero(a == 35)
    newlines = np.flatnonzero(a == 10)
    line = np.searchsorted(newlines, hashes)  # line index of each '#'
    line_start = np.where(line > 0, newlines[np.maximum(line - 1, 0)] + 1, 0)
    nonblank = np.cumsum(~_LSTRIP[a] & (a != 10), dtype=np.int64)
    before = nonblank[hashes] - np.where(line_start > 0, nonblank[np.maximum(line_start - 1, 0)], 0)
    comment = before == 1  # the '#' itself is the first non-blank byte of its line
    if not comment.any():
        return a
    lines = np.unique(line[comment])
    starts = np.where(lines > 0, newlines[np.maximum(lines - 1, 0)] + 1, 0)
    ends = newlines[lines]  # every block ends in a line break, so each line has one
    delta = np.zeros(a.size + 1, dtype=np.int8)
    delta[starts] = 1
    delta[ends] = -1
    out = a.copy()
    out[np.cumsum(delta[:-1], dtype=np.int8) > 0] = 32
    return out


def _swar_values(a: np.ndarray, ends: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Decode the tokens of ``a`` ending at ``ends`` (exclusive) with ``lengths`` <= 18 digits, as int64."""
    windows = np.ndarray(shape=(a.size - 7,), dtype="<u8", buffer=a, offset=0, strides=(1,))
    values = np.zeros(ends.size, dtype=np.int64)
    scale = 1
    for k in range(0, int(lengths.max()), 8):  # 8 digits per pass, from the right
        n = np.clip(lengths - k, 0, 8)
        x = windows[np.maximum(ends - (k + 8), 0)]  # a window before a short token's start is masked out
        keep = _KEEP[n]
        x &= keep
        x -= _ZEROS & keep
        for mask, mul, shift in _STEPS:
            x &= mask
            x *= mul
            x >>= shift
        values += x.astype(np.int64) * scale
        scale *= 10**8
    return values


def _parse_integers(buf: bytes) -> tuple[np.ndarray, np.ndarray] | None:
    """(values, tokens per line) of a block of digits and white space; None if it needs the general path."""
    a = np.frombuffer(buf, dtype=np.uint8)
    if b"#" in buf:
        a = _blank_comments(a)
    if int(a.max()) > 57:  # letters, '#' left in a record line, UTF-8: the general path
        return None
    digit = a >= 48
    n_space = sum(int(np.count_nonzero(a == c)) for c in (32, 10, 9, 13))
    if int(np.count_nonzero(digit)) + n_space != a.size:  # signs, dots, other control bytes
        return None
    edge = np.flatnonzero(np.diff(digit.view(np.int8)))  # alternately: before a token, its last digit
    del digit
    starts = edge[0::2] + 1
    ends = edge[1::2] + 1
    del edge
    newlines = np.flatnonzero(a == 10)
    per_line = np.diff(np.searchsorted(starts, newlines), prepend=0)
    if starts.size == 0:
        return np.zeros(0, dtype=np.int64), per_line
    lengths = ends - starts
    if int(lengths.max()) > _MAX_DIGITS:
        return None
    return _swar_values(a, ends, lengths), per_line


def _parse_tokens(buf: bytes, path: Path, first_line: int) -> tuple[list[str], np.ndarray]:
    """(tokens, tokens per line) by ``str.split()`` of each line (after comment lines are blanked)."""
    body = buf[_PAD:]
    if b"#" in body:
        body = _blank_comments(np.frombuffer(body, dtype=np.uint8)).tobytes()
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = body[: exc.start].count(b"\n")
        raise InputError(f"{path}:{first_line + line + 1}: not valid UTF-8 text") from None
    tokens: list[str] = []
    counts: list[int] = []
    for line in text.split("\n")[:-1]:  # the block ends in a line break
        parts = line.split()
        tokens.extend(parts)
        counts.append(len(parts))
    return tokens, np.asarray(counts, dtype=np.int64)


def _line_of(per_line: np.ndarray, token: int) -> int:
    return int(np.searchsorted(np.cumsum(per_line), token, side="right"))


def _records(per_line: np.ndarray) -> np.ndarray:
    return per_line[per_line > 0]


def _ids_of_values(values: np.ndarray, universe: Universe) -> np.ndarray:
    """Item ids of parsed integers (-1 outside the universe); a contiguous range is a subtraction."""
    labels = universe.int_labels
    if labels is not None and labels.size and int(labels[-1]) - int(labels[0]) + 1 == labels.size:
        ids = values - labels[0]
        ids[ids.view(np.uint64) >= np.uint64(labels.size)] = -1
        return ids
    return universe.ids_of_ints(values)


def _not_in(path: Path, line: int, item: str, universe: Universe) -> InputError:
    hint = f"; {TABLE_HINT}" if "," in item else ""
    return InputError(f"{path}:{line + 1}: item {item} is not in {universe.where()}{hint}")


# --- files that are not transaction files ----------------------------------------------------------------

TABLE_HINT = ("this looks like a CSV table, not a transaction file (one record per line, items separated by "
              "spaces): use `dprelease diffgen` or `dprelease rps` for tables")
_SNIFF_BYTES = 64 << 10
_INTEGER = re.compile(r"-?\d+")


def _first_record_lines(path: Path, n: int = 2) -> list[tuple[int, list[str]]]:
    """(0-based line, tokens) of the first ``n`` record lines (comments and blank lines skipped), read from the
    file's first 64 KiB; a file the readers will refuse anyway gives []."""
    try:
        with _open(path) as fh:
            head = fh.read(_SNIFF_BYTES)
    except (OSError, EOFError, zlib.error, InputError):
        return []
    full = len(head) < _SNIFF_BYTES
    text = head.removeprefix(_BOM).decode("utf-8", errors="replace")
    lines = text.split("\n")
    if not full:
        lines = lines[:-1]  # the last line may be cut
    out: list[tuple[int, list[str]]] = []
    for i, line in enumerate(lines):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        out.append((i, stripped.split()))
        if len(out) == n:
            break
    return out


def _in_universe(token: str, universe: Universe | None) -> bool:
    return universe is not None and int(universe.ids_of_tokens([token])[0]) >= 0


def check_not_a_table(path: str | os.PathLike, universe: Universe | None) -> None:
    """Refuse a file whose first records look like a CSV table or start with a header line.

    A comma inside a token that is not an item of the universe (any token, when the universe is to be derived)
    is a CSV row; a first line holding a word where the universe is numeric (declared, or derived from a file
    whose second line is all numbers) is a header. Without this, deriving the universe from such a file would
    make every raw row (or field value) an "item" and publish it. Raises :class:`InputError` naming the file
    and line, with a hint."""
    path = Path(path)
    lines = _first_record_lines(path)
    if not lines:
        return
    for lineno, tokens in lines:
        for token in tokens:
            if "," in token and not _in_universe(token, universe):
                raise _comma_error(path, lineno, token, universe)
    lineno, tokens = lines[0]
    if universe is not None:
        numeric = universe.int_labels is not None
    else:
        numeric = len(lines) > 1 and all(_INTEGER.fullmatch(t) for t in lines[1][1])
    words = [t for t in tokens if not _INTEGER.fullmatch(t) and not _in_universe(t, universe)]
    if numeric and words:
        where = "" if universe is None else f"item {words[0]!r} is not in {universe.where()}; "
        raise InputError(f"{path}:{lineno + 1}: {where}{words[0]!r} is a word where the items are numbers: this "
                         f"looks like a header line; remove it, or use `dprelease diffgen` or `dprelease rps` for "
                         f"tables" + ("" if universe is not None else ", or declare the universe"))


def _comma_error(path: Path, lineno: int, token: str, universe: Universe | None) -> InputError:
    if universe is not None:
        return _not_in(path, lineno, repr(token), universe)
    return InputError(f"{path}:{lineno + 1}: {token!r} holds a comma: {TABLE_HINT}, or declare the universe "
                      f"(--universe FILE) if commas belong to the item names")


# --- the readers ------------------------------------------------------------------------------------------


def iter_transaction_chunks(path: str | os.PathLike, universe: Universe, *, chunk_bytes: int = CHUNK_BYTES
                            ) -> Iterator[TransactionChunk]:
    """Parse a transaction file block by block against a *declared* universe, yielding CSR chunks.

    Raises :class:`InputError` naming the file and line of the first item outside the universe (in file
    order). Blocks without a record yield nothing.
    """
    path = Path(path)
    integer_labels = universe.int_labels is not None
    first_line = 0
    for buf, n_lines in _blocks(path, chunk_bytes):
        parsed = _parse_integers(buf) if integer_labels else None
        if parsed is not None:
            values, per_line = parsed
            ids = _ids_of_values(values, universe)
            bad = np.flatnonzero(ids < 0)
            if bad.size:
                j = int(bad[0])
                raise _not_in(path, first_line + _line_of(per_line, j), str(int(values[j])), universe)
        else:
            tokens, per_line = _parse_tokens(buf, path, first_line)
            ids = universe.ids_of_tokens(tokens) if tokens else np.zeros(0, dtype=np.int64)
            bad = np.flatnonzero(ids < 0)
            if bad.size:
                j = int(bad[0])
                raise _not_in(path, first_line + _line_of(per_line, j), repr(tokens[j]), universe)
        lengths, items = canonical_records(_records(per_line), ids.astype(np.int32))
        if lengths.size:
            yield TransactionChunk(lengths, items, first_line)
        first_line += n_lines


def _distinct(values: np.ndarray) -> np.ndarray:
    """Sorted distinct values (by sorting: numpy 2's hash-based ``np.unique`` is far slower on many values)."""
    values = np.sort(values)
    keep = np.ones(values.size, dtype=bool)
    np.not_equal(values[1:], values[:-1], out=keep[1:])
    return values[keep]


def _no_transactions(path: Path) -> InputError:
    return InputError(f"{path}: no transactions (the file is empty or has only comments/blank lines)")


def read_fimi(path: str | os.PathLike, universe: Universe | None, *, derive: bool = False,
              chunk_bytes: int = CHUNK_BYTES) -> tuple[TransactionDB, Universe]:
    """Read a whole transaction file into a :class:`TransactionDB` (see :func:`dprelease.data.io.read_transactions`).

    ``universe=None`` derives the universe from the data, and only with ``derive=True`` (an explicit opt-in:
    it reveals which items occur). A file that looks like a CSV table is refused (:func:`check_not_a_table`)."""
    path = Path(path)
    require_universe(universe, derive, str(path))
    check_not_a_table(path, universe)
    if universe is not None:
        builder = CSRBuilder()
        for chunk in iter_transaction_chunks(path, universe, chunk_bytes=chunk_bytes):
            builder.add(chunk.lengths, chunk.items)
        if builder.n_records == 0:
            raise _no_transactions(path)
        return builder.finish(universe.size), universe
    derived = _read_derived_integers(path, chunk_bytes)
    if derived is None:  # some block is not integers: derive string labels, as the general path always did
        derived = _read_derived_tokens(path, chunk_bytes)
    return derived


def _read_derived_integers(path: Path, chunk_bytes: int) -> tuple[TransactionDB, Universe] | None:
    """No universe, integer file: keep raw values (sorted, distinct per record; the id map is monotone),
    derive the universe from the distinct values, then map in place. None if a block is not integers."""
    builder = CSRBuilder(item_dtype=np.int32)
    distinct = np.zeros(0, dtype=np.int64)
    for buf, _ in _blocks(path, chunk_bytes):
        parsed = _parse_integers(buf)
        if parsed is None:
            return None
        values, per_line = parsed
        if values.size == 0:
            continue
        if builder.items.dtype == np.int32 and int(values.max()) > np.iinfo(np.int32).max:
            builder.widen()  # labels beyond int32: hold the raw values as int64
        lengths, values = canonical_records(_records(per_line), values)
        distinct = _distinct(np.concatenate([distinct, values]))
        builder.add(lengths, values.astype(builder.items.dtype))
    if builder.n_records == 0:
        raise _no_transactions(path)
    universe = Universe.derived_from_values(distinct)
    builder.items.map_inplace(lambda part: np.searchsorted(distinct, part))
    return builder.finish(universe.size), universe


def _read_derived_tokens(path: Path, chunk_bytes: int) -> tuple[TransactionDB, Universe]:
    """No universe, general tokens: provisional ids in first-seen order, then the derived (sorted) labels;
    records are re-canonicalised after the id map (it is not monotone)."""
    vocab: dict[str, int] = {}
    builder = CSRBuilder(item_dtype=np.int32)
    first_line = 0
    for buf, n_lines in _blocks(path, chunk_bytes):
        tokens, per_line = _parse_tokens(buf, path, first_line)
        comma = next((j for j, t in enumerate(tokens) if "," in t), None) if b"," in buf else None
        if comma is not None:  # a derived universe would make table rows or fields "items" and publish them
            raise _comma_error(path, first_line + _line_of(per_line, comma), tokens[comma], None)
        first_line += n_lines
        if not tokens:
            continue
        provisional = np.fromiter((vocab.setdefault(t, len(vocab)) for t in tokens), dtype=np.int32,
                                  count=len(tokens))
        builder.add(_records(per_line), provisional)
    if builder.n_records == 0:
        raise _no_transactions(path)
    labels = list(vocab)
    universe = Universe.derived_from_tokens(labels)
    lut = universe.ids_of_tokens(labels).astype(np.int32)
    raw = builder.finish(universe.size)
    out = CSRBuilder()
    step = 1 << 20
    for lo in range(0, raw.n_records, step):
        hi = min(lo + step, raw.n_records)
        a, b = int(raw.offsets[lo]), int(raw.offsets[hi])
        lengths, items = canonical_records(np.diff(raw.offsets[lo : hi + 1]), lut[raw.items[a:b]])
        out.add(lengths, items)
    return out.finish(universe.size), universe


# --- writing ----------------------------------------------------------------------------------------------


def format_int_records(db: TransactionDB, first_label: int = 1) -> bytes:
    """The records of ``db`` as FIMI text, item id i written as the integer ``first_label + i``.

    One line per record, labels separated by one space (the bytes ``" ".join(labels) + "\n"`` gives),
    built with numpy: digits are placed from the last one back, ``max digits`` passes in all.
    """
    values = db.items.astype(np.int64) + int(first_label)
    if values.size and int(values.min()) < 0:
        raise ValueError("format_int_records writes non-negative labels only")
    lengths = db.lengths
    digits = np.ones(values.size, dtype=np.int64)
    power = 10
    while values.size and power <= int(values.max()):
        digits += values >= power
        power *= 10
    width = digits + 1  # each label is followed by a space or, at the end of its record, a line break
    cum = np.zeros(values.size + 1, dtype=np.int64)
    np.cumsum(width, out=cum[1:])
    before = cum[db.offsets[:-1]]  # bytes of the labels before each record
    record_bytes = np.where(lengths > 0, cum[db.offsets[1:]] - before, 1)  # an empty record is a bare line break
    record_start = np.cumsum(record_bytes) - record_bytes
    out = np.empty(int(record_bytes.sum()), dtype=np.uint8)
    out[record_start[lengths == 0]] = 10
    ends = np.repeat(record_start - before, lengths) + cum[1:]  # one past each label's separator
    sep = np.full(values.size, 32, dtype=np.uint8)
    sep[np.cumsum(lengths[lengths > 0]) - 1] = 10
    out[ends - 1] = sep
    last = ends - 2
    rest = values.copy()
    for d in range(int(digits.max(initial=0))):
        live = digits > d
        out[(last - d)[live]] = (48 + rest[live] % 10).astype(np.uint8)
        rest //= 10
    return out.tobytes()
