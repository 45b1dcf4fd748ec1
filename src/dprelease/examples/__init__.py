"""The bundled examples: schemas and small data sets shipped inside the package.

They are package data, so they resolve in every kind of install (a wheel, an editable checkout, a zipped
import): ``dprelease.examples.path("adult-schema.yaml")``. The same files stand in the repository's top-level
``examples/`` folder for the README's commands; a test keeps the two copies identical.

- ``adult-schema.yaml``: the UCI Adult table (taxonomies of Fung et al., TKDE 2007; public numeric bounds).
- ``table1-schema.yaml`` and ``table1-jobs.csv``: the small Job/Age/Class table of DiffGen's Table 1.
- ``bayesnet-schema.yaml``: the schema of the generated Bayesian-network table (:mod:`dprelease.data.bayesnet`).
- ``baskets.dat``: a small transaction file (FIMI format) over the items 1..12.
"""

from __future__ import annotations

import atexit
from contextlib import ExitStack
from functools import cache
from importlib import resources
from pathlib import Path

__all__ = ["NAMES", "path"]

NAMES: tuple[str, ...] = ("adult-schema.yaml", "baskets.dat", "bayesnet-schema.yaml", "table1-jobs.csv",
                          "table1-schema.yaml")

# A zipped install has no file on disk to name: each example is extracted once, on first use, and removed at exit.
_extracted = ExitStack()
atexit.register(_extracted.close)


@cache
def path(name: str) -> Path:
    """The file system path of the bundled example ``name`` (one of :data:`NAMES`)."""
    if name not in NAMES:
        raise ValueError(f"no bundled example {name!r}; the examples are {', '.join(NAMES)}")
    ref = resources.files(__name__) / name
    if isinstance(ref, Path):
        return ref
    return Path(_extracted.enter_context(resources.as_file(ref)))
