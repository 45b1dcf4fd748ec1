"""DiffPart Appendix C, Example C.1: the budgets of every partition operation on Table 1 with fan-out 2."""

from __future__ import annotations


import pytest

from dprelease.data import TransactionDB, Universe
from dprelease.setvalued.diffpart import diffpart, sub_cuts
from dprelease.data.taxonomy import ContextFreeTaxonomy

# Table 1 (items I1..I4 are ids 0..3)
TABLE1 = [[0, 1, 2, 3], [1, 3], [1], [0, 1], [1], [0], [0, 1, 2, 3], [1, 2, 3]]


def test_example_c1_budgets(zero_noise):
    B = 6.0  # with no noise, B = 6 and C1 = C2 = 1 make exactly the example's partitions "non-empty"
    db = TransactionDB.from_lists(TABLE1, 4)
    release = diffpart(db, Universe.from_range(1, 4), B, noise=zero_noise, fanout=2, c1=1.0, c2=1.0, keep_trace=True)
    tax = ContextFreeTaxonomy.build(4, 2)
    I12, I34, root = 4, 5, 6
    assert tax.root == root and list(tax.children(root)) == [I12, I34]

    ops = {(ev.kind, ev.cut): ev for ev in release.trace}
    # the root's partitioning uses B/6 (3 internal nodes, B/2 for partitioning)
    assert ops[("partition", (root,))].epsilon == pytest.approx(B / 6)
    # {I12, I34} and {I12, I3, I4} partition with B/6 each
    assert ops[("partition", (I12, I34))].epsilon == pytest.approx(B / 6)
    assert ops[("partition", (I12, I34))].node == I34  # the example expands I{3,4}
    # leaf counts: 5B/6 for {I1},{I2},{I1,I2}; 2B/3 for {I1,I3,I4},{I2,I3,I4},{I1,I2,I3,I4}
    leaf_12 = ops[("leaf_counts", (I12,))]
    leaf_1234 = ops[("leaf_counts", (I12, 2, 3))]
    assert leaf_12.epsilon == pytest.approx(5 * B / 6)
    assert leaf_1234.epsilon == pytest.approx(2 * B / 3)
    assert set(sub_cuts(tax, leaf_12.cut, leaf_12.node)) == {(0,), (1,), (0, 1)}
    assert set(sub_cuts(tax, leaf_1234.cut, leaf_1234.node)) == {(0, 2, 3), (1, 2, 3), (0, 1, 2, 3)}
    # {I34}, {I12, I3}, {I12, I4} are "empty" (Example 4.1): no operation on them
    assert {cut for _, cut in ops} == {(root,), (I12,), (I12, I34), (I12, 2, 3)}
    assert len(release.trace) == 4
    # every chain spends exactly B
    assert release.accountant.spent == pytest.approx(B)
    # with no noise the release is the exact data of those partitions
    released = {tuple(s.tolist()): int(c) for s, c in zip(release.itemsets, release.counts)}
    assert released == {(0,): 1, (1,): 2, (0, 1): 1, (1, 2, 3): 1, (0, 1, 2, 3): 2}
