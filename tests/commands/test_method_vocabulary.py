"""One method vocabulary: every releasing command takes ``--method faithful`` (the paper's algorithm) and
``--method recommended`` (its default, the project's best epsilon-DP method for that kind of release); names that
left the command line say what replaced them."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pytest
from conftest import REPO

from dprelease.cli import build_parser, main

BASKETS = str(REPO / "examples" / "baskets.dat")
JOBS = str(REPO / "examples" / "table1-jobs.csv")
JOBS_SCHEMA = str(REPO / "examples" / "table1-schema.yaml")
RELEASING = {  # command -> the arguments it needs besides --method and -o
    "diffpart": [BASKETS, "--universe", "1..12", "-e", "1"],
    "basic": [BASKETS, "--universe", "1..12", "-e", "1"],
    "privbasis": [BASKETS, "--universe", "1..12", "-e", "1", "-k", "5"],
    "tf": [BASKETS, "--universe", "1..12", "-e", "1", "-k", "5", "-m", "2"],
    "diffgen": [JOBS, "--schema", JOBS_SCHEMA, "-e", "1", "-H", "2"],
    "tds": [JOBS, "--schema", JOBS_SCHEMA],
    "rps": [JOBS, "--schema", JOBS_SCHEMA, "-e", "1", "--depth", "3"],
    "mondrian": [JOBS, "--schema", JOBS_SCHEMA, "-k", "2"],
    "degrees": ["{graph}", "-e", "1", "--theta", "4"],
}


def _run(capsys, *argv: object) -> tuple[int, str, str]:
    try:
        code = main([str(a) for a in argv])
    except SystemExit as exc:  # argparse's usage errors
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def graph(tmp_path: Path) -> str:
    path = tmp_path / "g.txt"
    path.write_text("".join(f"{i} {j}\n" for i in range(12) for j in range(i + 1, 12) if (i * j) % 5 == 1))
    return str(path)


@pytest.mark.parametrize("command", sorted(RELEASING))
def test_every_releasing_command_takes_faithful_and_recommended(command, tmp_path, capsys, graph):
    args = [a.format(graph=graph) for a in RELEASING[command]]
    seed = [] if command == "tds" else ["--seed", "3"]
    bodies = {}
    for method in ("faithful", "recommended"):
        out = tmp_path / f"{method}.out"
        code, _, err = _run(capsys, command, *args, "--method", method, *seed, "-q", "-o", out)
        assert code == 0, err
        bodies[method] = out.read_bytes()
    if command in ("basic", "tf", "tds", "mondrian", "rps"):  # one method today: both names run it
        assert bodies["faithful"] == bodies["recommended"]
    else:  # the improved method and the paper's differ
        assert bodies["faithful"] != bodies["recommended"]


def test_stream_init_takes_recommended(tmp_path, capsys):
    code, _, err = _run(capsys, "stream", "init", tmp_path / "s.db", "-e", "1", "-U", "2", "--universe", "1..12",
                        "--method", "recommended", "-q")
    assert code == 0, err
    code, out, _ = _run(capsys, "stream", "status", tmp_path / "s.db", "--json")
    assert code == 0


def test_diffgen_defaults_to_diffgen_plus3_and_faithful_is_algorithm_1(tmp_path, capsys):
    for method, expected in ((None, "diffgen-plus3"), ("faithful", "diffgen"), ("recommended", "diffgen-plus3")):
        out = tmp_path / f"{method}.csv"
        argv = ["diffgen", JOBS, "--schema", JOBS_SCHEMA, "-e", "1", "-H", "2", "--seed", "1", "-q", "-o", out]
        code, _, err = _run(capsys, *argv, *(["--method", method] if method else []))
        assert code == 0, err
        assert json.loads(Path(f"{out}.manifest.json").read_text())["parameters"]["method"] == expected
    assert (tmp_path / "None.csv").read_bytes() == (tmp_path / "recommended.csv").read_bytes()


def test_an_option_of_diffgens_algorithm_1_selects_it_and_is_refused_beside_recommended(tmp_path, capsys):
    out = tmp_path / "o.csv"
    base = ["diffgen", JOBS, "--schema", JOBS_SCHEMA, "-e", "1", "-H", "2", "--seed", "1", "-q", "-o", out]
    code, _, err = _run(capsys, *base, "--score", "infogain")
    assert code == 0, err
    params = json.loads(Path(f"{out}.manifest.json").read_text())["parameters"]
    assert params["method"] == "diffgen" and params["score"] == "infogain"
    code, _, err = _run(capsys, *base, "--force", "--method", "recommended", "--local")
    assert code == 2 and "--local applies to --method faithful" in err and err.count("\n") == 1


@pytest.mark.parametrize("old, replacement", [
    ("diffgen", "--method faithful"), ("diffgen-local", "--method faithful --local"),
    ("diffgen-plus3", "--method recommended"),
])
def test_old_diffgen_method_names_still_run_with_a_note_naming_the_new_one(old, replacement, tmp_path, capsys):
    base = ["diffgen", JOBS, "--schema", JOBS_SCHEMA, "-e", "1", "-H", "2", "--seed", "1", "-q"]
    code, _, err = _run(capsys, *base, "--method", old, "-o", tmp_path / "old.csv")
    assert code == 0 and err.count("\n") == 1 and f"note: --method {old}: " in err and replacement in err
    code, _, _ = _run(capsys, *base, *replacement.split(), "-o", tmp_path / "new.csv")
    assert code == 0 and (tmp_path / "old.csv").read_bytes() == (tmp_path / "new.csv").read_bytes()


@pytest.mark.parametrize("old", ["diffgen-plus", "diffgen-plus2"])
def test_superseded_diffgen_variants_are_refused_with_their_replacement(old, tmp_path, capsys):
    code, _, err = _run(capsys, "diffgen", JOBS, "--schema", JOBS_SCHEMA, "-e", "1", "--method", old, "-o",
                        tmp_path / "o.csv")
    assert code == 2 and not (tmp_path / "o.csv").exists()
    line = err.strip().splitlines()[-1]
    assert "--method recommended" in line and f"experiment diffgen-classification --methods {old}" in line


def test_privbasis_faithful_flag_is_method_faithful_with_a_note(tmp_path, capsys):
    base = ["privbasis", BASKETS, "--universe", "1..12", "-e", "1", "-k", "5", "--seed", "2", "-q"]
    code, _, err = _run(capsys, *base, "--faithful", "-o", tmp_path / "a.csv")
    assert code == 0 and "note: --faithful is now --method faithful" in err
    code, _, err = _run(capsys, *base, "--method", "faithful", "-o", tmp_path / "b.csv")
    assert code == 0 and err == ""
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()
    code, _, err = _run(capsys, *base, "--faithful", "--method", "recommended", "-o", tmp_path / "c.csv")
    assert code == 2 and "do not go together" in err and not (tmp_path / "c.csv").exists()


def test_faithful_refuses_the_improvements_beyond_the_paper(tmp_path, capsys, graph):
    code, _, err = _run(capsys, "rps", JOBS, "--schema", JOBS_SCHEMA, "-e", "1", "--method", "faithful",
                        "--consistency", "-o", tmp_path / "r.csv")
    assert code == 2 and "--consistency" in err and not (tmp_path / "r.csv").exists()
    code, _, err = _run(capsys, "degrees", graph, "-e", "1", "--theta", "4", "--method", "faithful", "--summarize",
                        "cumulative", "-o", tmp_path / "d.txt")
    assert code == 2 and "--summarize cumulative" in err and not (tmp_path / "d.txt").exists()


def _parsers(parser: argparse.ArgumentParser, path: str = "dprelease"):
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, f"{path} {name}")


def test_help_texts_name_algorithms_and_papers_never_issues():
    cited = []
    for path, parser in _parsers(build_parser()):
        texts = [parser.description or ""] + [a.help or "" for a in parser._actions]
        cited += [f"{path}: {t}" for t in texts if re.search(r"\bissue\s*\d+", t, re.IGNORECASE)]
    assert cited == []
