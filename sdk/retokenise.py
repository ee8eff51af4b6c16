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
from collections.abc import Callable, Mapping
from dataclasses import dataclass

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

__all__ = ["RetokeniseReport", "current_terms", "retokenise"]


@dataclass(frozen=True)
class RetokeniseReport:
    """What a run did: users visited, rows examined, rows whose terms were rewritten."""

    users: int
    examined: int
    changed: int


def current_terms(row: StoredTerms, turns: Mapping[uuid.UUID, str]) -> list[str]:
    """The terms the write path gives ``row`` now (``turns``: texts by id, for its context).

    A row was indexed with a context (its session date and the turns named by
    ``context_ids``) if it names context turns or holds the terms of its date that
    its own text lacks (a session's first turn). A row with neither gets the same
    terms with or without a context, whatever it was written with. (Counting terms
    does not tell: a row of an earlier release holds fewer terms than its text
    has now, bigrams and concepts being new.)
    """
    own = indexed_terms(row.text, None)
    if not row.context_ids:
        dated = set(indexed_terms(context_text(row.occurred_at, []), None))
        if not dated <= set(row.index_text.split()) or dated <= set(own):
            return own
    previous = [turns[i] for i in row.context_ids if i in turns]
    return indexed_terms(row.text, context_text(row.occurred_at, previous))


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
    users = examined = changed = 0
    for batch in iter_fragment_users(db):
        for user_id in batch:
            users += 1
            scope = UserScope(user_id)
            after: uuid.UUID | None = None
            while True:
                with db.reading() as conn:
                    rows = stored_terms(conn, scope, after=after, limit=batch_size)
                    mine = {r.id: r.text for r in rows}
                    wanted = sorted({i for r in rows for i in r.context_ids} - mine.keys())
                    turns = {**mine, **turn_texts(conn, scope, wanted)}
                if not rows:
                    break
                changes = []
                for row in rows:
                    words = current_terms(row, turns)
                    index_text = " ".join(words)
                    if index_text != row.index_text or len(words) != row.token_count:
                        changes.append(TermsChange(row, index_text, len(words)))
                changed += len(_write(db, feed, scope, changes))
                examined += len(rows)
                after = rows[-1].id
                if progress is not None:
                    progress(len(rows))
    return RetokeniseReport(users=users, examined=examined, changed=changed)


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
