"""Messages, help and output a user can trust; short and empty releases of DiffPart and evaluate."""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO

from dprelease.cli import build_parser, main
from dprelease.data import Universe, read_transactions
from dprelease.data.generators import kosarak_like
from dprelease.data.io import atomic_output, write_transactions
from dprelease.privacy import make_noise
from dprelease.release import read_manifest

EXAMPLE = REPO / "examples" / "baskets.dat"


def _run(capsys, *argv) -> tuple[int, str, str]:
    capsys.readouterr()
    try:
        code = main([str(a) for a in argv])
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


# --- help -------------------------------------------------------------------------------------------------


def _parsers(parser: argparse.ArgumentParser, path: str = "dprelease"):
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, f"{path} {name}")


def test_every_option_has_a_sentence_and_its_default():
    missing = []
    for path, parser in _parsers(build_parser()):
        formatter = parser._get_formatter()
        for action in parser._actions:
            if isinstance(action, (argparse._HelpAction, argparse._VersionAction, argparse._SubParsersAction)):
                continue
            text = formatter._get_help_string(action) if action.help else ""
            name = "/".join(action.option_strings) or action.dest
            if not text or len(text) < 12:
                missing.append(f"{path} {name}: no help sentence")
            elif action.option_strings and "default" not in text.lower() and "required" not in text.lower():
                missing.append(f"{path} {name}: no default in {text!r}")
    assert not missing, "\n".join(missing)


def test_help_renders_for_every_command(capsys):
    for path, _ in _parsers(build_parser()):
        code, out, _ = _run(capsys, *path.split()[1:], "--help")
        assert code == 0 and "usage:" in out, path


def test_dprelease_alone_prints_usage_and_the_commands(capsys):
    code, _, err = _run(capsys)
    assert code == 2
    assert "usage: dprelease" in err and "diffpart" in err and "stream" in err and "experiment" in err
    code, _, err = _run(capsys, "evaluate")
    assert code == 2 and "counting" in err and "itemsets" in err


def test_stream_help_wording(capsys):
    _, out, _ = _run(capsys, "stream", "init", "--help")
    flat = " ".join(out.split())
    assert "WHOLE stream" in flat and "`derive` to derive it from the first batch" in flat
    assert "derived from the data" not in flat


# --- stream: counts from 1, status --quiet, init creates its folder, own release replaced -------------------


def _batch(path: Path, n: int, seed: int) -> Path:
    db = kosarak_like(n, 12, 3.0, seed=seed)
    with atomic_output(path) as fh:
        write_transactions(fh, db, Universe.from_range(1, 12))
    return path


def test_stream_counts_from_one_and_replaces_its_own_release(tmp_path: Path, capsys):
    state = tmp_path / "new" / "folder" / "s.db"
    code, _, err = _run(capsys, "stream", "init", state, "-e", "1", "-U", "2", "--universe", "1..12", "--seed", "1")
    assert code == 0 and state.exists()  # the folder is created, like every other output
    b0, b1 = _batch(tmp_path / "b0.dat", 400, 1), _batch(tmp_path / "b1.dat", 100, 2)
    out = tmp_path / "r.dat"
    code, _, err = _run(capsys, "stream", "append", state, b0, "-o", out)
    assert code == 0 and "append 1 of 3" in err
    assert read_manifest(out)["stream"]["state"] == "s.db"
    code, _, err = _run(capsys, "stream", "append", state, b1, "-o", out)  # its own previous release: no --force
    assert code == 0 and "append 2 of 3" in err
    code, _, err = _run(capsys, "stream", "release", state, "-o", out)
    assert code == 0 and "after append 2" in err
    code, out_text, err = _run(capsys, "stream", "status", state, "--quiet")
    assert code == 0 and "appends: 2 of 3" in out_text and err == ""
    code, out_text, err = _run(capsys, "stream", "status", state)
    assert "next append: 3 of 3" in err
    # another stream's release at the same path is not its own
    other = tmp_path / "o.db"
    assert _run(capsys, "stream", "init", other, "-e", "1", "-U", "2", "--universe", "1..12")[0] == 0
    code, _, err = _run(capsys, "stream", "append", other, b0, "-o", out)
    assert code == 2 and "already exists" in err
    code, _, err = _run(capsys, "stream", "append", other, b0, "-o", out, "--force")
    assert code == 0


# --- diffgen / tds print release:/manifest:, TDS manifest has version and created_utc -----------------------


def test_diffgen_and_tds_report_like_the_others(tmp_path: Path, capsys):
    table, schema = REPO / "examples" / "table1-jobs.csv", REPO / "examples" / "table1-schema.yaml"
    for cmd in (["diffgen", table, "--schema", schema, "-e", "1", "-H", "2", "--seed", "1"],
                ["tds", table, "--schema", schema, "-k", "2"]):
        out = tmp_path / f"{cmd[0]}.csv"
        code, stdout, _ = _run(capsys, *cmd, "-o", out, "-q")
        assert code == 0
        assert stdout.splitlines() == [f"release: {out}", f"manifest: {out}.manifest.json"]
    m = read_manifest(tmp_path / "tds.csv")
    assert m["version"] and m["created_utc"] and m["algorithm"] == "tds" and m["rng"]["mode"] == "none"
    assert m["privacy"]["differentially_private"] is False and m["epsilon"] is None


# --- short and empty releases (DiffPart and evaluate) -----------------------------------


def test_empty_diffpart_release_is_said_and_scored(tmp_path: Path, capsys):
    data = tmp_path / "tiny.dat"
    data.write_text("1 2\n3\n")
    out = tmp_path / "r.dat"
    code, _, err = _run(capsys, "diffpart", data, "--universe", "1..12", "-e", "0.05", "-o", out, "--seed", "1", "-q")
    assert code == 0 and out.read_text() == ""
    assert "warning: diffpart released no records" in err
    m = read_manifest(out)
    assert m["release"]["records"] == 0 and any("the release is empty" in n for n in m["notes"])
    code, stdout, err = _run(capsys, "evaluate", "counting", data, out, "--universe", "1..12", "--queries", "200", "--json")
    assert code == 0, err
    res = json.loads(stdout)
    assert np.isfinite(res["mean_relative_error"]) and 0 < res["mean_relative_error"] <= 1.0
    assert "empty" in res["note"]
    code, stdout, err = _run(capsys, "evaluate", "topk", data, out, "--universe", "1..12", "-k", "3", "--json")
    assert code == 0, err
    assert json.loads(stdout)["utility"] == 0.0


def test_tf_short_release_is_said(tmp_path: Path, capsys):
    data = tmp_path / "d.dat"
    data.write_text("1 2\n2 3\n1 3\n1\n")
    out = tmp_path / "t.csv"
    code, _, err = _run(capsys, "tf", data, "-k", "100", "-m", "1", "-e", "1", "--universe", "1..3", "-o", out,
                        "--seed", "1", "-q")
    assert code == 0 and "fewer than the 100 requested" in err
    assert any("fewer than the 100 requested" in n for n in read_manifest(out)["notes"])


def test_frequencies_are_never_above_one(tmp_path: Path):
    from dprelease.itemsets.privbasis import privbasis
    from dprelease.itemsets.tf import tf

    data = tmp_path / "four.dat"
    data.write_text("1 2 3\n1 2\n2 3\n1 3\n")
    db, universe = read_transactions(data, Universe.from_range(1, 3))
    for seed in range(40):
        for release in (privbasis(db, universe, 5, 0.5, noise=make_noise(seed)),
                        tf(db, universe, 5, 0.5, 2, noise=make_noise(seed))):
            f = release.frequencies[np.isfinite(release.frequencies)]
            assert ((f >= 0) & (f <= 1)).all(), f


# --- progress output off a TTY, experiment labels -----------------------------------------------------------


def test_no_progress_bar_off_a_tty(tmp_path: Path, capsys):
    from dprelease.setvalued.diffpart import _progress_bar

    assert _progress_bar(True) is None  # pytest's captured stderr is not a TTY
    code, _, err = _run(capsys, "diffpart", EXAMPLE, "--universe", "1..12", "-e", "1", "-o", tmp_path / "r.dat")
    assert code == 0 and "\r" not in err


def test_inctdpart_experiment_labels_data_by_file_name(tmp_path: Path, capsys):
    data = _batch(tmp_path / "shop.dat", 320, 5)
    out = tmp_path / "exp"
    code, _, err = _run(capsys, "experiment", "inctdpart", "--data", data, "--universe", "1..12", "--out", out,
                        "--initial", "200", "--batch", "50", "--updates", "2", "--epsilons", "1", "--runs", "1",
                        "--queries", "100", "--methods", "IncTDPart", "-q")
    assert code == 0, err
    rows = list(csv.DictReader(open(out / "inctdpart_summary.csv")))
    assert rows and {r["dataset"] for r in rows} == {"shop"}


def test_derived_universe_error_does_not_say_declared(tmp_path: Path):
    from dprelease.errors import InputError

    first = tmp_path / "a.dat"
    first.write_text("1 2\n3\n")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, derived = read_transactions(first, None, derive=True)
    later = tmp_path / "b.dat"
    later.write_text("1\n9\n")
    try:
        read_transactions(later, derived)
    except InputError as exc:
        msg = str(exc)
    assert "b.dat:2: item 9 is not in the universe derived from the data" in msg and "(derived)" not in msg
    with pytest.raises(InputError, match=r"not in the declared universe \(1\.\.3\)"):
        read_transactions(later, Universe.from_range(1, 3, "1..3"))


def test_privbasis_figure_has_every_series_in_its_legend(tmp_path: Path, monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    from dprelease.experiments.privbasis import plot

    legends = []
    monkeypatch.setattr(Figure, "savefig", lambda fig, *a, **k: legends.append(
        sorted({t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()})))
    row = {"k": 50, "epsilon": 1.0, "fnr_mean": 0.1, "fnr_se": 0.0, "re_mean": 0.1, "re_se": 0.0, "m": ""}
    summary = [{**row, "dataset": "msnbc", "method": "diffpart"}, {**row, "dataset": "msnbc", "method": "pb"},
               {**row, "dataset": "retail", "method": "pb"}]  # DiffPart absent from the last panel
    plot(summary, tmp_path)
    assert legends and all(lg == ["diffpart", "pb"] for lg in legends)


def test_killed_stream_init_leftovers_are_removed(tmp_path: Path, capsys):
    dead = 2**22 + 4242
    for suffix in ("", "-wal", "-shm"):
        (tmp_path / f".s.db.{dead}.abcd1234.tmp{suffix}").write_text("")
    assert _run(capsys, "stream", "init", tmp_path / "s.db", "-e", "1", "-U", "1", "--universe", "1..12")[0] == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.db"]
