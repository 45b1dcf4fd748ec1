"""One privacy-budget ledger across all releases of a dataset.

Differential privacy composes: releases made from the same people's records add up (sequential
composition), whichever command made them. A ledger holds a dataset's total epsilon and every charge
against it, across commands and processes. It stores nothing about the data: the dataset's *name*, the
total, and per charge the command, its epsilon, the output path, the command's start time and its state.

SQLite file (``PRAGMA user_version = 1``; WAL, ``synchronous = FULL``; :mod:`dprelease.sqlite_state`):

* ``meta(key, value)`` -- JSON values: ``format``, ``dataset``, ``epsilon`` (the total, as exact decimal
  text), ``ledger_id`` (random; a stream state names its ledger by it);
* ``charges(id, command, epsilon, output, created, state, covered_by, privacy_unit)`` -- one row per
  reservation, in the order they were made: ``epsilon`` is exact decimal text; ``created`` is the command's
  start (UTC, to the second; no completion time is stored, it would reveal how long the run took, which depends
  on the data); ``state`` goes ``reserved`` -> ``complete``; ``covered_by`` names the charge that already paid
  for this one (a stream's appends are covered by its ``stream init``, which reserved the stream's whole
  epsilon); ``privacy_unit`` is what the charge's epsilon protects when the release declares it ("person",
  "record"; NULL: not declared). Ledgers made before the column existed get it (NULL for every old charge)
  the first time a charge records a unit; an old program reading a new ledger ignores it.

Rules:

* **Reserve before reading.** A releasing command reserves its epsilon in one ``BEGIN IMMEDIATE``
  transaction (read the sum, compare with the total, insert, commit) before it reads any data; the
  reservation is refused (:class:`BudgetExceededError`, nothing changed) when it would take the total spent
  past the ledger's epsilon (beyond the accountants' relative slack of 1e-9, ``REL_TOL``). Two processes never both see the same remaining budget: the write lock is
  taken before the sum is read.
* **Exact arithmetic.** Epsilons are stored as the decimal text of a float (``Decimal(repr(eps))``: ``0.1``
  is stored as ``0.1``) and added as fractions, so ten charges of 0.1 fit exactly in 1.0 and nothing
  overspends, or is refused, by rounding.
* **What was admitted, not what was declared.** A reservation is the declared epsilon (all that is known
  before the data is read). When the release is written (:func:`complete`), the charge becomes what the
  run's accountant admitted, as the release's manifest reports it (``privacy.epsilon_spent``: the exact sum
  of the charges on the longest chain, rounded up to a float) when that is more than the reservation: float
  budget splits can admit 0.30000000000000004 for a declared 0.3 (the accountant's relative slack of 1e-9),
  and the ledger then counts 0.30000000000000004, so its remaining budget never over-reports (it is negative
  when a run's float splits took the total past the ledger's own, within the slack). (A charge is
  never lowered below its reservation: the manifest's ``epsilon``, the declared one, is what the release
  claims.) A ``stream init`` reserves what the stream's accountants will admit over every append at once.
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
           "decimal_text", "init_ledger", "ledger_status", "reserve", "complete", "ledger_identity",
           "mark_privacy_unit", "admitted_epsilon"]

FORMAT = "dprelease-ledger/1"
_USER_VERSION = 1
DEFAULT_WAIT = 60.0
COMPLETE, RESERVED = "complete", "reserved"

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE charges (
    id INTEGER PRIMARY KEY, command TEXT NOT NULL, epsilon TEXT NOT NULL, output TEXT NOT NULL,
    created TEXT NOT NULL, state TEXT NOT NULL CHECK (state IN ('reserved', 'complete')),
    covered_by INTEGER REFERENCES charges(id), privacy_unit TEXT);
"""
PRIVACY_UNITS = ("person", "record", "node")  # dprelease.release.PRIVACY_UNITS
# The relative slack every accountant admits (privacy/accountant.py): float budget splits such as
# 0.2 + 0.2 + 0.2 + 0.2 + 0.2 admit 1.0000000000000002 for a declared 1. The ledger admits a charge while the
# exact total stays within this slack of its own total, and reports the exact total (the remaining budget is
# then negative: never over-reported).
REL_TOL = Fraction(1, 10**9)


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
    privacy_unit: str | None = None  # what the epsilon protects, when the release declares it

    @property
    def complete(self) -> bool:
        return self.state == COMPLETE

    def as_json(self) -> dict[str, object]:
        out: dict[str, object] = {"id": self.id, "command": self.command, "epsilon": _float(self.epsilon),
                                  "output": self.output, "created": self.created,
                                  "state": COMPLETE if self.complete else "incomplete"}
        if self.covered_by is not None:
            out["covered_by"] = self.covered_by
        if self.privacy_unit is not None:
            out["privacy_unit"] = self.privacy_unit
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


def _has_unit_column(conn: sqlite3.Connection) -> bool:
    return any(row[1] == "privacy_unit" for row in conn.execute("PRAGMA table_info(charges)"))


def _read(conn: sqlite3.Connection, path: str | os.PathLike) -> LedgerStatus:
    meta = {k: json.loads(v) for k, v in conn.execute("SELECT key, value FROM meta")}
    unit = "privacy_unit" if _has_unit_column(conn) else "NULL"  # a ledger made before the column existed
    charges = tuple(
        Charge(int(i), str(cmd), exact_epsilon(eps), str(out), str(created), str(state),
               None if cov is None else int(cov), None if pu is None else str(pu))
        for (i, cmd, eps, out, created, state, cov, pu) in conn.execute(
            f"SELECT id, command, epsilon, output, created, state, covered_by, {unit} FROM charges ORDER BY id"))
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
            if eps > status.remaining + status.epsilon * REL_TOL:
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


def admitted_epsilon(release: str | os.PathLike) -> tuple[float | None, str | None]:
    """What the accountant admitted for the release at ``release``, and its privacy unit, as its manifest
    reports them (``privacy.epsilon_spent``: the exact spent total rounded up; ``privacy_unit``); (None, None)
    when there is no readable manifest or it reports no spend (a stream state, a non-DP output)."""
    import math

    from .release import manifest_path

    try:
        manifest = json.loads(manifest_path(release).read_text(encoding="utf-8-sig"))
    except (OSError, ValueError):
        return None, None
    if not isinstance(manifest, dict):
        return None, None
    privacy = manifest.get("privacy")
    spent = privacy.get("epsilon_spent") if isinstance(privacy, dict) else None
    unit = manifest.get("privacy_unit")
    ok = isinstance(spent, (int, float)) and not isinstance(spent, bool) and math.isfinite(spent) and spent > 0
    return (float(spent) if ok else None), (str(unit) if unit in PRIVACY_UNITS else None)


def _set_unit(conn: sqlite3.Connection, charge_id: int, privacy_unit: str) -> None:
    """Record a charge's privacy unit (inside the caller's write transaction; adds the column to an old ledger)."""
    if privacy_unit not in PRIVACY_UNITS:
        raise ParameterError(f"privacy unit must be one of {', '.join(PRIVACY_UNITS)}, got {privacy_unit!r}")
    if not _has_unit_column(conn):
        conn.execute("ALTER TABLE charges ADD COLUMN privacy_unit TEXT")
    conn.execute("UPDATE charges SET privacy_unit = ? WHERE id = ?", (privacy_unit, charge_id))


def mark_privacy_unit(path: str | os.PathLike, charge_id: int, privacy_unit: str, *,
                      wait: float = DEFAULT_WAIT) -> None:
    """Record what charge ``charge_id``'s epsilon protects ("person" or "record"): ``stream init`` marks its
    reservation with the stream's declared unit (a record-level stream's epsilon does not bound a person's
    loss across batches, and ``ledger status`` says so)."""
    with closing(_open(path, wait)) as conn:
        sqlite_state.begin_immediate(conn, lambda why: LedgerLockedError(
            f"{path}: another command holds the ledger ({why}); charge #{charge_id} keeps no privacy unit"))
        try:
            if conn.execute("SELECT 1 FROM charges WHERE id = ?", (charge_id,)).fetchone() is None:
                raise InputError(f"{path}: no charge #{charge_id}")
            _set_unit(conn, charge_id, privacy_unit)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise


def complete(path: str | os.PathLike, charge_id: int, *, output: str | os.PathLike | None = None,
             spent: float | None = None, wait: float = DEFAULT_WAIT) -> None:
    """Mark a reservation complete (its release is written), recording the output path, and what was admitted.

    ``spent``: what the run's accountant admitted (exact total rounded up); by default read from the
    release's manifest (:func:`admitted_epsilon`). A charge that was not covered by another becomes
    max(reservation, spent): never less than the declared epsilon the release claims, never less than what was
    admitted. The manifest's privacy unit, if it states one, is recorded too."""
    with closing(_open(path, wait)) as conn:
        row = conn.execute("SELECT output FROM charges WHERE id = ?", (charge_id,)).fetchone()
        release = output if output is not None else (row[0] if row else None)
        unit = None
        if release is not None and str(release):
            read_spent, unit = admitted_epsilon(release)
            spent = read_spent if spent is None else spent
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
            reserved, covered = conn.execute("SELECT epsilon, covered_by FROM charges WHERE id = ?",
                                             (charge_id,)).fetchone()
            if spent is not None and covered is None and exact_epsilon(spent) > exact_epsilon(str(reserved)):
                conn.execute("UPDATE charges SET epsilon = ? WHERE id = ?",
                             (decimal_text(exact_epsilon(spent)), charge_id))
            if unit is not None:
                _set_unit(conn, charge_id, unit)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
