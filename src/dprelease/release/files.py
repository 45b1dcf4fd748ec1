"""A release body and its manifest on disk: written and read as one unit.

Writing (:func:`write_with_manifest`): the body goes to a temp file, its sha256 goes into the manifest, the
manifest goes to a temp file, then the manifest is renamed into place and then the body. A run killed between
the two renames leaves a new manifest beside an old body: :func:`read_manifest` (used by every reader of a
release) sees the hashes differ and refuses the pair, naming both files. Temp files left by killed runs are
removed by the next run on the same output (see :func:`dprelease.data.io.remove_stale_temps`). Whether an
existing output may be replaced (``--force``) is the command's decision, taken before anything is computed.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

from ..data.io import StagedFile, file_sha256
from ..errors import InputError

__all__ = ["Manifest", "BodyWriter", "manifest_path", "write_with_manifest", "read_manifest", "manifest_of"]

Manifest = dict[str, Any]
# writes one file's contents to an open handle (text or binary, as the file's mode says)
BodyWriter = Callable[[IO[Any]], None]

MANIFEST_SUFFIX = ".manifest.json"


def manifest_path(output: str | os.PathLike[str]) -> Path:
    """Where the manifest of the release at ``output`` lives: ``OUTPUT.manifest.json``."""
    output = Path(output)
    return output.with_name(output.name + MANIFEST_SUFFIX)


def _strict_json(manifest: Manifest) -> str:
    try:
        return json.dumps(manifest, indent=2, sort_keys=False, allow_nan=False) + "\n"
    except ValueError:
        bad = [k for k, v in _walk(manifest) if isinstance(v, float) and not math.isfinite(v)]
        raise ValueError(f"manifest holds a non-finite number at {bad}: a parameter escaped validation") from None


def _walk(obj: object, prefix: str = "") -> Iterator[tuple[str, object]]:
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _walk(v, f"{prefix}.{k}" if prefix else str(k))
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            yield from _walk(v, f"{prefix}[{i}]")
    else:
        yield prefix, obj


def write_with_manifest(
    output: str | os.PathLike[str],
    write_body: BodyWriter,
    manifest: Manifest,
    mode: str = "w",
    *,
    extra: Sequence[tuple[str | os.PathLike[str], BodyWriter, str]] = (),
) -> tuple[Path, Path]:
    """Write the body (``write_body(handle)``) and its manifest as one unit; returns (body, manifest) paths.

    The manifest records the body's file name and sha256 (``body``, ``body_sha256``) and those of
    any ``extra`` files (``(path, write, mode)``, e.g. DiffGen's record form) under ``other_files``.
    Order: every file to a temp file; manifest renamed into place; then the bodies. A crash leaves
    either the old pair, or a new manifest whose hashes the old bodies do not match (refused by
    :func:`read_manifest`). Nothing is renamed if any write fails.
    """
    output = Path(output)
    mpath = manifest_path(output)
    staged: list[StagedFile] = []
    try:
        body = StagedFile(output, mode)
        staged.append(body)
        write_body(body.handle)
        others: dict[str, str] = {}
        for path, writer, xmode in extra:
            sf = StagedFile(path, xmode)
            staged.append(sf)
            writer(sf.handle)
            others[Path(path).name] = sf.sha256()
        full = dict(manifest)
        full["body"] = output.name
        full["body_sha256"] = body.sha256()
        if others:
            full["other_files"] = others
        text = _strict_json(full)
        man = StagedFile(mpath, "w")
        staged.append(man)
        man.handle.write(text)
        man.commit()  # manifest first ...
        for sf in staged:
            if sf is not man:
                sf.commit()  # ... then the bodies
    except BaseException:
        for sf in staged:
            sf.discard()
        raise
    return output, mpath


def read_manifest(output: str | os.PathLike[str], *, verify: bool = True) -> Manifest:
    """The manifest of the release at ``output``, after checking that the pair belongs together.

    Raises :class:`InputError` naming both files when the manifest is missing or unreadable,
    or when the body's sha256 (or another listed file's) differs from the one the manifest records.
    """
    output = Path(output)
    mpath = manifest_path(output)
    try:
        text = mpath.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise InputError(f"{output}: no manifest {mpath} beside it; a release is read together with the "
                         f"manifest dprelease wrote for it") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{mpath}: cannot read the manifest of {output} ({exc})") from None
    try:
        manifest = json.loads(text)
    except ValueError as exc:
        raise InputError(f"{mpath}: not a dprelease manifest (not JSON: {exc})") from None
    if not isinstance(manifest, dict) or manifest.get("package") != "dprelease":
        raise InputError(f"{mpath}: not a dprelease manifest")
    if not verify:
        return manifest
    expected = manifest.get("body_sha256")
    if not isinstance(expected, str):
        raise InputError(f"{mpath} records no body_sha256 (written by an older dprelease?), so it cannot be "
                         f"checked against {output}; re-run the release")
    if manifest.get("body") not in (None, output.name):
        raise InputError(f"{mpath} is the manifest of {manifest.get('body')!r}, not of {output}")
    files = [(output, expected)] + [(output.with_name(name), sha) for name, sha in
                                    dict(manifest.get("other_files") or {}).items()]
    for path, sha in files:
        try:
            actual = file_sha256(path)
        except OSError as exc:
            raise InputError(f"{path}: cannot read the release listed in {mpath} ({exc.strerror or exc})") from None
        if actual != sha:
            raise InputError(f"{path} does not match its manifest {mpath} (sha256 differs): they come from "
                             f"different runs (e.g. a run killed while writing); re-run the release")
    return manifest


def manifest_of(path: str | os.PathLike[str]) -> Manifest:
    """The checked manifest of the release file ``path``: its own (``PATH.manifest.json``), or, for a companion
    file another release lists under ``other_files`` (DiffGen's ``--records`` form), that release's manifest,
    checked against every file it lists."""
    p = Path(path)
    if manifest_path(p).exists():
        return read_manifest(p)
    for mp in sorted(p.parent.glob("*" + MANIFEST_SUFFIX)):
        try:
            m = json.loads(mp.read_text(encoding="utf-8-sig"))
        except (OSError, ValueError):
            continue
        if isinstance(m, dict) and p.name in dict(m.get("other_files") or {}):
            return read_manifest(mp.with_name(mp.name[: -len(MANIFEST_SUFFIX)]))
    raise InputError(f"{p}: no manifest beside it (nor one listing it); a release is read together with the "
                     f"manifest dprelease wrote for it")
