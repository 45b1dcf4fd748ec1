"""Basic, the baseline of DiffPart section 4.1: a noisy count for every one of the 2^|I| - 1 possible records.

Each record falls in exactly one of these cells (its own itemset), so the whole
vector has L1 sensitivity 1 and one charge of B covers it (Theorem 3.1). Noisy
counts <= 0 release no copy. The universe is capped (default 20 items, about a
million cells) because the work and the noise grow as 2^|I|.
"""

from __future__ import annotations

import numpy as np

from ..data.transactions import TransactionDB
from ..data.universe import Universe
from ..engine.base import TransactionData
from ..engine.local import as_transaction_data
from ..errors import ParameterError
from ..privacy import BudgetAccountant, NoiseSource, check_epsilon, noisy_counts
from ..privacy.mechanisms import laplace_scale
from ..privacy.uncertainty import dlap_half_width, manifest_section
from ..release import SetValuedRelease, add_notes, build_manifest, records_run_start, release_size_note, NEIGHBOURS_LINE

__all__ = ["DEFAULT_MAX_ITEMS", "basic"]

DEFAULT_MAX_ITEMS = 20


@records_run_start
def basic(db: TransactionDB | TransactionData, universe: Universe, epsilon: float, *, noise: NoiseSource,
          max_items: int = DEFAULT_MAX_ITEMS) -> SetValuedRelease:
    """Release max(0, count + DLap(1/B)) copies of every possible non-empty itemset."""
    B = check_epsilon(epsilon)
    n = universe.size
    if n > max_items:
        raise ParameterError(
            f"basic needs 2^|I| - 1 noisy counts; the universe has {n} items, over the limit of {max_items} "
            f"(2^{n} - 1 = {2**n - 1:,} cells). Use diffpart for large universes."
        )
    accountant = BudgetAccountant(B)
    # cell m-1 holds the itemset with bitmask m (one engine pass: records per bitmask)
    counts = as_transaction_data(db).record_mask_counts()[1:]
    noisy = noisy_counts(counts, B, scope=accountant.root(), noise=noise, label="all itemset counts")
    cells = np.flatnonzero(noisy > 0)
    bits = np.arange(n, dtype=np.int64)
    itemsets = [bits[((m + 1) >> bits) & 1 == 1] for m in cells.tolist()]
    released = noisy[cells]
    manifest = build_manifest(
        "basic", epsilon=B, parameters={"max_items": max_items}, noise=noise, accountant=accountant,
        domain=universe.describe(), release={"records": int(released.sum()), "distinct_records": int(cells.size)},
        budget_split={"all_cells": "B on the vector of 2^|I|-1 disjoint cell counts (sensitivity 1)"},
        privacy_unit="record", neighbours=NEIGHBOURS_LINE,
    )
    size_note = release_size_note("basic", int(np.clip(released, 0, None).sum()), "records")
    add_notes(manifest, [size_note] if size_note else [])
    # post-processing of the public scale 1/B: every cell's interval, in a companion file
    manifest["uncertainty"] = manifest_section(
        accounts_for="the discrete Laplace noise of each cell count (exact), clipped at 0 as the count is",
        formula="DLap(b), b = 1/eps: sd = sqrt(2t)/(1-t), t = exp(-1/b); h = least integer with "
                "2 t^(h+1)/(1+t) <= 0.05; [max(0, v - h), v + h]; a cell not in the body was released as 0: "
                f"[0, {dlap_half_width(laplace_scale(B, 1))}]",
        columns=("itemset", "count", "sd", "low", "high"), scale=laplace_scale(B, 1), file=True)
    return SetValuedRelease(itemsets, released, universe, manifest, accountant=accountant)
