"""The ``dprelease`` command line. Subcommands live in :mod:`dprelease.commands` (one module each).

Exit codes: 0 success; 2 usage, input or parameter error (one line on stderr);
130 interrupted. Outputs are written atomically, so a failed or interrupted run
leaves no half-written file.

Only the module of the command being run is imported (:data:`COMMANDS`), so ``dprelease --help`` and each
command's ``--help`` cost little more than importing numpy (``benchmarks/bench_memory.py``): a
custodian scripting many small releases should not pay for Spark, pandas and every algorithm on each call.
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys

from . import __version__

__all__ = ["build_parser", "main", "tune_allocator", "COMMANDS", "EXTENDERS", "command_parser", "command_options"]

# Command name -> (module in dprelease.commands that registers it, its one-line help in the command list).
# Only the module of the command being run is imported (so `dprelease --help` and each command's
# `--help` cost little more than importing numpy); tests/commands/test_cli_lazy.py checks this table against the
# modules, so a new command or a new help line needs an entry here.
COMMANDS: dict[str, tuple[str, str]] = {  # in the order of the command list (modules in name order)
    "audit": ("audit", "black-box privacy audit: run an algorithm on built-in neighbouring datasets and bound its "
                       "epsilon"),
    "evaluate": ("groups", "measure the utility of a release against the raw data (custodian only)"),
    "experiment": ("groups", "reproduce a paper's experiments (CSV + PNG)"),
    "privbasis": ("itemsets", "publish the top-k frequent itemsets with PrivBasis"),
    "tf": ("itemsets", "publish the top-k itemsets of length <= m with TF (Bhaskar et al.)"),
    "diffgen": ("relational", "publish a table for classification with DiffGen (epsilon-DP)"),
    "tds": ("relational", "TDS k-anonymity baseline (NOT differentially private)"),
    "rps": ("rps", "publish a synthetic table with RPS (epsilon-DP)"),
    "mondrian": ("rps", "Mondrian k-anonymity baseline (NOT differentially private)"),
    "degrees": ("rps", "publish a graph's degree sequence under node-DP"),
    "diffpart": ("setvalued", "publish set-valued data with DiffPart"),
    "basic": ("setvalued", "the Basic baseline: a noisy count for every possible record"),
    "stats": ("setvalued", "non-private facts of a transaction file, for the custodian"),
    "generate": ("setvalued", "generate a kosarak-scale synthetic transaction file"),
    "stream": ("stream", "IncTDPart: incremental set-valued releases with a state file"),
    "ledger": ("ledger", "one privacy-budget ledger across all releases of a dataset"),
    "report": ("report", "an HTML page about a release: manifest in words, utility, plots (custodian only)"),
}
# Modules that add to a command defined elsewhere: kinds of `evaluate`/`experiment` (register_evaluate /
# register_experiment hooks) and options of `stats` (commands.itemsets adds -k).
EXTENDERS: dict[str, tuple[str, ...]] = {
    "evaluate": ("itemsets", "rps", "setvalued"),
    "experiment": ("itemsets", "relational", "rps", "setvalued", "stream"),
    "stats": ("itemsets",),
}


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


def _command_modules() -> list[str]:
    import pkgutil

    from . import commands

    return sorted(info.name for info in pkgutil.iter_modules(commands.__path__)
                  if not info.name.startswith("_") and info.name != "common")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argument parser. With ``command`` (a name in :data:`COMMANDS`, or "" for none), only the modules that
    define that command are imported and every other command is a one-line stub; without it, every one is."""
    parser = _Parser(prog="dprelease", description="Publish data under epsilon-differential privacy.",
                     formatter_class=_HelpFormatter)
    parser.add_argument("--version", action="version", version=f"dprelease {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_sub_parser_class(),
                                title="commands")
    sub.required = True
    if command is None:
        names = _command_modules()
    elif command == "":
        names = []
    else:
        names = sorted({COMMANDS[command][0], *EXTENDERS.get(command, ())})
    registries = []
    for name in names:
        module = importlib.import_module(f"{__package__}.commands.{name}")
        if hasattr(module, "register"):
            registries.append(module)
    for module in registries:
        module.register(sub)
    for name, (_, help_text) in COMMANDS.items():
        if name not in sub.choices:  # not needed for this run: a stub keeps the command list complete
            sub.add_parser(name, help=help_text, add_help=False)
    order = {name: i for i, name in enumerate(COMMANDS)}
    sub._choices_actions.sort(key=lambda action: order.get(action.dest, len(order)))
    ranked = sorted(sub.choices.items(), key=lambda item: order.get(item[0], len(order)))
    sub.choices.clear()
    sub.choices.update(ranked)
    # Sub-kinds of `evaluate` and `experiment` come from any command module that
    # defines register_evaluate(subparsers) / register_experiment(subparsers).
    for hook, dest in (("register_evaluate", "evaluate"), ("register_experiment", "experiment")):
        group = getattr(sub.choices[dest], "_group_subparsers", None)
        if group is None:  # a stub: that group is not part of this run
            continue
        for module in registries:
            if hasattr(module, hook):
                getattr(module, hook)(group)
    return parser


def _requested_command(argv: list[str]) -> str | None:
    """The command named in ``argv`` when it is a known one ('' for none: top-level help or --version)."""
    for token in argv:
        if token in ("-h", "--help", "--version"):
            return ""
        if not token.startswith("-"):
            return token if token in COMMANDS else None
    return ""


def _sub_parser_class() -> type[_Parser]:
    class _Sub(_Parser):
        def __init__(self, *args, **kwargs):
            kwargs.setdefault("formatter_class", _HelpFormatter)
            super().__init__(*args, **kwargs)

    return _Sub


def _epsilon_warning(args: argparse.Namespace) -> None:
    from .release import epsilon_notes

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


def command_parser(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The parser of the command that ``args`` runs (``stream append``, ``evaluate counting``, ...)."""
    current = parser
    for name in (args.command, getattr(args, "kind", None), getattr(args, "stream_command", None),
                 getattr(args, "ledger_command", None)):
        subs = [a for a in current._actions if isinstance(a, argparse._SubParsersAction)]
        if not name or not subs or name not in subs[0].choices:
            continue
        current = subs[0].choices[name]
    return current


def command_options(parser: argparse.ArgumentParser, args: argparse.Namespace) -> frozenset[str]:
    """The option strings of the command that ``args`` runs: the messages about work limits name only these."""
    return frozenset(o for a in command_parser(parser, args)._actions for o in a.option_strings)


# glibc's mallopt parameters (malloc.h)
_M_TOP_PAD = -2
_M_MMAP_THRESHOLD = -3
_TOP_PAD_BYTES = 32 << 20
_MMAP_THRESHOLD_BYTES = 4 << 20


def tune_allocator() -> bool:
    """Keep freed memory in the process for reuse (glibc only; True if the settings took).

    A command allocates and frees many arrays of 0.1 to 30 MB, one after another. glibc returns each to the
    operating system when it is freed (by ``munmap``, or by trimming the heap's top), and the next array of that
    size is faulted in again page by page, each page zeroed by the kernel: on retail's default ``diffpart`` that
    was 38,000 page faults and a tenth of the run, halved with these two settings.

    * ``M_TOP_PAD`` 32 MiB: the heap grows in 32 MiB steps and keeps that much at its top when memory is freed;
    * ``M_MMAP_THRESHOLD`` 4 MiB: blocks above it get a mapping of their own and go back to the system when freed.
      Setting any parameter stops glibc from moving the threshold by itself (from 128 KiB up to 32 MiB), so it is
      set here. A higher one keeps the large arrays in the heap, where the holes they leave raise the peak:
      ``stats`` on 1M kosarak-like records peaked at 125 MB with 32 MiB (and a 64 MiB pad), 97 MB with these
      values, 88 MB untuned; the default ``diffpart`` there 428 MB against 477 MB untuned.

    Only the command line calls this, never the library. Skipped where the allocator is not glibc's, and where
    the environment sets any ``MALLOC_*`` variable (the user's own tuning is kept)."""
    import os

    if not sys.platform.startswith("linux") or any(key.startswith("MALLOC_") for key in os.environ):
        return False
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD_BYTES)) and bool(mallopt(_M_TOP_PAD, _TOP_PAD_BYTES))


def main(argv: list[str] | None = None) -> int:
    import os

    # arrow's default pool (jemalloc/mimalloc) keeps freed blocks; the system allocator returns large ones to
    # the OS, so a column dropped after encoding no longer counts in the peak. A user's choice is kept.
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
    tune_allocator()
    argv = _join_negative_ranges(sys.argv[1:] if argv is None else [str(a) for a in argv])
    parser = build_parser(_requested_command(argv))
    if not argv:
        parser.print_help(sys.stderr)
        print("dprelease: error: choose a command (dprelease COMMAND --help for its options)", file=sys.stderr)
        return 2
    args = parser.parse_args(argv)
    import warnings

    from . import progress
    from .errors import PrivacyLeakWarning
    from .limits import limits_set
    from .release import run_started

    with run_started():  # created_utc of every manifest: the command's start, before any data is read
        warnings.simplefilter("default", PrivacyLeakWarning)
        _epsilon_warning(args)
        with limits_set(getattr(args, "max_output_records", None), getattr(args, "max_memory", None),
                        options=command_options(parser, args)), \
                progress.session(quiet=bool(getattr(args, "quiet", False))):
            return _run(args)


def _run(args: argparse.Namespace) -> int:
    from .errors import DPReleaseError

    # the full command in messages: "dprelease experiment diffgen-classification: error: ..."
    name = " ".join(str(x) for x in (args.command, getattr(args, "kind", None), getattr(args, "stream_command", None))
                    if x)
    from .commands.common import run_charged  # a releasing command with a ledger reserves its epsilon first

    try:
        return run_charged(args)
    except DPReleaseError as exc:
        print(f"dprelease {name}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"dprelease {name}: interrupted; no output was written", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 1
    except MemoryError:
        # name --max-memory only where the command has it
        bound = "; --max-memory bounds what dprelease attempts" if hasattr(args, "max_memory") else ""
        print(f"dprelease {name}: error: out of memory (raise the machine's memory or lower the "
              f"parameters{bound})", file=sys.stderr)
        return 2
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"dprelease {name}: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
