"""The layer contract: every import inside the package points down (docs/architecture.md).

A module may import its own package and any package of a *lower* layer, never a higher one and never a peer of
its own layer (peers stay independent so that each can change alone). Every import counts: at the top of a
module, inside a function (a lazy import does not change who depends on whom), and under ``TYPE_CHECKING``.
A break fails the test with the importing file, its line and the rule it breaks.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "dprelease"

# Bottom to top. Names in one tuple are peers of one layer. A module of the package's top folder is its own
# "package" (``ledger`` is dprelease/ledger.py).
LAYERS: list[tuple[str, ...]] = [
    ("__init__",),                       # the version string only
    ("errors", "examples"),            # typed errors; the bundled example files (package data)
    ("limits", "progress"),              # work bounds from public inputs; progress bars on stderr
    ("privacy",),                        # mechanisms, samplers, the accountant
    ("data",),                           # readers, the domain, in-memory datasets, generators
    ("engine", "release", "sqlite_state", "ledger"),  # data passes; releases and their files; state on disk
    ("setvalued", "itemsets", "relational", "graphs"),  # the algorithms
    ("evaluation",),
    ("audit", "experiments", "report"),
    ("api",),                            # the Python surface: checks, ledger, read, release (the CLI's core)
    ("commands",),
    ("cli", "__main__"),
    ("spark_submit",),                   # spark-submit's entry: runs the CLI inside a Spark application
]

# Peers that may import each other, and why (kept short on purpose: each entry is a dependency to explain).
# Upward imports that are a facade, not a dependency, and why: the package's top module re-exports the Python
# API's names, imported on first use (a module ``__getattr__``), so nothing below ``api`` ever runs it.
FACADES: dict[tuple[str, str], str] = {
    ("__init__", "api"): "``import dprelease as dp; dp.diffpart(...)``: the API's names, loaded when first asked for",
}

ALLOWED_PEERS: dict[tuple[str, str], str] = {
    ("graphs", "relational"): "degree sequences run RPS on the one-dimensional domain [0, theta] (relational.rps)",
    ("ledger", "sqlite_state"): "the ledger is a SQLite state file (locking, atomic writes)",
    ("ledger", "release"): "a charge is settled from the release's manifest (what the accountant admitted)",
}


def _layer_of() -> dict[str, int]:
    return {name: i for i, names in enumerate(LAYERS) for name in names}


def _package(module: str) -> str:
    """dprelease.engine.local -> engine; dprelease -> __init__."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _module_name(path: Path) -> str:
    rel = path.relative_to(SRC.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _imports(path: Path) -> list[tuple[str, int]]:
    """Every dprelease module ``path`` imports (top level, in functions, under TYPE_CHECKING), with its line."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out: list[tuple[str, int]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("dprelease"):
                continue
            if target == "dprelease":  # from .. import commands / __version__
                for alias in node.names:
                    sub = alias.name
                    out.append((f"dprelease.{sub}" if (SRC / sub).exists() or (SRC / f"{sub}.py").exists()
                                else "dprelease", node.lineno))
            else:
                out.append((target, node.lineno))
        elif isinstance(node, ast.Import):
            out.extend((a.name, node.lineno) for a in node.names if a.name.startswith("dprelease"))
    return out


def _breaks() -> list[str]:
    layer = _layer_of()
    found = []
    for path in sorted(SRC.rglob("*.py")):
        here = _package(_module_name(path))
        if here not in layer:
            found.append(f"{path.relative_to(SRC.parent)}: package {here!r} has no layer in LAYERS")
            continue
        for target, line in _imports(path):
            there = _package(target)
            if there == here or there not in layer:
                if there not in layer:
                    found.append(f"{path.relative_to(SRC.parent)}:{line}: imports {target}, which has no layer")
                continue
            if layer[there] > layer[here] and (here, there) not in FACADES:
                found.append(f"{path.relative_to(SRC.parent)}:{line}: {here} imports {target} from a higher layer")
            elif layer[there] == layer[here] and (here, there) not in ALLOWED_PEERS:
                found.append(f"{path.relative_to(SRC.parent)}:{line}: {here} imports its peer {target}")
    return found


def test_every_import_points_down() -> None:
    breaks = _breaks()
    assert not breaks, "layer contract broken:\n" + "\n".join(breaks)


def test_every_package_has_a_layer() -> None:
    layer = _layer_of()
    packages = {p.name for p in SRC.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    packages |= {p.stem for p in SRC.glob("*.py")}
    assert packages - set(layer) == set(), "give these a layer in LAYERS"


@pytest.mark.parametrize("source, flagged", [
    ("from ..commands.itemsets import x\n", True),            # upward, at the top
    ("def f():\n    from ..cli import main\n", True),         # upward, inside a function
    ("def f():\n    from ..setvalued import diffpart\n", False),  # downward: allowed
])
def test_the_contract_can_fail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str, flagged: bool) -> None:
    """A planted upward import (top level or inside a function) is reported; a downward one is not."""
    import sys

    fake = tmp_path / "dprelease"
    for name in ("report", "commands", "setvalued"):
        (fake / name).mkdir(parents=True)
        (fake / name / "__init__.py").write_text("")
    (fake / "__init__.py").write_text("")
    (fake / "cli.py").write_text("")
    (fake / "report" / "planted.py").write_text(source)
    monkeypatch.setattr(sys.modules[__name__], "SRC", fake)
    breaks = [b for b in _breaks() if "planted" in b]
    assert bool(breaks) == flagged, breaks
