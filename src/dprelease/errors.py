"""Typed errors and warnings shared by every part of dprelease."""

from __future__ import annotations

__all__ = [
    "DPReleaseError",
    "InputError",
    "ParameterError",
    "BudgetExceededError",
    "PrivacyLeakWarning",
]


class DPReleaseError(Exception):
    """Base class: every error dprelease raises on purpose derives from it.

    The CLI prints ``str(error)`` as one line and exits with code 2.
    """


class InputError(DPReleaseError, ValueError):
    """Malformed or out-of-domain input; the message names the file and line (or row/column).

    Also a :class:`ValueError`, so callers can catch what they know (a plain ``ValueError`` from inside
    dprelease that is not one of these means a bug).
    """


class ParameterError(DPReleaseError, ValueError):
    """A parameter is out of range (epsilon <= 0, fan-out < 2, sensitivity <= 0, ...); the message names it.

    Also a :class:`ValueError`.
    """


class BudgetExceededError(DPReleaseError, ValueError):
    """A spend would take the privacy loss past the declared total; raised before any noise is drawn.

    Also a :class:`ValueError`, as the other errors about what a caller asked for."""


class PrivacyLeakWarning(UserWarning):
    """Something about the release depends on the data outside a mechanism (e.g. a derived domain)."""
