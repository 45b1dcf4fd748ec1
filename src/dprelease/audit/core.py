"""The black-box audit: run an algorithm on neighbouring datasets many times and bound its privacy loss.

A case (:class:`AuditCase`) names two datasets D and D' that differ in one record (add/remove), a
``run`` that makes one release of the algorithm with a given noise source, and an ``events`` map from
a release to the names of the events it shows (its canonical form, its order, which itemsets appear,
each released count, the chosen split, ...). Everything the algorithm publishes must be reachable
from ``run``'s return value, so that an event can look at it.

:func:`audit_case` runs the case ``runs`` times, alternating D and D' with independent noise. The
first half of the runs chooses candidate events (and directions); on the second half each candidate
gets a lower Clopper-Pearson bound on ln(P[E|D]/P[E|D']) (or the reverse), Bonferroni-corrected for
every candidate of every case in the audit, so that the probability that *any* reported bound exceeds
the true privacy loss of its event is at most ``alpha`` (default 1 %). ``epsilon_lower_bound`` is the
largest bound; the case is a *violation* when it exceeds the case's epsilon. docs/audit.md has the
method, the pairs and the measured results.
"""

from __future__ import annotations

import importlib
import math
import pkgutil
import sys
import zlib
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import ParameterError
from ..privacy.noise import NoiseSource, SecureNoise, SeededNoise
from .stats import detectable_epsilon, log_ratio_lower_bound, smoothed_log_ratio

__all__ = [
    "DEFAULT_ALPHA",
    "DEFAULT_CANDIDATES",
    "DEFAULT_EPSILON",
    "DEFAULT_RUNS",
    "MIN_RUNS",
    "AuditCase",
    "AuditResult",
    "CaseResult",
    "algorithms",
    "audit_case",
    "cases_for",
    "count_events",
    "rank_candidates",
    "register_cases",
    "run_audit",
]

DEFAULT_ALPHA = 0.01  # 99 % confidence for the whole audit (every case, every candidate, both bounds)
DEFAULT_CANDIDATES = 8  # candidate (event, direction) pairs chosen per case on the first half
DEFAULT_RUNS = 20_000
DEFAULT_EPSILON = 1.0
MIN_RUNS = 8  # two runs per dataset per half

D_OVER_D_PRIME = "ln P[E|D]/P[E|D']"
D_PRIME_OVER_D = "ln P[E|D']/P[E|D]"


@dataclass(frozen=True)
class AuditCase:
    """One neighbouring pair of one algorithm, with how to run it and what to look at.

    ``d`` and ``d_prime`` differ in one record. ``run(data, noise)`` makes one release on ``data``
    drawing every random number from ``noise``; ``events(output)`` names the events the release shows
    (strings). ``epsilon`` is the privacy level the release claims for this pair.

    Optional: ``description`` (one line for the docs and ``--list``); ``secure=True`` runs the case
    with :class:`SecureNoise` in every mode (it tests a secure-mode sampler); ``skip`` gives the reason
    the pair does not apply (e.g. the algorithm rejects D' as invalid input): the case is reported,
    not run; ``unit`` names the neighbour when D and D' are file contents (:mod:`dprelease.audit.files`).
    """

    name: str
    d: Any
    d_prime: Any
    epsilon: float
    run: Callable[[Any, NoiseSource], Any]
    events: Callable[[Any], Iterable[str]]
    description: str = ""
    secure: bool = False
    skip: str | None = None
    unit: str = ""  # what D and D' differ in, as the command reads it ("one line of a FIMI file", ...)


CaseFactory = Callable[[float], list[AuditCase]]
_REGISTRY: dict[str, list[CaseFactory]] = {}
_LOADED = False


def register_cases(algorithm: str) -> Callable[[CaseFactory], CaseFactory]:
    """Decorator: ``factory(epsilon) -> list[AuditCase]`` adds cases to ``dprelease audit ALGORITHM``.

    Several factories (in several modules of :mod:`dprelease.audit.cases`) may register the same name.
    """
    if not algorithm or any(c.isspace() for c in algorithm):
        raise ValueError(f"an audit algorithm name must be a non-empty word, got {algorithm!r}")

    def deco(factory: CaseFactory) -> CaseFactory:
        factories = _REGISTRY.setdefault(algorithm, [])
        if factory not in factories:
            factories.append(factory)
        return factory

    return deco


def _load_all() -> None:
    """Import every module of :mod:`dprelease.audit.cases` (they import their algorithm lazily)."""
    global _LOADED
    if _LOADED:
        return
    from . import cases

    for info in sorted(pkgutil.iter_modules(cases.__path__), key=lambda m: m.name):
        if not info.name.startswith("_"):
            importlib.import_module(f"{cases.__name__}.{info.name}")
    _LOADED = True


def algorithms() -> list[str]:
    """Every name ``dprelease audit`` accepts, sorted."""
    _load_all()
    return sorted(_REGISTRY)


def cases_for(algorithm: str, epsilon: float = DEFAULT_EPSILON) -> list[AuditCase]:
    """The built-in cases of ``algorithm`` at ``epsilon`` (ParameterError for an unknown name)."""
    _load_all()
    if algorithm not in _REGISTRY:
        raise ParameterError(f"ALGORITHM must be one of {', '.join(sorted(_REGISTRY))}; got {algorithm!r}")
    out: list[AuditCase] = []
    for factory in _REGISTRY[algorithm]:
        out.extend(factory(float(epsilon)))
    names = [c.name for c in out]
    if len(set(names)) != len(names):
        raise ValueError(f"audit cases of {algorithm!r} have duplicate names: {sorted(names)}")
    return out


@dataclass
class CaseResult:
    """The outcome of one case: the largest lower bound found, on which event, and the candidates tested."""

    name: str
    epsilon: float
    runs: int
    epsilon_lower_bound: float = 0.0
    event: str = ""
    direction: str = ""
    p_d: float = math.nan  # rate of the event on D, test half
    p_d_prime: float = math.nan  # rate on D', test half
    violation: bool = False
    # the audit's power: the smallest true loss of a candidate event that the test runs would flag (at the
    # expected counts); its event (docs/audit.md, "Power")
    power: float = math.inf
    power_event: str = ""
    n_test: int = 0  # test runs per dataset
    candidates: list[dict[str, object]] = field(default_factory=list)
    raised: dict[str, int] = field(default_factory=dict)  # exception name -> runs that raised it
    skipped: str | None = None
    error: str | None = None

    def as_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "case": self.name, "epsilon": self.epsilon, "runs": self.runs,
            "epsilon_lower_bound": _finite(self.epsilon_lower_bound), "event": self.event,
            "direction": self.direction, "p_d": _finite(self.p_d), "p_d_prime": _finite(self.p_d_prime),
            "violation": self.violation, "power": _finite(self.power), "power_event": self.power_event,
        }
        if self.raised:
            out["raised"] = dict(self.raised)
        if self.skipped:
            out["skipped"] = self.skipped
        if self.error:
            out["error"] = self.error
        return out


def _finite(x: float) -> float | None:
    return round(float(x), 6) + 0.0 if math.isfinite(x) else None  # + 0.0: no -0.0


@dataclass
class AuditResult:
    """All cases of one algorithm. ``epsilon_lower_bound``/``event``/``case`` come from the worst case."""

    algorithm: str
    epsilon: float
    runs: int
    seed: int | None
    mode: str
    alpha: float
    cases: list[CaseResult]

    def worst(self) -> CaseResult | None:
        ran = [c for c in self.cases if c.skipped is None and c.error is None]
        if not ran:
            return None
        return max(ran, key=lambda c: (c.violation, c.epsilon_lower_bound - c.epsilon))

    @property
    def epsilon_lower_bound(self) -> float:
        worst = self.worst()
        return max(0.0, worst.epsilon_lower_bound) if worst is not None else 0.0

    @property
    def violation(self) -> bool:
        return any(c.violation for c in self.cases)

    @property
    def errors(self) -> list[str]:
        return [c.name for c in self.cases if c.error]

    def as_json(self) -> dict[str, object]:
        worst = self.worst()
        out: dict[str, object] = {
            "algorithm": self.algorithm, "epsilon": self.epsilon, "runs": self.runs,
            "epsilon_lower_bound": round(self.epsilon_lower_bound, 6),
            "event": worst.event if worst else "", "violation": self.violation,
            "case": worst.name if worst else "", "direction": worst.direction if worst else "",
            "power": _finite(worst.power) if worst else None, "mode": self.mode, "seed": self.seed, "alpha": self.alpha,
        }
        if self.errors:
            out["errors"] = self.errors
        out["cases"] = [c.as_json() for c in self.cases]
        return out


def _run_seeds(seed: int, case_name: str, n: int) -> list[int]:
    """Per-run seeds: a 62-bit base from (seed, the case's name) plus the run number."""
    key = [int(seed) & (2**63 - 1), zlib.crc32(case_name.encode())]
    base = int(np.random.SeedSequence(key).generate_state(1, np.uint64)[0]) >> 2
    return [base + i for i in range(n)]


def _progress(total: int, desc: str, enabled: bool):
    if not enabled or not sys.stderr.isatty():
        return None
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit=" runs", file=sys.stderr, mininterval=0.5, leave=False)


def count_events(case: AuditCase, seeds: list[int], *, secure: bool = False,
                 noise_wrapper: Callable[[NoiseSource], NoiseSource] | None = None,
                 watch: Iterable[str] | None = None, raised: Counter[str] | None = None,
                 first_error: list[BaseException] | None = None, bar: Any = None
                 ) -> tuple[Counter[str], Counter[str]]:
    """Run ``case`` once per seed, alternating D (even positions) and D' (odd), and count the events.

    Returns (counts on D, counts on D'); with ``watch``, only those events are counted. A run that raises
    shows the event ``raised <ExceptionName>`` (tallied in ``raised``, the first exception kept in
    ``first_error``).
    """
    secure_source = SecureNoise() if (secure or case.secure) else None
    watched = None if watch is None else set(watch)
    on_d: Counter[str] = Counter()
    on_dp: Counter[str] = Counter()
    for i, s in enumerate(seeds):
        noise: NoiseSource = secure_source if secure_source is not None else SeededNoise(s)
        if noise_wrapper is not None:
            noise = noise_wrapper(noise)
        data = case.d if i % 2 == 0 else case.d_prime
        try:
            out = case.run(data, noise)
        except (KeyboardInterrupt, SystemExit):
            raise
        except Exception as exc:  # noqa: BLE001 - a refusal or a crash is an output too
            name = type(exc).__name__
            if raised is not None:
                raised[name] += 1
            if first_error is not None and not first_error:
                first_error.append(exc)
            evs = {f"raised {name}"}
        else:
            evs = set(case.events(out))
        if watched is not None:
            evs &= watched
        (on_d if i % 2 == 0 else on_dp).update(evs)
        if bar is not None:
            bar.update(1)
    return on_d, on_dp


# An event seen on more than this share of the runs on both sides (or less than 1 - it on both) shows almost
# nothing either way: its bound is near 0 and its power an artefact of tight intervals near 0 or 1.
_DEGENERATE = 0.99
# Events well inside (0, 1): both rates within [_INTERIOR, 1 - _INTERIOR]. Among candidates that show nothing
# (bound <= 0) these come first, and the power is taken over them.
_INTERIOR = 0.05


def rank_candidates(on_d: Counter[str], on_dp: Counter[str], per: int, level: float, k: int
                    ) -> list[tuple[str, bool, bool, float]]:
    """The ``k`` (event, complement?, forward?) candidates with the largest lower bound on ``per`` runs a side.

    Ties are broken by a smoothed point estimate; events that show nothing (bound <= 0) and are not well inside
    (0, 1) on both sides (see ``_INTERIOR``) come last. Returns (event, complement, forward, bound at these counts).
    """
    names = sorted(set(on_d) | set(on_dp))
    a = np.fromiter((on_d[e] for e in names), dtype=np.float64, count=len(names))
    b = np.fromiter((on_dp[e] for e in names), dtype=np.float64, count=len(names))
    lo, hi = _INTERIOR * per, (1.0 - _INTERIOR) * per
    interior = (a >= lo) & (a <= hi) & (b >= lo) & (b <= hi)
    cands: list[tuple[bool, float, float, int, bool, bool]] = []
    for comp in (False, True):
        x, y = (per - a, per - b) if comp else (a, b)
        for forward in (True, False):
            num, den = (x, y) if forward else (y, x)
            lb = log_ratio_lower_bound(num, per, den, per, level)
            pt = smoothed_log_ratio(num, per, den, per)
            for j in range(len(names)):
                keep = lb[j] > 0 or interior[j]  # an event near 0 or 1 that shows nothing goes last
                cands.append((bool(keep), float(lb[j]), float(pt[j]), j, comp, forward))
    cands.sort(key=lambda t: (t[0], t[1], t[2]), reverse=True)
    return [(names[j], comp, forward, lb) for _, lb, _, j, comp, forward in cands[:k]]


def _label(event: str, comp: bool) -> str:
    return ("not " if comp else "") + event


def audit_case(case: AuditCase, *, runs: int, seed: int | None = 0, secure: bool = False,
               noise_wrapper: Callable[[NoiseSource], NoiseSource] | None = None,
               candidates: int = DEFAULT_CANDIDATES, alpha: float = DEFAULT_ALPHA, n_cases: int = 1,
               progress: bool = False, chosen: list[tuple[str, bool, bool]] | None = None,
               seed_key: str | None = None) -> CaseResult:
    """Audit one case with ``runs`` runs (half on D, half on D'); see the module docstring.

    ``seed`` seeds the per-run :class:`SeededNoise` sources (experiment mode; ``None`` draws a fresh
    seed); ``secure=True`` (or ``case.secure``) uses :class:`SecureNoise` instead. ``noise_wrapper``
    wraps every run's source (power tests: a deliberately broken source). The confidence ``1 - alpha``
    is shared, by Bonferroni, among ``candidates`` candidates of each of ``n_cases`` cases and the two
    one-sided bounds of each.

    ``chosen``: (event, complement?, forward?) candidates fixed beforehand on other runs (the search
    chooses them on its own runs): then every run tests them and none is spent on choosing. ``seed_key``
    replaces the case's name in the per-run seeds (fresh runs for a pair the search already ran).
    """
    runs = int(runs)
    if runs < MIN_RUNS:
        raise ParameterError(f"--runs must be at least {MIN_RUNS}, got {runs}")
    result = CaseResult(case.name, float(case.epsilon), runs)
    if case.skip:
        result.skipped = case.skip
        return result
    per = runs // 4  # runs per dataset per half
    n_cand = len(chosen) if chosen is not None else candidates
    level = alpha / (2.0 * max(1, n_cand) * max(1, n_cases))
    if seed is None:
        seed = int.from_bytes(SecureNoise()._uint64(1).tobytes(), "little") >> 1
    seeds = _run_seeds(seed, seed_key or case.name, 4 * per)
    bar = _progress(4 * per, case.name, progress)
    raised: Counter[str] = Counter()
    first_error: list[BaseException] = []
    kw = {"secure": secure, "noise_wrapper": noise_wrapper, "raised": raised, "first_error": first_error,
          "bar": bar}

    if chosen is None:
        # First half: every event, both datasets; the candidates are the events whose bound at these counts
        # is largest. Second half: fresh runs count only those.
        sel_d, sel_dp = count_events(case, seeds[:2 * per], **kw)  # type: ignore[arg-type]
        picks = [(e, comp, fwd) for e, comp, fwd, _ in rank_candidates(sel_d, sel_dp, per, level, candidates)]
        test_seeds, n_test = seeds[2 * per:], per
    else:
        picks = [(str(e), bool(c), bool(f)) for e, c, f in chosen]
        test_seeds, n_test = seeds, 2 * per
    test_d, test_dp = count_events(case, test_seeds, watch={e for e, _, _ in picks}, **kw)  # type: ignore[arg-type]
    if bar is not None:
        bar.close()

    scored = []
    for e, comp, forward in picks:
        x, y = float(test_d[e]), float(test_dp[e])
        if comp:
            x, y = n_test - x, n_test - y
        num, den = (x, y) if forward else (y, x)
        lb = float(log_ratio_lower_bound(np.array([num]), n_test, np.array([den]), n_test, level)[0])
        power = detectable_epsilon(num / n_test, n_test, level, case.epsilon)
        direction = D_OVER_D_PRIME if forward else D_PRIME_OVER_D
        result.candidates.append({"event": _label(e, comp), "direction": direction, "p_d": x / n_test,
                                  "p_d_prime": y / n_test, "lower_bound": _finite(lb), "power": _finite(power)})
        scored.append((lb, power, _label(e, comp), direction, x / n_test, y / n_test))
    if scored:
        lb, power, label, direction, pd, pdp = max(scored, key=lambda t: (t[0], -t[1]))
        result.epsilon_lower_bound, result.event, result.direction = lb, label, direction
        result.p_d, result.p_d_prime = pd, pdp
        # The audit flags the case when any candidate's bound exceeds epsilon, so its reach is the best power
        # among the candidates, taken over the events well inside (0, 1) on both sides (near 0 or 1 the tight
        # intervals promise a reach the event cannot have: it hardly moves); failing those, the events that are
        # not near-certain (or near-impossible) on both sides; failing those, the reported event.
        useful = ([t for t in scored if _interior(t[4], t[5])] or [t for t in scored if not _degenerate(t[4], t[5])]
                  or [(lb, power, label, direction, pd, pdp)])
        best = min(useful, key=lambda t: t[1])
        result.power, result.power_event = best[1], best[2]
    result.n_test = n_test
    result.violation = result.epsilon_lower_bound > case.epsilon
    result.raised = dict(sorted(raised.items()))
    if raised and sum(raised.values()) == 4 * per:
        exc = first_error[0]
        result.error = f"every run raised ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})"
    return result


def _interior(p: float, q: float) -> bool:
    return _INTERIOR <= p <= 1.0 - _INTERIOR and _INTERIOR <= q <= 1.0 - _INTERIOR


def _degenerate(p: float, q: float) -> bool:
    return (p > _DEGENERATE and q > _DEGENERATE) or (p < 1.0 - _DEGENERATE and q < 1.0 - _DEGENERATE)


def run_audit(algorithm: str, *, epsilon: float = DEFAULT_EPSILON, runs: int = DEFAULT_RUNS, seed: int | None = 0,
              secure: bool = False, noise_wrapper: Callable[[NoiseSource], NoiseSource] | None = None,
              candidates: int = DEFAULT_CANDIDATES, alpha: float = DEFAULT_ALPHA, only: str | None = None,
              progress: bool = False) -> AuditResult:
    """Audit every built-in case of ``algorithm`` (those whose name contains ``only``, if given)."""
    from ..privacy.accountant import check_epsilon

    eps = check_epsilon(epsilon)
    if int(runs) < MIN_RUNS:
        raise ParameterError(f"--runs must be at least {MIN_RUNS}, got {runs}")
    if int(candidates) < 1:
        raise ParameterError(f"--candidates must be at least 1, got {candidates}")
    if not (0.0 < alpha < 1.0):
        raise ParameterError(f"alpha must be in (0, 1), got {alpha}")
    cases = cases_for(algorithm, eps)
    if only is not None:
        cases = [c for c in cases if only in c.name]
        if not cases:
            raise ParameterError(f"--case {only!r} matches no case of {algorithm}")
    if seed is None:
        seed = int.from_bytes(SecureNoise()._uint64(1).tobytes(), "little") >> 1
    n_run = sum(1 for c in cases if not c.skip)
    results = [audit_case(c, runs=runs, seed=seed, secure=secure, noise_wrapper=noise_wrapper,
                          candidates=int(candidates), alpha=alpha, n_cases=n_run, progress=progress)
               for c in cases]
    mode = "secure" if secure else "seeded"
    return AuditResult(algorithm, eps, int(runs), None if secure else seed, mode, alpha, results)
