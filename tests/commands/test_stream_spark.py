"""``dprelease stream append --engine spark``: the level-wise IncTDPart loop gives the same
seeded release and the same SQLite state, byte for byte, on Spark and on the local engine (``--level-wise``); the
refusals; the default local loop is unchanged.

One SparkSession on local[2] for the whole module (its start-up dominates); the Spark tests are skipped with the
reason where pyspark or Java is absent, and the MSNBC ones where ../shared/datasets is.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from dprelease.cli import main
from dprelease.data.io import read_transactions
from dprelease.data.universe import parse_universe_spec
from dprelease.engine.local import LocalTransactions
from dprelease.setvalued.inctdpart import TBPTree

from conftest import ZeroNoise, dataset

pytestmark = pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning")

SIZES = (2000, 1000, 1000)  # the initial dataset and two updates from the head of MSNBC
SEED = 7




@pytest.fixture(scope="module")
def batches(tmp_path_factory) -> list[Path]:
    """Three FIMI batches cut from the head of MSNBC."""
    src = dataset("msnbc", "msnbc.dat")
    folder = tmp_path_factory.mktemp("batches")
    out: list[Path] = []
    with open(src) as fh:
        for i, size in enumerate(SIZES):
            path = folder / f"b{i}.dat"
            path.write_text("".join(next(fh) for _ in range(size)))
            out.append(path)
    return out


def _parquet_copy(batch: Path, folder: Path) -> Path:
    """The batch as Parquet with an ``items`` list<int64> column."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [[int(x) for x in line.split()] for line in batch.read_text().splitlines()]
    path = folder / (batch.stem + ".parquet")
    pq.write_table(pa.table({"items": pa.array(rows, pa.list_(pa.int64()))}), path)
    return path


def _stream(folder: Path, batches: list[Path], *options: str, init: tuple[str, ...] = ()) -> list[Path]:
    """A seeded tdpart stream (epsilon 1, U = 3, universe 1..17) in ``folder``, one append per batch; the releases."""
    folder.mkdir(parents=True, exist_ok=True)
    state = folder / "state.db"
    assert main(["stream", "init", str(state), "--epsilon", "1", "--updates", "3", "--universe", "1..17",
                 "--seed", str(SEED), "-q", "--method", "faithful", *init]) == 0
    out = []
    for i, batch in enumerate(batches):
        release = folder / f"r{i}.dat"
        assert main(["stream", "append", str(state), str(batch), "-o", str(release), "-q", *options]) == 0
        out.append(release)
    return out


def _dump(state: Path) -> str:
    with sqlite3.connect(state) as conn:
        return "\n".join(conn.iterdump())


def _manifest(release: Path) -> dict:
    m = json.loads(Path(str(release) + ".manifest.json").read_text())
    m.pop("created_utc")  # the command's start time
    return m


def _loops(state: Path) -> list[str | None]:
    with sqlite3.connect(state) as conn:
        return [json.loads(r).get("loop") for (r,) in conn.execute("SELECT rng FROM ledger ORDER BY append_no")]


@pytest.mark.parametrize("routing", ["paper", "free"])
def test_spark_equals_local_level_wise(spark, batches, tmp_path, capsys, routing):
    init = ("--routing", routing)
    local = _stream(tmp_path / "local", batches, "--level-wise", init=init)
    # the last batch goes in as Parquet on Spark: the same records, another input format
    on_spark = batches[:-1] + [_parquet_copy(batches[-1], tmp_path)]
    remote = _stream(tmp_path / "spark", on_spark, "--engine", "spark", "--spark-master", "local[2]", init=init)
    for a, b in zip(local, remote):
        assert a.read_bytes() == b.read_bytes()
        assert _manifest(a) == _manifest(b)
    assert _dump(tmp_path / "local" / "state.db") == _dump(tmp_path / "spark" / "state.db")
    assert _loops(tmp_path / "spark" / "state.db") == ["level-wise"] * len(batches)
    assert local[-1].stat().st_size > 0


def test_spark_append_refusals(batches, tmp_path, capsys):
    """Refused before anything is read (no Spark session is needed to refuse)."""
    prefix = tmp_path / "prefix.db"
    assert main(["stream", "init", str(prefix), "--epsilon", "1", "--updates", "2", "--universe", "1..17",
                 "--partitioning", "prefix", "-q"]) == 0
    derived = tmp_path / "derived.db"
    assert main(["stream", "init", str(derived), "--epsilon", "1", "--updates", "2", "--partitioning", "tdpart",
                 "--universe", "derive", "-q"]) == 0
    capsys.readouterr()
    cases = [(prefix, ["--engine", "spark"], "--partitioning prefix"),
             (prefix, ["--level-wise"], "--partitioning prefix"),
             (derived, ["--engine", "spark"], "declared universe"),
             (derived, ["--level-wise"], "declared universe")]
    for state, options, words in cases:
        before = state.read_bytes()
        assert main(["stream", "append", str(state), str(batches[0]), "-o", str(tmp_path / "r.dat"), *options]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and words in err and err.startswith("dprelease stream append: error:"), err
        assert state.read_bytes() == before and not (tmp_path / "r.dat").exists()


def test_level_wise_without_noise_builds_the_default_tree(batches):
    """With no noise the draw order does not matter: both loops must build the same tree, node for node."""
    universe = parse_universe_spec("1..17")
    dbs = [read_transactions(b, universe)[0] for b in batches]
    for routing in ("paper", "free"):
        trees = []
        for level_wise in (False, True):
            tree = TBPTree(universe.size, 2.0, 3, routing=routing)
            for db in dbs:
                tree.append(LocalTransactions(db) if level_wise else db, ZeroNoise(), level_wise=level_wise)
            trees.append(tree)
        a, b = trees
        assert len(a.nodes) == len(b.nodes) > 1
        for x, y in zip(a.nodes, b.nodes):
            assert (x.parent, x.mask, x.cut, x.expand, x.psum, x.n) == (y.parent, y.mask, y.cut, y.expand, y.psum, y.n)
            assert np.isclose(x.inv_alpha, y.inv_alpha)


# sha256 of the seeded releases of the default local loop, as made before the level-wise loop existed
_DEFAULT_RELEASES = ("7345af179762464ab8582196af4e7ad36ac15939b82785e61f252311e93065c6",
                     "70e3c1493897457644736a474a58bdc1be7f3495731d5a0206024633209a4501",
                     "e2f305243033f7890d4c2d47641c6c81e3e32b46b548a2185fc4d4d602717d9e")


def test_default_local_loop_unchanged(batches, tmp_path, capsys):
    releases = _stream(tmp_path / "default", batches)
    assert tuple(hashlib.sha256(r.read_bytes()).hexdigest() for r in releases) == _DEFAULT_RELEASES
    assert _loops(tmp_path / "default" / "state.db") == [None] * len(batches)


def test_parquet_batch_on_the_local_engine(batches, tmp_path, capsys):
    """A Parquet batch (list-of-items column) gives the same append as its FIMI text, on the local engine too."""
    text = _stream(tmp_path / "text", batches[:2])
    parquet = _stream(tmp_path / "parquet", [batches[0], _parquet_copy(batches[1], tmp_path)])
    assert text[-1].read_bytes() == parquet[-1].read_bytes()
    assert _dump(tmp_path / "text" / "state.db") == _dump(tmp_path / "parquet" / "state.db")
