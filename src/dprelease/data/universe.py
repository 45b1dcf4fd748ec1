"""The item universe: a public domain the custodian declares (``1..17`` or a file, one item per line).

Deriving it from the data leaks which items occur (on a file whose lines are not baskets, such as a CSV
table, it publishes the raw lines themselves), so dprelease only does that when asked: ``--universe derive``
on the command line, ``derive=True`` in the API (:func:`require_universe`). A derived universe comes with a
:class:`~dprelease.errors.PrivacyLeakWarning`, and the manifest records ``"source": "derived-from-data"``.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import InputError, ParameterError, PrivacyLeakWarning
from ..limits import check_universe

__all__ = ["Universe", "parse_universe_spec", "require_universe", "DERIVED_WARNING", "DERIVE", "UNDECLARED"]

DERIVE = "derive"  # the command-line value that asks for a universe derived from the data

DERIVED_WARNING = (
    "--universe derive: the item universe was derived from the data, which reveals which items occur; "
    "declare it (e.g. --universe 1..17 or --universe items.txt) for a release that is differentially private"
)

UNDECLARED = (
    "no item universe declared: declare the public universe (--universe 1..17, or --universe items.txt with one "
    "item per line), or opt in to deriving it from the data with --universe derive (that reveals which items "
    "occur, and the manifest says so)"
)

_RANGE = re.compile(r"^\s*(-?\d+)\s*\.\.\s*(-?\d+)\s*$")
_INT_LABEL = re.compile(r"-?\d{1,18}")  # a label that is a 64-bit integer


@dataclass(frozen=True, eq=False)
class Universe:
    """Item labels in id order, with how the custodian declared them.

    ``source`` is ``declared-range``, ``declared-file`` or ``derived-from-data``.
    Integer labels are kept as sorted ``int_labels`` so parsed integer tokens map
    to ids with one vectorised search.
    """

    labels: tuple[str, ...]
    source: str
    spec: str
    int_labels: np.ndarray | None = None  # sorted int64 labels when every label is an integer

    @property
    def size(self) -> int:
        return len(self.labels)

    @property
    def declared(self) -> bool:
        return self.source != "derived-from-data"

    @classmethod
    def from_range(cls, lo: int, hi: int, spec: str | None = None) -> "Universe":
        if hi < lo:
            raise ParameterError(f"--universe {lo}..{hi}: the upper end is below the lower end")
        if not (-(2**63) <= lo and hi < 2**63):
            raise ParameterError(f"--universe {lo}..{hi}: items must be 64-bit integers")
        check_universe(hi - lo + 1, spec or f"{lo}..{hi}")  # public: bounded before anything is allocated
        ints = np.arange(lo, hi + 1, dtype=np.int64)
        return cls(tuple(map(str, range(lo, hi + 1))), "declared-range", spec or f"{lo}..{hi}", ints)

    @classmethod
    def from_labels(cls, labels: list[str], source: str, spec: str) -> "Universe":
        if not labels:
            raise InputError(f"{spec}: the universe is empty")
        if len(set(labels)) != len(labels):
            seen: set[str] = set()
            for lab in labels:
                if lab in seen:
                    raise InputError(f"{spec}: item {lab!r} is listed twice")
                seen.add(lab)
        ints: np.ndarray | None = None
        if all(map(_INT_LABEL.fullmatch, labels)):
            vals = np.array(list(map(int, labels)), dtype=np.int64)
            order = np.argsort(vals, kind="stable")
            labels = [labels[i] for i in order]
            ints = vals[order]
        return cls(tuple(labels), source, spec, ints)

    @classmethod
    def derived_from_values(cls, values: np.ndarray) -> "Universe":
        """Universe of the integer items that occur; warns (privacy leak)."""
        warnings.warn(DERIVED_WARNING, PrivacyLeakWarning, stacklevel=3)
        ints = np.unique(np.asarray(values, dtype=np.int64))
        return cls(tuple(str(v) for v in ints.tolist()), "derived-from-data", "derived", ints)

    @classmethod
    def derived_from_tokens(cls, tokens: list[str]) -> "Universe":
        warnings.warn(DERIVED_WARNING, PrivacyLeakWarning, stacklevel=3)
        return cls.from_labels(sorted(set(tokens)), "derived-from-data", "derived")

    def ids_of_ints(self, values: np.ndarray) -> np.ndarray:
        """Item ids of integer labels; -1 where a value is not in the universe."""
        values = np.asarray(values, dtype=np.int64)
        labels = self.int_labels
        if labels is not None and labels.size and int(labels[-1]) - int(labels[0]) + 1 == labels.size:
            ids = values - labels[0]  # a contiguous range: ids by subtraction
            return np.where((ids >= 0) & (ids < labels.size), ids, -1)
        if self.int_labels is None:
            index = {lab: i for i, lab in enumerate(self.labels)}
            return np.array([index.get(str(v), -1) for v in values.tolist()], dtype=np.int64)
        pos = np.searchsorted(self.int_labels, values)
        pos_c = np.minimum(pos, self.int_labels.size - 1)
        return np.where(self.int_labels[pos_c] == values, pos_c, -1)

    def ids_of_tokens(self, tokens: list[str]) -> np.ndarray:
        index = {lab: i for i, lab in enumerate(self.labels)}
        if self.int_labels is not None:
            # integer labels: accept tokens such as '007' the same way the fast path does
            out = []
            for t in tokens:
                i = index.get(t, -1)
                if i < 0 and _INT_LABEL.fullmatch(t):
                    i = int(self.ids_of_ints(np.array([int(t)]))[0])
                out.append(i)
            return np.array(out, dtype=np.int64)
        return np.array([index.get(t, -1) for t in tokens], dtype=np.int64)

    def where(self) -> str:
        """How an error names this universe: declared (with its spec) or derived from earlier data."""
        if self.declared:
            return f"the declared universe ({self.spec})"
        return "the universe derived from the data (declare one with --universe LO..HI or --universe FILE)"

    def describe(self) -> dict[str, object]:
        out: dict[str, object] = {"source": self.source, "spec": self.spec, "size": self.size}
        if not self.declared:
            out["warning"] = DERIVED_WARNING
        return out


def require_universe(universe: Universe | None, derive: bool, where: str = "") -> None:
    """Refuse to derive a universe unless asked: ``universe`` is None only together with ``derive=True``.

    Deriving a domain from the data is an explicit opt-in (a derived universe reveals which items occur,
    and on a file whose lines are not baskets it reveals the lines themselves)."""
    if universe is None and not derive:
        prefix = f"{where}: " if where else ""
        raise ParameterError(f"{prefix}{UNDECLARED} (in the API: pass a Universe, or derive=True)")


def parse_universe_spec(spec: str) -> Universe:
    """``LO..HI`` (inclusive integer range) or a path to a file with one item per line.

    ``derive`` (the command line's opt-in) is not a universe: the commands turn it into ``derive=True``
    before this is called; here it is only a file name, and refused when no such file exists."""
    m = _RANGE.match(spec)
    if m:
        return Universe.from_range(int(m.group(1)), int(m.group(2)), spec)
    path = Path(spec)
    if not path.is_file():
        raise ParameterError(f"--universe {spec!r}: neither a range LO..HI nor a readable file "
                             f"(or --universe {DERIVE} to derive it from the data)")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot read the universe file ({exc.strerror or exc})") from None
    if b"\x00" in raw:
        raise InputError(f"{path}: not a text file (it holds NUL bytes); --universe needs one item per line")
    try:
        text = raw.decode("utf-8-sig")  # a UTF-8 byte-order mark is dropped
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise InputError(f"{path}:{line}: not valid UTF-8 text; --universe needs one item per line") from None
    labels: list[str] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        if len(text.split()) != 1:
            raise InputError(f"{path}:{lineno}: one item per line expected, got {text!r}")
        labels.append(text)
    return Universe.from_labels(labels, "declared-file", str(path))
