"""--engine spark against --engine local: the same exact aggregates, and with a seed the
same release, byte for byte, for DiffPart (faithful and prefix), PrivBasis (default and faithful) and TF on samples
of MSNBC, retail and mushroom.

One SparkSession on local[2] for the whole module (its start-up, 30-45 s on a loaded machine, dominates);
skipped with the reason where pyspark or Java is absent. The standalone-cluster test is slow-marked.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from dprelease.data.io import read_transactions
from dprelease.data.transactions import TransactionDB
from dprelease.data.universe import parse_universe_spec
from dprelease.errors import InputError
from dprelease.engine.local import LocalTransactions
from dprelease.itemsets.exact import mine_frequent, top_k_itemsets
from dprelease.itemsets.privbasis import PrivBasisParams, privbasis
from dprelease.itemsets.tf import tf
from dprelease.privacy import make_noise
from dprelease.release import write_set_valued_release
from dprelease.setvalued import basic, diffpart
from dprelease.setvalued.prefixpart import prefix_diffpart

from conftest import REPO, dataset, spark_unavailable

FAITHFUL = PrivBasisParams.faithful()




def _sample(tmp_path: Path, name: str, source: Path, lines: int) -> Path:
    out = tmp_path / name
    with open(source, "rb") as fh, open(out, "wb") as dst:
        for i, line in enumerate(fh):
            if i >= lines:
                break
            dst.write(line)
    return out


def _body(release, path: Path) -> bytes:
    write_set_valued_release(release, path)
    return path.read_bytes()


def test_spark_passes_and_seeded_releases_match_local(spark, tmp_path):
    from dprelease.engine.spark import SparkTransactions, read_transactions as spark_read

    # 1. every pass on a small database with an empty record, split over two Spark partitions
    db = TransactionDB.from_lists([[0, 2, 3], [1], [], [0, 1, 2, 3, 4], [2, 4], [0, 3], [4], [1, 2]], 5)
    local, remote = LocalTransactions(db), SparkTransactions.from_db(db)
    items = np.array([0, 2, 3, 4])
    assert remote.summary().n_records == 7  # the empty record is no record on Spark (a blank line is none either)
    assert (remote.item_supports() == local.item_supports()).all()
    assert (remote.pair_supports(items) == local.pair_supports(items)).all()
    for a, b in zip(remote.pair_counts(items), local.pair_counts(items)):
        assert a.tolist() == b.tolist()
    bases = [(0, 2, 3), (1, 4)]
    for a, b in zip(remote.basis_bin_counts(bases), local.basis_bin_counts(bases)):
        assert a[1:].tolist() == b[1:].tolist()  # bin 0 differs by the empty record only
    sets = [(0,), (0, 3), (2, 4), (0, 2, 3)]
    assert remote.itemset_supports(sets).tolist() == local.itemset_supports(sets).tolist() == [3, 3, 2, 2]
    assert (remote.record_mask_counts()[1:] == local.record_mask_counts()[1:]).all()
    assert top_k_itemsets(remote, 6) == top_k_itemsets(db, 6)
    assert sorted(mine_frequent(remote, 2)) == sorted(mine_frequent(db, 2))
    # the weighted passes of PrivBasis's default and DiffPart-Prefix: the same bits
    lengths, counts = remote.length_histogram()
    assert lengths.tolist() == [1, 2, 3, 5] and counts.tolist() == [2, 3, 1, 1]  # no empty record on Spark
    for a, b in zip(remote.projected_length_histogram(items), local.projected_length_histogram(items)):
        assert a.tolist() == b.tolist()
    for ell in (1, 2, 7):
        assert remote.bounded_item_sums(ell).tobytes() == local.bounded_item_sums(ell).tobytes()
        assert remote.bounded_pair_sums(items, ell).tobytes() == local.bounded_pair_sums(items, ell).tobytes()
    rank = np.array([1, -1, 0, 2, -1])
    for level, patterns in ((0, [0]), (1, [1, 0]), (2, [1, 3])):
        assert (remote.prefix_level_counts(rank, np.array(patterns), level).tolist()
                == local.prefix_level_counts(rank, np.array(patterns), level).tolist())
    # ... and past one 62-bit word: F of 70 items, cells at level 65 (two-word patterns)
    wide = TransactionDB.from_lists([list(range(70)), list(range(0, 70, 2)), list(range(64)) + [65, 66], [69], []], 70)
    wl, wr = LocalTransactions(wide), SparkTransactions.from_db(wide)
    ranks = np.arange(70)
    full = np.array([[(1 << 62) - 1, 7], [(1 << 62) - 1, 3], [sum(1 << b for b in range(0, 62, 2)), 1]])
    assert (wr.prefix_level_counts(ranks, full, 65).tolist() == wl.prefix_level_counts(ranks, full, 65).tolist()
            == [0, 1, 0, 1, 0, 0])

    # 2. seeded releases on samples of the real datasets: byte-identical bodies
    cases = [("msnbc", dataset("msnbc", "msnbc.dat"), 20000, "1..17"),
             ("retail", dataset("retail", "retail.dat"), 2000, "0..16469"),
             ("mushroom", dataset("mushroom", "mushroom.dat"), 2000, "1..119")]
    for name, source, lines, spec in cases:
        path = _sample(tmp_path, f"{name}.dat", source, lines)
        universe = parse_universe_spec(spec)
        db, _ = read_transactions(path, universe)
        remote = spark_read(str(path), universe)
        assert remote.summary().n_records == db.n_records
        assert (remote.item_supports() == db.item_supports()).all()
        eps = {"msnbc": 1.0, "retail": 10.0, "mushroom": 15.0}[name]  # DiffPart releases something on mushroom
        a = diffpart(db, universe, eps, noise=make_noise(seed=11), level_wise=True)  # the loop Spark runs
        b = diffpart(remote, universe, eps, noise=make_noise(seed=11))
        assert _body(a, tmp_path / f"{name}-local.dat") == _body(b, tmp_path / f"{name}-spark.dat"), name
        assert a.n_records > 0 or name == "retail", name  # retail's 16,470 items spread the budget thin
        # the trie Spark builds (a pass per level: at most 12 levels here, to keep the test short) equals the local
        # in-memory build (records sorted by prefix key)
        a = prefix_diffpart(db, universe, 1.0, noise=make_noise(seed=15), level_wise=False, max_items=12)
        b = prefix_diffpart(remote, universe, 1.0, noise=make_noise(seed=15), max_items=12)
        assert _body(a, tmp_path / f"{name}-plocal.dat") == _body(b, tmp_path / f"{name}-pspark.dat"), name
        assert a.n_records > 0, name
        a = privbasis(db, universe, 20, 1.0, noise=make_noise(seed=12), params=FAITHFUL)
        b = privbasis(remote, universe, 20, 1.0, noise=make_noise(seed=12), params=FAITHFUL)
        assert a.itemsets == b.itemsets and a.counts.tolist() == b.counts.tolist(), name
        k = {"msnbc": 20, "retail": 50, "mushroom": 20}[name]  # msnbc and retail: the bounded selection
        a = privbasis(db, universe, k, 1.0, noise=make_noise(seed=16))
        b = privbasis(remote, universe, k, 1.0, noise=make_noise(seed=16))
        assert a.itemsets == b.itemsets and a.counts.tolist() == b.counts.tolist(), name
        assert a.trace == b.trace, name
        if name != "mushroom":
            assert a.trace["regime"] == "multi-bounded", (name, a.trace["regime"])
        a = tf(db, universe, 20, 1.0, 2, noise=make_noise(seed=13))
        b = tf(remote, universe, 20, 1.0, 2, noise=make_noise(seed=13))
        assert a.itemsets == b.itemsets and a.counts.tolist() == b.counts.tolist(), name
        if name == "msnbc":  # through the command line: diffpart's default on Spark
            from dprelease.cli import main

            for command in (["diffpart", "-e", "1"],):  # the command that refused its default on Spark before
                outs = []
                for engine in ("local", "spark"):
                    out = tmp_path / f"cli-{command[0]}-{engine}.out"
                    assert main([command[0], str(path), "--universe", spec, *command[1:], "--seed", "3",
                                 "--engine", engine, "--spark-master", "local[2]", "-o", str(out), "-q"]) == 0
                    outs.append(out.read_bytes())
                assert outs[0] == outs[1], command
            a = basic(db, universe, 1.0, noise=make_noise(seed=14))
            b = basic(remote, universe, 1.0, noise=make_noise(seed=14))
            assert _body(a, tmp_path / "basic-local.dat") == _body(b, tmp_path / "basic-spark.dat")
        remote.close()


def test_spark_partitioner_counts_a_level_one_partition_at_a_time_and_the_entry_points(spark, tmp_path):
    """The partitioner's contract on Spark: a partition not listed keeps its records, so counting a level partition
    by partition (the loop that draws between two partitions) gives the local engine's counts. Spark is reached
    through engine.open_transactions / open_table, as the commands reach it."""
    from dprelease.data.table import load_schema, read_table
    from dprelease.engine import in_memory, open_table, open_transactions
    from dprelease.engine.base import LevelOp
    from dprelease.engine.spark import SparkTable, SparkTransactions

    universe = parse_universe_spec("1..8")
    db = TransactionDB.from_lists([[0, 4]] * 5 + [[1, 2]] * 4 + [[5, 7]] * 3 + [[0, 6], [3], []], 8)
    remote = open_transactions(db, universe, engine="spark")
    assert isinstance(remote, SparkTransactions) and not in_memory(remote.engine_name)
    counted = []
    for data in (LocalTransactions(db), remote):
        p = data.partitioner()
        root = p.level_counts([LevelOp(0, 0, 8, 4)])[0]
        p.route([(0, int(m), 1 + j) for j, m in enumerate(root[0].tolist())])  # masks 1, 2, 3: pids 1, 2, 3
        got = [root]
        for pid in (3, 1):  # one partition at a time; partition 2 is not counted and keeps its records
            got.append(p.level_counts([LevelOp(pid, 0, 4, 1)])[pid])
            p.route([(pid, int(m), 10 * pid + j) for j, m in enumerate(got[-1][0].tolist())])
        got.append(p.level_counts([LevelOp(2, 4, 8, 1)])[2])
        counted.append([(m.tolist(), c.tolist()) for m, c in got])
        p.close()
    assert counted[0] == counted[1] == [([1, 2, 3], [5, 3, 6]), ([1], [6]), ([6, 8], [4, 1]), ([10], [3])]
    remote.close()
    schema = load_schema(REPO / "examples" / "table1-schema.yaml")
    table = open_table(REPO / "examples" / "table1-jobs.csv", schema, engine="spark")
    want = read_table(REPO / "examples" / "table1-jobs.csv", schema)
    assert isinstance(table, SparkTable) and table.n_records == want.n_records
    table.close()


def test_spark_input_errors_are_one_line(spark, tmp_path):
    from dprelease.engine.spark import read_transactions as spark_read
    from dprelease.errors import InputError

    bad = tmp_path / "bad.dat"
    bad.write_text("1 2\n3 99\n")
    with pytest.raises(InputError, match="item 99 is not in"):
        spark_read(str(bad), parse_universe_spec("1..5"))


def test_spark_diffgen_and_rps_cli_match_local(spark, tmp_path):
    """``diffgen --engine spark`` (headerless CSV and Parquet) and ``rps --engine spark`` write the releases of
    ``--engine local``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from dprelease.cli import main
    from dprelease.data.table import load_schema

    schema_path = REPO / "examples" / "adult-schema.yaml"
    csv = _sample(tmp_path, "adult.csv", dataset("adult", "adult.data"), 3000)
    schema = load_schema(schema_path)
    rows = [line.split(", ") for line in csv.read_text().splitlines() if line.strip()]
    pq.write_table(pa.table({c: [r[i].strip() for r in rows] for i, c in enumerate(schema.columns)}),
                   tmp_path / "adult.parquet")
    bodies = {}
    for name, source, engine in [("local", csv, "local"), ("spark", csv, "spark"),
                                 ("spark-pq", tmp_path / "adult.parquet", "spark")]:
        out = tmp_path / f"{name}.csv"
        assert main(["diffgen", str(source), "--schema", str(schema_path), "-e", "1", "-H", "8", "--seed", "5",
                     "--method", "faithful", "--engine", engine, "--spark-master", "local[2]", "-o", str(out), "-q"]) == 0
        bodies[name] = out.read_bytes()
    assert bodies["local"] == bodies["spark"] == bodies["spark-pq"]
    assert bodies["local"].count(b"\n") > 10

    # RPS: counts per region and split value on Spark (balanced medians; and with the noisy stop + consistency)
    for extra in ([], ["--stop-threshold", "20", "--consistency", "-H", "6"]):
        rps_bodies = []
        for engine in ("local", "spark"):
            out = tmp_path / f"rps-{engine}.csv"
            assert main(["rps", str(csv), "--schema", str(schema_path), "-e", "1", "--seed", "9", *extra,
                         "--engine", engine, "--spark-master", "local[2]", "-o", str(out), "-q", "--force"]) == 0
            rps_bodies.append(out.read_bytes())
        assert rps_bodies[0] == rps_bodies[1], extra
        assert rps_bodies[0].count(b"\n") > 100

    bad = tmp_path / "bad.csv"
    bad.write_text(csv.read_text().replace("State-gov", "Nowhere-gov", 1))
    with pytest.raises(InputError, match="'Nowhere-gov' is not a leaf") as err:
        from dprelease.engine.spark import read_table as spark_table

        spark_table(str(bad), schema)
    message = str(err.value)
    assert message.count("\n") == 0 and ": row " not in message and message.startswith(str(bad)), message


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for_port(port: int, proc: subprocess.Popen, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the Spark daemon exited with {proc.returncode}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.5)
    raise RuntimeError(f"nothing listens on port {port} after {seconds:.0f} s")


@pytest.mark.slow
def test_standalone_cluster_runs_diffpart_and_privbasis(tmp_path):
    """A standalone Spark master and two workers on localhost (pyspark's bin/spark-class: the pip package
    ships no sbin/start-master.sh), ``diffpart`` (prefix and faithful) and ``privbasis`` (default and ``--faithful``)
    through ``--spark-master spark://...``, byte-identical to ``--engine local``; the daemons are stopped at the end."""
    reason = spark_unavailable()
    if reason:
        pytest.skip(reason)
    import pyspark

    home = Path(pyspark.__file__).parent
    env = dict(os.environ, SPARK_HOME=str(home), SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable,
               SPARK_LOG_DIR=str(tmp_path / "logs"), SPARK_WORKER_DIR=str(tmp_path / "work"))
    port = _free_port()
    url = f"spark://127.0.0.1:{port}"
    daemons: list[subprocess.Popen] = []

    def daemon(*args: str) -> subprocess.Popen:
        log = open(tmp_path / f"daemon-{len(daemons)}.log", "wb")
        proc = subprocess.Popen([str(home / "bin" / "spark-class"), *args], env=env, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
        daemons.append(proc)
        return proc

    try:
        master = daemon("org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
                        "--webui-port", str(_free_port()))
        _wait_for_port(port, master, 120)
        for _ in range(2):
            daemon("org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1", "--cores", "1",
                   "--memory", "1g", "--webui-port", str(_free_port()))
        data = _sample(tmp_path, "msnbc.dat", dataset("msnbc", "msnbc.dat"), 20000)
        exe = [sys.executable, "-m", "dprelease.cli"]
        # DiffPart --level-wise locally: the loop Spark runs; the defaults (prefix, bounded PrivBasis) and the paper's
        for command in (["diffpart", "-e", "1", "--method", "faithful", "--level-wise"],
                        ["diffpart", "-e", "1", "--level-wise"], ["privbasis", "-k", "20", "-e", "1", "--faithful"],
                        ["privbasis", "-k", "20", "-e", "1"]):
            bodies = []
            for engine in ("local", "spark"):
                out = tmp_path / f"{command[0]}-{len(command)}-{engine}.out"
                run = subprocess.run(exe + [command[0], str(data), "--universe", "1..17", *command[1:], "--seed", "7",
                                            "--engine", engine, "--spark-master", url, "-o", str(out), "-q"],
                                     env=env, cwd=tmp_path, capture_output=True, text=True, timeout=900)
                assert run.returncode == 0, run.stderr[-2000:]
                bodies.append(out.read_bytes())
            assert bodies[0] == bodies[1], command
            assert bodies[0].count(b"\n") >= 5
    finally:
        for proc in daemons:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in daemons:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    assert all(proc.poll() is not None for proc in daemons)
