"""dprelease installs like a library: the wheel holds the examples and runs a release outside the repository.

The wheel is built from a copy of the sources with the test environment's own setuptools (no build isolation,
no index: nothing is downloaded), installed with ``--no-deps`` into a fresh virtual environment that then sees
the test environment's packages for its dependencies, and run from a temporary directory.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import site
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from dprelease import examples
from dprelease.cli import main

REPO = Path(__file__).resolve().parents[1]
PACKAGED = REPO / "src" / "dprelease" / "examples"


def test_packaged_examples_are_the_repository_examples() -> None:
    """The package's copies and the README's examples/ folder hold the same bytes, and nothing else ships."""
    for name in examples.NAMES:
        assert (PACKAGED / name).read_bytes() == (REPO / "examples" / name).read_bytes(), name
    shipped = {p.name for p in PACKAGED.iterdir() if p.is_file() and p.suffix != ".py"}
    assert shipped == set(examples.NAMES)


def test_example_paths_resolve_inside_the_package() -> None:
    for name in examples.NAMES:
        path = examples.path(name)
        assert path.is_file() and path.parent == Path(examples.__file__).parent, name
    with pytest.raises(ValueError, match="no bundled example 'missing.yaml'"):
        examples.path("missing.yaml")


def test_no_module_reaches_above_the_package() -> None:
    """An installed package has no repository around it: files next to the sources are found as package data."""
    climbing = re.compile(r"__file__\)?(\.resolve\(\))?\.(parents\[|parent\.parent)")
    found = [f"{p.relative_to(REPO)}:{i}" for p in sorted((REPO / "src").rglob("*.py"))
             for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if climbing.search(line)]
    assert not found, "paths outside the package (use dprelease.examples.path):\n" + "\n".join(found)


def _setuptools_version() -> tuple[int, ...] | None:
    try:
        import setuptools
    except ImportError:
        return None
    return tuple(int(p) for p in setuptools.__version__.split(".")[:2] if p.isdigit())


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{' '.join(map(str, args))} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done


# What the installed package reports about itself, run with the fresh environment's interpreter.
_PROBE = """
import json, dprelease, dprelease.examples as ex
from dprelease.data.table import load_schema
schemas = {n: load_schema(ex.path(n)).name for n in ex.NAMES if n.endswith(".yaml")}
print(json.dumps({"package": dprelease.__file__, "baskets": str(ex.path("baskets.dat")), "schemas": schemas}))
"""


def test_wheel_installs_and_runs_a_release_outside_the_repository(tmp_path: Path) -> None:
    version = _setuptools_version()
    if version is None or version < (70, 1):
        pytest.skip("building the wheel offline needs setuptools >= 70.1 in the test environment (the `test` extra "
                    f"installs it); found {'none' if version is None else '.'.join(map(str, version))}")
    pip = _run([sys.executable, "-m", "pip", "--version"], REPO, dict(os.environ)).stdout.split()[1]
    if tuple(int(p) for p in pip.split(".")[:2]) < (22, 3):
        pytest.skip(f"installing into another environment needs pip >= 22.3 (its --python option); found {pip}")

    # Only what a source distribution holds: a wheel that works from these files needs nothing else in the tree.
    src = tmp_path / "src-copy"
    shutil.copytree(REPO / "src", src / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PIP_", "VIRTUAL_ENV"))}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    wheels = tmp_path / "wheels"
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q",
          "-w", str(wheels), str(src)], tmp_path, env)
    (wheel,) = wheels.glob("dprelease-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
    assert {f"dprelease/examples/{n}" for n in examples.NAMES} <= names
    assert "dprelease/py.typed" in names and not any(n.startswith(("tests/", "examples/")) for n in names)

    # A fresh environment (without pip of its own: this environment's pip installs into it, with --python), the
    # wheel installed alone; then its dependencies come from the test environment's site-packages, listed after its
    # own (a plain path in a .pth file: the test environment's editable dprelease is not on it).
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], tmp_path, env)
    python = venv / "bin" / "python"
    _run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", "-q",
          str(wheel)], tmp_path, env)
    purelib = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                        tmp_path, env).stdout.strip())
    outer = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"], *site.getsitepackages()}
    (purelib / "outer-environment.pth").write_text("\n".join(sorted(outer)) + "\n")

    work = tmp_path / "elsewhere"
    work.mkdir()
    probe = json.loads(_run([str(python), "-c", _PROBE], work, env).stdout)
    assert Path(probe["package"]).is_relative_to(venv), probe["package"]
    assert Path(probe["baskets"]).is_relative_to(venv), probe["baskets"]
    assert probe["schemas"] == {"adult-schema.yaml": "adult", "bayesnet-schema.yaml": "bayesnet",
                                "table1-schema.yaml": "table1"}

    cli = venv / "bin" / "dprelease"
    _run([str(cli), "diffpart", probe["baskets"], "--universe", "1..12", "-e", "1", "-o", "out.dat", "-q"], work, env)
    manifest = json.loads((work / "out.dat.manifest.json").read_text())
    body = (work / "out.dat").read_bytes()
    assert manifest["algorithm"] == "diffpart-prefix" and manifest["epsilon"] == 1.0
    assert manifest["rng"] == {"mode": "secure", "seed": None}
    assert manifest["domain"]["spec"] == "1..12" and manifest["privacy"]["epsilon_spent"] == 1.0
    assert manifest["body"] == "out.dat" and manifest["body_sha256"] == hashlib.sha256(body).hexdigest()
    items = {int(x) for line in body.decode().splitlines() for x in line.split()}
    assert items <= set(range(1, 13))

    # Seeded, the installed wheel and the source tree publish the same bytes.
    _run([str(cli), "diffpart", probe["baskets"], "--universe", "1..12", "-e", "1", "-o", "seeded.dat", "--seed",
          "7", "-q"], work, env)
    here = tmp_path / "here.dat"
    assert main(["diffpart", str(REPO / "examples" / "baskets.dat"), "--universe", "1..12", "-e", "1", "-o",
                 str(here), "--seed", "7", "-q"]) == 0
    assert (work / "seeded.dat").read_bytes() == here.read_bytes()
    assert sorted(p.name for p in work.iterdir()) == ["out.dat", "out.dat.manifest.json", "seeded.dat",
                                                     "seeded.dat.manifest.json"]
