"""The transactional outbox: index operations committed with the ledger change.

``claim`` locks a batch of due entries (``FOR UPDATE SKIP LOCKED``, so several
workers never take the same entry) inside one transaction; the worker applies
them to the index and marks the batch done (deleted) or failed (attempts
counted, next attempt scheduled) before the transaction commits.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import Connection, delete, func, select, update

from policies.outbox import OutboxOp
from structured_memory.cross_user import cross_user_transaction
from structured_memory.database import Database
from structured_memory.models import FragmentOutbox, table_of

__all__ = ["ClaimedBatch", "Outbox", "OutboxEntry", "OutboxLag"]

_T = table_of(FragmentOutbox)


@dataclass(frozen=True)
class OutboxEntry:
    """One pending index operation."""

    id: int
    op: OutboxOp
    user_id: str
    fragment_id: uuid.UUID | None
    attempts: int


@dataclass(frozen=True)
class OutboxLag:
    """How far the derived index is behind the ledger."""

    pending: int
    oldest_age_s: float
    failing: int


@dataclass
class ClaimedBatch:
    """Entries locked for one worker; call ``done()`` or ``failed()`` before leaving."""

    entries: list[OutboxEntry]
    _outcome: tuple[str, str, float] | None = field(default=None, repr=False)

    def done(self) -> None:
        """The entries were applied: delete them on commit."""
        self._outcome = ("done", "", 0.0)

    def failed(self, error: str, retry_in_s: float) -> None:
        """The entries failed: count an attempt and retry after ``retry_in_s``."""
        self._outcome = ("failed", error[:2000], retry_in_s)


class Outbox:
    """Enqueue, claim and measure outbox entries."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def enqueue(
        self, conn: Connection, entries: Sequence[tuple[OutboxOp, str, uuid.UUID | None]]
    ) -> None:
        """Add ``(op, user_id, fragment_id)`` entries in the caller's transaction."""
        if entries:
            conn.execute(
                _T.insert(),
                [{"op": op.value, "user_id": u, "fragment_id": f} for op, u, f in entries],
            )

    @contextlib.contextmanager
    def claim(self, limit: int) -> Iterator[ClaimedBatch]:
        """Lock up to ``limit`` due entries, oldest first, for the duration of the block."""
        with cross_user_transaction(self._db) as conn:
            rows = conn.execute(
                select(_T.c.id, _T.c.op, _T.c.user_id, _T.c.fragment_id, _T.c.attempts)
                .where(_T.c.next_attempt_at <= func.now())
                .order_by(_T.c.id)
                .limit(limit)
                .with_for_update(skip_locked=True)
            ).all()
            batch = ClaimedBatch(
                [
                    OutboxEntry(r.id, OutboxOp(r.op), r.user_id, r.fragment_id, r.attempts)
                    for r in rows
                ]
            )
            yield batch
            ids = [e.id for e in batch.entries]
            if not ids or batch._outcome is None:
                return
            kind, error, delay = batch._outcome
            if kind == "done":
                conn.execute(delete(_T).where(_T.c.id.in_(ids)))
            else:
                conn.execute(
                    update(_T)
                    .where(_T.c.id.in_(ids))
                    .values(
                        attempts=_T.c.attempts + 1,
                        last_error=error,
                        next_attempt_at=func.now() + func.make_interval(0, 0, 0, 0, 0, 0, delay),
                    )
                )

    def lag(self, now: datetime) -> OutboxLag:
        """Pending entries, the age of the oldest, and how many have failed at least once."""
        with cross_user_transaction(self._db) as conn:
            row = conn.execute(
                select(
                    func.count(),
                    func.min(_T.c.created_at),
                    func.count().filter(_T.c.attempts > 0),
                )
            ).one()
        oldest = 0.0 if row[1] is None else max(0.0, (now - row[1]).total_seconds())
        return OutboxLag(pending=int(row[0]), oldest_age_s=oldest, failing=int(row[2]))
