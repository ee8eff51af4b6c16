"""Wiring of a derived search index: outbox, worker, ledger fallback, reindex.

The pgvector backend reads the ledger itself and needs none of this. A
derived backend (Weaviate) is fed by the transactional outbox; while it is
unreachable, searches fall back to the ledger's own hybrid search and say so.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from policies.scope import UserScope
from structured_memory.cross_user import fragments_for_index, iter_fragments_for_index
from structured_memory.database import Database
from structured_memory.repositories.fragments import IndexRow
from structured_memory.repositories.outbox import Outbox
from unstructured_memory.index.base import FragmentIndex, IndexedFragment, Upsert
from unstructured_memory.index.pgvector import PgVectorIndex
from unstructured_memory.outbox.worker import OutboxWorker

__all__ = ["DerivedIndex", "reindex", "to_indexed"]


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


@dataclass
class DerivedIndex:
    """The delivery machinery of a derived index."""

    outbox: Outbox
    worker: OutboxWorker
    fallback: FragmentIndex

    @classmethod
    def build(
        cls, db: Database, index: FragmentIndex, *, max_delay_s: float = 60.0
    ) -> DerivedIndex:
        """Outbox, worker and ledger fallback for ``index`` (nothing is started)."""

        def load(ids: Sequence[uuid.UUID]) -> Mapping[uuid.UUID, IndexedFragment]:
            return {k: to_indexed(v) for k, v in fragments_for_index(db, ids).items()}

        outbox = Outbox(db)
        return cls(
            outbox=outbox,
            worker=OutboxWorker(outbox, load, index, max_delay_s=max_delay_s),
            fallback=PgVectorIndex(db.transaction),
        )


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
