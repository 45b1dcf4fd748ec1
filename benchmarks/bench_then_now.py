"""Benchmark (not a test): each default command's end-to-end time in this tree against an older checkout.

The question it answers: did a change of a default make the command slower than the code before it? Both trees
run in this environment (``PYTHONPATH`` pointing at each ``src``), alternating run by run so that a busy moment
hits both, after both trees' byte code is compiled (an installed package has it; without it, a tree whose
``__pycache__`` is missing compiles its modules again on every run and looks 0.03-0.06 s slower than it is).
Secure noise unless a row says "seeded". Prints range and median per command and the ratio of the medians.

    git worktree add /tmp/old 2614f5c
    .venv/bin/python benchmarks/bench_then_now.py --old /tmp/old [--runs 5] [--only diffpart]

docs/scale.md ("The defaults' run time, then and now") holds a run against 2614f5c, the code before the
defaults changed. Rows whose command the old tree does not have (or spells differently) are given per tree.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _harness import DATASETS, REPO

SCHEMA = REPO / "examples" / "adult-schema.yaml"


def _rows(tmp: Path) -> list[tuple[str, list[list[str]], list[list[str]] | None]]:
    """(name, commands for this tree, commands for the old tree or None for the same)."""
    out = ["-o", str(tmp / "out"), "--force", "-q"]
    d = DATASETS
    retail = ["--universe", "0..16469"]
    rows: list[tuple[str, list[list[str]], list[list[str]] | None]] = []
    for name, path, spec in (("retail", "retail/retail.dat", "0..16469"), ("mushroom", "mushroom/mushroom.dat", "1..119"),
                             ("MSNBC", "msnbc/msnbc.dat", "1..17")):
        for seeded in (False, True):
            cmd = ["diffpart", str(d / path), "-e", "1", "--universe", spec, *(["--seed", "1"] if seeded else []), *out]
            rows.append((f"diffpart {name}{', seeded' if seeded else ''}", [cmd], None))
    rows.append(("privbasis retail, k = 100", [["privbasis", str(d / "retail/retail.dat"), "-k", "100", "-e", "1", *retail,
                                                *out]], None))
    rows.append(("privbasis MSNBC, k = 50, e = 0.5", [["privbasis", str(d / "msnbc/msnbc.dat"), "-k", "50", "-e", "0.5",
                                                       "--universe", "1..17", *out]], None))
    for graph in ("ca-hepth", "facebook"):
        rows.append((f"degrees {graph}, theta = 64", [["degrees", str(d / f"graphs/{graph}.txt"), "-e", "1", "--theta", "64",
                                                      *out]], None))
    adult = [str(d / "adult/adult.data"), "--schema", str(SCHEMA), "-e", "1"]
    rows.append(("rps Adult", [["rps", *adult, *out]], None))
    rows.append(("diffgen Adult (old: --specializations 10)", [["diffgen", *adult, *out]],
                 [["diffgen", *adult, "--specializations", "10", *out]]))
    state = str(tmp / "state.db")
    batches = [str(tmp / f"b{i}") for i in range(5)]
    stream = [["stream", "init", state, "--epsilon", "1", "--updates", "4", *retail, "-q"]]
    stream += [["stream", "append", state, b, *out] for b in batches]
    rows.append(("stream init + 5 appends of retail's fifths", stream, None))
    return rows


def _split_retail(tmp: Path) -> None:
    lines = (DATASETS / "retail" / "retail.dat").read_bytes().splitlines(keepends=True)
    for i in range(5):
        lo, hi = len(lines) * i // 5, len(lines) * (i + 1) // 5
        (tmp / f"b{i}").write_bytes(b"".join(lines[lo:hi]))


def _run(src: Path, commands: list[list[str]], tmp: Path) -> float:
    env = dict(os.environ, PYTHONPATH=str(src))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    for suffix in ("", "-wal", "-shm"):
        Path(str(tmp / "state.db") + suffix).unlink(missing_ok=True)
    start = time.perf_counter()
    for cmd in commands:
        done = subprocess.run([sys.executable, "-m", "dprelease.cli", *cmd], env=env, cwd=tmp, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"{src}: {' '.join(cmd[:2])} failed: {done.stderr.strip()[-300:]}")
    return time.perf_counter() - start


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", required=True, type=Path, help="a checkout of the older code (its src/ is used)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--only", default="", help="only the rows whose name contains this")
    args = ap.parse_args()
    if not (DATASETS / "retail" / "retail.dat").exists():
        print(f"skipped: the shared datasets are not at {DATASETS}")
        return 0
    trees = {"then": args.old.resolve() / "src", "now": REPO / "src"}
    for src in trees.values():  # compiled byte code for both, as an installed package has
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(src / "dprelease")], check=True,
                       stdout=subprocess.DEVNULL)
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        _split_retail(tmp)
        print(f"{'command':48} {'then':>24} {'now':>24}  now / then (medians)")
        for name, now_cmds, old_cmds in _rows(tmp):
            if args.only not in name:
                continue
            times: dict[str, list[float]] = {"then": [], "now": []}
            for _ in range(args.runs):
                times["then"].append(_run(trees["then"], old_cmds or now_cmds, tmp))
                times["now"].append(_run(trees["now"], now_cmds, tmp))
            cells = {k: f"{min(v):.2f}-{max(v):.2f} s ({statistics.median(v):.2f})" for k, v in times.items()}
            ratio = statistics.median(times["now"]) / statistics.median(times["then"])
            print(f"{name:48} {cells['then']:>24} {cells['now']:>24}  {ratio:.2f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
