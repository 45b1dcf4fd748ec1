"""Releases: the objects algorithms return, their manifests, and their files (written and read as one unit).

Modules, bottom to top:

* :mod:`.manifest` -- the manifest's public facts (:func:`build_manifest`), the run's start time, notes;
* :mod:`.files` -- a body and its manifest on disk: :func:`write_with_manifest` (temp files, manifest renamed
  into place first, with the body's sha256), :func:`read_manifest` (a pair that does not match is refused);
* :mod:`.base` -- the :class:`Release` protocol every kind follows, :class:`Written`, :func:`kind_of`,
  :func:`read` (a release file back, of the kind its manifest names);
* one module per kind: :mod:`.setvalued` (:class:`SetValuedRelease`), :mod:`.itemsets` (:class:`ItemsetRelease`),
  :mod:`.table` (:class:`GeneralizedTable`, :class:`SyntheticTable`), :mod:`.degrees` (:class:`DegreeRelease`,
  :class:`GraphRelease`), :mod:`.stream` (a set-valued release that names its stream).

This layer sits beside the engines, below the algorithms: it knows the data's types (:mod:`dprelease.data`),
never an algorithm. pandas and pyarrow are imported only when a table is written or read.
"""

from __future__ import annotations

from .base import KINDS, Release, Written, kind_of, read
from .files import Manifest, manifest_of, manifest_path, read_manifest, write_with_manifest
from .manifest import (
    EPSILON_WARN_ABOVE, NEIGHBOURS_LINE, NEIGHBOURS_ROW, PRIVACY_UNITS, add_notes, build_manifest, epsilon_notes,
    records_run_start, release_size_note, run_start, run_started,
)
from .setvalued import SetValuedRelease, canonical_itemset_order, write_set_valued_release

__all__ = [
    "Release", "Written", "KINDS", "kind_of", "read", "Manifest", "manifest_of", "manifest_path", "read_manifest",
    "write_with_manifest", "build_manifest", "add_notes", "run_started", "records_run_start", "run_start",
    "EPSILON_WARN_ABOVE", "epsilon_notes", "release_size_note", "PRIVACY_UNITS", "NEIGHBOURS_LINE", "NEIGHBOURS_ROW",
    "SetValuedRelease", "canonical_itemset_order", "write_set_valued_release",
]
