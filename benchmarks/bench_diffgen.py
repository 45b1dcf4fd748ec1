"""Benchmark DiffGen (not a test): Adult at h = 15, eps = 1, and a 1,000,000-row table.

The large table is made as DiffGen section 5 does: every Adult record r gets alpha - 1
random variations, each replacing some attribute values by random values of the same
domain (here: the value of that attribute in another random Adult record, so the
marginals stay realistic); rows are then cut to exactly 1,000,000.

Reports wall time (best of 3) of (a) the DiffGen algorithm, (b) the whole release
(read + validate + DiffGen + write CSV), each as a ratio to reading the same file
once with pyarrow.csv and with pandas.read_csv. Target: <= 5x the read.

    /work/venv/bin/python benchmarks/bench_diffgen.py [--rows 1000000] [--out results/diffgen/bench.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from dprelease.data.table import load_schema, read_adult, read_table, write_frame  # noqa: E402
from dprelease.privacy import make_noise  # noqa: E402
from dprelease.relational import diffgen  # noqa: E402

ADULT = REPO.parent / "shared" / "datasets" / "adult"


def header_schema(tmp: Path) -> Path:
    """The Adult schema for files with a header row (no 'columns' list)."""
    obj = yaml.safe_load((REPO / "examples" / "adult-schema.yaml").read_text())
    obj.pop("columns")
    path = tmp / "adult-header-schema.yaml"
    path.write_text(yaml.safe_dump(obj, sort_keys=False))
    return path


def adult_frame(table) -> pd.DataFrame:
    schema = table.schema
    data = {}
    for a, col in zip(schema.attributes, table.columns):
        data[a.name] = col.astype(np.int64) if a.kind == "numeric" else np.asarray(a.taxonomy.leaf_labels)[col]
    data[schema.class_attribute.name] = np.asarray(schema.class_attribute.values)[table.y]
    return pd.DataFrame(data)


def blow_up(frame: pd.DataFrame, rows: int, seed: int = 0, p_replace: float = 0.3) -> pd.DataFrame:
    """Section 5: alpha - 1 variations per record, some values replaced at random from the same domain."""
    rng = np.random.default_rng(seed)
    n = len(frame)
    alpha = -(-rows // n)
    base = np.tile(np.arange(n), alpha)[:rows]
    out = {}
    variation = np.arange(rows) >= n  # the first copy is the original records
    for c in frame.columns:
        col = frame[c].to_numpy()
        vals = col[base]
        if c != "income":
            swap = variation & (rng.random(rows) < p_replace)
            vals = vals.copy()
            vals[swap] = col[rng.integers(0, n, int(swap.sum()))]
        out[c] = vals
    return pd.DataFrame(out)


REPEATS = 3  # every timing is the best of 3 (the machine is shared)


def _best(fn) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def read_baselines(path: Path) -> dict[str, float]:
    import pyarrow.csv as pacsv

    return {"pyarrow_read_s": _best(lambda: pacsv.read_csv(path))[0],
            "pandas_read_s": _best(lambda: pd.read_csv(path))[0]}


def bench_file(path: Path, schema_path: Path, h: int, eps: float, seed: int) -> dict[str, object]:
    base = read_baselines(path)
    schema = load_schema(schema_path)
    t_read, table = _best(lambda: read_table(path, schema))
    t_gen, release = _best(lambda: diffgen(table, eps, h, noise=make_noise(seed)))
    with tempfile.TemporaryDirectory() as tmp:
        t_write, _ = _best(lambda: write_frame(release.arrow(), Path(tmp) / "out.csv"))
    res = {"rows": table.n_records, "h": h, "epsilon": eps, "read_validate_s": t_read, "diffgen_s": t_gen,
           "write_s": t_write, "total_s": t_read + t_gen + t_write, "leaf_partitions": int(release.cells.shape[0]),
           **base}
    for k in ("pyarrow", "pandas"):
        res[f"diffgen_over_{k}_read"] = res["diffgen_s"] / base[f"{k}_read_s"]
        res[f"total_over_{k}_read"] = res["total_s"] / base[f"{k}_read_s"]
    return res


# --- the headerless form end to end, in child processes (CPU time and peak memory) -----------

_PYARROW_READ = (
    "import sys, pyarrow.csv as c\n"
    "t = c.read_csv(sys.argv[1], read_options=c.ReadOptions(column_names=sys.argv[2].split(',')))\n"
    "print(t.num_rows)\n"
)


_WRAPPER = (  # runs argv in a child and reports that child's CPU time and peak resident memory (KiB on Linux)
    "import json, resource, subprocess, sys\n"
    "p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
    "r = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
    "print(json.dumps({'rc': p.returncode, 'cpu_s': r.ru_utime + r.ru_stime, 'peak_kib': r.ru_maxrss}))\n"
)


def _child(argv: list[str]) -> dict[str, float]:
    """CPU seconds (user + system, best of REPEATS) and peak resident MB of a command in its own process."""
    import subprocess

    best_cpu, peak = float("inf"), 0.0
    for _ in range(REPEATS):
        out = subprocess.run([sys.executable, "-c", _WRAPPER, *argv], capture_output=True, text=True, check=True)
        r = json.loads(out.stdout)
        if r["rc"] != 0:
            raise RuntimeError(f"{argv[:3]} failed")
        best_cpu = min(best_cpu, r["cpu_s"])
        peak = max(peak, r["peak_kib"] / 1024)
    return {"cpu_s": best_cpu, "peak_MB": peak}


def bench_headerless(path: Path, schema_path: Path, h: int, eps: float, seed: int, tmp: Path) -> dict[str, object]:
    """`dprelease diffgen` on a headerless file (the schema's `columns:` form) vs one pyarrow read of it.

    Ratios: CPU time of the whole command over a process that only reads the file with pyarrow (target
    <= 2.5), the in-process read+validate over pyarrow's read, and the command's peak memory above its
    baseline (the same command on a one-row file) over the encoded columns (8 bytes per value; target <= 2).
    """
    schema = load_schema(schema_path)
    exe = Path(sys.executable).with_name("dprelease")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "dprelease.cli"]

    def diffgen_cmd(data: Path, out: Path) -> list[str]:
        return [*cmd, "diffgen", str(data), "--schema", str(schema_path), "-e", str(eps), "--method", "faithful",
                "--specializations", str(h),
                "-o", str(out), "--seed", str(seed), "-q", "--force"]

    one_row = tmp / "one-row.csv"
    with open(path) as fh:
        one_row.write_text(fh.readline())
    baseline = _child(diffgen_cmd(one_row, tmp / "one-row-out.csv"))
    command = _child(diffgen_cmd(path, tmp / "headerless-out.csv"))
    pyarrow_proc = _child([sys.executable, "-c", _PYARROW_READ, str(path), ",".join(schema.columns or ())])
    import pyarrow.csv as pacsv

    def cpu(fn):
        t = time.process_time()
        out = fn()
        return time.process_time() - t, out

    t_pa = min(cpu(lambda: pacsv.read_csv(path, read_options=pacsv.ReadOptions(column_names=list(schema.columns))))[0]
               for _ in range(REPEATS))
    reads = [cpu(lambda: read_table(path, schema)) for _ in range(REPEATS)]
    t_read, table = min(reads, key=lambda r: r[0])
    encoded_mb = (sum(c.nbytes for c in table.columns) + table.y.nbytes) / 2**20
    return {"rows": table.n_records, "h": h, "epsilon": eps,
            "command_cpu_s": round(command["cpu_s"], 2), "pyarrow_read_process_cpu_s": round(pyarrow_proc["cpu_s"], 2),
            "command_over_pyarrow_read": round(command["cpu_s"] / pyarrow_proc["cpu_s"], 2),
            "read_table_cpu_s": round(t_read, 2), "pyarrow_read_cpu_s": round(t_pa, 2),
            "read_table_over_pyarrow_read": round(t_read / t_pa, 2),
            "command_peak_MB": round(command["peak_MB"]), "baseline_peak_MB": round(baseline["peak_MB"]),
            "pyarrow_read_peak_MB": round(pyarrow_proc["peak_MB"]), "encoded_columns_MB": round(encoded_mb),
            "net_peak_over_encoded": round((command["peak_MB"] - baseline["peak_MB"]) / encoded_mb, 2)}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--headerless-only", action="store_true",
                    help="only the measurement of the headerless form (skips the header-row tables)")
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--h", type=int, default=15)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default=str(REPO / "results" / "diffgen" / "bench.json"))
    args = ap.parse_args()
    schema = load_schema(REPO / "examples" / "adult-schema.yaml")
    adult = adult_frame(read_adult(ADULT, schema))
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        big_frame = blow_up(adult, args.rows)
        if not args.headerless_only:
            hs = header_schema(tmp)
            small = tmp / "adult.csv"
            adult.to_csv(small, index=False)
            results.append({"table": "adult", **bench_file(small, hs, args.h, args.epsilon, args.seed)})
            big = tmp / "adult_1m.csv"
            big_frame.to_csv(big, index=False)
            results.append({"table": f"adult-variations-{args.rows}", **bench_file(big, hs, args.h, args.epsilon,
                                                                                    args.seed)})
        headerless = tmp / "adult_1m_headerless.csv"
        big_frame.to_csv(headerless, index=False, header=False)
        del big_frame
        results.append({"table": f"adult-variations-{args.rows}-headerless",
                        **bench_headerless(headerless, REPO / "examples" / "adult-schema.yaml", args.h, args.epsilon,
                                           args.seed, tmp)})
    for r in results:
        print(json.dumps({k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()}))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
