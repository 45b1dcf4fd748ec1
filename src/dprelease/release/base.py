"""What every kind of release is, and how a release file is read back without knowing its kind beforehand.

A *release* is the one object a custodian holds after an algorithm ran: its public contents (typed arrays, never
a file path) and its complete manifest. The algorithm builds it; this package writes it and reads it back; the
command line and a Python user hold the same object. Each kind (:data:`KINDS`) is a small frozen dataclass that
follows :class:`Release`:

* ``kind`` (a class attribute) and ``manifest`` (every public fact about the release, assembled by the algorithm);
* ``write(output)``: the body and its manifest as one unit (:func:`dprelease.release.files.write_with_manifest`);
  the writer adds only what describes the files (names, sha256, the file's columns);
* ``read(path, ...)`` (a class method): the release back from its files, after the pair is checked, as the same
  class (its ``accountant`` and ``trace`` are the algorithm's and are not read back).

Set-valued, itemset, table and degree releases are the kinds; a stream's release is a set-valued release whose
manifest names its stream (:mod:`.stream`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Protocol, runtime_checkable

from ..errors import InputError
from .files import Manifest, manifest_of

if TYPE_CHECKING:
    from ..data.table import TableSchema
    from ..data.universe import Universe

__all__ = ["Release", "Written", "KINDS", "kind_of", "read", "check_kind", "error_bar_companions"]

KINDS = ("setvalued", "itemsets", "table", "degrees")

# the kind of every algorithm a manifest may name (lower case); IncTDPart's baselines are "solution-*" and
# degree sequences "degrees-*" (a graph regenerated from one: "degrees-*-graph")
_KIND_OF = {"diffpart": "setvalued", "diffpart-prefix": "setvalued", "basic": "setvalued", "inctdpart": "setvalued",
            "inctdpart-prefix": "setvalued", "privbasis": "itemsets", "tf": "itemsets", "diffgen": "table",
            "tds": "table", "rps": "table", "mondrian": "table"}
_NAMES = {"setvalued": "a set-valued", "itemsets": "an itemset", "table": "a table", "degrees": "a degree"}
_EXAMPLES = {"setvalued": "written by diffpart, basic or stream", "itemsets": "the CSV written by privbasis or tf",
             "table": "written by diffgen, tds, rps or mondrian", "degrees": "written by degrees"}


@runtime_checkable
class Release(Protocol):
    """A release of any kind: its contents, its manifest, and the way it is written."""

    kind: ClassVar[str]

    @property
    def manifest(self) -> Manifest: ...

    def write(self, output: str | os.PathLike[str]) -> Written: ...


@dataclass(frozen=True)
class Written:
    """The files one ``write`` made: the body, its manifest, and companion files the manifest lists."""

    body: Path
    manifest: Path
    others: tuple[Path, ...] = ()

    def __iter__(self) -> Iterator[Path]:
        """(body, manifest), as :func:`~dprelease.release.files.write_with_manifest` returns them."""
        return iter((self.body, self.manifest))


def error_bar_companions(output: str | os.PathLike[str]) -> tuple[Path, Path]:
    """The companion files a release may write its error bars to beside ``output``: ``OUTPUT.intervals.csv``
    (set-valued and degree releases) and ``OUTPUT.leaves.csv`` (synthetic tables); both listed in the manifest."""
    output = Path(output)
    return output.with_name(output.name + ".intervals.csv"), output.with_name(output.name + ".leaves.csv")


def kind_of(manifest: Manifest) -> str | None:
    """The kind of release a manifest describes (None when the algorithm is not known to this version)."""
    algorithm = str(manifest.get("algorithm", "")).lower()
    if algorithm.startswith("solution"):  # IncTDPart's baselines
        return "setvalued"
    if algorithm.startswith("degrees-"):  # a degree sequence, or a graph regenerated from one
        return "degrees"
    return _KIND_OF.get(algorithm)


def check_kind(path: str | os.PathLike[str], manifest: Manifest, kind: str) -> None:
    """Refuse a release of another known kind than ``kind`` (an unknown algorithm is read as asked)."""
    found = kind_of(manifest)
    if found is not None and found != kind:
        raise InputError(f"{path} is a {manifest.get('algorithm')} release, not {_NAMES[kind]} release "
                         f"({_EXAMPLES[kind]})")


def read(path: str | os.PathLike[str], *, universe: Universe | None = None, schema: TableSchema | None = None,
         kind: str | None = None) -> Release:
    """The release at ``path``, of the kind its manifest names (or ``kind``): a set-valued or itemset release needs
    its ``universe``, a table its ``schema``."""
    manifest = manifest_of(path)
    kind = kind or kind_of(manifest)
    if kind in ("setvalued", "itemsets"):
        if universe is None:
            raise InputError(f"{path}: a {kind} release is read against its universe; give one")
        if kind == "setvalued":
            from .setvalued import SetValuedRelease

            return SetValuedRelease.read(path, universe)
        from .itemsets import ItemsetRelease

        return ItemsetRelease.read(path, universe)
    if kind == "table":
        if schema is None:
            raise InputError(f"{path}: a table release is read against its schema; give one")
        from .table import read_table_release

        return read_table_release(path, schema)
    if kind == "degrees":
        from .degrees import read_degrees_release

        return read_degrees_release(path)
    raise InputError(f"{path}: cannot tell the kind of a {manifest.get('algorithm', '?')} release from its "
                     f"manifest; choose one of {', '.join(KINDS)}")
