"""How ledger changes reach the search index: an outbox feed, or nothing to feed.

The write path hands every change to an :class:`IndexFeed` in the ledger's
transaction. A derived index (Weaviate) gets an :class:`OutboxFeed`: the
transactional outbox, its worker and a reindex; an index that reads the
ledger itself (pgvector) gets the :class:`NullFeed`, so no caller asks which
kind of index it has.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Protocol

from sqlalchemy import Connection

from policies.outbox import OutboxOp
from policies.scope import UserScope
from structured_memory.cross_user import fragments_for_index, iter_fragments_for_index
from structured_memory.database import Database
from structured_memory.repositories.fragments import IndexRow
from structured_memory.repositories.outbox import Outbox, OutboxLag
from unstructured_memory.index.base import FragmentIndex, IndexedFragment, Upsert
from unstructured_memory.outbox.worker import DrainReport, OutboxWorker

__all__ = [
    "FeedEntry",
    "IndexFeed",
    "NullFeed",
    "OutboxFeed",
    "build_feed",
    "reindex",
    "to_indexed",
]

FeedEntry = tuple[OutboxOp, str, uuid.UUID | None]
"""One change: the operation, the user, the fragment (``None`` for a user drop)."""


class IndexFeed(Protocol):
    """Delivers ledger changes to the search index."""

    def enqueue(self, conn: Connection, entries: Sequence[FeedEntry]) -> None:
        """Record changes in the caller's transaction (delivered after it commits)."""
        ...

    def wake(self) -> None:
        """Deliver soon: called after the transaction committed."""
        ...

    def deliver(self, entries: Sequence[FeedEntry]) -> None:
        """Apply committed changes to the index now, beside their outbox entries (which
        still follow: every operation is idempotent); raises :class:`StoreUnavailable`
        when the index cannot take them (the outbox delivers them later)."""
        ...

    def drain(self, *, deadline_s: float) -> DrainReport:
        """Deliver what is pending now, until done or ``deadline_s`` passes."""
        ...

    def lag(self, now: datetime) -> OutboxLag:
        """How far the index is behind the ledger."""
        ...

    def start(self) -> None:
        """Start delivering in the background."""
        ...

    def stop(self) -> None:
        """Stop delivering in the background."""
        ...


class NullFeed:
    """The feed of an index that reads the ledger itself: nothing is ever behind."""

    def enqueue(self, conn: Connection, entries: Sequence[FeedEntry]) -> None:
        """Nothing to record."""

    def wake(self) -> None:
        """Nothing to deliver."""

    def deliver(self, entries: Sequence[FeedEntry]) -> None:
        """Nothing to deliver: the index reads the ledger."""

    def drain(self, *, deadline_s: float) -> DrainReport:
        """Nothing pending."""
        return DrainReport(0, 0)

    def lag(self, now: datetime) -> OutboxLag:
        """Never behind."""
        return OutboxLag(pending=0, oldest_age_s=0.0, failing=0)

    def start(self) -> None:
        """No background work."""

    def stop(self) -> None:
        """No background work."""


def to_indexed(row: IndexRow) -> IndexedFragment:
    """A ledger row as an index stores it (entity texts only; PII is already masked)."""
    return IndexedFragment(
        id=row.id,
        user_id=row.user_id,
        text=row.text,
        index_text=row.index_text,
        vector=row.embedding,
        embedding_model=row.embedding_model,
        intent=row.intent,
        occurred_at=row.occurred_at,
        expires_at=row.expires_at,
        session_id=row.session_id,
        sandbox_id=row.sandbox_id,
        agent_id=row.agent_id,
        private=row.private,
        entities=tuple(str(e.get("text", "")) for e in row.entities),
    )


class OutboxFeed:
    """The transactional outbox and its worker, feeding a derived index."""

    def __init__(
        self, db: Database, index: FragmentIndex, *, max_delay_s: float, background: bool
    ) -> None:
        def load(ids: Sequence[uuid.UUID]) -> Mapping[uuid.UUID, IndexedFragment]:
            return {k: to_indexed(v) for k, v in fragments_for_index(db, ids).items()}

        self.outbox = Outbox(db)
        self.worker = OutboxWorker(self.outbox, load, index, max_delay_s=max_delay_s)
        self._background = background

    def enqueue(self, conn: Connection, entries: Sequence[FeedEntry]) -> None:
        """Insert outbox rows in the caller's transaction."""
        self.outbox.enqueue(conn, entries)

    def wake(self) -> None:
        """Wake the worker thread (a no-op when workers run as their own processes)."""
        self.worker.wake()

    def deliver(self, entries: Sequence[FeedEntry]) -> None:
        """Apply these committed changes now, outside the queue."""
        self.worker.apply_now(entries)

    def drain(self, *, deadline_s: float) -> DrainReport:
        """Apply pending entries now (read-your-writes)."""
        return self.worker.drain(deadline_s=deadline_s)

    def lag(self, now: datetime) -> OutboxLag:
        """Pending entries, the age of the oldest, how many failed at least once."""
        return self.outbox.lag(now)

    def start(self) -> None:
        """Start the worker thread, unless ``dualtrack worker`` processes deliver."""
        if self._background:
            self.worker.start()

    def stop(self) -> None:
        """Stop the worker thread."""
        self.worker.stop()


def build_feed(
    db: Database, index: FragmentIndex, *, max_delay_s: float, background: bool
) -> IndexFeed:
    """The feed ``index`` needs: an outbox for a derived index, else nothing."""
    if index.derived:
        return OutboxFeed(db, index, max_delay_s=max_delay_s, background=background)
    return NullFeed()


def reindex(
    db: Database,
    index: FragmentIndex,
    *,
    batch_size: int = 500,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Push every ledger row to ``index`` (idempotent upserts); returns the count."""
    done = 0
    for rows in iter_fragments_for_index(db, batch_size=batch_size):
        index.apply([Upsert(UserScope(r.user_id), to_indexed(r)) for r in rows])
        done += len(rows)
        if progress is not None:
            progress(len(rows))
    return done
