"""Shared pieces of the command line: common options, reading input, reporting."""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the algorithms' modules are imported when a command runs, not to build the parser
    from ..data.transactions import TransactionDB
    from ..data.universe import Universe
    from ..privacy import NoiseSource

__all__ = [
    "add_epsilon", "add_seed", "add_universe", "add_quiet", "add_output",
    "epsilon_arg", "load_transactions", "noise_from_args", "say", "print_json", "timed",
]


def epsilon_arg(text: str) -> float:
    """argparse type for a privacy budget: a finite number > 0."""
    from ..privacy import check_epsilon

    try:
        return check_epsilon(text)
    except Exception as exc:  # argparse turns this into a usage error (exit 2)
        raise argparse.ArgumentTypeError(str(exc)) from None


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a whole number > 0, got {value}")
    return value


def add_epsilon(p: argparse.ArgumentParser, required: bool = True) -> None:
    p.add_argument("--epsilon", "-e", type=epsilon_arg, required=required, metavar="E",
                   help="total privacy budget epsilon (> 0) for this release")


def add_seed(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seed", type=int, default=None, metavar="S",
                   help="experiment mode: seeded, reproducible, NOT for publication (recorded in the manifest); "
                        "default is the secure RNG")


def add_universe(p: argparse.ArgumentParser) -> None:
    p.add_argument("--universe", metavar="SPEC", default=None,
                   help="the public item universe: LO..HI (integers) or a file with one item per line. "
                        "If omitted it is derived from the data, with a warning: that leaks which items occur")


def add_quiet(p: argparse.ArgumentParser) -> None:
    p.add_argument("--quiet", "-q", action="store_true", help="no progress or timing on stderr")


def add_output(p: argparse.ArgumentParser) -> None:
    p.add_argument("-o", "--output", required=True, metavar="OUTPUT",
                   help="release file; its manifest goes to OUTPUT.manifest.json")


def say(args: argparse.Namespace, message: str) -> None:
    """Progress/timing for the custodian on stderr (silenced by --quiet)."""
    if not getattr(args, "quiet", False):
        print(message, file=sys.stderr, flush=True)


def print_json(obj: object) -> None:
    print(json.dumps(obj, indent=None, sort_keys=False))


def noise_from_args(args: argparse.Namespace) -> NoiseSource:
    from ..privacy import make_noise

    return make_noise(getattr(args, "seed", None))


def load_transactions(path: str, universe_spec: str | None, args: argparse.Namespace | None = None
                      ) -> tuple[TransactionDB, Universe]:
    """Read a transaction file against a declared universe (or derive it, with the leak warning on stderr)."""
    from ..data.io import read_transactions
    from ..data.universe import parse_universe_spec
    from ..errors import PrivacyLeakWarning

    universe = parse_universe_spec(universe_spec) if universe_spec else None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", PrivacyLeakWarning)
        db, universe = read_transactions(path, universe)
    for w in caught:
        print(f"warning: {w.message}", file=sys.stderr)
    return db, universe


@contextmanager
def timed(args: argparse.Namespace, what: str):
    """Report wall time on stderr only (it depends on the data, so it never goes in a manifest)."""
    start = time.perf_counter()
    yield
    say(args, f"{what}: {time.perf_counter() - start:.2f} s")


def report_written(args: argparse.Namespace, release_path: Path, manifest: Path) -> None:
    print(f"release: {release_path}")
    print(f"manifest: {manifest}")
