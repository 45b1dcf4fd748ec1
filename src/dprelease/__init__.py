"""dprelease: publish sensitive data under epsilon-differential privacy.

Data flows one way: read -> declare the public domain -> algorithm (mechanisms
from :mod:`dprelease.privacy`, every use charged to a budget accountant) ->
release object (data + manifest) -> writer / evaluator.

``import dprelease as dp`` gives the Python API (``dp.diffpart``, ``dp.privbasis``, ``dp.diffgen``, ``dp.rps``,
``dp.degrees``, ``dp.Ledger``, ...; docs/api.md). Its names are loaded on first use (:mod:`dprelease.api`), so
importing the package, and ``dprelease --help``, stay cheap.
"""

import sys
import types

__version__ = "0.1.0"
__all__ = ["__version__", "diffpart", "basic", "privbasis", "tf", "diffgen", "rps", "degrees", "Release", "Ledger",
           "Stream", "evaluate", "report", "schema_from_dtypes", "InputError", "ParameterError",
           "BudgetExceededError", "PrivacyLeakWarning", "ReleaseWarning"]


def __getattr__(name: str) -> object:  # no typing import: ``import dprelease`` stays as cheap as before
    """The API's names, imported when first asked for (a submodule such as ``dprelease.cli`` is not one)."""
    if name in __all__ and name != "__version__":
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module 'dprelease' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


class _ReportPackage(types.ModuleType):
    """The package :mod:`dprelease.report`, callable as the API's ``report`` function.

    ``dp.report(raw, release, path)`` is the API's function; but once the package ``dprelease.report`` is imported
    (the function itself imports it), Python binds the name ``report`` of ``dprelease`` to that package, which
    would shadow the function. Calling the package calls the function, so ``dp.report(...)`` means the same
    whichever object the name holds."""

    def __call__(self, *args: object, **kwargs: object) -> object:
        from .api.evaluate import report

        return report(*args, **kwargs)  # type: ignore[arg-type]


class _Package(types.ModuleType):
    def __setattr__(self, name: str, value: object) -> None:
        if name == "report" and type(value) is types.ModuleType:
            value.__class__ = _ReportPackage
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
