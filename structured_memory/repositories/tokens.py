"""Revoked service tokens: the ``jti`` list the service checks before trusting a token."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, select
from sqlalchemy.dialects.postgresql import insert as pg_insert

from policies.validation import check_field_length, check_timestamp
from structured_memory.database import Database
from structured_memory.models import RevokedToken, table_of

__all__ = ["RevokedTokens"]

_T = table_of(RevokedToken)


class RevokedTokens:
    """Add to and read the revocation list (ops work; holds no user data)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def revoke(self, jti: str, expires_at: datetime) -> None:
        """Refuse the token ``jti`` from now until ``expires_at`` (idempotent)."""
        jti = check_field_length("jti", jti, 128)
        until = check_timestamp(expires_at, "expires_at")
        with self._db.transaction() as conn:
            conn.execute(pg_insert(_T).values(jti=jti, expires_at=until).on_conflict_do_nothing())

    def revoked(self, now: datetime) -> frozenset[str]:
        """Every ``jti`` revoked and not yet expired at ``now``."""
        with self._db.transaction() as conn:
            rows = conn.execute(select(_T.c.jti).where(_T.c.expires_at > now)).scalars()
            return frozenset(rows)

    def sweep(self, now: datetime) -> int:
        """Forget revocations of tokens that have expired anyway; returns how many."""
        with self._db.transaction() as conn:
            return int(conn.execute(delete(_T).where(_T.c.expires_at <= now)).rowcount)
