"""Progress on stderr for the long passes of a command: reading the input, counting passes, algorithm steps.

A pass reports what it has done (:func:`advance`: bytes read, records counted) to the *phase* it runs in (the
CLI opens one per step it times: "read", "diffpart (prefix)", "evaluate counting", ...). A phase shows one
tqdm bar on stderr, and only where a person is watching, as tqdm users expect: when stderr is a terminal and
``--quiet`` is not given (:func:`session`). The bar appears after :data:`DELAY` seconds, so short steps print
nothing, is redrawn at most every :data:`MIN_INTERVAL` seconds and is erased when the phase ends (the step's
time is then said by the command, as before). Nothing goes to stdout, to a release or to a manifest: what
is counted (bytes, records) and how fast is the custodian's business, like timing. In the API, outside a
session, every call here is a no-op.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

__all__ = ["session", "phase", "advance", "pause", "enabled", "DELAY", "MIN_INTERVAL"]

DELAY = 2.0  # seconds before a phase's bar appears: steps shorter than this print nothing
MIN_INTERVAL = 0.5  # seconds between redraws

_ENABLED: ContextVar[bool] = ContextVar("dprelease_progress", default=False)
_PHASE: ContextVar["_Phase | None"] = ContextVar("dprelease_progress_phase", default=None)


def _stderr_is_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def enabled() -> bool:
    return _ENABLED.get()


@contextmanager
def session(quiet: bool) -> Iterator[bool]:
    """Progress for one command run: on when stderr is a terminal and not ``quiet``."""
    token = _ENABLED.set(not quiet and _stderr_is_terminal())
    try:
        yield _ENABLED.get()
    finally:
        _ENABLED.reset(token)


class _Phase:
    def __init__(self, desc: str):
        self.desc = desc
        self.bar: Any = None
        self.unit = ""

    def advance(self, n: int, unit: str, total: int | None) -> None:
        if self.bar is None or self.unit != unit:
            self.close()
            from tqdm import tqdm

            self.unit = unit
            label = unit if unit == "B" else f" {unit}"  # "84.2MB", "1.20M records"
            self.bar = tqdm(desc=self.desc, total=total, unit=label, unit_scale=True,
                            unit_divisor=1024 if unit == "B" else 1000, file=sys.stderr, delay=DELAY,
                            mininterval=MIN_INTERVAL, leave=False, dynamic_ncols=True)
        self.bar.update(n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


@contextmanager
def phase(desc: str) -> Iterator[None]:
    """A step of a command: the passes inside it report to one bar named ``desc`` (only in a session)."""
    if not _ENABLED.get():
        yield
        return
    outer = _PHASE.get()
    if outer is not None:
        outer.close()  # one bar at a time: the step inside takes over
    current = _Phase(desc)
    token = _PHASE.set(current)
    try:
        yield
    finally:
        _PHASE.reset(token)
        current.close()


def pause() -> None:
    """Erase the running step's bar before a message is printed (it comes back with the next progress)."""
    current = _PHASE.get()
    if current is not None:
        current.close()


def advance(n: int, unit: str = "records", total: int | None = None) -> None:
    """``n`` more units done by the running pass (bytes read: ``unit="B"`` with the file size as ``total``)."""
    current = _PHASE.get()
    if current is not None and n > 0:
        current.advance(int(n), unit, total)
