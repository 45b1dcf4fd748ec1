"""Shared benchmark harness: time a command in a fresh process and read its peak memory."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATASETS = (REPO / ".." / "shared" / "datasets").resolve()

# Runs argv in a child and reports the child's wall time and peak resident memory (KiB on Linux).
_WRAPPER = (
    "import json, resource, subprocess, sys, time\n"
    "t = time.perf_counter()\n"
    "p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)\n"
    "dt = time.perf_counter() - t\n"
    "print(json.dumps({'rc': p.returncode, 'seconds': dt, 'peak_kib': resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, 'stderr': p.stderr[-500:]}))\n"
)

# The reference pass of the issues: plain Python reads the file once and counts item supports.
PLAIN_PASS = (
    "import sys\n"
    "from collections import Counter\n"
    "c = Counter()\n"
    "with open(sys.argv[1]) as fh:\n"
    "    for line in fh:\n"
    "        c.update(set(line.split()))\n"
    "print(len(c))\n"
)


def measure(argv: list[str]) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", _WRAPPER, *argv], capture_output=True, text=True, check=True)
    result = json.loads(out.stdout)
    if result["rc"] != 0:
        raise RuntimeError(f"{argv[:3]} failed: {result['stderr']}")
    return result


def plain_pass(path: Path) -> dict[str, float]:
    return measure([sys.executable, "-c", PLAIN_PASS, str(path)])


def dprelease_cmd() -> list[str]:
    exe = Path(sys.executable).with_name("dprelease")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "dprelease.cli"]


def best_of(n: int, fn, *args) -> dict[str, float]:
    runs = [fn(*args) for _ in range(n)]
    return min(runs, key=lambda r: r["seconds"])


def now() -> float:
    return time.perf_counter()
