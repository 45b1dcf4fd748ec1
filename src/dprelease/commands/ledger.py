"""``dprelease ledger init|status|history``: one privacy-budget ledger across all releases of a dataset.

Releasing commands charge a ledger with ``--ledger LEDGER`` (or ``$DPRELEASE_LEDGER``): see
:func:`dprelease.commands.common.run_charged` and :mod:`dprelease.ledger`.
"""

from __future__ import annotations

import argparse

from .common import LEDGER_ENV, add_quiet, epsilon_arg, print_json, say

__all__ = ["register"]


def _run_init(args: argparse.Namespace) -> int:
    from ..ledger import decimal_text, init_ledger

    st = init_ledger(args.ledger_file, dataset=args.dataset, epsilon=args.epsilon)
    say(args, f"ledger {args.ledger_file}: dataset {st.dataset!r}, total epsilon {decimal_text(st.epsilon)}; "
              f"charge it with --ledger {args.ledger_file} (or {LEDGER_ENV}={args.ledger_file})")
    print(args.ledger_file)
    return 0


def _record_level_stream(charge) -> bool:
    """A stream declared record-level: its epsilon bounds one record in one batch, not a person across batches.
    (A one-file release's unit is also one record, which the custodian declares to be one person's.)"""
    return charge.privacy_unit == "record" and str(charge.command).startswith("stream")


def _record_level_note(st) -> str | None:
    """Charges whose epsilon protects one record, not one person (parallel streams declared record-level)."""
    ids = [f"#{c.id}" for c in st.charges if _record_level_stream(c) and c.covered_by is None]
    if not ids:
        return None
    return (f"charge{'s' if len(ids) > 1 else ''} {', '.join(ids)} protect{'' if len(ids) > 1 else 's'} one record, "
            f"not one person (privacy unit record): a person with records in k batches of such a stream loses k "
            f"times its epsilon, which this ledger does not count")


def _run_status(args: argparse.Namespace) -> int:
    from ..ledger import decimal_text, ledger_status

    st = ledger_status(args.ledger_file)
    if args.json:
        print_json(st.as_json())
        return 0
    print(f"dataset: {st.dataset}")
    print(f"epsilon: {decimal_text(st.epsilon)}")
    print(f"epsilon_spent: {decimal_text(st.spent)}")
    print(f"epsilon_remaining: {decimal_text(st.remaining)}")
    print(f"releases: {len(st.charges)}" + (f" ({st.incomplete} incomplete)" if st.incomplete else ""))
    if st.incomplete:
        say(args, "incomplete: reserved, but the release was never marked written (the command is running, failed "
                  "or was killed); its epsilon stays counted because the data may have been read")
    note = _record_level_note(st)
    if note:
        say(args, note)
    return 0


def _run_history(args: argparse.Namespace) -> int:
    from fractions import Fraction

    from ..ledger import decimal_text, ledger_status

    st = ledger_status(args.ledger_file)
    spent = Fraction(0)
    rows = []
    for c in st.charges:
        spent += c.epsilon
        rows.append({**c.as_json(), "epsilon_spent_after": float(spent)})
    if args.json:
        print_json({"dataset": st.dataset, "epsilon": float(st.epsilon), "history": rows})
        return 0
    print(f"ledger {args.ledger_file}: dataset {st.dataset}, epsilon {decimal_text(st.epsilon)}, "
          f"spent {decimal_text(st.spent)}, remaining {decimal_text(st.remaining)}")
    if not rows:
        print("no charges yet")
        return 0
    header = ("#", "created (UTC)", "command", "epsilon", "spent after", "state", "output")
    spent = Fraction(0)
    table = []
    for c in st.charges:
        spent += c.epsilon
        eps = f"0 (charge #{c.covered_by})" if c.covered_by is not None else decimal_text(c.epsilon)
        if _record_level_stream(c):
            eps += " per record"
        table.append((str(c.id), c.created, c.command, eps, decimal_text(spent),
                      "complete" if c.complete else "incomplete", c.output))
    widths = [max(len(r[i]) for r in (header, *table)) for i in range(len(header) - 1)]
    for r in (header, *table):
        print("  ".join(v.ljust(w) for v, w in zip(r, widths)) + "  " + r[-1])
    note = _record_level_note(st)
    if note:
        say(args, note)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ledger", help="one privacy-budget ledger across all releases of a dataset",
                       description="A dataset's total epsilon and every release charged against it, across commands "
                                   "and processes. Releasing commands charge it with --ledger LEDGER (or "
                                   f"${LEDGER_ENV}): they reserve their epsilon before reading the data and are "
                                   "refused when too little remains.")
    ss = p.add_subparsers(dest="ledger_command", metavar="ACTION", parser_class=type(p))
    ss.required = True

    q = ss.add_parser("init", help="create a ledger: the dataset's name and its total epsilon",
                      description="Create a ledger for one dataset (its name is a label; nothing about the data is "
                                  "stored). The file is never overwritten.")
    q.add_argument("ledger_file", metavar="LEDGER", help="the SQLite ledger file to create (never overwritten)")
    q.add_argument("--dataset", required=True, metavar="NAME", help="the dataset's name (required; a label)")
    q.add_argument("--epsilon", "-e", type=epsilon_arg, required=True, metavar="TOTAL",
                   help="the total privacy budget of every release of this dataset together (required)")
    add_quiet(q)
    q.set_defaults(handler=_run_init)

    q = ss.add_parser("status", help="total, spent and remaining epsilon, and the releases",
                      description="The ledger's total epsilon, what is spent (incomplete reservations included) "
                                  "and the releases charged.")
    q.add_argument("ledger_file", metavar="LEDGER", help="a ledger made by `dprelease ledger init`")
    q.add_argument("--json", action="store_true",
                   help='print {"dataset": n, "epsilon": total, "epsilon_spent": x, "releases": [{"command": c, '
                        '"epsilon": e, "output": path, "created": date, "state": s, ...}], ...} on one line')
    add_quiet(q)
    q.set_defaults(handler=_run_status)

    q = ss.add_parser("history", help="every charge in order, with the running total",
                      description="Every charge in the order it was reserved: when the command started, the "
                                  "command, its epsilon, the total spent after it, its state and its output.")
    q.add_argument("ledger_file", metavar="LEDGER", help="a ledger made by `dprelease ledger init`")
    q.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    add_quiet(q)
    q.set_defaults(handler=_run_history)
