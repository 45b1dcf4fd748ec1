"""Set-valued (transaction) data releases: DiffPart, its baseline Basic, and IncTDPart."""

from .basic import basic
from .diffpart import DEFAULT_C1, DEFAULT_C2, DEFAULT_FANOUT, TraceEvent, diffpart

__all__ = ["basic", "diffpart", "DEFAULT_C1", "DEFAULT_C2", "DEFAULT_FANOUT", "TraceEvent"]
