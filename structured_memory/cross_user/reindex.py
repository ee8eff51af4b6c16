"""The feeds of ledger rows across users: the outbox worker's batch lookup, the rebuild of
the search index (``dualtrack reindex``) and the users that ``dualtrack retokenise`` visits."""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence

from sqlalchemy import func, select

from structured_memory.cross_user.marking import cross_user_transaction
from structured_memory.database import Database
from structured_memory.models import MemoryFragment, table_of
from structured_memory.repositories.fragments import IndexRow, index_rows

__all__ = [
    "count_fragments",
    "fragments_for_index",
    "iter_fragment_users",
    "iter_fragments_for_index",
]

_FRAGMENT = table_of(MemoryFragment)


def fragments_for_index(db: Database, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, IndexRow]:
    """The ledger rows among ``ids`` that still exist (the ids of one outbox batch)."""
    if not ids:
        return {}
    with cross_user_transaction(db) as conn:
        return {r.id: r for r in index_rows(conn, _FRAGMENT.c.id.in_(list(ids)))}


def iter_fragments_for_index(db: Database, *, batch_size: int = 500) -> Iterator[list[IndexRow]]:
    """Every ledger row, in id order, a batch per transaction (for ``dualtrack reindex``)."""
    last: uuid.UUID | None = None
    while True:
        with cross_user_transaction(db) as conn:
            where = _FRAGMENT.c.id > last if last is not None else _FRAGMENT.c.id.is_not(None)
            rows = index_rows(conn, where, limit=batch_size)
        if not rows:
            return
        yield rows
        last = rows[-1].id


def iter_fragment_users(db: Database, *, batch_size: int = 1000) -> Iterator[list[str]]:
    """Every user holding fragments, in user id order, a batch per transaction (for
    ``dualtrack retokenise``, which then works on each user in that user's scope)."""
    last: str | None = None
    while True:
        query = select(_FRAGMENT.c.user_id).distinct()
        if last is not None:
            query = query.where(_FRAGMENT.c.user_id > last)
        with cross_user_transaction(db) as conn:
            users = list(
                conn.execute(query.order_by(_FRAGMENT.c.user_id).limit(batch_size)).scalars()
            )
        if not users:
            return
        yield users
        last = users[-1]


def count_fragments(db: Database) -> int:
    """How many fragments the ledger holds (all users)."""
    with cross_user_transaction(db) as conn:
        return int(conn.execute(select(func.count()).select_from(_FRAGMENT)).scalar_one())
