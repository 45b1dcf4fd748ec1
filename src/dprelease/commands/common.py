"""Shared pieces of the command line: common options, argument types, output checks, reading input, reporting."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections.abc import Callable, Iterable
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

# the smallest budget, the seed range and the method vocabulary are the Python API's (one definition)
from ..api._core import FAITHFUL, MAX_SEED, MIN_EPSILON, RECOMMENDED, Reporter, resolve_renamed_method
from ..limits import DEFAULT_MAX_MEMORY, DEFAULT_MAX_OUTPUT_RECORDS, format_size, parse_size

if TYPE_CHECKING:  # the algorithms' modules are imported when a command runs, not to build its parser
    from ..data.transactions import TransactionDB
    from ..data.universe import Universe
    from ..privacy import NoiseSource

__all__ = [
    "add_epsilon", "add_seed", "add_universe", "check_universe_declared", "derives_universe", "add_engine", "add_quiet", "add_output", "add_force", "add_limits",
    "epsilon_arg", "positive_int", "nonneg_int", "positive_float", "seed_arg", "float_list", "int_list",
    "choice_list", "load_transactions", "noise_from_args", "say", "warn", "print_json", "timed", "add_method", "method_arg",
    "prepare_output", "report_written", "cli_reporter", "resolve_renamed_method", "Reporter", "MIN_EPSILON", "MAX_SEED", "LEDGER_ENV", "LedgerCost", "add_ledger",
    "release_cost", "run_charged", "command_name", "RECOMMENDED", "FAITHFUL",
]



# --- argument types (argparse turns ArgumentTypeError into one usage line, exit 2) -----------------------


def epsilon_arg(text: str) -> float:
    """argparse type for a privacy budget: a finite number >= MIN_EPSILON."""
    from ..privacy import check_epsilon

    try:
        value = check_epsilon(text)
    except Exception as exc:  # noqa: BLE001 - argparse turns this into a usage error (exit 2)
        raise argparse.ArgumentTypeError(str(exc).replace("--epsilon ", "", 1)) from None
    if value < MIN_EPSILON:
        raise argparse.ArgumentTypeError(
            f"must be at least {MIN_EPSILON:g} (smaller budgets make noise scales beyond the range of "
            f"64-bit counts), got {text!r}")
    return value


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a whole number > 0, got {value}")
    return value


def nonneg_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, got {value}")
    return value


def seed_arg(text: str) -> int:
    """A seed: a whole number in 0 .. 2^63 - 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if not (0 <= value <= MAX_SEED):
        raise argparse.ArgumentTypeError(f"expected a whole number in 0 .. 2^63 - 1, got {value}")
    return value


def share_or_auto(text: str) -> float | str:
    """A budget share in [0, 1), or "auto" (the algorithm decides from a noisy statistic it pays for)."""
    return "auto" if text.strip().lower() == "auto" else share_or_zero(text)


def share_or_zero(text: str) -> float:
    """A budget share in [0, 1) (0: the step it pays for is skipped)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1), got {text!r}") from None
    if not (0.0 <= value < 1.0):
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1), got {text!r}")
    return value


def positive_float(text: str, *, minimum: float = 0.0, inclusive: bool = False) -> float:
    """A finite number > minimum (>= with ``inclusive``); nan, inf and words are refused."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    ok = value >= minimum if inclusive else value > minimum
    if not (math.isfinite(value) and ok):
        rel = ">=" if inclusive else ">"
        raise argparse.ArgumentTypeError(f"expected a finite number {rel} {minimum:g}, got {text!r}")
    return value


def at_least_one(text: str) -> float:
    return positive_float(text, minimum=1.0, inclusive=True)


def size_arg(text: str) -> int:
    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _split(text: str) -> list[str]:
    parts = [p.strip() for p in str(text).split(",")]
    if not parts or any(not p for p in parts):
        raise argparse.ArgumentTypeError(f"expected a comma-separated list without empty entries, got {text!r}")
    return parts


def float_list(text: str) -> tuple[float, ...]:
    """Comma-separated finite numbers > 0 (budgets, epsilons)."""
    out = []
    for p in _split(text):
        try:
            v = float(p)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from None
        if not (math.isfinite(v) and v > 0):
            raise argparse.ArgumentTypeError(f"expected comma-separated finite numbers > 0, got {p!r}")
        out.append(v)
    return tuple(out)


def epsilon_list(text: str) -> tuple[float, ...]:
    values = float_list(text)
    for v in values:
        epsilon_arg(repr(v))
    return values


def int_list(text: str) -> tuple[int, ...]:
    """Comma-separated whole numbers > 0."""
    out = []
    for p in _split(text):
        try:
            v = int(p)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected comma-separated whole numbers, got {text!r}") from None
        if v <= 0:
            raise argparse.ArgumentTypeError(f"expected comma-separated whole numbers > 0, got {p!r}")
        out.append(v)
    return tuple(out)


def choice_list(choices: Iterable[str]) -> Callable[[str], tuple[str, ...]]:
    """argparse type: a comma-separated subset of ``choices`` (unknown names refused at parse time)."""
    allowed = tuple(choices)

    def parse(text: str) -> tuple[str, ...]:
        parts = _split(text)
        bad = [p for p in parts if p not in allowed]
        if bad:
            raise argparse.ArgumentTypeError(f"unknown {', '.join(repr(b) for b in bad)}; choose from {', '.join(allowed)}")
        return tuple(parts)

    return parse


# --- options every command shares ------------------------------------------------------------------------


def add_epsilon(p: argparse.ArgumentParser, required: bool = True, help_text: str | None = None) -> None:
    p.add_argument("--epsilon", "-e", type=epsilon_arg, required=required, metavar="E",
                   help=help_text or "total privacy budget epsilon of this release (required; "
                                     f"a number >= {MIN_EPSILON:g}; above 100 it is barely private and is warned about)")


def add_seed(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seed", type=seed_arg, default=None, metavar="S",
                   help="experiment mode: seeded, reproducible, NOT for publication (recorded in the manifest); "
                        "default: the secure RNG")


class _UniverseAction(argparse.Action):
    """``--universe SPEC``: a range or a file; ``--universe derive`` is the opt-in to derive it from the data
    (``args.universe`` stays None and ``args.derive_universe`` is set)."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:  # type: ignore[override]
        text = str(values)
        if text.strip() == "derive":
            namespace.universe = None
            namespace.derive_universe = True
        else:
            namespace.universe = text
            namespace.derive_universe = False


def add_universe(p: argparse.ArgumentParser, help_text: str | None = None, *, required: bool = True) -> None:
    """``--universe``. ``required``: a command that publishes refuses to run without it (``--universe derive``
    is the explicit opt-in to derive it, checked by :func:`check_universe_declared` before anything is read);
    otherwise (custodian-side commands that publish nothing: stats, evaluate, experiments) an omitted universe
    is derived from the raw data with a note on stderr."""
    if help_text is None:
        help_text = ("the public item universe: LO..HI (integers, e.g. 1..17 or -3..17) or a file with one item "
                     "per line; or `derive` to derive it from the data (reveals which items occur: warned about "
                     "and recorded in the manifest)")
        help_text += " (required)" if required else (". Default: derived from the raw data (this command "
                                                     "publishes nothing)")
    p.add_argument("--universe", action=_UniverseAction, metavar="SPEC", default=None, help=help_text)
    p.set_defaults(derive_universe=False, universe_required=required)


def check_universe_declared(args: argparse.Namespace) -> None:
    """A command that publishes needs ``--universe SPEC`` or the explicit ``--universe derive``."""
    from ..data.universe import UNDECLARED
    from ..errors import ParameterError

    if getattr(args, "universe_required", False) and getattr(args, "universe", None) is None \
            and not getattr(args, "derive_universe", False):
        raise ParameterError(UNDECLARED)


def derives_universe(args: argparse.Namespace | None) -> bool:
    """Whether an omitted universe is derived (:func:`dprelease.api.inputs.derives_universe`)."""
    from ..api.inputs import derives_universe as derives

    return derives(args)


ENGINE_CHOICES = ("local", "spark")  # dprelease.engine.ENGINES (not imported here: the parser stays light)


def add_engine(p: argparse.ArgumentParser) -> None:
    """``--engine`` and ``--spark-master`` (the data passes on this machine or on Spark)."""
    p.add_argument("--engine", choices=ENGINE_CHOICES, default="local",
                   help="where the data passes run: local (numpy, in memory) or spark (pyspark DataFrames; "
                        "pip install 'dprelease[spark]'; needs a declared universe/schema; noise is always drawn "
                        "here, on the driver) (default local)")
    p.add_argument("--spark-master", default="local[*]", metavar="URL",
                   help="Spark master for --engine spark: local[N], spark://HOST:7077, yarn, k8s://... "
                        "(default local[*]; under spark-submit, its --master wins)")


# The method vocabulary of every releasing command (RECOMMENDED, FAITHFUL above): ``--method faithful`` is the
# paper's algorithm (for reproduction); ``--method recommended`` names the default, the project's best epsilon-DP
# method for that kind of release. A command may offer more names (its own algorithms, baselines).


def method_arg(choices: Iterable[str], renamed: dict[str, tuple[str | None, str]] | None = None
               ) -> Callable[[str], str]:
    """argparse type of ``--method``: one of ``choices``; a name that left the command line maps to its
    replacement with a one-line note on stderr (``renamed[name] = (value, note)``), or is refused with the note
    when it has no exact replacement (``value`` None)."""
    allowed = tuple(choices)
    renamed = dict(renamed or {})

    def parse(text: str) -> str:
        if text in allowed:
            return text
        if text in renamed:
            value, note = renamed[text]
            if value is None:
                raise argparse.ArgumentTypeError(note)
            print(f"note: --method {text}: {note}", file=sys.stderr)
            return value
        raise argparse.ArgumentTypeError(f"invalid choice: {text!r} (choose from {', '.join(allowed)})")

    return parse


def add_method(p: argparse.ArgumentParser, choices: Iterable[str], help_text: str, *, default: str | None = RECOMMENDED,
               renamed: dict[str, tuple[str | None, str]] | None = None) -> None:
    """``--method`` with the shared vocabulary (``recommended``, ``faithful``) and the command's own names."""
    allowed = tuple(choices)
    p.add_argument("--method", type=method_arg(allowed, renamed), default=default,
                   metavar="{" + ",".join(allowed) + "}", help=help_text)


class RenamedFlag(argparse.Action):
    """A flag that left the command line for ``--method NAME``: it still works, with a one-line note naming its
    replacement; it sets ``renamed_method`` (checked against an explicit ``--method`` by the command)."""

    def __init__(self, option_strings: list[str], dest: str, method: str = FAITHFUL, **kwargs: object) -> None:
        self.method = method
        super().__init__(option_strings, dest, nargs=0, **kwargs)  # type: ignore[arg-type]

    def __call__(self, parser, namespace, values, option_string=None) -> None:  # type: ignore[override]
        print(f"note: {option_string} is now --method {self.method}", file=sys.stderr)
        namespace.renamed_method = (self.method, option_string)


def add_quiet(p: argparse.ArgumentParser) -> None:
    p.add_argument("--quiet", "-q", action="store_true",
                   help="no progress or timing on stderr (warnings are still printed); default: off")


def add_output(p: argparse.ArgumentParser, help_text: str | None = None) -> None:
    p.add_argument("-o", "--output", required=True, metavar="OUTPUT",
                   help=help_text or "release file (required); its manifest goes to OUTPUT.manifest.json. "
                                     "An existing file or manifest is replaced only with --force; the folder must exist")
    add_force(p)


def add_force(p: argparse.ArgumentParser) -> None:
    p.add_argument("--force", action="store_true",
                   help="replace an existing output file; default: off (an existing output is refused). "
                        "An input file is never overwritten")


def add_limits(p: argparse.ArgumentParser) -> None:
    p.add_argument("--max-output-records", type=positive_int, default=None, metavar="N",
                   help="refuse a run expected to write more records than this, estimated from public "
                        f"parameters before reading the data (default {DEFAULT_MAX_OUTPUT_RECORDS:,})")
    p.add_argument("--max-memory", type=size_arg, default=None, metavar="SIZE",
                   help=f"refuse a run expected to need more memory than this, e.g. 8G or 500M "
                        f"(default {format_size(DEFAULT_MAX_MEMORY)})")


# --- reporting -------------------------------------------------------------------------------------------


def say(args: argparse.Namespace, message: str) -> None:
    """Progress/timing for the custodian on stderr (silenced by --quiet)."""
    if not getattr(args, "quiet", False):
        from .. import progress

        progress.pause()
        print(message, file=sys.stderr, flush=True)


def warn(message: str) -> None:
    """A warning on stderr (never silenced: it is about the release)."""
    from .. import progress

    progress.pause()
    print(f"warning: {message}", file=sys.stderr, flush=True)


def print_json(obj: object) -> None:
    print(json.dumps(obj, indent=None, sort_keys=False, allow_nan=False))


def noise_from_args(args: argparse.Namespace) -> NoiseSource:
    from ..privacy import make_noise

    return make_noise(getattr(args, "seed", None))


def prepare_output(args: argparse.Namespace, output: str | os.PathLike, *, inputs: Iterable[object] = (),
                   companions: Iterable[str | os.PathLike] = (), may_replace: Callable[[Path], bool] | None = None,
                   option: str = "-o", make_parents: bool = False) -> Path:
    """Check ``output`` before any work (and before any ledger reservation), with ``--force`` from ``args``:
    :func:`dprelease.api._core.check_output`, which the Python API's ``write`` runs too."""
    from ..api._core import check_output

    return check_output(output, force=bool(getattr(args, "force", False)), inputs=inputs, companions=companions,
                        may_replace=may_replace, option=option, make_parents=make_parents)


def universe_inputs(spec: str | None) -> list[str]:
    """The universe file among a command's inputs (a range is not a file)."""
    if spec and Path(spec).is_file():
        return [spec]
    return []


def load_transactions(path: str, universe_spec: str | None, args: argparse.Namespace | None = None
                      ) -> tuple[TransactionDB, Universe]:
    """Read a transaction file against a declared universe, on the engine ``args`` name (``--engine``); derive the
    universe only when ``args`` allow it (:func:`derives_universe`): with the leak warning on stderr for a command
    that publishes, with a note (silenced by --quiet) for one that does not. The Python API reads a path with
    the same function (:func:`dprelease.api.inputs.load_transactions`)."""
    from ..api.inputs import load_transactions as load

    return load(path, universe_spec, args, Reporter(warn=warn),
                say=(lambda m: say(args, m)) if args is not None else None)


def cli_reporter(args: argparse.Namespace) -> Reporter:
    """Warnings on stderr (never silenced), timings on stderr (silenced by --quiet), as every command says them."""
    return Reporter(warn=warn, timed=lambda what: timed(args, what),
                    note=lambda message: print(message, file=sys.stderr))


@contextmanager
def timed(args: argparse.Namespace, what: str):
    """Report wall time on stderr only (it depends on the data, so it never goes in a manifest); a step longer
    than a few seconds shows a progress bar meanwhile (:mod:`dprelease.progress`: terminals, not --quiet)."""
    from .. import progress

    start = time.perf_counter()
    with progress.phase(what):
        yield
    say(args, f"{what}: {time.perf_counter() - start:.2f} s")


def report_written(args: argparse.Namespace, release_path: Path, manifest: Path) -> None:
    print(f"release: {release_path}")
    print(f"manifest: {manifest}")


def report_release_size(args: argparse.Namespace, what: str, size: int, unit: str, requested: int | None = None
                        ) -> str | None:
    """Say an empty or short release on stderr (its size is public: it is the release). Returns the note."""
    from ..release import release_size_note

    note = release_size_note(what, size, unit, requested)
    if note:
        warn(note)
    return note


# --- the budget ledger (dprelease.ledger) -----------------------------------------------------------------

LEDGER_ENV = "DPRELEASE_LEDGER"


@dataclass(frozen=True, slots=True)
class LedgerCost:
    """What a releasing command will charge, declared from its parsed arguments (public inputs only)."""

    epsilon: float  # 0 for a release another charge already paid for (``covered_by``)
    output: str  # recorded in the ledger with the charge
    covered_by: int | None = None
    ledger: str | None = None  # the ledger an input names (a stream state), used when none is configured
    ledger_id: str | None = None  # the ledger must be this one


# cost(args, ledger) -> LedgerCost, or None when nothing is charged (no ledger configured). It runs before the
# reservation and may refuse (ParameterError/InputError) on public grounds: a refusal there spends nothing.
CostFunction = Callable[[argparse.Namespace, "str | None"], "LedgerCost | None"]


def add_ledger(p: argparse.ArgumentParser, cost: CostFunction, help_text: str | None = None) -> None:
    """``--ledger LEDGER`` for a command that releases under DP; ``cost`` declares its charge. The CLI
    (:func:`run_charged`) reserves it before the handler runs and marks it complete when the handler returns 0."""
    p.add_argument("--ledger", metavar="LEDGER", default=None,
                   help=help_text or "the dataset's privacy-budget ledger (made by `dprelease ledger init`): this "
                                     "release's epsilon is reserved there before the data is read, and refused "
                                     f"when too little remains. Default: ${LEDGER_ENV} when set, else no ledger")
    p.set_defaults(ledger_cost=cost)


def release_cost(inputs: Callable[[argparse.Namespace], Iterable[object]], *,
                 companions: Callable[[argparse.Namespace], Iterable[str | os.PathLike]] | None = None,
                 checks: Callable[[argparse.Namespace], None] | None = None, output: str = "output") -> CostFunction:
    """The cost of an ordinary release: ``args.epsilon`` to ``args.OUTPUT``. Before anything is reserved it runs
    the command's public checks, so that a refusal for a bad output, a missing input or a bound on the work
    does not leave a charge behind: the output check (:func:`prepare_output`), that every input exists, the
    declared universe, and ``checks(args)`` (e.g. the command's work bounds). The handler repeats them."""

    def cost(args: argparse.Namespace, ledger: str | None) -> LedgerCost | None:
        if ledger is None:
            return None
        files = [str(f) for f in inputs(args) if f]
        out = getattr(args, output)
        prepare_output(args, out, inputs=files, companions=list(companions(args)) if companions else [])
        for f in files:
            if not Path(f).exists():
                from ..errors import InputError

                raise InputError(f"{f}: no such file")
        if getattr(args, "universe", None):
            from ..data.universe import parse_universe_spec

            parse_universe_spec(args.universe)
        if checks is not None:
            checks(args)
        return LedgerCost(epsilon=float(args.epsilon), output=str(out))

    return cost


def command_name(args: argparse.Namespace) -> str:
    """The full command: ``diffpart``, ``stream init``, ``experiment diffgen-classification``."""
    return " ".join(str(x) for x in (args.command, getattr(args, "kind", None), getattr(args, "stream_command", None))
                    if x)


def configured_ledger(args: argparse.Namespace) -> str | None:
    """``--ledger``, else ``$DPRELEASE_LEDGER`` (an empty value is unset), else None."""
    return getattr(args, "ledger", None) or os.environ.get(LEDGER_ENV) or None


def run_charged(args: argparse.Namespace) -> int:
    """Run the command's handler; a releasing command (``ledger_cost``) with a ledger reserves its epsilon first.

    Order: public checks (the cost function) -> reservation, committed (refused: exit 2, nothing read or
    written) -> the handler reads the data and writes the release -> on exit code 0 the charge is marked
    complete with its output. If the handler fails or the process dies in between, the reservation stays:
    counted, and shown as incomplete by ``dprelease ledger status`` (the data may have been read)."""
    from .. import ledger as ledger_mod
    from ..release import run_start

    check_universe_declared(args)  # before anything is reserved, written or read
    cost_fn = getattr(args, "ledger_cost", None)
    if cost_fn is None:
        return int(args.handler(args) or 0)
    configured = configured_ledger(args)
    cost = cost_fn(args, configured)
    if cost is None:
        return int(args.handler(args) or 0)
    path = configured or cost.ledger
    assert path is not None
    out = Path(cost.output).resolve()
    if out in {Path(f"{path}{suffix}").resolve() for suffix in ("", "-wal", "-shm", "-journal")}:
        from ..errors import ParameterError

        raise ParameterError(f"-o {cost.output} is the ledger {path}: a release never replaces its ledger")
    name = command_name(args)
    charge = ledger_mod.reserve(path, name, cost.epsilon, output=str(out),
                                created=run_start().isoformat(), covered_by=cost.covered_by, ledger_id=cost.ledger_id)
    args.ledger_charge = (path, charge)
    what = (f"covered by charge #{cost.covered_by}" if cost.covered_by is not None
            else f"epsilon {ledger_mod.decimal_text(charge.epsilon)} reserved")
    say(args, f"ledger {path}: {what} (charge #{charge.id})")
    code = int(args.handler(args) or 0)
    if code == 0:
        try:
            ledger_mod.complete(path, charge.id)
        except Exception as exc:  # noqa: BLE001 - the release is written; say why the ledger could not be updated
            from ..errors import InputError

            raise InputError(f"the release is written, but ledger {path} could not mark charge #{charge.id} complete "
                             f"({exc}); it stays counted and is shown as incomplete") from None
    return code
