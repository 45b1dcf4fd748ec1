"""The search for the worst neighbouring pair (``dprelease audit ALGORITHM --search``).

Hand-written pairs stop where their author's picture of a neighbour stops. The search starts from small random
datasets and mutates them toward the extremes, keeping the pairs whose estimated privacy loss grows; then it
confirms the worst pair it found on fresh runs.

* **Space.** Each algorithm registers a :class:`SearchSpace` (beside its cases): the public parameters it may
  run with (``configs``), how to draw and mutate one *unit* (a line of a FIMI file, a row of a CSV table, an
  edge, a record in one batch), moves toward the extremes (a record touching every item, a copy of a record
  that puts a count at a threshold, a row that is the first of its class in a pure cell, a node whose friends
  are leaves, ...), and ``build``: the :class:`~dprelease.audit.AuditCase` of a pair, whose D and D' are file
  texts read by the command's reader (:mod:`dprelease.audit.files`). A pair is a dataset D (``base``, a tuple
  of units) and the units D' adds (``extra``: one line or row; a node's edges; a person's lines) at a
  position of the file.
* **Estimate.** A pair is run ``n`` times on each side; its *estimate* is the largest one-sided 95 %
  Clopper-Pearson lower bound on ln(P[E|D]/P[E|D']) over every event it shows, both directions and
  complements, minus the pair's claimed epsilon. The estimate is biased upward (a maximum over many events);
  it only ranks pairs.
* **Evolution.** A small population (8 pairs, the first drawn at random); each step either draws a fresh
  random pair (1 in 10) or mutates a parent chosen by tournament (1 to 4 moves), estimates the child and lets
  it replace the population's worst when its estimate is higher. Every fourth step re-runs the best pair with
  another batch of runs (counts pooled), so that a lucky estimate does not stay on top. The search stops at
  ``search_share`` of the budget (then the three leaders get at least four estimates' worth of runs, within
  a tenth of the search time more), or early when the best pair's pooled bound (at a strict 0.1 % level, at
  least 400 runs a side) exceeds its claim by 0.3.
* **Confirmation.** The best pair gets fresh runs (seeds never used by the search) in
  :func:`~dprelease.audit.audit_case`, testing the 8 candidate events with the largest bound on the search's
  runs of that pair at the confirmation's level, every fresh run testing them (none spent on choosing): a Bonferroni-valid bound at 99 %, as in the
  built-in audit, with its power (docs/audit.md, "Power").
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import sys
import time
import zlib
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..errors import ParameterError
from .core import (
    DEFAULT_ALPHA,
    DEFAULT_CANDIDATES,
    AuditCase,
    CaseResult,
    _finite,
    _load_all,
    audit_case,
    count_events,
    rank_candidates,
)
from .stats import expected_log_ratio_bound, log_ratio_lower_bound

__all__ = [
    "DEFAULT_BUDGET",
    "Pair",
    "SearchResult",
    "SearchSpace",
    "register_space",
    "search",
    "spaces_for",
]

DEFAULT_BUDGET = 90.0  # seconds per algorithm
SEARCH_LEVEL = 0.05  # one-sided level of the estimates (ranking only)
STRICT_LEVEL = 0.001  # early stop: the best pair's pooled bound at this level
EARLY_MARGIN = 0.3  # ... exceeds its claim by this much
MIN_CONFIRM_RUNS = 2_000
MAX_CONFIRM_RUNS = 20_000
POPULATION = 8

Unit = Any


@dataclass(frozen=True)
class Pair:
    """D = ``base``; D' = ``base`` with ``extra`` inserted at ``position``; ``config`` indexes the space's
    public parameters."""

    config: int
    base: tuple
    extra: tuple
    position: int

    def d_units(self) -> tuple:
        return self.base

    def d_prime_units(self) -> tuple:
        p = min(max(0, self.position), len(self.base))
        return self.base[:p] + self.extra + self.base[p:]


Move = Callable[[np.random.Generator, Pair, dict], Pair]


@dataclass
class SearchSpace:
    """Where the search looks for an algorithm's worst pair (see the module docstring).

    ``random_unit(rng, config)``: a fresh unit; ``mutate_unit(rng, unit, config)``: a unit changed a little;
    ``build(pair, config, name)``: the :class:`AuditCase` (file texts, reader, release, events; its epsilon
    is the pair's claim); ``random_extra(rng, base, config)``: the units D' adds (default: one random unit);
    ``extremes``: moves toward the extremes; ``generic``: which generic moves apply (see ``_GENERIC``).
    """

    algorithm: str
    unit: str
    configs: Sequence[dict]
    random_unit: Callable[[np.random.Generator, dict], Unit]
    mutate_unit: Callable[[np.random.Generator, Unit, dict], Unit]
    build: Callable[[Pair, dict, str], AuditCase]
    random_extra: Callable[[np.random.Generator, tuple, dict], tuple] | None = None
    extremes: Sequence[Move] = ()
    generic: tuple[str, ...] = ("add", "remove", "duplicate", "drop_copies", "mutate_base", "copy_extra",
                                "mutate_extra", "new_extra", "move", "config")
    min_base: int = 1
    max_base: int = 60
    name: str = ""

    def random_pair(self, rng: np.random.Generator) -> Pair:
        c = int(rng.integers(len(self.configs)))
        cfg = self.configs[c]
        n = int(rng.integers(self.min_base, max(self.min_base, self.max_base // 3) + 1))
        base = tuple(self.random_unit(rng, cfg) for _ in range(n))
        extra = self._extra(rng, base, cfg)
        return Pair(c, base, extra, int(rng.integers(len(base) + 1)))

    def _extra(self, rng: np.random.Generator, base: tuple, cfg: dict) -> tuple:
        if self.random_extra is not None:
            return tuple(self.random_extra(rng, base, cfg))
        return (self.random_unit(rng, cfg),)


_SpaceFactory = Callable[[float], list[SearchSpace]]
_SPACES: dict[str, list[_SpaceFactory]] = {}


def register_space(algorithm: str) -> Callable[[_SpaceFactory], _SpaceFactory]:
    """Decorator: ``factory(epsilon) -> list[SearchSpace]`` is where ``dprelease audit ALGORITHM --search`` looks."""

    def deco(factory: _SpaceFactory) -> _SpaceFactory:
        factories = _SPACES.setdefault(algorithm, [])
        if factory not in factories:
            factories.append(factory)
        return factory

    return deco


def spaces_for(algorithm: str, epsilon: float) -> list[SearchSpace]:
    """The search spaces of ``algorithm`` (ParameterError for an algorithm without one)."""
    from .core import algorithms

    _load_all()
    if algorithm not in _SPACES:
        known = algorithms()
        if algorithm not in known:
            raise ParameterError(f"ALGORITHM must be one of {', '.join(known)}; got {algorithm!r}")
        raise ParameterError(f"{algorithm} has no search space (--search); its built-in cases still run without it")
    out: list[SearchSpace] = []
    for factory in _SPACES[algorithm]:
        out.extend(factory(float(epsilon)))
    return out


def searchable() -> list[str]:
    """Every algorithm with a search space."""
    _load_all()
    return sorted(_SPACES)


# --- generic moves ---------------------------------------------------------------------------------------------


def _pick(rng: np.random.Generator, n: int) -> int:
    return int(rng.integers(n)) if n > 0 else 0


def _copies(rng: np.random.Generator) -> int:
    return int(rng.choice([1, 1, 2, 3, 5, 8]))


def _move_add(space: SearchSpace, rng, pair: Pair, cfg: dict) -> Pair:
    base = list(pair.base)
    for _ in range(int(rng.integers(1, 4))):
        base.insert(_pick(rng, len(base) + 1), space.random_unit(rng, cfg))
    return replace(pair, base=tuple(base))


def _move_remove(space: SearchSpace, rng, pair: Pair, cfg: dict) -> Pair:
    base = list(pair.base)
    for _ in range(int(rng.integers(1, 4))):
        if len(base) > space.min_base:
            base.pop(_pick(rng, len(base)))
    return replace(pair, base=tuple(base))


def _move_duplicate(space: SearchSpace, rng, pair: Pair, cfg: dict) -> Pair:
    if not pair.base:
        return pair
    unit = pair.base[_pick(rng, len(pair.base))]
    base = list(pair.base)
    for _ in range(_copies(rng)):
        base.insert(_pick(rng, len(base) + 1), unit)
    return replace(pair, base=tuple(base))


def _move_drop_copies(space: SearchSpace, rng, pair: Pair, cfg: dict) -> Pair:
    """Remove copies of one unit of D (a cell's count moves down to, or below, a threshold; or empties)."""
    if not pair.base:
        return pair
    unit = pair.base[_pick(rng, len(pair.base))]
    drop = _copies(rng)
    base = []
    for u in pair.base:
        if u == unit and drop > 0:
            drop -= 1
            continue
        base.append(u)
    if len(base) < space.min_base:
        return pair
    return replace(pair, base=tuple(base))


def _move_mutate_base(space: SearchSpace, rng, pair: Pair, cfg: dict) -> Pair:
    if not pair.base:
        return pair
    base = list(pair.base)
    i = _pick(rng, len(base))
    base[i] = space.mutate_unit(rng, base[i], cfg)
    return replace(pair, base=tuple(base))


def _move_copy_extra(space: SearchSpace, rng, pair: Pair, cfg: dict) -> Pair:
    """Copies of the added unit in D: its cell's count moves up to (and past) a threshold."""
    base = list(pair.base)
    unit = pair.extra[_pick(rng, len(pair.extra))]
    for _ in range(_copies(rng)):
        base.insert(_pick(rng, len(base) + 1), unit)
    return replace(pair, base=tuple(base))


def _move_mutate_extra(space: SearchSpace, rng, pair: Pair, cfg: dict) -> Pair:
    extra = list(pair.extra)
    i = _pick(rng, len(extra))
    extra[i] = space.mutate_unit(rng, extra[i], cfg)
    return replace(pair, extra=tuple(extra))


def _move_new_extra(space: SearchSpace, rng, pair: Pair, cfg: dict) -> Pair:
    return replace(pair, extra=space._extra(rng, pair.base, cfg))


def _move_position(space: SearchSpace, rng, pair: Pair, cfg: dict) -> Pair:
    return replace(pair, position=int(rng.integers(len(pair.base) + 1)))


def _move_config(space: SearchSpace, rng, pair: Pair, cfg: dict) -> Pair:
    return replace(pair, config=int(rng.integers(len(space.configs))))


_GENERIC: dict[str, Callable[[SearchSpace, np.random.Generator, Pair, dict], Pair]] = {
    "add": _move_add, "remove": _move_remove, "duplicate": _move_duplicate, "drop_copies": _move_drop_copies,
    "mutate_base": _move_mutate_base, "copy_extra": _move_copy_extra, "mutate_extra": _move_mutate_extra,
    "new_extra": _move_new_extra, "move": _move_position, "config": _move_config,
}


def mutate(space: SearchSpace, rng: np.random.Generator, pair: Pair) -> Pair:
    """One child of ``pair``: 1 to 4 moves, generic or toward the extremes (half of the moves when the space
    has extremes), the base kept within ``space.max_base`` units."""
    moves = [name for name in space.generic if name in _GENERIC and (name != "config" or len(space.configs) > 1)]
    n_moves = 1 + min(3, int(rng.geometric(0.55)) - 1)
    child = pair
    for _ in range(n_moves):
        cfg = space.configs[child.config]
        if space.extremes and rng.random() < 0.5:
            child = space.extremes[_pick(rng, len(space.extremes))](rng, child, cfg)
        elif moves:
            child = _GENERIC[moves[_pick(rng, len(moves))]](space, rng, child, cfg)
    if len(child.base) > space.max_base:
        keep = np.sort(rng.choice(len(child.base), size=space.max_base, replace=False))
        child = replace(child, base=tuple(child.base[i] for i in keep.tolist()))
    return replace(child, position=min(child.position, len(child.base)))


# --- estimates -------------------------------------------------------------------------------------------------


def best_bound(on_d: Counter[str], on_dp: Counter[str], n: int, level: float) -> tuple[float, str]:
    """The largest lower bound over every event (both directions, complements) at ``n`` runs a side."""
    names = sorted(set(on_d) | set(on_dp))
    if not names or n <= 0:
        return -math.inf, ""
    a = np.fromiter((on_d[e] for e in names), dtype=np.float64, count=len(names))
    b = np.fromiter((on_dp[e] for e in names), dtype=np.float64, count=len(names))
    best, label = -math.inf, ""
    for comp in (False, True):
        x, y = (n - a, n - b) if comp else (a, b)
        for num, den in ((x, y), (y, x)):
            lb = log_ratio_lower_bound(num, n, den, n, level)
            j = int(np.argmax(lb))
            if lb[j] > best:
                best, label = float(lb[j]), ("not " if comp else "") + names[j]
    return best, label


@dataclass
class _Entry:
    pair: Pair
    case: AuditCase
    key: str
    on_d: Counter[str] = field(default_factory=Counter)
    on_dp: Counter[str] = field(default_factory=Counter)
    n: int = 0  # runs per side so far
    seconds: float = 0.0
    estimate: float = -math.inf  # best bound at SEARCH_LEVEL minus the claim
    event: str = ""

    @property
    def claim(self) -> float:
        return float(self.case.epsilon)

    def seconds_per_run(self) -> float:
        return self.seconds / max(1, 2 * self.n)


@dataclass
class SearchResult:
    """What ``--search`` reports: the worst pair found, the search's own (biased) estimate of it, and the
    confirmation on fresh runs (its bound is the honest one)."""

    algorithm: str
    epsilon: float
    budget: float
    seed: int
    elapsed: float
    pairs: int  # pairs estimated
    search_runs: int
    space: str
    unit: str
    config: dict
    case: AuditCase | None
    estimate: float
    estimate_event: str
    confirmation: CaseResult | None
    history: list[tuple[float, float]]  # (seconds, best estimate so far) whenever the best improved
    alpha: float = DEFAULT_ALPHA
    stopped_early: bool = False

    @property
    def violation(self) -> bool:
        return bool(self.confirmation is not None and self.confirmation.violation)

    @property
    def epsilon_lower_bound(self) -> float:
        return self.confirmation.epsilon_lower_bound if self.confirmation is not None else -math.inf

    def difference(self) -> str:
        """How D' differs from D, as lines of the files (``+`` lines added, with their line numbers)."""
        if self.case is None:
            return ""
        return file_difference(self.case.d, self.case.d_prime)

    def as_json(self) -> dict[str, object]:
        conf = self.confirmation
        out: dict[str, object] = {
            "algorithm": self.algorithm, "mode": "search", "epsilon": self.epsilon, "budget": self.budget,
            "seed": self.seed, "elapsed": round(self.elapsed, 3), "pairs": self.pairs,
            "search_runs": self.search_runs, "stopped_early": self.stopped_early, "alpha": self.alpha,
            "runs": conf.runs if conf else 0,
            "epsilon_lower_bound": _finite(conf.epsilon_lower_bound) if conf else None,
            "claim": conf.epsilon if conf else None,
            "power": _finite(conf.power) if conf else None,
            "event": conf.event if conf else "", "direction": conf.direction if conf else "",
            "p_d": _finite(conf.p_d) if conf else None, "p_d_prime": _finite(conf.p_d_prime) if conf else None,
            "violation": self.violation,
            "search_estimate": _finite(self.estimate), "search_estimate_event": self.estimate_event,
        }
        if self.case is not None:
            out["pair"] = {"space": self.space, "unit": self.unit, "config": _jsonable(self.config),
                           "description": self.case.description, "d": _jsonable(self.case.d),
                           "d_prime": _jsonable(self.case.d_prime),
                           "difference": self.difference()}
        if conf is not None:
            out["confirmation"] = conf.as_json()
        out["history"] = [[round(t, 2), _finite(e)] for t, e in self.history]
        return out


def _jsonable(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: _jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, (str, int, float, bool)) or obj is None:
        return obj
    if isinstance(obj, np.generic):
        return obj.item()
    return repr(obj)


def file_difference(d: Any, d_prime: Any) -> str:
    """The lines D' adds to D (``+ line N: text``), per file for a tuple of files (``file J``) or for the parts
    of a dataclass of files (an edge list and a node list: ``edges``, ``nodes``)."""
    if dataclasses.is_dataclass(d) and type(d) is type(d_prime):
        parts = []
        for f in dataclasses.fields(d):
            a, b = getattr(d, f.name), getattr(d_prime, f.name)
            diff = file_difference(a, b) if a is not None and b is not None else ""
            if diff:
                parts.append("\n".join(f"{f.name}: {line}" for line in diff.splitlines()))
        return "\n".join(parts)
    if isinstance(d, tuple) and isinstance(d_prime, tuple):
        parts = []
        for j, (a, b) in enumerate(zip(d, d_prime)):
            diff = file_difference(a, b)
            if diff:
                parts.append("\n".join(f"file {j}: {line}" for line in diff.splitlines()))
        return "\n".join(parts)
    if not (isinstance(d, str) and isinstance(d_prime, str)):
        return f"D = {d!r}; D' = {d_prime!r}"
    a, b = d.splitlines(), d_prime.splitlines()
    out = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag in ("insert", "replace"):
            out += [f"+ line {j + 1}: {b[j]}" for j in range(j1, j2)]
        if tag in ("delete", "replace"):
            out += [f"- line {i + 1}: {a[i]}" for i in range(i1, i2)]
    return "\n".join(out)


def _seed_base(seed: int, key: str, counter: int) -> int:
    ss = np.random.SeedSequence([int(seed) & (2**63 - 1), zlib.crc32(key.encode()), int(counter)])
    return int(ss.generate_state(1, np.uint64)[0]) >> 2


class _Searcher:
    def __init__(self, algorithm: str, spaces: list[SearchSpace], *, seed: int, budget: float,
                 search_share: float, progress: bool, noise_wrapper: Any = None, per_side: int | None = None,
                 max_runs: int | None = None):
        self.noise_wrapper = noise_wrapper
        # A budget in runs instead of seconds (tests): the pairs searched then depend on the seed alone, not on
        # how loaded the machine is.
        self.max_runs = None if max_runs is None else int(max_runs)
        self.search_runs = None if max_runs is None else int(search_share * max_runs)
        self.fixed_per_side = per_side
        self.algorithm = algorithm
        self.spaces = spaces
        self.seed = int(seed)
        self.rng = np.random.default_rng([self.seed & (2**63 - 1), zlib.crc32(algorithm.encode()), 1])
        self.t0 = time.perf_counter()
        self.budget = float(budget)
        self.search_until = self.t0 + search_share * self.budget
        self.progress = progress and sys.stderr.isatty()
        self.entries: dict[str, tuple[SearchSpace, _Entry]] = {}
        self.evals = 0
        self.runs = 0
        self.per_side = per_side or 150
        self.history: list[tuple[float, float]] = []
        self.best_seen = -math.inf

    def now(self) -> float:
        return time.perf_counter() - self.t0

    def searching(self) -> bool:
        """Whether the search phase's budget (seconds, or runs with ``max_runs``) is not yet used."""
        if self.search_runs is not None:
            return self.runs < self.search_runs
        return time.perf_counter() < self.search_until

    def entry(self, space: SearchSpace, pair: Pair) -> _Entry | None:
        cfg = space.configs[pair.config]
        name = f"{self.algorithm}/search"
        try:
            case = space.build(pair, cfg, name)
        except Exception:  # noqa: BLE001 - a pair the space cannot build (e.g. too small) is skipped
            return None
        key = f"{space.name}|{pair.config}|{case.d!r}|{case.d_prime!r}"
        if key in self.entries:
            return self.entries[key][1]
        e = _Entry(pair, case, key)
        self.entries[key] = (space, e)
        return e

    def estimate(self, e: _Entry, n: int) -> None:
        seeds = [_seed_base(self.seed, "search:" + self.algorithm, self.evals) + i for i in range(2 * n)]
        self.evals += 1
        t = time.perf_counter()
        on_d, on_dp = count_events(e.case, seeds, noise_wrapper=self.noise_wrapper)
        e.seconds += time.perf_counter() - t
        e.on_d.update(on_d)
        e.on_dp.update(on_dp)
        e.n += n
        self.runs += 2 * n
        lb, e.event = best_bound(e.on_d, e.on_dp, e.n, SEARCH_LEVEL)
        e.estimate = lb - e.claim
        if e.estimate > self.best_seen:
            self.best_seen = e.estimate
            self.history.append((self.now(), e.estimate))

    def clearly_violated(self, e: _Entry) -> bool:
        if e.n < 400:
            return False
        lb, _ = best_bound(e.on_d, e.on_dp, e.n, STRICT_LEVEL)
        return lb > e.claim + EARLY_MARGIN

    def run(self) -> tuple[SearchSpace | None, _Entry | None, bool]:
        pop: list[tuple[SearchSpace, _Entry]] = []
        step = 0
        early = False
        failures = 0
        while True:
            if not self.searching() and (pop or failures > 1000):
                break
            space = self.spaces[_pick(self.rng, len(self.spaces))]
            if len(pop) < POPULATION or self.rng.random() < 0.1:
                child = space.random_pair(self.rng)
            else:
                k = min(3, len(pop))
                idx = self.rng.choice(len(pop), size=k, replace=False)
                space, parent = max((pop[i] for i in idx.tolist()), key=lambda t: t[1].estimate)
                child = mutate(space, self.rng, parent.pair)
            e = self.entry(space, child)
            if e is None:
                failures += 1
                continue
            self.estimate(e, self.per_side)
            if step == 0 and not self.fixed_per_side and self.search_runs is None:
                # runs per estimate: about 1 % of the search time
                spr = e.seconds_per_run()
                self.per_side = int(min(200, max(40, 0.01 * (self.search_until - time.perf_counter()) / max(spr, 1e-6)
                                                 / 2)))
            step += 1
            if all(x[1] is not e for x in pop):
                if len(pop) < POPULATION:
                    pop.append((space, e))
                else:
                    worst = min(range(len(pop)), key=lambda i: pop[i][1].estimate)
                    if e.estimate > pop[worst][1].estimate:
                        pop[worst] = (space, e)
            if step % 4 == 0:
                _, top = max(pop, key=lambda t: t[1].estimate)
                if top.n < 20 * self.per_side:
                    self.estimate(top, self.per_side)
                if self.clearly_violated(top):
                    early = True
                    break
            if self.progress and step % 10 == 0:
                print(f"\rsearch {self.algorithm}: {len(self.entries)} pairs, best estimate {self.best_seen:+.3f} "
                      f"over the claim", end="", file=sys.stderr)
        if self.progress:
            print("", file=sys.stderr)
        if not pop:
            return None, None, early
        if not early:
            # The leaders get at least 4 estimates' worth of runs before one is chosen, so that the pair confirmed
            # is not one lucky estimate (bounded: a tenth of the search time).
            until = time.perf_counter() + 0.1 * (self.search_until - self.t0)
            runs_until = None if self.search_runs is None else self.runs + self.search_runs // 10
            for _, e in sorted(pop, key=lambda t: t[1].estimate, reverse=True)[:3]:
                while e.n < 4 * self.per_side and (time.perf_counter() < until if runs_until is None
                                                   else self.runs < runs_until):
                    self.estimate(e, self.per_side)
        # the best pair: by its pooled estimate, among the population
        best_space, best = max(pop, key=lambda t: t[1].estimate)
        return best_space, best, early


def _confirm_runs(e: _Entry, remaining: float, early: bool, level: float, picks: list[tuple[str, bool, bool]]
                  ) -> int:
    """Fresh runs for the confirmation: what the remaining budget allows (2,000 to 20,000); after an early stop,
    the runs that the search's rates say suffice (twice over), within the same limits."""
    spr = max(e.seconds_per_run(), 1e-5)
    by_time = int(remaining / spr)
    runs = min(MAX_CONFIRM_RUNS, max(MIN_CONFIRM_RUNS, by_time))
    if early and picks:
        event, comp, forward = picks[0]
        x, y = e.on_d[event] / e.n, e.on_dp[event] / e.n
        if comp:
            x, y = 1 - x, 1 - y
        p, q = (x, y) if forward else (y, x)
        per = 500
        while per < runs // 2 and expected_log_ratio_bound(0.8 * p, min(1.0, 1.25 * q + 1.0 / e.n), per, level) \
                <= e.claim + 0.1:
            per *= 2
        runs = min(runs, max(MIN_CONFIRM_RUNS, 4 * per))
    return runs - runs % 4


def search(algorithm: str, *, epsilon: float = 1.0, budget: float = DEFAULT_BUDGET, seed: int | None = 0,
           runs: int | None = None, spaces: list[SearchSpace] | None = None, search_share: float = 0.7,
           candidates: int = DEFAULT_CANDIDATES, alpha: float = DEFAULT_ALPHA, progress: bool = False,
           noise_wrapper: Callable[[Any], Any] | None = None, per_side: int | None = None,
           max_runs: int | None = None) -> SearchResult:
    """Search ``algorithm``'s space for its worst pair within ``budget`` seconds, then confirm it on fresh runs.

    ``runs``: the confirmation's runs (default: what the rest of the budget allows, 2,000 to 20,000).
    ``spaces``: search these instead of the registered ones (power tests: a deliberately broken runner);
    ``noise_wrapper`` wraps every run's noise source (power tests: a deliberately broken source).
    ``per_side``: runs per dataset of each estimate (default: about 1 % of the search time, 40 to 200); fixing
    it makes the sequence of pairs a function of the seed alone (the budget still ends the search).
    ``max_runs``: end the search after this many runs instead of ``search_share * budget`` seconds (with
    ``per_side`` and ``runs`` the whole result is then a function of the seed, whatever the machine's load).
    """
    from ..privacy.accountant import check_epsilon
    from ..privacy.noise import SecureNoise

    eps = check_epsilon(epsilon)
    if not (budget > 0 and math.isfinite(budget)):
        raise ParameterError(f"--budget must be a number of seconds > 0, got {budget}")
    if runs is not None and int(runs) < 8:
        raise ParameterError(f"--runs must be at least 8, got {runs}")
    if seed is None:
        seed = int.from_bytes(SecureNoise()._uint64(1).tobytes(), "little") >> 1
    spaces = spaces if spaces is not None else spaces_for(algorithm, eps)
    if not spaces:
        raise ParameterError(f"{algorithm} has no search space")
    searcher = _Searcher(algorithm, spaces, seed=int(seed), budget=budget, search_share=search_share,
                         progress=progress, noise_wrapper=noise_wrapper, per_side=per_side, max_runs=max_runs)
    space, best, early = searcher.run()
    if space is None or best is None:
        return SearchResult(algorithm, eps, budget, int(seed), searcher.now(), 0, searcher.runs, "", "", {}, None,
                            -math.inf, "", None, searcher.history, alpha, early)
    level = alpha / (2.0 * candidates)
    # the candidates: the events with the largest bound on the search's runs *at the confirmation's level* (a rare
    # event loses more there than at the search's, as it will on the fresh runs)
    picks = [(ev, comp, fwd) for ev, comp, fwd, _ in rank_candidates(best.on_d, best.on_dp, best.n, level,
                                                                     candidates)]
    remaining = max(0.0, budget - searcher.now())
    if max_runs is not None:  # the rest of the run budget, as the seconds it would take at this pair's rate
        remaining = max(0, int(max_runs) - searcher.runs) * max(best.seconds_per_run(), 1e-5)
    n_confirm = int(runs) if runs is not None else _confirm_runs(best, remaining, early, level, picks)
    conf = audit_case(best.case, runs=n_confirm, seed=int(seed), chosen=picks, candidates=candidates, alpha=alpha,
                      seed_key=f"confirm:{algorithm}:{best.key}", progress=progress, noise_wrapper=noise_wrapper)
    return SearchResult(algorithm, eps, float(budget), int(seed), searcher.now(), len(searcher.entries),
                        searcher.runs, space.name or algorithm, space.unit, dict(space.configs[best.pair.config]),
                        best.case, best.estimate, best.event, conf, searcher.history, alpha, early)
