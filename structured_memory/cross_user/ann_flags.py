"""Approximate search for large users: flag the memories of every user above a threshold
``ann``, so they enter the pgvector HNSW index (partial on ``ann``) off the write path."""

from __future__ import annotations

from sqlalchemy import text

from structured_memory.cross_user.marking import Progress, cross_user_transaction
from structured_memory.database import Database

__all__ = ["flag_large_scopes"]


def flag_large_scopes(
    db: Database, *, threshold: int, batch_size: int = 1000, progress: Progress = None
) -> int:
    """Flag ``ann`` the memories of every user holding more than ``threshold`` of them
    (every row: expired, private or in a sandbox too); returns how many were flagged.

    A flagged row enters the pgvector HNSW index (partial on ``ann``), which is
    thus maintained here, off the write path. Each batch is one transaction
    over up to ``batch_size`` of one user's rows not flagged yet, locked with
    ``SKIP LOCKED`` (a row busy now waits for the next run): idempotent, and
    safe beside writes and other sweepers. Rows written afterwards stay
    unflagged until the next run; a large scope's search reads those exactly,
    so nothing is missed meanwhile. ``progress`` gets the rows per batch.
    """
    with cross_user_transaction(db) as conn:
        users = list(
            conn.execute(
                text(
                    "SELECT user_id FROM memory_fragment GROUP BY user_id "
                    "HAVING count(*) > :threshold AND bool_or(NOT ann) ORDER BY user_id"
                ),
                {"threshold": threshold},
            ).scalars()
        )
    flagged = 0
    for user_id in users:
        while True:
            with cross_user_transaction(db) as conn:
                n = conn.execute(
                    text(
                        "UPDATE memory_fragment SET ann = true WHERE user_id = :user_id "
                        "AND id IN (SELECT id FROM memory_fragment WHERE user_id = :user_id "
                        "AND NOT ann LIMIT :n FOR UPDATE SKIP LOCKED)"
                    ),
                    {"user_id": user_id, "n": batch_size},
                ).rowcount
            flagged += n
            if progress is not None and n:
                progress(n)
            if n < batch_size:
                break
    return flagged
