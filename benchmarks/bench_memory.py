"""Peak memory of the transaction commands on generated kosarak-like files (not a test).

For each size N: ``dprelease generate`` writes N kosarak-like records (41,270 items, mean length 8) to a
scratch folder (or ``--data-dir`` keeps them and reuses them on the next run), then ``stats``, ``diffpart``
(the default, DiffPart-Prefix) and ``diffpart --method faithful``, ``privbasis`` (the default) and
``privbasis --faithful``, and ``evaluate counting`` (of the faithful DiffPart release) run on it, each in a
child process whose peak resident memory (``getrusage(RUSAGE_CHILDREN).ru_maxrss``) is read. ``--commands``
picks some of them. Every command also runs once on a 2-record file: that is its baseline (interpreter,
numpy, the command's modules).

Printed per command: peak MB, bytes per record (peak / N), and the ratio of (peak - baseline) to the CSR
arrays themselves (8 bytes per record of int64 offsets + 4 bytes per item of int32 ids). Targets: <= 100
bytes per record, ratio <= 1.5 (the reader); generated files are deleted unless --keep.

    .venv/bin/python benchmarks/bench_memory.py [--sizes 1000000,10000000] [--dir /tmp] [--keep]
        [--data-dir /tmp/kosarak-like] [--commands "privbasis --faithful,evaluate counting"]
    nice -n 10 .venv/bin/python benchmarks/bench_memory.py --sizes 30000000   # once; it takes a while
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from _harness import dprelease_cmd

UNIVERSE = "1..41270"

_WRAPPER = (  # runs argv in a child; reports its wall and CPU seconds and its peak resident memory (KiB on Linux)
    "import json, resource, subprocess, sys, time\n"
    "t = time.perf_counter()\n"
    "p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)\n"
    "dt = time.perf_counter() - t\n"
    "r = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
    "print(json.dumps({'rc': p.returncode, 'seconds': dt, 'cpu_s': r.ru_utime + r.ru_stime, 'peak_kib': r.ru_maxrss,"
    " 'stderr': p.stderr[-500:]}))\n"
)


def measure(argv: list[str]) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", _WRAPPER, *argv], capture_output=True, text=True, check=True)
    result = json.loads(out.stdout)
    if result["rc"] != 0:
        raise RuntimeError(f"{argv[:4]} failed: {result['stderr']}")
    return result


def _commands(data: Path, out: Path) -> dict[str, list[str]]:
    faithful = out / "diffpart-faithful-release.dat"  # evaluate counting reads this one
    return {
        "stats": ["stats", str(data), "--universe", UNIVERSE, "--json"],
        # DiffPart-Prefix releases about N records at 10M and more: over the default --max-output-records
        "diffpart": ["diffpart", str(data), "--universe", UNIVERSE, "-e", "1", "-o", str(out / "diffpart-release.dat"),
                     "--seed", "1", "-q", "--force", "--max-output-records", "1000000000"],
        "diffpart --method faithful": ["diffpart", str(data), "--universe", UNIVERSE, "-e", "1", "-o", str(faithful),
                                       "--method", "faithful", "--seed", "1", "-q", "--force"],
        "privbasis": ["privbasis", str(data), "--universe", UNIVERSE, "-k", "100", "-e", "1", "-o",
                      str(out / "privbasis.csv"), "--seed", "1", "-q", "--force"],
        "privbasis --faithful": ["privbasis", str(data), "--universe", UNIVERSE, "-k", "100", "-e", "1", "-o",
                                 str(out / "privbasis-faithful.csv"), "--faithful", "--seed", "1", "-q", "--force"],
        "evaluate counting": ["evaluate", "counting", str(data), str(faithful), "--universe", UNIVERSE, "--json"],
    }


COMMANDS = tuple(_commands(Path("x"), Path("y")))


def _facts(data: Path) -> dict[str, float]:
    out = subprocess.run([*dprelease_cmd(), "stats", str(data), "--universe", UNIVERSE, "--json"],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def run(sizes: list[int], scratch: Path, keep: bool, commands: tuple[str, ...] = COMMANDS,
        data_dir: Path | None = None) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    tiny = scratch / "tiny.dat"
    tiny.write_text("1 2 3\n4 5\n")
    base_out = scratch / "baseline"
    base_out.mkdir(exist_ok=True)
    # the faithful release first: evaluate counting reads it (its own baseline too)
    order = sorted(commands, key=lambda c: c != "diffpart --method faithful")
    if "evaluate counting" in commands and "diffpart --method faithful" not in commands:
        order.insert(0, "diffpart --method faithful (for evaluate counting)")
    baseline = {}
    for name in order:
        argv = _commands(tiny, base_out)[name.split(" (")[0]]
        baseline[name] = measure([*dprelease_cmd(), *argv])["peak_kib"] * 1024
    for n in sizes:
        folder = data_dir or scratch
        data = folder / f"kosarak-like-{n}.dat"
        if data_dir is None or not data.exists():
            folder.mkdir(parents=True, exist_ok=True)
            gen = measure([*dprelease_cmd(), "generate", str(data), "--records", str(n), "--items", "41270", "-q",
                           "--force"])
            rows.append({"N": n, "command": "generate", "seconds": round(gen["seconds"], 1),
                         "cpu_s": round(gen["cpu_s"], 1), "peak_MB": round(gen["peak_kib"] / 1024),
                         "bytes_per_record": round(gen["peak_kib"] * 1024 / n, 1)})
        facts = _facts(data)
        csr = 8 * (facts["N"] + 1) + 4 * round(facts["N"] * facts["avg_length"])
        out = scratch / f"out-{n}"
        out.mkdir(exist_ok=True)
        for name in order:
            r = measure([*dprelease_cmd(), *_commands(data, out)[name.split(" (")[0]]])
            if name not in commands:
                continue  # only made the release that evaluate counting reads
            peak = r["peak_kib"] * 1024
            rows.append({"N": n, "command": name, "seconds": round(r["seconds"], 1), "cpu_s": round(r["cpu_s"], 1),
                         "peak_MB": round(peak / 2**20),
                         "bytes_per_record": round(peak / n, 1),
                         "baseline_MB": round(baseline[name] / 2**20),
                         "csr_MB": round(csr / 2**20),
                         "net_over_csr": round((peak - baseline[name]) / csr, 2),
                         "net_bytes_per_record": round((peak - baseline[name]) / n, 1)})
            print(json.dumps(rows[-1]), flush=True)
        if not keep and data_dir is None:
            data.unlink()
        shutil.rmtree(out)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000000,10000000", help="comma-separated record counts")
    ap.add_argument("--dir", default=tempfile.gettempdir(), help="scratch folder for the generated files")
    ap.add_argument("--keep", action="store_true", help="keep the generated files")
    ap.add_argument("--data-dir", default=None,
                    help="keep the generated files here and reuse them when they exist (kosarak-like-N.dat)")
    ap.add_argument("--commands", default=",".join(COMMANDS),
                    help=f"comma-separated, of: {', '.join(COMMANDS)} (default: all)")
    ap.add_argument("--out", default=None, help="also write the rows as JSON here")
    args = ap.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="dprelease-bench-memory-", dir=args.dir))
    try:
        commands = tuple(c.strip() for c in args.commands.split(",") if c.strip())
        unknown = [c for c in commands if c not in COMMANDS]
        if unknown:
            ap.error(f"unknown --commands {unknown}; choose from {', '.join(COMMANDS)}")
        rows = run([int(x) for x in args.sizes.split(",")], scratch, args.keep, commands,
                   Path(args.data_dir) if args.data_dir else None)
    finally:
        if not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)
    print(f"{'N':>11} {'command':<26} {'peak MB':>8} {'B/record':>9} {'(peak-base)/N':>14} {'(peak-base)/CSR':>16} "
          f"{'CPU s':>7} {'wall s':>7}")
    for r in rows:
        print(f"{r['N']:>11,} {r['command']:<26} {r['peak_MB']:>8} {r['bytes_per_record']:>9} "
              f"{r.get('net_bytes_per_record', ''):>14} {r.get('net_over_csr', ''):>16} {r['cpu_s']:>7} {r['seconds']:>7}")
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
