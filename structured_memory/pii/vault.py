"""The PII vault: encrypted values with a blind index, one user scope at a time.

Only this module and :mod:`structured_memory.cross_user` see PII in clear.
Associated data binds each ciphertext to its vault id, user and kind.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy import Connection, delete, select

from policies.errors import RecordNotFound
from policies.scope import UserScope
from policies.validation import check_choice, check_text
from structured_memory.database import Database
from structured_memory.models import PiiVaultEntry, VaultKind, table_of
from structured_memory.pii.cipher import PiiCipher, Sealed

__all__ = ["MAX_PII_BYTES", "PiiVault", "VaultRef", "aad_for"]

MAX_PII_BYTES = 1024

_T = table_of(PiiVaultEntry)


def aad_for(entry_id: uuid.UUID, user_id: str, kind: str) -> bytes:
    """Associated data binding a ciphertext to its row."""
    return b"\x1f".join([entry_id.bytes, user_id.encode(), kind.encode()])


def vault_kind(kind: str) -> str:
    """``kind`` if it is a known PII kind, else :class:`InvalidField`."""
    return check_choice(VaultKind, kind, "kind")


@dataclass(frozen=True)
class VaultRef:
    """Where a PII value lives: its vault id and kind (never the value)."""

    id: uuid.UUID
    kind: str


class PiiVault:
    """Stores, reveals, lists and deletes one user's PII."""

    def __init__(self, db: Database, cipher: PiiCipher) -> None:
        self._db = db
        self._cipher = cipher

    def store(
        self, scope: UserScope, kind: str, value: str, *, join: Connection | None = None
    ) -> VaultRef:
        """Encrypt and store ``value``; an equal value of the same kind is stored once.

        ``join`` makes the write part of the caller's transaction. Raises
        :class:`InvalidField` for an unknown kind, :class:`InvalidText` for an
        empty or oversized value, :class:`UserNotFound` without a profile.
        """
        kind = vault_kind(kind)
        value = check_text(value, field="value", max_bytes=MAX_PII_BYTES)
        index = self._cipher.blind_index(kind, value)
        entry_id = uuid.uuid4()
        sealed = self._cipher.seal(value, aad=aad_for(entry_id, scope.user_id, kind))
        with self._db.transaction(join, owner=scope.user_id) as conn:
            existing = self.find(scope, kind, value, join=conn)
            if existing is not None:
                return existing
            conn.execute(
                _T.insert().values(
                    id=entry_id,
                    user_id=scope.user_id,
                    kind=kind,
                    key_id=sealed.key_id,
                    nonce=sealed.nonce,
                    ciphertext=sealed.ciphertext,
                    blind_index=index,
                )
            )
        return VaultRef(entry_id, kind)

    def reveal(self, scope: UserScope, entry_id: uuid.UUID) -> str:
        """Decrypt one entry of the user; :class:`DecryptionError` if it was tampered with."""
        with self._db.transaction() as conn:
            row = conn.execute(
                select(_T).where(_T.c.user_id == scope.user_id, _T.c.id == entry_id)
            ).one_or_none()
        if row is None:
            raise RecordNotFound("no such vault entry for this user")
        sealed = Sealed(row.key_id, bytes(row.nonce), bytes(row.ciphertext))
        return self._cipher.open(sealed, aad=aad_for(row.id, row.user_id, row.kind))

    def find(
        self, scope: UserScope, kind: str, value: str, *, join: Connection | None = None
    ) -> VaultRef | None:
        """The user's entry holding ``value``, found by blind index without decrypting."""
        kind = vault_kind(kind)
        with self._db.transaction(join) as conn:
            found = conn.execute(
                select(_T.c.id).where(
                    _T.c.user_id == scope.user_id,
                    _T.c.kind == kind,
                    _T.c.blind_index.in_(self._cipher.blind_indexes(kind, value)),
                )
            ).scalar_one_or_none()
        return None if found is None else VaultRef(found, kind)

    def list(self, scope: UserScope) -> list[VaultRef]:
        """References to every vault entry of the user (no values)."""
        with self._db.transaction() as conn:
            rows = conn.execute(
                select(_T.c.id, _T.c.kind)
                .where(_T.c.user_id == scope.user_id)
                .order_by(_T.c.created_at)
            ).all()
        return [VaultRef(r.id, r.kind) for r in rows]

    def delete(self, scope: UserScope, entry_id: uuid.UUID) -> bool:
        """Delete one entry; returns whether it existed."""
        with self._db.transaction() as conn:
            n = conn.execute(
                delete(_T).where(_T.c.user_id == scope.user_id, _T.c.id == entry_id)
            ).rowcount
        return bool(n)
