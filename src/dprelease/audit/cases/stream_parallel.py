"""Audit cases of streams under parallel accounting (``stream init --accounting parallel``) and free routing.

Under parallel accounting every append is charged the stream's full epsilon against its own batch:
a record sits in one batch, so it enters one append's mechanisms, and every later decision is
post-processing of stored noisy counts (docs/privacy.md section 4, "Parallel stream accounting"). For the
record-level privacy unit the claim audited is therefore ``epsilon`` itself (not epsilon/(U+1)), with
releases after every append as output.

Pairs (record-level, claim epsilon): one extra record in a later batch, through the SQLite state
(init_state/append_batch), where the record creates a cell D' leaves empty (new cells tested at every visit);
in memory, a wide record in batch 1 of a two-level tree routed with ``routing="free"`` (split nodes route
without a count; the semi-non-empty children and the leaves are counted); a record in batch 0 that changes
the tree later batches are routed down (tdpart and prefix partitionings), with events that show where every
later batch was counted.

Person-level (claim 2 * epsilon): one person with a record in batch 0 and one in batch 1, declared as
``privacy_unit="person"``, ``max_batches_per_person=2``. Each append is epsilon-DP in its batch and the person
is in two, so the bound is 2 * epsilon, and no better: the events "the person's cell counted high in both
appends" measure a loss above epsilon (tests/audit/test_stream_audit.py checks it), which is why a record-level
declaration does not protect a person with records in several batches.
Events as in :mod:`.stream`: every release file, manifest, node and count table after every append.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from ..core import AuditCase, register_cases
from ..events import manifest_events, set_valued_events, written_release_events
from .stream import _state_events, _state_rows, _tmpdir, _write_batches


def _run_stream(paths: list[str], noise, *, epsilon: float, updates: int | None, prefix_tables: bool,
                **params) -> list[tuple]:
    """One audit run through the stream commands' SQLite state: init, then one append per batch; after every append
    the release body, its manifest and the stored tree (prefix tables for ``--partitioning prefix``)."""
    from ...setvalued.stream_state import append_batch, init_state

    seed = int(noise.integers(2**62, 1)[0])
    with tempfile.TemporaryDirectory(prefix="run-", dir=_tmpdir()) as tmp:
        state = Path(tmp) / "state.db"
        init_state(state, epsilon=epsilon, updates=updates, universe_spec="1..4", seed=seed, **params)
        out = []
        for j, batch in enumerate(paths):
            rel = Path(tmp) / f"release{j}.dat"
            append_batch(state, batch, rel)
            nodes, counts = _prefix_rows(state) if prefix_tables else _state_rows(state)
            out.append((rel.read_text(), Path(str(rel) + ".manifest.json").read_text(), nodes, counts))
        return out


def _stream_events(out) -> list[str]:
    """Events of every append: the written release, its manifest and the stored state."""
    import json

    evs: list[str] = []
    for j, (body, manifest, nodes, counts) in enumerate(out):
        p = f"a{j}: "
        evs += written_release_events(body, grid=range(0, 4), prefix=p)
        evs += manifest_events(json.loads(manifest), prefix=p)
        evs += _state_events(nodes, counts, p)
    return evs


def _routing_events(out) -> list[str]:
    """Where every append's batch was counted (the nodes of the counts table per append, by their cut or
    pattern): the routing of later batches down the tree that earlier appends built."""
    evs: list[str] = []
    for j, (_body, _manifest, nodes, counts) in enumerate(out):
        label = {int(r[0]): str(r[3]) for r in nodes}
        by_append: dict[int, list[str]] = {}
        for node, append_no, _nc in counts:
            by_append.setdefault(int(append_no), []).append(label.get(int(node), f"#{node}"))
        for k, cells in sorted(by_append.items()):
            evs.append(f"a{j}: counted in a{k}: " + ";".join(sorted(cells)))
            evs += [f"a{j}: counted [{c}] in a{k}" for c in cells]
    return evs


def _joint_count_events(out, cells: dict[str, tuple[range, range]]) -> list[str]:
    """Threshold events on one cell's noisy counts in appends 0 and 1 together ("counted at least x in a0 and
    at least y in a1"), for the cells named (by cut) with their public grids: where a person with a record in
    both batches shows."""
    _body, _manifest, nodes, counts = out[-1]
    label = {int(r[0]): str(r[3]) for r in nodes}
    nc = {(label.get(int(node)), int(a)): int(c) for node, a, c in counts}
    evs: list[str] = []
    for cut, (xs, ys) in cells.items():
        c0, c1 = nc.get((cut, 0)), nc.get((cut, 1))
        if c0 is None or c1 is None:
            continue
        evs += [f"[{cut}] a0>={x} and a1>={y}" for x in xs for y in ys if c0 >= x and c1 >= y]
        evs += [f"[{cut}] a0+a1>={t}" for t in range(xs.start + ys.start, xs.stop + ys.stop) if c0 + c1 >= t]
    return evs


@register_cases("stream-parallel")
def _parallel_cases(epsilon: float) -> list[AuditCase]:
    from ...data.transactions import TransactionDB
    from ...data.universe import Universe
    from ...setvalued.inctdpart import TBPTree

    cases: list[AuditCase] = []
    b0 = [[0, 1, 2, 3]] * 20 + [[1, 2]] * 5
    b1 = [[0, 1, 2, 3]] * 10
    b2 = [[2]] * 5 + [[0, 1]]
    d_batches, dp_batches = [b0, b1 + [[0]], b2], [b0, b1, b2]
    params = dict(fanout=4, c1=0.5, c2=0.5, new_cells="every-visit", accounting="parallel", privacy_unit="record")
    name = "stream-parallel/tdpart-sqlite-record-in-batch-1"
    d_paths = _write_batches(name + "-D", d_batches)
    dp_paths = _write_batches(name + "-Dprime", dp_batches)

    def run_sqlite(paths: list[str], noise, params=params, prefix_tables: bool = False):
        return _run_stream(paths, noise, epsilon=epsilon, updates=None, prefix_tables=prefix_tables, **params)

    sqlite_events = _stream_events

    cases.append(AuditCase(
        name, d_paths, dp_paths, epsilon, run_sqlite, sqlite_events,
        description=f"parallel accounting, SQLite state; universe 1..4, fan-out 4, C1 = C2 = 0.5, new cells at every "
                    f"visit, epsilon {epsilon:g} per append; batches 20 x {{1,2,3,4}} + 5 x {{2,3}} | 10 x {{1,2,3,4}} "
                    "| 5 x {3} + {1,2}; D has {1} in batch 1; events after every append"))

    u4 = Universe.from_range(1, 4)
    m0 = [[0, 1]] * 30 + [[0]] * 20 + [[2, 3]] * 25 + [[2]] * 3
    m1 = [[0, 1]] * 6 + [[3]] * 4 + [[2]] * 3
    m2 = [[2, 3]] * 5 + [[1]] * 2

    def run_free(batches, noise):
        tree = TBPTree(4, epsilon, None, fanout=2, c1=1.0, c2=1.0, accounting="parallel", routing="free",
                       privacy_unit="record")
        out = []
        for db in batches:
            tree.append(db, noise)
            rel = tree.release(u4, {"mode": noise.mode})
            nodes = [(nd.id, nd.parent, nd.mask, " ".join(map(str, nd.cut)), int(nd.leaf), nd.created,
                      tree.node_class(nd), nd.psum, nd.n) for nd in tree.nodes]
            out.append((rel, nodes))
        return out

    def free_events(out) -> list[str]:
        evs: list[str] = []
        for j, (rel, nodes) in enumerate(out):
            p = f"a{j}: "
            evs += set_valued_events(rel.itemsets, rel.counts, grid=range(0, 12), prefix=p)
            evs += _state_events(nodes, [], p)
        return evs

    cases.append(AuditCase(
        "stream-parallel/free-routing-wide-record-in-batch-1",
        [TransactionDB.from_lists(b, 4) for b in (m0, m1 + [[0, 1, 2, 3]], m2)],
        [TransactionDB.from_lists(b, 4) for b in (m0, m1, m2)], epsilon, run_free, free_events,
        description=f"parallel accounting, free routing, in memory; universe 1..4, fan-out 2, C1 = C2 = 1, epsilon "
                    f"{epsilon:g} per append; D has {{1,2,3,4}} in batch 1; events: release and node list after "
                    "every append"))

    # --partitioning prefix through the SQLite state: DiffPart-Prefix's trie on batch 0, later batches routed
    # and counted, classes refined by post-processing; a wide record in batch 1
    p0 = [[0, 1]] * 40 + [[0]] * 30 + [[2, 3]] * 35 + [[1, 2]] * 8
    p1 = [[0, 1]] * 12 + [[3]] * 6 + [[2]] * 5
    p2 = [[2, 3]] * 9 + [[1]] * 4
    pname = "stream-parallel/prefix-sqlite-wide-record-in-batch-1"
    pd_paths = _write_batches(pname + "-D", [p0, p1 + [[0, 1, 2, 3]], p2])
    pdp_paths = _write_batches(pname + "-Dprime", [p0, p1, p2])
    pparams = dict(fanout=4, c1=5.0, c2=3.0, accounting="parallel", partitioning="prefix", refine=True,
                   privacy_unit="record")
    cases.append(AuditCase(
        pname, pd_paths, pdp_paths, epsilon,
        lambda paths, noise: run_sqlite(paths, noise, params=pparams, prefix_tables=True), sqlite_events,
        description=f"--partitioning prefix, parallel accounting, SQLite state; universe 1..4, epsilon {epsilon:g} per "
                    "append; batches 40 x {1,2} + 30 x {1} + 35 x {3,4} + 8 x {2,3} | 12 x {1,2} + 6 x {4} + 5 x {3} "
                    "| 9 x {3,4} + 4 x {2}; D has {1,2,3,4} in batch 1; events: file, manifest, trie and counts"))
    cases += _routing_cases(epsilon, run_sqlite)
    cases.append(_person_case(epsilon, run_sqlite))
    return cases


def _routing_cases(epsilon: float, run_sqlite) -> list[AuditCase]:
    """A record in batch 0 that changes the tree later batches are routed down (record-level, claim epsilon).

    Append 0's noisy counts decide which cells are split (tdpart: the cell {3,4} near theta_1 with C1 = 0.3;
    prefix: PrivTree's split of the {2,3} prefix); batches 1 and 2 are then counted at different nodes on D and
    D'. The later appends are epsilon-DP in their own batches, which are the same on both sides, and depend on
    batch 0 only through the stored noisy counts: the loss stays epsilon (docs/privacy.md section 4)."""

    def events(out) -> list[str]:
        return _stream_events(out) + _routing_events(out)

    cases: list[AuditCase] = []
    b0 = [[0, 1]] * 30 + [[0]] * 20 + [[2, 3]] * 2
    b1 = [[2, 3]] * 15 + [[2]] * 10 + [[0, 1]] * 10
    b2 = [[3]] * 8 + [[2, 3]] * 6
    name = "stream-parallel/tdpart-record-in-batch-0-changes-routing"
    d_paths = _write_batches(name + "-D", [b0 + [[2, 3]], b1, b2])
    dp_paths = _write_batches(name + "-Dprime", [b0, b1, b2])
    tparams = dict(fanout=2, c1=0.3, c2=0.3, accounting="parallel", privacy_unit="record")
    cases.append(AuditCase(
        name, d_paths, dp_paths, epsilon, lambda paths, noise: run_sqlite(paths, noise, params=tparams), events,
        description=f"--partitioning tdpart, parallel accounting, privacy unit record, SQLite state; universe 1..4, "
                    f"fan-out 2, C1 = C2 = 0.3, epsilon {epsilon:g} per append; batches 30 x {{1,2}} + 20 x {{1}} + "
                    "2 x {3,4} | 15 x {3,4} + 10 x {3} + 10 x {1,2} | 8 x {4} + 6 x {3,4}; D has a third {3,4} in "
                    "batch 0 (the cell's split decides where batches 1 and 2 are counted); events: file, manifest, "
                    "tree, counts and the nodes each batch was counted at"))
    p0 = [[0, 1]] * 40 + [[0]] * 30 + [[2, 3]] * 35 + [[1, 2]] * 8
    p1 = [[1, 2]] * 12 + [[1]] * 6 + [[0, 1]] * 5
    p2 = [[1, 2]] * 9 + [[2, 3]] * 4
    name = "stream-parallel/prefix-record-in-batch-0-changes-routing"
    d_paths = _write_batches(name + "-D", [p0 + [[1, 2]], p1, p2])
    dp_paths = _write_batches(name + "-Dprime", [p0, p1, p2])
    pparams = dict(fanout=4, c1=5.0, c2=3.0, accounting="parallel", partitioning="prefix", refine=True,
                   privacy_unit="record")
    cases.append(AuditCase(
        name, d_paths, dp_paths, epsilon,
        lambda paths, noise: run_sqlite(paths, noise, params=pparams, prefix_tables=True), events,
        description=f"--partitioning prefix, parallel accounting, privacy unit record, SQLite state; universe 1..4, "
                    f"epsilon {epsilon:g} per append; batches 40 x {{1,2}} + 30 x {{1}} + 35 x {{3,4}} + 8 x {{2,3}} "
                    "| 12 x {2,3} + 6 x {2} + 5 x {1,2} | 9 x {2,3} + 4 x {3,4}; D has a ninth {2,3} in batch 0 (the "
                    "trie's split under it decides where later {2,3} records are counted); events: file, manifest, "
                    "trie, counts and the nodes each batch was counted at"))
    return cases


PERSON_CASE = "stream-parallel/person-in-two-batches"


def _person_case(epsilon: float, run_sqlite) -> AuditCase:
    """One person with a record in batch 0 and another in batch 1 (D) or in neither (D'): person-level with
    K = 2, so the claim is 2 * epsilon; the measured bound exceeds epsilon (the record-level claim)."""
    b0 = [[0, 1, 2, 3]] * 20 + [[1, 2]] * 5
    b1 = [[0, 1, 2, 3]] * 10 + [[1, 2]] * 4
    b2 = [[2]] * 5 + [[0, 1]]
    d_paths = _write_batches(PERSON_CASE + "-D", [b0 + [[0, 1, 2, 3]], b1 + [[0, 1, 2, 3]], b2])
    dp_paths = _write_batches(PERSON_CASE + "-Dprime", [b0, b1, b2])
    params = dict(fanout=4, c1=0.5, c2=0.5, accounting="parallel", privacy_unit="person", max_batches_per_person=2)
    cell = "0 1 2 3"  # the leaf cell {1,2,3,4}: 20 and 10 records on D', one more in each batch on D

    def events(out) -> list[str]:
        return _stream_events(out) + _joint_count_events(out, {cell: (range(19, 24), range(9, 14))})

    return AuditCase(
        PERSON_CASE, d_paths, dp_paths, 2 * epsilon, lambda paths, noise: run_sqlite(paths, noise, params=params),
        events,
        description=f"--partitioning tdpart, parallel accounting, privacy unit person with --max-batches-per-person "
                    f"2 (claim 2 x {epsilon:g}), SQLite state; universe 1..4, fan-out 4, C1 = C2 = 0.5, epsilon "
                    f"{epsilon:g} per append; batches 20 x {{1,2,3,4}} + 5 x {{2,3}} | 10 x {{1,2,3,4}} + 4 x {{2,3}} | "
                    "5 x {3} + {1,2}; D has the person's {1,2,3,4} in batches 0 and 1; events: file, manifest, tree, "
                    "counts, and the cell's counts in both appends together (its bound is above epsilon, the "
                    "record-level claim)")


def _prefix_rows(state: Path) -> tuple[list[tuple], list[tuple]]:
    """The prefix trie's rows in the shape :func:`_state_events` reads (id, parent, level, pattern, is_class,
    created = 0, class, psum, n) and the counts table."""
    import sqlite3
    from contextlib import closing

    with closing(sqlite3.connect(str(state))) as conn:
        nodes = [(nid, parent, level, str(pattern), is_class, 0, "class" if is_class else "node", psum, n)
                 for (nid, parent, level, pattern, is_class, psum, n) in conn.execute(
                     "SELECT id, parent, level, pattern, is_class, psum, n FROM prefix_nodes ORDER BY id")]
        counts = conn.execute("SELECT node, append_no, nc FROM counts ORDER BY node, append_no").fetchall()
    return nodes, counts


@register_cases("stream")
def _prefix_paper_cases(epsilon: float) -> list[AuditCase]:
    """``stream init --partitioning prefix`` under the paper's (sequential) accounting: the stream's total
    epsilon*(U+1) over U = 2 updates, each append charged epsilon; the prefix pair of the parallel cases (a wide
    record in batch 1), through the SQLite state. As for the other ``stream`` cases, the record enters one
    append, so the pair is checked against that append's epsilon (the stricter claim)."""
    from .stream import _UPDATES

    p0 = [[0, 1]] * 40 + [[0]] * 30 + [[2, 3]] * 35 + [[1, 2]] * 8
    p1 = [[0, 1]] * 12 + [[3]] * 6 + [[2]] * 5
    p2 = [[2, 3]] * 9 + [[1]] * 4
    name = "stream/prefix-sqlite-wide-record-in-batch-1"
    d_paths = _write_batches(name + "-D", [p0, p1 + [[0, 1, 2, 3]], p2])
    dp_paths = _write_batches(name + "-Dprime", [p0, p1, p2])
    total = epsilon * (_UPDATES + 1)
    params = dict(fanout=4, c1=5.0, c2=3.0, accounting="paper", partitioning="prefix", refine=True)

    def run(paths: list[str], noise) -> list[tuple]:
        return _run_stream(paths, noise, epsilon=total, updates=_UPDATES, prefix_tables=True, **params)

    events = _stream_events

    return [AuditCase(
        name, d_paths, dp_paths, epsilon, run, events,
        description=f"--partitioning prefix, paper accounting (total {total:g} over U = {_UPDATES} updates), SQLite "
                    "state; the prefix pair of stream-parallel: D has {1,2,3,4} in batch 1; events: file, manifest, "
                    "trie and counts after every append")]
