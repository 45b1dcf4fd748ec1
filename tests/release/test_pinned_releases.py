"""Seeded releases of every releasing command and method, pinned byte for byte.

A refactoring must not change what a command publishes: for a fixed seed, the release body and its manifest
(minus the run's clock) are pure functions of the inputs and the parameters. This module runs each command
of the table below on small bundled or generated inputs and compares the sha256 of the body and of the
canonical manifest with ``pinned_releases.json``. A change that is *meant* to alter a release updates the pins
on purpose: ``DPRELEASE_UPDATE_PINS=1 python -m pytest tests/release/test_pinned_releases.py`` rewrites the file, and
the diff of that file shows which releases moved.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np
import pytest

from dprelease.cli import main

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
PINS = HERE / "pinned_releases.json"
UPDATE = os.environ.get("DPRELEASE_UPDATE_PINS") == "1"

# name -> (command line with {placeholders}, output file name); every run adds --seed 7 --quiet -o OUT
CASES: dict[str, list[str]] = {
    "diffpart-default": ["diffpart", "{baskets}", "--universe", "1..12", "-e", "1"],
    "diffpart-faithful": ["diffpart", "{baskets}", "--universe", "1..12", "-e", "1", "--method", "faithful"],
    "diffpart-kosarak": ["diffpart", "{kosarak}", "--universe", "1..400", "-e", "1"],
    # the bare generalized records (the default before "auto"): the same pins as that default had
    "diffpart-bare": ["diffpart", "{baskets}", "--universe", "1..12", "-e", "1", "--shape-share", "0"],
    "diffpart-kosarak-bare": ["diffpart", "{kosarak}", "--universe", "1..400", "-e", "1", "--shape-share", "0"],
    "diffpart-kosarak-faithful": ["diffpart", "{kosarak}", "--universe", "1..400", "-e", "2", "--method", "faithful"],
    "basic": ["basic", "{baskets}", "--universe", "1..12", "-e", "1"],
    "privbasis-default": ["privbasis", "{kosarak}", "--universe", "1..400", "-e", "1", "-k", "20"],
    "privbasis-faithful": ["privbasis", "{kosarak}", "--universe", "1..400", "-e", "1", "-k", "20", "--faithful"],
    "tf-laplace": ["tf", "{baskets}", "--universe", "1..12", "-e", "1", "-k", "10", "-m", "2"],
    "tf-exponential": ["tf", "{baskets}", "--universe", "1..12", "-e", "1", "-k", "10", "-m", "2",
                       "--variant", "exponential"],
    "diffgen-default": ["diffgen", "{table}", "--schema", "{table_schema}", "-e", "1", "-H", "6"],
    "diffgen-faithful": ["diffgen", "{table}", "--schema", "{table_schema}", "-e", "1", "-H", "6", "--method",
                         "faithful"],
    "diffgen-recommended": ["diffgen", "{table}", "--schema", "{table_schema}", "-e", "1", "-H", "6",
                            "--method", "recommended"],
    "diffgen-jobs": ["diffgen", "{jobs}", "--schema", "{jobs_schema}", "-e", "1", "-H", "2"],
    "rps-balanced": ["rps", "{table}", "--schema", "{table_schema}", "-e", "1", "--method", "faithful"],
    "rps-guided": ["rps", "{table}", "--schema", "{table_schema}", "-e", "1"],
    "rps-fixed": ["rps", "{table}", "--schema", "{table_schema}", "-e", "1", "--partitioning", "fixed"],
    "degrees-rps": ["degrees", "{graph}", "-e", "1", "--theta", "16", "--method", "faithful"],
    "degrees-rps-cumulative": ["degrees", "{graph}", "-e", "1", "--theta", "16", "--method", "rps"],
    "degrees-default": ["degrees", "{graph}", "-e", "1", "--theta", "40"],
    "degrees-hay": ["degrees", "{graph}", "-e", "1", "--theta", "16", "--method", "hay"],
    "degrees-cumulative": ["degrees", "{graph}", "-e", "1", "--theta", "16", "--method", "cumulative"],
}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Small inputs: the bundled examples, and generated files made with fixed seeds."""
    from dprelease.data.bayesnet import write_bayesnet

    d = tmp_path_factory.mktemp("pinned-inputs")
    rng = np.random.default_rng(20261127)
    # kosarak-like baskets: Zipf item popularity over 400 items, geometric lengths
    lines = []
    weights = 1.0 / np.arange(1, 401) ** 1.1
    weights /= weights.sum()
    for _ in range(3000):
        n = int(min(40, rng.geometric(0.15)))
        items = np.unique(rng.choice(400, size=n, p=weights)) + 1
        lines.append(" ".join(str(int(i)) for i in items))
    (d / "kosarak.dat").write_text("\n".join(lines) + "\n")
    table = write_bayesnet(d / "bayesnet.csv", n=3000, seed=3)
    # a graph: a seeded clustered power-law graph of 600 nodes as an edge list
    import networkx as nx

    g = nx.powerlaw_cluster_graph(600, 3, 0.3, seed=5)
    (d / "graph.txt").write_text("".join(f"{u}\t{v}\n" for u, v in g.edges()))
    return {
        "baskets": str(REPO / "examples" / "baskets.dat"),
        "kosarak": str(d / "kosarak.dat"),
        "table": str(table),
        "table_schema": str(REPO / "examples" / "bayesnet-schema.yaml"),
        "jobs": str(REPO / "examples" / "table1-jobs.csv"),
        "jobs_schema": str(REPO / "examples" / "table1-schema.yaml"),
        "graph": str(d / "graph.txt"),
    }


def _digests(out: Path, inputs: dict[str, str]) -> dict[str, str]:
    """sha256 of the body and of the manifest, without its clock and with the paths of the inputs (which differ
    between checkouts and temporary folders) replaced by fixed names."""
    manifest = json.loads(Path(f"{out}.manifest.json").read_text())
    manifest.pop("created_utc", None)
    text = json.dumps(manifest, sort_keys=True, separators=(",", ":"))
    for name, path in sorted(inputs.items(), key=lambda kv: -len(kv[1])):
        text = text.replace(json.dumps(path)[1:-1], f"<{name}>")
    text = text.replace(json.dumps(str(REPO))[1:-1], "<repo>")
    canonical = text.encode()
    return {"body": hashlib.sha256(out.read_bytes()).hexdigest(),
            "manifest": hashlib.sha256(canonical).hexdigest()}


def _load_pins() -> dict[str, dict[str, str]]:
    return json.loads(PINS.read_text()) if PINS.exists() else {}


@pytest.mark.parametrize("name", sorted(CASES))
def test_seeded_release_is_pinned(name: str, inputs: dict[str, str], tmp_path: Path) -> None:
    out = tmp_path / f"{name}.out"
    argv = [a.format(**inputs) for a in CASES[name]] + ["--seed", "7", "--quiet", "-o", str(out)]
    assert main(argv) == 0, argv
    got = _digests(out, inputs)
    if UPDATE:
        pins = _load_pins()
        pins[name] = got
        PINS.write_text(json.dumps(dict(sorted(pins.items())), indent=1) + "\n")
        return
    pins = _load_pins()
    assert name in pins, f"no pin for {name}: run with DPRELEASE_UPDATE_PINS=1 to add it"
    assert got == pins[name], f"the seeded release {name} changed: {' '.join(argv)}"


# a stream: init, then two appends of batches cut from the kosarak-like file (paper and parallel accounting)
STREAMS: dict[str, list[str]] = {
    "stream-paper-prefix": ["-U", "2"],
    "stream-paper-tdpart": ["-U", "2", "--method", "faithful"],
    "stream-parallel-record": ["--accounting", "parallel", "--privacy-unit", "record"],
}


@pytest.mark.parametrize("name", sorted(STREAMS))
def test_seeded_stream_release_is_pinned(name: str, inputs: dict[str, str], tmp_path: Path) -> None:
    lines = Path(inputs["kosarak"]).read_text().splitlines()
    batches = [tmp_path / "b0.dat", tmp_path / "b1.dat"]
    batches[0].write_text("\n".join(lines[:2000]) + "\n")
    batches[1].write_text("\n".join(lines[2000:]) + "\n")
    state = tmp_path / "s.db"
    assert main(["stream", "init", str(state), "-e", "1", "--universe", "1..400", "--seed", "7", "-q",
                 *STREAMS[name]]) == 0
    out = tmp_path / "r.dat"
    for b in batches:
        assert main(["stream", "append", str(state), str(b), "-o", str(out), "-q"]) == 0
    got = _digests(out, inputs)
    pins = _load_pins()
    if UPDATE:
        pins[name] = got
        PINS.write_text(json.dumps(dict(sorted(pins.items())), indent=1) + "\n")
        return
    assert name in pins, f"no pin for {name}: run with DPRELEASE_UPDATE_PINS=1 to add it"
    assert got == pins[name], f"the seeded stream release {name} changed"
