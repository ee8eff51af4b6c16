"""The vacuum an erasure runs itself, once it has committed, on the tables it touched.

A deleted row stays in its heap page as a dead tuple, readable in the table's
files, until a VACUUM prunes it. ``forget_user`` therefore notes, inside its
transaction, its transaction id and the tables it deleted or updated rows in
(:func:`erasure_trace`, from ``pg_stat_xact_user_tables``), and after the commit
hands them to :class:`ErasureVacuum`, which runs on an autocommit connection
(VACUUM cannot run in a transaction block):

1. it waits until no other session of the database still holds a snapshot taken
   before the erasure committed (such a snapshot may still see the rows, so VACUUM
   would keep them);
2. it runs ``VACUUM (INDEX_CLEANUP OFF, TRUNCATE OFF)`` on those tables (and their
   TOAST tables): the heap pages are pruned, the dead tuples' line pointers left as
   stubs without content, and no index is scanned, so the cost follows the pages
   changed since the table's last vacuum, not the table's size; the index entries
   go at the next vacuum with index cleanup (the sweep's, or autovacuum's).

Both steps share one deadline (``timeout_s``, also the lock timeout). Erasures that
arrive while a vacuum runs are coalesced: they wait for it and then share the next
one, which covers every table they touched, so a burst of N erasures in a process
runs at most two vacuums at a time, not N. A vacuum that fails or runs out of time
is logged and reported, never raised: the erasure itself has committed, and the
sweep's vacuum (or the next erasure's, which prunes every dead tuple of the table)
clears what it left.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

from sqlalchemy import Connection, text

from policies.errors import DualtrackError
from structured_memory.cross_user.marking import cross_user_autocommit
from structured_memory.database import Database

__all__ = ["ErasureTrace", "ErasureVacuum", "VacuumOutcome", "erasure_trace"]

_log = logging.getLogger(__name__)

_POLL_S = (0.01, 0.25)
"""First and longest pause between two looks for older snapshots."""


@dataclass(frozen=True)
class ErasureTrace:
    """What a committed erasure left for the vacuum: its transaction and tables."""

    xid: int
    """The erasure's 32-bit transaction id."""
    tables: frozenset[str]


def erasure_trace(conn: Connection) -> ErasureTrace:
    """In the erasure's transaction, after its deletes: its id and the tables it changed."""
    xid = conn.execute(text("SELECT pg_current_xact_id()::xid::text")).scalar_one()
    tables = conn.execute(
        text(
            "SELECT relname FROM pg_stat_xact_user_tables "
            "WHERE schemaname = current_schema() AND n_tup_del + n_tup_upd > 0"
        )
    ).scalars()
    return ErasureTrace(int(xid), frozenset(tables))


@dataclass(frozen=True)
class VacuumOutcome:
    """What one erasure vacuum did."""

    tables: tuple[str, ...]
    vacuumed: bool
    """False when it failed or ran out of time (``reason`` says which)."""
    reason: str | None = None


_OLDER_SNAPSHOTS = text(
    """
    SELECT count(*) FROM pg_stat_activity
    WHERE datname = current_database() AND pid <> pg_backend_pid()
      AND backend_type <> 'autovacuum worker'
      AND GREATEST(age(backend_xmin), age(backend_xid)) >= age(CAST(:xid AS xid))
    """
)


class ErasureVacuum:
    """Vacuums, after each erasure, the tables it touched; concurrent erasures share one.

    ``timeout_s`` bounds one vacuum (the wait for older snapshots included); 0 turns
    the vacuum off (the sweep's then clears erased rows). Thread-safe.
    """

    def __init__(self, db: Database, *, timeout_s: float) -> None:
        self._db = db
        self._timeout_s = timeout_s
        self._cond = threading.Condition()
        self._tables: set[str] = set()  # what the queued erasures touched
        self._xid = 0  # the newest of their transactions
        self._queued = 0
        self._started = 0
        self._finished = 0
        self._running = False
        self._outcomes: dict[int, tuple[VacuumOutcome, int]] = {}  # by vacuum: its erasures

    @property
    def waiting(self) -> int:
        """Erasures whose vacuum has not started yet (queued behind a running one)."""
        with self._cond:
            return self._queued

    def after(self, trace: ErasureTrace) -> VacuumOutcome:
        """Vacuum what ``trace`` touched, in a vacuum that starts after this call; its
        outcome. Blocks until that vacuum has ended."""
        if self._timeout_s <= 0 or not trace.tables:
            return VacuumOutcome(tuple(sorted(trace.tables)), vacuumed=False, reason="off")
        with self._cond:
            self._tables |= trace.tables
            self._xid = _newer(self._xid, trace.xid)
            self._queued += 1
            ticket = self._started + 1  # the first vacuum started from now on covers us
            while self._finished < ticket:
                if self._running:
                    self._cond.wait()
                else:
                    self._lead()
            outcome, left = self._outcomes.pop(ticket)
            if left > 1:
                self._outcomes[ticket] = (outcome, left - 1)
            return outcome

    def _lead(self) -> None:
        """Run the next vacuum for every queued erasure (called holding the lock, which
        it releases while the vacuum runs)."""
        self._running = True
        self._started += 1
        number, members, tables, xid = self._started, self._queued, sorted(self._tables), self._xid
        self._tables, self._queued = set(), 0
        self._cond.release()
        outcome = VacuumOutcome(tuple(tables), vacuumed=False, reason="failed")
        try:
            outcome = self._vacuum(tables, xid)
        finally:
            self._cond.acquire()
            self._running = False
            self._finished = number
            self._outcomes[number] = (outcome, members)
            self._cond.notify_all()

    def _vacuum(self, tables: list[str], xid: int) -> VacuumOutcome:
        deadline = time.monotonic() + self._timeout_s
        try:
            with cross_user_autocommit(self._db) as conn:
                held = _await_older_snapshots(conn, xid, deadline)
                left_ms = max(1, int((deadline - time.monotonic()) * 1000))
                conn.execute(text(f"SET statement_timeout = {left_ms}"))
                conn.execute(text(f"SET lock_timeout = {left_ms}"))
                try:
                    names = ", ".join(map(conn.dialect.identifier_preparer.quote, tables))
                    conn.execute(text(f"VACUUM (INDEX_CLEANUP OFF, TRUNCATE OFF) {names}"))
                finally:
                    conn.execute(text("RESET statement_timeout"))
                    conn.execute(text("RESET lock_timeout"))
        except DualtrackError as err:
            reason = "failed" if err.details.get("sqlstate") not in _TIMEOUTS else "timeout"
            _log.warning(
                "erasure vacuum %s (%s, %s); the sweep's vacuum will clear the erased rows",
                reason,
                err.code,
                err.details.get("sqlstate"),
            )
            return VacuumOutcome(tuple(tables), vacuumed=False, reason=reason)
        if held:
            _log.warning(
                "erasure vacuum ran with a snapshot older than the erasure still open; "
                "rows it still sees wait for the sweep's vacuum"
            )
            return VacuumOutcome(tuple(tables), vacuumed=True, reason="older snapshot")
        return VacuumOutcome(tuple(tables), vacuumed=True)


_TIMEOUTS = {"57014", "55P03"}  # statement timeout (canceled), lock not available


def _await_older_snapshots(conn: Connection, xid: int, deadline: float) -> bool:
    """Wait until no other session holds a snapshot from before ``xid`` committed, or
    until ``deadline``; whether one still did then."""
    pause = _POLL_S[0]
    while conn.execute(_OLDER_SNAPSHOTS, {"xid": str(xid)}).scalar_one():
        if time.monotonic() + pause > deadline:
            return True
        time.sleep(pause)
        pause = min(pause * 2, _POLL_S[1])
    return False


def _newer(a: int, b: int) -> int:
    """The later of two 32-bit transaction ids, modulo wraparound (0: none yet)."""
    if a == 0:
        return b
    return b if 0 < (b - a) % 2**32 < 2**31 else a
