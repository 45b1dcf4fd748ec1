"""The Python API runs the command line's code: a seeded release made with ``dp.*`` is byte-identical to the
seeded release the command makes from the same inputs (body and manifest), for every release kind."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dprelease as dp
from dprelease.cli import main
from dprelease.release import manifest_path, run_started

REPO = Path(__file__).resolve().parents[2]
BASKETS = REPO / "examples" / "baskets.dat"
TABLE = REPO / "examples" / "table1-jobs.csv"
SCHEMA = REPO / "examples" / "table1-schema.yaml"
AT = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc)


def baskets() -> list[list[int]]:
    return [[int(x) for x in line.split()] for line in BASKETS.read_text().splitlines()
            if line.strip() and not line.startswith("#")]


def edge_file(tmp_path: Path) -> Path:
    rng = np.random.default_rng(5)
    edges = rng.integers(0, 60, size=(240, 2))
    path = tmp_path / "edges.txt"
    path.write_text("".join(f"{u} {v}\n" for u, v in edges.tolist()))
    return path


def cli(argv: list[str], out: Path) -> tuple[bytes, bytes]:
    with run_started(AT):
        assert main([*argv, "-o", str(out), "--quiet"]) == 0
    return out.read_bytes(), manifest_path(out).read_bytes()


def api(release: dp.Release, out: Path) -> tuple[bytes, bytes]:
    release.write(out)
    return out.read_bytes(), manifest_path(out).read_bytes()


def _run(fn, *args, **kwargs):
    with run_started(AT):
        return fn(*args, **kwargs)


CASES = {
    "diffpart": (["diffpart", str(BASKETS), "-e", "1", "--universe", "1..12", "--seed", "7"],
                 lambda: _run(dp.diffpart, baskets(), universe="1..12", epsilon=1.0, seed=7), "r.dat"),
    "diffpart-faithful": (["diffpart", str(BASKETS), "-e", "1", "--universe", "1..12", "--seed", "7",
                           "--method", "faithful"],
                          lambda: _run(dp.diffpart, baskets(), universe="1..12", epsilon=1.0, seed=7,
                                       method="faithful"), "r.dat"),
    "basic": (["basic", str(BASKETS), "-e", "1", "--universe", "1..12", "--seed", "7"],
              lambda: _run(dp.basic, baskets(), universe="1..12", epsilon=1.0, seed=7), "r.dat"),
    "privbasis": (["privbasis", str(BASKETS), "-k", "20", "-e", "1", "--universe", "1..12", "--seed", "7"],
                  lambda: _run(dp.privbasis, baskets(), k=20, universe="1..12", epsilon=1.0, seed=7), "r.csv"),
    "tf": (["tf", str(BASKETS), "-k", "10", "-m", "2", "-e", "1", "--universe", "1..12", "--seed", "7"],
           lambda: _run(dp.tf, baskets(), k=10, m=2, universe="1..12", epsilon=1.0, seed=7), "r.csv"),
    "diffgen": (["diffgen", str(TABLE), "--schema", str(SCHEMA), "-e", "1", "--seed", "7"],
                lambda: _run(dp.diffgen, pd.read_csv(TABLE), schema=str(SCHEMA), epsilon=1.0, seed=7), "r.csv"),
    "diffgen-faithful": (["diffgen", str(TABLE), "--schema", str(SCHEMA), "-e", "1", "--seed", "7", "--method",
                          "faithful", "-H", "2"],
                         lambda: _run(dp.diffgen, pd.read_csv(TABLE), schema=str(SCHEMA), epsilon=1.0, seed=7,
                                      method="faithful", specializations=2), "r.csv"),
    "rps-guided": (["rps", str(TABLE), "--schema", str(SCHEMA), "-e", "1", "--seed", "7"],
                   lambda: _run(dp.rps, pd.read_csv(TABLE), schema=str(SCHEMA), epsilon=1.0, seed=7), "r.csv"),
    "rps": (["rps", str(TABLE), "--schema", str(SCHEMA), "-e", "1", "--seed", "7", "--depth", "4"],
            lambda: _run(dp.rps, pd.read_csv(TABLE), schema=str(SCHEMA), epsilon=1.0, seed=7, depth=4), "r.csv"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_seeded_api_release_is_the_cli_release(tmp_path: Path, name: str) -> None:
    argv, make, filename = CASES[name]
    (tmp_path / "cli").mkdir()
    (tmp_path / "api").mkdir()
    body_cli, manifest_cli = cli(argv, tmp_path / "cli" / filename)
    body_api, manifest_api = api(make(), tmp_path / "api" / filename)
    assert body_api == body_cli
    assert manifest_api == manifest_cli
    assert b'"mode": "seeded"' in manifest_api


@pytest.mark.parametrize("method", ["recommended", "hay", "cumulative"])
def test_seeded_degrees_from_an_edge_frame_is_the_cli_release_of_the_edge_file(tmp_path: Path, method: str) -> None:
    edges = edge_file(tmp_path)
    (tmp_path / "cli").mkdir()
    (tmp_path / "api").mkdir()
    body_cli, manifest_cli = cli(["degrees", str(edges), "--theta", "6", "-e", "1", "--seed", "7", "--method", method],
                                 tmp_path / "cli" / "d.txt")
    frame = pd.read_csv(edges, sep=" ", header=None, names=["u", "v"])
    rel = _run(dp.degrees, frame, theta=6, epsilon=1.0, seed=7, method=method)
    body_api, manifest_api = api(rel, tmp_path / "api" / "d.txt")
    assert (body_api, manifest_api) == (body_cli, manifest_cli)
    assert rel.manifest["domain"]["neighbour_model"] == "edge-list"  # the file-level model, as the CLI's


def test_seeded_degrees_with_a_node_list_is_the_cli_release(tmp_path: Path) -> None:
    edges = edge_file(tmp_path)
    nodes = tmp_path / "nodes.txt"
    nodes.write_text("".join(f"{i}\n" for i in range(70)))
    (tmp_path / "cli").mkdir()
    (tmp_path / "api").mkdir()
    body_cli, manifest_cli = cli(["degrees", str(edges), "--nodes", str(nodes), "--theta", "6", "-e", "1", "--seed",
                                  "7"], tmp_path / "cli" / "d.txt")
    frame = pd.read_csv(edges, sep=" ", header=None, names=["u", "v"])
    rel = _run(dp.degrees, frame, theta=6, epsilon=1.0, seed=7, nodes=str(nodes))
    assert api(rel, tmp_path / "api" / "d.txt") == (body_cli, manifest_cli)
    assert rel.manifest["domain"]["neighbour_model"] == "declared-nodes"


def test_the_api_options_are_the_cli_defaults() -> None:
    """The keyword defaults the API fills in are the parser's defaults (one set of options)."""
    import argparse

    from dprelease.api import graphs, itemsets, setvalued, tables
    from dprelease.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for command, defaults in (("diffpart", setvalued.DIFFPART_OPTIONS), ("basic", setvalued.basic_options()),
                              ("privbasis", itemsets.PRIVBASIS_OPTIONS), ("tf", itemsets.TF_OPTIONS),
                              ("diffgen", tables.DIFFGEN_OPTIONS), ("rps", tables.RPS_OPTIONS),
                              ("degrees", graphs.DEGREES_OPTIONS)):
        p = sub.choices[command]
        for name, value in defaults.items():  # the first action of a dest sets its default, as parse_args does
            assert next(a.default for a in p._actions if a.dest == name) == value, (command, name)
