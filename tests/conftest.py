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
    """Slow tests are left out of the default run *with a reason that says how to run them* (issue 9,
    section 4): skipped, not silently deselected, so `-ra` lists them even under pytest-xdist."""
    markexpr = config.getoption("markexpr", "") or ""
    if "slow" in markexpr:  # `-m slow` (or any expression naming it) runs them
        return
    skip = pytest.mark.skip(reason="slow (long experiment on the real datasets): run the slow tests with "
                                   "`.venv/bin/python -m pytest -m slow`")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
