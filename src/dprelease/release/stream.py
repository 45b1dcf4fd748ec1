"""A stream's release (IncTDPart, IncTDPart-Prefix): a set-valued release whose manifest names its stream.

After every append the stream writes its latest release; the manifest's ``stream`` (the state file's name and
the stream's random id) lets the next append or ``stream release`` replace the stream's own previous release
without ``--force``, and nothing else.
"""

from __future__ import annotations

import os
from typing import Any

from ..errors import DPReleaseError
from .files import read_manifest
from .manifest import add_notes, release_size_note
from .setvalued import SetValuedRelease

__all__ = ["STREAM_ALGORITHMS", "stream_release", "names_stream"]

STREAM_ALGORITHMS = ("inctdpart", "inctdpart-prefix")


def stream_release(release: SetValuedRelease, identity: dict[str, Any]) -> SetValuedRelease:
    """``release`` as the stream ``identity``'s: the manifest names the stream, and says an empty release."""
    release.manifest["stream"] = identity
    note = release_size_note(str(release.manifest.get("algorithm", "inctdpart")), release.n_records, "records")
    if note:
        add_notes(release.manifest, [note])
    return release


def names_stream(output: str | os.PathLike[str], identity: dict[str, Any]) -> bool:
    """Whether the release at ``output`` is one of the stream ``identity``'s (its manifest names the stream)."""
    try:
        manifest = read_manifest(output, verify=False)
    except DPReleaseError:
        return False
    named = manifest.get("stream")
    if manifest.get("algorithm") not in STREAM_ALGORITHMS or not isinstance(named, dict):
        return False
    if identity.get("id") is not None and named.get("id") is not None:
        return bool(named.get("id") == identity["id"])
    return bool(named.get("state") == identity.get("state"))
