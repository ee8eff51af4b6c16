"""Move stored memories' vectors to the configured embedder (``dualtrack reembed``).

Vectors are kept in the ledger beside each memory's masked text, with the name of the
embedder that made them (``embedding_model``); the deployment records the one model its
vectors belong to (``embedding_space``), and a client whose embedder differs refuses to
write or search (``EmbeddingDimensionMismatch``). :func:`reembed` moves a deployment to
a new embedder:

1. the search index gets ready for the new vectors (pgvector: the HNSW index of the new
   model, built concurrently beside the old one);
2. user by user, in batches, each row whose vector is another model's is embedded again
   from its masked text and the context it was indexed with
   (:func:`sdk.retokenise.indexed_context`), as the write path does, and written only if
   the row is still as it was read;
3. the deployment's embedding space is set to the new model;
4. a derived index (Weaviate) is dropped and refilled from the ledger, since one tenant
   cannot hold vectors of two lengths.

Searches keep working throughout: a search on the old model finds the rows not yet moved
by vector and every row by its words; pgvector serves the new model's rows as soon as
they are written. It is idempotent: a row already of the new model is not read again,
so an interrupted run is resumed, and rows that old clients wrote meanwhile are picked
up, by running it again.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from sqlalchemy import Connection

from policies.scope import UserScope
from sdk.feed import reindex
from sdk.retokenise import each_users_rows, indexed_context
from structured_memory.database import Database
from structured_memory.embedding_space import set_embedding_space
from structured_memory.repositories.fragment_terms import StoredTerms
from structured_memory.repositories.fragment_vectors import other_model_rows, replace_vectors
from unstructured_memory.contextual import combine_vectors
from unstructured_memory.embedders.base import Embedder
from unstructured_memory.index.base import FragmentIndex, Resettable

__all__ = ["ReembedReport", "reembed"]


@dataclass(frozen=True)
class ReembedReport:
    """What a run did: users visited, rows embedded again, rows left (changed meanwhile),
    and the rows a derived index was refilled with (0 for pgvector)."""

    users: int
    embedded: int
    skipped: int
    reindexed: int


def reembed(
    db: Database,
    index: FragmentIndex,
    embedder: Embedder,
    *,
    batch_size: int = 500,
    progress: Callable[[int], None] | None = None,
) -> ReembedReport:
    """Embed every row whose vector is not ``embedder``'s again; see the module docstring.

    ``progress`` is told how many rows each batch embedded or skipped.
    """
    model = embedder.name
    index.setup(model, embedder.dimensions)
    users: set[str] = set()
    embedded = skipped = 0

    def read(
        conn: Connection, scope: UserScope, after: uuid.UUID | None, limit: int
    ) -> list[StoredTerms]:
        return other_model_rows(conn, scope, model, after=after, limit=limit)

    for scope, rows, turns in each_users_rows(db, read, batch_size):
        users.add(scope.user_id)
        done = _embed(db, scope, embedder, rows, turns)
        embedded += done
        skipped += len(rows) - done
        if progress is not None:
            progress(len(rows))
    set_embedding_space(db, model, embedder.dimensions)
    refilled = 0
    if index.derived and isinstance(index, Resettable):
        index.reset()
        index.setup(model, embedder.dimensions)
        refilled = reindex(db, index, batch_size=batch_size)
    return ReembedReport(users=len(users), embedded=embedded, skipped=skipped, reindexed=refilled)


def _embed(
    db: Database,
    scope: UserScope,
    embedder: Embedder,
    rows: list[StoredTerms],
    turns: Mapping[uuid.UUID, str],
) -> int:
    """Embed one batch (each row with its context) and write it in one transaction."""
    contexts = [indexed_context(r, turns) for r in rows]
    extra = [c for c in contexts if c is not None]
    vectors = embedder.embed_documents([r.text for r in rows] + extra)
    context_vectors = iter(vectors[len(rows) :])
    mixed = [
        own if context is None else combine_vectors(own, next(context_vectors))
        for own, context in zip(vectors[: len(rows)], contexts, strict=True)
    ]

    def unit() -> int:
        with db.transaction() as conn:
            return replace_vectors(conn, scope, rows, mixed, embedder.name)

    return db.retrying(unit)
