"""Bring stored memories' keyword terms up to date (``dualtrack retokenise``).

A release that changes keyword terms (English words stemmed, so "camping"
stored matches "camp" asked) changes what the write path stores in
``index_text``; rows written before keep their old terms, and keyword search
misses them until they are recomputed. :func:`retokenise` recomputes each
row's terms from its masked text and its context as the write path does now
(:func:`unstructured_memory.contextual.indexed_terms`), writes only the rows
whose terms differ (``tsv`` follows ``index_text``: it is a generated column)
and queues those for a derived index. Vectors are not touched.

It works user by user (every statement in the user's scope), a batch of rows
per transaction. It is idempotent and needs no marker: a row already current
is read and compared, never written, so an interrupted run is resumed by
running it again, and a second run changes nothing.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from sqlalchemy import Connection

from policies.outbox import OutboxOp
from policies.scope import UserScope
from sdk.feed import IndexFeed
from structured_memory.cross_user import iter_fragment_users
from structured_memory.database import Database
from structured_memory.repositories.fragment_terms import (
    StoredTerms,
    TermsChange,
    replace_terms,
    stored_terms,
    turn_texts,
)
from unstructured_memory.contextual import context_text, indexed_terms

__all__ = [
    "RetokeniseReport",
    "RowReader",
    "current_terms",
    "each_users_rows",
    "indexed_context",
    "retokenise",
]


@dataclass(frozen=True)
class RetokeniseReport:
    """What a run did: users visited, rows examined, rows whose terms were rewritten."""

    users: int
    examined: int
    changed: int


def indexed_context(row: StoredTerms, turns: Mapping[uuid.UUID, str]) -> str | None:
    """The context ``row`` was indexed with (``turns``: texts by id), or None.

    A row was indexed with a context (its session date and the turns named by
    ``context_ids``) if it names context turns or holds the terms of its date that
    its own text lacks (a session's first turn). A row whose own text holds its date's
    terms is read as having none: its terms are the same either way. (Counting terms
    does not tell: a row of an earlier release holds fewer terms than its text has now,
    bigrams and concepts being new.)
    """
    if not row.context_ids:
        dated = set(indexed_terms(context_text(row.occurred_at, []), None))
        own = set(indexed_terms(row.text, None))
        if not dated <= set(row.index_text.split()) or dated <= own:
            return None
    return context_text(row.occurred_at, [turns[i] for i in row.context_ids if i in turns])


def current_terms(row: StoredTerms, turns: Mapping[uuid.UUID, str]) -> list[str]:
    """The terms the write path gives ``row`` now (``turns``: texts by id, for its context)."""
    return indexed_terms(row.text, indexed_context(row, turns))


RowReader = Callable[[Connection, UserScope, uuid.UUID | None, int], list[StoredTerms]]
"""``read(conn, scope, after, limit)``: the user's next rows after the id ``after``."""


def each_users_rows(
    db: Database, read: RowReader, batch_size: int
) -> Iterator[tuple[UserScope, list[StoredTerms], dict[uuid.UUID, str]]]:
    """Every user's rows that ``read`` returns, a batch at a time in id order, each with
    the texts of its rows and of their context turns (one reading transaction a batch,
    every statement in the user's scope)."""
    for batch in iter_fragment_users(db):
        for user_id in batch:
            scope = UserScope(user_id)
            after: uuid.UUID | None = None
            while True:
                with db.reading() as conn:
                    rows = read(conn, scope, after, batch_size)
                    mine = {r.id: r.text for r in rows}
                    wanted = sorted({i for r in rows for i in r.context_ids} - mine.keys())
                    turns = {**mine, **turn_texts(conn, scope, wanted)}
                if not rows:
                    break
                yield scope, rows, turns
                after = rows[-1].id


def _all_rows(
    conn: Connection, scope: UserScope, after: uuid.UUID | None, limit: int
) -> list[StoredTerms]:
    return stored_terms(conn, scope, after=after, limit=limit)


def retokenise(
    db: Database,
    feed: IndexFeed,
    *,
    batch_size: int = 500,
    progress: Callable[[int], None] | None = None,
) -> RetokeniseReport:
    """Recompute every row's ``index_text`` and ``token_count``; write the differences.

    ``progress`` is told how many rows each batch examined. A row deleted or
    re-indexed (a forgotten neighbour) between its read and the write is left as
    it is.
    """
    users: set[str] = set()
    examined = changed = 0
    for scope, rows, turns in each_users_rows(db, _all_rows, batch_size):
        users.add(scope.user_id)
        changes = []
        for row in rows:
            words = current_terms(row, turns)
            index_text = " ".join(words)
            if index_text != row.index_text or len(words) != row.token_count:
                changes.append(TermsChange(row, index_text, len(words)))
        changed += len(_write(db, feed, scope, changes))
        examined += len(rows)
        if progress is not None:
            progress(len(rows))
    return RetokeniseReport(users=len(users), examined=examined, changed=changed)


def _write(
    db: Database, feed: IndexFeed, scope: UserScope, changes: list[TermsChange]
) -> list[uuid.UUID]:
    """Write one batch's changes and queue them for a derived index, in one transaction."""
    if not changes:
        return []

    def unit() -> list[uuid.UUID]:
        with db.transaction() as conn:
            written = replace_terms(conn, scope, changes)
            feed.enqueue(conn, [(OutboxOp.UPSERT, scope.user_id, i) for i in written])
        return written

    written = db.retrying(unit)
    feed.wake()
    return written
