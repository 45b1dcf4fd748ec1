"""A second table with known structure: a Bayesian network of mixed attributes with a label.

Used to check that a method's ranking on Adult is not tuned to Adult. Every attribute's distribution
given its parents is written below (the network is public; the data are synthetic)::

    region ──> education ──> years_edu
                   │
                   v
    age ──> married ──> children        occupation ──> hours
     │                                  ^     │
     │           education ─────────────┘     │
     └───────────────> savings <──────────────┘
    sex ──> hours            lot (independent: a junk attribute)

    label (2 classes) <── education, occupation, married, savings, hours, age, sex

``label = 1`` with probability sigmoid(logit) where logit sums the effects in :func:`_label_logit`
(main effects plus two interactions: professional x high education, married x age). The Bayes-optimal
accuracy is printed by ``python -m dprelease.data.bayesnet --check``.

``python -m dprelease.data.bayesnet OUT.csv [--rows 100000] [--seed 0]`` writes the CSV (header row);
its schema is :data:`SCHEMA` (also ``examples/bayesnet-schema.yaml``, kept equal by a test).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

__all__ = ["SCHEMA", "generate_bayesnet", "write_bayesnet", "label_probability"]

_REGIONS = {"North": ["N-city", "N-town", "N-rural"], "South": ["S-city", "S-rural"],
            "West": ["W-city", "W-town", "W-rural"]}
_EDU = {"Low": ["none", "primary"], "Mid": ["secondary", "vocational"],
        "High": ["bachelor", "master", "doctorate"]}
_OCC = {"Manual": ["farming", "construction", "factory"], "Service": ["retail", "care", "clerical"],
        "Professional": ["engineer", "manager", "teacher", "lawyer"]}
_MARRIED = {"Partner": ["married", "partnered"], "Alone": ["single", "divorced", "widowed"]}
_SEX = ["female", "male"]


def _leaves(tree: dict[str, list[str]]) -> list[str]:
    return [leaf for group in tree.values() for leaf in group]


SCHEMA: dict[str, object] = {
    "format": "dprelease-table-schema/1",
    "name": "bayesnet",
    "class": {"name": "label", "values": ["no", "yes"]},
    "attributes": [
        {"name": "region", "type": "categorical", "taxonomy": {"Any": [{k: v} for k, v in _REGIONS.items()]}},
        {"name": "age", "type": "numeric", "bounds": [18, 91], "integer": True},
        {"name": "education", "type": "categorical", "taxonomy": {"Any": [{k: v} for k, v in _EDU.items()]}},
        {"name": "years_edu", "type": "numeric", "bounds": [0, 26], "integer": True},
        {"name": "occupation", "type": "categorical", "taxonomy": {"Any": [{k: v} for k, v in _OCC.items()]}},
        {"name": "hours", "type": "numeric", "bounds": [1, 100], "integer": True},
        {"name": "married", "type": "categorical", "taxonomy": {"Any": [{k: v} for k, v in _MARRIED.items()]}},
        {"name": "children", "type": "numeric", "bounds": [0, 10], "integer": True},
        {"name": "savings", "type": "numeric", "bounds": [0, 1000000], "integer": True},
        {"name": "sex", "type": "categorical", "taxonomy": {"Any": list(_SEX)}},
        {"name": "lot", "type": "numeric", "bounds": [0, 100000], "integer": True},
    ],
}


def _pick(rng: np.random.Generator, probs: np.ndarray) -> np.ndarray:
    """One categorical draw per row of ``probs`` (rows sum to 1)."""
    u = rng.random(probs.shape[0])[:, None]
    return np.minimum((u > np.cumsum(probs, axis=1)).sum(axis=1), probs.shape[1] - 1)


def _label_logit(edu_level: np.ndarray, occ_group: np.ndarray, partner: np.ndarray, savings: np.ndarray,
                 hours: np.ndarray, age: np.ndarray, male: np.ndarray) -> np.ndarray:
    logit = -6.4 + 1.5 * edu_level + np.asarray([0.0, 0.5, 1.7])[occ_group] + 2.7 * partner
    logit = logit + 4.5 * (savings >= 20000) + 0.06 * (hours - 40) + 0.4 * male
    logit = logit + 1.5 * ((occ_group == 2) & (edu_level == 2))  # professional x high education
    logit = logit + 1.0 * partner * (age >= 35) - 1.7 * (age < 25)
    return logit


def label_probability(edu_level, occ_group, partner, savings, hours, age, male) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-_label_logit(edu_level, occ_group, partner, savings, hours, age, male)))


def generate_bayesnet(n: int = 100_000, seed: int = 0) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Sample ``n`` records: a dict of column arrays (labels for categoricals, ints for numerics) and P(label=yes)."""
    rng = np.random.default_rng(seed)
    region_leaves = _leaves(_REGIONS)
    region = rng.choice(len(region_leaves), size=n, p=[0.2, 0.1, 0.1, 0.2, 0.1, 0.15, 0.1, 0.05])
    region_group = np.asarray([0, 0, 0, 1, 1, 2, 2, 2])[region]
    urban = np.isin(region, [0, 3, 5])
    age = np.clip(np.round(18 + rng.gamma(3.0, 7.5, size=n)), 18, 90).astype(np.int64)
    # education | region (urban regions more educated; South less)
    edu_p = np.where(urban[:, None], [[0.05, 0.10, 0.30, 0.15, 0.25, 0.10, 0.05]],
                     [[0.10, 0.20, 0.35, 0.15, 0.13, 0.05, 0.02]])
    edu_p = np.where((region_group == 1)[:, None], [[0.15, 0.25, 0.30, 0.15, 0.10, 0.04, 0.01]], edu_p)
    edu = _pick(rng, edu_p)
    edu_level = np.asarray([0, 0, 1, 1, 2, 2, 2])[edu]
    years_edu = np.clip(np.round(np.asarray([3, 8, 12, 13, 16, 18, 22])[edu] + rng.normal(0, 1.2, n)), 0, 25)
    # occupation | education level
    occ_p = np.asarray([[0.25, 0.25, 0.20, 0.15, 0.08, 0.05, 0.01, 0.005, 0.0, 0.005],
                        [0.08, 0.12, 0.15, 0.20, 0.15, 0.15, 0.05, 0.06, 0.03, 0.01],
                        [0.01, 0.02, 0.02, 0.08, 0.07, 0.10, 0.22, 0.22, 0.18, 0.08]])
    occ = _pick(rng, occ_p[edu_level])
    occ_group = np.asarray([0, 0, 0, 1, 1, 1, 2, 2, 2, 2])[occ]
    male = (rng.random(n) < 0.5).astype(np.int64)
    hours = np.clip(np.round(np.asarray([44.0, 36.0, 45.0])[occ_group] + 4 * male + rng.normal(0, 9, n)), 1, 99)
    # married | age ; children | married
    p_partner = 1.0 / (1.0 + np.exp(-(age - 30) / 6.0)) * 0.75
    partner_leaf = np.where(rng.random(n) < p_partner, rng.choice(2, size=n, p=[0.8, 0.2]),
                            2 + rng.choice(3, size=n, p=[0.6, 0.3, 0.1]))
    partner = (partner_leaf < 2).astype(np.int64)
    children = np.clip(rng.poisson(np.where(partner == 1, 1.8, 0.3)), 0, 9)
    # savings | age, occupation group: mostly small (log-normal), a few large
    scale = np.exp(7.0 + 0.03 * (age - 18) + np.asarray([0.0, 0.2, 1.0])[occ_group])
    big = rng.random(n) < (0.03 + 0.04 * occ_group + 0.002 * (age - 18))
    savings = np.where(big, rng.lognormal(np.log(40000), 0.8, n), scale * rng.lognormal(0.0, 1.0, n))
    savings = np.clip(np.round(savings), 0, 999_999).astype(np.int64)
    lot = rng.integers(0, 100_000, size=n)
    prob = label_probability(edu_level, occ_group, partner, savings, hours, age, male)
    label = rng.random(n) < prob
    edu_leaves, occ_leaves, married_leaves = _leaves(_EDU), _leaves(_OCC), _leaves(_MARRIED)
    cols = {
        "region": np.asarray(region_leaves, dtype=object)[region],
        "age": age,
        "education": np.asarray(edu_leaves, dtype=object)[edu],
        "years_edu": years_edu.astype(np.int64),
        "occupation": np.asarray(occ_leaves, dtype=object)[occ],
        "hours": hours.astype(np.int64),
        "married": np.asarray(married_leaves, dtype=object)[partner_leaf],
        "children": children.astype(np.int64),
        "savings": savings,
        "sex": np.asarray(_SEX, dtype=object)[male],
        "lot": lot.astype(np.int64),
        "label": np.where(label, "yes", "no").astype(object),
    }
    return cols, prob


def write_bayesnet(path: str | Path, n: int = 100_000, seed: int = 0) -> Path:
    """Write the sample as a header CSV (temp file + rename)."""
    import pandas as pd

    from .table import write_frame

    cols, _ = generate_bayesnet(n, seed)
    write_frame(pd.DataFrame(cols), path)
    return Path(path)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m dprelease.data.bayesnet", description=__doc__.splitlines()[0])
    p.add_argument("output", nargs="?", help="CSV to write (header row)")
    p.add_argument("--rows", type=int, default=100_000, help="records (default 100000)")
    p.add_argument("--seed", type=int, default=0, help="generator seed (default 0)")
    p.add_argument("--check", action="store_true", help="print the label rate and the Bayes-optimal accuracy")
    args = p.parse_args(argv)
    if args.check:
        cols, prob = generate_bayesnet(args.rows, args.seed)
        y = cols["label"] == "yes"
        print(f"label rate {y.mean():.4f}; Bayes-optimal accuracy {np.mean((prob >= 0.5) == y):.4f}; "
              f"majority {max(y.mean(), 1 - y.mean()):.4f}")
    if args.output:
        print(write_bayesnet(args.output, args.rows, args.seed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
