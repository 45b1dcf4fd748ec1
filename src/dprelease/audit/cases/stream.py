"""Audit cases of the IncTDPart stream (Zhang et al., 2013), in memory and through its SQLite state.

A record added to one batch enters one append only, whose budget is epsilon' = epsilon/(U+1); every
later decision is post-processing of noisy counts. So a record costs epsilon' (Theorem 3 charges
epsilon over all appends). The cases run the stream with total epsilon*(U+1) and check the pair
against ``epsilon`` = epsilon': the stricter claim, which the code must still meet.

Events after *every* append: the release as stored and written (contents and order), its manifest,
and the stored TBP-tree (node ids with their cuts, parents, classes and p-sums, and the counts table),
because the state file is output too (issue 8 defect 1: node ids carried the real/generated split).
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
        nodes = conn.execute("SELECT id, parent, mask, cut, leaf, class, psum, n FROM nodes ORDER BY id").fetchall()
        counts = conn.execute("SELECT node, append_no, nc FROM counts ORDER BY node, append_no").fetchall()
    return nodes, counts


def _state_events(nodes: list[tuple], counts: list[tuple], prefix: str) -> list[str]:
    out = [prefix + "nodes " + ";".join(" ".join(map(str, r)) for r in nodes),
           prefix + "counts " + ";".join(" ".join(map(str, r)) for r in counts)]
    for nid, parent, mask, cut, leaf, cls, psum, n in nodes:
        out.append(f"{prefix}node {nid} = [{cut}] under {parent}")
        out.append(f"{prefix}node [{cut}] {cls} psum={psum} n={n}")
    return out


@register_cases("stream")
def _stream_cases(epsilon: float) -> list[AuditCase]:
    from ...data.transactions import TransactionDB
    from ...data.universe import Universe
    from ...setvalued.inctdpart import TBPTree
    from ...setvalued.stream_state import append_batch, init_state

    total = epsilon * (_UPDATES + 1)
    cases: list[AuditCase] = []

    # --- through the SQLite state (init_state / append_batch), releases read back from the files ---------
    # {3,4} is stored after the initial dataset (6 copies), so batch 1's count of it enters its p-sum
    # (first-visit rule: cells not stored stop at a split partition).
    b0 = [[0, 1]] * 6 + [[2, 3]] * 6 + [[2]] * 4
    b1 = [[0, 1]] * 5 + [[2, 3]] * 3 + [[3]] * 2
    b2 = [[2]] * 3 + [[0]]
    d_batches = [b0, b1 + [[2, 3]], b2]  # D has a 4th {3,4} in batch 1; D' does not
    dp_batches = [b0, b1, b2]
    name = "stream/sqlite-record-in-batch-1"
    d_paths = _write_batches(name + "-D", d_batches)
    dp_paths = _write_batches(name + "-Dprime", dp_batches)

    def run_sqlite(paths: list[str], noise) -> list[tuple[str, str, list[tuple], list[tuple]]]:
        # The state file's seeded mode draws each append's noise from a per-append seed; the seed comes
        # from the run's noise source, so runs stay independent.
        seed = int(noise.integers(2**62, 1)[0])
        with tempfile.TemporaryDirectory(prefix="run-", dir=_tmpdir()) as tmp:
            state = Path(tmp) / "state.db"
            init_state(state, epsilon=total, updates=_UPDATES, fanout=4, c1=5.0, c2=3.0, universe_spec="1..4",
                       seed=seed)
            out = []
            for j, batch in enumerate(paths):
                rel = Path(tmp) / f"release{j}.dat"
                append_batch(state, batch, rel)
                nodes, counts = _state_rows(state)
                out.append((rel.read_text(), Path(str(rel) + ".manifest.json").read_text(), nodes, counts))
            return out

    def sqlite_events(out) -> list[str]:
        import json

        evs: list[str] = []
        for j, (body, manifest, nodes, counts) in enumerate(out):
            p = f"a{j}: "
            evs += written_release_events(body, grid=range(4, 16), prefix=p)
            evs += manifest_events(json.loads(manifest), prefix=p)
            evs += _state_events(nodes, counts, p)
        return evs

    cases.append(AuditCase(
        name, d_paths, dp_paths, epsilon, lambda paths, noise: run_sqlite(paths, noise), sqlite_events,
        description=f"SQLite state (init_state/append_batch), universe 1..4, fan-out 4, U = {_UPDATES}, total "
                    f"{total:g}; batch 1 holds 3 x {{3,4}} on D', 4 on D; events after every append: file, manifest, "
                    "node and count tables"))

    # --- in memory (TBPTree), two levels (fan-out 2), the record in the initial dataset --------------------
    u4 = Universe.from_range(1, 4)
    m0 = [[0, 1]] * 10 + [[0]] * 8 + [[2, 3]] * 6
    m1 = [[0, 1]] * 6 + [[3]] * 4
    m2 = [[2, 3]] * 5 + [[1]] * 2
    dm = [TransactionDB.from_lists(b, 4) for b in (m0 + [[0, 1, 2, 3]], m1, m2)]
    dmp = [TransactionDB.from_lists(b, 4) for b in (m0, m1, m2)]

    def run_tree(batches, noise):
        tree = TBPTree(4, total, _UPDATES, fanout=2, c1=1.5, c2=1.5)
        out = []
        for db in batches:
            tree.append(db, noise)
            rel = tree.release(u4, {"mode": noise.mode})
            nodes = [(nd.id, nd.parent, nd.mask, " ".join(map(str, nd.cut)), int(nd.leaf), tree.node_class(nd),
                      nd.psum, nd.n) for nd in tree.nodes]
            out.append((rel, nodes))
        return out

    def tree_events(out) -> list[str]:
        evs: list[str] = []
        for j, (rel, nodes) in enumerate(out):
            p = f"a{j}: "
            evs += set_valued_events(rel.itemsets, rel.counts, grid=range(0, 14), prefix=p)
            evs += _state_events(nodes, [], p)
        return evs

    cases.append(AuditCase(
        "stream/tree-wide-record-in-initial-batch", dm, dmp, epsilon, run_tree, tree_events,
        description=f"TBPTree in memory, universe 1..4, fan-out 2, C1 = C2 = 1.5, U = {_UPDATES}, total {total:g}; "
                    "D has {1,2,3,4} in the initial dataset; events: release and node list after every append"))
    return cases

