"""``dp.Stream(path)``: IncTDPart releases of a growing transaction file, as ``dprelease stream`` makes them
(the same state file, the same checks when it is created, the same appends).

A new stream declares its epsilon, universe and number of updates once (``dp.Stream(path, epsilon=...,
universe="1..N", updates=U)``); an existing state file is opened. ``append(batch)`` releases after each batch
(a path or baskets), ``status()`` tells what is spent, ``release()`` gives the latest release again for free.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .. import limits
from ..errors import ParameterError
from ..setvalued.inctdpart import DEFAULT_C1, DEFAULT_C2, DEFAULT_FANOUT
from ._core import MAX_SEED, MIN_EPSILON, check_epsilon_value, check_seed

__all__ = ["Stream", "resolve_partitioning", "tdpart_options", "declared_budget", "init_checks"]


def universe_inputs(spec: str | None) -> list[str]:
    """The universe file among a command's inputs (a range is not a file)."""
    return [spec] if spec and Path(spec).is_file() else []


# --partitioning (alias --method): prefix is the best method and the default; tdpart (--method faithful) is the
# paper's IncTDPart. Options of one partitioning only default to None ("not given"): given without
# --partitioning, a tdpart option selects tdpart (commands written before the default changed keep their
# meaning); given with the other partitioning, it is refused.
DEFAULT_PARTITIONING = "prefix"
METHOD_ALIASES = {"prefix": "prefix", "faithful": "tdpart", "recommended": DEFAULT_PARTITIONING}
_TDPART_ONLY = {"fanout": DEFAULT_FANOUT, "c1": DEFAULT_C1, "c2": DEFAULT_C2, "theta_rule": "example3",
                "new_cells": "first-visit", "routing": "paper"}
_PREFIX_ONLY = ("no_refine", "no_expand")


def _given(args: argparse.Namespace, names: Iterable[str]) -> list[str]:
    return ["--" + n.replace("_", "-") for n in names if getattr(args, n, None) not in (None, False)]


def resolve_partitioning(args: argparse.Namespace) -> None:
    """Settle --partitioning/--method and fill in the tdpart defaults (public checks, before anything is made)."""
    method = getattr(args, "method", None)
    chosen = args.partitioning
    if method is not None:
        alias = METHOD_ALIASES[method]
        if chosen is not None and chosen != alias:
            raise ParameterError(f"--method {method} is --partitioning {alias}, but --partitioning {chosen} is given; "
                                 f"give one of them")
        chosen = alias
    tdpart_opts, prefix_opts = _given(args, _TDPART_ONLY), _given(args, _PREFIX_ONLY)
    if chosen is None:
        if tdpart_opts and prefix_opts:
            raise ParameterError(f"{', '.join(tdpart_opts)} (--partitioning tdpart) and {', '.join(prefix_opts)} "
                                 f"(--partitioning prefix) do not go together; choose one --partitioning")
        chosen = "tdpart" if tdpart_opts else DEFAULT_PARTITIONING
    other = prefix_opts if chosen == "tdpart" else tdpart_opts
    if other:
        raise ParameterError(f"{', '.join(other)} only appl{'ies' if len(other) == 1 else 'y'} to --partitioning "
                             f"{'prefix' if chosen == 'tdpart' else 'tdpart'}; this stream uses --partitioning "
                             f"{chosen}")
    args.partitioning = chosen


def tdpart_options(args: argparse.Namespace) -> dict[str, Any]:
    """The tdpart options, with their defaults where not given (a prefix stream stores them unused)."""
    return {name: default if getattr(args, name) is None else getattr(args, name)
            for name, default in _TDPART_ONLY.items()}


def declared_budget(args: argparse.Namespace) -> Any:
    """The stream's budget as declared (accounting, U, privacy unit, K); refused here when it does not hold."""
    from ..setvalued.inctdpart import StreamBudget

    return StreamBudget.declare(args.epsilon, args.updates, args.accounting, args.privacy_unit,
                                args.max_batches_per_person, required=True)


def init_checks(args: argparse.Namespace) -> None:
    """The public checks of ``stream init`` (also run before a ledger reservation)."""
    from ..data.io import check_output_path
    from ..data.universe import parse_universe_spec

    resolve_partitioning(args)
    if universe_inputs(args.universe):
        check_output_path(args.state, inputs=universe_inputs(args.universe), force=True, option="STATE",
                          make_parents=True)
    if args.accounting == "paper" and args.updates is None:
        raise ParameterError("--updates is required with --accounting paper (each append spends epsilon/(U+1))")
    declared_budget(args)
    eps_append = args.epsilon if args.accounting == "parallel" else args.epsilon / (args.updates + 1)
    if (args.updates is not None and args.updates >= MAX_SEED) or eps_append < MIN_EPSILON:
        raise ParameterError(f"--updates {args.updates}: each append would get epsilon/(U+1) = "
                             f"{eps_append:.3g}, below the smallest budget {MIN_EPSILON:g}")
    if args.universe and args.partitioning == "tdpart":  # public: bound each append's work before the stream exists
        u = parse_universe_spec(args.universe)
        limits.check_diffpart(u.size, tdpart_options(args)["fanout"], eps_append, tdpart_options(args)["c2"], None,
                              what="stream init")



_INIT_DEFAULTS: dict[str, object] = {"updates": None, "accounting": "paper", "privacy_unit": None,
                                     "max_batches_per_person": None, "partitioning": None, "method": None,
                                     "no_refine": False, "no_expand": False, **{n: None for n in _TDPART_ONLY}}


class Stream:
    """A stream state file: opened when it exists, created when ``epsilon`` is given and it does not."""

    def __init__(self, path: str | os.PathLike[str], *, epsilon: float | None = None, universe: str | None = None,
                 seed: int | None = None, ledger: object = None, **params: Any) -> None:
        from ..setvalued.stream_state import init_state

        self.path = Path(path)
        self._count = 0
        if epsilon is None:
            if params or universe is not None or seed is not None or ledger is not None:
                raise ParameterError(f"stream {self.path}: options are declared when a stream is created "
                                     f"(give epsilon=); an existing stream is opened with dp.Stream(path)")
            self.status()  # refuses a file that is not a stream state
            return
        if self.path.exists():
            raise ParameterError(f"{self.path}: already exists; a stream state is created once (open it with "
                                 f"dp.Stream(path), or remove it to start over)")
        unknown = sorted(set(params) - set(_INIT_DEFAULTS))
        if unknown:
            raise ParameterError(f"stream: unknown parameter(s) {', '.join(unknown)}; known: "
                                 f"{', '.join(sorted(_INIT_DEFAULTS))}")
        args = argparse.Namespace(**{**_INIT_DEFAULTS, **params}, state=str(self.path), universe=universe,
                                  epsilon=check_epsilon_value(epsilon), seed=check_seed(seed))
        init_checks(args)
        reservation = _reserve_init(ledger, args)  # as `stream init --ledger`: before the state exists
        init_state(self.path, epsilon=args.epsilon, updates=args.updates, universe_spec=args.universe,
                   seed=args.seed, accounting=args.accounting, **tdpart_options(args),
                   partitioning=args.partitioning, refine=not args.no_refine, expand=not args.no_expand,
                   ledger=reservation[1] if reservation else None, privacy_unit=args.privacy_unit,
                   max_batches_per_person=args.max_batches_per_person)
        if reservation:
            from ..ledger import complete

            complete(reservation[0], int(reservation[1]["charge"]))

    def status(self) -> Any:
        """What the stream declared and spent (``epsilon``, ``epsilon_spent``, ``appends``, ``as_json()``)."""
        from ..setvalued.stream_state import stream_status

        return stream_status(self.path)

    def _universe(self) -> Any:
        from ..data.universe import parse_universe_spec

        spec = self.status().as_json().get("universe")
        return parse_universe_spec(str(spec)) if spec else None

    def append(self, batch: object, output: str | os.PathLike[str] | None = None, *, force: bool = False) -> Any:
        """Append one batch (a transaction file, or baskets) and return the release after it; ``output``: where
        the release file is written (by default a file beside the state)."""
        from ..setvalued.stream_state import append_batch

        out = Path(output) if output is not None else self.path.with_name(
            f"{self.path.name}.append{self.status().appends + 1}.dat")
        with tempfile.TemporaryDirectory() as tmp:
            source = os.fspath(batch) if isinstance(batch, (str, os.PathLike)) else _write_baskets(batch, tmp)
            check_appends_left(self.path)  # refused before anything is reserved
            charge = _reserve_append(self.path, out)  # a stream opened against a ledger records every append
            info = append_batch(self.path, source, out, force=force)
        if charge is not None:
            from ..ledger import complete

            complete(charge[0], charge[1])
        return self._read(Path(str(info["release"])))

    def release(self, output: str | os.PathLike[str] | None = None, *, force: bool = False) -> Any:
        """The latest release again (written to ``output``, by default beside the state); spends nothing."""
        from ..setvalued.stream_state import reemit

        out = Path(output) if output is not None else self.path.with_name(f"{self.path.name}.latest.dat")
        info = reemit(self.path, out, force=force if output is not None else True)
        return self._read(Path(str(info["release"])))

    def _read(self, path: Path) -> Any:
        from ..data.universe import parse_universe_spec
        from ..release import SetValuedRelease, read_manifest
        from .results import wrap

        domain = read_manifest(path).get("domain") or {}
        spec = domain.get("spec") if isinstance(domain, dict) else None
        universe = parse_universe_spec(str(spec)) if spec and domain.get("source") != "derived-from-data" else None
        if universe is None:
            raise ParameterError(f"{path}: the stream's universe was derived; read it with the universe it recorded")
        return wrap(SetValuedRelease.read(path, universe))

    def __repr__(self) -> str:
        st = self.status()
        return f"<dprelease Stream {self.path}: epsilon {st.epsilon:g}, spent {st.epsilon_spent:.6g}, appends {st.appends}>"


def _write_baskets(batch: object, folder: str) -> str:
    """Baskets as a transaction file (one record per line, items separated by spaces) for the stream to read."""
    from .inputs import _baskets_of

    path = Path(folder) / "batch.dat"
    with open(path, "w", encoding="utf-8") as fh:
        for basket in _baskets_of(batch):
            fh.write(" ".join(str(x) for x in basket) + "\n")
    return str(path)


def check_appends_left(state: str | os.PathLike[str]) -> None:
    """Refuse an append once the initial dataset and all U updates are made (the stream's epsilon is spent)."""
    from ..errors import BudgetExceededError
    from ..setvalued.stream_state import stream_status

    st = stream_status(state)
    if st.updates is not None and st.appends >= st.updates + 1:  # (a stream may have no bound on its updates)
        raise BudgetExceededError(f"{state}: all {st.appends} appends (initial dataset + U = {st.updates} "
                                  f"updates) are made and epsilon = {st.epsilon:g} is spent; append refused, "
                                  f"state unchanged")


def _reserve_init(ledger: object, args: argparse.Namespace) -> tuple[str, dict[str, Any]] | None:
    """``stream init --ledger``: what one privacy unit can lose over the whole stream is reserved at init, marked
    with the privacy unit; returns (ledger path, the identity the state records) or None without a ledger."""
    if ledger is None:
        return None
    from .. import ledger as ledger_mod
    from ..release import run_start
    from .inputs import path_of

    path = path_of(getattr(ledger, "path", ledger))
    if path is None:
        raise ParameterError(f"ledger: expected a dp.Ledger or a ledger path, got {type(ledger).__name__}")
    budget = declared_budget(args)
    charge = ledger_mod.reserve(path, "stream init", budget.privacy_unit_epsilon, output=str(Path(args.state).resolve()),
                                created=run_start().isoformat())
    ledger_mod.mark_privacy_unit(path, charge.id, budget.privacy_unit)
    return path, {**ledger_mod.ledger_identity(path), "charge": charge.id}


def _reserve_append(state: Path, output: Path) -> tuple[str, int] | None:
    """An append of a stream opened against a ledger is recorded there, covered by the init's reservation."""
    from .. import ledger as ledger_mod
    from ..release import run_start
    from ..setvalued.stream_state import stream_ledger

    recorded = stream_ledger(state)
    if recorded is None:
        return None
    path = str(recorded["path"])
    charge = ledger_mod.reserve(path, "stream append", 0.0, output=str(output.resolve()),
                                created=run_start().isoformat(), covered_by=int(str(recorded["charge"])),
                                ledger_id=str(recorded["ledger_id"]))
    return path, charge.id
