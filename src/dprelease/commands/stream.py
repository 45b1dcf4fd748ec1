"""``dprelease stream init|append|status|release``: IncTDPart releases of a growing transaction file."""

from __future__ import annotations

import argparse
import sys

from ..setvalued.inctdpart import (
    ACCOUNTING_RULES, DEFAULT_C1, DEFAULT_C2, DEFAULT_FANOUT, NEW_CELL_RULES, PRIVACY_UNITS, ROUTING_RULES,
    THETA_RULES,
)
from ..setvalued.stream_state import PARTITIONINGS, DEFAULT_WAIT, init_state, stream_status
from ..api import stream as api_stream
from ..errors import ParameterError
from .common import (
    LEDGER_ENV, LedgerCost, add_engine, add_epsilon, add_force, add_ledger, add_limits, add_quiet, add_seed, add_universe,
    int_list, positive_float, positive_int, print_json, say, seed_arg, timed, universe_inputs, warn,
)

__all__ = ["register", "register_experiment"]


def nonneg_int_arg(text: str) -> int:
    from .common import nonneg_int

    return nonneg_int(text)


# settling --partitioning/--method and the init checks are the Python API's (dprelease.api.stream): one code path
DEFAULT_PARTITIONING = api_stream.DEFAULT_PARTITIONING
METHOD_ALIASES = api_stream.METHOD_ALIASES
_resolve_partitioning = api_stream.resolve_partitioning
_tdpart_options = api_stream.tdpart_options
_declared_budget = api_stream.declared_budget
_init_checks = api_stream.init_checks


def _init_cost(args: argparse.Namespace, ledger: str | None) -> LedgerCost | None:
    """``stream init --ledger``: what one privacy unit can lose over the whole stream is reserved at init, as the
    stream's accountants will admit it (the exact sum of the appends' charges, rounded up): epsilon under the
    paper's accounting (a person) and under parallel accounting for a record, min(K, U + 1) * epsilon for a
    person under parallel accounting. The charge is marked with the privacy unit by the handler."""
    if ledger is None:
        return None
    from pathlib import Path

    from ..errors import InputError

    if Path(args.state).exists():
        raise InputError(f"{args.state}: already exists; a stream state is created once (remove it to start over)")
    _init_checks(args)
    return LedgerCost(epsilon=_declared_budget(args).privacy_unit_epsilon, output=str(args.state))


def _append_cost(args: argparse.Namespace, ledger: str | None) -> LedgerCost | None:
    """An append of a stream opened against a ledger is recorded there, covered by the init's reservation;
    a stream made without a ledger refuses a configured one (its epsilon was never reserved there)."""
    from ..setvalued.stream_state import check_engine, owns_release, stream_ledger
    from .common import prepare_output

    check_engine(args.state, args.engine, args.level_wise)  # refused before anything is reserved
    # the release path too (append_batch checks it again before its commit): a bad path reserves nothing
    state = str(args.state)
    prepare_output(args, args.output, inputs=[state, f"{state}-wal", f"{state}-shm", args.batch],
                   may_replace=lambda out: owns_release(state, out))
    recorded = stream_ledger(args.state)
    if recorded is None:
        if ledger is None:
            return None
        raise ParameterError(f"{args.state} was created without a ledger, so its epsilon is not reserved in ledger "
                             f"{ledger}; open the stream against it (`dprelease stream init STATE --ledger {ledger} "
                             f"...`), or drop --ledger / ${LEDGER_ENV} for this stream")
    api_stream.check_appends_left(args.state)
    return LedgerCost(epsilon=0.0, output=str(args.output), covered_by=int(recorded["charge"]),
                      ledger=str(recorded["path"]), ledger_id=str(recorded["ledger_id"]))


def _run_init(args: argparse.Namespace) -> int:
    _init_checks(args)
    reservation = getattr(args, "ledger_charge", None)  # set by the CLI when a ledger reserved the stream's epsilon
    ledger = None
    if reservation is not None:
        from ..ledger import ledger_identity, mark_privacy_unit

        path, charge = reservation
        ledger = {**ledger_identity(path), "charge": charge.id}
        mark_privacy_unit(path, charge.id, _declared_budget(args).privacy_unit)
    st = init_state(args.state, epsilon=args.epsilon, updates=args.updates, universe_spec=args.universe,
                    seed=args.seed, accounting=args.accounting, **_tdpart_options(args),
                    partitioning=args.partitioning, refine=not args.no_refine, expand=not args.no_expand,
                    ledger=ledger, privacy_unit=args.privacy_unit,
                    max_batches_per_person=args.max_batches_per_person)
    if st.accounting == "parallel":
        limit = "no limit on appends" if st.updates is None else f"at most {st.updates} updates"
        if st.privacy_unit == "record":
            unit = (f"privacy unit: record (epsilon {st.epsilon:g} protects one record; a person with records in k "
                    f"batches loses k*epsilon)")
        else:
            unit = (f"privacy unit: person in at most {st.budget.unit_batches} batches (epsilon "
                    f"{st.privacy_unit_epsilon:g} per person)")
        say(args, f"stream state {args.state}: epsilon {st.epsilon:g} on every append's own batch (parallel "
                  f"accounting), {limit}; {unit}")
    else:
        say(args, f"stream state {args.state}: epsilon {st.epsilon:g} over the initial dataset + {st.updates} "
                  f"updates (epsilon' = {st.epsilon_per_append:.6g} per append)")
    if args.universe is None:
        warn("no --universe declared: the first append derives it from its batch, which reveals which items occur")
    print(args.state)
    return 0


def _run_append(args: argparse.Namespace) -> int:
    from ..setvalued.stream_state import append_batch

    with timed(args, "append"):
        info = append_batch(args.state, args.batch, args.output, wait=args.wait, force=args.force,
                            engine=args.engine, master=args.spark_master, level_wise=args.level_wise)
    for message in info["warnings"]:
        warn(str(message))
    # appends are counted from 1 (the initial dataset is append 1 of U + 1)
    of = "" if info["updates"] is None else f" of {info['updates'] + 1}"
    say(args, f"append {info['append'] + 1}{of}: spent {info['epsilon']:.6g} ({info['accounting']} accounting), "
              f"total {info['epsilon_spent']:.6g}")
    if info["released_records"] == 0:
        other = ("--partitioning prefix (the default; DiffPart-Prefix's trie, which releases on sparse baskets)"
                 if info["partitioning"] == "tdpart" else "--partitioning tdpart (--method faithful)")
        warn(f"append {info['append'] + 1} released no records (no partition passed its threshold): the release is "
             f"empty; a new stream with {other} may release (docs/inctdpart.md)")
    print(f"release: {info['release']}")
    print(f"manifest: {info['manifest']}")
    return 0


def _run_status(args: argparse.Namespace) -> int:

    st = stream_status(args.state)
    if args.json:
        print_json(st.as_json())
    else:
        print(f"epsilon: {st.epsilon:g}")
        print(f"epsilon_spent: {st.epsilon_spent:.6g}")
        print(f"accounting: {st.accounting}")
        bound = "" if st.max_batches_per_person is None else f", at most {st.max_batches_per_person} batches"
        print(f"privacy_unit: {st.privacy_unit}{bound} (epsilon {st.privacy_unit_epsilon:.6g} over the whole stream)")
        print(f"updates: {'no limit' if st.updates is None else st.updates}")
        print(f"appends: {st.appends}" + ("" if st.max_appends is None else f" of {st.max_appends}"))
        if st.max_appends is None:
            say(args, f"next append: {st.appends + 1} (no limit; epsilon {st.epsilon:g} on each batch)")
        else:
            say(args, f"next append: {st.appends + 1} of {st.max_appends}" if st.appends < st.max_appends
                      else "every append is made: the stream's epsilon is spent")
    return 0


def _run_release(args: argparse.Namespace) -> int:
    from ..setvalued.stream_state import reemit

    info = reemit(args.state, args.output, force=args.force)
    say(args, f"re-emitted the release after append {info['appends']}; no budget spent")
    print(f"release: {info['release']}")
    print(f"manifest: {info['manifest']}")
    return 0


def _fanout(text: str) -> int:
    from .setvalued import fanout_arg

    return fanout_arg(text)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("stream", help="IncTDPart: incremental set-valued releases with a state file",
                       description="Publish a growing transaction dataset with IncTDPart (Zhang et al. 2013): "
                                   "declare epsilon, the update bound U and the privacy unit once, then append "
                                   "batches.")
    ss = p.add_subparsers(dest="stream_command", metavar="ACTION", parser_class=type(p))
    ss.required = True

    q = ss.add_parser("init", help="create a stream state (epsilon, U, accounting, taxonomy parameters)",
                      description="Create a stream state: the whole stream's epsilon, the accounting, the update "
                                  "bound U and the taxonomy parameters, fixed once. The folder is created if needed.")
    q.add_argument("state", metavar="STATE", help="the SQLite state file to create (never overwritten)")
    add_epsilon(q, help_text="privacy budget epsilon (required): with --accounting paper, of the WHOLE stream (the "
                             "initial dataset and all U updates together; each append spends epsilon/(U+1)); with "
                             "parallel, of every append on its own batch")
    q.add_argument("--updates", "-U", type=nonneg_int_arg, default=None, metavar="U",
                   help="upper bound on updates after the initial dataset: with --accounting paper each append "
                        "spends epsilon/(U+1) (required); with parallel it is only a limit (default: none)")
    q.add_argument("--accounting", choices=ACCOUNTING_RULES, default="paper",
                   help="paper: appends compose sequentially, epsilon/(U+1) each, so a person with one record in "
                        "every batch is protected at epsilon (default; privacy unit person); parallel: each append "
                        "is charged epsilon against its own batch only (batches are disjoint records), which "
                        "protects each record at epsilon but not a person contributing to several batches: it "
                        "needs --privacy-unit (docs/privacy.md section 4)")
    q.add_argument("--privacy-unit", choices=PRIVACY_UNITS, default=None,
                   help="what epsilon protects, declared once: person (one person's records, at most one in each "
                        "batch; the paper's accounting protects it at epsilon, its default; parallel accounting at "
                        "min(K, U+1)*epsilon with --max-batches-per-person K and/or --updates U) or record (parallel "
                        "accounting only: each record appears in one batch only, protected at epsilon; this "
                        "protects people only if a person appears in at most one batch, with one record). "
                        "Required with --accounting parallel; recorded in the state, every manifest and the ledger")
    q.add_argument("--max-batches-per-person", type=positive_int, default=None, metavar="K",
                   help="--accounting parallel --privacy-unit person: a public bound on the number of batches one "
                        "person's records are in (at most one record per batch); a person is then protected at "
                        "min(K, U+1)*epsilon, and a ledger reserves that much (default: none, then U+1 from "
                        "--updates)")
    q.add_argument("--routing", choices=ROUTING_RULES, default=None,
                   help="--partitioning tdpart: paper: later batches pay a noisy count at every visited node (R2; "
                        "default); free: split nodes route records without a count, the leaf counts get the whole "
                        "append budget")
    q.add_argument("--partitioning", choices=PARTITIONINGS, default=None,
                   help="prefix: the initial dataset is partitioned by DiffPart-Prefix, later batches are routed "
                        "down its trie and counted (IncTDPart section 4.1 allows any sanitizer for the initial "
                        "dataset; the default: it releases on sparse baskets where tdpart releases nothing, and has "
                        "the lower error on MSNBC; docs/inctdpart.md); tdpart: IncTDPart's TBP-tree over the "
                        "context-free taxonomy (the paper; --method faithful). --fanout, --c1, --c2, --theta-rule, "
                        "--new-cells and --routing apply to tdpart only (given alone, they select it)")
    q.add_argument("--method", choices=tuple(METHOD_ALIASES), default=None,
                   help="the vocabulary of the other releasing commands: recommended (the default) and prefix are "
                        "--partitioning prefix, faithful is --partitioning tdpart (the paper's IncTDPart)")
    q.add_argument("--no-refine", action="store_true",
                   help="--partitioning prefix: do not split classes whose p-sum has grown large (accumulate, then "
                        "split); default: refine")
    q.add_argument("--no-expand", action="store_true",
                   help="--partitioning prefix: release generalized classes as bare prefixes instead of filling in "
                        "their dropped items from the noisy item supports (post-processing); default: expand")
    q.add_argument("--fanout", type=_fanout, default=None, metavar="F",
                   help=f"--partitioning tdpart: fan-out of the item-free taxonomy (default {DEFAULT_FANOUT})")
    add_universe(q, help_text="the public item universe, declared now for the whole stream (required): LO..HI "
                              "(integers) or a file with one item per line; or `derive` to derive it from the first "
                              "batch, with a warning (that leaks which items occur)")
    q.add_argument("--c1", type=positive_float, default=None, metavar="X",
                   help=f"--partitioning tdpart: theta_1 constant (eq. 6): split a node when p-sum >= theta_1 "
                        f"(default {DEFAULT_C1})")
    q.add_argument("--c2", type=positive_float, default=None, metavar="Y",
                   help=f"--partitioning tdpart: theta_2 constant (eq. 7): release a leaf when p-sum >= theta_2 "
                        f"(default {DEFAULT_C2})")
    q.add_argument("--theta-rule", choices=THETA_RULES, default=None,
                   help="--partitioning tdpart: example3: sqrt(2)C*sum(1/alpha)/n^2 (matches the paper's Example 3; "
                        "default); mean: eq. 6/7 as printed")
    q.add_argument("--new-cells", choices=NEW_CELL_RULES, default=None,
                   help="--partitioning tdpart: first-visit: a split partition keeps its children (FollowPreviousTraces; default); "
                        "every-visit: test-and-generate new children at every visit")
    add_seed(q)
    add_limits(q)
    add_quiet(q)
    add_ledger(q, _init_cost, help_text="the dataset's privacy-budget ledger (made by `dprelease ledger init`): the "
                                        "stream's WHOLE epsilon is reserved there now, and the state remembers the "
                                        f"ledger so that every append is recorded in it. Default: ${LEDGER_ENV} when "
                                        "set, else no ledger")
    q.set_defaults(handler=_run_init)

    q = ss.add_parser("append", help="append a batch (the first is the initial dataset) and write the release",
                      description="Append a batch to the stream (the first append is the initial dataset) and "
                                  "write the new release. The output is checked before anything is committed.")
    q.add_argument("state", metavar="STATE", help="the stream state made by `stream init`")
    q.add_argument("batch", metavar="BATCH",
                   help="transaction file (one record per line), or Parquet with a list-of-items column (a stream "
                        "with a declared universe)")
    q.add_argument("-o", "--output", required=True, metavar="RELEASE",
                   help="release file (required; written after the state commit); manifest to RELEASE.manifest.json. "
                        "The stream's own previous release is replaced; any other existing file only with --force")
    q.add_argument("--wait", type=lambda t: positive_float(t, minimum=0.0, inclusive=True), default=DEFAULT_WAIT,
                   metavar="SECONDS", help=f"wait this long for another append to finish (default {DEFAULT_WAIT:g})")
    add_engine(q)
    q.add_argument("--level-wise", action="store_true",
                   help="visit the partition tree one level at a time, one data pass per level: the loop --engine "
                        "spark runs, so a seeded append here gives the same release and state as --engine spark's, "
                        "byte for byte (default: off on --engine local, which runs the one partition loop: the same "
                        "distribution, another order of draws; always on with --engine spark). --partitioning "
                        "tdpart streams with a declared universe only")
    add_force(q)
    add_quiet(q)
    add_ledger(q, _append_cost, help_text="the ledger the stream was opened against (default: the one its state "
                                          f"remembers); a stream made without a ledger refuses one (and ${LEDGER_ENV})")
    q.set_defaults(handler=_run_append)

    q = ss.add_parser("status", help="budget and appends of a stream state",
                      description="The stream's epsilon, what is spent, U and the appends made (counted from 1).")
    q.add_argument("state", metavar="STATE", help="the stream state made by `stream init`")
    q.add_argument("--json", action="store_true",
                   help='print {"epsilon": E, "epsilon_spent": x, "updates": U or null, "appends": n, '
                        '"accounting": "paper"|"parallel", "epsilon_per_append": e, "privacy_unit": '
                        '"person"|"record", "max_batches_per_person": K or null, "privacy_unit_epsilon": u} on one '
                        'line (u: what one privacy unit can lose over the whole stream)')
    add_quiet(q)
    q.set_defaults(handler=_run_status)

    q = ss.add_parser("release", help="write the latest release again (spends nothing)",
                      description="Write the latest release again from the state, e.g. after a failed write; "
                                  "spends nothing.")
    q.add_argument("state", metavar="STATE", help="the stream state made by `stream init`")
    q.add_argument("-o", "--output", required=True, metavar="RELEASE",
                   help="release file (required); manifest to RELEASE.manifest.json. The stream's own previous "
                        "release is replaced; any other existing file only with --force")
    add_force(q)
    add_quiet(q)
    q.set_defaults(handler=_run_release)


_INCTDPART_FILES = ("inctdpart_runs.csv", "inctdpart_summary.csv", "inctdpart_config.json",
                    "inctdpart_relative_error.png")


def _run_experiment(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ..data.universe import parse_universe_spec
    from ..experiments.inctdpart import IncTDPartExperiment, run_inctdpart_experiment
    from .common import prepare_output

    out = Path(args.out)
    for name in _INCTDPART_FILES:  # its own files are replaced; an input never is
        prepare_output(args, out / name, inputs=[args.data, *universe_inputs(args.universe)], option="--out",
                       may_replace=lambda _p: True, make_parents=True)
    extra = {k: v for k, v in (("c1", args.c1), ("c2", args.c2), ("dp_c1", args.dp_c1), ("dp_c2", args.dp_c2))
             if v is not None}
    label = args.label or Path(args.data).name.split(".")[0]
    cfg = IncTDPartExperiment(
        dataset=Path(args.data), universe=parse_universe_spec(args.universe) if args.universe else None,
        out_dir=out, label=label, initial=args.initial, batch=args.batch,
        updates=args.updates, epsilons=args.epsilons, runs=args.runs, fanout=args.fanout,
        theta_rule=args.theta_rule, new_cells=args.new_cells, accounting=args.accounting, routing=args.routing,
        topk=args.topk, queries=args.queries, seed=args.seed, expand=not args.no_expand,
        methods=args.methods, **extra)
    log = (lambda msg: None) if args.quiet else (lambda msg: print(msg, file=sys.stderr, flush=True))
    run_inctdpart_experiment(cfg, log=log)
    print(cfg.out_dir / "inctdpart_summary.csv")
    print(cfg.out_dir / "inctdpart_relative_error.png")
    return 0


def register_experiment(kinds: argparse._SubParsersAction) -> None:
    from ..experiments.inctdpart import DEFAULT_METHODS, METHODS
    from .common import choice_list, epsilon_list

    p = kinds.add_parser("inctdpart", help="IncTDPart vs Solutions 1 and 2: relative error vs U (section 5.1)",
                         description="IncTDPart section 5.1: relative error after the last update vs U, against "
                                     "Solutions 1 and 2; CSV + PNG (seeded experiment mode). The file must hold at "
                                     "least initial + max(U) x batch records.")
    p.add_argument("--data", default="../shared/datasets/msnbc/msnbc.dat", metavar="FILE",
                   help="transaction file (default ../shared/datasets/msnbc/msnbc.dat, from the current directory)")
    p.add_argument("--universe", default="1..17", metavar="SPEC", help="the public item universe (default 1..17, MSNBC's)")
    p.add_argument("--label", default=None,
                   help="dataset name in the CSV and plot (default: the file name, e.g. msnbc; say 'generated' for "
                        "synthetic data)")
    p.add_argument("--out", default="results/inctdpart", metavar="DIR", help="output folder (default results/inctdpart)")
    p.add_argument("--initial", type=positive_int, default=400_000, metavar="N",
                   help="records in the initial dataset (default 400000, as the paper)")
    p.add_argument("--batch", type=positive_int, default=10_000, metavar="N",
                   help="records per update (default 10000, as the paper)")
    p.add_argument("--updates", type=int_list, default=(10, 20, 30, 40, 50), metavar="U,U,...",
                   help="comma-separated update bounds U > 0 (default 10,20,30,40,50)")
    p.add_argument("--epsilons", type=epsilon_list, default=(0.5, 0.75, 1.0), metavar="E,E,...",
                   help="comma-separated epsilons (default 0.5,0.75,1.0)")
    p.add_argument("--runs", type=positive_int, default=3, metavar="N", help="seeded runs per setting (default 3)")
    p.add_argument("--fanout", type=_fanout, default=DEFAULT_FANOUT, metavar="F", help=f"fan-out (default {DEFAULT_FANOUT})")
    p.add_argument("--c1", type=positive_float, default=None, metavar="X", help=f"IncTDPart theta_1 constant (default {DEFAULT_C1})")
    p.add_argument("--c2", type=positive_float, default=None, metavar="Y", help=f"IncTDPart theta_2 constant (default {DEFAULT_C2})")
    p.add_argument("--dp-c1", type=positive_float, default=None, metavar="X",
                   help="DiffPart leaf constant for the baselines (default DiffPart's 1.5)")
    p.add_argument("--dp-c2", type=positive_float, default=None, metavar="Y",
                   help="DiffPart partition constant for the baselines (default DiffPart's 1.5)")
    p.add_argument("--theta-rule", choices=THETA_RULES, default="example3", help="IncTDPart's theta rule (default example3)")
    p.add_argument("--new-cells", choices=NEW_CELL_RULES, default="first-visit",
                   help="IncTDPart's new-cell rule (default first-visit)")
    p.add_argument("--accounting", choices=ACCOUNTING_RULES, default="paper",
                   help="IncTDPart's accounting: paper (epsilon/(U+1) per append; default) or parallel (epsilon per "
                        "batch); the baselines are charged as in the paper either way")
    p.add_argument("--routing", choices=ROUTING_RULES, default="paper",
                   help="IncTDPart's routing of later batches: paper (a noisy count of every stored child of every "
                        "visited node; default) or free (split nodes route without counts; improvement)")
    p.add_argument("--no-expand", action="store_true",
                   help="IncTDPart-Prefix: release generalized classes as bare prefixes, without filling in their "
                        "dropped items (the release as first measured, docs/inctdpart.md); default: expand them from "
                        "the noisy item supports")
    p.add_argument("--methods", type=choice_list(METHODS), default=DEFAULT_METHODS, metavar="NAMES",
                   help="comma-separated methods among IncTDPart, Solution 1, Solution 2, IncTDPart-Prefix (default "
                        "the first three)")
    p.add_argument("--queries", type=positive_int, default=50_000, metavar="N",
                   help="counting queries of the workload (default 50000)")
    p.add_argument("--topk", type=positive_int, default=None, metavar="K",
                   help="also report the top-K utility of every release (DiffPart Appendix E); default: not computed")
    p.add_argument("--seed", type=seed_arg, default=0, metavar="S", help="base seed (default 0)")
    add_quiet(p)
    p.set_defaults(handler=_run_experiment)
