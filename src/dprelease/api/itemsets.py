"""Top-k itemset releases (PrivBasis, TF): the checks, work bounds and runs that ``dprelease privbasis`` and
``dprelease tf`` execute, and the Python functions :func:`privbasis` and :func:`tf` over them."""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING, Any

from .. import limits
from ._core import FAITHFUL, RECOMMENDED, Reporter, api_run, charged, check_inputs_exist, check_positive, \
    python_reporter, resolve_renamed_method
from .setvalued import Reader, _is_range, _ledger_path, _reader, declared_universe, transaction_options

if TYPE_CHECKING:
    from ..itemsets.privbasis import PrivBasisParams
    from ..release.itemsets import ItemsetRelease
    from .results import Release

__all__ = ["privbasis", "tf", "privbasis_params", "privbasis_checks", "tf_checks", "release_privbasis",
           "release_tf", "PRIVBASIS_OPTIONS", "TF_OPTIONS"]

_PRIVBASIS_NUMBERS = ("alpha1", "alpha2", "alpha3", "eta", "single_basis_max", "max_basis_length", "lambda2_rule",
                      "lambda_range", "multi_alpha2", "single_alpha2", "bound_quantile", "bound_alpha")
# the options of `dprelease privbasis` and their defaults (None: "not given"; tests/api check them)
PRIVBASIS_OPTIONS: dict[str, object] = {**{n: None for n in _PRIVBASIS_NUMBERS}, "selection": None,
                                        "bin_cut": None, "exact_k": None}
TF_OPTIONS: dict[str, object] = {"variant": "laplace", "rho": 0.9}


def privbasis_params(args: argparse.Namespace) -> PrivBasisParams:
    """PrivBasisParams from the options: the improved default (method recommended), or the paper's with method
    faithful; every explicit option overrides either."""
    from ..itemsets.privbasis import PrivBasisParams

    given: dict[str, Any] = {name: getattr(args, name) for name in _PRIVBASIS_NUMBERS
                             if getattr(args, name, None) is not None}
    if getattr(args, "selection", None) is not None:
        given["bounded_selection"] = args.selection == "bounded"
    if getattr(args, "bin_cut", None) is not None:
        given["bin_cut"] = None if args.bin_cut == "off" else float(args.bin_cut)
    if getattr(args, "exact_k", None) is not None:
        given["exact_k"] = args.exact_k
    if getattr(args, "dense_bases", None) is not None:
        given["dense_bases"] = args.dense_bases
    args.method = resolve_renamed_method(args)
    faithful = args.method == FAITHFUL
    return PrivBasisParams.faithful(**given) if faithful else PrivBasisParams(**given)


def _declared_size(args: argparse.Namespace) -> int | None:
    declared = declared_universe(args)
    return declared.size if declared is not None else None


def privbasis_checks(args: argparse.Namespace) -> PrivBasisParams:
    """The public checks of :func:`release_privbasis` (options, the work bound of k), also run before a ledger
    reservation; returns the parameters."""
    params = privbasis_params(args)  # a bad combination of options is refused before anything is read
    params.validate()
    limits.check_topk(f"privbasis -k {args.k}", args.k, eta=params.eta)
    return params


def tf_checks(args: argparse.Namespace) -> None:
    """The public checks of :func:`release_tf` (the work bound of k; m >= 3 over too many candidates), also run
    before a ledger reservation."""
    limits.check_topk(f"tf -k {args.k}", args.k)
    n_items = _declared_size(args)
    if n_items is not None:
        from ..itemsets.tf import MAX_DEGENERATE_CANDIDATES, _refuse_degenerate, candidate_space_size

        m = min(args.m, n_items)
        n_cand = candidate_space_size(n_items, m)
        if m >= 3 and n_cand > MAX_DEGENERATE_CANDIDATES:
            _refuse_degenerate(n_cand, m)


def release_privbasis(args: argparse.Namespace, read: Reader, reporter: Reporter) -> ItemsetRelease:
    """PrivBasis on the data ``read`` returns: checks, range notes from public inputs, then the release."""
    from ..itemsets.privbasis import privbasis as privbasis_algorithm
    from ..privacy import make_noise

    params = privbasis_checks(args)
    notes = limits.privbasis_range_notes(args.k, _declared_size(args))
    for note in notes:
        reporter.warn(note)
    with reporter.timed("read"):
        db, universe = read()
    if not universe.declared:  # a derived universe: its size is known now (and recorded in the manifest)
        notes = limits.privbasis_range_notes(args.k, universe.size)
        for note in notes:
            reporter.warn(note)
    with reporter.timed("privbasis"):
        release = privbasis_algorithm(db, universe, args.k, args.epsilon, noise=make_noise(args.seed), params=params)
    # The range notes were said above; the others (a short release, with its public reason) are said now: the
    # released size is public, and the manifest carries the same notes.
    for note in release.manifest.get("notes") or []:
        if note not in notes:
            reporter.warn(str(note))
    return release


def release_tf(args: argparse.Namespace, read: Reader, reporter: Reporter) -> ItemsetRelease:
    """TF on the data ``read`` returns, after its public checks."""
    from ..itemsets.tf import tf as tf_algorithm
    from ..privacy import make_noise
    from .setvalued import _size_note

    tf_checks(args)
    with reporter.timed("read"):
        db, universe = read()
    with reporter.timed("tf"):
        release = tf_algorithm(db, universe, args.k, args.epsilon, args.m, noise=make_noise(args.seed),
                               variant=args.variant, rho=args.rho)
    # Public facts only: said on every run, so whether f_k*N < gamma*N is not said.
    plan: Any = release.trace["plan"]
    gamma = plan.gamma_count  # from k, epsilon, m, |I| and rho alone
    reporter.noted(f"note: TF truncates counts below f_k*N - gamma*N with gamma*N = {gamma:.0f} (from k, epsilon, "
                   f"m, |I| and rho); where the k-th largest count is below gamma*N the truncation prunes nothing "
                   f"and the selection is close to random (PrivBasis section 3.1)")
    _size_note(reporter, "tf", len(release.itemsets), "itemsets", requested=args.k)  # in the manifest too
    return release


def _checks(args: argparse.Namespace, then: Any) -> Any:
    def run() -> None:
        check_inputs_exist(args.data_path, args.universe if args.universe and not _is_range(args.universe) else None)
        then(args)
    return run


def privbasis(data: object, *, k: int, universe: object, epsilon: float, method: str | None = None,
              seed: int | None = None, ledger: str | os.PathLike[str] | None = None,
              max_output_records: int | None = None, max_memory: int | str | None = None,
              **params: Any) -> Release:
    """Publish the top-k frequent itemsets with noisy counts (PrivBasis, Li et al., PVLDB 2012).

    ``method=None`` (or ``"recommended"``): the improved PrivBasis of docs/privbasis.md; ``"faithful"``: the
    paper's Algorithm 3. ``params``: the options of ``dprelease privbasis`` (``alpha1``, ``eta``, ``selection``,
    ``bin_cut``, ``exact_k``, ...). ``data`` and ``universe`` as for :func:`dprelease.diffpart`.
    """
    from .results import wrap

    check_positive("k", k, integer=True)
    args = transaction_options("privbasis", PRIVBASIS_OPTIONS, params, data=data, universe=universe,
                               epsilon=epsilon, seed=seed, method=method, methods=(RECOMMENDED, FAITHFUL))
    args.k = k
    with api_run(args.epsilon, max_output_records, max_memory):
        release = charged(_ledger_path(ledger), "privbasis", args.epsilon, checks=_checks(args, privbasis_checks),
                          run=lambda: release_privbasis(args, _reader(data, universe, args), python_reporter))
    return wrap(release, ledger=ledger)


def tf(data: object, *, k: int, m: int, universe: object, epsilon: float, method: str | None = None,
       seed: int | None = None, ledger: str | os.PathLike[str] | None = None, max_output_records: int | None = None,
       max_memory: int | str | None = None, **params: Any) -> Release:
    """Publish the top-k itemsets of length <= m with TF (Bhaskar et al., KDD 2010), the baseline of PrivBasis;
    ``params``: ``variant`` ("laplace" or "exponential"), ``rho``."""
    from .results import wrap

    check_positive("k", k, integer=True)
    check_positive("m", m, integer=True)
    args = transaction_options("tf", TF_OPTIONS, params, data=data, universe=universe, epsilon=epsilon, seed=seed,
                               method=method, methods=(FAITHFUL, RECOMMENDED))
    args.k, args.m = k, m
    with api_run(args.epsilon, max_output_records, max_memory):
        release = charged(_ledger_path(ledger), "tf", args.epsilon, checks=_checks(args, tf_checks),
                          run=lambda: release_tf(args, _reader(data, universe, args), python_reporter))
    return wrap(release, ledger=ledger)
