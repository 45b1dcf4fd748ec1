"""The command line: outputs and manifests, one-line errors with exit code 2, nothing half-written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from dprelease.cli import main

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "baskets.dat"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_diffpart_on_the_bundled_example(tmp_path, capsys):
    out = tmp_path / "rel.dat"
    code, stdout, _ = run(capsys, "diffpart", EXAMPLE, "--universe", "1..12", "--epsilon", "1", "-o", out, "--quiet",
                          "--method", "faithful")
    assert code == 0
    assert f"release: {out}" in stdout and "manifest:" in stdout
    manifest = json.loads(Path(str(out) + ".manifest.json").read_text())
    assert manifest["algorithm"] == "diffpart" and manifest["epsilon"] == 1.0
    assert manifest["rng"] == {"mode": "secure", "seed": None}
    assert manifest["domain"]["source"] == "declared-range"
    assert manifest["parameters"] == {"fanout": 10, "c1": 1.5, "c2": 1.5, "branching_bound": 0.5}
    lines = out.read_text().splitlines()
    assert len(lines) == manifest["release"]["records"]
    assert all(1 <= int(tok) <= 12 for line in lines for tok in line.split())
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_seed_is_recorded_and_reproducible(tmp_path, capsys):
    outs = []
    for name in ("a.dat", "b.dat"):
        out = tmp_path / name
        assert run(capsys, "diffpart", EXAMPLE, "--universe", "1..12", "-e", "0.5", "-o", out, "--seed", "42", "-q")[0] == 0
        outs.append(out.read_text())
    assert outs[0] == outs[1]
    manifest = json.loads((tmp_path / "a.dat.manifest.json").read_text())
    assert manifest["rng"]["mode"] == "seeded" and manifest["rng"]["seed"] == 42 and "NOT for publication" in manifest["rng"]["warning"]


def test_derived_universe_warns_and_is_in_the_manifest(tmp_path, capsys):
    out = tmp_path / "r.dat"
    code, _, err = run(capsys, "diffpart", EXAMPLE, "--universe", "derive", "-e", "1", "-o", out, "-q")
    assert code == 0
    assert "warning: --universe derive" in err
    manifest = json.loads((tmp_path / "r.dat.manifest.json").read_text())
    assert manifest["domain"]["source"] == "derived-from-data" and "warning" in manifest["domain"]


@pytest.mark.parametrize("eps", ["0", "-1", "nan", "abc"])
def test_bad_epsilon_exits_2(tmp_path, capsys, eps):
    with pytest.raises(SystemExit) as exc:
        main(["diffpart", str(EXAMPLE), "--universe", "1..12", "--epsilon", eps, "-o", str(tmp_path / "x")])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "--epsilon" in err and len(err.strip().splitlines()) == 1
    assert not list(tmp_path.iterdir())


def test_unknown_item_exits_2_and_keeps_existing_output(tmp_path, capsys):
    data = tmp_path / "d.dat"
    data.write_text("1 2\n3 99\n")
    out = tmp_path / "rel.dat"
    out.write_text("previous release\n")
    code, _, err = run(capsys, "diffpart", data, "--universe", "1..12", "-e", "1", "-o", out, "--force")
    assert code == 2
    assert err.strip() == f"dprelease diffpart: error: {data}:2: item 99 is not in the declared universe (1..12)"
    assert out.read_text() == "previous release\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.dat", "rel.dat"]


def test_empty_input_and_basic_limit_exit_2(tmp_path, capsys):
    empty = tmp_path / "e.dat"
    empty.write_text("\n# nothing\n")
    code, _, err = run(capsys, "diffpart", empty, "--universe", "1..3", "-e", "1", "-o", tmp_path / "o")
    assert code == 2 and "no transactions" in err
    code, _, err = run(capsys, "basic", EXAMPLE, "--universe", "1..25", "-e", "1", "-o", tmp_path / "o", "--max-items", "20")
    assert code == 2 and "over the limit of 20" in err
    assert not (tmp_path / "o").exists()


def test_evaluate_and_stats_json(tmp_path, capsys):
    out = tmp_path / "rel.dat"
    assert run(capsys, "basic", EXAMPLE, "--universe", "1..12", "-e", "1", "-o", out, "--seed", "1", "-q")[0] == 0
    code, stdout, _ = run(capsys, "evaluate", "counting", EXAMPLE, out, "--universe", "1..12", "--queries", "500", "--json")
    assert code == 0
    res = json.loads(stdout)
    assert set(res) == {"mean_relative_error", "subsets", "frequent", "baselines", "occurrence", "coverage", "lengths"}
    assert len(res["subsets"]) == 5
    assert res["coverage"]["values"] == 4095 and res["coverage"]["coverage"] >= 0.93  # Basic: every cell
    assert 0 <= res["lengths"]["tv"] <= 1 and res["lengths"]["baselines"]["empty"] == 1.0
    assert res["occurrence"]["released_records"] > 0 and 0 <= res["occurrence"]["records_exact"] <= 1
    assert set(res["subsets"][0]) == {"max_length", "mean_relative_error"}
    # the frequent-itemset workload, and both baselines on both workloads; an empty release misses every
    # frequent itemset entirely
    assert res["frequent"]["min_share"] == 0.01 and res["frequent"]["queries"] > 0
    assert [s["max_length"] for s in res["frequent"]["subsets"]][0] == 1
    assert set(res["baselines"]) == {"empty", "uniform"}
    assert res["baselines"]["empty"]["frequent"]["mean_relative_error"] == 1.0
    assert 0 < res["baselines"]["uniform"]["frequent"]["mean_relative_error"] < 1.0
    code, stdout, _ = run(capsys, "evaluate", "counting", EXAMPLE, out, "--universe", "1..12", "--queries", "500")
    assert code == 0 and "empty release" in stdout and "uniform baskets" in stdout and "2-itemsets" in stdout
    code, stdout, _ = run(capsys, "evaluate", "topk", EXAMPLE, out, "--universe", "1..12", "-k", "10", "--json")
    res = json.loads(stdout)
    assert res["k"] == 10 and -1.0 <= res["utility"] <= 1.0 and "occurrence" in res
    code, stdout, _ = run(capsys, "stats", EXAMPLE, "--universe", "1..12", "--json")
    stats = json.loads(stdout)
    assert stats["N"] == 3000 and stats["items"] == 12 and stats["max_length"] >= 1


def test_console_script_end_to_end(tmp_path):
    out = tmp_path / "rel.dat"
    exe = Path(sys.executable).with_name("dprelease")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "dprelease.cli"]
    proc = subprocess.run(cmd + ["diffpart", str(EXAMPLE), "--universe", "1..12", "-e", "1", "-o", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert out.exists() and Path(str(out) + ".manifest.json").exists()
    proc = subprocess.run(cmd + ["diffpart", str(tmp_path / "missing.dat"), "--universe", "1..12", "-e", "1", "-o",
                                 str(tmp_path / "r2.dat")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "cannot read" in proc.stderr


def test_experiment_diffpart_writes_csv_and_png(tmp_path, capsys):
    out = tmp_path / "exp"
    code, stdout, _ = run(capsys, "experiment", "diffpart", "--dataset", EXAMPLE, "--universe", "1..12", "--out", out,
                          "--runs", "2", "--budgets", "0.5,1", "--ks", "5,10", "--queries", "500",
                          "--spurious-bound", "10", "-q")
    assert code == 0
    import csv

    rows = list(csv.DictReader(open(out / "fig3_relative_error.csv")))
    assert {r["method"] for r in rows} == {"DiffPart", "DiffPart-Prefix", "DiffPart+bound", "Basic"}
    assert len(rows) == 4 * 2 * 6  # methods x budgets x (5 subsets + all)
    summary = list(csv.DictReader(open(out / "methods_summary.csv")))
    assert len(summary) == 4 * 2 and all(0 <= float(r["share_records_exact"]) <= 1 for r in summary)
    # every error beside the empty and the uniform release's on the same workload (the same for every row)
    assert all(float(r["frequent_error_empty"]) == 1.0 and float(r["frequent_error_uniform"]) > 0 for r in summary)
    assert len({r["relative_error_uniform"] for r in rows if r["subset"] == "all"}) == 1
    assert (out / "fig3_relative_error.png").stat().st_size > 0 and (out / "fig8_topk_utility.png").exists()


def test_cli_starts_without_pandas_and_lists_every_command():
    code = ("import sys, dprelease.cli as c; p = c.build_parser(); "
            "assert 'pandas' not in sys.modules and 'networkx' not in sys.modules, sorted(sys.modules); "
            "print(' '.join(sorted(p._subparsers._group_actions[0].choices)))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    for name in ("diffpart", "basic", "stats", "evaluate", "experiment", "privbasis", "tf", "diffgen", "tds", "stream"):
        assert name in proc.stdout.split()
    from dprelease.commands.relational import SCORES
    from dprelease.relational.scores import SCORES as REAL

    assert SCORES == REAL
