"""Start-up cost of the command line (not a test): ``dprelease --help`` and each command's
``--help``, as a ratio to ``python -c "import numpy"``.

Each figure is the best of --repeat runs of the CPU time (user + system) of a child process, which a busy
machine disturbs less than wall time. Byte-code is cached in a temporary folder (PYTHONPYCACHEPREFIX) and
warmed first, as an installed package has it; the repository's own folders stay untouched.

    .venv/bin/python benchmarks/bench_cli_startup.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile

from _harness import dprelease_cmd

HELPS = (["--help"], ["diffpart", "--help"], ["basic", "--help"], ["stats", "--help"], ["generate", "--help"],
         ["privbasis", "--help"], ["tf", "--help"], ["diffgen", "--help"], ["tds", "--help"], ["stream", "--help"],
         ["audit", "--help"], ["evaluate", "counting", "--help"], ["experiment", "--help"])


def cpu_seconds(argv: list[str], env: dict[str, str], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        best = min(best, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="dprelease-pycache-") as cache:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = cache
        for argv in HELPS:  # warm the byte-code cache
            subprocess.run([*dprelease_cmd(), *argv], env=env, capture_output=True, check=False)
        numpy = cpu_seconds([sys.executable, "-c", "import numpy"], env, args.repeat)
        python = cpu_seconds([sys.executable, "-c", "pass"], env, args.repeat)
        rows = [{"command": "python -c pass", "cpu_s": round(python, 3), "over_numpy": round(python / numpy, 2)},
                {"command": "python -c 'import numpy'", "cpu_s": round(numpy, 3), "over_numpy": 1.0}]
        for argv in HELPS:
            t = cpu_seconds([*dprelease_cmd(), *argv], env, args.repeat)
            rows.append({"command": "dprelease " + " ".join(argv), "cpu_s": round(t, 3), "over_numpy": round(t / numpy, 2)})
    for r in rows:
        print(json.dumps(r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
