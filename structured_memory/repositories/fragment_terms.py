"""The keyword terms of a user's ledger rows, read and replaced (for ``dualtrack retokenise``).

A row's ``index_text`` (its terms, with its context's) and ``token_count`` are
derived from its masked text and the turns named by ``context_ids``; ``tsv`` is
generated from ``index_text`` by the database. Every statement is confined to
one user (:func:`~structured_memory.scoping.owned`). A replacement is written
only where the row still holds the terms and the context it was read with, so
a concurrent re-index (a forgotten neighbour) is never overwritten with stale
context.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, select, text

from policies.scope import UserScope
from structured_memory.models import MemoryFragment, table_of
from structured_memory.scoping import owned

__all__ = ["StoredTerms", "TermsChange", "replace_terms", "stored_terms", "turn_texts"]

_T = table_of(MemoryFragment)


@dataclass(frozen=True)
class StoredTerms:
    """A row as its terms are derived from it, and the terms it holds."""

    id: uuid.UUID
    text: str
    occurred_at: datetime
    context_ids: list[uuid.UUID]
    index_text: str
    token_count: int


@dataclass(frozen=True)
class TermsChange:
    """New terms for a row, to be written if it still holds ``old``'s terms and context."""

    old: StoredTerms
    index_text: str
    token_count: int


_COLUMNS = [_T.c[name] for name in StoredTerms.__dataclass_fields__]


def stored_terms(
    conn: Connection, scope: UserScope, *, after: uuid.UUID | None, limit: int
) -> list[StoredTerms]:
    """The user's next ``limit`` rows after the id ``after``, in id order."""
    query = select(*_COLUMNS).where(owned(_T, scope))
    if after is not None:
        query = query.where(_T.c.id > after)
    rows = conn.execute(query.order_by(_T.c.id).limit(limit)).all()
    return [StoredTerms(**dict(r._mapping)) for r in rows]


def turn_texts(
    conn: Connection, scope: UserScope, ids: Sequence[uuid.UUID]
) -> Mapping[uuid.UUID, str]:
    """The masked texts of the user's rows among ``ids`` (the turns of contexts)."""
    if not ids:
        return {}
    rows = conn.execute(
        select(_T.c.id, _T.c.text).where(owned(_T, scope), _T.c.id.in_(list(ids)))
    ).all()
    return {r.id: r.text for r in rows}


_REPLACE = text(
    """
    UPDATE memory_fragment AS f
    SET index_text = v.new_text, token_count = v.n
    FROM unnest(
        CAST(:ids AS uuid[]), CAST(:olds AS text[]), CAST(:contexts AS text[]),
        CAST(:news AS text[]), CAST(:ns AS integer[])
    ) AS v(id, old_text, context, new_text, n)
    WHERE f.user_id = :user AND f.id = v.id
      AND f.index_text = v.old_text AND f.context_ids = CAST(v.context AS uuid[])
    RETURNING f.id
    """
)


def replace_terms(
    conn: Connection, scope: UserScope, changes: Sequence[TermsChange]
) -> list[uuid.UUID]:
    """Write ``changes`` in one statement; the ids of the rows written (a row deleted or
    re-indexed since it was read is left as it is)."""
    if not changes:
        return []
    rows = conn.execute(
        _REPLACE,
        {
            "user": scope.user_id,
            "ids": [c.old.id for c in changes],
            "olds": [c.old.index_text for c in changes],
            "contexts": ["{" + ",".join(map(str, c.old.context_ids)) + "}" for c in changes],
            "news": [c.index_text for c in changes],
            "ns": [c.token_count for c in changes],
        },
    ).all()
    return [r.id for r in rows]
