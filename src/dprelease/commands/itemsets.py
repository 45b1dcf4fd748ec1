"""``dprelease privbasis``, ``tf``, ``evaluate itemsets``, ``experiment privbasis`` and ``stats -k``."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from . import setvalued
from .. import limits, progress
from ..api import itemsets as api_itemsets
from .common import (
    add_engine, add_epsilon, add_ledger, add_limits, add_output, add_quiet, add_seed, add_universe,
    FAITHFUL, RECOMMENDED, RenamedFlag, add_method, choice_list, epsilon_list, int_list, release_cost,
    cli_reporter,
    load_transactions, positive_float, positive_int, prepare_output, print_json,
    report_written, seed_arg, universe_inputs,
)

if TYPE_CHECKING:  # the algorithms are imported inside the functions that use them (a light parser)
    pass

__all__ = ["register", "register_evaluate", "register_experiment", "privbasis_params"]


# --- handlers --------------------------------------------------------------------------------------------


# the checks and runs are the Python API's (dprelease.api.itemsets): one code path
privbasis_params = api_itemsets.privbasis_params
_privbasis_checks = api_itemsets.privbasis_checks
_tf_checks = api_itemsets.tf_checks


def _read(args: argparse.Namespace):
    return lambda: load_transactions(args.input, args.universe, args)


def _run_privbasis(args: argparse.Namespace) -> int:
    _privbasis_checks(args)
    prepare_output(args, args.output, inputs=[args.input, *universe_inputs(args.universe)])
    release = api_itemsets.release_privbasis(args, _read(args), cli_reporter(args))
    report_written(args, *release.write(args.output))
    return 0


def _run_tf(args: argparse.Namespace) -> int:
    _tf_checks(args)
    prepare_output(args, args.output, inputs=[args.input, *universe_inputs(args.universe)])
    release = api_itemsets.release_tf(args, _read(args), cli_reporter(args))
    report_written(args, *release.write(args.output))
    return 0


def _run_eval_itemsets(args: argparse.Namespace) -> int:
    from ..evaluation.itemsets import itemset_metrics
    from ..release.itemsets import ItemsetRelease

    limits.check_topk(f"evaluate itemsets -k {args.k}", args.k, released=False)
    raw, universe = load_transactions(args.raw, args.universe, args)
    published = ItemsetRelease.read(args.published, universe)  # the CSV and its manifest: one release
    with progress.phase("evaluate itemsets"):
        result = itemset_metrics(raw, published.itemsets, published.frequencies, args.k,
                                 tolerance=_tolerance(args, published.manifest))
    # strict JSON: an infinite median (more than half the published itemsets never occur) prints as null
    result = {key: (v if np.isfinite(v) else None) for key, v in result.items()}
    if published.intervals() is not None:  # the share of true supports inside the published 95 % intervals
        from ..evaluation.coverage import itemset_rows_coverage

        result["coverage"] = itemset_rows_coverage(raw, published)
    if args.json:
        print_json(result)
    else:
        print(json.dumps(result, indent=2))
    return 0


def _tolerance(args: argparse.Namespace, manifest: dict) -> float:
    """--tolerance: a count, or 'auto' = the manifest's count_noise_sd_at_k (0 when it has none, e.g. TF)."""
    if args.tolerance != "auto":
        return float(args.tolerance)
    release = manifest.get("release")
    value = release.get("count_noise_sd_at_k") if isinstance(release, dict) else None
    return float(value) if isinstance(value, (int, float)) and np.isfinite(value) and value >= 0 else 0.0


def _tolerance_arg(text: str) -> str:
    if text == "auto":
        return text
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected 'auto' or a count >= 0, got {text!r}") from None
    if not (value >= 0.0 and np.isfinite(value)):
        raise argparse.ArgumentTypeError(f"expected 'auto' or a count >= 0, got {text!r}")
    return text


def _bin_cut_arg(text: str) -> str:
    if text == "off":
        return text
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected 'off' or a number > 0, got {text!r}") from None
    if not (value > 0.0 and np.isfinite(value)):
        raise argparse.ArgumentTypeError(f"expected 'off' or a number > 0, got {text!r}")
    return text


def _run_experiment(args: argparse.Namespace) -> int:
    from ..errors import InputError
    from ..experiments.privbasis import DATASETS, run_experiment

    ks = int_list(args.ks)
    settings = len(args.only.split(",")) * len(args.methods.split(",")) * len(epsilon_list(args.epsilons)) * len(ks)
    limits.check_runs(f"experiment privbasis --runs {args.runs}", args.runs, settings)
    limits.check_topk(f"experiment privbasis --ks {max(ks)}", max(ks), eta=1.2, released=False)
    for name in args.only.split(","):  # every input is checked before the first file is written
        path = Path(args.datasets) / DATASETS[name.strip()].path
        if not path.is_file():
            raise InputError(f"{path}: no such dataset file (--datasets {args.datasets} must hold {DATASETS[name.strip()].path})")
    out = Path(args.out)
    for f in ("runs.csv", "summary.csv", "privbasis_fnr.png", "privbasis_re.png"):
        prepare_output(args, out / f, option="--out", may_replace=lambda _p: True, make_parents=True,
                       inputs=[Path(args.datasets) / DATASETS[n.strip()].path for n in args.only.split(",")])
    run_experiment(args)
    return 0


# --- stats -k --------------------------------------------------------------------------------------------


def _stats_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("-k", type=positive_int, default=None, metavar="K",
                   help="also report the exact top-K facts: fk_count (f_k*N), lambda, lambda2, lambda3; "
                        "default: not reported")


def _stats_facts(db, args: argparse.Namespace) -> dict:
    from ..itemsets.exact import topk_facts

    if getattr(args, "k", None) is None:
        return {}
    return topk_facts(db, args.k)


setvalued.STATS_OPTIONS.append(_stats_option)
setvalued.STATS_EXTENSIONS.append(_stats_facts)


# --- registration ----------------------------------------------------------------------------------------


def _unit_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not (0.0 < v < 1.0):
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1), got {v}")
    return v


def _eta(text: str) -> float:
    return positive_float(text, minimum=1.0, inclusive=True)


def _checked_text(check):
    """argparse type that validates a comma-separated list with ``check`` and keeps the text
    (the experiment module parses it again)."""

    def parse(text: str) -> str:
        check(text)
        return text

    return parse


_EXPERIMENT_DATASETS = ("mushroom", "retail", "msnbc")  # == experiments.privbasis.DATASETS (tests check)
_EXPERIMENT_METHODS = ("pb", "pb-faithful", "pb-naive", "pb-split", "pb-universe", "pb-no-cut", "pb-exp-select",
                       "pb-paper-split", "tf", "tf-exp", "diffpart")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("privbasis", help="publish the top-k frequent itemsets with PrivBasis",
                       description="Top-k frequent itemsets with noisy counts under epsilon-DP "
                                   "(PrivBasis, Li et al., PVLDB 2012, Algorithm 3). OUTPUT is a CSV "
                                   "(itemset, count, frequency).")
    p.add_argument("input", metavar="INPUT", help="transaction file: one record per line, items separated by spaces")
    p.add_argument("-k", type=positive_int, required=True, metavar="K", help="number of itemsets to publish (required)")
    add_epsilon(p)
    add_output(p, help_text="the CSV of itemsets (required); its manifest goes to OUTPUT.manifest.json. "
                            "An existing file or manifest is replaced only with --force; the folder must exist")
    add_method(p, (RECOMMENDED, FAITHFUL), default=None,
               help_text="recommended: the improved PrivBasis of docs/privbasis.md (the default); faithful: the "
                         "paper's Algorithm 3 exactly (alpha = 0.1/0.4/0.5, exponential-mechanism selection, no bin "
                         "cut, possibly fewer than k itemsets). Explicit options below override either")
    p.add_argument("--faithful", action=RenamedFlag, method=FAITHFUL, help="the same as --method faithful, kept for older command lines (default: off)")
    p.add_argument("--alpha1", type=_unit_float, default=None, metavar="A", help="share of epsilon for lambda (default 0.1)")
    p.add_argument("--alpha2", type=_unit_float, default=None, metavar="A",
                   help="share for frequent items and pairs in the paper's split (default 0.4)")
    p.add_argument("--alpha3", type=_unit_float, default=None, metavar="A",
                   help="share for the basis counts in the paper's split (default 0.5)")
    p.add_argument("--eta", type=_eta, default=None, metavar="X", help="safety margin eta >= 1 (default 1.2)")
    p.add_argument("--single-basis-max", type=positive_int, default=None, metavar="L",
                   help="one basis of the lambda items when lambda <= L (default 12, as the paper)")
    p.add_argument("--max-basis-length", type=positive_int, default=None, metavar="L",
                   help="no basis longer than L items (default 12)")
    p.add_argument("--lambda2-rule", choices=("sqrt", "naive"), default=None,
                   help="lambda2 for exponential-mechanism selection: the paper's heuristic (sqrt, default) or "
                        "eta*k - lambda (naive); the bounded selection takes lambda2 from the noisy pair counts")
    p.add_argument("--lambda-range", choices=("k1", "universe"), default=None,
                   help="GetLambda candidates: 1..ceil(eta*k) (default, section 4.4 text) or 1..|I| (pseudocode)")
    p.add_argument("--single-alpha2", type=_unit_float, default=None, metavar="A",
                   help="share of epsilon for the items when lambda <= 12, the basis counts get the rest "
                        "(default 0.2; --method faithful: alpha2)")
    p.add_argument("--multi-alpha2", type=_unit_float, default=None, metavar="A",
                   help="share of epsilon for items+pairs with exponential-mechanism selection when lambda > 12, the "
                        "basis counts get the rest (default: alpha2, as the paper)")
    p.add_argument("--selection", choices=("bounded", "exponential"), default=None,
                   help="items and pairs when lambda > 12: Laplace on contribution-bounded counts where records are "
                        "short (bounded, default) or the paper's exponential mechanism (exponential; --method faithful)")
    p.add_argument("--bound-quantile", type=_unit_float, default=None, metavar="Q",
                   help="bounded selection: the contribution bounds are private Q-quantiles (default 0.9)")
    p.add_argument("--bound-alpha", type=_unit_float, default=None, metavar="A",
                   help="bounded selection: share of epsilon for each of the two bound quantiles (default 0.02)")
    p.add_argument("--bin-cut", type=_bin_cut_arg, default=None, metavar="E",
                   help="zero noisy basis bins below the level about E empty bins would reach, in bases where no "
                        "real mass hides below it (default 1; --method faithful: off)")
    p.add_argument("--exact-k", dest="exact_k", action="store_true", default=None,
                   help="publish exactly k itemsets where the universe allows (default; --method faithful: off)")
    p.add_argument("--no-exact-k", dest="exact_k", action="store_false",
                   help="keep the drawn lambda and the bases even when they hold fewer than k itemsets "
                        "(default: off)")
    p.add_argument("--dense-bases", dest="dense_bases", action="store_true", default=None,
                   help="long records: test (privately) whether a typical record holds most of the frequent items, "
                        "and if so build the bases from the items' noisy rank instead of frequent pairs (default; "
                        "--method faithful: off)")
    p.add_argument("--no-dense-bases", dest="dense_bases", action="store_false",
                   help="long records: always the paper's frequent pairs and cliques (default: off)")
    add_universe(p)
    add_seed(p)
    add_limits(p)
    add_quiet(p)
    add_ledger(p, release_cost(lambda a: [a.input, *universe_inputs(a.universe)], checks=_privbasis_checks))
    add_engine(p)
    p.set_defaults(handler=_run_privbasis)

    p = sub.add_parser("tf", help="publish the top-k itemsets of length <= m with TF (Bhaskar et al.)",
                       description="Top-k itemsets of length <= m under epsilon-DP with truncated frequencies "
                                   "(Bhaskar et al., KDD 2010, as described in PrivBasis section 3). OUTPUT is a "
                                   "CSV (itemset, count, frequency).")
    p.add_argument("input", metavar="INPUT", help="transaction file: one record per line, items separated by spaces")
    p.add_argument("-k", type=positive_int, required=True, metavar="K", help="number of itemsets to publish (required)")
    add_epsilon(p)
    p.add_argument("-m", type=positive_int, required=True, metavar="M", help="largest itemset length considered (required)")
    add_output(p, help_text="the CSV of itemsets (required); its manifest goes to OUTPUT.manifest.json. "
                            "An existing file or manifest is replaced only with --force; the folder must exist")
    add_method(p, (FAITHFUL, RECOMMENDED), default=FAITHFUL,
               help_text="faithful (the default), the only method: TF as Bhaskar et al. define it (a baseline; the best top-k "
                         "itemsets under epsilon-DP come from `dprelease privbasis`); recommended names it too")
    p.add_argument("--variant", choices=("laplace", "exponential"), default="laplace",
                   help="selection: Laplace noise on truncated frequencies (default) or repeated exponential mechanism")
    p.add_argument("--rho", type=_unit_float, default=0.9, metavar="R",
                   help="error probability bound rho of gamma (default 0.9)")
    add_universe(p)
    add_seed(p)
    add_limits(p)
    add_quiet(p)
    add_ledger(p, release_cost(lambda a: [a.input, *universe_inputs(a.universe)], checks=_tf_checks))
    add_engine(p)
    p.set_defaults(handler=_run_tf)


def register_evaluate(kinds: argparse._SubParsersAction) -> None:
    p = kinds.add_parser("itemsets", help="FNR and median relative error of published top-k itemsets (PrivBasis sec. 5)",
                         description="FNR, tie-aware recall and median relative error of a published itemset CSV "
                                     "against the exact top k (PrivBasis section 5; docs/privbasis.md). Reads the "
                                     "raw data: for the custodian only.")
    p.add_argument("raw", metavar="RAW", help="the raw transaction file")
    p.add_argument("published", metavar="PUBLISHED",
                   help="CSV written by `dprelease privbasis` or `dprelease tf` (with its manifest)")
    p.add_argument("-k", type=positive_int, required=True, metavar="K",
                   help="size of the exact top-k list compared against (required)")
    add_universe(p, required=False)
    p.add_argument("--tolerance", type=_tolerance_arg, default="auto", metavar="T",
                   help="tie-aware recall: a published itemset whose support is within T of the k-th largest is a "
                        "hit; 'auto' (default) takes count_noise_sd_at_k from PUBLISHED's manifest, 0 if it has none")
    p.add_argument("--json", action="store_true",
                   help='print one line {"fnr", "tie_aware_recall", "tolerance", "median_relative_error", '
                        '"published"} instead of indented JSON')
    add_limits(p)
    add_quiet(p)
    add_engine(p)
    p.set_defaults(handler=_run_eval_itemsets)


def register_experiment(kinds: argparse._SubParsersAction) -> None:
    p = kinds.add_parser("privbasis", help="PB vs TF (best m) vs DiffPart-mined top-k (PrivBasis sec. 5)",
                         description="PrivBasis section 5 on mushroom, retail and msnbc: FNR and median relative "
                                     "error of PB, TF (best m) and DiffPart; CSV + PNG (seeded experiment mode).")
    p.add_argument("--datasets", default="../shared/datasets", metavar="DIR",
                   help="folder with mushroom/, retail/, msnbc/ (default ../shared/datasets, from the current directory)")
    p.add_argument("--out", default="results/privbasis", metavar="DIR",
                   help="CSV + PNG go here; runs.csv is appended to (default results/privbasis)")
    p.add_argument("--runs", type=positive_int, default=5, metavar="N", help="seeded runs per setting (default 5)")
    p.add_argument("--epsilons", type=_checked_text(epsilon_list), default="0.25,0.5,0.75,1.0", metavar="E,E,...",
                   help="comma-separated epsilons (default 0.25,0.5,0.75,1.0)")
    p.add_argument("--ks", type=_checked_text(int_list), default="50,100", metavar="K,K,...",
                   help="comma-separated k values > 0 (default 50,100)")
    p.add_argument("--only", type=_checked_text(choice_list(_EXPERIMENT_DATASETS)), default="mushroom,retail,msnbc",
                   metavar="NAMES", help="comma-separated dataset names among mushroom, retail, msnbc (default all three)")
    p.add_argument("--methods", type=_checked_text(choice_list(_EXPERIMENT_METHODS)),
                   default="pb,pb-faithful,pb-naive,pb-split,tf,tf-exp,diffpart", metavar="NAMES",
                   help="comma-separated: pb (the default PrivBasis), pb-faithful (the paper's), pb-naive, pb-split, "
                        "pb-universe (the paper's plus one switch each), pb-no-cut, pb-exp-select, pb-paper-split (the "
                        "default minus one improvement each), tf (Laplace), tf-exp (exponential), diffpart "
                        "(default pb,pb-faithful,pb-naive,pb-split,tf,tf-exp,diffpart)")
    p.add_argument("--seed", type=seed_arg, default=0, metavar="S", help="base seed (seeded experiment mode; default 0)")
    add_limits(p)
    add_quiet(p)
    p.set_defaults(handler=_run_experiment)
