"""DiffP-C4.5 (Friedman and Schuster, "Data mining with differential privacy", KDD 2010): DiffGen's DP baseline.

An *interactive* eps-DP decision tree: the output is a classifier, not a table (DiffGen section 5,
Figure 4 compares against it). Our reading of the algorithm (the paper is not in ../shared/papers;
the choices below are recorded in docs/diffgen.md):

    eps_l = B / (2 (d + 1))                                   budget per level
    Build(T, A, d):
        N_T = NoisyCount_{eps_l}(T)
        t   = max over A of the number of children (a categorical attribute: its taxonomy leaves;
              a numeric one: 2)
        if A is empty or d = 0 or N_T / (t |C|) < sqrt(2) / eps_l:
            leaf: N_c = NoisyCount_{eps_l}(T_c) for every class c; label argmax_c N_c
        else:
            numeric split points: eqs. 6-7 of DiffGen (the exponential mechanism over equal-score
              intervals weighted by their measure, a uniform point inside), eps_l / (2 |A_n|) each
            attribute: exponential mechanism with the Max score (sensitivity 1), eps_l / 2
              (all of eps_l when no numeric attribute is left)
            one subtree per child, on A minus the attribute if categorical (numeric attributes stay,
              with the narrowed interval), d - 1

Privacy: the nodes of one level hold disjoint records (parallel composition: each child gets its own
budget scope branch); along any root-to-leaf path each node spends 2 eps_l (count + selection, or
count + leaf class counts), so the path total is at most 2 eps_l (d + 1) = B. The tree's shape,
including the children of empty nodes, never depends on the data except through mechanism outputs:
every child of a categorical split gets a subtree, empty or not.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..data.table import EncodedTable, TableSchema
from ..errors import ParameterError
from ..privacy import BudgetAccountant, NoiseSource, check_epsilon, exponential_mechanism, noisy_counts
from ..privacy.accountant import BudgetScope
from .diffgen import draw_split_point, split_candidates

__all__ = ["DiffPTree", "diffp_c45", "DEFAULT_DEPTH"]

#: Friedman and Schuster's Adult experiments use depth 5
DEFAULT_DEPTH = 5


@dataclass(eq=False)
class _Node:
    attr: int = -1  # -1: leaf
    split: float | None = None  # numeric split point (x < split goes to child 0)
    children: list["_Node"] = field(default_factory=list)
    label: int = 0
    counts: np.ndarray | None = None  # noisy class counts of a leaf


@dataclass(eq=False)
class DiffPTree:
    """The eps-DP classifier: a tree whose leaves carry noisy class counts."""

    schema: TableSchema
    root: _Node
    manifest: dict[str, object]
    accountant: BudgetAccountant

    def predict(self, table: EncodedTable) -> np.ndarray:
        out = np.zeros(table.n_records, dtype=np.int64)
        stack = [(self.root, np.arange(table.n_records, dtype=np.int64))]
        while stack:
            node, rows = stack.pop()
            if node.attr < 0:
                out[rows] = node.label
                continue
            a = self.schema.attributes[node.attr]
            col = table.columns[node.attr][rows]
            if a.kind == "categorical":
                k = col  # children indexed by taxonomy leaf code
            else:
                k = (col >= node.split).astype(np.int64)
            for i, child in enumerate(node.children):
                sel = rows[k == i]
                if sel.size:
                    stack.append((child, sel))
        return out

    def n_leaves(self) -> int:
        n, stack = 0, [self.root]
        while stack:
            node = stack.pop()
            if node.attr < 0:
                n += 1
            stack.extend(node.children)
        return n


def _max_score(child: np.ndarray, y: np.ndarray, m: int, n_cls: int) -> float:
    """Max (DiffGen eq. 4, Friedman and Schuster's "max" quality): sum over children of the top class count."""
    if child.size == 0:
        return 0.0
    cells = np.bincount(child * n_cls + y, minlength=m * n_cls).reshape(m, n_cls)
    return float(cells.max(axis=1).sum())


def diffp_c45(table: EncodedTable, epsilon: float, *, noise: NoiseSource, depth: int = DEFAULT_DEPTH) -> DiffPTree:
    """Build the DiffP-C4.5 tree with total budget ``epsilon`` (module docstring)."""
    budget = check_epsilon(epsilon)
    d = int(depth)
    if d < 0:
        raise ParameterError(f"depth must be at least 0, got {depth}")
    schema = table.schema
    n_cls = schema.n_classes
    eps_l = budget / (2.0 * (d + 1))
    accountant = BudgetAccountant(budget)
    x = table.columns
    y_all = table.y
    threshold = math.sqrt(2.0) / eps_l

    def build(rows: np.ndarray, attrs: tuple[int, ...], bounds: dict[int, tuple[float, float]], level: int,
              scope: BudgetScope) -> _Node:
        n_t = int(noisy_counts(np.asarray([rows.size]), eps_l, scope=scope, noise=noise,
                               label=f"depth {d - level}: noisy node size")[0])
        widths = [schema.attributes[j].taxonomy.n_leaves if schema.attributes[j].kind == "categorical" else 2
                  for j in attrs]
        t = max(widths) if widths else 1
        if not attrs or level == 0 or n_t / (t * n_cls) < threshold:
            counts = noisy_counts(np.bincount(y_all[rows], minlength=n_cls), eps_l, scope=scope, noise=noise,
                                  label=f"depth {d - level}: leaf class counts")
            return _Node(label=int(np.argmax(counts)), counts=counts)
        y = y_all[rows]
        numeric = [j for j in attrs if schema.attributes[j].kind == "numeric"]
        eps_sel = eps_l / 2.0 if numeric else eps_l
        splits: dict[int, float] = {}
        for j in numeric:  # split point of every numeric attribute (eqs. 6-7), sequential on T
            a = schema.attributes[j]
            lo, hi = bounds[j]
            iv, sc, base = split_candidates(x[j][rows], y, n_cls, lo, hi, a.integer, "max")
            g = exponential_mechanism(sc, eps_l / (2.0 * len(numeric)), sensitivity=1.0, scope=scope, noise=noise,
                                      label=f"depth {d - level}: split point of {a.name}", log_base_measure=base)
            splits[j] = draw_split_point(iv, g, noise)
        scores = []
        for j in attrs:
            a = schema.attributes[j]
            if a.kind == "categorical":
                scores.append(_max_score(x[j][rows], y, a.taxonomy.n_leaves, n_cls))
            else:
                scores.append(_max_score((x[j][rows] >= splits[j]).astype(np.int64), y, 2, n_cls))
        pick = exponential_mechanism(np.asarray(scores), eps_sel, sensitivity=1.0, scope=scope, noise=noise,
                                     label=f"depth {d - level}: attribute (Max)")
        j = attrs[pick]
        a = schema.attributes[j]
        node = _Node(attr=j)
        if a.kind == "categorical":
            rest = tuple(k for k in attrs if k != j)
            codes = x[j][rows]
            order = np.argsort(codes, kind="stable")
            edges = np.searchsorted(codes[order], np.arange(a.taxonomy.n_leaves + 1))
            for c in range(a.taxonomy.n_leaves):
                node.children.append(build(rows[order[edges[c]:edges[c + 1]]], rest, bounds, level - 1,
                                           scope.branch()))
        else:
            s = splits[j]
            node.split = s
            lo, hi = bounds[j]
            right = x[j][rows] >= s
            for sub, b in ((rows[~right], (lo, s)), (rows[right], (s, hi))):
                nb = dict(bounds)
                nb[j] = b
                a_left = tuple(k for k in attrs if k != j or _splittable_interval(a, b))
                node.children.append(build(sub, a_left, nb, level - 1, scope.branch()))
        return node

    bounds = {j: (a.lo, a.hi) for j, a in enumerate(schema.attributes) if a.kind == "numeric"}
    attrs = tuple(j for j, a in enumerate(schema.attributes)
                  if (a.kind == "categorical" and not a.taxonomy.is_leaf(0))
                  or (a.kind == "numeric" and _splittable_interval(a, (a.lo, a.hi))))  # public: the schema only
    root = build(np.arange(table.n_records, dtype=np.int64), attrs, bounds, d, accountant.root())
    manifest = {
        "parameters": {"method": "diffp-c45", "depth": d, "score": "max", "score_sensitivity": 1.0},
        "budget_split": {"per_level": eps_l, "formula": "eps_l = B / (2 (d + 1)); per node: eps_l noisy size, "
                         "then eps_l leaf class counts or eps_l/2 numeric split points + eps_l/2 attribute"},
    }
    return DiffPTree(schema, root, manifest, accountant)


def _splittable_interval(a, bounds: tuple[float, float]) -> bool:
    lo, hi = bounds
    return (hi - lo >= 2) if a.integer else (hi > lo)
