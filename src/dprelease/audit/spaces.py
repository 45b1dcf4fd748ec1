"""Search spaces by input kind: FIMI files, CSV tables, edge lists, stream batches, in-memory record lists.

Each helper returns a :class:`~dprelease.audit.search.SearchSpace` whose pairs are file texts read by the
command's reader (:mod:`dprelease.audit.files`); the algorithm's module supplies the release and its events.
The moves toward the extremes are the ones the audit's hand-written pairs taught: a record touching every
item, copies of a record that put its cell's count at a threshold, the first record of its class in a pure
region, a value at a bound, a node whose friends are leaves (they vanish from the edge list with it), one
person in several batches.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from .core import AuditCase
from .files import (
    UNIT_BATCH_LINE,
    UNIT_EDGES,
    UNIT_LINE,
    UNIT_NODES,
    EdgeFiles,
    UNIT_PERSON,
    UNIT_ROW,
    csv_text,
    edge_text,
    file_case,
    fimi_text,
    table_reader,
    transactions_reader,
)
from .search import Pair, SearchSpace

__all__ = ["list_space", "stream_space", "table_space", "transaction_space", "graph_space"]

Events = Callable[[Any], Iterable[str]]


def _pick(rng: np.random.Generator, n: int) -> int:
    return int(rng.integers(n)) if n > 0 else 0


# --- FIMI transaction files ------------------------------------------------------------------------------------


def _item_weights(n: int) -> np.ndarray:
    w = 1.0 / np.arange(1, n + 1, dtype=np.float64)  # skewed popularity: counts of the first items reach thresholds
    return w / w.sum()


def _random_record(rng: np.random.Generator, n: int, mean_size: float = 2.0) -> tuple[int, ...]:
    size = int(min(n, rng.geometric(1.0 / mean_size)))
    return tuple(sorted(rng.choice(n, size=size, replace=False, p=_item_weights(n)).tolist()))


def _toggle(rng: np.random.Generator, rec: tuple[int, ...], n: int) -> tuple[int, ...]:
    s = set(rec)
    i = int(rng.integers(n))
    s.symmetric_difference_update({i})
    if not s:
        s.add(int(rng.integers(n)))
    return tuple(sorted(s))


def _tx_wide(rng, pair: Pair, cfg: dict) -> Pair:
    """D' adds a record touching every item."""
    return replace(pair, extra=(tuple(range(cfg["n_items"])),))


def _tx_many(rng, pair: Pair, cfg: dict) -> Pair:
    """D' adds a record touching at least half of the items."""
    n = cfg["n_items"]
    size = int(rng.integers((n + 1) // 2, n + 1))
    return replace(pair, extra=(tuple(sorted(rng.choice(n, size=size, replace=False).tolist())),))


def _tx_single(rng, pair: Pair, cfg: dict) -> Pair:
    return replace(pair, extra=((int(rng.choice(cfg["n_items"], p=_item_weights(cfg["n_items"]))),),))


def _tx_like_base(rng, pair: Pair, cfg: dict) -> Pair:
    """D' adds one more copy of a record of D (its cell's count moves by one, e.g. across a threshold)."""
    if not pair.base:
        return pair
    rec = pair.base[_pick(rng, len(pair.base))]
    if rng.random() < 0.4:
        rec = tuple(sorted(set(rec) | {int(rng.integers(cfg["n_items"]))}))
    return replace(pair, extra=(rec,))


def _tx_wide_base(rng, pair: Pair, cfg: dict) -> Pair:
    """Copies of a wide record in D (supports of every item and of long itemsets rise together)."""
    base = list(pair.base)
    rec = tuple(range(cfg["n_items"])) if rng.random() < 0.5 else _tx_many(rng, pair, cfg).extra[0]
    for _ in range(int(rng.choice([1, 2, 4, 8]))):
        base.insert(_pick(rng, len(base) + 1), rec)
    return replace(pair, base=tuple(base))


TRANSACTION_EXTREMES = (_tx_wide, _tx_many, _tx_single, _tx_like_base, _tx_wide_base)


def transaction_space(algorithm: str, configs: Sequence[dict],
                      release: Callable[[Any, Any, Any, dict], Any],
                      events: Callable[[list[tuple[int, ...]], list[tuple[int, ...]], dict], Events], *,
                      claim: float, name: str = "", max_base: int = 60, mean_size: float = 2.0,
                      extremes: Sequence[Callable] = ()) -> SearchSpace:
    """FIMI files over the declared universe ``1..cfg["n_items"]``; the neighbour is one line.

    ``release(db, universe, noise, cfg)``; ``events(records_d, records_d_prime, cfg)`` builds the event map of
    a pair (it may use the true counts to place its thresholds).
    """
    readers: dict[int, Any] = {}

    def reader(n: int):
        if n not in readers:
            readers[n] = transactions_reader(f"1..{n}")
        return readers[n]

    def build(pair: Pair, cfg: dict, case_name: str) -> AuditCase:
        n = cfg["n_items"]
        fit = lambda recs: [r for r in (tuple(i for i in rec if i < n) for rec in recs) if r]  # noqa: E731
        d, dp = fit(pair.d_units()), fit(pair.d_prime_units())
        if not d or len(dp) != len(d) + len(pair.extra):  # the universe of this config dropped a record
            raise ValueError("the pair does not fit the configuration's universe")
        rel = lambda read, noise: release(read[0], read[1], noise, cfg)  # noqa: E731
        return file_case(case_name, fimi_text(d), fimi_text(dp), claim, reader(cfg["n_items"]), rel,
                         events(d, dp, cfg), unit=UNIT_LINE,
                         description=f"{len(d)} lines; D' adds one line ({_params(cfg)})")

    return SearchSpace(
        algorithm, UNIT_LINE, list(configs),
        random_unit=lambda rng, cfg: _random_record(rng, cfg["n_items"], mean_size),
        mutate_unit=lambda rng, rec, cfg: _toggle(rng, rec, cfg["n_items"]),
        build=build, extremes=tuple(TRANSACTION_EXTREMES) + tuple(extremes), max_base=max_base,
        name=name or algorithm)


def _params(cfg: dict) -> str:
    return ", ".join(f"{k} = {v}" for k, v in cfg.items() if not k.startswith("_"))


def supports(records: Iterable[Iterable[int]]) -> dict[tuple[int, ...], int]:
    """How many records hold exactly each itemset (the cells of a set-valued release)."""
    out: dict[tuple[int, ...], int] = {}
    for r in records:
        key = tuple(sorted(set(r)))
        out[key] = out.get(key, 0) + 1
    return out


# --- CSV tables ------------------------------------------------------------------------------------------------


def _domain(schema: Any) -> list[tuple[str, int, int]]:
    """Per predictor: (kind, lo, hi) of its integer values / leaf codes; then the class."""
    out = []
    for a in schema.attributes:
        if a.kind == "numeric":
            out.append(("numeric", int(np.ceil(a.lo)), int(np.ceil(a.hi))))
        else:
            out.append(("categorical", 0, a.taxonomy.n_leaves))
    out.append(("class", 0, len(schema.class_attribute.values)))
    return out


def _random_row(rng: np.random.Generator, schema: Any) -> tuple[int, ...]:
    return tuple(int(rng.integers(lo, hi)) for _, lo, hi in _domain(schema))


def _change_field(rng: np.random.Generator, row: tuple[int, ...], schema: Any) -> tuple[int, ...]:
    dom = _domain(schema)
    j = _pick(rng, len(dom))
    _, lo, hi = dom[j]
    out = list(row)
    out[j] = int(rng.integers(lo, hi))
    return tuple(out)


def _row_at_bound(rng, pair: Pair, cfg: dict) -> Pair:
    """D' adds a row with a numeric value at a bound of its domain."""
    schema = cfg["_schema"]
    dom = _domain(schema)
    row = list(pair.extra[0]) if pair.extra else list(_random_row(rng, schema))
    numeric = [j for j, (kind, _, _) in enumerate(dom) if kind == "numeric"]
    if numeric:
        j = numeric[_pick(rng, len(numeric))]
        row[j] = dom[j][1] if rng.random() < 0.5 else dom[j][2] - 1
    return replace(pair, extra=(tuple(row),))


def _row_flip_class(rng, pair: Pair, cfg: dict) -> Pair:
    """D' adds a copy of a row of D with another class: the first of its class where D is pure."""
    if not pair.base:
        return pair
    row = list(pair.base[_pick(rng, len(pair.base))])
    k = len(cfg["_schema"].class_attribute.values)
    row[-1] = (row[-1] + 1 + _pick(rng, k - 1)) % k
    return replace(pair, extra=(tuple(row),))


def _row_like_base(rng, pair: Pair, cfg: dict) -> Pair:
    if not pair.base:
        return pair
    return replace(pair, extra=(pair.base[_pick(rng, len(pair.base))],))


def _rows_pure(rng, pair: Pair, cfg: dict) -> Pair:
    """Make a region of D pure: every row sharing a value with a chosen row takes its class."""
    if not pair.base:
        return pair
    ref = pair.base[_pick(rng, len(pair.base))]
    j = _pick(rng, len(ref) - 1)
    base = tuple(tuple(r[:-1]) + (ref[-1],) if r[j] == ref[j] else r for r in pair.base)
    return replace(pair, base=base)


def _rows_empty_cell(rng, pair: Pair, cfg: dict) -> Pair:
    """Empty a cell of D: remove every row with the chosen row's value of one attribute (D' may refill it)."""
    if len(pair.base) < 3:
        return pair
    ref = pair.base[_pick(rng, len(pair.base))]
    j = _pick(rng, len(ref) - 1)
    base = tuple(r for r in pair.base if r[j] != ref[j])
    return replace(pair, base=base) if len(base) >= 2 else pair


TABLE_EXTREMES = (_row_at_bound, _row_flip_class, _row_like_base, _rows_pure, _rows_empty_cell)


def table_space(algorithm: str, schema: Any, configs: Sequence[dict], release: Callable[[Any, Any, dict], Any],
                events: Callable[[list, list, dict], Events], *, claim: float, name: str = "",
                max_base: int = 60, min_base: int = 4) -> SearchSpace:
    """CSV tables of ``schema`` (integer numeric values, categorical leaves, class); the neighbour is one row.

    ``release(table, noise, cfg)`` gets what :func:`dprelease.data.table.read_table` read.
    """
    reader = table_reader(schema)
    configs = [{**c, "_schema": schema} for c in configs]

    def build(pair: Pair, cfg: dict, case_name: str) -> AuditCase:
        d, dp = list(pair.d_units()), list(pair.d_prime_units())
        return file_case(case_name, csv_text(schema, d), csv_text(schema, dp), claim, reader,
                         lambda table, noise: release(table, noise, cfg), events(d, dp, cfg), unit=UNIT_ROW,
                         description=f"{len(d)} rows; D' adds one row ({_params(cfg)})")

    return SearchSpace(
        algorithm, UNIT_ROW, configs,
        random_unit=lambda rng, cfg: _random_row(rng, schema),
        mutate_unit=lambda rng, row, cfg: _change_field(rng, row, schema),
        build=build, extremes=TABLE_EXTREMES, max_base=max_base, min_base=min_base, name=name or algorithm)


# --- edge lists (node-DP) --------------------------------------------------------------------------------------

NEW_NODE = 100  # the node D' adds
FRIEND_LEAF = 200  # its friends that are in no other edge: 200, 201, ...
BASE_LEAF = 300  # leaves hung on nodes of D: 300, 301, ...


def _random_edge(rng: np.random.Generator, cfg: dict) -> tuple[int, int]:
    n = cfg.get("n_nodes", 10)
    u, v = rng.choice(np.arange(1, n + 1), size=2, replace=False).tolist()
    return (int(min(u, v)), int(max(u, v)))


def _base_nodes(base: tuple) -> list[int]:
    return sorted({int(x) for e in base for x in e})


def _friends(rng: np.random.Generator, base: tuple, k: int, leaf_share: float) -> tuple:
    nodes = _base_nodes(base)
    out, leaf = [], FRIEND_LEAF
    for _ in range(k):
        if nodes and rng.random() >= leaf_share:
            out.append(int(nodes[_pick(rng, len(nodes))]))
        else:
            out.append(leaf)
            leaf += 1
    return tuple((NEW_NODE, f) for f in sorted(set(out)))


def _graph_extra(rng: np.random.Generator, base: tuple, cfg: dict) -> tuple:
    k = int(rng.integers(1, cfg["theta"] + 3))
    return _friends(rng, base, k, leaf_share=float(rng.choice([0.0, 0.3, 1.0])))


def _g_leaf_friend(rng, pair: Pair, cfg: dict) -> Pair:
    """The added node gets one more friend that is a leaf (it vanishes from the file without the node)."""
    leaves = [f for _, f in pair.extra if f >= FRIEND_LEAF]
    nxt = max(leaves, default=FRIEND_LEAF - 1) + 1
    return replace(pair, extra=pair.extra + ((NEW_NODE, nxt),))


def _g_all_leaves(rng, pair: Pair, cfg: dict) -> Pair:
    """Every friend of the added node is a leaf; as many as theta, theta + 1, or 2 theta + c."""
    k = int(rng.choice([max(1, len(pair.extra)), cfg["theta"], cfg["theta"] + 1, 2 * cfg["theta"] + 2,
                        4 * cfg["theta"]]))
    return replace(pair, extra=tuple((NEW_NODE, FRIEND_LEAF + i) for i in range(k)))


def _g_theta_friends(rng, pair: Pair, cfg: dict) -> Pair:
    """The added node has exactly theta (or theta + 1) friends in D."""
    k = cfg["theta"] + int(rng.integers(0, 2))
    return replace(pair, extra=_friends(rng, pair.base, k, leaf_share=0.0))


def _g_drop_friend(rng, pair: Pair, cfg: dict) -> Pair:
    if len(pair.extra) <= 1:
        return pair
    extra = list(pair.extra)
    extra.pop(_pick(rng, len(extra)))
    return replace(pair, extra=tuple(extra))


def _g_base_leaves(rng, pair: Pair, cfg: dict) -> Pair:
    """Hang leaves on a node of D (a node whose friends are leaves), or make the added node's friend such a node."""
    nodes = _base_nodes(pair.base)
    if not nodes:
        return pair
    v = int(nodes[_pick(rng, len(nodes))])
    used = [x for e in pair.base for x in e if x >= BASE_LEAF]
    nxt = max(used, default=BASE_LEAF - 1) + 1
    k = int(rng.integers(1, 2 * cfg["theta"] + 2))
    base = pair.base + tuple((v, nxt + i) for i in range(k))
    extra = pair.extra
    if rng.random() < 0.5:
        extra = tuple(sorted(set(extra) | {(NEW_NODE, v)}))
    return replace(pair, base=base, extra=extra)


def _g_mutate_extra(rng, pair: Pair, cfg: dict) -> Pair:
    """Swap one friend of the added node for another node of D or a fresh leaf."""
    if not pair.extra:
        return pair
    extra = list(pair.extra)
    i = _pick(rng, len(extra))
    new = _friends(rng, pair.base, 1, leaf_share=0.3)
    if new:
        f = new[0][1]
        if f >= FRIEND_LEAF:
            f = max([x for _, x in extra if x >= FRIEND_LEAF], default=FRIEND_LEAF - 1) + 1
        extra[i] = (NEW_NODE, f)
    return replace(pair, extra=tuple(sorted(set(extra))))


GRAPH_EXTREMES = (_g_leaf_friend, _g_all_leaves, _g_theta_friends, _g_drop_friend, _g_base_leaves, _g_mutate_extra)


def graph_space(algorithm: str, configs: Sequence[dict], release: Callable[[Any, Any, dict], Any],
                events: Callable[[list, list, dict], Events], *, claim: float, name: str = "",
                max_base: int = 40) -> SearchSpace:
    """Edge lists (and, for configurations with ``"nodes": True``, a node list beside them); the neighbour is one
    node with all its incident edges, as the files express it: with an edge list alone a friend of the node that
    is in no other edge is not in D's file at all; with a node list every node of the pair but the added one is
    declared in both (the friends stay, isolated in D).

    Nodes of D are 1..``cfg["n_nodes"]`` (plus leaves 300+ the moves hang on them); the node D' adds is 100,
    its leaf friends 200+. D and D' are :class:`~dprelease.audit.files.EdgeFiles`; ``release(files, noise,
    cfg)`` reads them (the degrees space reads them with the command's reader).
    """
    def build(pair: Pair, cfg: dict, case_name: str) -> AuditCase:
        d, dp = list(pair.d_units()), list(pair.d_prime_units())
        if not d:
            raise ValueError("an edge list needs an edge")
        if cfg.get("nodes"):
            ids = sorted(set(range(1, cfg.get("n_nodes", 10) + 1)) | {int(x) for e in dp for x in e})
            files_d = EdgeFiles(edge_text(d), "".join(f"{i}\n" for i in ids if i != NEW_NODE))
            files_dp = EdgeFiles(edge_text(dp), "".join(f"{i}\n" for i in ids))
            unit = UNIT_NODES
        else:
            files_d, files_dp, unit = EdgeFiles(edge_text(d)), EdgeFiles(edge_text(dp)), UNIT_EDGES
        return AuditCase(case_name, files_d, files_dp, float(claim), lambda files, noise: release(files, noise, cfg),
                         events(d, dp, cfg), unit=unit,
                         description=f"{len(d)} edges; D' adds node {NEW_NODE} with {len(pair.extra)} edges "
                                     f"({_params(cfg)})")

    def mutate_edge(rng, edge, cfg):
        u, v = edge
        w = _random_edge(rng, cfg)[0]
        a, b = (w, v) if rng.random() < 0.5 else (u, w)
        return (min(a, b), max(a, b)) if a != b else edge

    return SearchSpace(
        algorithm, UNIT_EDGES, list(configs), random_unit=_random_edge, mutate_unit=mutate_edge, build=build,
        random_extra=_graph_extra, extremes=GRAPH_EXTREMES,
        generic=("add", "remove", "mutate_base", "new_extra", "move", "config"), max_base=max_base,
        name=name or algorithm)


# --- stream batches --------------------------------------------------------------------------------------------


def _batches(units: Iterable[tuple[int, tuple[int, ...]]], n_batches: int) -> list[list[tuple[int, ...]]]:
    out: list[list[tuple[int, ...]]] = [[] for _ in range(n_batches)]
    for j, rec in units:
        out[int(j)].append(rec)
    return out


def _s_person(rng, pair: Pair, cfg: dict) -> Pair:
    """One person's records in several batches (a person-level neighbour; at most ``_max_batches`` of them)."""
    if not cfg.get("_person"):
        return pair
    rec = pair.extra[0][1] if pair.extra else _random_record(rng, cfg["n_items"])
    most = min(cfg["batches"], int(cfg.get("_max_batches") or cfg["batches"]))
    if most < 2:
        return pair
    k = int(rng.integers(2, most + 1))
    which = sorted(rng.choice(cfg["batches"], size=k, replace=False).tolist())
    return replace(pair, extra=tuple((int(j), rec) for j in which))


def _s_wide(rng, pair: Pair, cfg: dict) -> Pair:
    j = pair.extra[0][0] if pair.extra else _pick(rng, cfg["batches"])
    return replace(pair, extra=((j, tuple(range(cfg["n_items"]))),))


def _s_like_base(rng, pair: Pair, cfg: dict) -> Pair:
    if not pair.base:
        return pair
    j, rec = pair.base[_pick(rng, len(pair.base))]
    if rng.random() < 0.5:
        j = _pick(rng, cfg["batches"])
    return replace(pair, extra=((j, rec),))


def _s_batch(rng, pair: Pair, cfg: dict) -> Pair:
    """Move the added record(s) to another batch."""
    shift = int(rng.integers(1, cfg["batches"]))
    return replace(pair, extra=tuple(((j + shift) % cfg["batches"], rec) for j, rec in pair.extra))


def stream_space(algorithm: str, configs: Sequence[dict], release: Callable[[list, Any, dict], Any],
                 events: Callable[[list, list, dict], Events], *, claim_per_batch: float, name: str = "",
                 max_base: int = 60) -> SearchSpace:
    """A stream's batch files (``cfg["batches"]`` of them, universe ``1..cfg["n_items"]``); the neighbour is one
    line of one batch, or (configs with ``_person``) one person's lines across batches. The claim of a pair is
    ``claim_per_batch`` times the number of lines it adds (one line in one batch costs one append's epsilon; a
    person's lines, one per batch, cost that many appends'; several lines in one batch, that many times one, by
    group privacy). A configuration without ``_person`` adds one line only; with ``_max_batches`` K a person's
    lines are in at most K batches (what ``--max-batches-per-person K`` declares). ``release(reads, noise, cfg)``
    gets each batch file as :func:`dprelease.data.io.read_transactions` read it."""
    readers: dict[int, Any] = {}

    def reader(n: int):
        if n not in readers:
            readers[n] = transactions_reader(f"1..{n}")
        return readers[n]

    def build(pair: Pair, cfg: dict, case_name: str) -> AuditCase:
        d = _batches(pair.d_units(), cfg["batches"])
        dp = _batches(pair.d_prime_units(), cfg["batches"])
        if any(not b for b in d):
            raise ValueError("every batch file needs a line")
        touched = len({j for j, _ in pair.extra})
        if len(pair.extra) > 1 and not cfg.get("_person"):
            raise ValueError("this configuration's privacy unit is one line")
        if touched > int(cfg.get("_max_batches") or cfg["batches"]):
            raise ValueError("a person in more batches than the declaration allows")
        unit = UNIT_PERSON if len(pair.extra) > 1 else UNIT_BATCH_LINE
        return file_case(case_name, tuple(fimi_text(b) for b in d), tuple(fimi_text(b) for b in dp),
                         claim_per_batch * len(pair.extra), reader(cfg["n_items"]),
                         lambda reads, noise: release(reads, noise, cfg), events(d, dp, cfg), unit=unit,
                         description=f"{cfg['batches']} batches of {', '.join(str(len(b)) for b in d)} lines; D' "
                                     f"adds {len(pair.extra)} line(s) in {touched} batch(es) ({_params(cfg)})")

    def random_unit(rng, cfg):
        return (_pick(rng, cfg["batches"]), _random_record(rng, cfg["n_items"]))

    def mutate_unit(rng, unit, cfg):
        j, rec = unit
        if rng.random() < 0.3:
            return (_pick(rng, cfg["batches"]), rec)
        return (j, _toggle(rng, rec, cfg["n_items"]))

    return SearchSpace(algorithm, UNIT_BATCH_LINE, list(configs), random_unit=random_unit, mutate_unit=mutate_unit,
                       build=build, extremes=(_s_person, _s_wide, _s_like_base, _s_batch), max_base=max_base,
                       min_base=3, name=name or algorithm)


# --- in-memory record lists (the mechanisms: no file) -----------------------------------------------------------


def list_space(algorithm: str, cases: Sequence[AuditCase], *, max_base: int = 40) -> SearchSpace | None:
    """A space around built-in cases whose D is a list of records and D' = D + one record: each case is a
    configuration (its run and events); units are drawn from the values its pair holds and their neighbours
    (for whole numbers). The mechanisms take a statistic of a list, not a file, so this is their neighbour."""
    usable = [c for c in cases if not c.skip and not c.secure and isinstance(c.d, list)
              and isinstance(c.d_prime, list) and len(c.d_prime) == len(c.d) + 1 and c.d_prime[:len(c.d)] == c.d]
    if not usable:
        return None
    configs = []
    for c in usable:
        values = sorted({v for v in c.d + c.d_prime}, key=repr)
        configs.append({"case": c.name, "_case": c, "_values": values})

    def random_unit(rng, cfg):
        vals = cfg["_values"]
        v = vals[_pick(rng, len(vals))]
        if isinstance(v, (int, np.integer)) and not isinstance(v, bool) and rng.random() < 0.3:
            lo = min(x for x in vals if isinstance(x, (int, np.integer)))
            hi = max(x for x in vals if isinstance(x, (int, np.integer)))
            v = int(min(hi, max(lo, int(v) + int(rng.choice([-1, 1])))))
        return v

    def build(pair: Pair, cfg: dict, case_name: str) -> AuditCase:
        c = cfg["_case"]
        return AuditCase(case_name, list(pair.d_units()), list(pair.d_prime_units()), c.epsilon, c.run, c.events,
                         description=f"around {c.name}: {len(pair.base)} records; D' adds {pair.extra[0]!r}",
                         unit="one record of the statistic's input")

    return SearchSpace(algorithm, "one record of the statistic's input", configs, random_unit=random_unit,
                        mutate_unit=lambda rng, v, cfg: random_unit(rng, cfg), build=build, max_base=max_base,
                        min_base=0, name=algorithm)
