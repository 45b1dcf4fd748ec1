"""Peak memory of the transaction commands on generated kosarak-like files (issue 11, section 1; not a test).

For each size N: ``dprelease generate`` writes N kosarak-like records (41,270 items, mean length 8) to a
scratch folder, then ``stats``, ``diffpart``, ``privbasis`` and ``evaluate counting`` run on it, each in a
child process whose peak resident memory (``getrusage(RUSAGE_CHILDREN).ru_maxrss``) is read. Every command
also runs once on a 2-record file: that is its baseline (interpreter, numpy, the command's modules).

Printed per command: peak MB, bytes per record (peak / N), and the ratio of (peak - baseline) to the CSR
arrays themselves (8 bytes per record of int64 offsets + 4 bytes per item of int32 ids). Targets: <= 100
bytes per record, ratio <= 1.5 (the reader); generated files are deleted unless --keep.

    .venv/bin/python benchmarks/bench_memory.py [--sizes 1000000,10000000] [--dir /tmp] [--keep]
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
    release = out / "diffpart-release.dat"
    return {
        "stats": ["stats", str(data), "--universe", UNIVERSE, "--json"],
        "diffpart": ["diffpart", str(data), "--universe", UNIVERSE, "-e", "1", "-o", str(release), "--seed", "1",
                     "-q", "--force"],
        "privbasis": ["privbasis", str(data), "--universe", UNIVERSE, "-k", "100", "-e", "1", "-o",
                      str(out / "privbasis.csv"), "--seed", "1", "-q", "--force"],
        "evaluate counting": ["evaluate", "counting", str(data), str(release), "--universe", UNIVERSE, "--json"],
    }


def _facts(data: Path) -> dict[str, float]:
    out = subprocess.run([*dprelease_cmd(), "stats", str(data), "--universe", UNIVERSE, "--json"],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def run(sizes: list[int], scratch: Path, keep: bool) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    tiny = scratch / "tiny.dat"
    tiny.write_text("1 2 3\n4 5\n")
    base_out = scratch / "baseline"
    base_out.mkdir(exist_ok=True)
    baseline = {name: measure([*dprelease_cmd(), *argv])["peak_kib"] * 1024
                for name, argv in _commands(tiny, base_out).items() if name != "evaluate counting"}
    base_release = base_out / "diffpart-release.dat"
    baseline["evaluate counting"] = measure([*dprelease_cmd(), "evaluate", "counting", str(tiny), str(base_release),
                                             "--universe", UNIVERSE, "--json"])["peak_kib"] * 1024
    for n in sizes:
        data = scratch / f"kosarak-like-{n}.dat"
        gen = measure([*dprelease_cmd(), "generate", str(data), "--records", str(n), "--items", "41270", "-q",
                       "--force"])
        facts = _facts(data)
        csr = 8 * (facts["N"] + 1) + 4 * round(facts["N"] * facts["avg_length"])
        rows.append({"N": n, "command": "generate", "seconds": round(gen["seconds"], 1), "cpu_s": round(gen["cpu_s"], 1),
                     "peak_MB": round(gen["peak_kib"] / 1024), "bytes_per_record": round(gen["peak_kib"] * 1024 / n, 1)})
        out = scratch / f"out-{n}"
        out.mkdir(exist_ok=True)
        for name, argv in _commands(data, out).items():
            r = measure([*dprelease_cmd(), *argv])
            peak = r["peak_kib"] * 1024
            rows.append({"N": n, "command": name, "seconds": round(r["seconds"], 1), "cpu_s": round(r["cpu_s"], 1),
                         "peak_MB": round(peak / 2**20),
                         "bytes_per_record": round(peak / n, 1),
                         "baseline_MB": round(baseline[name] / 2**20),
                         "csr_MB": round(csr / 2**20),
                         "net_over_csr": round((peak - baseline[name]) / csr, 2)})
            print(json.dumps(rows[-1]), flush=True)
        if not keep:
            data.unlink()
            shutil.rmtree(out)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000000,10000000", help="comma-separated record counts")
    ap.add_argument("--dir", default=tempfile.gettempdir(), help="scratch folder for the generated files")
    ap.add_argument("--keep", action="store_true", help="keep the generated files")
    ap.add_argument("--out", default=None, help="also write the rows as JSON here")
    args = ap.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="dprelease-bench-memory-", dir=args.dir))
    try:
        rows = run([int(x) for x in args.sizes.split(",")], scratch, args.keep)
    finally:
        if not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)
    print(f"{'N':>11} {'command':<18} {'peak MB':>8} {'B/record':>9} {'(peak-base)/CSR':>16} {'CPU s':>7} {'wall s':>7}")
    for r in rows:
        print(f"{r['N']:>11,} {r['command']:<18} {r['peak_MB']:>8} {r['bytes_per_record']:>9} "
              f"{r.get('net_over_csr', ''):>16} {r['cpu_s']:>7} {r['seconds']:>7}")
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
