"""CLI subcommands. Each module here defines ``register(subparsers)``; :mod:`dprelease.cli` finds them all.

A handler receives the parsed ``argparse.Namespace`` and returns an exit code. It
raises :class:`~dprelease.errors.DPReleaseError` for bad input or parameters; the
CLI prints that as one line on stderr and exits with code 2.
"""
