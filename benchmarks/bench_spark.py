"""--engine spark on local[2] against --engine local on generated kosarak-like files (not a test).

For each size N, ``dprelease generate`` writes N kosarak-like records (41,270 items, mean length 8), then each
command runs once per engine in a child process with the same seed (printed: whether the releases are
byte-identical; faithful DiffPart and ``stream append`` run ``--level-wise`` locally, the loop Spark runs (the
default DiffPart-Prefix builds in memory, which gives the level-wise release); for the stream
the state's SQL dump is compared too). Measured: wall time, and the peak resident memory (VmHWM, polled from /proc every 0.2 s) of

* the driver: the Python process that runs dprelease (it holds the release, the noise, the accountant and,
  on Spark, only the aggregates the executors return; it must not grow with N);
* on Spark, the JVM (driver and, in local mode, the executors: Spark's block cache of the parsed records)
  and the largest Python worker (the numpy kernels, one Arrow batch of 65,536 records at a time).

Printed: per row, and the ratios spark / local of time and driver peak. Generated files are deleted unless --keep.

    nice -n 10 .venv/bin/python benchmarks/bench_spark.py [--sizes 1000000,3000000,10000000]
        [--commands diffpart,privbasis] [--master local[2]] [--dir /tmp] [--keep]
    nice -n 10 .venv/bin/python benchmarks/bench_spark.py --commands stream --sizes 100000,1000000 \\
        [--stream-epsilon 1] [--stream-appends 2]
    nice -n 10 .venv/bin/python benchmarks/bench_spark.py --profile --sizes 1000000,3000000   # per-record costs
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from _harness import dprelease_cmd

UNIVERSE = "1..41270"


def _hwm_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _children(pid: int) -> list[int]:
    out = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as fh:
                out += [int(x) for x in fh.read().split()]
    except OSError:
        pass
    return out


def _kind(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            cmd = fh.read().replace(b"\0", b" ")
    except OSError:
        return "other"
    if b"java" in cmd.split(b" ")[0]:
        return "jvm"
    if b"pyspark.daemon" in cmd or b"pyspark.worker" in cmd:
        return "worker"
    return "other"


def run(argv: list[str]) -> dict[str, float]:
    """Run argv; poll the peak RSS of it (the driver) and of its descendants, by kind."""
    t = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    peaks = {"driver": 0, "jvm": 0, "worker": 0}
    while proc.poll() is None:
        peaks["driver"] = max(peaks["driver"], _hwm_kib(proc.pid))
        todo, seen = _children(proc.pid), set()
        while todo:
            pid = todo.pop()
            if pid in seen:
                continue
            seen.add(pid)
            kind = _kind(pid)
            if kind in peaks:
                peaks[kind] = max(peaks[kind], _hwm_kib(pid))
            todo += _children(pid)
        time.sleep(0.2)
    seconds = time.perf_counter() - t
    err = proc.stderr.read() if proc.stderr else ""
    if proc.returncode != 0:
        raise RuntimeError(f"{argv[1:4]} failed ({proc.returncode}): {err[-800:]}")
    return {"seconds": seconds, **{k: v / 1024 for k, v in peaks.items()}}


def _argv(command: str, data: Path, out: Path, engine: str, master: str) -> list[str]:
    common = ["--universe", UNIVERSE, "-e", "1", "--seed", "1", "-q", "--force", "--engine", engine,
              "--spark-master", master, "-o", str(out)]
    # the default DiffPart-Prefix releases about N records: over the default --max-output-records past 5M. Its
    # in-memory build equals the level-wise one Spark runs; faithful DiffPart runs --level-wise locally (the
    # loop Spark runs), so that the seeded releases must be identical
    if command == "diffpart":
        return [*dprelease_cmd(), "diffpart", str(data), "--max-output-records", "1000000000", *common]
    if command == "diffpart-faithful":
        return [*dprelease_cmd(), "diffpart", str(data), "--method", "faithful", "--level-wise", *common]
    if command in ("privbasis", "privbasis-faithful"):  # the default (bounded selection), or the paper's
        return [*dprelease_cmd(), "privbasis", str(data), "-k", "100", *common,
                *(["--faithful"] if command == "privbasis-faithful" else [])]
    if command == "tf":
        return [*dprelease_cmd(), "tf", str(data), "-k", "100", "-m", "2", *common]
    raise SystemExit(f"unknown command {command!r}")


def _split(data: Path, parts: int) -> list[Path]:
    """``data`` cut into ``parts`` consecutive batches of (nearly) equal size: the stream's appends."""
    with open(data, "rb") as fh:
        lines = fh.readlines()
    out, step = [], -(-len(lines) // parts)
    for i in range(parts):
        path = data.with_name(f"{data.stem}-batch{i}.dat")
        path.write_bytes(b"".join(lines[i * step : (i + 1) * step]))
        out.append(path)
    return out


def _dump(state: Path) -> str:
    import sqlite3

    with sqlite3.connect(state) as conn:
        return "\n".join(conn.iterdump())


def run_stream(batches: list[Path], scratch: Path, engine: str, master: str, epsilon: float) -> dict[str, object]:
    """``stream init`` (seeded, U = appends - 1) then one ``stream append`` per batch, each in a child process;
    local runs ``--level-wise`` (the loop Spark runs). Seconds and peaks over the appends (time: the sum; peaks:
    the largest); ``body``: the last release and the state's SQL dump (the same on both engines)."""
    state = scratch / f"stream-{engine}.db"
    out = scratch / f"stream-{engine}.out"
    for stale in (state, Path(f"{state}-wal"), Path(f"{state}-shm")):
        stale.unlink(missing_ok=True)
    subprocess.run([*dprelease_cmd(), "stream", "init", str(state), "--epsilon", str(epsilon), "--updates",
                    str(len(batches) - 1), "--universe", UNIVERSE, "--seed", "1", "--partitioning", "tdpart", "-q"], check=True,
                   stdout=subprocess.DEVNULL)
    loop = ["--level-wise"] if engine == "local" else []
    total = {"seconds": 0.0, "driver": 0.0, "jvm": 0.0, "worker": 0.0}
    for batch in batches:
        res = run([*dprelease_cmd(), "stream", "append", str(state), str(batch), "-o", str(out), "-q", "--engine",
                   engine, "--spark-master", master, *loop])
        total["seconds"] += res["seconds"]
        for k in ("driver", "jvm", "worker"):
            total[k] = max(total[k], res[k])
    body = out.read_bytes() + _dump(state).encode()
    for f in (out, Path(f"{out}.manifest.json"), state):
        f.unlink(missing_ok=True)
    return {**total, "body": body}


def _tree_cpu(pid: int) -> float:
    """CPU seconds (user + system) of a process and its live descendants (the JVM, the Python workers)."""
    total, todo, seen = 0.0, [pid], set()
    tick = os.sysconf("SC_CLK_TCK")
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        try:
            with open(f"/proc/{p}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
        except OSError:
            pass
        todo += _children(p)
    return total


def profile(data: Path, n: int, master: str) -> dict[str, float]:
    """In this process: the Spark read (parse + cache) and one pass (item supports) over the cached records,
    seconds per million records, and the size of Spark's cache of them (bytes per record): the inputs of the
    projection in docs/scale.md."""
    import numpy as np

    from dprelease.data.universe import parse_universe_spec
    from dprelease.engine import kernels
    from dprelease.engine.spark import read_transactions, session

    spark = session(master)
    cores = spark.sparkContext.defaultParallelism
    me = os.getpid()
    t, c = time.perf_counter(), _tree_cpu(me)
    remote = read_transactions(str(data), parse_universe_spec(UNIVERSE))
    read_s, read_cpu = time.perf_counter() - t, _tree_cpu(me) - c
    passes, cpus = [], []
    for _ in range(3):
        t, c = time.perf_counter(), _tree_cpu(me)
        remote.run_pass(kernels.item_supports)
        passes.append(time.perf_counter() - t)
        cpus.append(_tree_cpu(me) - c)
    t, c = time.perf_counter(), _tree_cpu(me)
    remote.run_pass(kernels.pair_supports, np.arange(100, dtype=np.int64))
    pair_s, pair_cpu = time.perf_counter() - t, _tree_cpu(me) - c
    cached = sum(info.memSize() + info.diskSize() for info in spark.sparkContext._jsc.sc().getRDDStorageInfo())
    remote.close()
    m = n / 1e6
    return {"N": n, "cores": cores, "read_s_per_M": round(read_s / m, 2), "read_cpu_s_per_M": round(read_cpu / m, 2),
            "item_pass_s_per_M": round(min(passes) / m, 3), "item_pass_cpu_s_per_M": round(min(cpus) / m, 3),
            "pair_pass_100_s_per_M": round(pair_s / m, 3), "pair_pass_100_cpu_s_per_M": round(pair_cpu / m, 3),
            "cache_bytes_per_record": round(cached / n, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000000,3000000,10000000", help="record counts N (comma-separated)")
    ap.add_argument("--commands", default="diffpart,privbasis",
                    help="diffpart (prefix), diffpart-faithful, privbasis (default), privbasis-faithful, tf, "
                         "stream (IncTDPart: N records cut into "
                         "--stream-appends batches, one `stream append` each; time summed over the appends)")
    ap.add_argument("--stream-epsilon", type=float, default=1.0,
                    help="stream: the whole stream's epsilon (paper accounting, U = appends - 1; default 1)")
    ap.add_argument("--stream-appends", type=int, default=2, help="stream: number of appends (default 2)")
    ap.add_argument("--master", default="local[2]", help="Spark master (default local[2])")
    ap.add_argument("--engines", default="local,spark",
                    help="engines to run, comma-separated (default local,spark; 'spark' alone measures the Spark "
                         "driver without the local run)")
    ap.add_argument("--data-dir", help="reuse (or keep) the generated files here (kosarak-like-N.dat)")
    ap.add_argument("--dir", default=tempfile.gettempdir(), help="scratch folder for the generated files")
    ap.add_argument("--keep", action="store_true", help="keep the generated files")
    ap.add_argument("--profile", action="store_true",
                    help="instead: per-record costs of the Spark read and of one pass, in this process")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    scratch = Path(tempfile.mkdtemp(prefix="bench-spark-", dir=args.dir))
    if args.profile:
        try:
            for n in sizes:
                data = scratch / f"kosarak-like-{n}.dat"
                subprocess.run([*dprelease_cmd(), "generate", str(data), "--records", str(n), "--items", "41270",
                                "-q", "--force", "--max-output-records", str(max(n, 5_000_000)), "--max-memory", "16G"],
                               check=True)
                print(json.dumps(profile(data, n, args.master)), flush=True)
                data.unlink()
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        return
    engines = [e for e in args.engines.split(",") if e]
    if not engines or set(engines) - {"local", "spark"}:
        ap.error("--engines: local, spark or local,spark")
    rows = []
    try:
        for n in sizes:
            data = (Path(args.data_dir) if args.data_dir else scratch) / f"kosarak-like-{n}.dat"
            if not (args.data_dir and data.exists()):
                subprocess.run([*dprelease_cmd(), "generate", str(data), "--records", str(n), "--items", "41270",
                                "-q", "--force", "--max-output-records", str(max(n, 5_000_000)), "--max-memory",
                                "16G"], check=True)
            batches = _split(data, args.stream_appends) if "stream" in args.commands.split(",") else []
            for command in args.commands.split(","):
                res = {}
                for engine in engines:
                    if command == "stream":
                        res[engine] = run_stream(batches, scratch, engine, args.master, args.stream_epsilon)
                        continue
                    out = scratch / f"{command}-{engine}-{n}.out"
                    res[engine] = run(_argv(command, data, out, engine, args.master))
                    res[engine]["body"] = out.read_bytes()
                    out.unlink()
                if len(engines) == 1:
                    only = res[engines[0]]
                    row1 = {"N": n, "command": command, "engine": engines[0], "seconds": round(only["seconds"], 1),
                            "driver_MB": round(only["driver"]), "jvm_MB": round(only["jvm"]),
                            "worker_MB": round(only["worker"])}
                    print(json.dumps(row1), flush=True)
                    continue
                loc, spk = res["local"], res["spark"]
                row = {"N": n, "command": command,
                       "local_s": round(loc["seconds"], 1), "spark_s": round(spk["seconds"], 1),
                       "time_ratio": round(spk["seconds"] / loc["seconds"], 2),
                       "local_driver_MB": round(loc["driver"]), "spark_driver_MB": round(spk["driver"]),
                       "driver_ratio": round(spk["driver"] / loc["driver"], 3),
                       "spark_jvm_MB": round(spk["jvm"]), "spark_worker_MB": round(spk["worker"]),
                       "identical": loc["body"] == spk["body"]}
                rows.append(row)
                print(json.dumps(row), flush=True)
            if not args.data_dir:
                data.unlink()
            for batch in batches:
                batch.unlink()
    finally:
        if not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)
    print("\nN, command: local s | spark s | spark/local time | driver MB local -> spark | JVM MB | worker MB | "
          "same release")
    for r in rows:
        print(f"{r['N']:>11,} {r['command']:<10} {r['local_s']:>7} {r['spark_s']:>7} {r['time_ratio']:>6}x "
              f"{r['local_driver_MB']:>6} -> {r['spark_driver_MB']:>4} ({r['driver_ratio']}x) {r['spark_jvm_MB']:>6} "
              f"{r['spark_worker_MB']:>5} {r['identical']}")


if __name__ == "__main__":
    main()
