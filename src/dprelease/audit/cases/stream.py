"""Audit cases of the IncTDPart stream (Zhang et al., 2013), in memory and through its SQLite state.

A record added to one batch enters one append only, whose budget is epsilon' = epsilon/(U+1); every
later decision is post-processing of noisy counts. So a record costs epsilon' (Theorem 3 charges
epsilon over all appends). The cases run the stream with total epsilon*(U+1) and check the pair
against ``epsilon`` = epsilon': the stricter claim, which the code must still meet.

Events after *every* append: the release as stored and written (contents and order), its manifest,
and the stored TBP-tree (node ids with their cuts, parents, classes and p-sums, and the counts table),
because the state file is output too (node ids once carried the real/generated split).
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

from ..core import AuditCase, register_cases
from ..events import manifest_events, set_valued_events, written_release_events

_UPDATES = 2  # three appends: the initial dataset and two updates


def _batches_text(batches: list[list[list[int]]]) -> list[str]:
    return ["".join(" ".join(str(i + 1) for i in rec) + "\n" for rec in batch) for batch in batches]


_TMP: list[str] = []


def _tmpdir() -> Path:
    """A scratch folder for the audit's state files: in memory (/dev/shm) where available, since the state's
    synchronous=FULL commits would otherwise wait on the disk for every append."""
    if not _TMP:
        shm = "/dev/shm"
        where = shm if os.path.isdir(shm) and os.access(shm, os.W_OK) else None
        _TMP.append(tempfile.mkdtemp(prefix="dprelease-audit-stream-", dir=where))
        atexit.register(shutil.rmtree, _TMP[0], True)
    return Path(_TMP[0])


def _write_batches(name: str, batches: list[list[list[int]]]) -> list[str]:
    folder = _tmpdir() / name
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for j, text in enumerate(_batches_text(batches)):
        path = folder / f"batch{j}.dat"
        path.write_text(text)
        paths.append(str(path))
    return paths


def _state_rows(state: Path) -> tuple[list[tuple], list[tuple]]:
    import sqlite3
    from contextlib import closing

    with closing(sqlite3.connect(str(state))) as conn:
        nodes = conn.execute("SELECT id, parent, mask, cut, leaf, created, class, psum, n FROM nodes "
                             "ORDER BY id").fetchall()
        counts = conn.execute("SELECT node, append_no, nc FROM counts ORDER BY node, append_no").fetchall()
    return nodes, counts


def _state_events(nodes: list[tuple], counts: list[tuple], prefix: str) -> list[str]:
    """Events of the stored tree: rows (id, parent, mask, cut, leaf, created, class, psum, n) in id order."""
    out = [prefix + "nodes " + ";".join(" ".join(map(str, r)) for r in nodes),
           prefix + "counts " + ";".join(" ".join(map(str, r)) for r in counts)]
    cuts = [f"[{r[3]}]" for r in nodes]
    created: dict[int, list[str]] = {}
    for (nid, parent, mask, cut, leaf, made, cls, psum, n), c in zip(nodes, cuts):
        out.append(f"{prefix}node {nid} = {c} under {parent}")
        out.append(f"{prefix}node {c} {cls} psum={psum} n={n}")
        created.setdefault(int(made), []).append(c)
    for made, seq in sorted(created.items()):  # creation order within each append (ids are assigned in it)
        out.append(f"{prefix}created in a{made}: " + ";".join(seq))
        out.append(f"{prefix}first created in a{made}: {seq[0]}")
    if len(cuts) <= 40:
        out += [f"{prefix}{cuts[i]} id before {cuts[j]}" for i in range(len(cuts)) for j in range(i + 1, len(cuts))]
    return out


# The SQLite pair: fan-out 4 over 1..4 (the root's split is the leaf level), low constants C1 = C2 = 0.5 so that
# a count of 1 can pass, and new cells tested at every visit: the record {1} of batch 1 makes a real new cell on
# D and can only be test-and-generated on D' (the release-order fault, in the state's node ids).
_B0 = [[0, 1, 2, 3]] * 20 + [[1, 2]] * 5
_B1 = [[0, 1, 2, 3]] * 10
_B2 = [[2]] * 5 + [[0, 1]]
_D_BATCHES = [_B0, _B1 + [[0]], _B2]  # D has {1} in batch 1; D' does not
_DP_BATCHES = [_B0, _B1, _B2]
_PARAMS = {"fanout": 4, "c1": 0.5, "c2": 0.5, "new_cells": "every-visit"}


def _sqlite_case(epsilon: float, total: float, where: str) -> AuditCase:
    """The pair through the SQLite state (init_state / append_batch), releases read back from the files."""
    from ...setvalued.stream_state import append_batch, init_state

    name = "stream/sqlite-record-in-batch-1"
    d_paths = _write_batches(name + "-D", _D_BATCHES)
    dp_paths = _write_batches(name + "-Dprime", _DP_BATCHES)

    def run_sqlite(paths: list[str], noise) -> list[tuple]:
        # The state file's seeded mode draws each append's noise from a per-append seed; the seed comes
        # from the run's noise source, so runs stay independent.
        seed = int(noise.integers(2**62, 1)[0])
        with tempfile.TemporaryDirectory(prefix="run-", dir=_tmpdir()) as tmp:
            state = Path(tmp) / "state.db"
            init_state(state, epsilon=total, updates=_UPDATES, universe_spec="1..4", seed=seed, **_PARAMS)
            out = []
            for j, batch in enumerate(paths):
                rel = Path(tmp) / f"release{j}.dat"
                info = append_batch(state, batch, rel)  # what the CLI prints comes from this
                info = {k: v for k, v in info.items() if k not in ("release", "manifest")}  # paths: per run
                nodes, counts = _state_rows(state)
                out.append((rel.read_text(), Path(str(rel) + ".manifest.json").read_text(), nodes, counts, info))
            return out

    return AuditCase(
        name, d_paths, dp_paths, epsilon, run_sqlite, _sqlite_events,
        description=f"SQLite state (init_state/append_batch), {where}; events after every append: file, manifest, "
                    "what append_batch returns (the CLI prints it), "
                    "node and count tables")


def _sqlite_events(out) -> list[str]:
    import json

    evs: list[str] = []
    for j, (body, manifest, nodes, counts, info) in enumerate(out):
        p = f"a{j}: "
        evs.append(p + "append_batch returned " + json.dumps(info, sort_keys=True))
        evs += written_release_events(body, grid=range(4), prefix=p)
        evs += manifest_events(json.loads(manifest), prefix=p)
        evs += _state_events(nodes, counts, p)
    return evs


def _run_tree_with(batches, noise, *, total: float, fanout: int, c1: float, c2: float,
                   new_cells: str = "first-visit"):
    """The stream in memory (TBPTree): the release and the node list after every append."""
    from ...data.universe import Universe
    from ...setvalued.inctdpart import TBPTree

    u4 = Universe.from_range(1, 4)
    tree = TBPTree(4, total, _UPDATES, fanout=fanout, c1=c1, c2=c2, new_cells=new_cells)
    out = []
    for db in batches:
        tree.append(db, noise)
        rel = tree.release(u4, {"mode": noise.mode})
        nodes = [(nd.id, nd.parent, nd.mask, " ".join(map(str, nd.cut)), int(nd.leaf), nd.created,
                  tree.node_class(nd), nd.psum, nd.n) for nd in tree.nodes]
        out.append((rel, nodes))
    return out


def _tree_events(grid: range):
    def events(out) -> list[str]:
        evs: list[str] = []
        for j, (rel, nodes) in enumerate(out):
            p = f"a{j}: "
            evs += set_valued_events(rel.itemsets, rel.counts, grid=grid, prefix=p)
            evs += _state_events(nodes, [], p)
        return evs

    return events


@register_cases("stream")
def _stream_cases(epsilon: float) -> list[AuditCase]:
    from ...data.transactions import TransactionDB

    total = epsilon * (_UPDATES + 1)
    where = (f"universe 1..4, fan-out 4, C1 = C2 = 0.5, new cells at every visit, U = {_UPDATES}, total {total:g}; "
             "batches 20 x {1,2,3,4} + 5 x {2,3} | 10 x {1,2,3,4} | 5 x {3} + {1,2}; D has {1} in batch 1")
    cases = [_sqlite_case(epsilon, total, where)]

    # --- the same pair in memory (fast: the power check of the state's node order uses it) -------------
    cases.append(AuditCase(
        "stream/tree-record-in-batch-1", [TransactionDB.from_lists(b, 4) for b in _D_BATCHES],
        [TransactionDB.from_lists(b, 4) for b in _DP_BATCHES], epsilon,
        lambda batches, noise: _run_tree_with(batches, noise, total=total, **_PARAMS), _tree_events(range(4)),
        description=f"TBPTree in memory, {where}; events: release and node list after every append"))

    # --- in memory (TBPTree), two levels (fan-out 2), a wide record in the initial dataset ----------------
    m0 = [[0, 1]] * 10 + [[0]] * 8 + [[2, 3]] * 6
    m1 = [[0, 1]] * 6 + [[3]] * 4
    m2 = [[2, 3]] * 5 + [[1]] * 2
    dm = [TransactionDB.from_lists(b, 4) for b in (m0 + [[0, 1, 2, 3]], m1, m2)]
    dmp = [TransactionDB.from_lists(b, 4) for b in (m0, m1, m2)]
    cases.append(AuditCase(
        "stream/tree-wide-record-in-initial-batch", dm, dmp, epsilon,
        lambda batches, noise: _run_tree_with(batches, noise, total=total, fanout=2, c1=1.5, c2=1.5),
        _tree_events(range(14)),
        description=f"TBPTree in memory, universe 1..4, fan-out 2, C1 = C2 = 1.5, U = {_UPDATES}, total {total:g}; "
                    "D has {1,2,3,4} in the initial dataset; events: release and node list after every append"))
    return cases
