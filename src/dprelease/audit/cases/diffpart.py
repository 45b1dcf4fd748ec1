"""Audit cases of DiffPart (Chen et al., PVLDB 2011) and its baseline Basic (section 4.1).

Pairs: the reproductions of three faults once found in DiffPart (the release order; a leaf threshold just
above a whole number; an empty record), a wide record whose count sits at a non-leaf threshold, a
leaf count at the leaf threshold, and a record that creates a cell D leaves empty (test-and-generate).
Events: the release as stored and written (contents and order), each itemset's presence, count and
thresholds, every pairwise order, the manifest (without clock and seed).
"""

from __future__ import annotations

import math

from ..core import AuditCase, register_cases
from ..files import file_level
from ..events import manifest_events, set_valued_events
from ..search import register_space


def _events(grid: range):
    def events(release) -> list[str]:
        return set_valued_events(release.itemsets, release.counts, grid=grid) + manifest_events(release.manifest)

    return events


def _diffpart_run(universe, epsilon: float, **params):
    from ...setvalued.diffpart import diffpart

    def run(db, noise):
        return diffpart(db, universe, epsilon, noise=noise, **params)

    return run


def _first_threshold(db, universe, epsilon: float, **params) -> float:
    """The public threshold of the first partition operation (from a trace; public inputs only)."""
    from ...privacy import SeededNoise
    from ...setvalued.diffpart import diffpart

    rel = diffpart(db, universe, epsilon, noise=SeededNoise(0), keep_trace=True, **params)
    return float(rel.trace[0].threshold)


def _c1_just_above_two(db, universe, epsilon: float) -> float:
    """The C1 that makes the leaf threshold sqrt(2)*C1/eps the smallest float above 2 (defect 9)."""
    c1 = 2.0 * epsilon / math.sqrt(2.0)
    for _ in range(64):
        t = _first_threshold(db, universe, epsilon, c1=c1)
        if 2.0 < t <= 2.0 + 1e-12:
            return c1
        c1 = math.nextafter(c1, math.inf if t <= 2.0 else -math.inf)
    raise RuntimeError("could not place the leaf threshold just above 2")


@register_cases("diffpart")
@file_level
def _diffpart_cases(epsilon: float) -> list[AuditCase]:
    from ...data.transactions import TransactionDB
    from ...data.universe import Universe
    from ...errors import DPReleaseError
    from ...privacy import SeededNoise

    cases: list[AuditCase] = []
    u4 = Universe.from_range(1, 4)

    # The release-order fault: within one partition operation the real sub-partitions came first and the
    # test-and-generate ones after them, so "{0} listed after {0,1,2,3}" could only happen on D'.
    full = [[0, 1, 2, 3]] * 50
    cases.append(AuditCase(
        "diffpart/release-order", TransactionDB.from_lists(full + [[0]], 4), TransactionDB.from_lists(full, 4),
        epsilon, _diffpart_run(u4, epsilon, fanout=4), _events(range(4)),
        description="release order: universe 1..4, fan-out 4, D = 50 x {1,2,3,4} + {1}, D' = 50 x {1,2,3,4}"))

    # Defect 9: C1 puts the leaf threshold at the smallest float above 2; a generated empty cell must
    # not be released with count 2 when a real cell cannot be.
    u2 = Universe.from_range(0, 1)
    d9 = TransactionDB.from_lists([[1]] * 3, 2)
    c1 = _c1_just_above_two(d9, u2, epsilon)
    cases.append(AuditCase(
        "diffpart/threshold-just-above-2", d9, TransactionDB.from_lists([[1]] * 3 + [[0]], 2), epsilon,
        _diffpart_run(u2, epsilon, c1=c1), _events(range(1, 6)),
        description=f"one comparison rule for real and generated cells: universe 0..1, C1 = {c1!r} (leaf threshold just above 2), "
                    "D = 3 x {1}, D' = D + {0}"))

    # Defect 10: an empty record passed through the API (D' = D + {}). If DiffPart rejects it as invalid
    # input, D' is outside the domain and the pair does not apply.
    d10 = TransactionDB.from_lists([[0, 1]] * 5 + [[2]], 4)
    d10p = TransactionDB.from_lists([[0, 1]] * 5 + [[2], []], 4)
    skip = None
    run10 = _diffpart_run(u4, epsilon, fanout=4)
    try:
        run10(d10p, SeededNoise(1))
    except DPReleaseError as exc:
        skip = f"DiffPart rejects an empty record as invalid input ({type(exc).__name__}: {exc})"
    cases.append(AuditCase(
        "diffpart/empty-record", d10, d10p, epsilon, run10, _events(range(8)), skip=skip,
        description="an empty record is in no cell: universe 1..4, fan-out 4, D = 5 x {1,2} + {3}, D' = D + {} (API)"))

    # A record touching every item, added where the root's sub-partition count sits at its threshold.
    u8 = Universe.from_range(1, 8)
    probe = TransactionDB.from_lists([[0]], 8)
    thr = _first_threshold(probe, u8, epsilon, fanout=4)
    n_wide = max(1, math.floor(thr))
    wide = [list(range(8))] * n_wide + [[0, 1]] * 3 + [[5]] * 2
    cases.append(AuditCase(
        "diffpart/wide-record-at-split-threshold", TransactionDB.from_lists(wide, 8),
        TransactionDB.from_lists(wide + [list(range(8))], 8), epsilon, _diffpart_run(u8, epsilon, fanout=4),
        _events(range(n_wide - 3, n_wide + 5)),
        description=f"universe 1..8, fan-out 4 (two levels); {n_wide} x {{1..8}} + 3 x {{1,2}} + 2 x {{6}}: the "
                    f"full-universe count sits at the root's threshold {thr:.3g}; D' adds one more {{1..8}}"))

    # A leaf count at the leaf threshold.
    leaf_thr = _first_threshold(TransactionDB.from_lists([[0]], 4), u4, epsilon, fanout=4)
    n_leaf = max(1, math.floor(leaf_thr))
    base = [[0, 1]] * n_leaf + [[2]] * 3
    cases.append(AuditCase(
        "diffpart/leaf-count-at-threshold", TransactionDB.from_lists(base, 4),
        TransactionDB.from_lists(base + [[0, 1]], 4), epsilon, _diffpart_run(u4, epsilon, fanout=4),
        _events(range(max(0, n_leaf - 3), n_leaf + 5)),
        description=f"universe 1..4, fan-out 4; {n_leaf} x {{1,2}} + 3 x {{3}} (leaf threshold {leaf_thr:.3g}); "
                    "D' adds {1,2}"))

    # A record that creates a leaf cell D leaves empty, two levels down (fan-out 2): the partition
    # {3,4} passes the root's threshold on both, and {4} is a real cell on D' only (test-and-generate on D).
    deep = [[0]] * 30 + [[2]] * 30
    cases.append(AuditCase(
        "diffpart/new-cell-two-levels", TransactionDB.from_lists(deep, 4), TransactionDB.from_lists(deep + [[3]], 4),
        epsilon, _diffpart_run(u4, epsilon, fanout=2), _events(range(4)),
        description="universe 1..4, fan-out 2; D = 30 x {1} + 30 x {3}; D' adds {4}, a cell D leaves empty"))
    return cases


@register_cases("basic")
@file_level
def _basic_cases(epsilon: float) -> list[AuditCase]:
    from ...data.transactions import TransactionDB
    from ...data.universe import Universe
    from ...setvalued.basic import basic

    u5 = Universe.from_range(1, 5)

    def run(db, noise):
        return basic(db, u5, epsilon, noise=noise)

    base = [[0]] * 2 + [[0, 1]] * 3 + [[2, 3, 4]]
    return [
        AuditCase("basic/wide-record", TransactionDB.from_lists(base, 5),
                  TransactionDB.from_lists(base + [[0, 1, 2, 3, 4]], 5), epsilon, run, _events(range(5)),
                  description="universe 1..5; D = 2 x {1} + 3 x {1,2} + {3,4,5}; D' adds {1,2,3,4,5}"),
        AuditCase("basic/existing-cell", TransactionDB.from_lists(base, 5),
                  TransactionDB.from_lists(base + [[0, 1]], 5), epsilon, run, _events(range(6)),
                  description="universe 1..5; the same D; D' adds {1,2} (its count 3 -> 4)"),
    ]


# --- search spaces (dprelease audit diffpart|basic --search): FIMI files, one line ---------------------------------


def set_valued_search_events(records_d, records_dp, cfg):
    """Events of a set-valued release for a searched pair: the grid of count thresholds runs from 0 to a few
    above the largest true cell count, so a count at a threshold is seen wherever the search puts it."""
    from ..spaces import supports

    top = max(supports(records_dp).values(), default=0)
    return _events(range(0, min(top, 80) + 6))


@register_space("diffpart")
def _diffpart_space(epsilon: float):
    from ...setvalued.diffpart import diffpart
    from ..spaces import transaction_space

    configs = [{"n_items": n, "fanout": f, "c1": c, "c2": c} for n, f in ((4, 4), (4, 2), (8, 4), (8, 2))
               for c in (1.5, 0.5)]

    def release(db, universe, noise, cfg):
        return diffpart(db, universe, epsilon, noise=noise, fanout=cfg["fanout"], c1=cfg["c1"], c2=cfg["c2"])

    return [transaction_space("diffpart", configs, release, set_valued_search_events, claim=epsilon)]


@register_space("basic")
def _basic_space(epsilon: float):
    from ...setvalued.basic import basic
    from ..spaces import transaction_space

    def release(db, universe, noise, cfg):
        return basic(db, universe, epsilon, noise=noise)

    return [transaction_space("basic", [{"n_items": 3}, {"n_items": 5}], release, set_valued_search_events,
                              claim=epsilon)]
