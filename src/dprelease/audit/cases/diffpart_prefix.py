"""Audit cases of DiffPart-Prefix (``dprelease diffpart``'s default method; setvalued/prefixpart.py).

Pairs stress each of its three mechanisms and the post-processing: a record touching every item
(all weighted supports and one path through the trie), a cell whose count sits exactly at the
PrivTree split threshold of depth 1, a record at the selection cutoff of a universe larger than
``max_items`` (it decides whether the item is in F, and where outside records go), two items whose
order a single record flips, and an empty record passed through the API (it belongs to no class, as
in DiffPart). Two pairs stress the statistics the fill draws on: a length bin at its keep threshold
(the record length histogram) and a wide record whose class drops eight frequent items (the hidden
frequent-item supports, sensitivity record_bound); their events add the released length histogram and
each item's released support. Events: the release as written (contents and order), presence and counts
of every itemset, the manifest (number of selected items, PrivTree scale) without clock and seed.
"""

from __future__ import annotations

from ..core import AuditCase, register_cases
from ..files import file_level
from ..events import manifest_events, set_valued_events
from ..search import register_space


def _events(grid: range):
    def events(release) -> list[str]:
        return set_valued_events(release.itemsets, release.counts, grid=grid) + manifest_events(release.manifest)

    return events


def _deepest_events(grid: range):
    """The set-valued events plus the deepest kept cell of a one-path release: the longest released pattern."""
    base = _events(grid)

    def events(release) -> list[str]:
        deepest = max((len(s) for s in release.itemsets), default=0)
        return base(release) + [f"deepest pattern {deepest}"] + [f"deepest pattern >= {g}" for g in range(1, deepest + 1)]

    return events


def _shape_events(grid: range):
    """The set-valued events plus the released records per length and each item's released support."""
    base = _events(grid)

    def events(release) -> list[str]:
        out = base(release)
        per_length: dict[int, int] = {}
        support: dict[int, int] = {}
        for s, c in zip(release.itemsets, release.counts.tolist()):
            per_length[len(s)] = per_length.get(len(s), 0) + int(c)
            for i in s.tolist():
                support[int(i)] = support.get(int(i), 0) + int(c)
        for key, table in (("length", per_length), ("support", support)):
            for k, c in sorted(table.items()):
                out += [f"{key} {k}={c}"] + [f"{key} {k}>={g}" for g in grid if c >= g]
        return out

    return events


def _run(universe, epsilon: float, **params):
    from ...setvalued.prefixpart import prefix_diffpart

    def run(db, noise):
        return prefix_diffpart(db, universe, epsilon, noise=noise, **params)

    return run


@register_cases("diffpart-prefix")
@file_level
def _prefix_cases(epsilon: float) -> list[AuditCase]:
    import math

    from ...data.transactions import TransactionDB
    from ...data.universe import Universe
    from ...privacy.privtree import privtree_scale
    from ...setvalued.prefixpart import DEFAULT_BETA, DEFAULT_RECORD_BOUND, DEFAULT_SELECTION_SHARE, \
        FILL_PAIR_SHARE, auto_bare_structure_share
    from ...setvalued.shape import length_edges

    cases: list[AuditCase] = []

    u6 = Universe.from_range(1, 6)
    base = [[0, 1]] * 12 + [[2]] * 8 + [[3, 4]] * 5
    cases.append(AuditCase(
        "diffpart-prefix/wide-record", TransactionDB.from_lists(base, 6),
        TransactionDB.from_lists(base + [list(range(6))], 6), epsilon, _run(u6, epsilon), _events(range(0, 14)),
        description="universe 1..6; D = 12 x {1,2} + 8 x {3} + 5 x {4,5}; D' adds {1,...,6} (every support, "
                    "one path through all levels)"))

    # depth-1 cell "with the first item" at the split threshold: count - delta = theta = 0 (two items: the
    # default does not fill, so the structure has the bare split of what the length histogram leaves)
    _, delta = privtree_scale(auto_bare_structure_share(DEFAULT_SELECTION_SHARE) * epsilon, DEFAULT_BETA)
    u2 = Universe.from_range(1, 2)
    at = [[0]] * delta
    cases.append(AuditCase(
        "diffpart-prefix/count-at-split-threshold", TransactionDB.from_lists(at, 2),
        TransactionDB.from_lists(at + [[0]], 2), epsilon, _run(u2, epsilon), _events(range(max(0, delta - 4),
                                                                                             delta + 6)),
        description=f"universe 1..2; D = {delta} x {{1}}: the depth-1 cell sits at its PrivTree threshold "
                    f"(delta = {delta} at eps = {epsilon:g}); D' adds {{1}}"))

    # a universe larger than max_items: item 8's weighted support at the selection cutoff
    n_items, max_items = 40, 3
    cutoff = DEFAULT_RECORD_BOUND / (DEFAULT_SELECTION_SHARE * epsilon) * math.log(n_items / 2.0)
    n_cut = max(1, int(round(cutoff)))
    u40 = Universe.from_range(1, n_items)
    sel = [[7]] * n_cut + [[0, 1]] * 3
    cases.append(AuditCase(
        "diffpart-prefix/item-at-selection-cutoff", TransactionDB.from_lists(sel, n_items),
        TransactionDB.from_lists(sel + [[7]], n_items), epsilon, _run(u40, epsilon, max_items=max_items),
        _events(range(max(0, n_cut - 4), n_cut + 6)),
        description=f"universe 1..{n_items}, max_items {max_items}; D = {n_cut} x {{8}} + 3 x {{1,2}} (item 8's "
                    f"support at the selection cutoff {cutoff:.3g}); D' adds {{8}}"))

    u3 = Universe.from_range(1, 3)
    tie = [[0]] * 6 + [[1]] * 6 + [[0, 1]] * 2
    cases.append(AuditCase(
        "diffpart-prefix/order-flip", TransactionDB.from_lists(tie, 3), TransactionDB.from_lists(tie + [[1, 2]], 3),
        epsilon, _run(u3, epsilon), _events(range(0, 10)),
        description="universe 1..3; items 1 and 2 tie (8 records each); D' adds {2,3}, which breaks the tie"))

    # A tight PrivTree path: most of eps on the structure (0.8; selection 0.05, counts 0.15), every record the
    # same L-item record, so each cell on its path holds the same count c. With c = (L - 1) delta the cell at
    # depth d has biased count c - d delta = theta + (L - 1 - d) delta: the cell at depth L - 1 sits at the
    # threshold and each one above it exactly delta higher (the worst case of PrivTree's geometric series).
    # Depth L - 1 is the deepest decision a reader sees: if that cell is not kept, the released pattern drops
    # item L (a record is cut after the level where its path failed). Event: the deepest kept cell (the
    # pattern's length); the fill is off (shape share 0), since it would give the dropped item back.
    s_struct, s_sel = 0.8, 0.05
    _, d_tight = privtree_scale(s_struct * epsilon, DEFAULT_BETA)
    # n_path = 6, and 66: past rank 62, where records and patterns take a second 62-bit word (engine/bitmasks.py)
    for n_path, name in ((6, "privtree-tight-path"), (66, "privtree-tight-path-past-62-items")):
        c_path = (n_path - 1) * d_tight
        path = [list(range(n_path))] * c_path
        cases.append(AuditCase(
            f"diffpart-prefix/{name}", TransactionDB.from_lists(path, n_path),
            TransactionDB.from_lists(path + [list(range(n_path))], n_path), epsilon,
            _run(Universe.from_range(1, n_path), epsilon, structure_share=s_struct, selection_share=s_sel,
                 shape_share=0.0, max_items=n_path),
            _deepest_events(range(max(0, c_path - 12), c_path + 14, 2)),
            description=f"universe 1..{n_path}, structure share {s_struct}, selection {s_sel}: D = {c_path} x "
                        f"{{1..{n_path}}} (delta = {d_tight}: the cell at depth d has biased count theta + "
                        f"({n_path - 1} - d) delta, depth {n_path - 1} at the threshold); D' adds {{1..{n_path}}}; "
                        "event: the deepest kept cell"))

    # Contribution bounding at the selection cutoff: a 60-item record holding the cutoff item adds only
    # record_bound/60 to its weighted support (record_bound in all), however many items it has.
    n_big = 80
    cut_big = DEFAULT_RECORD_BOUND / (DEFAULT_SELECTION_SHARE * epsilon) * math.log(n_big / 2.0)
    n_cut_big = max(1, int(round(cut_big)))
    sel_big = [[7]] * n_cut_big + [[0, 1]] * 3
    wide60 = [7] + [i for i in range(n_big) if i != 7][:59]
    cases.append(AuditCase(
        "diffpart-prefix/wide-record-at-selection-cutoff", TransactionDB.from_lists(sel_big, n_big),
        TransactionDB.from_lists(sel_big + [wide60], n_big), epsilon,
        _run(Universe.from_range(1, n_big), epsilon, max_items=max_items),
        _events(range(max(0, n_cut_big - 4), n_cut_big + 6)),
        description=f"universe 1..{n_big}, max_items {max_items}; D = {n_cut_big} x {{8}} + 3 x {{1,2}} (item 8 at "
                    f"the selection cutoff {cut_big:.3g}); D' adds a 60-item record holding item 8 (weight "
                    f"{DEFAULT_RECORD_BOUND}/60 per item)"))

    # The fill's statistics, with most of eps on them (shape share 0.6: 0.3 eps each; selection 0.1, structure
    # 0.2, counts 0.1). Length histogram: the length-5 bin holds just under its keep threshold ln(#bins)/eps_l
    # on D, one more record on D'.
    shares = {"shape_share": 0.6, "selection_share": 0.1, "structure_share": 0.2}
    eps_l = 0.3 * epsilon
    n6 = 6
    tau = math.log(length_edges(n6).size - 1) / eps_l
    c5 = max(1, math.ceil(tau) - 1)
    lb = [[0, 1]] * 12 + [[2]] * 6 + [[0, 1, 2, 3, 4]] * c5
    cases.append(AuditCase(
        "diffpart-prefix/length-bin-at-threshold", TransactionDB.from_lists(lb, n6),
        TransactionDB.from_lists(lb + [[0, 1, 2, 3, 4]], n6), epsilon,
        _run(Universe.from_range(1, n6), epsilon, **shares), _shape_events(range(0, 24, 2)),
        description=f"universe 1..{n6}, shape share 0.6: D = 12 x {{1,2}} + 6 x {{3}} + {c5} x {{1..5}} (the "
                    f"length-5 bin just under its keep threshold {tau:.3g}); D' adds {{1..5}}; events: released "
                    "records per length and item supports"))

    # Hidden frequent-item supports: D' adds a 10-item record whose class stops at level 2 (no other record
    # holds items 1 and 2 together), so its 8 items of rank >= 2 are hidden: min(1, 5/8) each, 5 in all.
    n10 = 10
    hid = [[0]] * 30 + [[1]] * 24 + [[i] for i in range(2, n10) for _ in range(12)]
    cases.append(AuditCase(
        "diffpart-prefix/hidden-wide-record", TransactionDB.from_lists(hid, n10),
        TransactionDB.from_lists(hid + [list(range(n10))], n10), epsilon,
        _run(Universe.from_range(1, n10), epsilon, **shares), _shape_events(range(0, 40, 3)),
        description=f"universe 1..{n10}, shape share 0.6: D = 30 x {{1}} + 24 x {{2}} + 12 x each of {{3}}..{{10}}; "
                    "D' adds {1..10}, whose class drops 8 frequent items (hidden supports, sensitivity 5); "
                    "events: released records per length and item supports"))

    # The default's fill decision: (noisy mean length / |I|)^2 <= FILL_PAIR_SHARE. Universe 1..64, records of
    # mean length 2, just under the threshold sqrt(FILL_PAIR_SHARE) * 64 = 2.02; D' adds a 4-item record, which
    # moves the mean past it. Events: the decision, and the release with each length and item support.
    n64 = 64
    dec = [[0, 1]] * 30 + [[2, 3]] * 10
    assert 2.0 < math.sqrt(FILL_PAIR_SHARE) * n64 < (2 * len(dec) + 4) / (len(dec) + 1)
    shape_events = _shape_events(range(0, 40, 4))

    def decision_events(release) -> list[str]:
        return shape_events(release) + [f"filled {release.manifest['release']['shape']['filled']}"]

    cases.append(AuditCase(
        "diffpart-prefix/fill-decision", TransactionDB.from_lists(dec, n64),
        TransactionDB.from_lists(dec + [[4, 5, 6, 7]], n64), epsilon, _run(Universe.from_range(1, n64), epsilon),
        decision_events,
        description=f"universe 1..{n64}, the default shape (auto): D = 30 x {{1,2}} + 10 x {{3,4}} (noisy mean "
                    f"length near the fill threshold {math.sqrt(FILL_PAIR_SHARE) * n64:.3g}); D' adds {{5..8}}; "
                    "events: the fill decision, released records per length and item supports"))

    u4 = Universe.from_range(1, 4)
    emp = [[0, 1]] * 5 + [[2]]
    cases.append(AuditCase(
        "diffpart-prefix/empty-record", TransactionDB.from_lists(emp, 4), TransactionDB.from_lists(emp + [[]], 4),
        epsilon, _run(u4, epsilon), _events(range(0, 8)),
        description="universe 1..4; D = 5 x {1,2} + {3}; D' adds an empty record (API): it belongs to no "
                    "class"))
    return cases


# --- search space (dprelease audit diffpart-prefix --search): FIMI files, one line ---------------------------------


@register_space("diffpart-prefix")
def _prefix_space(epsilon: float):
    from ...setvalued.prefixpart import prefix_diffpart
    from ..spaces import transaction_space
    from .diffpart import set_valued_search_events

    configs = [{"n_items": 4, "max_items": 62}, {"n_items": 8, "max_items": 62}, {"n_items": 12, "max_items": 3},
               {"n_items": 8, "max_items": 62, "structure_share": 0.8, "selection_share": 0.1,
                "shape_share": 0.05}]

    def release(db, universe, noise, cfg):
        kw = {k: v for k, v in cfg.items() if k != "n_items"}
        return prefix_diffpart(db, universe, epsilon, noise=noise, **kw)

    return [transaction_space("diffpart-prefix", configs, release, set_valued_search_events, claim=epsilon)]
