"""Built-in audit cases, one module per algorithm (or family); every module here is imported by the registry.

A module registers factories with :func:`dprelease.audit.register_cases` and imports its algorithm
*inside* the factory, so importing :mod:`dprelease.audit` stays light. See docs/audit.md.
"""
