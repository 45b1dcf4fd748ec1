"""Table releases (DiffGen, RPS): the checks, work bounds and runs that ``dprelease diffgen`` and ``dprelease
rps`` execute, and the Python functions :func:`diffgen` and :func:`rps` over them.

The schema (attributes, taxonomies, numeric bounds, class) is public and declared: a path, a dict of the same
structure, or a :class:`~dprelease.data.table.TableSchema` (see :func:`dprelease.schema_from_dtypes`).
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
from .inputs import path_of, schema_of, table_of
from .setvalued import _ledger_path

if TYPE_CHECKING:
    from ..data.table import TableSchema
    from .results import Release

__all__ = ["diffgen", "rps", "diffgen_method", "diffgen_checks", "release_diffgen", "rps_checks", "release_rps",
           "DIFFGEN_OPTIONS", "RPS_OPTIONS", "table_schema"]

# where a command reads its table from: the schema -> a path or an encoded table (what open_table takes)
TableReader = Callable[["TableSchema"], Any]

_LOCAL = "diffgen-local"  # an old name: method faithful with local scores (the parser maps it, with a note)
_FAITHFUL_ONLY = ("score", "recycle", "local")  # options of the faithful method only (None or off: "not given")
DIFFGEN_OPTIONS: dict[str, object] = {"specializations": None, "score": None, "recycle": False, "local": False,
                                      "delimiter": None}
RPS_OPTIONS: dict[str, object] = {"depth": None, "split_share": None, "partitioning": None,
                                  "stop_threshold": None, "class_split": None, "consistency": False}
_DEFAULT_DEPTH = 10  # the paper's tree (== dprelease.commands.rps.DEFAULT_DEPTH)
_DEFAULT_CLASS_SPLIT = "last"


def table_schema(args: argparse.Namespace, *, require_class: bool = True) -> TableSchema:
    """The declared schema (a file the command line names, or the object Python gave), with the delimiter."""
    obj = getattr(args, "schema_object", None)
    return schema_of(obj if obj is not None else args.schema, getattr(args, "delimiter", None),
                     require_class=require_class)


def diffgen_method(args: argparse.Namespace) -> str:
    """Settle the method (public checks, before anything is read): an option of the faithful method (score,
    recycle, local) selects it when no method is given, and is refused beside method recommended; the Spark
    engine runs the faithful method only (asked for explicitly: the engine never changes the method)."""
    from ..engine import in_memory

    if args.method == _LOCAL:
        args.method, args.local = FAITHFUL, True
    given = [f"--{n}" for n in _FAITHFUL_ONLY if getattr(args, n) not in (None, False)]
    engine = getattr(args, "engine", "local")
    spark = not in_memory(engine)
    if args.method is None:
        args.method = FAITHFUL if given else RECOMMENDED
    if args.method == RECOMMENDED and given:
        raise ParameterError(f"{', '.join(given)} appl{'ies' if len(given) == 1 else 'y'} to --method faithful "
                             f"(DiffGen's Algorithm 1); this run asks for --method recommended (DiffGen+3)")
    if spark and (args.method != FAITHFUL or args.local):
        raise ParameterError(f"--engine {engine} runs --method faithful (DiffGen's Algorithm 1, global scores) only, "
                             f"not {'--local' if args.local else '--method ' + args.method}; give --method faithful")
    if args.method == FAITHFUL and args.specializations is None:
        raise ParameterError("--specializations is required for --method faithful")
    return str(args.method)


def diffgen_checks(args: argparse.Namespace) -> None:
    """The public checks of :func:`release_diffgen` (method options, schema, work bound), run before a ledger
    reservation."""
    diffgen_method(args)
    limits.check_diffgen(table_schema(args), args.specializations or 12)


def release_diffgen(args: argparse.Namespace, read: TableReader, reporter: Reporter) -> Any:
    """DiffGen+3 (or, faithful, DiffGen) on the table ``read`` gives: method settled, work bounded from the
    schema and h before the table is read, then the release (a generalized table)."""
    from ..engine import open_table, unwrap
    from ..privacy import make_noise

    method = diffgen_method(args)
    schema = table_schema(args)
    # public: the schema and h (DiffGen+3: its rounds, at most 12 when chosen from the noisy size)
    limits.check_diffgen(schema, args.specializations or 12)
    if method == FAITHFUL:  # h past what the schema allows (DiffGen's h splits the budget; the manifest notes it)
        for note in limits.diffgen_range_notes(schema, args.specializations):
            reporter.warn(note)
    with reporter.timed("read"):
        table: Any = unwrap(open_table(read(schema), schema, engine=getattr(args, "engine", "local"),
                                       master=getattr(args, "spark_master", None)))
    noise = make_noise(args.seed)
    with reporter.timed("diffgen"):
        if method == RECOMMENDED:
            from ..relational.diffgen_plus import diffgen_plus3

            return diffgen_plus3(table, args.epsilon, noise=noise, rounds=args.specializations)
        from ..relational.diffgen import diffgen as diffgen_algorithm

        return diffgen_algorithm(table, args.epsilon, args.specializations, noise=noise, score=args.score or "max",
                                 recycle=args.recycle, local=args.local)


# the options of the paper's RPS tree; any of them given selects it (as diffgen's score selects DiffGen)
PAPER_OPTIONS = (("depth", "--depth"), ("split_share", "--split-share"), ("partitioning", "--partitioning"),
                 ("stop_threshold", "--stop-threshold"), ("class_split", "--class-split"), ("consistency", "--consistency"))


def paper_options(args: argparse.Namespace) -> list[str]:
    given = [getattr(args, name, None) for name, _ in PAPER_OPTIONS]
    return [flag for (_, flag), v in zip(PAPER_OPTIONS, given) if v is not None and v is not False]


def rps_method(args: argparse.Namespace) -> bool:
    """True for the paper's RPS (method faithful, or any of its tree options), False for guided RPS (the
    default). Fills the paper's defaults in ``args``; method faithful refuses consistency (beyond the paper)."""
    if args.method == FAITHFUL and args.consistency:
        raise ParameterError("--consistency (constrained inference, Hay et al.) is an improvement beyond the paper's "
                             "RPS; it does not go with --method faithful")
    paper = args.method == FAITHFUL or bool(paper_options(args))
    if paper:
        args.depth = _DEFAULT_DEPTH if args.depth is None else args.depth
        args.partitioning = args.partitioning or "balanced"
        args.class_split = args.class_split or _DEFAULT_CLASS_SPLIT
    return paper


def rps_checks(args: argparse.Namespace, prepare: Callable[[], object] | None = None) -> TableSchema:
    """The public checks of :func:`release_rps` (parameters, the output via ``prepare``, work bound), also run
    before a ledger reservation; returns the schema (a schema without a class is accepted: a synthetic table
    needs none)."""
    from ..relational.rps import table_domain, validate_parameters, work_estimate

    paper = rps_method(args)
    if paper:
        validate_parameters(args.epsilon, args.depth, args.split_share, args.partitioning, args.stop_threshold)
    if prepare is not None:
        prepare()
    schema = table_schema(args, require_class=False)
    if paper:
        domain = table_domain(schema)
        records, memory = work_estimate(domain.n_dims, domain.cells(), args.epsilon, args.depth, args.split_share,
                                        args.partitioning, args.stop_threshold)
        limits.check(f"rps --depth {args.depth}", records=records, memory=memory,
                     why=f"up to {2 ** min(args.depth, 62):,} leaves; empty ones release noise")
    return schema


def release_rps(args: argparse.Namespace, read: TableReader, reporter: Reporter,
                prepare: Callable[[], object] | None = None) -> Any:
    """RPS on the table ``read`` gives (a synthetic table), after its public checks: guided RPS by default, the
    paper's tree with method faithful or any of its options."""
    from ..engine import open_table, unwrap
    from ..privacy import make_noise
    from ..relational.rps import rps as rps_algorithm
    from ..relational.rps_guided import rps_guided

    schema = rps_checks(args, prepare)
    with reporter.timed("read"):
        table: Any = unwrap(open_table(read(schema), schema, engine=getattr(args, "engine", "local"),
                                       master=getattr(args, "spark_master", None)))
    noise = make_noise(args.seed)
    with reporter.timed("rps"):
        if rps_method(args):
            return rps_algorithm(table, args.epsilon, noise=noise, depth=args.depth, split_share=args.split_share,
                                 partitioning=args.partitioning, stop_threshold=args.stop_threshold,
                                 consistency=args.consistency, class_split=args.class_split)
        return rps_guided(table, args.epsilon, noise=noise)


def _table_options(command: str, defaults: dict[str, object], params: dict[str, Any], data: object, schema: object,
                   epsilon: object, seed: object, method: object) -> argparse.Namespace:
    eps = check_epsilon_value(epsilon)
    check_method(command, method, (RECOMMENDED, FAITHFUL))
    args = options(command, defaults, params, epsilon=eps, seed=check_seed(seed), method=method)
    args.schema = path_of(schema)
    args.schema_object = None if args.schema is not None else schema_of(schema, require_class=command != "diffgen")
    args.table = path_of(data)
    return args


def diffgen(data: object, *, schema: object, epsilon: float, method: str | None = None, seed: int | None = None,
            ledger: str | os.PathLike[str] | None = None, max_output_records: int | None = None,
            max_memory: int | str | None = None, **params: Any) -> Release:
    """Publish a table for classification (DiffGen, Mohammed et al., KDD 2011): noisy counts of every leaf
    partition x class of a generalization chosen under epsilon-DP.

    ``data``: a DataFrame with the schema's columns, or a CSV/Parquet path. ``method=None`` (or
    ``"recommended"``): DiffGen+3 (docs/diffgen.md); ``"faithful"``: DiffGen's Algorithm 1 (needs
    ``specializations``). ``params``: ``specializations`` (h), ``score``, ``recycle``, ``local``, ``delimiter``.
    """
    from .results import wrap

    check_positive("specializations", params.get("specializations"), integer=True)
    args = _table_options("diffgen", DIFFGEN_OPTIONS, params, data, schema, epsilon, seed, method)

    def checks() -> None:
        check_inputs_exist(args.table, args.schema)
        diffgen_checks(args)

    with api_run(args.epsilon, max_output_records, max_memory):
        release = charged(_ledger_path(ledger), "diffgen", args.epsilon, checks=checks,
                          run=lambda: release_diffgen(args, lambda s: table_of(data, s), python_reporter))
    return wrap(release, ledger=ledger)


def rps(data: object, *, schema: object, epsilon: float, method: str | None = None, seed: int | None = None,
        ledger: str | os.PathLike[str] | None = None, max_output_records: int | None = None,
        max_memory: int | str | None = None, **params: Any) -> Release:
    """Publish a synthetic table with RPS (Qardaji and Li, ASIACCS 2012): the domain split at private medians,
    every region counted with noise, records drawn uniformly inside the regions.

    By default guided RPS (noisy 1-D marginals guide the partition; docs/rps.md); ``method="faithful"``, or any
    option of the paper's tree (``depth``, ``split_share``, ``partitioning``, ``stop_threshold``, ``class_split``,
    ``consistency``), runs the paper's RPS. A schema without a class is accepted.
    """
    from .results import wrap

    args = _table_options("rps", RPS_OPTIONS, params, data, schema, epsilon, seed, method)
    args.method = args.method or RECOMMENDED

    def checks() -> None:
        check_inputs_exist(args.table, args.schema)
        rps_checks(args)

    with api_run(args.epsilon, max_output_records, max_memory):
        release = charged(_ledger_path(ledger), "rps", args.epsilon, checks=checks,
                          run=lambda: release_rps(args, lambda s: table_of(data, s), python_reporter))
    return wrap(release, ledger=ledger)
