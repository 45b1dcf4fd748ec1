"""The ``dprelease`` command line. Subcommands live in :mod:`dprelease.commands` (one module each).

Exit codes: 0 success; 2 usage, input or parameter error (one line on stderr);
130 interrupted. Outputs are written atomically, so a failed or interrupted run
leaves no half-written file.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
import warnings

from . import __version__, commands
from .errors import DPReleaseError, PrivacyLeakWarning

__all__ = ["build_parser", "main"]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="dprelease", description="Publish data under epsilon-differential privacy.")
    parser.add_argument("--version", action="version", version=f"dprelease {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    registries = []
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if info.name.startswith("_") or info.name == "common":
            continue
        module = importlib.import_module(f"{commands.__name__}.{info.name}")
        if hasattr(module, "register"):
            registries.append(module)
    for module in registries:
        module.register(sub)
    # Sub-kinds of `evaluate` and `experiment` come from any command module that
    # defines register_evaluate(subparsers) / register_experiment(subparsers).
    for hook, dest in (("register_evaluate", "evaluate"), ("register_experiment", "experiment")):
        group = sub.choices[dest]._group_subparsers  # type: ignore[attr-defined]
        for module in registries:
            if hasattr(module, hook):
                getattr(module, hook)(group)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    warnings.simplefilter("default", PrivacyLeakWarning)
    try:
        return int(args.handler(args) or 0)
    except DPReleaseError as exc:
        print(f"dprelease {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"dprelease {args.command}: interrupted; no output was written", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 1
    except OSError as exc:
        print(f"dprelease {args.command}: error: {exc.filename or ''}: {exc.strerror or exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
