"""a release body and its manifest are one unit.

The manifest records the body's sha256; it is renamed into place before the body, so a run killed between
the two renames leaves a new manifest beside an old body, which :func:`read_manifest` (and so every command
that reads a release) refuses, naming both files. Temp files carry their writer's pid; the next run on the
same output removes those of dead writers. Files follow the umask. ``created_utc`` is the run's start.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO

import dprelease.release.manifest as rel  # its clock (_now), patched by the created_utc tests
from dprelease.cli import main
from dprelease.data import Universe, read_transactions
from dprelease.data.io import remove_stale_temps
from dprelease.errors import InputError
from dprelease.privacy import make_noise
from dprelease.release import SetValuedRelease, build_manifest, manifest_path, read_manifest, write_with_manifest

EXAMPLE = REPO / "examples" / "baskets.dat"


def _write(out: Path, body: str, note: str = "x") -> None:
    write_with_manifest(out, lambda fh: fh.write(body), {"package": "dprelease", "algorithm": note})


def test_manifest_records_the_body_hash_and_name(tmp_path: Path):
    import hashlib

    out = tmp_path / "r.dat"
    _write(out, "1 2\n3\n")
    m = json.loads(manifest_path(out).read_text())
    assert m["body"] == "r.dat" and m["body_sha256"] == hashlib.sha256(b"1 2\n3\n").hexdigest()
    assert read_manifest(out)["algorithm"] == "x"
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_mismatched_pair_is_refused_naming_both_files(tmp_path: Path):
    out = tmp_path / "r.dat"
    _write(out, "1 2\n")
    out.write_text("1 2\n3 4\n")  # a body from another run
    with pytest.raises(InputError) as exc:
        read_manifest(out)
    assert str(out) in str(exc.value) and str(manifest_path(out)) in str(exc.value)
    manifest_path(out).unlink()
    with pytest.raises(InputError, match="no manifest"):
        read_manifest(out)


def test_manifest_of_another_body_and_old_manifests_are_refused(tmp_path: Path):
    a, b = tmp_path / "a.dat", tmp_path / "b.dat"
    _write(a, "1\n")
    b.write_text("1\n")
    manifest_path(b).write_text(manifest_path(a).read_text())
    with pytest.raises(InputError, match="is the manifest of 'a.dat'"):
        read_manifest(b)
    manifest_path(b).write_text(json.dumps({"package": "dprelease", "algorithm": "diffpart"}))
    with pytest.raises(InputError, match="records no body_sha256"):
        read_manifest(b)
    manifest_path(b).write_text("{not json")
    with pytest.raises(InputError, match="not a dprelease manifest"):
        read_manifest(b)


_CRASH = textwrap.dedent("""
    import os, sys
    from pathlib import Path
    import dprelease.data.io as io
    from dprelease.release import write_with_manifest
    real = os.replace
    calls = []
    def dying_replace(src, dst):
        calls.append(dst)
        if len(calls) == 2:   # the manifest is in place; killed before the body's rename
            os._exit(9)
        real(src, dst)
    io.os.replace = dying_replace
    out = Path(sys.argv[1])
    write_with_manifest(out, lambda fh: fh.write(sys.argv[2]), {"package": "dprelease", "algorithm": "new"})
""")


def test_kill_between_the_renames_is_detected_and_cleaned_up(tmp_path: Path, capsys):
    out = tmp_path / "r.dat"
    _write(out, "1 2\n", note="old")
    proc = subprocess.Popen([sys.executable, "-c", _CRASH, str(out), "1 2\n3 4\n"], stderr=subprocess.PIPE)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 9, stderr
    assert json.loads(manifest_path(out).read_text())["algorithm"] == "new"  # new manifest ...
    assert out.read_text() == "1 2\n"  # ... beside the old body
    stale = [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    assert len(stale) == 1 and f".{proc.pid}." in stale[0].name
    with pytest.raises(InputError, match="does not match its manifest"):
        read_manifest(out)
    # every reader refuses the pair with one line
    code = main(["evaluate", "counting", str(EXAMPLE), str(out), "--universe", "1..12", "--queries", "10"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and str(manifest_path(out)) in err
    # a temp file of a live writer (this process) is left alone; the dead writer's is removed by the next run
    live = tmp_path / f".r.dat.{os.getpid()}.abc123.tmp"
    live.write_text("in progress")
    _write(out, "5\n", note="next")
    assert read_manifest(out)["algorithm"] == "next" and out.read_text() == "5\n"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")) == [live.name]


def test_remove_stale_temps_keeps_other_outputs(tmp_path: Path):
    dead = 2**22 + 12345  # above the default pid_max: no such process
    for name in (f".r.dat.{dead}.x1.tmp", f".r.dat.manifest.json.{dead}.x2.tmp", f".other.dat.{dead}.x3.tmp"):
        (tmp_path / name).write_text("")
    removed = remove_stale_temps(tmp_path / "r.dat")
    assert [p.name for p in removed] == [f".r.dat.{dead}.x1.tmp"]
    assert len(list(tmp_path.iterdir())) == 2


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_files_follow_the_umask(tmp_path: Path, umask: int, mode: int):
    old = os.umask(umask)
    try:
        out = tmp_path / "r.dat"
        _write(out, "1\n")
    finally:
        os.umask(old)
    assert out.stat().st_mode & 0o777 == mode
    assert manifest_path(out).stat().st_mode & 0o777 == mode


def test_manifest_is_strict_json(tmp_path: Path):
    with pytest.raises(ValueError, match="non-finite"):
        write_with_manifest(tmp_path / "r.dat", lambda fh: fh.write("1\n"),
                            {"package": "dprelease", "parameters": {"bound": float("nan")}})
    assert list(tmp_path.iterdir()) == []  # nothing renamed, no temp left


def test_records_file_is_part_of_the_unit(tmp_path: Path, capsys):
    out = tmp_path / "t.csv"
    assert main(["diffgen", str(REPO / "examples" / "table1-jobs.csv"), "--schema",
                 str(REPO / "examples" / "table1-schema.yaml"), "-e", "1", "-H", "2", "-o", str(out), "--records",
                 "--seed", "1", "-q"]) == 0
    stdout = capsys.readouterr().out.splitlines()
    assert stdout == [f"release: {out}", f"records: {tmp_path / 't.records.csv'}", f"manifest: {manifest_path(out)}"]
    m = read_manifest(out)
    assert set(m["other_files"]) == {"t.records.csv"}
    (tmp_path / "t.records.csv").write_text("changed\n")
    with pytest.raises(InputError, match="t.records.csv does not match"):
        read_manifest(out)


# --- created_utc: the start of the run ------------------------------------------------------------------


class _Clock:
    """Each call is one hour later than the previous one."""

    def __init__(self):
        self.t = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)

    def __call__(self):
        now = self.t
        self.t += dt.timedelta(hours=1)
        return now


def test_created_utc_is_the_command_start(tmp_path: Path, monkeypatch, capsys):
    monkeypatch.setattr(rel, "_now", _Clock())
    out = tmp_path / "r.dat"
    assert main(["diffpart", str(EXAMPLE), "--universe", "1..12", "-e", "1", "-o", str(out), "-q"]) == 0
    assert read_manifest(out)["created_utc"] == "2024-01-01T00:00:00+00:00"


def test_created_utc_is_the_algorithm_entry_in_the_api(monkeypatch):
    from dprelease.itemsets.privbasis import privbasis
    from dprelease.itemsets.tf import tf
    from dprelease.setvalued import basic, diffpart

    db, universe = read_transactions(EXAMPLE, Universe.from_range(1, 12))
    for run in (lambda: diffpart(db, universe, 1.0, noise=make_noise(1)),
                lambda: basic(db, universe, 1.0, noise=make_noise(1)),
                lambda: privbasis(db, universe, 5, 1.0, noise=make_noise(1)),
                lambda: tf(db, universe, 5, 1.0, 2, noise=make_noise(1))):
        clock = _Clock()
        monkeypatch.setattr(rel, "_now", clock)
        manifest = run().manifest
        assert manifest["created_utc"] == "2024-01-01T00:00:00+00:00"


# --- API release objects carry the RNG mode; Solution 1 lists every source --------------------------------


def test_api_releases_carry_the_rng_mode():
    from dprelease.data.table import load_schema, read_table
    from dprelease.itemsets.privbasis import privbasis
    from dprelease.itemsets.tf import tf
    from dprelease.relational.diffgen import diffgen
    from dprelease.setvalued import basic, diffpart

    db, universe = read_transactions(EXAMPLE, Universe.from_range(1, 12))
    table = read_table(REPO / "examples" / "table1-jobs.csv", load_schema(REPO / "examples" / "table1-schema.yaml"))
    for release in (diffpart(db, universe, 1.0, noise=make_noise(3)), basic(db, universe, 1.0, noise=make_noise(3)),
                    privbasis(db, universe, 5, 1.0, noise=make_noise(3)), tf(db, universe, 5, 1.0, 2, noise=make_noise(3)),
                    diffgen(table, 1.0, 2, noise=make_noise(3))):
        rng = release.manifest["rng"]
        assert rng["mode"] == "seeded" and rng["seed"] == 3 and "NOT for publication" in rng["warning"]
        assert release.manifest["version"] and release.manifest["created_utc"]
    secure = privbasis(db, universe, 5, 1.0, noise=make_noise())
    assert secure.manifest["rng"] == {"mode": "secure", "seed": None}


def test_solution1_describes_every_noise_source():
    from dprelease.setvalued.baselines import solution1

    db, universe = read_transactions(EXAMPLE, Universe.from_range(1, 12))
    batches = [db.subset(np.arange(0, 1000)), db.subset(np.arange(1000, 3000))]
    release = solution1(batches, universe, 1.0, noises=[make_noise(11), make_noise(12)])
    rng = release.manifest["rng"]
    assert rng["mode"] == "seeded" and [s["seed"] for s in rng["sources"]] == [11, 12]


# --- epsilon above the sane range -----------------------------------------------------------------------


@pytest.mark.parametrize("eps", ["1e6", "1e308"])
def test_huge_epsilon_is_warned_on_stderr_and_in_the_manifest(tmp_path: Path, capsys, eps: str):
    out = tmp_path / "r.dat"
    assert main(["diffpart", str(EXAMPLE), "--universe", "1..12", "-e", eps, "-o", str(out), "-q"]) == 0
    err = capsys.readouterr().err
    assert "warning: epsilon" in err and "above 100" in err
    notes = read_manifest(out)["notes"]
    assert any("above 100" in n for n in notes)


def test_sane_epsilon_has_no_warning(tmp_path: Path, capsys):
    out = tmp_path / "r.dat"
    assert main(["diffpart", str(EXAMPLE), "--universe", "1..12", "-e", "100", "-o", str(out), "-q"]) == 0
    assert "above 100" not in capsys.readouterr().err
    assert "notes" not in read_manifest(out) or not any("above" in n for n in read_manifest(out)["notes"])


def test_empty_release_round_trip(tmp_path: Path):
    universe = Universe.from_range(1, 4)
    release = SetValuedRelease([], np.zeros(0, dtype=np.int64), universe,
                               build_manifest("test", epsilon=1.0, parameters={}, noise=make_noise(1), accountant=None,
                                              domain=universe.describe(), release={"records": 0}))
    out = tmp_path / "empty.dat"
    release.write(out)
    assert out.read_text() == "" and read_manifest(out)["release"]["records"] == 0
