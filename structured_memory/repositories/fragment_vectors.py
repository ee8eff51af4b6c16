"""A user's ledger rows whose vectors belong to another model, read and re-embedded
(for ``dualtrack reembed``).

Every statement is confined to one user (:func:`~structured_memory.scoping.owned`).
A new vector is written only where the row still holds the text, the terms and the
context it was read with, so a concurrent amendment or re-index is never overwritten
with a vector of the old text. A batch's vectors go as one pipelined statement, packed
in pgvector's binary format (:mod:`structured_memory.packed_vector`).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlalchemy import Connection, bindparam, select, update

from policies.scope import UserScope
from structured_memory.models import MemoryFragment, table_of
from structured_memory.packed_vector import PACKED_VECTOR, PackedVector
from structured_memory.repositories.fragment_terms import StoredTerms
from structured_memory.scoping import owned, owned_by

__all__ = ["other_model_rows", "replace_vectors"]

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


_REPLACE = (
    update(_T)
    .where(
        owned_by(_T, bindparam("b_user")),
        _T.c.id == bindparam("b_id"),
        _T.c.text == bindparam("b_text"),
        _T.c.index_text == bindparam("b_index_text"),
        _T.c.context_ids == bindparam("b_context_ids"),
    )
    .values(
        embedding=bindparam("b_vector", type_=PACKED_VECTOR),
        embedding_model=bindparam("b_model"),
    )
)


def replace_vectors(
    conn: Connection,
    scope: UserScope,
    rows: Sequence[StoredTerms],
    vectors: Sequence[Sequence[float]],
    model: str,
) -> int:
    """Store each of ``vectors`` (of ``model``) as its row's where the row is as it was
    read, in one pipelined statement; how many rows were written."""
    if not rows:
        return 0
    result = conn.execute(
        _REPLACE,
        [
            {
                "b_user": scope.user_id,
                "b_id": row.id,
                "b_text": row.text,
                "b_index_text": row.index_text,
                "b_context_ids": list(row.context_ids),
                "b_vector": PackedVector(vector),
                "b_model": model,
            }
            for row, vector in zip(rows, vectors, strict=True)
        ],
    )
    return result.rowcount
