"""The doctests of the public privacy API (dprelease.privacy) run with the tests (CI also type-checks it)."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["dprelease.privacy.accountant", "dprelease.privacy.mechanisms", "dprelease.privacy.noise"]


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0
