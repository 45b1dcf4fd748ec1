"""The ``dprelease`` command line. Subcommands live in :mod:`dprelease.commands` (one module each).

Exit codes: 0 success; 2 usage, input or parameter error (one line on stderr);
130 interrupted. Outputs are written atomically, so a failed or interrupted run
leaves no half-written file.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import re
import sys
import warnings

from . import __version__, commands
from .errors import DPReleaseError, PrivacyLeakWarning
from .limits import limits_set
from .release import epsilon_notes, run_started

__all__ = ["build_parser", "main"]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2; a missing sub-command prints the list of them
        if self._subparsers is not None and "required" in message and ("COMMAND" in message or "KIND" in message
                                                                       or "ACTION" in message):
            self.print_help(sys.stderr)
            self.exit(2, f"{self.prog}: error: choose one of the commands above\n")
        self.exit(2, f"{self.prog}: error: {message}\n")


class _HelpFormatter(argparse.HelpFormatter):
    """Adds the default to an option's help when the sentence does not already say it."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if not action.option_strings or "default" in text.lower() or "required" in text.lower() \
                or action.default is argparse.SUPPRESS or isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
            return text
        if isinstance(action, argparse._StoreTrueAction):
            return f"{text}; default: off"
        if action.default is None:
            return text
        return f"{text} (default %(default)s)"


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="dprelease", description="Publish data under epsilon-differential privacy.",
                     formatter_class=_HelpFormatter)
    parser.add_argument("--version", action="version", version=f"dprelease {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_sub_parser_class(),
                                title="commands")
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


def _sub_parser_class() -> type[_Parser]:
    class _Sub(_Parser):
        def __init__(self, *args, **kwargs):
            kwargs.setdefault("formatter_class", _HelpFormatter)
            super().__init__(*args, **kwargs)

    return _Sub


def _epsilon_warning(args: argparse.Namespace) -> None:
    values = getattr(args, "epsilon", None)
    values = values if isinstance(values, (list, tuple)) else [values]
    for eps in values:
        for note in epsilon_notes(eps):
            print(f"warning: {note}", file=sys.stderr)


_NEGATIVE_RANGE = re.compile(r"^-\d+\s*\.\.\s*-?\d+$")


def _join_negative_ranges(argv: list[str]) -> list[str]:
    """``--universe -3..17`` -> ``--universe=-3..17``: argparse would read ``-3..17`` as an option."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a.startswith("--") and "=" not in a and i + 1 < len(argv) and _NEGATIVE_RANGE.match(argv[i + 1]):
            out.append(f"{a}={argv[i + 1]}")
            i += 2
            continue
        out.append(a)
        i += 1
    return out


def main(argv: list[str] | None = None) -> int:
    argv = _join_negative_ranges(sys.argv[1:] if argv is None else [str(a) for a in argv])
    with run_started():  # created_utc of every manifest: the command's start, before any data is read
        parser = build_parser()
        if not argv:
            parser.print_help(sys.stderr)
            print("dprelease: error: choose a command (dprelease COMMAND --help for its options)", file=sys.stderr)
            return 2
        args = parser.parse_args(argv)
        warnings.simplefilter("default", PrivacyLeakWarning)
        _epsilon_warning(args)
        with limits_set(getattr(args, "max_output_records", None), getattr(args, "max_memory", None)):
            return _run(args)


def _run(args: argparse.Namespace) -> int:
    # the full command in messages: "dprelease experiment diffgen-classification: error: ..."
    name = " ".join(str(x) for x in (args.command, getattr(args, "kind", None), getattr(args, "stream_command", None))
                    if x)
    try:
        return int(args.handler(args) or 0)
    except DPReleaseError as exc:
        print(f"dprelease {name}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"dprelease {name}: interrupted; no output was written", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 1
    except MemoryError:
        print(f"dprelease {name}: error: out of memory (raise the machine's memory or lower the "
              f"parameters; --max-memory bounds what dprelease attempts)", file=sys.stderr)
        return 2
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"dprelease {name}: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
