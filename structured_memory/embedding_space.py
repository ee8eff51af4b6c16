"""Which embedding model the stored vectors belong to (one row, deployment-wide)."""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.dialects.postgresql import insert as pg_insert

from structured_memory.database import Database
from structured_memory.models import EmbeddingSpace, table_of

__all__ = ["claim_embedding_space", "set_embedding_space", "stored_embedding_space"]

_T = table_of(EmbeddingSpace)


def claim_embedding_space(db: Database, model: str, dimensions: int) -> tuple[str, int]:
    """Record ``(model, dimensions)`` if nothing is recorded yet; return what is recorded.

    The caller compares the result with its embedder and refuses to mix
    vectors of two models.
    """
    with db.transaction() as conn:
        conn.execute(
            pg_insert(_T).values(id=1, model=model, dimensions=dimensions).on_conflict_do_nothing()
        )
        row = conn.execute(select(_T.c.model, _T.c.dimensions)).one()
    return row.model, int(row.dimensions)


def stored_embedding_space(db: Database) -> tuple[str, int] | None:
    """The recorded ``(model, dimensions)``, or None before the first vector's client."""
    with db.reading() as conn:
        row = conn.execute(select(_T.c.model, _T.c.dimensions)).one_or_none()
    return None if row is None else (row.model, int(row.dimensions))


def set_embedding_space(db: Database, model: str, dimensions: int) -> None:
    """Record that every vector now belongs to ``model`` (after a reindex)."""
    with db.transaction() as conn:
        conn.execute(
            pg_insert(_T)
            .values(id=1, model=model, dimensions=dimensions)
            .on_conflict_do_update(
                index_elements=[_T.c.id],
                set_={"model": model, "dimensions": dimensions, "updated_at": func.now()},
            )
        )
