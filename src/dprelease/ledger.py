"""One privacy-budget ledger across all releases of a dataset (issue 14, section 1).

Differential privacy composes: releases made from the same people's records add up (sequential
composition), whichever command made them. A ledger holds a dataset's total epsilon and every charge
against it, across commands and processes. It stores nothing about the data: the dataset's *name*, the
total, and per charge the command, its epsilon, the output path, the command's start time and its state.

SQLite file (``PRAGMA user_version = 1``; WAL, ``synchronous = FULL``; :mod:`dprelease.sqlite_state`):

* ``meta(key, value)`` -- JSON values: ``format``, ``dataset``, ``epsilon`` (the total, as exact decimal
  text), ``ledger_id`` (random; a stream state names its ledger by it);
* ``charges(id, command, epsilon, output, created, state, covered_by)`` -- one row per reservation, in the
  order they were made: ``epsilon`` is exact decimal text; ``created`` is the command's start (UTC, to the
  second; no completion time is stored, it would reveal how long the run took, which depends on the data);
  ``state`` goes ``reserved`` -> ``complete``; ``covered_by`` names the charge that already paid for this one
  (a stream's appends are covered by its ``stream init``, which reserved the stream's whole epsilon).

Rules:

* **Reserve before reading.** A releasing command reserves its epsilon in one ``BEGIN IMMEDIATE``
  transaction (read the sum, compare with the total, insert, commit) before it reads any data; the
  reservation is refused (:class:`BudgetExceededError`, nothing changed) when it would take the total spent
  past the ledger's epsilon. Two processes never both see the same remaining budget: the write lock is
  taken before the sum is read.
* **Exact arithmetic.** Epsilons are stored as the decimal text of the float the command spends
  (``Decimal(repr(eps))``: ``0.1`` is stored as ``0.1``) and added as fractions, so ten charges of 0.1
  fit exactly in 1.0 and nothing overspends, or is refused, by rounding.
* **A charge is never lost.** The reservation is committed before the data is read; the release is marked
  ``complete`` (with its output) after it is written. A run that fails or is killed in between leaves its
  reservation ``reserved``: it stays counted (the data may have been read, the noise drawn) and ``status``
  shows it as *incomplete*. There is no command to take it back: whether a failed run released something
  (a message, a partial effect) is not something the ledger can know, so the safe answer is kept.
"""

from __future__ import annotations

import json
import os
import sqlite3
import uuid
from contextlib import closing
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

from . import sqlite_state
from .errors import BudgetExceededError, DPReleaseError, InputError, ParameterError

__all__ = ["FORMAT", "DEFAULT_WAIT", "LedgerLockedError", "Charge", "LedgerStatus", "exact_epsilon",
           "decimal_text", "init_ledger", "ledger_status", "reserve", "complete", "ledger_identity"]

FORMAT = "dprelease-ledger/1"
_USER_VERSION = 1
DEFAULT_WAIT = 60.0
COMPLETE, RESERVED = "complete", "reserved"

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE charges (
    id INTEGER PRIMARY KEY, command TEXT NOT NULL, epsilon TEXT NOT NULL, output TEXT NOT NULL,
    created TEXT NOT NULL, state TEXT NOT NULL CHECK (state IN ('reserved', 'complete')),
    covered_by INTEGER REFERENCES charges(id));
"""


class LedgerLockedError(DPReleaseError):
    """Another process holds the ledger's write lock past the wait time."""


def exact_epsilon(epsilon: float | str | Decimal | Fraction) -> Fraction:
    """The exact value a ledger counts for ``epsilon``: the decimal the float prints as (``0.1`` -> 1/10).

    Refuses NaN, infinities and negative values (a charge of 0 is a covered release)."""
    if isinstance(epsilon, Fraction):
        value = epsilon
    else:
        text = repr(float(epsilon)) if isinstance(epsilon, float) else str(epsilon).strip()
        try:
            dec = Decimal(text)
        except ArithmeticError:
            raise ParameterError(f"epsilon {epsilon!r} is not a number") from None
        if not dec.is_finite():
            raise ParameterError(f"epsilon {epsilon!r} is not finite")
        value = Fraction(dec)
    if value < 0:
        raise ParameterError(f"epsilon {epsilon!r} is negative")
    return value


def decimal_text(value: Fraction) -> str:
    """A sum of decimals written exactly as a decimal (its denominator divides a power of 10)."""
    num, den = value.numerator, value.denominator
    places = 0
    while (10 ** places) % den:
        places += 1
        if places > 4000:  # not a sum of decimals: never happens for ledger values
            return repr(float(value))
    digits = str(abs(num) * (10 ** places // den)).rjust(places + 1, "0")
    sign = "-" if num < 0 else ""
    if places == 0:
        return sign + digits
    whole, frac = digits[:-places], digits[-places:].rstrip("0")
    return sign + whole + ("." + frac if frac else "")


def _float(value: Fraction) -> float:
    return float(value)  # correctly rounded: 3/10 -> 0.3


@dataclass(frozen=True, slots=True)
class Charge:
    id: int
    command: str
    epsilon: Fraction
    output: str
    created: str
    state: str
    covered_by: int | None = None

    @property
    def complete(self) -> bool:
        return self.state == COMPLETE

    def as_json(self) -> dict[str, object]:
        out: dict[str, object] = {"id": self.id, "command": self.command, "epsilon": _float(self.epsilon),
                                  "output": self.output, "created": self.created,
                                  "state": COMPLETE if self.complete else "incomplete"}
        if self.covered_by is not None:
            out["covered_by"] = self.covered_by
        return out


@dataclass(frozen=True, slots=True)
class LedgerStatus:
    path: str
    dataset: str
    epsilon: Fraction
    ledger_id: str
    charges: tuple[Charge, ...] = field(default=())

    @property
    def spent(self) -> Fraction:
        """Every charge counts, complete or not (an incomplete one may have read the data)."""
        return sum((c.epsilon for c in self.charges), Fraction(0))

    @property
    def remaining(self) -> Fraction:
        return self.epsilon - self.spent

    @property
    def incomplete(self) -> int:
        return sum(1 for c in self.charges if not c.complete)

    def as_json(self) -> dict[str, object]:
        return {"dataset": self.dataset, "epsilon": _float(self.epsilon), "epsilon_spent": _float(self.spent),
                "releases": [c.as_json() for c in self.charges],
                "epsilon_remaining": _float(self.remaining), "incomplete": self.incomplete,
                "exact": {"epsilon": decimal_text(self.epsilon), "epsilon_spent": decimal_text(self.spent),
                          "epsilon_remaining": decimal_text(self.remaining)},
                "ledger_id": self.ledger_id}


def init_ledger(path: str | os.PathLike, *, dataset: str, epsilon: float) -> LedgerStatus:
    """Create a ledger (refuses to overwrite one); built beside it and renamed into place."""
    path = Path(path)
    if not str(dataset).strip() or "\n" in str(dataset):
        raise ParameterError("--dataset: give the dataset a non-empty one-line name")
    total = exact_epsilon(epsilon)
    if total <= 0:
        raise ParameterError(f"--epsilon: the ledger's total must be > 0, got {epsilon!r}")
    if path.exists() or path.is_symlink():
        raise InputError(f"{path}: already exists; a ledger is created once (it holds every charge made so far)")
    if not path.name:
        raise ParameterError(f"{path}: give the ledger a file name")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"{path.parent}: cannot create the folder ({exc.strerror or exc})") from None
    meta = {"format": FORMAT, "dataset": str(dataset), "epsilon": decimal_text(total), "ledger_id": uuid.uuid4().hex}

    def build(conn: sqlite3.Connection) -> None:
        for stmt in _SCHEMA.strip().split(";"):
            if stmt.strip():
                conn.execute(stmt)
        conn.executemany("INSERT INTO meta VALUES (?, ?)", [(k, json.dumps(v)) for k, v in meta.items()])

    try:
        sqlite_state.create_by_rename(path, build, user_version=_USER_VERSION)
    except OSError as exc:
        raise InputError(f"{path}: cannot create the ledger ({exc.strerror or exc})") from None
    return LedgerStatus(str(path), str(dataset), total, meta["ledger_id"])


def _open(path: str | os.PathLike, wait: float = DEFAULT_WAIT) -> sqlite3.Connection:
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such ledger (create it with `dprelease ledger init {path} --dataset NAME "
                         f"--epsilon TOTAL`)")
    try:
        conn = sqlite_state.connect(path, wait)
        row = conn.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()
    except sqlite3.DatabaseError:
        raise InputError(f"{path}: not a dprelease ledger (not an SQLite file of this format)") from None
    if row is None or json.loads(row[0]) != FORMAT:
        conn.close()
        raise InputError(f"{path}: not a dprelease ledger (format {json.loads(row[0]) if row else 'missing'})")
    return conn


def _read(conn: sqlite3.Connection, path: str | os.PathLike) -> LedgerStatus:
    meta = {k: json.loads(v) for k, v in conn.execute("SELECT key, value FROM meta")}
    charges = tuple(
        Charge(int(i), str(cmd), exact_epsilon(eps), str(out), str(created), str(state),
               None if cov is None else int(cov))
        for (i, cmd, eps, out, created, state, cov) in conn.execute(
            "SELECT id, command, epsilon, output, created, state, covered_by FROM charges ORDER BY id"))
    return LedgerStatus(str(path), str(meta["dataset"]), exact_epsilon(str(meta["epsilon"])),
                        str(meta.get("ledger_id", "")), charges)


def ledger_status(path: str | os.PathLike) -> LedgerStatus:
    """The ledger's total, what is spent and every charge (one consistent snapshot)."""
    with closing(_open(path)) as conn:
        conn.execute("BEGIN")
        status = _read(conn, path)
        conn.execute("COMMIT")
    return status


def ledger_identity(path: str | os.PathLike) -> dict[str, object]:
    """How a stream state names its ledger: the resolved path and the random ledger id."""
    return {"path": str(Path(path).resolve()), "ledger_id": ledger_status(path).ledger_id}


def reserve(path: str | os.PathLike, command: str, epsilon: float | Fraction, *, output: str | os.PathLike,
            created: str, covered_by: int | None = None, ledger_id: str | None = None,
            wait: float = DEFAULT_WAIT) -> Charge:
    """Reserve ``epsilon`` for ``command`` in one committed transaction, or refuse with nothing changed.

    ``covered_by``: the charge that already paid for this release (``epsilon`` must then be 0; the charge must
    exist). ``ledger_id``: refuse unless the ledger is this one (a stream names its ledger by id).
    Raises :class:`BudgetExceededError` when the remaining budget is too small.
    """
    eps = exact_epsilon(epsilon)
    if covered_by is None and eps <= 0:
        raise ParameterError(f"{command}: a charge needs an epsilon > 0")
    if covered_by is not None and eps != 0:
        raise ParameterError(f"{command}: a covered release charges nothing more")
    with closing(_open(path, wait)) as conn:
        sqlite_state.begin_immediate(conn, lambda why: LedgerLockedError(
            f"{path}: another command holds the ledger ({why}); nothing reserved"))
        try:
            status = _read(conn, path)  # read under the write lock: no other reservation can interleave
            if ledger_id is not None and status.ledger_id != ledger_id:
                raise InputError(f"{path} is not the ledger this release belongs to (ledger id "
                                 f"{status.ledger_id}, expected {ledger_id}); nothing reserved")
            if covered_by is not None and not any(c.id == covered_by for c in status.charges):
                raise InputError(f"{path}: charge #{covered_by}, which paid for this release, is not in the "
                                 f"ledger; nothing reserved")
            if eps > status.remaining:
                incomplete = f", {status.incomplete} of them incomplete" if status.incomplete else ""
                raise BudgetExceededError(
                    f"ledger {path} ({status.dataset}): {command} needs epsilon {decimal_text(eps)} but only "
                    f"{decimal_text(status.remaining)} of {decimal_text(status.epsilon)} remains ({decimal_text(status.spent)} "
                    f"spent by {len(status.charges)} charges{incomplete}); refused before reading the data, "
                    f"nothing written")
            cur = conn.execute("INSERT INTO charges (command, epsilon, output, created, state, covered_by) "
                               "VALUES (?, ?, ?, ?, ?, ?)",
                               (command, decimal_text(eps), str(output), created, RESERVED, covered_by))
            charge_id = int(cur.lastrowid)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
    return Charge(charge_id, command, eps, str(output), created, RESERVED, covered_by)


def complete(path: str | os.PathLike, charge_id: int, *, output: str | os.PathLike | None = None,
             wait: float = DEFAULT_WAIT) -> None:
    """Mark a reservation complete (its release is written), recording the output path."""
    with closing(_open(path, wait)) as conn:
        sqlite_state.begin_immediate(conn, lambda why: LedgerLockedError(
            f"{path}: another command holds the ledger ({why}); charge #{charge_id} stays reserved "
            f"(counted, shown as incomplete)"))
        try:
            if output is None:
                cur = conn.execute("UPDATE charges SET state = ? WHERE id = ? AND state = ?",
                                   (COMPLETE, charge_id, RESERVED))
            else:
                cur = conn.execute("UPDATE charges SET state = ?, output = ? WHERE id = ? AND state = ?",
                                   (COMPLETE, str(output), charge_id, RESERVED))
            if cur.rowcount != 1:
                raise InputError(f"{path}: no reserved charge #{charge_id} to complete")
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
