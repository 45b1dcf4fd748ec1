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

Each charge is a typed :class:`LedgerEntry` (mechanism, sensitivity, scale,
epsilon, label; dp_accounting's events), so a test can re-derive every epsilon
from the mechanism's parameters (:func:`epsilon_of`).

>>> acc = BudgetAccountant(1.0)
>>> root = acc.root()
>>> root.spend(0.5, "split", mechanism="discrete_laplace", sensitivity=1.0, scale=2.0)
>>> left, right = root.branch(), root.branch()   # disjoint records: parallel composition
>>> left.spend(0.5, "left counts")
>>> right.spend(0.25, "right counts")
>>> acc.spent
1.0
>>> epsilon_of(acc.ledger[0])
0.5
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from ..errors import BudgetExceededError, ParameterError

__all__ = ["BudgetAccountant", "BudgetScope", "LedgerEntry", "check_epsilon", "check_sensitivity", "epsilon_of",
           "round_up"]

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


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    """One charge, as a typed event: what it was for, the mechanism and its parameters, where it fell.

    ``mechanism`` is ``"laplace"`` / ``"discrete_laplace"`` (epsilon >= sensitivity / scale),
    ``"exponential"`` (epsilon >= rounds * (1 if monotonic else 2) * sensitivity / scale, the Gumbel scale),
    ``"composite"`` (an algorithm-level charge, e.g. one append of a stream) or ``"reserved"`` (budget set
    aside and not used). ``chain_total`` is the scope's exact chain total after the charge, rounded up.
    """

    label: str
    epsilon: float
    scope_id: int
    chain_total: float
    mechanism: str = "unspecified"
    sensitivity: float | None = None
    scale: float | None = None
    rounds: int = 1
    monotonic: bool = False


def epsilon_of(entry: LedgerEntry) -> float | None:
    """The epsilon a charge's mechanism parameters guarantee (None when the entry records none)."""
    if entry.sensitivity is None or entry.scale is None:
        return None
    if entry.mechanism in ("laplace", "discrete_laplace"):
        return entry.sensitivity / entry.scale
    if entry.mechanism == "exponential":
        return entry.rounds * (1.0 if entry.monotonic else 2.0) * entry.sensitivity / entry.scale
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

    def spend(self, epsilon: float, label: str, *, mechanism: str = "unspecified", sensitivity: float | None = None,
              scale: float | None = None, rounds: int = 1, monotonic: bool = False) -> None:
        """Charge ``epsilon`` to every record of this scope (sequential composition), as one typed event."""
        if self._branched:
            raise RuntimeError("spend on a scope after it was branched is not modelled; spend on a branch")
        acc = self._accountant
        eps = acc._check(self._chain, epsilon, label)
        self._chain += eps
        acc._record(self, LedgerEntry(label, float(epsilon), self.scope_id, round_up(self._chain), mechanism,
                                      sensitivity, scale, int(rounds), bool(monotonic)))

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
