"""Black-box privacy audit: run each algorithm on neighbouring datasets and bound its privacy loss.

``dprelease audit ALGORITHM`` and the tests use it. Write a case with :class:`AuditCase` and register
it with :func:`register_cases` in a module of :mod:`dprelease.audit.cases` (docs/audit.md).
Importing this package imports no algorithm: cases load their algorithm when they are built.
"""

from .core import (
    DEFAULT_ALPHA,
    DEFAULT_CANDIDATES,
    DEFAULT_EPSILON,
    DEFAULT_RUNS,
    MIN_RUNS,
    AuditCase,
    AuditResult,
    CaseResult,
    algorithms,
    audit_case,
    cases_for,
    register_cases,
    run_audit,
)
from .events import itemset_label, manifest_events, ranked_events, set_valued_events, value_events

__all__ = [
    "AuditCase",
    "AuditResult",
    "CaseResult",
    "register_cases",
    "algorithms",
    "cases_for",
    "audit_case",
    "run_audit",
    "DEFAULT_ALPHA",
    "DEFAULT_CANDIDATES",
    "DEFAULT_EPSILON",
    "DEFAULT_RUNS",
    "MIN_RUNS",
    "itemset_label",
    "set_valued_events",
    "ranked_events",
    "value_events",
    "manifest_events",
]
