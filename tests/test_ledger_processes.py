"""The ledger across processes: concurrent charges never overspend; SIGKILL never loses a charge.

The default run forks children that already have dprelease imported (fast, and the kills land at chosen
steps); the ``slow`` tests start real ``dprelease`` processes and kill them at random moments."""

from __future__ import annotations

import multiprocessing as mp
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dprelease import ledger
from dprelease.data import Universe
from dprelease.data.generators import kosarak_like
from dprelease.data.io import atomic_output, write_transactions
from dprelease.release import read_manifest

N_ITEMS = 40


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "dprelease.cli", *args]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("DPRELEASE_LEDGER", None)
    return env


def _write_data(path: Path, n: int, seed: int) -> Path:
    db = kosarak_like(n, N_ITEMS, 3.0, seed=seed)
    with atomic_output(path) as fh:
        write_transactions(fh, db, Universe.from_range(1, N_ITEMS))
    return path


def _hammer(path: str, start, results, n: int, eps: float) -> None:
    start.wait()
    ok = 0
    for i in range(n):
        try:
            ledger.reserve(path, f"worker-{os.getpid()}", eps, output=f"o{i}", created="2024-01-01T00:00:00+00:00")
            ok += 1
        except ledger.BudgetExceededError:
            pass
    results.put(ok)


def test_concurrent_reservations_never_overspend(tmp_path):
    """4 processes race 40 reservations of 0.01 each against a total of 1: exactly 100 are granted."""
    path = tmp_path / "l.db"
    ledger.init_ledger(path, dataset="d", epsilon=1.0)
    ctx = mp.get_context("fork")  # the children only touch the ledger file
    start, results = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_hammer, args=(str(path), start, results, 40, 0.01)) for _ in range(4)]
    for p in procs:
        p.start()
    start.set()
    granted = [results.get(timeout=300) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    st = ledger.ledger_status(path)
    assert sum(granted) == 100 == len(st.charges)
    assert st.spent == 1 and st.remaining == 0
    assert len({c.command for c in st.charges}) > 1  # the processes really interleaved


@pytest.mark.slow
def test_concurrent_release_processes_never_overspend(tmp_path):
    """Four releases of 0.3 started at once against a total of 1: three are written, one is refused."""
    led = tmp_path / "l.db"
    ledger.init_ledger(led, dataset="d", epsilon=1.0)
    data = _write_data(tmp_path / "d.dat", 3000, seed=1)
    procs = [subprocess.Popen(_cli("diffpart", str(data), "--universe", f"1..{N_ITEMS}", "-e", "0.3", "--fanout", "6",
                                   "-o", str(tmp_path / f"r{i}.dat"), "--ledger", str(led), "-q"),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
             for i in range(4)]
    outs = [p.communicate(timeout=300) for p in procs]
    codes = [p.returncode for p in procs]
    assert sorted(codes) == [0, 0, 0, 2], outs
    refused = codes.index(2)
    assert "refused" in outs[refused][1] and len(outs[refused][1].strip().splitlines()) == 1
    assert not (tmp_path / f"r{refused}.dat").exists()
    st = ledger.ledger_status(led)
    assert [c.state for c in st.charges] == ["complete"] * 3 and st.spent == ledger.exact_epsilon("0.9")
    assert sorted(c.output for c in st.charges) == sorted(str((tmp_path / f"r{i}.dat").resolve())
                                                          for i in range(4) if i != refused)


def _rows(path: Path) -> list[tuple]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return conn.execute("SELECT id, command, epsilon, output, state, covered_by FROM charges").fetchall()


def _reservation_time(argv: list[str], led: Path) -> tuple[float, float]:
    """Run once to the end; return (when the reservation became visible, total time)."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_env())
    seen = None
    while proc.poll() is None:
        if seen is None and _rows(led):
            seen = time.perf_counter() - start
        time.sleep(0.01)
    assert proc.returncode == 0
    total = time.perf_counter() - start
    return (seen if seen is not None else total), total


@pytest.mark.slow
def test_sigkill_at_random_moments_never_loses_a_charge(tmp_path):
    """Kill a charged release at random moments: the ledger holds no charge or the whole one; a release file
    never exists without its charge; a killed release leaves an incomplete reservation, still counted."""
    data = _write_data(tmp_path / "d.dat", 40000, seed=2)
    base = tmp_path / "base.db"
    ledger.init_ledger(base, dataset="d", epsilon=1.0)
    base_bytes = base.read_bytes()

    def argv(led: Path, out: Path) -> list[str]:
        return _cli("diffpart", str(data), "--universe", f"1..{N_ITEMS}", "-e", "0.3", "--fanout", "6",
                    "-o", str(out), "--ledger", str(led), "-q")

    ref = tmp_path / "ref.db"
    ref.write_bytes(base_bytes)
    t_reserved, full = _reservation_time(argv(ref, tmp_path / "ref.dat"), ref)
    rng = random.Random(2024)
    outcomes = {"none": 0, "incomplete": 0, "complete": 0}
    for k in range(16):
        led, out = tmp_path / f"k{k}.db", tmp_path / f"k{k}.dat"
        led.write_bytes(base_bytes)
        proc = subprocess.Popen(argv(led, out), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_env())
        if k % 2:  # anywhere in the run
            time.sleep(rng.uniform(0.0, full * 1.05))
        else:  # once the reservation is visible, within the first half of what remains of the run
            while not _rows(led) and proc.poll() is None:
                time.sleep(0.005)
            time.sleep(rng.uniform(0.0, 0.5 * (full - t_reserved)))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        rows = _rows(led)
        assert len(rows) <= 1, f"kill {k}: more than one charge"
        if not rows:
            outcomes["none"] += 1
            assert not out.exists(), f"kill {k}: a release without its charge"
            continue
        (cid, command, eps, output, state, covered) = rows[0]
        assert (cid, command, eps, output, covered) == (1, "diffpart", "0.3", str(out.resolve()), None)
        st = ledger.ledger_status(led)
        assert st.spent == ledger.exact_epsilon(0.3)  # counted either way
        if state == "complete":
            outcomes["complete"] += 1
            read_manifest(out)  # written, and the pair matches
        else:
            outcomes["incomplete"] += 1
            assert st.incomplete == 1
            if out.exists():  # killed after the write, before the completion: the whole pair
                read_manifest(out)
    print("sigkill outcomes", outcomes, "reserved at", round(t_reserved, 2), "of", round(full, 2), "s")
    assert outcomes["incomplete"] > 0


# --- forked children (default run) -----------------------------------------------------------------------


def _fork(run) -> int:
    """A child process running ``run()`` (exit code = its return value; 99 if it raised)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 99
        try:
            code = int(run())
        finally:
            os._exit(code)
    return pid


def _wait(pid: int) -> int:
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def _release_argv(data: Path, out: Path, led: Path, eps: str = "0.3") -> list[str]:
    return ["diffpart", str(data), "--universe", f"1..{N_ITEMS}", "-e", eps, "--fanout", "6", "-o", str(out),
            "--ledger", str(led), "--seed", "5", "-q"]


def test_concurrent_releases_never_overspend(tmp_path):
    """Four releases of 0.3 released at the same instant against a total of 1: three are written, one refused."""
    from dprelease.cli import main

    led = tmp_path / "l.db"
    ledger.init_ledger(led, dataset="d", epsilon=1.0)
    data = _write_data(tmp_path / "d.dat", 2000, seed=1)
    gate_r, gate_w = os.pipe()

    def child(i: int):
        def run() -> int:
            os.close(gate_w)
            os.read(gate_r, 1)  # every child starts when the gate opens
            return main(_release_argv(data, tmp_path / f"r{i}.dat", led))
        return run

    pids = [_fork(child(i)) for i in range(4)]
    os.close(gate_r)
    os.write(gate_w, b"go!!")
    os.close(gate_w)
    codes = [_wait(p) for p in pids]
    assert sorted(codes) == [0, 0, 0, 2]
    refused = codes.index(2)
    assert not (tmp_path / f"r{refused}.dat").exists()
    st = ledger.ledger_status(led)
    assert [c.state for c in st.charges] == ["complete"] * 3 and st.spent == ledger.exact_epsilon("0.9")
    assert sorted(c.output for c in st.charges) == sorted(str((tmp_path / f"r{i}.dat").resolve())
                                                          for i in range(4) if i != refused)


def _block_at(target: object, name: str, signal_fd: int, after: bool = False, nth: int = 1):
    """Replace ``target.name`` by a wrapper that, at its ``nth`` call, tells the parent (one byte on
    ``signal_fd``) and then hangs, before the call (or after it, with ``after``)."""
    real = getattr(target, name)
    calls = [0]

    def hang() -> None:
        os.write(signal_fd, b"!")
        while True:
            time.sleep(60)

    def wrapper(*args, **kwargs):
        calls[0] += 1
        if calls[0] == nth and not after:
            hang()
        result = real(*args, **kwargs)
        if calls[0] == nth:
            hang()
        return result

    setattr(target, name, wrapper)


@pytest.mark.parametrize("step", ["reserving", "reading", "writing", "written", "completing"])
def test_sigkill_at_each_step_never_loses_a_charge(tmp_path, step):
    """SIGKILL a charged release at each step: inside the reservation's transaction (no charge: it was never
    committed, and no data read), while reading the data, while writing, after the write and inside the
    completion's transaction (an incomplete charge, still counted). Never a release without its charge."""
    import dprelease.data.io as io_mod
    from dprelease.release import SetValuedRelease
    from dprelease.cli import main

    led = tmp_path / "l.db"
    ledger.init_ledger(led, dataset="d", epsilon=1.0)
    data = _write_data(tmp_path / "d.dat", 1000, seed=3)
    out = tmp_path / "r.dat"
    sig_r, sig_w = os.pipe()

    def run() -> int:
        os.close(sig_r)
        if step == "reserving":  # under the write lock, after reading the sum, before the INSERT commits
            _block_at(ledger, "_read", sig_w, after=True)
        elif step == "reading":
            _block_at(io_mod, "read_transactions", sig_w)
        elif step == "writing":  # the body is staged, the manifest not yet renamed
            _block_at(io_mod.StagedFile, "sha256", sig_w)
        elif step == "written":
            _block_at(SetValuedRelease, "write", sig_w, after=True)
        else:  # inside complete() (the second write transaction): the lock is held, nothing committed
            _block_at(ledger.sqlite_state, "begin_immediate", sig_w, after=True, nth=2)
        return main(_release_argv(data, out, led))

    pid = _fork(run)
    os.close(sig_w)
    assert os.read(sig_r, 1) == b"!", "the child never reached the step"
    os.kill(pid, signal.SIGKILL)
    assert _wait(pid) == -signal.SIGKILL
    os.close(sig_r)
    rows = _rows(led)
    if step == "reserving":
        assert rows == [] and not out.exists()
        return
    assert rows == [(1, "diffpart", "0.3", str(out.resolve()), "reserved", None)]
    st = ledger.ledger_status(led)
    assert st.spent == ledger.exact_epsilon("0.3") and st.incomplete == 1
    if step in ("reading", "writing"):
        assert not out.exists()
    else:
        read_manifest(out)  # the whole pair is there; its charge is counted, shown as incomplete
    # the next charge sees 0.7 left
    with pytest.raises(ledger.BudgetExceededError, match="only 0.7 of 1 remains"):
        ledger.reserve(led, "x", 0.8, output="o", created="t")

