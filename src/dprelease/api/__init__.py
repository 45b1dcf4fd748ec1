"""The Python surface of dprelease: ``import dprelease as dp``.

Each releasing function runs the code the matching command runs (the same checks, work bounds, ledger
reservation before the data is read, and manifests): the command line parses its arguments and calls the same
function of this package. The names are loaded on first use, so importing the package stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["diffpart", "basic", "privbasis", "tf", "diffgen", "rps", "degrees", "Release", "Ledger", "Stream",
           "evaluate", "report", "schema_from_dtypes", "InputError", "ParameterError", "BudgetExceededError",
           "PrivacyLeakWarning", "ReleaseWarning"]

# public name -> (module of this package, attribute)
EXPORTS: dict[str, tuple[str, str]] = {
    "diffpart": ("setvalued", "diffpart"), "basic": ("setvalued", "basic"),
    "privbasis": ("itemsets", "privbasis"), "tf": ("itemsets", "tf"),
    "diffgen": ("tables", "diffgen"), "rps": ("tables", "rps"), "degrees": ("graphs", "degrees"),
    "Release": ("results", "Release"), "Ledger": ("ledger", "Ledger"), "Stream": ("stream", "Stream"),
    "evaluate": ("evaluate", "namespace"), "report": ("evaluate", "report"),
    "schema_from_dtypes": ("schema", "schema_from_dtypes"), "ReleaseWarning": ("_core", "ReleaseWarning"),
}
_ERRORS = ("InputError", "ParameterError", "BudgetExceededError", "PrivacyLeakWarning")


def __getattr__(name: str) -> Any:
    if name in _ERRORS:
        from .. import errors

        return getattr(errors, name)
    if name not in EXPORTS:
        raise AttributeError(f"module 'dprelease.api' has no attribute {name!r}")
    module, attribute = EXPORTS[name]
    return getattr(importlib.import_module(f"{__name__}.{module}"), attribute)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
