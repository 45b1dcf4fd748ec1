"""Crash-safe SQLite state files, shared by the stream state and the budget ledger.

The rules (first written for :mod:`dprelease.setvalued.stream_state`; reused by :mod:`dprelease.ledger`):

* a state file is built under a temporary name beside its destination (``.NAME.PID.XXXX.tmp``, so the next
  run can tell a killed writer's leftovers from a live one's) and renamed into place: a killed ``init``
  leaves either no file or the whole file, never a half-made one;
* ``journal_mode = WAL`` and ``synchronous = FULL``: a committed transaction survives a crash, an
  uncommitted one leaves no trace;
* every change is one ``BEGIN IMMEDIATE`` transaction: it takes the write lock *before* reading what it
  will change, so two processes never both act on the same state; a second one waits up to ``wait``
  seconds and then fails cleanly.
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

__all__ = ["connect", "create_by_rename", "begin_immediate"]


def connect(path: str | os.PathLike, wait: float) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are explicit) with ``synchronous = FULL``;
    a locked database is waited for ``wait`` seconds."""
    conn = sqlite3.connect(str(path), timeout=max(0.0, float(wait)), isolation_level=None)
    conn.execute("PRAGMA synchronous=FULL")
    return conn


def create_by_rename(path: str | os.PathLike, build: Callable[[sqlite3.Connection], None], *,
                     user_version: int, wait: float = 60.0) -> None:
    """Create the SQLite file ``path`` (WAL mode): ``build(conn)`` runs inside one transaction on a temp
    file beside it, which is then renamed into place. The caller checks that ``path`` does not exist."""
    from .data.io import remove_stale_temps

    path = Path(path)
    remove_stale_temps(path)  # left by a killed init (the pid in the name tells a live writer's from a dead one's)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    os.unlink(tmp)
    tmp_path = Path(tmp)
    try:
        with closing(connect(tmp_path, wait)) as conn:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(f"PRAGMA user_version={int(user_version)}")
            conn.execute("BEGIN")
            build(conn)
            conn.execute("COMMIT")
        os.replace(tmp_path, path)
    finally:
        for extra in (tmp_path, Path(str(tmp_path) + "-wal"), Path(str(tmp_path) + "-shm")):
            if extra.exists():
                extra.unlink()


def begin_immediate(conn: sqlite3.Connection, locked: Callable[[str], Exception]) -> None:
    """Take the write lock (``BEGIN IMMEDIATE``); past the connection's wait, raise ``locked(reason)``."""
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as exc:
        raise locked(str(exc)) from None
