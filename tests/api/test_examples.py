"""examples/quickstart.py and every Python block of README.md run as written (in a fresh folder)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _env() -> dict[str, str]:
    src = str(REPO / "src")
    return {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}


def test_quickstart_runs(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, str(REPO / "examples" / "quickstart.py")], cwd=tmp_path, env=_env(),
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "ledger: spent 1.5 of 2, remaining 0.5" in out.stdout


BLOCKS = re.findall(r"```python\n(.*?)```", (REPO / "README.md").read_text(encoding="utf-8"), re.S)


def test_readme_has_python_blocks() -> None:
    assert BLOCKS


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_python_block_runs(tmp_path: Path, index: int) -> None:
    script = tmp_path / "block.py"
    script.write_text(BLOCKS[index], encoding="utf-8")
    out = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=_env(), capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
