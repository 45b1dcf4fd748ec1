"""The command line's allocator settings (``cli.tune_allocator``): they take on glibc, keep a user's own
``MALLOC_*`` tuning, and stop arrays that are freed and allocated again from being faulted in again."""

from __future__ import annotations

import subprocess
import sys

import pytest

from dprelease import cli

_GLIBC = sys.platform.startswith("linux") and "glibc" in " ".join(__import__("platform").libc_ver())

# a child process allocates and frees arrays of 1 to 3 MiB, 40 rounds of a pattern that a release's steps
# follow (an array, a smaller one, the first freed and a larger one made), and prints its minor page faults
_CHILD = """
import resource, sys
import numpy as np
from dprelease import cli
if sys.argv[1] == "tuned":
    assert cli.tune_allocator()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for i in range(40):
    a = np.ones((1 << 18) + i * 1000)
    b = np.ones((1 << 17) + i * 1000)
    del a
    c = np.ones(3 << 17)
    del b, c
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _faults(mode: str) -> int:
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith("MALLOC_")}
    out = subprocess.run([sys.executable, "-c", _CHILD, mode], capture_output=True, text=True, env=env, check=True)
    return int(out.stdout.strip())


def test_a_user_malloc_setting_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MALLOC_ARENA_MAX", "2")
    assert cli.tune_allocator() is False


def test_other_platforms_are_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli.sys, "platform", "darwin")
    assert cli.tune_allocator() is False


@pytest.mark.skipif(not _GLIBC, reason="the settings are glibc's (mallopt)")
def test_freed_arrays_are_not_faulted_in_again() -> None:
    # a round touches 6 MiB (1,536 pages). Untuned, glibc returns freed blocks to the system (unmapped, or
    # trimmed off the heap's top) and most rounds fault their pages in again (measured: ~63,000 faults); tuned,
    # the heap keeps them and only the first rounds fault (~1,700)
    untuned, tuned = _faults("untuned"), _faults("tuned")
    assert untuned > 20 * 1536
    assert tuned < 3 * 1536
