"""Each record's class found by following its path through a DiffPart-Prefix trie one level at a time: the
reference that :meth:`dprelease.setvalued.prefixpart.PrefixTree.classes_of` (a search of the leaves' key runs,
:func:`dprelease.engine.bitmasks.trie_leaves`) and the hidden-supports kernel are compared against."""

from __future__ import annotations

import numpy as np

from dprelease.data.transactions import TransactionDB
from dprelease.engine import bitmasks


def follow_each_record(tree, db: TransactionDB) -> np.ndarray:
    """The class of every record of ``db`` in ``tree`` (a PrefixTree): from the root, the child its bit of the
    node's rank picks, until a class; -1 for an empty record."""
    rank = np.full(tree.n_items, -1, dtype=np.int64)
    rank[tree.F] = np.arange(tree.m)
    masks = bitmasks.item_masks(db, rank, tree.pattern.shape[1])
    node = np.zeros(db.n_records, dtype=np.int64)
    open_ = ~tree.is_class[node] & (db.lengths > 0)
    for j in range(tree.m):
        idx = np.flatnonzero(open_)
        if idx.size == 0:
            break
        nxt = tree.child[node[idx], bitmasks.bit_column(masks[idx], j)]
        node[idx] = nxt
        open_[idx] = ~tree.is_class[nxt]
    node[db.lengths == 0] = -1
    return node
