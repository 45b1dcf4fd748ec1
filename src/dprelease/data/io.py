"""Readers and writers for FIMI/SPMF-style transaction files, and atomic file output.

Format: one transaction per line, items separated by white space. Blank lines
and lines whose first non-blank character is ``#`` are skipped. An item repeated
within a line counts once. Lines may end in a trailing space (FIMI does).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import numpy as np

from .fimi import read_fimi
from .transactions import ItemsetRows, TransactionDB, spans
from .universe import Universe

__all__ = [
    "read_transactions",
    "write_transactions",
    "write_weighted_itemsets",
    "atomic_output",
    "StagedFile",
    "check_output_path",
    "STDOUT_REFUSED",
    "remove_stale_temps",
    "write_json_atomic",
    "file_sha256",
]


def read_transactions(path: str | os.PathLike, universe: Universe | None, *, derive: bool = False
                      ) -> tuple[TransactionDB, Universe]:
    """Read a transaction file; map items to ids of ``universe``.

    ``universe=None`` needs ``derive=True``: the universe is then derived from the data, with a
    :class:`~dprelease.errors.PrivacyLeakWarning` (it reveals which items occur), and a
    :class:`~dprelease.errors.ParameterError` without it. Raises :class:`InputError` naming the file and line of
    the first item outside a declared universe, of a line that looks like a CSV row or header, and for a file
    with no transaction. The file is read in blocks (``.gz`` streamed) and parsed with numpy: the peak memory
    is the CSR arrays plus one block's temporaries (:mod:`dprelease.data.fimi`).
    """
    return read_fimi(path, universe, derive=derive)


_TEMP_RE = r"^\.{name}\.(\d+)\.[A-Za-z0-9_]+\.tmp(?:-wal|-shm|-journal)?$"  # SQLite side files too


def _umask() -> int:
    """The process umask, read without changing it where /proc allows (Linux), else by set-and-restore."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # exists (owned by someone else) or cannot tell: leave its file alone
    return True


def remove_stale_temps(path: str | os.PathLike) -> list[Path]:
    """Remove ``.NAME.PID.XXXX.tmp`` files beside ``path`` left by writers that are no longer running.

    Temp files carry their writer's process id, so a file whose writer is alive (another run
    writing the same output right now) is left alone. Returns the files removed.
    """
    path = Path(path)
    parent = path.parent if str(path.parent) else Path(".")
    pattern = re.compile(_TEMP_RE.format(name=re.escape(path.name)))
    removed: list[Path] = []
    try:
        entries = list(parent.iterdir())
    except OSError:
        return removed
    for entry in entries:
        m = pattern.match(entry.name)
        if m and not _pid_alive(int(m.group(1))):
            try:
                entry.unlink()
                removed.append(entry)
            except OSError:
                pass
    return removed


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class StagedFile:
    """A file written under a temporary name beside its destination, renamed into place by :meth:`commit`.

    The temp name is ``.NAME.PID.XXXX.tmp`` (so the next run can tell a killed writer's leftovers
    from a live one's, see :func:`remove_stale_temps`); the finished file gets the permissions a
    plain ``open()`` would give it (``0o666 & ~umask``), not mkstemp's 0600: releases are meant to
    be published. Stale temps of the same destination are removed when staging starts.
    """

    def __init__(self, path: str | os.PathLike, mode: str = "w"):
        self.path = Path(path)
        self.parent = self.path.parent if str(self.path.parent) else Path(".")
        self.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_temps(self.path)
        fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.{os.getpid()}.", suffix=".tmp", dir=self.parent)
        self.tmp = Path(tmp)
        try:
            self.handle: IO = os.fdopen(fd, mode, **({} if "b" in mode else {"encoding": "utf-8", "newline": "\n"}))
        except BaseException:
            os.close(fd)
            self.discard()
            raise
        self.finished = False

    def finish(self) -> None:
        """Flush, fsync and close the temp file and give it the umask's permissions."""
        if self.finished:
            return
        self.handle.flush()
        os.fsync(self.handle.fileno())
        self.handle.close()
        os.chmod(self.tmp, 0o666 & ~_umask())
        self.finished = True

    def sha256(self) -> str:
        self.finish()
        return file_sha256(self.tmp)

    def commit(self) -> Path:
        self.finish()
        os.replace(self.tmp, self.path)
        _fsync_dir(self.parent)
        return self.path

    def discard(self) -> None:
        try:
            if not self.handle.closed:
                self.handle.close()
        except (AttributeError, OSError):
            pass
        try:
            os.unlink(self.tmp)
        except FileNotFoundError:
            pass


def file_sha256(path: str | os.PathLike) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@contextmanager
def atomic_output(path: str | os.PathLike, mode: str = "w") -> Iterator[IO]:
    """Write to a temporary file beside ``path``; rename over it only if the block succeeds."""
    staged = StagedFile(path, mode)
    try:
        yield staged.handle
        staged.commit()
    except BaseException:
        staged.discard()
        raise


def write_json_atomic(path: str | os.PathLike, obj: object) -> None:
    """Strict JSON (a NaN or infinity is a bug and raises), written atomically."""
    text = json.dumps(obj, indent=2, sort_keys=False, allow_nan=False) + "\n"
    with atomic_output(path) as fh:
        fh.write(text)


def _same_file(a: Path, b: Path) -> bool:
    try:
        if a.resolve() == b.resolve():
            return True
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


STDOUT_REFUSED = ("writing to standard output is not supported: a release is a file with its manifest (and any "
                  "companion file) beside it; give a file name")


def check_output_path(
    output: str | os.PathLike,
    *,
    inputs: Iterable[str | os.PathLike | None] = (),
    force: bool = False,
    companions: Iterable[str | os.PathLike] = (),
    may_replace: Callable[[Path], bool] | None = None,
    option: str = "-o",
    make_parents: bool = False,
) -> Path:
    """Refuse an output that would destroy data or could not be written, before any work is done.

    * ``output`` is empty, ``-`` (standard output: a release needs its manifest beside it) or a directory:
      refused;
    * ``output`` (or a ``companion`` written beside it, e.g. its manifest) is one of the ``inputs``
      (same resolved path, or same inode and device through a link): always refused;
    * ``output`` or any companion exists: refused unless ``force`` or ``may_replace(output)`` says the file is
      this run's own (a stream's previous release) -- a manifest left without its body is data too;
    * the folder of ``output`` does not exist (unless ``make_parents``: a folder the command owns, such as an
      experiment's ``--out``, whose nearest existing ancestor must then be writable), is not a folder, or is
      not writable: refused.

    The checks run before anything is read, reserved in a ledger or committed to a stream state, so a path
    that cannot be written never costs budget. Raises :class:`~dprelease.errors.ParameterError` (one line
    naming the files); returns the path.
    """
    from ..errors import ParameterError

    if not str(output).strip():
        raise ParameterError(f"{option}: the output file name is empty")
    if str(output).strip() == "-":
        raise ParameterError(f"{option} -: {STDOUT_REFUSED}")
    out = Path(output)
    if out.is_dir() or not out.name:
        raise ParameterError(f"{option} {out} is a directory; give a file name")
    extra = [Path(c) for c in companions]
    written = [out, *extra]
    for src in inputs:
        if src is None:
            continue
        src_path = Path(src)
        for w in written:
            if _same_file(w, src_path):
                what = "" if w == out else f" (its companion {w})"
                raise ParameterError(f"{option} {out}{what} is the input file {src_path}: "
                                     f"writing it would destroy the input; choose another output name")
    own = force or (may_replace is not None and may_replace(out))
    if out.exists() and not own:
        raise ParameterError(f"{option} {out} already exists; pass --force to replace it")
    for c in extra:
        if c.is_dir():
            raise ParameterError(f"{option} {out}: its companion {c} is a directory")
        if c.exists() and not own:
            raise ParameterError(f"{option} {out}: its companion {c} already exists (a file written with an "
                                 f"earlier release?); pass --force to replace it")
    parent = out.parent if str(out.parent) else Path(".")
    probe = parent
    if make_parents:
        while not probe.exists() and probe != probe.parent:
            probe = probe.parent
    elif not parent.exists():
        if any(not p.is_dir() for p in parent.parents if p.exists()) or parent.is_symlink():
            raise ParameterError(f"{option} {out}: cannot write in {parent} (not a writable folder)")
        raise ParameterError(f"{option} {out}: the folder {parent} does not exist; create it first")
    if probe.exists() and (not probe.is_dir() or not os.access(probe, os.W_OK | os.X_OK)):
        raise ParameterError(f"{option} {out}: cannot write in {probe} (not a writable folder)")
    return out


def _labels_array(universe: Universe) -> list[str]:
    return list(universe.labels)


_WRITE_SETS = 1 << 16  # write_weighted_itemsets on ItemsetRows: itemsets turned into text at once
_BYTE_LABELS = 32  # labels up to this many UTF-8 bytes are written through a byte table (longer: joined strings)


def write_weighted_itemsets(handle: IO[str], itemsets: Sequence[np.ndarray], counts: np.ndarray,
                            universe: Universe) -> None:
    """Write ``counts[j]`` lines holding itemset j (item labels separated by one space)."""
    if isinstance(itemsets, ItemsetRows):
        _write_rows(handle, itemsets, np.asarray(counts, dtype=np.int64), universe)
        return
    labels = _labels_array(universe)
    for items, count in zip(itemsets, np.asarray(counts).tolist()):
        if count <= 0:
            continue
        line = " ".join(labels[i] for i in np.asarray(items).tolist()) + "\n"
        handle.write(line * int(count))


def _write_rows(handle: IO[str], rows: ItemsetRows, counts: np.ndarray, universe: Universe) -> None:
    """:func:`write_weighted_itemsets` of itemsets held as one flat array: the same text, a block of
    :data:`_WRITE_SETS` itemsets at a time, with no Python object per itemset or line. Every written item is one
    token, its label followed by a space or (last of its line) a newline; an empty itemset's line is one token of
    an empty label and a newline. A block's tokens, each line repeated as often as its count asks, become text in
    one step: with short labels, rows of a byte table (each label followed by its separator -- a table of labels
    with a space, one with a newline -- and padded with zero bytes, which are then dropped); with long labels,
    or one holding a zero byte, strings joined in one call."""
    labels = universe.labels
    n = len(labels)
    encoded = [label.encode("utf-8") for label in labels] + [b""]
    joined = b"".join(encoded)
    lengths = np.fromiter(map(len, encoded), dtype=np.int64, count=n + 1)
    width = int(lengths.max())
    table = words = None
    if width <= _BYTE_LABELS and b"\0" not in joined:
        # row t: token t's label and a space; row n + 1 + t: its label and a newline; zero bytes after, up to a
        # power-of-two width (8 to 64 bytes), for which numpy's take copies rows in one move each
        table = np.zeros((2 * (n + 1), 1 << max(3, width.bit_length())), dtype=np.uint8)
        packed = np.frombuffer(joined, dtype=np.uint8)
        at = np.repeat(np.arange(n + 1), lengths), spans(np.zeros(n + 1, dtype=np.int64), lengths)
        table[at] = packed
        table[at[0] + n + 1, at[1]] = packed
        table[np.arange(n + 1), lengths] = 32
        table[np.arange(n + 1, 2 * (n + 1)), lengths] = 10
    else:
        words = [label + " " for label in labels] + [label + "\n" for label in labels] + ["", "\n"]
    counts = np.maximum(counts, 0)
    for lo in range(0, len(rows), _WRITE_SETS):
        hi = min(lo + _WRITE_SETS, len(rows))
        bounds = rows.offsets[lo : hi + 1]
        length = np.diff(bounds)
        size = np.maximum(length, 1)  # an empty itemset is one token (an empty label)
        at = np.cumsum(size) - size
        tok = np.full(int(size.sum()), n, dtype=np.int64)
        tok[spans(at, length)] = rows.flat[int(bounds[0]) : int(bounds[-1])]
        last = np.zeros(tok.size, dtype=bool)
        last[at + size - 1] = True
        c = counts[lo:hi]
        if not (c == 1).all():
            keep = spans(np.repeat(at, c), np.repeat(size, c))
            tok, last = tok[keep], last[keep]
        if table is not None:
            cells = np.take(table, tok + (n + 1) * last, axis=0).ravel()
            text = cells[cells != 0].tobytes().decode("utf-8")
        else:
            assert words is not None
            text = "".join(map(words.__getitem__, np.where(tok == n, 2 * n + 1, tok + n * last).tolist()))
        handle.write(text)


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
