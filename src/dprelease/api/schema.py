"""``dp.schema_from_dtypes``: a table schema's skeleton from a DataFrame's column *types* only.

The domain of a table release is public and declared: numeric bounds and the category sets (taxonomies) come
from the custodian, never from the values, which are private. This helper only saves typing: it names every
column and its kind from the dtypes, and takes the bounds and taxonomies the caller declares. A column left
undeclared is refused, unless ``derive=True``: then its bounds or categories are read from the data, with the
same :class:`~dprelease.errors.PrivacyLeakWarning` as a derived universe and a note in the schema (``derived``)
that the release's manifest records.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from typing import Any

from ..errors import ParameterError, PrivacyLeakWarning

__all__ = ["schema_from_dtypes", "DERIVED_SCHEMA_WARNING"]

DERIVED_SCHEMA_WARNING = ("schema_from_dtypes(derive=True): bounds or category sets were derived from the data, "
                          "which reveals the values that occur (their range, every category); declare them "
                          "(bounds=, taxonomies=) for a release that is differentially private")


def _derived_bounds(values: Any) -> list[float]:
    import numpy as np

    v = np.asarray(values, dtype=np.float64)
    lo, hi = float(np.nanmin(v)), float(np.nanmax(v))
    return [math.floor(lo), math.floor(hi) + 1]  # half-open [lo, hi)


def _tree(name: str, taxonomy: object) -> object:
    """A flat list of values is a taxonomy of one level under ``ANY_<name>``; a nested tree is kept."""
    if isinstance(taxonomy, (list, tuple)):
        return {f"ANY_{name}": [str(v) for v in taxonomy]}
    return taxonomy


def schema_from_dtypes(df: Any, *, target: str, bounds: Mapping[str, tuple[float, float]] | None = None,
                       taxonomies: Mapping[str, object] | None = None, classes: list[str] | None = None,
                       derive: bool = False, drop: list[str] | None = None) -> dict[str, Any]:
    """A schema dict for ``df`` (pass it as ``schema=``): numeric columns need ``bounds[name] = (lo, hi)``
    (half-open), other columns ``taxonomies[name]`` (a list of values or a nested taxonomy), the class column
    ``target`` its ``classes``. Missing declarations raise :class:`~dprelease.errors.ParameterError` naming them,
    unless ``derive=True`` (warned about, and recorded in the schema's ``derived`` list)."""
    import pandas as pd

    bounds, taxonomies, drop = dict(bounds or {}), dict(taxonomies or {}), list(drop or [])
    if target not in df.columns:
        raise ParameterError(f"target: {target!r} is not a column of the DataFrame")
    attributes: list[dict[str, Any]] = []
    missing: list[str] = []
    derived: list[str] = []
    for name in df.columns:
        if name == target or name in drop:
            continue
        column = df[name]
        if pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column):
            spec: dict[str, Any] = {"name": str(name), "type": "numeric"}
            if pd.api.types.is_integer_dtype(column):
                spec["integer"] = True
            if name in bounds:
                spec["bounds"] = [float(b) for b in bounds[name]]
            elif derive:
                spec["bounds"] = _derived_bounds(column)
                derived.append(str(name))
            else:
                missing.append(f"bounds[{name!r}]")
                continue
        else:
            spec = {"name": str(name), "type": "categorical"}
            if name in taxonomies:
                spec["taxonomy"] = _tree(str(name), taxonomies[name])
            elif derive:
                spec["taxonomy"] = _tree(str(name), sorted(map(str, column.dropna().unique())))
                derived.append(str(name))
            else:
                missing.append(f"taxonomies[{name!r}]")
                continue
        attributes.append(spec)
    if classes is None:
        if derive:
            classes = sorted(map(str, df[target].dropna().unique()))
            derived.append(str(target))
        else:
            missing.append("classes")
    if missing:
        raise ParameterError(f"schema_from_dtypes: declare {', '.join(missing)} (public domains come from the "
                             f"custodian, not from the values; derive=True reads them from the data and says so)")
    if derived:
        warnings.warn(DERIVED_SCHEMA_WARNING, PrivacyLeakWarning, stacklevel=2)
    schema: dict[str, Any] = {"attributes": attributes, "class": {"name": str(target), "values": list(classes or [])}}
    if drop:
        schema["drop"] = drop
    if derived:
        schema["name"] = f"derived from the data: {', '.join(derived)}"
    return schema
