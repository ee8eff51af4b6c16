"""Identity resolution across users: who holds a PII value, by blind index only."""

from __future__ import annotations

from sqlalchemy import select

from structured_memory.cross_user.marking import cross_user_transaction
from structured_memory.database import Database
from structured_memory.models import PiiVaultEntry, table_of
from structured_memory.pii.cipher import PiiCipher
from structured_memory.pii.vault import MATCHING, check_value, matching, vault_kind

__all__ = ["find_user_ids_by_pii"]

_T = table_of(PiiVaultEntry)


def find_user_ids_by_pii(db: Database, cipher: PiiCipher, kind: str, value: str) -> list[str]:
    """Ids of the users holding ``value`` (e.g. a phone number) in any spelling, by blind
    index only; :class:`InvalidField` for a value with nothing to look it up by."""
    kind = vault_kind(kind)
    value = check_value(kind, value)
    with cross_user_transaction(db) as conn:
        rows = conn.execute(
            select(_T.c.user_id).where(MATCHING).distinct().order_by(_T.c.user_id),
            matching(cipher, kind, value),
        ).all()
    return [r.user_id for r in rows]
