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
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import BudgetExceededError, ParameterError

__all__ = ["BudgetAccountant", "BudgetScope", "LedgerEntry", "check_epsilon"]

# Relative slack for float sums such as B/6 + B/6 + 2B/3 == B.
_REL_TOL = 1e-9


def check_epsilon(epsilon: float, name: str = "--epsilon") -> float:
    """Return ``epsilon`` as a float, or raise :class:`ParameterError` if it is not a finite number > 0."""
    try:
        value = float(epsilon)
    except (TypeError, ValueError):
        raise ParameterError(f"{name} must be a number > 0, got {epsilon!r}") from None
    if not (value > 0.0) or value == float("inf"):
        raise ParameterError(f"{name} must be a finite number > 0, got {epsilon!r}")
    return value


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    """One charge: what it was for, its epsilon, the scope it fell on, the chain total after it."""

    label: str
    epsilon: float
    scope_id: int
    chain_total: float


class BudgetScope:
    """A set of records on which spends add up; branches are disjoint subsets (parallel)."""

    __slots__ = ("_accountant", "scope_id", "parent_id", "chain_spent", "_branched")

    def __init__(self, accountant: "BudgetAccountant", scope_id: int, parent_id: int | None, chain_spent: float):
        self._accountant = accountant
        self.scope_id = scope_id
        self.parent_id = parent_id
        self.chain_spent = chain_spent
        self._branched = False

    def check(self, epsilon: float) -> None:
        """Raise :class:`BudgetExceededError` if spending ``epsilon`` here would exceed the total."""
        self._accountant._check(self.chain_spent, epsilon)

    def spend(self, epsilon: float, label: str) -> None:
        """Charge ``epsilon`` to every record of this scope (sequential composition)."""
        if self._branched:
            raise RuntimeError("spend on a scope after it was branched is not modelled; spend on a branch")
        acc = self._accountant
        acc._check(self.chain_spent, epsilon)
        self.chain_spent += epsilon
        acc._record(self, label, epsilon)

    def branch(self) -> "BudgetScope":
        """A child scope for a subset of these records that is disjoint from every sibling's."""
        self._branched = True
        return self._accountant._new_scope(self.scope_id, self.chain_spent)


class BudgetAccountant:
    """Holds the declared total epsilon and refuses any spend that would overshoot it.

    ``spent`` is the largest chain total so far (the run's privacy loss); ``ledger``
    lists every charge when ``keep_ledger`` is true (tests and manifests read it).
    """

    def __init__(self, total: float, *, keep_ledger: bool = True):
        self.total = check_epsilon(total)
        self.spent = 0.0
        self.keep_ledger = keep_ledger
        self.ledger: list[LedgerEntry] = []
        self.n_spends = 0
        self._next_id = 0

    def root(self) -> BudgetScope:
        """The scope that stands for the whole input dataset."""
        return self._new_scope(None, 0.0)

    @property
    def remaining(self) -> float:
        return max(0.0, self.total - self.spent)

    def _new_scope(self, parent_id: int | None, chain_spent: float) -> BudgetScope:
        scope = BudgetScope(self, self._next_id, parent_id, chain_spent)
        self._next_id += 1
        return scope

    def _check(self, chain_spent: float, epsilon: float) -> None:
        if not (epsilon > 0.0) or epsilon == float("inf"):
            raise ParameterError(f"a spend must be a finite epsilon > 0, got {epsilon!r}")
        if chain_spent + epsilon > self.total * (1.0 + _REL_TOL):
            raise BudgetExceededError(
                f"privacy budget exhausted: spending {epsilon:.6g} on top of {chain_spent:.6g} "
                f"would exceed the total epsilon {self.total:.6g}"
            )

    def _record(self, scope: BudgetScope, label: str, epsilon: float) -> None:
        self.n_spends += 1
        if scope.chain_spent > self.spent:
            self.spent = scope.chain_spent
        if self.keep_ledger:
            self.ledger.append(LedgerEntry(label, epsilon, scope.scope_id, scope.chain_spent))

    def summary(self) -> dict[str, object]:
        """Public facts for the manifest: the declared total and the spent maximum chain total.

        Counts of charges are left out on purpose: a reader should not have to
        reason about whether they are post-processing of noisy decisions.
        """
        spent = self.total if abs(self.spent - self.total) <= self.total * _REL_TOL else self.spent
        return {
            "epsilon_total": self.total,
            "epsilon_spent": spent,
            "composition": "sequential along a chain, parallel (max) across disjoint partitions",
        }
