"""The two straightforward solutions of IncTDPart's section 1, built on DiffPart.

* Solution 1 (``solution1``): every batch (the initial dataset and each update) is
  sanitized alone by DiffPart with the *full* epsilon, and the releases are merged.
  The batches hold disjoint records, so the releases compose in parallel (DiffPart
  Theorem B.2): the merged release is epsilon-DP, but the noise of U + 1 releases
  adds up in every count.
* Solution 2 (``solution2``): the whole current data T_i is re-sanitized by DiffPart
  at every update with epsilon/(U + 1), so U + 1 releases compose sequentially to
  epsilon (the update-bounded budget of Definition 5 applied to re-publication).
"""

from __future__ import annotations

import numpy as np

from ..data.transactions import TransactionDB
from ..data.universe import Universe
from ..privacy import BudgetAccountant, NoiseSource, check_epsilon
from ..release import SetValuedRelease, build_manifest, records_run_start, NEIGHBOURS_LINE
from .diffpart import DEFAULT_C1, DEFAULT_C2, DEFAULT_FANOUT, diffpart

__all__ = ["solution1", "solution2"]


@records_run_start
def solution1(batches: list[TransactionDB], universe: Universe, epsilon: float, *, noises: list[NoiseSource],
              fanout: int = DEFAULT_FANOUT, c1: float = DEFAULT_C1, c2: float = DEFAULT_C2) -> SetValuedRelease:
    """Merge DiffPart(batch, epsilon) over disjoint batches (parallel composition: epsilon in total)."""
    eps = check_epsilon(epsilon)
    if len(noises) != len(batches):
        raise ValueError("one noise source per batch")
    sets: list[np.ndarray] = []
    counts: list[np.ndarray] = []
    for batch, noise in zip(batches, noises):
        rel = diffpart(batch, universe, eps, noise=noise, fanout=fanout, c1=c1, c2=c2)
        sets.extend(rel.itemsets)
        counts.append(np.asarray(rel.counts, dtype=np.int64))
    accountant = BudgetAccountant(eps)
    root = accountant.root()
    for i in range(len(batches)):  # disjoint record sets: one branch each, eps on every branch
        root.branch().spend(eps, f"diffpart batch {i}", mechanism="composite")
    merged = np.concatenate(counts) if counts else np.zeros(0, dtype=np.int64)
    manifest = build_manifest(
        "solution1-diffpart-per-batch", epsilon=eps,
        parameters={"fanout": fanout, "c1": c1, "c2": c2, "batches": len(batches)},
        noise=list(noises), accountant=accountant, domain=universe.describe(),  # every batch's source
        release={"records": int(np.clip(merged, 0, None).sum()), "distinct_records": int(merged.size)},
        budget_split={"per_batch": "full epsilon; disjoint batches compose in parallel (IncTDPart section 1)"},
        privacy_unit="record", neighbours=NEIGHBOURS_LINE,
    ) if noises else {}
    return SetValuedRelease(sets, merged, universe, manifest, accountant=accountant)


@records_run_start
def solution2(current: TransactionDB, universe: Universe, epsilon: float, updates: int, *, noise: NoiseSource,
              fanout: int = DEFAULT_FANOUT, c1: float = DEFAULT_C1, c2: float = DEFAULT_C2) -> SetValuedRelease:
    """DiffPart on the whole current data with epsilon/(U + 1): one of the U + 1 sequential re-publications."""
    eps = check_epsilon(epsilon)
    rel = diffpart(current, universe, eps / (int(updates) + 1), noise=noise, fanout=fanout, c1=c1, c2=c2)
    rel.manifest["algorithm"] = "solution2-diffpart-republish"
    rel.manifest["notes"] = [f"one of U + 1 = {int(updates) + 1} re-publications, each with epsilon/(U+1); "
                             f"the stream's total is epsilon = {eps}"]
    return rel
