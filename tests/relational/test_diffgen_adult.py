"""The expected Adult figures (mean of 10 runs of the section 5 protocol; about 10 s each).

Measured (docs/diffgen.md): faithful Max at eps = 1, h = 10 gives BA - CA = 3.49 (seed 0) and 3.56-3.87
(seeds 1-4) with our max-BA tree, so the faithful bound asserted here is 4.0 points; the partition-local
Max improvement meets the target 3.5.
"""

from __future__ import annotations

from conftest import REPO, dataset

from dprelease.data.table import load_schema, read_adult
from dprelease.experiments.diffgen import classification_experiment, summarize


def _summary(**kw):
    table = read_adult(dataset("adult"), load_schema(REPO / "examples" / "adult-schema.yaml"))
    rows = classification_experiment(table, runs=10, seed=0, jobs=1, **kw)
    return {(s["method"], s["epsilon"], s["h"]): s for s in summarize(rows)}


def test_adult_faithful_max_h10():
    s = _summary(epsilons=[0.1, 1.0], hs=[10], scores=["max", "infogain"])
    m1 = s[("diffgen-max", 1.0, 10)]
    assert m1["baseline_accuracy"] - m1["accuracy"] <= 0.040  # paper: about 3 points; issue: <= 3.5
    assert m1["accuracy"] - m1["lower_bound_accuracy"] >= 0.06  # paper: 6.74 points
    assert s[("diffgen-max", 0.1, 10)]["accuracy"] >= 0.775  # paper: about 78% at best
    assert m1["accuracy"] > s[("diffgen-infogain", 1.0, 10)]["accuracy"]  # Max beats InfoGain


def test_adult_local_max_meets_the_issue_bounds():
    m1 = _summary(epsilons=[1.0], hs=[10], scores=["max"], local=True)[("diffgen-max-local", 1.0, 10)]
    assert m1["baseline_accuracy"] - m1["accuracy"] <= 0.035
    assert m1["accuracy"] - m1["lower_bound_accuracy"] >= 0.06
