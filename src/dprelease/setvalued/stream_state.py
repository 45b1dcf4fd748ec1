"""The IncTDPart stream state in SQLite: parameters, budget ledger and TBP-tree, one transaction per append.

Schema (``PRAGMA user_version = 2``; journal_mode = WAL, synchronous = FULL):

* ``meta(key, value)`` -- JSON values: format, epsilon, updates (U; null = no limit, parallel
  accounting only), accounting ("paper": epsilon/(U+1) per append, sequential; "parallel":
  epsilon per append against its own batch; absent in states made before it existed = "paper"),
  privacy_unit ("person" or "record": what neighbouring streams differ by, declared at init; absent in
  states made before it existed = what their accounting protects: "person" under "paper", "record" under
  "parallel"), max_batches_per_person (K, or null; parallel accounting with privacy_unit "person"),
  fanout, c1, c2, theta_rule, new_cells, routing (absent = "paper"), n_items, universe (labels,
  source, spec; or null until the first append derives it), rng (mode and, in experiment mode, the
  init seed), stream_id (random; ``seeded-SEED`` in experiment mode): the stream's name in its
  releases' manifests, so that ``append``/``release`` may replace the stream's own previous release
  without --force.
  ledger (only for ``stream init --ledger``: the budget ledger's path and id and the charge that reserved the
  stream's whole epsilon; every append is recorded there, :mod:`dprelease.ledger`).
* ``ledger(append_no, epsilon, rng)`` -- one row per append: epsilon' charged and the
  random source used (seeded streams: the per-append seed derived from the init seed); ``"loop":
  "level-wise"`` when the append ran the level-wise loop (``--engine spark`` or ``--level-wise``).
* ``nodes(id, parent, mask, cut, leaf, created, expand, psum, n, inv_alpha, class)`` --
  the TBP-tree: hierarchy cut (taxonomy node ids), the taxonomy node it is split on,
  its p-sum, the number of noisy counts in it and sum(1/alpha) (for theta), and its
  class (Definition 7).
* ``counts(node, append_no, nc, alpha)`` -- every noisy count released into a p-sum and
  the budget behind it.

No raw record and nothing computed from raw data without a mechanism is stored:
only noisy counts, what was built from them, and public parameters. The *order* is public too:
node ids are assigned in a canonical order (breadth first, children in ascending mask order, real and
test-and-generated cells mixed; :mod:`dprelease.setvalued.inctdpart`) and every table's rows are inserted
sorted by their key, so neither the ids nor the file's layout say which cells were real. Format 1 states
(ids in a data-dependent order, which showed which cells were real) are refused with a message.

Crash safety: an append reads the batch, then takes the write lock (``BEGIN
IMMEDIATE``), re-reads the state inside the transaction, computes, writes, and
commits once; SQLite's WAL makes the commit atomic, so a process killed at any
moment leaves the state before or after the append. The release file is written
atomically (temp + rename) *after* the commit; ``reemit`` rewrites it from the
state without spending budget. A second appender waits for the lock (``wait``
seconds) and then works on the committed state, or fails with
:class:`StateLockedError`; never both apply to the same state.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
import uuid
import warnings
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .. import sqlite_state
from ..data.io import read_transactions
from ..data.parquet import is_parquet
from ..data.universe import Universe, parse_universe_spec
from ..engine import in_memory, open_transactions, unwrap
from ..errors import BudgetExceededError, DPReleaseError, InputError, ParameterError, PrivacyLeakWarning
from ..privacy import NoiseSource, SecureNoise, SeededNoise
from ..privacy.uncertainty import dlap_variance
from ..release import records_run_start
from ..release.stream import names_stream, stream_release
from .incprefix import PrefixStream
from .inctdpart import StreamBudget, TBPNode, TBPTree, append_seed
from .prefixpart import PrefixTree

__all__ = ["FORMAT", "StateLockedError", "StreamStatus", "init_state", "load_tree", "append_batch", "reemit",
           "stream_status", "stream_identity", "stream_ledger", "owns_release", "check_engine", "DEFAULT_WAIT"]

FORMAT = "dprelease-inctdpart-state/2"
_USER_VERSION = 2
_OLD_FORMATS = ("dprelease-inctdpart-state/1",)
DEFAULT_WAIT = 60.0

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE ledger (append_no INTEGER PRIMARY KEY, epsilon REAL NOT NULL, rng TEXT NOT NULL);
CREATE TABLE nodes (
    id INTEGER PRIMARY KEY, parent INTEGER NOT NULL, mask INTEGER NOT NULL, cut TEXT NOT NULL,
    leaf INTEGER NOT NULL, created INTEGER NOT NULL, expand INTEGER NOT NULL, psum INTEGER NOT NULL,
    n INTEGER NOT NULL, inv_alpha REAL NOT NULL, class TEXT NOT NULL);
CREATE TABLE counts (node INTEGER NOT NULL, append_no INTEGER NOT NULL, nc INTEGER NOT NULL, alpha REAL NOT NULL,
    PRIMARY KEY (node, append_no)) WITHOUT ROWID;
"""

# Streams with --partitioning prefix (setvalued/incprefix.py) keep DiffPart-Prefix's trie instead of a TBP-tree:
# the item order (ranks of the frequent items), the noisy weighted supports (for records with no frequent item),
# and the trie's nodes with their p-sums. All are noisy values or functions of them.
_PREFIX_SCHEMA = """
CREATE TABLE prefix_items (rank INTEGER PRIMARY KEY, item INTEGER NOT NULL);
CREATE TABLE prefix_support (item INTEGER PRIMARY KEY, value REAL NOT NULL);
CREATE TABLE prefix_nodes (
    id INTEGER PRIMARY KEY, parent INTEGER NOT NULL, level INTEGER NOT NULL, pattern INTEGER NOT NULL,
    is_class INTEGER NOT NULL, child0 INTEGER NOT NULL, child1 INTEGER NOT NULL, psum INTEGER NOT NULL,
    n INTEGER NOT NULL, inv2 REAL NOT NULL);
"""
PARTITIONINGS = ("tdpart", "prefix")


class StateLockedError(DPReleaseError):
    """Another process holds the state's write lock (an append in progress) past the wait time."""


@dataclass(frozen=True, slots=True)
class StreamStatus:
    epsilon: float
    epsilon_spent: float
    updates: int | None  # None: no limit (parallel accounting without --updates)
    appends: int
    accounting: str = "paper"
    privacy_unit: str = "person"
    max_batches_per_person: int | None = None

    @property
    def budget(self) -> StreamBudget:
        return StreamBudget(self.epsilon, self.updates, self.accounting, self.privacy_unit,
                            self.max_batches_per_person)

    @property
    def max_appends(self) -> int | None:
        return None if self.updates is None else self.updates + 1

    @property
    def epsilon_per_append(self) -> float:
        return self.budget.epsilon_prime

    @property
    def privacy_unit_epsilon(self) -> float:
        """What one privacy unit can lose over the whole stream (exact, rounded up; the ledger's reservation)."""
        return self.budget.privacy_unit_epsilon

    def as_json(self) -> dict[str, object]:
        return {"epsilon": self.epsilon, "epsilon_spent": self.epsilon_spent, "updates": self.updates,
                "appends": self.appends, "accounting": self.accounting,
                "epsilon_per_append": self.epsilon_per_append, "privacy_unit": self.privacy_unit,
                "max_batches_per_person": self.max_batches_per_person,
                "privacy_unit_epsilon": self.privacy_unit_epsilon}


def _connect(path: Path, wait: float = DEFAULT_WAIT) -> sqlite3.Connection:
    return sqlite_state.connect(path, wait)


def _open(path: str | os.PathLike, wait: float = DEFAULT_WAIT) -> sqlite3.Connection:
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such stream state (create it with `dprelease stream init`)")
    try:
        conn = _connect(path, wait)
    except sqlite3.DatabaseError:
        raise InputError(f"{path}: not a dprelease stream state (not an SQLite file)") from None
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()
    except sqlite3.DatabaseError:
        conn.close()
        raise InputError(f"{path}: not a dprelease stream state (not an SQLite file of this format)") from None
    if row is not None and json.loads(row[0]) in _OLD_FORMATS:
        conn.close()
        raise InputError(f"{path}: stream state of an older dprelease ({json.loads(row[0])}: its node ids reveal which "
                         f"cells were real); it cannot be continued safely, start a new stream with `dprelease stream init`")
    if row is None or json.loads(row[0]) != FORMAT:
        conn.close()
        raise InputError(f"{path}: not a dprelease stream state (format {row[0] if row else 'missing'})")
    return conn


def _meta(conn: sqlite3.Connection) -> dict[str, object]:
    return {k: json.loads(v) for k, v in conn.execute("SELECT key, value FROM meta")}


def _universe(meta: dict[str, object]) -> Universe | None:
    u = meta.get("universe")
    if not u:
        return None
    return Universe.from_labels(list(u["labels"]), u["source"], u["spec"])


def _universe_json(universe: Universe) -> dict[str, object]:
    return {"labels": list(universe.labels), "source": universe.source, "spec": universe.spec}


def init_state(path: str | os.PathLike, *, epsilon: float, updates: int | None, fanout: int, c1: float, c2: float,
               universe_spec: str | None = None, seed: int | None = None, theta_rule: str = "example3",
               new_cells: str = "first-visit", accounting: str = "paper", routing: str = "paper",
               partitioning: str = "tdpart", refine: bool = True, expand: bool = True,
               ledger: dict[str, object] | None = None, privacy_unit: str | None = None,
               max_batches_per_person: int | None = None) -> StreamStatus:
    """Create a new state file (refuses to overwrite); built beside it and renamed into place.

    ``privacy_unit``: what neighbouring streams differ by ("person" or "record"); required with
    ``accounting="parallel"``, which protects a record, or a person only with a bound
    (``max_batches_per_person`` K, or U + 1): :func:`dprelease.setvalued.inctdpart.resolve_privacy_unit`.
    ``ledger``: the budget ledger that reserved the stream's whole epsilon (:mod:`dprelease.ledger`),
    remembered in ``meta`` so that every append is recorded there."""
    path = Path(path)
    if path.exists():
        raise InputError(f"{path}: already exists; a stream state is created once (remove it to start over)")
    budget = StreamBudget.declare(epsilon, updates, accounting, privacy_unit, max_batches_per_person, required=True)
    universe = parse_universe_spec(universe_spec) if universe_spec else None
    probe = TBPTree(universe.size if universe else 2, epsilon, updates, fanout=fanout, c1=c1, c2=c2,
                    theta_rule=theta_rule, new_cells=new_cells, accounting=accounting,
                    routing=routing, privacy_unit=budget.privacy_unit,
                    max_batches_per_person=budget.max_batches_per_person)  # validates every parameter
    if partitioning not in PARTITIONINGS:
        raise ParameterError(f"--partitioning must be one of {', '.join(PARTITIONINGS)}, got {partitioning!r}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)  # like every other output
    except OSError as exc:
        raise InputError(f"{path.parent}: cannot create the folder ({exc.strerror or exc})") from None
    meta = {
        "format": FORMAT, "epsilon": probe.epsilon, "updates": probe.updates,
        "accounting": probe.accounting, "privacy_unit": probe.privacy_unit,
        "max_batches_per_person": probe.max_batches_per_person, "routing": probe.routing, "partitioning": partitioning,
        "refine": bool(refine) if partitioning == "prefix" else None, "fanout": probe.fanout,
        "expand": bool(expand) if partitioning == "prefix" else None,
        "c1": probe.c1, "c2": probe.c2, "theta_rule": probe.theta_rule, "new_cells": probe.new_cells,
        "n_items": universe.size if universe else None,
        "universe": _universe_json(universe) if universe else None,
        "rng": {"mode": "secure", "seed": None} if seed is None else {"mode": "seeded", "seed": int(seed)},
        # names the stream in its releases' manifests (random and public; in seeded experiment mode
        # derived from the seed, so that a seeded state is reproducible byte for byte)
        "stream_id": uuid.uuid4().hex if seed is None else f"seeded-{int(seed)}",
    }
    if ledger is not None:
        meta["ledger"] = dict(ledger)

    def build(conn: sqlite3.Connection) -> None:
        for stmt in (_SCHEMA + (_PREFIX_SCHEMA if partitioning == "prefix" else "")).strip().split(";"):
            if stmt.strip():
                conn.execute(stmt)
        conn.executemany("INSERT INTO meta VALUES (?, ?)", [(k, json.dumps(v)) for k, v in meta.items()])

    sqlite_state.create_by_rename(path, build, user_version=_USER_VERSION)
    return StreamStatus(probe.epsilon, 0.0, probe.updates, 0, probe.accounting, probe.privacy_unit,
                        probe.max_batches_per_person)


def _updates(meta: dict[str, object]) -> int | None:
    return None if meta.get("updates") is None else int(meta["updates"])


def _accounting(meta: dict[str, object]) -> str:
    return str(meta.get("accounting", "paper"))


def _privacy_unit(meta: dict[str, object]) -> tuple[str, int | None]:
    """The declared privacy unit and K; a state made before the declaration existed has what its accounting
    protects: a person under the paper's accounting, a record under parallel accounting."""
    k = meta.get("max_batches_per_person")
    unit = meta.get("privacy_unit")
    budget = StreamBudget.declare(float(meta["epsilon"]), _updates(meta), _accounting(meta),
                                  None if unit is None else str(unit), None if k is None else int(k))
    return budget.privacy_unit, budget.max_batches_per_person


def _tree_from(conn: sqlite3.Connection, meta: dict[str, object]) -> TBPTree:
    unit, k = _privacy_unit(meta)
    tree = TBPTree(int(meta["n_items"]), float(meta["epsilon"]), _updates(meta), fanout=int(meta["fanout"]),
                   c1=float(meta["c1"]), c2=float(meta["c2"]), theta_rule=str(meta["theta_rule"]),
                   new_cells=str(meta["new_cells"]), accounting=_accounting(meta),
                   routing=str(meta.get("routing", "paper")), privacy_unit=unit, max_batches_per_person=k)
    tree.ledger = [float(e) for (e,) in conn.execute("SELECT epsilon FROM ledger ORDER BY append_no")]
    rows = conn.execute("SELECT id, parent, mask, cut, leaf, created, expand, psum, n, inv_alpha FROM nodes "
                        "ORDER BY id").fetchall()
    if rows:
        nodes: list[TBPNode] = []
        for (nid, parent, mask, cut, leaf, created, expand, psum, n, inv_alpha) in rows:
            if nid != len(nodes):
                raise InputError("stream state is corrupt: node ids are not consecutive")
            nodes.append(TBPNode(nid, parent, mask, tuple(int(x) for x in cut.split()), bool(leaf), created,
                                 expand, psum, n, inv_alpha))
            if parent >= 0:
                nodes[parent].children[mask] = nid
        for nid, alpha in conn.execute("SELECT node, alpha FROM counts ORDER BY node, append_no"):
            nodes[nid].noise_var += dlap_variance(1.0 / float(alpha))  # the p-sum's noise (error bars)
        tree.nodes = nodes
    return tree


def _partitioning(meta: dict[str, object]) -> str:
    return str(meta.get("partitioning") or "tdpart")


def _prefix_from(conn: sqlite3.Connection, meta: dict[str, object]) -> PrefixStream:
    unit, k = _privacy_unit(meta)
    stream = PrefixStream(int(meta["n_items"]), float(meta["epsilon"]), _updates(meta), accounting=_accounting(meta),
                          refine=bool(meta.get("refine")), expand=bool(meta.get("expand")),  # older states: off
                          privacy_unit=unit, max_batches_per_person=k)
    stream.ledger = [float(e) for (e,) in conn.execute("SELECT epsilon FROM ledger ORDER BY append_no")]
    rows = conn.execute("SELECT id, parent, level, pattern, is_class, child0, child1, psum, n, inv2 FROM prefix_nodes "
                        "ORDER BY id").fetchall()
    if rows:
        cols = list(zip(*rows))
        if list(cols[0]) != list(range(len(rows))):
            raise InputError("stream state is corrupt: node ids are not consecutive")
        F = np.asarray([i for (i,) in conn.execute("SELECT item FROM prefix_items ORDER BY rank")], dtype=np.int64)
        support = np.zeros(stream.n_items)
        for item, value in conn.execute("SELECT item, value FROM prefix_support"):
            support[int(item)] = float(value)
        params = meta.get("prefix_tree") or {}
        ints = lambda c: np.asarray(c, dtype=np.int64)  # noqa: E731
        stream.tree = PrefixTree(F, stream.n_items, ints(cols[3]).reshape(-1, 1), ints(cols[1]), ints(cols[2]),
                                 np.asarray(cols[4], dtype=bool), np.stack([ints(cols[5]), ints(cols[6])], axis=1),
                                 support, float(params.get("lam", 0.0)), int(params.get("delta", 0)))
        total0 = params.get("initial_total")
        stream.initial_total = None if total0 is None else int(total0)
        stream.psum, stream.n, stream.inv2 = ints(cols[7]), ints(cols[8]), np.asarray(cols[9], dtype=np.float64)
    return stream


def _save_prefix(conn: sqlite3.Connection, stream: PrefixStream, first: bool) -> None:
    t = stream.tree
    assert t is not None
    if t.pattern.shape[1] != 1:  # the stream's F holds at most one word's ranks (incprefix.STREAM_MAX_ITEMS)
        raise ValueError("a stream's trie patterns must fit one 62-bit word")
    if first:
        conn.executemany("INSERT INTO prefix_items VALUES (?, ?)", list(enumerate(t.F.tolist())))
        conn.executemany("INSERT INTO prefix_support VALUES (?, ?)", list(enumerate(t.noisy_support.tolist())))
        conn.execute("INSERT OR REPLACE INTO meta VALUES ('prefix_tree', ?)",
                     (json.dumps({"lam": t.lam, "delta": t.delta, "frequent_items": t.m,
                                  "initial_total": stream.initial_total}),))
    conn.execute("DELETE FROM prefix_nodes")
    conn.executemany("INSERT INTO prefix_nodes VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                     zip(range(t.n_nodes), t.parent.tolist(), t.level.tolist(), t.pattern[:, 0].tolist(),
                         t.is_class.astype(int).tolist(), t.child[:, 0].tolist(), t.child[:, 1].tolist(),
                         stream.psum.tolist(), stream.n.tolist(), stream.inv2.tolist()))


def load_tree(path: str | os.PathLike) -> tuple[TBPTree | PrefixStream | None, dict[str, object]]:
    """The tree and the metadata of a state (tree is None before the first append fixes the universe)."""
    with closing(_open(path)) as conn:
        conn.execute("BEGIN")
        meta = _meta(conn)
        if not meta.get("n_items"):
            tree = None
        elif _partitioning(meta) == "prefix":
            tree = _prefix_from(conn, meta)
        else:
            tree = _tree_from(conn, meta)
        conn.execute("COMMIT")
    return tree, meta


def stream_status(path: str | os.PathLike) -> StreamStatus:
    with closing(_open(path)) as conn:
        conn.execute("BEGIN")
        meta = _meta(conn)
        spent = [float(e) for (e,) in conn.execute("SELECT epsilon FROM ledger ORDER BY append_no")]
        conn.execute("COMMIT")
    accounting = _accounting(meta)
    total = float(max(spent, default=0.0)) if accounting == "parallel" else float(math.fsum(spent))
    unit, k = _privacy_unit(meta)
    return StreamStatus(float(meta["epsilon"]), total, _updates(meta), len(spent), accounting, unit, k)


def _check_output(output: str | os.PathLike, state: Path, batch: str | os.PathLike | None = None,
                  force: bool = False) -> Path:
    """The release path is checked before anything is committed: never the state or the batch, an existing
    file only if it is this stream's own previous release (or with ``force``), a writable folder."""
    from ..data.io import check_output_path
    from ..release import manifest_path

    inputs = [state, Path(str(state) + "-wal"), Path(str(state) + "-shm")] + ([Path(batch)] if batch else [])
    companions = [manifest_path(output)] if Path(output).name else []  # an empty name is refused below
    return check_output_path(output, inputs=inputs, companions=companions, force=force,
                             may_replace=lambda out: owns_release(state, out))


def stream_ledger(path: str | os.PathLike) -> dict[str, object] | None:
    """The budget ledger the stream was opened against (``stream init --ledger``), or None."""
    with closing(_open(path)) as conn:
        row = conn.execute("SELECT value FROM meta WHERE key = 'ledger'").fetchone()
    return json.loads(row[0]) if row else None


def stream_identity(path: str | os.PathLike) -> dict[str, object]:
    """How a release's manifest names its stream: the state file's name (not its folder) and its id."""
    path = Path(path)
    with closing(_open(path)) as conn:
        row = conn.execute("SELECT value FROM meta WHERE key = 'stream_id'").fetchone()
    return {"state": path.name, "id": json.loads(row[0]) if row else None}


def owns_release(state: str | os.PathLike, output: str | os.PathLike) -> bool:
    """Whether ``output`` is a release of this stream (its manifest names the stream): append and release
    may replace it without --force."""
    try:
        ident = stream_identity(state)
    except DPReleaseError:
        return False
    return names_stream(output, ident)


def _noise_info(meta: dict[str, object]) -> dict[str, object]:
    rng = dict(meta["rng"])
    if rng.get("mode") == "seeded":
        rng["per_append_seed"] = "SeedSequence([seed, append_no]) (dprelease.setvalued.inctdpart.append_seed)"
    return rng


def check_engine(path: str | os.PathLike[str], engine: str = "local", level_wise: bool = False) -> None:
    """Refuse, before anything is read or reserved, an append on ``engine`` (or the level-wise loop) that the
    stream cannot take: Spark and the level-wise loop run tdpart streams with a declared universe only."""
    if in_memory(engine) and not level_wise:
        return
    what, instead = (f"--engine {engine}", "--engine local") if not in_memory(engine) else ("--level-wise", "the "
                                                                                            "default loop")
    with closing(_open(path)) as conn:
        meta = _meta(conn)
    if _partitioning(meta) == "prefix":
        raise ParameterError(f"{what} runs streams made with --partitioning tdpart only ({path} uses --partitioning "
                             f"prefix, whose trie needs the records in memory): append with {instead}")
    if meta.get("universe") is None:
        raise ParameterError(f"{what} needs a stream with a declared universe ({path} was made without --universe; "
                             f"deriving it from the batch would reveal which items occur): append with {instead}")


def _read_batch(batch: str | os.PathLike[str], universe: Universe | None, engine: str, master: str | None
                ) -> tuple[Any, Universe]:  # a TransactionDB, or another engine's TransactionData
    """The batch on ``engine`` (FIMI text or Parquet; in memory as a TransactionDB); the universe (derived if
    None)."""
    if universe is not None:
        return unwrap(open_transactions(batch, universe, engine=engine, master=master)), universe
    assert in_memory(engine)  # check_engine: only an in-memory engine derives a universe
    if is_parquet(batch):
        raise ParameterError("a Parquet batch needs a stream with a declared universe (stream init --universe)")
    # None: the stream was opened with `stream init --universe derive` (the opt-in; the first batch fixes it)
    return read_transactions(batch, universe, derive=True)


def _refuse_when_all_appends_made(path: Path) -> None:
    """After U + 1 appends (paper accounting) every further append is refused, with the state unchanged."""
    status = stream_status(path)
    if status.max_appends is not None and status.appends >= status.max_appends:
        spent = ("" if status.accounting == "parallel" else f" and epsilon = {status.epsilon:g} is spent")
        raise BudgetExceededError(
            f"{path}: all {status.appends} appends (initial dataset + U = {status.updates} updates) are made"
            f"{spent}; append refused, state unchanged")


def _append_noise(rng: dict, n: int, level_wise: bool) -> tuple[NoiseSource, dict[str, object]]:
    """Append n's noise source (seeded mode: a per-append seed from the stream's, recorded in the ledger row)."""
    rng_row: dict[str, object]
    noise: NoiseSource
    if rng["mode"] == "seeded":
        seed_n = append_seed(int(rng["seed"]), n)
        noise = SeededNoise(seed_n)
        rng_row = {"mode": "seeded", "seed": seed_n}
    else:
        noise, rng_row = SecureNoise(), {"mode": "secure"}
    if level_wise:
        rng_row["loop"] = "level-wise"  # the order of the draws (the engine itself is not recorded)
    return noise, rng_row


def _save_tbp_delta(conn: sqlite3.Connection, tree: TBPTree, delta, n: int) -> None:
    """Append n's changes to the stored TBP-tree: its new nodes, the nodes it touched, its noisy counts."""
    new = set(delta.new_nodes)
    touched = {nid for nid, _, _ in delta.counts} | set(delta.expanded)
    root = {0} if n == 0 else set()
    conn.executemany(
        "INSERT INTO nodes VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [(nd.id, nd.parent, nd.mask, " ".join(map(str, nd.cut)), int(nd.leaf), nd.created, nd.expand,
          nd.psum, nd.n, nd.inv_alpha, tree.node_class(nd))
         for nd in (tree.nodes[i] for i in sorted(new | root))])
    conn.executemany(
        "UPDATE nodes SET expand = ?, psum = ?, n = ?, inv_alpha = ?, class = ? WHERE id = ?",
        [(nd.expand, nd.psum, nd.n, nd.inv_alpha, tree.node_class(nd), nd.id)
         for nd in (tree.nodes[i] for i in sorted(touched - new - root))])
    conn.executemany("INSERT INTO counts VALUES (?, ?, ?, ?)",
                     sorted((nid, n, nc, alpha) for nid, nc, alpha in delta.counts))


@records_run_start
def append_batch(path: str | os.PathLike, batch: str | os.PathLike, output: str | os.PathLike, *,
                 wait: float = DEFAULT_WAIT, force: bool = False, engine: str = "local", master: str | None = None,
                 level_wise: bool = False) -> dict[str, object]:
    """Append one batch (the first is the initial dataset): one committed transaction, then the release file.

    ``engine="spark"`` reads the batch on Spark (``master``) and runs the level-wise loop (always); the local
    engine runs the one partition loop unless ``level_wise``. The level-wise loop gives the same seeded state
    and release on either engine; its ledger row says ``"loop": "level-wise"``.

    Raises :class:`BudgetExceededError` (nothing changed) after U + 1 appends,
    :class:`InputError` for a bad batch (nothing changed), :class:`StateLockedError`
    when another append holds the lock longer than ``wait`` seconds, :class:`ParameterError` for an engine or
    loop the stream cannot take (:func:`check_engine`).
    """
    path = Path(path)
    level_wise = bool(level_wise) or not in_memory(engine)
    out = _check_output(output, path, batch, force)
    check_engine(path, engine, level_wise)
    ident = stream_identity(path)
    conn = _open(path, wait)
    db = None
    with closing(conn):
        meta = _meta(conn)
        _refuse_when_all_appends_made(path)
        universe = _universe(meta)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", PrivacyLeakWarning)
            db, universe = _read_batch(batch, universe, engine, master)
        derived = meta.get("universe") is None
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise StateLockedError(f"{path}: another append holds the state ({exc}); nothing changed") from None
        try:
            meta = _meta(conn)  # re-read under the lock: another appender may have committed meanwhile
            if derived and meta.get("universe") is not None:
                raise InputError(f"{path}: the universe was fixed by a concurrent first append; retry")
            if derived:
                meta["n_items"] = universe.size
            prefix = _partitioning(meta) == "prefix"
            tree = _prefix_from(conn, meta) if prefix else _tree_from(conn, meta)
            n = tree.appends
            noise, rng_row = _append_noise(meta["rng"], n, level_wise)
            if prefix:
                info = tree.append(db, noise)  # BudgetExceededError before any noise
                _save_prefix(conn, tree, first=n == 0)
                conn.executemany("INSERT INTO counts VALUES (?, ?, ?, ?)",
                                 sorted((nid, n, nc, e) for nid, nc, e in info["counts"]))
                eps_append = float(info["epsilon"])
            else:
                assert isinstance(tree, TBPTree)
                delta = tree.append(db, noise, seed=rng_row.get("seed"),  # BudgetExceededError before any noise
                                    level_wise=level_wise)
                eps_append = delta.epsilon
                _save_tbp_delta(conn, tree, delta, n)
            conn.execute("INSERT INTO ledger VALUES (?, ?, ?)", (n, eps_append, json.dumps(rng_row)))
            if derived:
                conn.executemany("UPDATE meta SET value = ? WHERE key = ?",
                                 [(json.dumps(universe.size), "n_items"),
                                  (json.dumps(_universe_json(universe)), "universe")])
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        finally:
            if db is not None and hasattr(db, "close"):
                db.close()  # a Spark batch's cached DataFrame
    release = stream_release(tree.release(universe, _noise_info(meta)), ident)
    try:
        paths = release.write(out)
    except (OSError, DPReleaseError) as exc:
        detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise InputError(f"append {n + 1} committed (epsilon spent), but writing {out} failed ({detail}); "
                         f"re-emit it with `dprelease stream release {path} -o RELEASE`") from None
    return {"append": n, "epsilon": eps_append, "epsilon_spent": tree.epsilon_spent, "appends": tree.appends,
            "updates": tree.updates, "accounting": tree.accounting, "partitioning": _partitioning(meta),
            "privacy_unit": tree.privacy_unit,
            "privacy_unit_epsilon": tree.privacy_unit_epsilon, "release": str(paths.body), "manifest": str(paths.manifest),
            "released_records": release.n_records, "warnings": [str(w.message) for w in caught]}


@records_run_start
def reemit(path: str | os.PathLike, output: str | os.PathLike, *, force: bool = False) -> dict[str, object]:
    """Write the latest release again from the state; spends nothing."""
    path = Path(path)
    out = _check_output(output, path, force=force)
    tree, meta = load_tree(path)
    if tree is None or tree.appends == 0:
        raise InputError(f"{path}: nothing released yet (no append was made)")
    universe = _universe(meta)
    release = stream_release(tree.release(universe, _noise_info(meta)), stream_identity(path))
    paths = release.write(out)
    return {"appends": tree.appends, "epsilon_spent": tree.epsilon_spent, "release": str(paths.body),
            "manifest": str(paths.manifest), "released_records": release.n_records}
