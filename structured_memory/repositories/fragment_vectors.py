"""A user's ledger rows whose vectors belong to another model, read and re-embedded
(for ``dualtrack reembed``).

Every statement is confined to one user (:func:`~structured_memory.scoping.owned`).
A new vector is written only where the row still holds the text, the terms and the
context it was read with, so a concurrent amendment or re-index is never overwritten
with a vector of the old text.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlalchemy import Connection, bindparam, select, update

from policies.scope import UserScope
from structured_memory.models import MemoryFragment, table_of
from structured_memory.repositories.fragment_terms import StoredTerms
from structured_memory.scoping import owned

__all__ = ["other_model_rows", "replace_vector"]

_T = table_of(MemoryFragment)
_COLUMNS = [_T.c[name] for name in StoredTerms.__dataclass_fields__]


def other_model_rows(
    conn: Connection, scope: UserScope, model: str, *, after: uuid.UUID | None, limit: int
) -> list[StoredTerms]:
    """The user's next ``limit`` rows after the id ``after`` (in id order) whose vector is
    not ``model``'s."""
    query = select(*_COLUMNS).where(owned(_T, scope), _T.c.embedding_model.is_distinct_from(model))
    if after is not None:
        query = query.where(_T.c.id > after)
    rows = conn.execute(query.order_by(_T.c.id).limit(limit)).all()
    return [StoredTerms(**dict(r._mapping)) for r in rows]


def replace_vector(
    conn: Connection, scope: UserScope, row: StoredTerms, vector: Sequence[float], model: str
) -> bool:
    """Store ``vector`` of ``model`` as ``row``'s if the row is as it was read; whether it
    was written."""
    done = conn.execute(
        update(_T)
        .where(
            owned(_T, scope),
            _T.c.id == row.id,
            _T.c.text == row.text,
            _T.c.index_text == row.index_text,
            _T.c.context_ids == bindparam("context_ids", value=list(row.context_ids)),
        )
        .values(embedding=list(vector), embedding_model=model)
    )
    return done.rowcount == 1
