"""The context-free taxonomy tree of DiffPart (section 3.1, Definition 3.1).

Leaves are the item ids 0..n-1. Level by level, consecutive groups of ``fanout``
nodes get a parent (the last group of a level may be smaller) until one root is
left. Every leaf is at the same depth, every node covers a contiguous range of
item ids, and the child of a node u that holds item i is
``(i - lo[u]) // span[u]`` with ``span[u] = fanout ** (height[u] - 1)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ParameterError

__all__ = ["ContextFreeTaxonomy"]


@dataclass(frozen=True, eq=False)
class ContextFreeTaxonomy:
    """Arrays indexed by node id; leaves are ids 0..n_leaves-1 and the root is the last id."""

    n_leaves: int
    fanout: int
    lo: np.ndarray  # first item covered
    hi: np.ndarray  # one past the last item covered
    height: np.ndarray  # 0 for leaves
    first_child: np.ndarray  # -1 for leaves; children are first_child .. first_child+n_children-1
    n_children: np.ndarray
    internal_below: np.ndarray  # |InternalNodes(u, H)|: internal nodes in the subtree rooted at u
    span: np.ndarray  # items covered by each full child (fanout ** (height-1)); 0 for leaves

    @classmethod
    def build(cls, n_leaves: int, fanout: int) -> "ContextFreeTaxonomy":
        if fanout < 2:
            raise ParameterError(f"--fanout must be at least 2, got {fanout}")
        if n_leaves < 1:
            raise ParameterError("the item universe is empty")
        lo = list(range(n_leaves))
        hi = [i + 1 for i in range(n_leaves)]
        height = [0] * n_leaves
        first_child = [-1] * n_leaves
        n_children = [0] * n_leaves
        internal_below = [0] * n_leaves
        level = list(range(n_leaves))
        h = 0
        while len(level) > 1:
            h += 1
            nxt = []
            for g in range(0, len(level), fanout):
                group = level[g : g + fanout]
                node = len(lo)
                lo.append(lo[group[0]])
                hi.append(hi[group[-1]])
                height.append(h)
                first_child.append(group[0])
                n_children.append(len(group))
                internal_below.append(1 + sum(internal_below[c] for c in group))
                nxt.append(node)
            level = nxt
        ints = lambda xs: np.asarray(xs, dtype=np.int64)  # noqa: E731
        heights = ints(height)
        span = np.where(heights > 0, fanout ** np.maximum(heights - 1, 0), 0)
        return cls(n_leaves, fanout, ints(lo), ints(hi), heights, ints(first_child), ints(n_children),
                   ints(internal_below), span.astype(np.int64))

    @property
    def root(self) -> int:
        return int(self.lo.size - 1)

    @property
    def n_internal(self) -> int:
        return int(self.internal_below[self.root])

    def is_leaf(self, node: int) -> bool:
        return bool(self.height[node] == 0)

    def children(self, node: int) -> np.ndarray:
        f = int(self.first_child[node])
        return np.arange(f, f + int(self.n_children[node]), dtype=np.int64)

    def child_index(self, node: int, items: np.ndarray) -> np.ndarray:
        """Index (0..n_children-1) of the child of ``node`` that covers each item (items must lie in node)."""
        return (np.asarray(items, dtype=np.int64) - self.lo[node]) // self.span[node]

    def covering_node(self, cut: tuple[int, ...], items: np.ndarray) -> np.ndarray:
        """For each item, the position in the (sorted by lo) ``cut`` of the node that covers it."""
        cut_lo = self.lo[np.asarray(cut, dtype=np.int64)]
        return np.searchsorted(cut_lo, items, side="right") - 1
