"""Shared test fixtures: the real datasets (skipped when absent) and a zero-noise source."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dprelease.privacy.noise import NoiseSource

REPO = Path(__file__).resolve().parents[1]
DATASETS = (REPO / ".." / "shared" / "datasets").resolve()


def dataset(*parts: str) -> Path:
    """Path of a real dataset under ../shared/datasets, or skip the test with the reason."""
    path = DATASETS.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"real dataset not available: {path} (../shared/datasets is absent on this machine)")
    return path


class ZeroNoise(NoiseSource):
    """Test-only source: no noise, empty combinations never pass, ties go to the last candidate.

    Never reachable from the CLI (it lives in the tests).
    """

    mode = "zero-noise-test"

    def discrete_laplace(self, scale, size):
        return np.zeros(int(size), dtype=np.int64)

    def laplace(self, scale, size):
        return np.zeros(int(size))

    def uniform(self, size):
        return np.full(int(size), 0.5)

    def integers(self, high, size):
        return np.full(int(size), int(high) - 1, dtype=np.int64)

    def binomial(self, n, p):
        return 0

    def gumbel(self, size):
        return np.zeros(int(size))


@pytest.fixture
def zero_noise() -> ZeroNoise:
    return ZeroNoise()



def pytest_collection_modifyitems(config, items) -> None:
    """Slow tests are left out of the default run *with a reason that says how to run them*: skipped, not silently deselected, so `-ra` lists them even under pytest-xdist."""
    markexpr = config.getoption("markexpr", "") or ""
    if "slow" in markexpr:  # `-m slow` (or any expression naming it) runs them
        return
    skip = pytest.mark.skip(reason="slow (long experiment on the real datasets): run the slow tests with "
                                   "`.venv/bin/python -m pytest -m slow`")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _no_ambient_ledger(monkeypatch) -> None:
    """A DPRELEASE_LEDGER set in the caller's shell must not make every test charge it."""
    monkeypatch.delenv("DPRELEASE_LEDGER", raising=False)


def spark_unavailable() -> str | None:
    """Why the Spark tests cannot run here (no pyspark, or no Java), or None."""
    import os
    import shutil

    try:
        import pyspark  # noqa: F401
    except ImportError:
        return "pyspark is not installed (pip install -e '.[spark]')"
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return "Java is not installed (Spark needs Java 17)"
    return None


@pytest.fixture(scope="module")
def spark():
    """One local[2] Spark session per test module; skipped with the reason where Spark cannot run."""
    reason = spark_unavailable()
    if reason:
        pytest.skip(reason)
    from dprelease.engine.spark import session

    s = session("local[2]")
    yield s
    s.stop()
