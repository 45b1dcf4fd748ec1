"""Budget accountant: sequential composition by addition, parallel composition by max.

The accountant keeps a tree of :class:`BudgetScope` objects. A scope stands for a
set of records. Spends on one scope compose sequentially (they add up). A scope
can :meth:`BudgetScope.branch` into children that stand for *disjoint* subsets of
its records; siblings compose in parallel, so the privacy loss of the whole run is
the largest sum of spends along any root-to-leaf chain (DiffPart, Theorems B.1
and B.2; section 4.2 calls these paths "partitioning chains").

Every spend is checked against the declared total *before* the caller draws any
noise: :meth:`BudgetScope.spend` raises :class:`BudgetExceededError` and records
nothing when a spend would overshoot.

Arithmetic is exact: chain totals are sums of the charged floats as rationals
(:class:`fractions.Fraction`), so the reported total is the true sum, rounded up
to a float (the safe side). Float budget splits such as B/6 + B/6 + 2B/3 may exceed
B by an ulp; a spend is admitted while the exact chain total stays within a
relative 1e-9 of the declared total, and the manifest then reports that exact
total (for example 1.0000000000000002), never the declared one in its place.

Each charge is a typed :class:`LedgerEntry` (mechanism, its parameters, epsilon,
label; dp_accounting's events). ``mechanism`` is required and one of :data:`MECHANISMS`:
a noise mechanism must carry the parameters from which :func:`epsilon_of` re-derives
its epsilon, and :meth:`BudgetScope.spend` refuses (``ValueError``, before anything is
charged or drawn) a charge whose parameters are missing or imply more than it charges.
So no spend is untyped, and none can understate its mechanism's privacy loss.

>>> acc = BudgetAccountant(1.0)
>>> root = acc.root()
>>> root.spend(0.5, "split", mechanism="discrete_laplace", sensitivity=1.0, scale=2.0)
>>> left, right = root.branch(), root.branch()   # disjoint records: parallel composition
>>> left.spend(0.5, "left counts", mechanism="laplace", sensitivity=1.0, scale=2.0)
>>> right.spend(0.25, "right counts", mechanism="exponential", sensitivity=1.0, scale=8.0)
>>> acc.spent
1.0
>>> epsilon_of(acc.ledger[0]), epsilon_of(acc.ledger[2])
(0.5, 0.25)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal, get_args

from ..errors import BudgetExceededError, ParameterError

__all__ = ["BudgetAccountant", "BudgetScope", "LedgerEntry", "Mechanism", "MECHANISMS", "NOISE_MECHANISMS",
           "check_epsilon", "check_sensitivity", "epsilon_of", "privtree_theorem_epsilon", "round_up"]

# What a charge is for. The noise mechanisms carry the parameters epsilon_of re-derives epsilon from;
# "composite" is an algorithm-level charge whose parts are charged on an accountant of their own (one append of
# a stream, a batch of a baseline) and "reserved" is budget set aside and never used (no noise is drawn).
Mechanism = Literal["laplace", "discrete_laplace", "exponential", "privtree", "composite", "reserved"]
MECHANISMS: frozenset[str] = frozenset(get_args(Mechanism))
NOISE_MECHANISMS: frozenset[str] = frozenset({"laplace", "discrete_laplace", "exponential", "privtree"})

# Relative slack admitted for float budget splits (B/6 + B/6 + 2B/3 may exceed B by an ulp); the exact total is
# still what summary() reports.
_REL_TOL = Fraction(1, 10**9)


def check_epsilon(epsilon: float, name: str = "--epsilon") -> float:
    """Return ``epsilon`` as a float, or raise :class:`ParameterError` if it is not a finite number > 0."""
    if isinstance(epsilon, bool):
        raise ParameterError(f"{name} must be a number > 0, got {epsilon!r}")
    try:
        value = float(epsilon)
    except (TypeError, ValueError):
        raise ParameterError(f"{name} must be a number > 0, got {epsilon!r}") from None
    if not (value > 0.0) or value == float("inf"):
        raise ParameterError(f"{name} must be a finite number > 0, got {epsilon!r}")
    return value


def check_sensitivity(sensitivity: float, name: str = "sensitivity") -> float:
    """Return ``sensitivity`` as a float, or raise :class:`ParameterError` unless it is a finite number > 0.

    A sensitivity of 0 divides by zero; a negative one turns the exponential mechanism around (it would
    prefer the worst candidate while still charging epsilon).
    """
    return check_epsilon(sensitivity, name)


def round_up(value: Fraction) -> float:
    """The smallest float >= ``value`` (exact rationals rounded toward the safe side)."""
    f = float(value)
    if Fraction(f) < value:
        f = math.nextafter(f, math.inf)
    return f


def privtree_theorem_epsilon(lam: float, beta: float) -> float:
    """PrivTree's privacy loss for discrete Laplace noise of scale ``lam`` and a depth bias delta >= lam ln(beta)
    per level: (1/lam) * (1 + e^(-1/lam) * beta / (beta - 1)).

    It is the bound of Zhang, Xiao and Xie (SIGMOD 2016, Theorem 3.1: (2 beta - 1) / ((beta - 1) lam) for
    continuous Laplace and real counts compared with > theta) for the variant of
    :mod:`dprelease.privacy.privtree`: integer counts, integer delta, discrete Laplace and a split iff
    biased count + noise >= theta. There a split decision whose biased count is theta + m (m >= 0) costs at most
    e^(-(m+1)/lam)/lam, one factor e^(-1/lam) below the continuous case, so the geometric part of the sum is
    e^(-1/lam) * sum_k e^(-k delta/lam) <= e^(-1/lam) * beta/(beta - 1). :func:`privtree.privtree_scale` solves
    this expression (the same float operations) for lam, so the charge and :func:`epsilon_of` agree.
    """
    return (1.0 + math.exp(-1.0 / lam) * beta / (beta - 1.0)) / lam


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    """One charge, as a typed event: what it was for, the mechanism and its parameters, where it fell.

    ``mechanism`` (one of :data:`MECHANISMS`) and the parameters :func:`epsilon_of` reads:

    * ``"laplace"`` / ``"discrete_laplace"``: epsilon >= sensitivity / scale;
    * ``"exponential"``: epsilon >= rounds * (1 if monotonic else 2) * sensitivity / scale (the Gumbel scale);
    * ``"privtree"``: every split decision of one PrivTree (:mod:`dprelease.privacy.privtree`), with
      ``scale`` = lambda (the discrete Laplace scale), ``depth_bias`` = delta (subtracted per level),
      ``beta`` (delta >= lambda ln beta) and ``sensitivity`` = 1 (a record adds 1 to each cell on its path):
      epsilon >= :func:`privtree_theorem_epsilon` (lambda, beta);
    * ``"composite"`` (an algorithm-level charge whose parts are charged on an accountant of their own, e.g.
      one append of a stream) or ``"reserved"`` (budget set aside and not used): no parameters.

    ``chain_total`` is the scope's exact chain total after the charge, rounded up.
    """

    label: str
    epsilon: float
    scope_id: int
    chain_total: float
    mechanism: Mechanism
    sensitivity: float | None = None
    scale: float | None = None
    rounds: int = 1
    monotonic: bool = False
    depth_bias: int | None = None
    beta: float | None = None


def epsilon_of(entry: LedgerEntry) -> float | None:
    """The epsilon a charge's mechanism parameters guarantee; None for "composite" and "reserved" charges, and
    for a noise mechanism whose parameters are missing (which :meth:`BudgetScope.spend` refuses).

    Laplace and exponential events are re-derived in exact rationals, rounded to the nearest float: with a scale
    rounded up (``laplace_scale``, ``selection_scale``) the result is never above the charged epsilon.
    """
    if entry.sensitivity is None or entry.scale is None:
        return None
    if entry.mechanism in ("laplace", "discrete_laplace"):
        return float(Fraction(entry.sensitivity) / Fraction(entry.scale))
    if entry.mechanism == "exponential":
        factor = entry.rounds * (1 if entry.monotonic else 2)
        return float(factor * Fraction(entry.sensitivity) / Fraction(entry.scale))
    if entry.mechanism == "privtree":
        if entry.depth_bias is None or entry.beta is None or entry.sensitivity != 1.0:
            return None
        lam, delta, beta = entry.scale, entry.depth_bias, entry.beta
        if delta >= lam * math.log(beta):  # the theorem's condition, as privtree_scale chose delta
            return privtree_theorem_epsilon(lam, beta)
        # otherwise the geometric ratio e^(-delta/lam) exceeds 1/beta: the sum itself (never charged so)
        return (1.0 + math.exp(-1.0 / lam) / -math.expm1(-delta / lam)) / lam
    return None


class BudgetScope:
    """A set of records on which spends add up; branches are disjoint subsets (parallel)."""

    __slots__ = ("_accountant", "scope_id", "parent_id", "_chain", "_branched")

    def __init__(self, accountant: "BudgetAccountant", scope_id: int, parent_id: int | None, chain: Fraction):
        self._accountant = accountant
        self.scope_id = scope_id
        self.parent_id = parent_id
        self._chain = chain
        self._branched = False

    @property
    def chain_spent(self) -> float:
        """The exact sum of the spends on the chain from the root to this scope, rounded up."""
        return round_up(self._chain)

    def check(self, epsilon: float, label: str = "a spend") -> None:
        """Raise :class:`BudgetExceededError` if spending ``epsilon`` here would exceed the total."""
        self._accountant._check(self._chain, epsilon, label)

    def spend(self, epsilon: float, label: str, *, mechanism: Mechanism, sensitivity: float | None = None,
              scale: float | None = None, rounds: int = 1, monotonic: bool = False, depth_bias: int | None = None,
              beta: float | None = None) -> None:
        """Charge ``epsilon`` to every record of this scope (sequential composition), as one typed event.

        ``mechanism`` and its parameters are described at :class:`LedgerEntry`. A noise mechanism without the
        parameters :func:`epsilon_of` needs, or whose parameters guarantee less than ``epsilon`` covers (their
        epsilon is larger), is refused with ``ValueError`` before anything is charged: a programming error,
        never an input one.
        """
        if self._branched:
            raise RuntimeError("spend on a scope after it was branched is not modelled; spend on a branch")
        if mechanism not in MECHANISMS:
            raise ValueError(f"{label!r}: unknown mechanism {mechanism!r}; one of {', '.join(sorted(MECHANISMS))}")
        acc = self._accountant
        chain = self._chain + acc._check(self._chain, epsilon, label)
        entry = LedgerEntry(label, float(epsilon), self.scope_id, round_up(chain), mechanism, sensitivity, scale,
                            int(rounds), bool(monotonic), None if depth_bias is None else int(depth_bias),
                            None if beta is None else float(beta))
        if mechanism in NOISE_MECHANISMS:
            derived = epsilon_of(entry)
            if derived is None:
                raise ValueError(f"{label!r}: a {mechanism!r} charge needs the parameters its epsilon is derived "
                                 f"from (see LedgerEntry)")
            if not derived <= entry.epsilon:
                raise ValueError(f"{label!r}: the {mechanism!r} parameters guarantee epsilon {derived!r}, more than "
                                 f"the {entry.epsilon!r} charged")
        self._chain = chain
        acc._record(self, entry)

    def branch(self) -> "BudgetScope":
        """A child scope for a subset of these records that is disjoint from every sibling's."""
        self._branched = True
        return self._accountant._new_scope(self.scope_id, self._chain)


class BudgetAccountant:
    """Holds the declared total epsilon and refuses any spend that would overshoot it.

    ``spent`` is the largest chain total so far (the run's privacy loss, exact and rounded up);
    ``ledger`` lists every charge when ``keep_ledger`` is true (tests read it).
    """

    def __init__(self, total: float, *, keep_ledger: bool = True):
        self.total = check_epsilon(total)
        self._total = Fraction(self.total)
        self._spent = Fraction(0)
        self.keep_ledger = keep_ledger
        self.ledger: list[LedgerEntry] = []
        self.n_spends = 0
        self._next_id = 0

    def root(self) -> BudgetScope:
        """The scope that stands for the whole input dataset."""
        return self._new_scope(None, Fraction(0))

    @property
    def spent(self) -> float:
        return round_up(self._spent)

    @property
    def spent_exact(self) -> Fraction:
        """The largest chain total as an exact rational."""
        return self._spent

    @property
    def remaining(self) -> float:
        return max(0.0, float(self._total - self._spent))

    def _new_scope(self, parent_id: int | None, chain: Fraction) -> BudgetScope:
        scope = BudgetScope(self, self._next_id, parent_id, chain)
        self._next_id += 1
        return scope

    def _check(self, chain: Fraction, epsilon: float, label: str) -> Fraction:
        value = check_epsilon(epsilon, f"the epsilon of {label!r}")
        eps = Fraction(value)
        if chain + eps > self._total * (1 + _REL_TOL):
            raise BudgetExceededError(
                f"privacy budget exhausted: {label} needs epsilon {value:.6g} on top of {float(chain):.6g} "
                f"already spent, which would exceed the total epsilon {self.total:.6g}"
            )
        return eps

    def _record(self, scope: BudgetScope, entry: LedgerEntry) -> None:
        self.n_spends += 1
        if scope._chain > self._spent:
            self._spent = scope._chain
        if self.keep_ledger:
            self.ledger.append(entry)

    def summary(self) -> dict[str, object]:
        """Public facts for the manifest: the declared total and the exact maximum chain total (rounded up).

        Counts of charges are left out on purpose: a reader should not have to
        reason about whether they are post-processing of noisy decisions.
        """
        return {
            "epsilon_total": self.total,
            "epsilon_spent": self.spent,
            "composition": "sequential along a chain, parallel (max) across disjoint partitions",
        }
