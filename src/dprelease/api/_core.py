"""What every release shares, on the command line and in Python: options, messages, the run, the ledger charge.

A releasing function of this package takes its options as one namespace (the command line's parsed arguments,
or the one :func:`options` builds from keyword arguments with the same names and defaults), a way to read the
data, and a :class:`Reporter` (stderr for the command line, :mod:`warnings` in Python). Only light modules are
imported at the top: ``dprelease --help`` imports this module to build its parsers.
"""

from __future__ import annotations

import argparse
import math
import os
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ContextManager, TypeVar

from ..errors import ParameterError

__all__ = ["Reporter", "python_reporter", "options", "check_seed", "check_epsilon_value", "resolve_renamed_method",
           "charged", "api_run", "check_output", "check_inputs_exist", "check_positive", "check_method", "ReleaseWarning", "MIN_EPSILON", "MAX_SEED", "RECOMMENDED", "FAITHFUL"]

# Below this budget the noise scales (sensitivity / epsilon, and DiffPart's alpha = epsilon / 2 / |internal
# nodes|) leave the range that 64-bit noisy counts can hold.
MIN_EPSILON = 1e-12
MAX_SEED = 2**63 - 1  # seeds are stored as SQLite INTEGERs (stream state)

# The method vocabulary of every releasing command: ``faithful`` is the paper's algorithm (for reproduction);
# ``recommended`` names the default, the project's best epsilon-DP method for that kind of release.
RECOMMENDED = "recommended"
FAITHFUL = "faithful"

T = TypeVar("T")


class ReleaseWarning(UserWarning):
    """A note about a release (empty or short, a parameter past its useful range); the manifest has it too."""


@dataclass(frozen=True)
class Reporter:
    """Where a release's warnings and timings go: stderr on the command line, :mod:`warnings` in Python."""

    warn: Callable[[str], None]
    timed: Callable[[str], ContextManager[object]] = field(default=lambda _what: nullcontext())
    leak: Callable[[str], None] | None = None  # a derived domain's warning (default: ``warn``)
    note: Callable[[str], None] | None = None  # a public fact said on every run (default: not said)

    def leaked(self, message: str) -> None:
        (self.leak or self.warn)(message)

    def noted(self, message: str) -> None:
        if self.note is not None:
            self.note(message)


def _python_warn(message: str) -> None:
    warnings.warn(message, ReleaseWarning, stacklevel=5)


def _python_leak(message: str) -> None:
    from ..errors import PrivacyLeakWarning

    warnings.warn(message, PrivacyLeakWarning, stacklevel=5)


python_reporter = Reporter(warn=_python_warn, leak=_python_leak)


def options(command: str, defaults: Mapping[str, object], params: Mapping[str, object],
            **given: object) -> argparse.Namespace:
    """The namespace a command's handler reads, from the Python keywords ``params`` (the option names of the
    command line with ``_`` for ``-``) over the command's ``defaults``; an unknown keyword is refused."""
    unknown = sorted(set(params) - set(defaults))
    if unknown:
        raise ParameterError(f"{command}: unknown parameter(s) {', '.join(unknown)}; known: "
                             f"{', '.join(sorted(defaults))}")
    values: dict[str, Any] = {"quiet": True, "engine": "local", "spark_master": None, "force": False,
                              **defaults, **params, **given}
    values["command"] = command
    return argparse.Namespace(**values)


def check_epsilon_value(epsilon: object, name: str = "--epsilon") -> float:
    """epsilon as the command line accepts it: a finite number >= MIN_EPSILON."""
    from ..privacy import check_epsilon

    value = check_epsilon(epsilon, name)  # type: ignore[arg-type]
    if value < MIN_EPSILON:
        raise ParameterError(f"{name} must be at least {MIN_EPSILON:g} (smaller budgets make noise scales beyond "
                             f"the range of 64-bit counts), got {epsilon!r}")
    return value


def check_seed(seed: object) -> int | None:
    """A seed (experiment mode) is a whole number in 0 .. 2^63 - 1; None is the secure RNG."""
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, int) or not (0 <= seed <= MAX_SEED):
        raise ParameterError(f"--seed: expected a whole number in 0 .. 2^63 - 1, got {seed!r}")
    return int(seed)


def check_positive(name: str, value: object, *, integer: bool = False, minimum: float = 0.0) -> None:
    """A numeric option of the command line checked as its argparse type would (a finite number > minimum)."""
    if value is None:
        return
    flag = "--" + name.replace("_", "-")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (integer and not isinstance(value, int)):
        raise ParameterError(f"{flag}: expected {'a whole number' if integer else 'a number'}, got {value!r}")
    if not (math.isfinite(value) and value > minimum):
        raise ParameterError(f"{flag}: expected a finite number > {minimum:g}, got {value!r}")


def resolve_renamed_method(args: argparse.Namespace, default: str = RECOMMENDED) -> str:
    """``--method``, or the method a renamed flag asked for; both given and different is an error."""
    method, option = getattr(args, "renamed_method", None) or (None, None)
    if method is not None and args.method is not None and args.method != method:
        raise ParameterError(f"--method {args.method} and {option} (= --method {method}) do not go together; "
                             f"give one --method")
    return str(args.method or method or default)


def check_method(command: str, method: object, allowed: tuple[str, ...]) -> None:
    if method is not None and method not in allowed:
        raise ParameterError(f"{command}: --method must be one of {', '.join(allowed)}, got {method!r}")


@contextmanager
def api_run(epsilon: float | None, max_output_records: int | None = None,
            max_memory: int | str | None = None) -> Iterator[None]:
    """A Python release runs as one command does: its start time marks the manifest, the work bounds apply
    (``max_output_records``/``max_memory`` as the command line's options), epsilon above the sane range warns."""
    from ..limits import limits_set, parse_size
    from ..release import epsilon_notes, run_started

    memory = parse_size(max_memory) if isinstance(max_memory, str) else max_memory
    with run_started(), limits_set(max_output_records, memory):
        for note in epsilon_notes(epsilon):
            python_reporter.warn(note)
        yield


def charged(ledger: str | os.PathLike[str] | None, command: str, epsilon: float, run: Callable[[], T], *,
            output: str = "", checks: Callable[[], object] | None = None) -> T:
    """Run ``run`` under a ledger charge, as the command line's ``--ledger`` does: the public ``checks`` first
    (a refusal there reserves nothing), then ``epsilon`` reserved in one committed transaction (refused when too
    little remains: nothing is read), then the release; the charge is marked complete with what the release's
    accountant admitted. If the release fails, the reservation stays, counted and shown as incomplete."""
    if checks is not None:
        checks()
    if ledger is None:
        return run()
    from .. import ledger as ledger_mod
    from ..release import run_start

    path = os.fspath(ledger)
    where = output or f"(python: dprelease.{command}, not written)"
    charge = ledger_mod.reserve(path, command, epsilon, output=where, created=run_start().isoformat())
    result = run()
    manifest = getattr(result, "manifest", None)
    privacy = manifest.get("privacy") if isinstance(manifest, dict) else None
    spent = privacy.get("epsilon_spent") if isinstance(privacy, dict) else None
    spent_value = float(spent) if isinstance(spent, (int, float)) and math.isfinite(spent) and spent > 0 else None
    ledger_mod.complete(path, charge.id, spent=spent_value)
    unit = manifest.get("privacy_unit") if isinstance(manifest, dict) else None
    if unit in ledger_mod.PRIVACY_UNITS:  # as `complete` records it from a written manifest
        ledger_mod.mark_privacy_unit(path, charge.id, str(unit))
    return result


def check_output(output: str | os.PathLike[str], *, force: bool = False, inputs: Iterable[object] = (),
                 companions: Iterable[str | os.PathLike[str]] = (), may_replace: Callable[[Path], bool] | None = None,
                 option: str = "-o", make_parents: bool = False) -> Path:
    """Check ``output`` before any work (and before any ledger reservation): never an input, not ``-``, an
    existing file -- the body or its manifest or another companion -- only with ``force`` (or when
    ``may_replace`` says it is this command's own), an existing writable folder (``make_parents``: a folder the
    command owns, e.g. an experiment's --out, may be created). See :func:`dprelease.data.io.check_output_path`."""
    from ..data.io import check_output_path
    from ..release import manifest_path

    if not str(output).strip():
        raise ParameterError(f"{option}: the output file name is empty")
    out = Path(output)
    if str(output).strip() != "-" and (not out.name or out.is_dir()):
        raise ParameterError(f"{option} {out} is a directory; give a file name")
    from ..release.base import error_bar_companions  # a release's error bars may go beside it

    comp = [manifest_path(out), *error_bar_companions(out), *companions] if str(output).strip() != "-" else []
    return check_output_path(out if str(output).strip() != "-" else "-", inputs=[str(i) for i in inputs if i],
                             force=force, companions=comp, may_replace=may_replace, option=option,
                             make_parents=make_parents)


def check_inputs_exist(*paths: object) -> None:
    """Every input file exists (checked before a ledger reservation, as the command line does)."""
    for f in paths:
        if f is not None and isinstance(f, (str, os.PathLike)) and not Path(f).exists():
            from ..errors import InputError

            raise InputError(f"{os.fspath(f)}: no such file")
