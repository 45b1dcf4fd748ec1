"""Every bad input a new user meets gives exit 2, exactly one line on stderr, no traceback, no file
left behind and every input unchanged -- run as one parametrised test over the whole list.

Each case runs in a fresh copy of a small workspace (transaction files, a schema and table, a stream state,
a release with its manifest, corrupt and binary files). The cases call ``dprelease.cli.main`` in-process
(argparse usage errors raise ``SystemExit(2)``, handled alike); the console script is exercised by a few
subprocess cases at the end.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import REPO

from dprelease.cli import main

SCHEMA = REPO / "examples" / "table1-schema.yaml"
TABLE = REPO / "examples" / "table1-jobs.csv"


@dataclass(frozen=True)
class Case:
    name: str
    argv: tuple[str, ...]
    expect: str  # a piece of the one error line (case-insensitive)


def _c(name: str, expect: str, *argv: str) -> Case:
    return Case(name, tuple(argv), expect)


# {w} is the case's workspace folder. `out` names never exist beforehand unless a case says so.
CASES = [
    # --- section 3: tracebacks before -------------------------------------------------------------
    _c("gz-truncated", "truncated or corrupt", "diffpart", "{w}/trunc.dat.gz", "--universe", "1..12", "-e", "1", "-o", "{w}/o.dat"),
    _c("gz-corrupt", "truncated or corrupt", "diffpart", "{w}/corrupt.dat.gz", "--universe", "1..12", "-e", "1", "-o", "{w}/o.dat"),
    _c("gz-truncated-stats", "truncated or corrupt", "stats", "{w}/trunc.dat.gz", "--universe", "1..12"),
    _c("universe-binary", "not a text file", "diffpart", "{w}/small.dat", "--universe", "{w}/binary.bin", "-e", "1", "-o", "{w}/o.dat"),
    _c("universe-latin1", "not valid utf-8", "stats", "{w}/small.dat", "--universe", "{w}/latin1.txt"),
    _c("schema-binary-diffgen", "not a text file", "diffgen", "{w}/t.csv", "--schema", "{w}/binary.bin", "-e", "1", "-H", "2", "-o", "{w}/o.csv"),
    _c("schema-binary-tds", "not a text file", "tds", "{w}/t.csv", "--schema", "{w}/binary.bin", "-o", "{w}/o.csv"),
    _c("evaluate-itemsets-binary-release", "no manifest", "evaluate", "itemsets", "{w}/small.dat", "{w}/binary.bin", "-k", "3", "--universe", "1..12"),
    _c("evaluate-itemsets-binary-with-manifest", "does not match its manifest", "evaluate", "itemsets", "{w}/small.dat", "{w}/top.csv", "-k", "3", "--universe", "1..12"),
    *[_c(f"branching-bound-{v}", "--branching-bound", "diffpart", "{w}/small.dat", "--universe", "1..12", "-e", "1",
         "-o", "{w}/o.dat", "--branching-bound", v) for v in ("0", "inf", "-1", "nan")],
    *[_c(f"spurious-bound-{v}", "--spurious-bound", "diffpart", "{w}/small.dat", "--universe", "1..12", "-e", "1",
         "-o", "{w}/o.dat", "--spurious-bound", v) for v in ("0", "inf", "-1", "nan")],
    *[_c(f"c1-{v}", "--c1", "diffpart", "{w}/small.dat", "--universe", "1..12", "-e", "1", "-o", "{w}/o.dat", "--c1", v)
      for v in ("0", "nan")],
    _c("seed-negative-diffpart", "--seed", "diffpart", "{w}/small.dat", "--universe", "1..12", "-e", "1", "-o", "{w}/o.dat", "--seed", "-1"),
    _c("seed-negative-privbasis", "--seed", "privbasis", "{w}/small.dat", "--universe", "1..12", "-k", "3", "-e", "1", "-o", "{w}/o.csv", "--seed", "-1"),
    _c("seed-too-large-stream", "--seed", "stream", "init", "{w}/new.db", "--universe", "1..12", "-e", "1", "-U", "2", "--seed", str(2**64)),
    _c("epsilon-denormal-diffpart", "--epsilon", "diffpart", "{w}/small.dat", "--universe", "1..12", "-e", "5e-324", "-o", "{w}/o.dat"),
    _c("epsilon-denormal-basic", "--epsilon", "basic", "{w}/small.dat", "--universe", "1..12", "-e", "5e-324", "-o", "{w}/o.dat"),
    _c("epsilon-denormal-tf", "--epsilon", "tf", "{w}/small.dat", "--universe", "1..12", "-k", "3", "-m", "2", "-e", "5e-324", "-o", "{w}/o.csv"),
    _c("epsilon-denormal-stream", "--epsilon", "stream", "init", "{w}/new.db", "--universe", "1..12", "-e", "5e-324", "-U", "2"),
    _c("epsilon-denormal-diffgen", "--epsilon", "diffgen", "{w}/t.csv", "--schema", "{w}/s.yaml", "-e", "5e-324", "-H", "2", "-o", "{w}/o.csv"),
    *[_c(f"generate-mean-length-{v}", "--mean-length", "generate", "{w}/g.dat", "--records", "10", "--mean-length", v)
      for v in ("nan", "0", "-1", "inf")],
    _c("generate-records-0", "--records", "generate", "{w}/g.dat", "--records", "0"),
    _c("experiment-privbasis-only", "--only", "experiment", "privbasis", "--datasets", "{w}", "--out", "{w}/exp", "--only", "bogus"),
    _c("experiment-privbasis-epsilons", "--epsilons", "experiment", "privbasis", "--datasets", "{w}", "--out", "{w}/exp", "--epsilons=abc"),
    _c("experiment-privbasis-methods", "--methods", "experiment", "privbasis", "--datasets", "{w}", "--out", "{w}/exp", "--methods", "bogus"),
    _c("experiment-privbasis-ks", "--ks", "experiment", "privbasis", "--datasets", "{w}", "--out", "{w}/exp", "--ks", "0"),
    _c("experiment-privbasis-missing-dataset", "no such dataset", "experiment", "privbasis", "--datasets", "{w}", "--out", "{w}/exp", "--only", "retail"),
    _c("experiment-inctdpart-small-file", "needs 900,000", "experiment", "inctdpart", "--data", "{w}/small.dat", "--universe", "1..12", "--out", "{w}/exp", "-q"),
    *[_c(f"experiment-inctdpart-{opt}-0", opt, "experiment", "inctdpart", "--data", "{w}/small.dat", "--out", "{w}/exp", opt, "0")
      for opt in ("--runs", "--queries", "--batch", "--initial")],
    _c("experiment-inctdpart-methods", "--methods", "experiment", "inctdpart", "--data", "{w}/small.dat", "--out", "{w}/exp", "--methods", "Solution 3"),
    _c("experiment-inctdpart-updates", "--updates", "experiment", "inctdpart", "--data", "{w}/small.dat", "--out", "{w}/exp", "--updates", "10,,20"),
    _c("experiment-diffpart-ks-0", "--ks", "experiment", "diffpart", "--dataset", "{w}/small.dat", "--out", "{w}/exp", "--ks=0"),
    _c("experiment-diffpart-budgets", "--budgets", "experiment", "diffpart", "--dataset", "{w}/small.dat", "--out", "{w}/exp", "--budgets", "1,nan"),
    _c("experiment-diffgen-missing-schema", "--schema is required", "experiment", "diffgen-classification", "--data", "{w}/t.csv", "-e", "1", "-H", "2"),
    _c("universe-10^12-stats", "--max-memory", "stats", "{w}/small.dat", "--universe", "1..1000000000000"),
    _c("universe-10^12-diffpart", "--max-memory", "diffpart", "{w}/small.dat", "--universe", "1..1000000000000", "-e", "1", "-o", "{w}/o.dat"),
    _c("universe-caret-notation", "neither a range", "stats", "{w}/small.dat", "--universe", "1..10^12"),
    _c("universe-reversed", "below the lower end", "stats", "{w}/small.dat", "--universe", "17..1"),
    _c("stream-status-not-sqlite", "not a dprelease stream state", "stream", "status", "{w}/small.dat"),
    _c("stream-append-not-sqlite", "not a dprelease stream state", "stream", "append", "{w}/small.dat", "{w}/small.dat", "-o", "{w}/o.dat"),
    _c("stream-release-not-sqlite", "not a dprelease stream state", "stream", "release", "{w}/binary.bin", "-o", "{w}/o.dat"),
    _c("stream-init-updates-huge", "below the smallest budget", "stream", "init", "{w}/new.db", "--universe", "1..12", "-e", "1", "-U", "10" * 12),
    _c("stream-init-exists", "already exists", "stream", "init", "{w}/state.db", "--universe", "1..12", "-e", "1", "-U", "2"),
    _c("stream-append-batch-missing", "cannot read", "stream", "append", "{w}/state.db", "{w}/missing.dat", "-o", "{w}/o.dat"),
    _c("fanout-1", "--fanout", "diffpart", "{w}/small.dat", "--universe", "1..12", "-e", "1", "-o", "{w}/o.dat", "--fanout", "1"),
    _c("fanout-53", "--fanout", "diffpart", "{w}/small.dat", "--universe", "1..12", "-e", "1", "-o", "{w}/o.dat", "--fanout", "53"),
    _c("max-memory-word", "--max-memory", "stats", "{w}/small.dat", "--max-memory", "lots"),
    # --- section 2: work bounded from public inputs, before reading the data ------------------------
    _c("basic-epsilon-1e-6", "--max-output-records", "basic", "{w}/small.dat", "--universe", "1..12", "-e", "1e-6", "-o", "{w}/o.dat"),
    _c("basic-epsilon-1e-12", "--max-output-records", "basic", "{w}/small.dat", "--universe", "1..12", "-e", "1e-12", "-o", "{w}/o.dat"),
    _c("basic-epsilon-0.01", "--max-output-records", "basic", "{w}/small.dat", "--universe", "1..17", "-e", "0.01", "-o", "{w}/o.dat"),
    _c("diffgen-H-30", "--max-output-records", "diffgen", "{w}/adult.csv", "--schema", "{w}/adult.yaml", "-e", "1", "-H", "30", "-o", "{w}/o.csv"),
    _c("diffgen-H-1000", "--max-output-records", "diffgen", "{w}/adult.csv", "--schema", "{w}/adult.yaml", "-e", "1", "-H", "1000", "-o", "{w}/o.csv"),
    _c("stats-universe-10^9", "--max-memory", "stats", "{w}/small.dat", "--universe", "1..1000000000"),
    *[_c(f"diffpart-fanout-{f}", "--max-output-records", "diffpart", "{w}/small.dat", "--universe", "1..119", "-e", "1",
         "-o", "{w}/o.dat", "--fanout", str(f)) for f in (32, 40, 52)],
    _c("stream-init-fanout-40", "--max-output-records", "stream", "init", "{w}/new.db", "-e", "1", "-U", "2", "--universe", "1..119", "--fanout", "40"),
    _c("generate-too-big", "--max-memory", "generate", "{w}/g.dat", "--records", "1000000000000"),
    _c("max-output-records-lowered", "--max-output-records", "diffpart", "{w}/small.dat", "--universe", "1..12", "-e", "1",
       "-o", "{w}/o.dat", "--max-output-records", "10", "--method", "faithful"),  # the faithful method's public estimate
    # --- section 1: -o equal to an input, an existing -o without --force ----------------------------
    _c("o-is-input-diffpart", "is the input file", "diffpart", "{w}/small.dat", "--universe", "1..12", "-e", "1", "-o", "{w}/small.dat"),
    _c("o-is-input-basic", "is the input file", "basic", "{w}/small.dat", "--universe", "1..12", "-e", "1", "-o", "{w}/small.dat", "--force"),
    _c("o-is-input-privbasis", "is the input file", "privbasis", "{w}/small.dat", "--universe", "1..12", "-k", "3", "-e", "1", "-o", "{w}/small.dat", "--force"),
    _c("o-is-input-tf", "is the input file", "tf", "{w}/small.dat", "--universe", "1..12", "-k", "3", "-m", "2", "-e", "1", "-o", "{w}/small.dat"),
    _c("o-is-input-diffgen", "is the input file", "diffgen", "{w}/t.csv", "--schema", "{w}/s.yaml", "-e", "1", "-H", "2", "-o", "{w}/t.csv", "--force"),
    _c("o-is-schema-diffgen", "is the input file", "diffgen", "{w}/t.csv", "--schema", "{w}/s.yaml", "-e", "1", "-H", "2", "-o", "{w}/s.yaml", "--force"),
    _c("o-records-is-input-diffgen", "is the input file", "diffgen", "{w}/x.records.csv", "--schema", "{w}/s.yaml", "-e", "1", "-H", "2", "-o", "{w}/x.csv", "--records", "--force"),
    _c("o-is-input-tds", "is the input file", "tds", "{w}/t.csv", "--schema", "{w}/s.yaml", "-o", "{w}/t.csv", "--force"),
    _c("o-is-universe-file", "is the input file", "diffpart", "{w}/small.dat", "--universe", "{w}/items.txt", "-e", "1", "-o", "{w}/items.txt", "--force"),
    _c("o-is-input-symlink", "is the input file", "diffpart", "{w}/small.dat", "--universe", "1..12", "-e", "1", "-o", "{w}/link.dat", "--force"),
    _c("o-is-input-hardlink", "is the input file", "diffpart", "{w}/small.dat", "--universe", "1..12", "-e", "1", "-o", "{w}/hard.dat", "--force"),
    _c("o-is-input-relative-spelling", "is the input file", "diffpart", "{w}/small.dat", "--universe", "1..12", "-e", "1", "-o", "{w}/sub/../small.dat", "--force"),
    _c("o-manifest-is-input", "is the input file", "diffpart", "{w}/small.dat.manifest.json", "--universe", "1..12", "-e", "1", "-o", "{w}/small.dat", "--force"),
    _c("o-is-batch-stream-append", "is the input file", "stream", "append", "{w}/state.db", "{w}/small.dat", "-o", "{w}/small.dat"),
    _c("o-is-state-stream-append", "is the input file", "stream", "append", "{w}/state.db", "{w}/small.dat", "-o", "{w}/state.db", "--force"),
    _c("o-is-state-stream-release", "is the input file", "stream", "release", "{w}/state.db", "-o", "{w}/state.db", "--force"),
    _c("o-bad-path-stream-append", "cannot write", "stream", "append", "{w}/state.db", "{w}/small.dat", "-o", "{w}/exists.dat/o.dat"),
    _c("o-is-directory-stream-append", "is a directory", "stream", "append", "{w}/state.db", "{w}/small.dat", "-o", "{w}/sub"),
    _c("o-exists-stream-append-foreign", "already exists", "stream", "append", "{w}/state.db", "{w}/small.dat", "-o", "{w}/exists.dat"),
    _c("o-exists-stream-release-foreign", "already exists", "stream", "release", "{w}/state.db", "-o", "{w}/exists.dat"),
    _c("o-exists-diffpart", "already exists", "diffpart", "{w}/small.dat", "--universe", "1..12", "-e", "1", "-o", "{w}/exists.dat"),
    _c("o-exists-basic", "already exists", "basic", "{w}/small.dat", "--universe", "1..12", "-e", "1", "-o", "{w}/exists.dat"),
    _c("o-exists-privbasis", "already exists", "privbasis", "{w}/small.dat", "--universe", "1..12", "-k", "3", "-e", "1", "-o", "{w}/exists.dat"),
    _c("o-exists-tf", "already exists", "tf", "{w}/small.dat", "--universe", "1..12", "-k", "3", "-m", "2", "-e", "1", "-o", "{w}/exists.dat"),
    _c("o-exists-diffgen", "already exists", "diffgen", "{w}/t.csv", "--schema", "{w}/s.yaml", "-e", "1", "-H", "2", "-o", "{w}/exists.dat"),
    _c("o-exists-tds", "already exists", "tds", "{w}/t.csv", "--schema", "{w}/s.yaml", "-o", "{w}/exists.dat"),
    _c("o-exists-generate", "already exists", "generate", "{w}/exists.dat", "--records", "10"),
    _c("o-is-input-generate", "already exists", "generate", "{w}/small.dat", "--records", "10"),
    _c("o-empty-name", "empty", "diffpart", "{w}/small.dat", "--universe", "1..12", "-e", "1", "-o", ""),
    _c("o-empty-name-stream", "empty", "stream", "append", "{w}/state.db", "{w}/small.dat", "-o", ""),
    _c("o-dot", "is a directory", "tds", "{w}/t.csv", "--schema", "{w}/s.yaml", "-o", ".", "--force"),
    _c("o-is-directory", "is a directory", "diffpart", "{w}/small.dat", "--universe", "1..12", "-e", "1", "-o", "{w}/sub", "--force"),
    _c("experiment-out-holds-input", "is the input file", "experiment", "diffpart", "--dataset", "{w}/exp2/summary.json", "--universe", "1..12", "--out", "{w}/exp2"),
    # --- release pairs and tables ------------------------------------------------------------------
    _c("evaluate-mismatched-pair", "does not match its manifest", "evaluate", "counting", "{w}/small.dat", "{w}/rel-mismatch.dat", "--universe", "1..12"),
    _c("evaluate-counting-itemset-release", "is a PrivBasis release", "evaluate", "counting", "{w}/small.dat", "{w}/pb.csv", "--universe", "1..12"),
    _c("evaluate-itemsets-set-valued-release", "is a diffpart-prefix release", "evaluate", "itemsets", "{w}/small.dat", "{w}/dp.dat", "-k", "3", "--universe", "1..12"),
    _c("evaluate-no-manifest", "no manifest", "evaluate", "topk", "{w}/small.dat", "{w}/exists.dat", "--universe", "1..12", "-k", "3"),
    _c("table-semicolon", "--delimiter ';'", "diffgen", "{w}/semi.csv", "--schema", "{w}/s.yaml", "-e", "1", "-H", "2", "-o", "{w}/o.csv"),
    _c("table-extra-field", "4 fields", "tds", "{w}/extra.csv", "--schema", "{w}/s.yaml", "-o", "{w}/o.csv"),
    _c("table-header-under-columns", "header row", "tds", "{w}/t.csv", "--schema", "{w}/s-columns.yaml", "-o", "{w}/o.csv"),
    _c("schema-unknown-key", "unknown key", "tds", "{w}/t.csv", "--schema", "{w}/s-unknown.yaml", "-o", "{w}/o.csv"),
    _c("schema-yaml-error-line", "s-broken.yaml:4:", "tds", "{w}/t.csv", "--schema", "{w}/s-broken.yaml", "-o", "{w}/o.csv"),
    _c("schema-integer-yes", "'integer' must be true or false", "tds", "{w}/t.csv", "--schema", "{w}/s-yes.yaml", "-o", "{w}/o.csv"),
    _c("table-gz-truncated", "cannot read table", "tds", "{w}/t-trunc.csv.gz", "--schema", "{w}/s.yaml", "-o", "{w}/o.csv"),
    _c("delimiter-two-chars", "--delimiter", "tds", "{w}/t.csv", "--schema", "{w}/s.yaml", "-o", "{w}/o.csv", "--delimiter", ";;"),
]

_SMALL = "1 2 3\n2 3\n1 4\n3 4 5\n1 2\n2 5 6\n7 8\n9 10 11 12\n"


def _build_workspace(w: Path) -> None:
    w.mkdir(parents=True)
    (w / "small.dat").write_text(_SMALL)
    (w / "small.dat.manifest.json").write_text('{"package": "dprelease"}\n')
    (w / "wide.dat").write_text(" ".join(str(i) for i in range(1, 121)) + "\n1 2\n")
    gz = gzip.compress(_SMALL.encode() * 50)
    (w / "trunc.dat.gz").write_bytes(gz[: len(gz) // 2])
    (w / "corrupt.dat.gz").write_bytes(b"\x1f\x8b\x08\x00" + b"garbage" * 8)
    (w / "binary.bin").write_bytes(bytes(range(256)) * 4)
    (w / "latin1.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    (w / "items.txt").write_text("\n".join(str(i) for i in range(1, 13)) + "\n")
    (w / "exists.dat").write_text("a previous file\n")
    (w / "sub").mkdir()
    os.symlink(w / "small.dat", w / "link.dat")
    os.link(w / "small.dat", w / "hard.dat")
    shutil.copy(TABLE, w / "t.csv")
    shutil.copy(TABLE, w / "x.records.csv")
    shutil.copy(SCHEMA, w / "s.yaml")
    schema_text = SCHEMA.read_text()
    (w / "s-columns.yaml").write_text(schema_text + "columns: [Job, Age, Class]\n")
    (w / "s-unknown.yaml").write_text(schema_text + "delimter: ';'\n")
    (w / "s-broken.yaml").write_text("format: dprelease-table-schema/1\nname: x\nclass:\n  name: a: b\n")
    (w / "s-yes.yaml").write_text(schema_text.replace("integer: true", "integer: yes"))
    (w / "semi.csv").write_text(TABLE.read_text().replace(",", ";"))
    (w / "extra.csv").write_text("Job,Age,Class\nEngineer,34,Y,extra\nLawyer,50,N,extra\n")
    tgz = gzip.compress(TABLE.read_bytes() * 20)
    (w / "t-trunc.csv.gz").write_bytes(tgz[: len(tgz) // 2])
    # an Adult-like schema and a two-row table for the -H bounds (refused before the table is read)
    shutil.copy(REPO / "examples" / "adult-schema.yaml", w / "adult.yaml")
    (w / "adult.csv").write_text("not read\n")
    (w / "exp2").mkdir()
    (w / "exp2" / "summary.json").write_text(_SMALL)
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(w)
        assert main(["stream", "init", "state.db", "-e", "1", "-U", "3", "--universe", "1..12", "--seed", "1", "-q"]) == 0
        assert main(["stream", "append", "state.db", "small.dat", "-o", "stream-rel.dat", "-q"]) == 0
        assert main(["diffpart", "small.dat", "--universe", "1..12", "-e", "1", "-o", "rel-mismatch.dat", "--seed", "2", "-q"]) == 0
        assert main(["privbasis", "small.dat", "-k", "3", "-e", "1", "--universe", "1..12", "-o", "top.csv", "--seed", "3", "-q"]) == 0
        assert main(["privbasis", "small.dat", "-k", "3", "-e", "1", "--universe", "1..12", "-o", "pb.csv", "--seed", "3", "-q"]) == 0
        assert main(["diffpart", "small.dat", "--universe", "1..12", "-e", "1", "-o", "dp.dat", "--seed", "2", "-q"]) == 0
    with open(w / "rel-mismatch.dat", "a") as fh:
        fh.write("1 2 3\n")  # the body no longer matches its manifest
    (w / "top.csv").write_bytes(bytes(range(256)))  # a binary file where the CSV was


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    w = tmp_path_factory.mktemp("bad-input") / "w"
    _build_workspace(w)
    return w


def _snapshot(w: Path) -> dict[str, str]:
    out = {}
    for p in sorted(w.rglob("*")):
        rel = str(p.relative_to(w))
        if p.is_symlink():
            out[rel] = "link->" + os.readlink(p)
        elif p.is_dir():
            out[rel] = "dir"
        else:
            out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def _run(argv: list[str], capsys) -> tuple[int, str, str]:
    capsys.readouterr()
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse usage errors
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_input_exit_2_one_line_nothing_changed(case: Case, template: Path, tmp_path: Path, capsys, monkeypatch):
    w = tmp_path / "w"
    shutil.copytree(template, w, symlinks=True)
    os.unlink(w / "link.dat")
    os.symlink(w / "small.dat", w / "link.dat")
    os.unlink(w / "hard.dat")
    os.link(w / "small.dat", w / "hard.dat")
    monkeypatch.chdir(w)
    before = _snapshot(w)
    argv = [a.replace("{w}", str(w)) for a in case.argv]
    code, out, err = _run(argv, capsys)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2, (code, err)
    assert "Traceback" not in err
    assert len(lines) == 1, err
    assert lines[0].startswith("dprelease"), lines[0]
    assert case.expect.lower() in lines[0].lower(), lines[0]
    assert _snapshot(w) == before  # nothing written, nothing left behind, every input unchanged


def test_stream_append_bad_path_spends_nothing(template: Path, tmp_path: Path, capsys):
    """`stream append -o BAD_PATH` is refused before the commit: a retry with a good path is append 2."""
    w = tmp_path / "w"
    shutil.copytree(template, w, symlinks=True)
    code, _, err = _run(["stream", "append", str(w / "state.db"), str(w / "small.dat"), "-o", str(w / "exists.dat" / "o.dat")], capsys)
    assert code == 2
    code, _, err = _run(["stream", "append", str(w / "state.db"), str(w / "small.dat"), "-o", str(w / "ok.dat")], capsys)
    assert code == 0 and "append 2 of 4" in err


def test_stream_write_failure_after_commit_says_how_to_recover(template: Path, tmp_path: Path, capsys, monkeypatch):
    """If the release cannot be written after the commit, the message says the append is committed and how to
    re-emit it; `stream release` then writes it without spending anything."""
    from dprelease.release import SetValuedRelease

    w = tmp_path / "w"
    shutil.copytree(template, w, symlinks=True)

    def fail(*_a, **_k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(SetValuedRelease, "write", fail)
    code, _, err = _run(["stream", "append", str(w / "state.db"), str(w / "small.dat"), "-o", str(w / "r2.dat")], capsys)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1
    assert "append 2 committed" in lines[0] and "stream release" in lines[0] and "No space left" in lines[0]
    monkeypatch.undo()
    code, _, err = _run(["stream", "status", str(w / "state.db"), "--json"], capsys)
    code, _, err = _run(["stream", "release", str(w / "state.db"), "-o", str(w / "r2.dat")], capsys)
    assert code == 0 and "after append 2" in err and (w / "r2.dat").exists()


def test_derived_universe_bound_after_the_leak_warning(template: Path, tmp_path: Path, capsys):
    """With --universe derive the size is known only after reading (with the leak warning): still refused, exit 2."""
    w = tmp_path / "w"
    shutil.copytree(template, w, symlinks=True)
    code, _, err = _run(["diffpart", str(w / "wide.dat"), "--universe", "derive", "-e", "1", "-o", str(w / "o.dat"),
                         "--fanout", "40", "-q"], capsys)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 2 and "Traceback" not in err
    assert lines[0].startswith("warning: --universe derive") and "--max-output-records" in lines[1]
    assert not (w / "o.dat").exists()


def test_bom_files_are_read(tmp_path: Path, capsys):
    """A UTF-8 byte-order mark at the start of a transaction file, universe file, schema or table is dropped."""
    data = tmp_path / "bom.dat"
    data.write_bytes(b"\xef\xbb\xbf1 2 3\n2 3\n")
    items = tmp_path / "items.txt"
    items.write_bytes(b"\xef\xbb\xbf1\n2\n3\n")
    code, out, err = _run(["stats", str(data), "--universe", str(items), "--json"], capsys)
    assert code == 0, err
    assert '"N": 2' in out and '"items": 3' in out
    table = tmp_path / "t.csv"
    table.write_bytes(b"\xef\xbb\xbf" + TABLE.read_bytes())
    schema = tmp_path / "s.yaml"
    schema.write_bytes(b"\xef\xbb\xbf" + SCHEMA.read_bytes())
    code, out, err = _run(["tds", str(table), "--schema", str(schema), "-k", "2", "-o", str(tmp_path / "o.csv"), "-q"], capsys)
    assert code == 0, err


def test_negative_range_universe_is_a_value_not_an_option(tmp_path: Path, capsys):
    data = tmp_path / "neg.dat"
    data.write_text("-3 0 5\n-1 17\n")
    code, out, err = _run(["stats", str(data), "--universe", "-3..17", "--json"], capsys)
    assert code == 0, err
    assert '"items": 21' in out


def test_console_script_gives_one_line_without_traceback(template: Path, tmp_path: Path):
    """The installed entry point (a new process) on a few of the cases: one line, exit 2."""
    w = tmp_path / "w"
    shutil.copytree(template, w, symlinks=True)
    exe = Path(sys.executable).with_name("dprelease")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "dprelease.cli"]
    for argv in (["diffpart", str(w / "trunc.dat.gz"), "--universe", "1..12", "-e", "1", "-o", str(w / "o.dat")],
                 ["stats", str(w / "small.dat"), "--universe", "1..1000000000000"],
                 ["diffpart", str(w / "small.dat"), "--universe", "1..12", "-e", "1", "-o", str(w / "o.dat"), "--seed", "-1"]):
        proc = subprocess.run(cmd + argv, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert not (w / "o.dat").exists()
