"""Comments, docs, help texts and tests state their reasons in words that stand alone.

A comment that names a tracker entry by its number, or a past work period, points at text that is not in the
repository: a newcomer cannot follow it, and it stops being true when the tracker moves. This test reads every
text file a reader of the repository meets (the package, its docs, tests, benchmarks, examples and the README)
and refuses such a citation (the patterns below, and their examples in ``test_the_patterns_can_fail``).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("src", "docs", "tests", "benchmarks", "examples")
SUFFIXES = {".py", ".md", ".yaml", ".yml", ".toml", ".txt", ".cfg", ".sh", ".html", ".js", ".css"}

# spelled in pieces so that this file does not match itself
_ISSUE = "iss" + "ue"
_SESSION = "sess" + "ion"
PATTERNS = [
    re.compile(rf"\b{_ISSUE}s?[ \-#]*\d+", re.I),  # a number after the word
    re.compile(rf"\b{_SESSION}s?[ \-]\d+", re.I),  # likewise
    re.compile(rf"\b(?:the|this|that) {_ISSUE}(?:'s)?\b", re.I),  # the definite one, as if at hand
    re.compile(rf"\b(?:earlier|previous|this|work) {_SESSION}s?\b", re.I),
]
# "the session" in the sense of a Spark or progress session is fine; so is "an issue" in its ordinary sense


def _files() -> list[Path]:
    out = [ROOT / "README.md"]
    for folder in FOLDERS:
        base = ROOT / folder
        if base.is_dir():
            out += sorted(p for p in base.rglob("*") if p.is_file() and p.suffix in SUFFIXES
                          and "__pycache__" not in p.parts and not any(s.endswith(".egg-info") for s in p.parts))
    return out


def test_the_scan_sees_the_repository() -> None:
    files = _files()
    assert len(files) > 100, "the scan found too few files: the repository layout changed"
    assert any(p.name == "architecture.md" for p in files)


def test_the_patterns_can_fail() -> None:
    for text in (f"see {_ISSUE} 12", f"({_ISSUE}-8 defect 1)", f"since {_SESSION} 6", f"the {_ISSUE}'s target",
                 f"measured in an earlier {_SESSION}"):
        assert any(p.search(text) for p in PATTERNS), text
    for text in ("the Spark session is stopped", "an issue with floating point", "progress.session(quiet)"):
        assert not any(p.search(text) for p in PATTERNS), text


@pytest.mark.parametrize("folder", ["README.md", *FOLDERS])
def test_no_citation_of_issues_or_sessions(folder: str) -> None:
    found = []
    for path in _files():
        rel = path.relative_to(ROOT)
        if rel.parts[0] != folder:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if any(p.search(line) for p in PATTERNS):
                found.append(f"{rel}:{number}: {line.strip()[:120]}")
    assert not found, "state the reason instead of citing an issue or a session:\n" + "\n".join(found[:40])
