"""The train/test split of the classification protocol (DiffGen section 5): a random 2/3 to train on, 1/3 to score.

Shared by the classification experiments (DiffGen, RPS) and the report's baseline accuracy, so that a split
drawn from the same (seed, run) is the same split everywhere.
"""

from __future__ import annotations

import numpy as np

from ..data.table import EncodedTable

__all__ = ["split_table"]


def split_table(table: EncodedTable, seed: int, run: int) -> tuple[EncodedTable, EncodedTable]:
    """A random 2/3 train, 1/3 test split (section 5), reproducible from (seed, run)."""
    rng = np.random.default_rng([seed, run])
    perm = rng.permutation(table.n_records)
    n_train = (2 * table.n_records) // 3
    return table.take(np.sort(perm[:n_train])), table.take(np.sort(perm[n_train:]))
