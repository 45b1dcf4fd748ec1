"""``dprelease stream``: ledger, refusal past U (state byte-for-byte unchanged), re-emit, locking, SIGKILL safety."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dprelease.cli import main
from dprelease.data import Universe
from dprelease.data.generators import kosarak_like
from dprelease.data.io import atomic_output, write_transactions

N_ITEMS = 60


def _write_batch(path: Path, n: int, seed: int) -> Path:
    db = kosarak_like(n, N_ITEMS, 3.0, seed=seed)
    with atomic_output(path) as fh:
        write_transactions(fh, db, Universe.from_range(1, N_ITEMS))
    return path


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "dprelease.cli", *args]


def _status(state: Path, capsys) -> dict:
    capsys.readouterr()
    assert main(["stream", "status", str(state), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _dump(state: Path) -> str:
    with sqlite3.connect(str(state)) as conn:
        return "\n".join(conn.iterdump())


def _init(state: Path, updates: int, seed: int | None = 7, eps: float = 1.0) -> None:
    args = ["stream", "init", str(state), "--epsilon", str(eps), "--updates", str(updates),
            "--universe", f"1..{N_ITEMS}", "--fanout", "6", "--c1", "1.0", "--c2", "1.0", "-q"]
    if seed is not None:
        args += ["--seed", str(seed)]
    assert main(args) == 0


def test_ledger_refusal_and_reemit(tmp_path, capsys):
    state = tmp_path / "s.db"
    U, eps = 2, 1.2
    _init(state, U, eps=eps)
    st = _status(state, capsys)
    assert st == {"epsilon": eps, "epsilon_spent": 0.0, "updates": U, "appends": 0, "accounting": "paper",
                  "epsilon_per_append": pytest.approx(eps / (U + 1)), "privacy_unit": "person",
                  "max_batches_per_person": None, "privacy_unit_epsilon": pytest.approx(eps)}
    for i in range(U + 1):
        batch = _write_batch(tmp_path / f"b{i}.dat", 2000 if i == 0 else 400, seed=i)
        assert main(["stream", "append", str(state), str(batch), "-o", str(tmp_path / f"r{i}.dat"), "-q"]) == 0
        st = _status(state, capsys)
        assert st["appends"] == i + 1
        assert st["epsilon_spent"] == pytest.approx((i + 1) * eps / (U + 1))
        assert st["epsilon_spent"] <= eps * (1 + 1e-12)
        manifest = json.loads((tmp_path / f"r{i}.dat.manifest.json").read_text())
        assert manifest["privacy"]["epsilon_spent"] == pytest.approx((i + 1) * eps / (U + 1))
    with sqlite3.connect(str(state)) as conn:
        ledger = conn.execute("SELECT append_no, epsilon FROM ledger ORDER BY append_no").fetchall()
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert [a for a, _ in ledger] == list(range(U + 1))
    assert all(e == pytest.approx(eps / (U + 1)) for _, e in ledger)
    assert tables == {"meta", "ledger", "nodes", "counts"}  # no table of records

    before = state.read_bytes()
    extra = _write_batch(tmp_path / "extra.dat", 300, seed=99)
    capsys.readouterr()
    assert main(["stream", "append", str(state), str(extra), "-o", str(tmp_path / "r_extra.dat")]) == 2
    err = capsys.readouterr().err
    assert "refused" in err and len(err.strip().splitlines()) == 1
    assert state.read_bytes() == before
    assert not (tmp_path / "r_extra.dat").exists()
    assert _status(state, capsys)["appends"] == U + 1

    # re-emit: same release, nothing spent, state unchanged
    assert main(["stream", "release", str(state), "-o", str(tmp_path / "again.dat"), "-q"]) == 0
    assert (tmp_path / "again.dat").read_bytes() == (tmp_path / f"r{U}.dat").read_bytes()
    assert state.read_bytes() == before


def test_bad_input_changes_nothing(tmp_path, capsys):
    state = tmp_path / "s.db"
    _init(state, 3)
    good = _write_batch(tmp_path / "b0.dat", 1000, seed=1)
    assert main(["stream", "append", str(state), str(good), "-o", str(tmp_path / "r0.dat"), "-q"]) == 0
    before = state.read_bytes()
    bad = tmp_path / "bad.dat"
    bad.write_text("1 2 3\n4 5 999\n")
    capsys.readouterr()
    assert main(["stream", "append", str(state), str(bad), "-o", str(tmp_path / "r1.dat")]) == 2
    err = capsys.readouterr().err
    assert "bad.dat:2" in err and "999" in err
    assert state.read_bytes() == before and not (tmp_path / "r1.dat").exists()
    assert main(["stream", "init", str(state), "--epsilon", "1", "--updates", "2"]) == 2  # refuses to overwrite
    with pytest.raises(SystemExit) as exc:  # argparse: a usage error
        main(["stream", "init", str(tmp_path / "x.db"), "--epsilon", "1", "--updates", "2", "--fanout", "1"])
    assert exc.value.code == 2
    assert not (tmp_path / "x.db").exists()
    assert main(["stream", "status", str(tmp_path / "missing.db")]) == 2
    assert main(["stream", "release", str(tmp_path / "missing.db"), "-o", str(tmp_path / "o")]) == 2
    assert state.read_bytes() == before


def test_seeded_stream_is_reproducible(tmp_path):
    batches = [_write_batch(tmp_path / f"b{i}.dat", 800, seed=10 + i) for i in range(3)]
    dumps = []
    for run in range(2):
        state = tmp_path / f"s{run}.db"
        _init(state, 2, seed=5)
        for i, b in enumerate(batches):
            assert main(["stream", "append", str(state), str(b), "-o", str(tmp_path / f"r{run}{i}.dat"), "-q"]) == 0
        dumps.append(_dump(state))
    assert dumps[0] == dumps[1]
    assert (tmp_path / "r02.dat").read_bytes() == (tmp_path / "r12.dat").read_bytes()


def test_locked_state_fails_cleanly(tmp_path):
    state = tmp_path / "s.db"
    _init(state, 3)
    batch = _write_batch(tmp_path / "b0.dat", 500, seed=3)
    holder = sqlite3.connect(str(state), isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        before = _dump_no_lock(state)
        proc = subprocess.run(_cli("stream", "append", str(state), str(batch), "-o", str(tmp_path / "r.dat"),
                                   "--wait", "0.3"), capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2
        assert "another append" in proc.stderr
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert _dump(state) == before
    assert not (tmp_path / "r.dat").exists()


def _dump_no_lock(state: Path) -> str:
    with sqlite3.connect(f"file:{state}?mode=ro", uri=True) as conn:
        return "\n".join(conn.iterdump())


def test_two_concurrent_appenders(tmp_path, capsys):
    state = tmp_path / "s.db"
    _init(state, 5)
    b0 = _write_batch(tmp_path / "b0.dat", 2000, seed=1)
    assert main(["stream", "append", str(state), str(b0), "-o", str(tmp_path / "r0.dat"), "-q"]) == 0
    batches = [_write_batch(tmp_path / f"b{i}.dat", 3000, seed=20 + i) for i in (1, 2)]
    procs = [subprocess.Popen(_cli("stream", "append", str(state), str(b), "-o", str(tmp_path / f"c{i}.dat"), "-q"),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i, b in enumerate(batches)]
    codes = [p.wait(timeout=120) for p in procs]
    assert all(c in (0, 2) for c in codes) and 0 in codes
    st = _status(state, capsys)
    assert st["appends"] == 1 + codes.count(0)
    assert st["epsilon_spent"] == pytest.approx(st["appends"] / 6)
    with sqlite3.connect(str(state)) as conn:
        rows = conn.execute("SELECT append_no FROM ledger ORDER BY append_no").fetchall()
        dup = conn.execute("SELECT COUNT(*) FROM counts GROUP BY node, append_no HAVING COUNT(*) > 1").fetchall()
    assert [r[0] for r in rows] == list(range(st["appends"])) and not dup


def test_sigkill_leaves_state_before_or_after(tmp_path, capsys):
    """Kill `stream append` at random moments: the state is always the before or the after state."""
    base = tmp_path / "base.db"
    _init(base, 4)
    b0 = _write_batch(tmp_path / "b0.dat", 3000, seed=1)
    assert main(["stream", "append", str(base), str(b0), "-o", str(tmp_path / "r0.dat"), "-q"]) == 0
    batch = _write_batch(tmp_path / "b1.dat", 20000, seed=2)
    before = _dump(base)
    ref = tmp_path / "ref.db"
    shutil.copyfile(base, ref)
    start = time.perf_counter()
    subprocess.run(_cli("stream", "append", str(ref), str(batch), "-o", str(tmp_path / "ref.dat"), "-q"),
                   check=True, timeout=120)
    full = time.perf_counter() - start
    after = _dump(ref)
    assert after != before
    ref_release = (tmp_path / "ref.dat").read_bytes()
    rng = random.Random(12345)
    outcomes = {"before": 0, "after": 0}
    for k in range(24):
        state = tmp_path / f"k{k}.db"
        shutil.copyfile(base, state)
        out = tmp_path / f"k{k}.dat"
        proc = subprocess.Popen(_cli("stream", "append", str(state), str(batch), "-o", str(out), "-q"),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.0, full * 1.05))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        now = _dump(state)
        assert now in (before, after), f"kill {k}: state is neither before nor after"
        outcome = "before" if now == before else "after"
        outcomes[outcome] += 1
        st = _status(state, capsys)
        assert st["appends"] == (1 if outcome == "before" else 2)
        assert st["epsilon_spent"] == pytest.approx(st["appends"] / 5)
        if out.exists():  # written atomically after the commit: complete or absent
            assert outcome == "after" and out.read_bytes() == ref_release
        for f in (state, Path(f"{state}-wal"), Path(f"{state}-shm"), out):
            if f.exists():
                f.unlink()
    print("sigkill outcomes", outcomes, "append time", round(full, 2))
    assert outcomes["before"] > 0


def test_parallel_accounting_charges_each_batch_epsilon(tmp_path, capsys):
    """--accounting parallel: every append spends the full epsilon on its own batch; the stream's loss stays
    epsilon (disjoint batches); U is an optional limit; state, status and manifest say so."""
    state = tmp_path / "p.db"
    eps = 0.8
    assert main(["stream", "init", str(state), "--epsilon", str(eps), "--accounting", "parallel",
                 "--privacy-unit", "record", "--universe", f"1..{N_ITEMS}", "--fanout", "6", "--seed", "3", "-q"]) == 0
    st = _status(state, capsys)
    assert st == {"epsilon": eps, "epsilon_spent": 0.0, "updates": None, "appends": 0, "accounting": "parallel",
                  "epsilon_per_append": eps, "privacy_unit": "record", "max_batches_per_person": None,
                  "privacy_unit_epsilon": eps}
    for i in range(4):
        batch = _write_batch(tmp_path / f"b{i}.dat", 1500 if i == 0 else 300, seed=20 + i)
        assert main(["stream", "append", str(state), str(batch), "-o", str(tmp_path / f"r{i}.dat"), "-q"]) == 0
        st = _status(state, capsys)
        assert st["appends"] == i + 1 and st["epsilon_spent"] == pytest.approx(eps)
        manifest = json.loads((tmp_path / f"r{i}.dat.manifest.json").read_text())
        assert manifest["privacy"]["epsilon_spent"] == pytest.approx(eps)
        assert manifest["parameters"]["accounting"] == "parallel"
        assert manifest["parameters"]["epsilon_per_append"] == pytest.approx(eps)
        assert manifest["privacy_unit"] == manifest["parameters"]["privacy_unit"] == "record"
        assert manifest["privacy"]["privacy_unit_epsilon"] == eps
    with sqlite3.connect(str(state)) as conn:
        assert [e for (e,) in conn.execute("SELECT epsilon FROM ledger ORDER BY append_no")] == [eps] * 4
        meta = dict(conn.execute("SELECT key, value FROM meta"))
    assert json.loads(meta["accounting"]) == "parallel" and json.loads(meta["updates"]) is None
    # with --updates, parallel accounting refuses the (U + 2)-th append, and paper accounting needs U
    limited = tmp_path / "l.db"
    assert main(["stream", "init", str(limited), "--epsilon", "1", "--accounting", "parallel", "--updates", "0",
                 "--privacy-unit", "record", "--universe", f"1..{N_ITEMS}", "-q"]) == 0
    batch = _write_batch(tmp_path / "x.dat", 500, seed=5)
    assert main(["stream", "append", str(limited), str(batch), "-o", str(tmp_path / "x0.dat"), "-q"]) == 0
    capsys.readouterr()
    assert main(["stream", "append", str(limited), str(batch), "-o", str(tmp_path / "x1.dat"), "-q"]) == 2
    assert "refused" in capsys.readouterr().err
    assert main(["stream", "init", str(tmp_path / "n.db"), "--epsilon", "1", "--universe", "1..5", "-q"]) == 2
    assert "--updates is required" in capsys.readouterr().err


@pytest.mark.parametrize("accounting", ["paper", "parallel"])
def test_prefix_partitioning_stream(tmp_path, capsys, accounting):
    """--partitioning prefix: DiffPart-Prefix's trie in the state; later batches routed and counted; re-emit is
    byte-identical; the ledger and status follow the accounting."""
    state = tmp_path / "x.db"
    args = ["stream", "init", str(state), "--epsilon", "2", "--accounting", accounting, "--partitioning", "prefix",
            "--universe", f"1..{N_ITEMS}", "--seed", "5", "-q"]
    args += ["--privacy-unit", "record"] if accounting == "parallel" else []
    assert main(args + (["--updates", "3"] if accounting == "paper" else [])) == 0
    for i in range(4):
        batch = _write_batch(tmp_path / f"b{i}.dat", 2000 if i == 0 else 500, seed=40 + i)
        assert main(["stream", "append", str(state), str(batch), "-o", str(tmp_path / f"r{i}.dat"), "-q"]) == 0
        manifest = json.loads((tmp_path / f"r{i}.dat.manifest.json").read_text())
        assert manifest["algorithm"] == "inctdpart-prefix"
        assert manifest["release"]["records"] == len((tmp_path / f"r{i}.dat").read_text().splitlines())
    st = _status(state, capsys)
    assert st["appends"] == 4
    assert st["epsilon_spent"] == pytest.approx(2.0)
    with sqlite3.connect(str(state)) as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        eps = [e for (e,) in conn.execute("SELECT epsilon FROM ledger ORDER BY append_no")]
        n_classes = conn.execute("SELECT COUNT(*) FROM prefix_nodes WHERE is_class = 1").fetchone()[0]
        meta = {k: json.loads(v) for k, v in conn.execute("SELECT key, value FROM meta")}
    assert meta["expand"] is True and meta["prefix_tree"]["initial_total"] > 0  # expansion: on by default
    assert json.loads((tmp_path / "r3.dat.manifest.json").read_text())["parameters"]["expand"] is True
    assert tables == {"meta", "ledger", "nodes", "counts", "prefix_items", "prefix_support", "prefix_nodes"}
    assert eps == pytest.approx([0.5] * 4 if accounting == "paper" else [2.0] * 4)
    assert n_classes > 0
    assert main(["stream", "release", str(state), "-o", str(tmp_path / "again.dat"), "-q"]) == 0
    assert (tmp_path / "again.dat").read_bytes() == (tmp_path / "r3.dat").read_bytes()
    # replaying the seeded stream gives the same state and release (the trie and p-sums are deterministic)
    state2 = tmp_path / "y.db"
    args[2] = str(state2)
    assert main(args + (["--updates", "3"] if accounting == "paper" else [])) == 0
    for i in range(4):
        assert main(["stream", "append", str(state2), str(tmp_path / f"b{i}.dat"), "-o", str(tmp_path / f"s{i}.dat"),
                     "-q"]) == 0
    assert (tmp_path / "s3.dat").read_bytes() == (tmp_path / "r3.dat").read_bytes()
    # --no-expand: the same budget and p-sums, the bare prefixes released (the release before the expansion)
    state3 = tmp_path / "z.db"
    args[2] = str(state3)
    assert main(args + ["--no-expand"] + (["--updates", "3"] if accounting == "paper" else [])) == 0
    for i in range(4):
        assert main(["stream", "append", str(state3), str(tmp_path / f"b{i}.dat"), "-o", str(tmp_path / f"t{i}.dat"),
                     "-q"]) == 0
    assert json.loads((tmp_path / "t3.dat.manifest.json").read_text())["parameters"]["expand"] is False


# --- the privacy unit ------------------------------------------------------------------------------------------


def _init_argv(state: Path, *extra: str) -> list[str]:
    return ["stream", "init", str(state), "--epsilon", "0.5", "--universe", f"1..{N_ITEMS}", "--seed", "3", *extra]


@pytest.mark.parametrize("extra, words", [
    (["--accounting", "parallel"], "--accounting parallel needs --privacy-unit"),
    (["--accounting", "parallel", "--updates", "3"], "--accounting parallel needs --privacy-unit"),
    (["--updates", "3", "--privacy-unit", "record"], "--privacy-unit record goes with --accounting parallel"),
    (["--updates", "3", "--max-batches-per-person", "2"], "--max-batches-per-person goes with --accounting parallel"),
    (["--accounting", "parallel", "--privacy-unit", "record", "--max-batches-per-person", "2"],
     "--max-batches-per-person goes with --privacy-unit person"),
    (["--accounting", "parallel", "--privacy-unit", "person"], "needs a bound on the batches a person's records"),
    (["--updates", "3", "--method", "faithful", "--partitioning", "prefix"], "--method faithful is --partitioning"),
    (["--updates", "3", "--partitioning", "prefix", "--fanout", "4"], "--fanout only applies to --partitioning tdpart"),
    (["--updates", "3", "--partitioning", "tdpart", "--no-expand"], "--no-expand only applies to --partitioning prefix"),
    (["--updates", "3", "--c1", "2", "--no-refine"], "do not go together"),
])
def test_init_refuses_an_undeclared_or_inconsistent_privacy_unit(tmp_path, capsys, extra, words):
    """Parallel accounting protects a record, not a person: without a declaration it is refused (one line, exit 2,
    naming the option, no state); so is a declaration that does not hold for the accounting."""
    state = tmp_path / "s.db"
    capsys.readouterr()
    assert main(_init_argv(state, *extra)) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and words in err and err.startswith("dprelease stream init: error:"), err
    assert not state.exists() and not list(tmp_path.iterdir())


@pytest.mark.parametrize("extra, unit, k, unit_eps", [
    (["--updates", "3"], "person", None, 0.5),
    (["--updates", "3", "--privacy-unit", "person"], "person", None, 0.5),
    (["--accounting", "parallel", "--privacy-unit", "record"], "record", None, 0.5),
    (["--accounting", "parallel", "--privacy-unit", "person", "--max-batches-per-person", "2"], "person", 2, 1.0),
    (["--accounting", "parallel", "--privacy-unit", "person", "--max-batches-per-person", "9", "--updates", "3"],
     "person", 9, 2.0),
    (["--accounting", "parallel", "--privacy-unit", "person", "--updates", "1"], "person", None, 1.0),
])
def test_privacy_unit_in_state_status_and_every_manifest(tmp_path, capsys, extra, unit, k, unit_eps):
    state = tmp_path / "s.db"
    assert main(_init_argv(state, "-q", *extra)) == 0
    st = _status(state, capsys)
    assert (st["privacy_unit"], st["max_batches_per_person"], st["privacy_unit_epsilon"]) == (unit, k, unit_eps)
    with sqlite3.connect(str(state)) as conn:
        meta = {key: json.loads(v) for key, v in conn.execute("SELECT key, value FROM meta")}
    assert (meta["privacy_unit"], meta["max_batches_per_person"]) == (unit, k)
    for i in range(2):
        batch = _write_batch(tmp_path / f"b{i}.dat", 1500 if i == 0 else 300, seed=60 + i)
        assert main(["stream", "append", str(state), str(batch), "-o", str(tmp_path / f"r{i}.dat"), "-q"]) == 0
        manifest = json.loads((tmp_path / f"r{i}.dat.manifest.json").read_text())
        assert manifest["privacy_unit"] == manifest["parameters"]["privacy_unit"] == unit
        assert manifest["parameters"].get("max_batches_per_person") == k
        assert manifest["privacy"]["privacy_unit"] == unit and manifest["privacy"]["privacy_unit_epsilon"] == unit_eps
        assert ("at most one in each batch" in manifest["privacy"]["neighbours"]) == (unit == "person")
    assert main(["stream", "release", str(state), "-o", str(tmp_path / "again.dat"), "-q"]) == 0
    assert json.loads((tmp_path / "again.dat.manifest.json").read_text())["privacy_unit"] == unit
    capsys.readouterr()
    assert main(["stream", "status", str(state)]) == 0
    assert f"privacy_unit: {unit}" in capsys.readouterr().out


@pytest.mark.parametrize("accounting, updates, unit", [("paper", 2, "person"), ("parallel", None, "record")])
def test_a_state_made_before_the_declaration_opens_with_what_its_accounting_protects(tmp_path, capsys, accounting,
                                                                                    updates, unit):
    """Old states have no privacy_unit: the paper's accounting protected a person, parallel accounting a record."""
    state = tmp_path / "s.db"
    extra = ["--accounting", accounting] + (["--updates", str(updates)] if updates is not None else [])
    assert main(_init_argv(state, "-q", *extra, *(["--privacy-unit", "record"] if accounting == "parallel" else []))) == 0
    with sqlite3.connect(str(state)) as conn:  # the state as an older dprelease wrote it
        conn.execute("DELETE FROM meta WHERE key IN ('privacy_unit', 'max_batches_per_person')")
    st = _status(state, capsys)
    assert st["privacy_unit"] == unit and st["privacy_unit_epsilon"] == 0.5
    batch = _write_batch(tmp_path / "b.dat", 1000, seed=70)
    assert main(["stream", "append", str(state), str(batch), "-o", str(tmp_path / "r.dat"), "-q"]) == 0
    assert json.loads((tmp_path / "r.dat.manifest.json").read_text())["privacy_unit"] == unit


def test_default_partitioning_is_prefix_and_faithful_is_tdpart(tmp_path, capsys):
    """prefix is the default (it releases on sparse baskets, where tdpart releases nothing); --method faithful and
    the tdpart-only options select tdpart; an empty release's warning points to the other partitioning."""
    batch = _write_batch(tmp_path / "b.dat", 400, seed=80)

    def partitioning(name: str, *extra: str) -> str:
        state = tmp_path / f"{name}.db"
        assert main(_init_argv(state, "-q", "--updates", "2", *extra)) == 0
        with sqlite3.connect(str(state)) as conn:
            return json.loads(conn.execute("SELECT value FROM meta WHERE key = 'partitioning'").fetchone()[0])

    assert partitioning("default") == "prefix"
    assert partitioning("method-prefix", "--method", "prefix") == "prefix"
    assert partitioning("faithful", "--method", "faithful") == "tdpart"
    assert partitioning("tdpart", "--partitioning", "tdpart") == "tdpart"
    assert partitioning("fanout", "--fanout", "6") == "tdpart"  # scripts written before the default changed
    # tdpart at a small epsilon releases nothing on these sparse baskets; the warning names the prefix partitioning
    capsys.readouterr()
    assert main(["stream", "append", str(tmp_path / "faithful.db"), str(batch), "-o", str(tmp_path / "r.dat")]) == 0
    err = capsys.readouterr().err
    assert "the release is empty" in err and "--partitioning prefix" in err
    assert (tmp_path / "r.dat").read_text() == ""
    assert main(["stream", "append", str(tmp_path / "default.db"), str(batch), "-o", str(tmp_path / "d.dat"),
                 "-q"]) == 0
    assert (tmp_path / "d.dat").read_text() != ""
