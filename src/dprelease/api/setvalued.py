"""Set-valued releases (DiffPart, Basic): the checks, work bounds and runs that ``dprelease diffpart`` and
``dprelease basic`` execute, and the Python functions :func:`diffpart` and :func:`basic` over them.

The command's handler parses its arguments, checks its output file and calls :func:`release_diffpart` (or
:func:`release_basic`) with a reader of its input file; the Python function builds the same namespace from its
keywords and calls the same function with a reader of the data in the form it was given.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .. import limits
from ..errors import ParameterError
from ._core import (
    FAITHFUL, RECOMMENDED, Reporter, api_run, charged, check_epsilon_value, check_inputs_exist, check_method,
    check_positive, check_seed, options, python_reporter,
)
from .inputs import path_of, transactions_of, universe_spec

if TYPE_CHECKING:
    from ..data.transactions import TransactionDB
    from ..data.universe import Universe
    from ..release.setvalued import SetValuedRelease
    from .results import Release

__all__ = ["diffpart", "basic", "release_diffpart", "release_basic", "check_method_options", "diffpart_checks",
           "basic_checks", "DIFFPART_OPTIONS", "BASIC_OPTIONS", "METHODS", "DEFAULT_METHOD"]

Reader = Callable[[], "tuple[TransactionDB, Universe]"]

METHODS = ("prefix", "faithful", "recommended")
DEFAULT_METHOD = "prefix"  # method "recommended": the project's best eps-DP method for set-valued data
# options of one method only (default None: "not given"); giving one with the other method is an error
_FAITHFUL_ONLY = ("fanout", "c1", "c2", "spurious_bound", "branching_bound", "no_branching_guard")
_PREFIX_ONLY = ("selection_share", "structure_share", "record_bound", "max_items", "beta", "shape_share")
# the options of `dprelease diffpart` and their defaults (tests/api check them against the parser)
DIFFPART_OPTIONS: dict[str, object] = {**{n: None for n in _FAITHFUL_ONLY + _PREFIX_ONLY},
                                       "no_branching_guard": False, "level_wise": False}


def declared_universe(args: argparse.Namespace) -> Universe | None:
    """The declared universe (public; parsed before any data is read), or None when it will be derived."""
    from ..data.universe import parse_universe_spec

    obj = getattr(args, "universe_object", None)
    if obj is not None:
        return obj  # type: ignore[no-any-return]
    return parse_universe_spec(args.universe) if args.universe else None


def _given(args: argparse.Namespace, names: tuple[str, ...]) -> list[str]:
    return ["--" + n.replace("_", "-") for n in names if getattr(args, n) not in (None, False)]


def check_method_options(args: argparse.Namespace) -> None:
    """Resolve the method: when it is not given, an option of the faithful method selects that method (so
    commands written before the prefix method existed keep their meaning); giving an option of the other
    method beside an explicit method is an error."""
    from ..setvalued.diffpart import DEFAULT_BRANCHING_BOUND, DEFAULT_C1, DEFAULT_C2, DEFAULT_FANOUT

    faithful_opts, prefix_opts = _given(args, _FAITHFUL_ONLY), _given(args, _PREFIX_ONLY)
    if args.method == "recommended":
        args.method = DEFAULT_METHOD
    if args.method is None:
        if faithful_opts and prefix_opts:
            raise ParameterError(f"{', '.join(faithful_opts)} (--method faithful) and {', '.join(prefix_opts)} "
                                 "(--method prefix) do not go together; choose one --method")
        args.method = "faithful" if faithful_opts else DEFAULT_METHOD  # the manifest names the algorithm
    other = prefix_opts if args.method == "faithful" else faithful_opts
    if other:
        wanted = "faithful" if args.method == "prefix" else "prefix"
        raise ParameterError(f"{', '.join(other)} only appl{'ies' if len(other) == 1 else 'y'} to --method {wanted}; "
                             f"this run asks for --method {args.method}")
    if args.method == "faithful":  # the faithful defaults
        for name, default in (("fanout", DEFAULT_FANOUT), ("c1", DEFAULT_C1), ("c2", DEFAULT_C2),
                              ("branching_bound", DEFAULT_BRANCHING_BOUND)):
            if getattr(args, name) is None:
                setattr(args, name, default)


def diffpart_checks(args: argparse.Namespace) -> None:
    """The public work bound of :func:`release_diffpart`, run before a ledger reservation."""
    check_method_options(args)
    declared = declared_universe(args)
    if declared is not None and args.method == "faithful":
        limits.check_diffpart(declared.size, args.fanout, args.epsilon, args.c1, args.spurious_bound)


def _range_notes(args: argparse.Namespace, n_items: int) -> list[str]:
    """Parameters past their useful range (public rules, :mod:`dprelease.limits`), for stderr and the manifest."""
    from ..setvalued.prefixpart import (
        DEFAULT_SELECTION_SHARE, DEFAULT_SHAPE_SHARE, DEFAULT_SHAPED_STRUCTURE_SHARE, DEFAULT_STRUCTURE_SHARE,
        FILL_SHAPE_SHARE,
    )

    if args.method == "faithful":
        return limits.diffpart_range_notes(n_items, args.fanout, args.epsilon, args.c1, args.c2, args.spurious_bound)
    sel = DEFAULT_SELECTION_SHARE if args.selection_share is None else args.selection_share
    shape = DEFAULT_SHAPE_SHARE if getattr(args, "shape_share", None) is None else args.shape_share
    if isinstance(shape, str):  # "auto": the shares as they are when it fills (the most it spends before the counts)
        shape = FILL_SHAPE_SHARE
    struct = args.structure_share
    if struct is None:
        struct = DEFAULT_SHAPED_STRUCTURE_SHARE if shape > 0 else DEFAULT_STRUCTURE_SHARE
    default_structure, default_shape = ((DEFAULT_SHAPED_STRUCTURE_SHARE, FILL_SHAPE_SHARE) if shape > 0
                                        else (DEFAULT_STRUCTURE_SHARE, 0.0))
    return limits.prefix_range_notes(sel, struct, DEFAULT_SELECTION_SHARE, default_structure, shape, default_shape)


def _size_note(reporter: Reporter, what: str, size: int, unit: str, requested: int | None = None) -> None:
    """An empty or short release is said (its size is public: it is the release); the manifest notes it too."""
    from ..release import release_size_note

    note = release_size_note(what, size, unit, requested)
    if note:
        reporter.warn(note)


def release_diffpart(args: argparse.Namespace, read: Reader, reporter: Reporter) -> SetValuedRelease:
    """DiffPart (by default its prefix variant) on the data ``read`` returns: method options settled, the work
    bounded from public parameters before the data is read, range notes said, then the release."""
    from ..privacy import make_noise
    from ..setvalued import diffpart
    from ..setvalued.prefixpart import fill_memory_note, prefix_diffpart

    check_method_options(args)
    faithful = args.method == "faithful"
    declared = declared_universe(args)
    if declared is not None and faithful:  # public: bound the work before reading the data
        limits.check_diffpart(declared.size, args.fanout, args.epsilon, args.c1, args.spurious_bound)
    if declared is not None:  # the algorithm records them in the manifest too
        for note in _range_notes(args, declared.size):
            reporter.warn(note)
    with reporter.timed("read"):
        db, universe = read()
    if declared is None and faithful:
        limits.check_diffpart(universe.size, args.fanout, args.epsilon, args.c1, args.spurious_bound)
    if declared is None:  # derived: its size is known now
        for note in _range_notes(args, universe.size):
            reporter.warn(note)
    noise = make_noise(args.seed)
    with reporter.timed(f"diffpart ({args.method})"):
        if faithful:
            release = diffpart(db, universe, args.epsilon, noise=noise, fanout=args.fanout, c1=args.c1, c2=args.c2,
                               spurious_bound=args.spurious_bound,
                               branching_bound=None if args.no_branching_guard else args.branching_bound,
                               progress=not args.quiet, level_wise=True if args.level_wise else None)
        else:
            kw = {k: getattr(args, k) for k in _PREFIX_ONLY if getattr(args, k) is not None}
            release = prefix_diffpart(db, universe, args.epsilon, noise=noise,
                                      level_wise=True if args.level_wise else None, **kw)
            note = fill_memory_note(release.manifest)
            if note:  # the fill did not fit --max-memory
                reporter.warn(note)
    _size_note(reporter, "diffpart", release.n_records, "records")
    return release


def basic_options() -> dict[str, object]:
    from ..setvalued.basic import DEFAULT_MAX_ITEMS

    return {"max_items": DEFAULT_MAX_ITEMS}


BASIC_OPTIONS = ("max_items",)


def basic_checks(args: argparse.Namespace) -> None:
    """The public checks of :func:`release_basic`, run before a ledger reservation."""
    declared = declared_universe(args)
    if declared is None:
        return
    if declared.size > args.max_items:
        raise ParameterError(f"basic needs 2^|I| - 1 noisy counts; the universe has {declared.size} items, over the "
                             f"limit of {args.max_items} (--max-items). Use diffpart for large universes.")
    limits.check_basic(declared.size, args.epsilon)


def release_basic(args: argparse.Namespace, read: Reader, reporter: Reporter) -> SetValuedRelease:
    """Basic (a noisy count for every possible record) on the data ``read`` returns, work bounded first."""
    from ..privacy import make_noise
    from ..setvalued import basic as basic_algorithm

    declared = declared_universe(args)
    if declared is not None and declared.size <= args.max_items:
        limits.check_basic(declared.size, args.epsilon)
    with reporter.timed("read"):
        db, universe = read()
    if declared is None and universe.size <= args.max_items:
        limits.check_basic(universe.size, args.epsilon)
    with reporter.timed("basic"):
        release = basic_algorithm(db, universe, args.epsilon, noise=make_noise(args.seed), max_items=args.max_items)
    _size_note(reporter, "basic", release.n_records, "records")
    return release


# --- the Python functions ---------------------------------------------------------------------------------


def transaction_options(command: str, defaults: dict[str, object], params: dict[str, Any], *, data: object,
                        universe: object, epsilon: object, seed: object, method: object,
                        methods: tuple[str, ...]) -> argparse.Namespace:
    """The namespace of a transaction command from Python keywords (checked as the command line's types)."""
    eps = check_epsilon_value(epsilon)
    check_method(command, method, methods)
    args = options(command, defaults, params, epsilon=eps, seed=check_seed(seed), method=method)
    spec, obj, derive = universe_spec(universe)
    args.universe, args.universe_object, args.derive_universe, args.universe_required = spec, obj, derive, True
    args.data_path = path_of(data)
    return args


def _reader(data: object, universe: object, args: argparse.Namespace) -> Reader:
    return lambda: transactions_of(data, universe, args, python_reporter)


def diffpart(data: object, *, universe: object, epsilon: float, method: str | None = None, seed: int | None = None,
             ledger: str | os.PathLike[str] | None = None, max_output_records: int | None = None,
             max_memory: int | str | None = None, **params: Any) -> Release:
    """Publish set-valued data (baskets) under epsilon-DP with DiffPart.

    ``method=None`` (or ``"recommended"``): DiffPart-Prefix, the project's best method (it releases on sparse
    basket data); ``"faithful"``: the paper's Algorithm 1 (releases nothing on universes of thousands of items).
    ``params``: the options of ``dprelease diffpart`` with ``_`` for ``-`` (``fanout``, ``c1``, ``c2``,
    ``spurious_bound``, ``selection_share``, ``record_bound``, ``max_items``, ``beta``, ...).
    ``seed``: experiment mode (reproducible, NOT for publication); by default the secure RNG.
    ``ledger``: a :class:`Ledger` or its path: epsilon is reserved there before the data is read.
    """
    from .results import wrap

    for name in ("fanout", "record_bound", "max_items"):
        check_positive(name, params.get(name), integer=True)
    for name in ("c1", "c2", "spurious_bound", "branching_bound", "selection_share", "structure_share", "beta"):
        check_positive(name, params.get(name))
    args = transaction_options("diffpart", DIFFPART_OPTIONS, params, data=data, universe=universe, epsilon=epsilon,
                               seed=seed, method=method, methods=METHODS)

    def checks() -> None:
        check_inputs_exist(args.data_path, args.universe if args.universe and not _is_range(args.universe) else None)
        diffpart_checks(args)

    with api_run(args.epsilon, max_output_records, max_memory):
        release = charged(_ledger_path(ledger), "diffpart", args.epsilon, checks=checks,
                          run=lambda: release_diffpart(args, _reader(data, universe, args), python_reporter))
    return wrap(release, ledger=ledger)


def basic(data: object, *, universe: object, epsilon: float, method: str | None = None, seed: int | None = None,
          ledger: str | os.PathLike[str] | None = None, max_output_records: int | None = None,
          max_memory: int | str | None = None, **params: Any) -> Release:
    """Publish with Basic, the baseline of DiffPart's section 4.1: a noisy count for each of the 2^|I| - 1
    possible records (small universes only; ``max_items``, default 20, bounds |I|)."""
    from .results import wrap

    check_positive("max_items", params.get("max_items"), integer=True)
    args = transaction_options("basic", basic_options(), params, data=data, universe=universe, epsilon=epsilon,
                               seed=seed, method=method, methods=(FAITHFUL, RECOMMENDED))

    def checks() -> None:
        check_inputs_exist(args.data_path, args.universe if args.universe and not _is_range(args.universe) else None)
        basic_checks(args)

    with api_run(args.epsilon, max_output_records, max_memory):
        release = charged(_ledger_path(ledger), "basic", args.epsilon, checks=checks,
                          run=lambda: release_basic(args, _reader(data, universe, args), python_reporter))
    return wrap(release, ledger=ledger)


def _is_range(spec: str) -> bool:
    from ..data.universe import _RANGE

    return bool(_RANGE.match(spec))


def _ledger_path(ledger: object) -> str | None:
    """A :class:`~dprelease.api.ledger.Ledger` or a path."""
    if ledger is None:
        return None
    return path_of(getattr(ledger, "path", ledger))
