"""The ``evaluate`` and ``experiment`` command groups; their kinds are added by other command modules."""

from __future__ import annotations

import argparse


def _group(sub, name: str, help_text: str) -> None:
    parser = sub.add_parser(name, help=help_text, description=help_text)
    kinds = parser.add_subparsers(dest="kind", metavar="KIND", parser_class=type(parser))
    kinds.required = True
    parser._group_subparsers = kinds  # filled by register_evaluate / register_experiment hooks


def register(sub: argparse._SubParsersAction) -> None:
    _group(sub, "evaluate", "measure the utility of a release against the raw data (custodian only)")
    _group(sub, "experiment", "reproduce a paper's experiments (CSV + PNG)")
