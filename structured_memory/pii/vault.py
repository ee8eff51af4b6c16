"""The PII vault: encrypted values with a blind index, one user scope at a time.

Only this module and :mod:`structured_memory.cross_user` see PII in clear.
Values are sealed with the user's data key (envelope encryption, see
:mod:`structured_memory.pii.cipher`); associated data binds each ciphertext
to its vault id, user and kind. A value is stored once per user and kind: a
unique upsert on the blind index, so concurrent stores of one value, or
stores from pods holding an older key ring, return the same entry.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    ARRAY,
    ColumnElement,
    Connection,
    LargeBinary,
    and_,
    any_,
    bindparam,
    delete,
    exists,
    or_,
    select,
    update,
)
from sqlalchemy import exc as sa_exc
from sqlalchemy.dialects.postgresql import insert

from policies.errors import RecordNotFound, UserNotFound
from policies.pii import PiiKind
from policies.scope import UserScope
from policies.validation import check_choice, check_text, check_uuid
from structured_memory.database import Database
from structured_memory.models import PiiDataKey, PiiVaultEntry, table_of
from structured_memory.pii.cipher import PiiCipher, Sealed
from structured_memory.scoping import owned

__all__ = [
    "MATCHING",
    "MAX_PII_BYTES",
    "PiiVault",
    "VaultRef",
    "aad_for",
    "data_key",
    "fill_blind_mac",
    "matching",
    "vault_kind",
]

MAX_PII_BYTES = 1024

_T = table_of(PiiVaultEntry)
_K = table_of(PiiDataKey)


def aad_for(entry_id: uuid.UUID, user_id: str, kind: str) -> bytes:
    """Associated data binding a ciphertext to its row."""
    return b"\x1f".join([entry_id.bytes, user_id.encode(), kind.encode()])


def vault_kind(kind: str) -> str:
    """``kind`` if it is a known PII kind, else :class:`InvalidField`."""
    return check_choice(PiiKind, kind, "kind")


MATCHING: ColumnElement[bool] = and_(
    _T.c.kind == bindparam("kind"),
    or_(
        _T.c.blind_mac == bindparam("blind_mac"),
        and_(
            _T.c.blind_mac.is_(None),
            _T.c.blind_index == any_(bindparam("blind_indexes", type_=ARRAY(LargeBinary))),
        ),
    ),
)
"""Vault rows holding a value, with the parameters :func:`matching` gives: by
``blind_mac``, or, for rows written before revision 0004 and not yet repaired, by the
ring-format blind index under any ring key."""


def matching(cipher: PiiCipher, kind: str, value: str) -> dict[str, Any]:
    """The parameters of :data:`MATCHING` for ``value`` of ``kind``."""
    return {
        "kind": kind,
        "blind_mac": cipher.blind_index(kind, value),
        "blind_indexes": cipher.legacy_blind_indexes(kind, value),
    }


# Built once: a write storing PII looks its values up first.
_FIND = (
    select(_T.c.id)
    .where(_T.c.user_id == bindparam("user_id"), MATCHING)
    .order_by(_T.c.blind_mac.is_(None), _T.c.created_at, _T.c.id)
    .limit(1)
)
_FIND_LOCKED = _FIND.with_for_update(read=True, key_share=True)
_DATA_KEY = select(_K.c.key_id, _K.c.nonce, _K.c.wrapped).where(
    _K.c.user_id == bindparam("user_id")
)
_ENTRY_COLUMNS = (
    "id",
    "user_id",
    "kind",
    "dek",
    "key_id",
    "nonce",
    "ciphertext",
    "blind_mac",
    "blind_index",
)
_STORE = (
    insert(_T)
    .values({name: bindparam(name, type_=_T.c[name].type) for name in _ENTRY_COLUMNS})
    .on_conflict_do_update(
        index_elements=[_T.c.kind, _T.c.blind_mac, _T.c.user_id],
        index_where=_T.c.blind_mac.is_not(None),
        set_={"updated_at": _T.c.updated_at},
    )
    .returning(_T.c.id)
)
"""An entry stored once per (user, kind, value): the row already there is returned."""


def data_key(conn: Connection, cipher: PiiCipher, user_id: str, *, create: bool) -> bytes | None:
    """The user's data key, unwrapped; with ``create``, made and stored if the user has none.

    Concurrent creators agree on one key (insert-if-absent, then read the
    winner). Raises :class:`DecryptionError` if the stored key does not unwrap,
    :class:`UserNotFound` if an erasure removed the winner's key meanwhile.
    """
    row = conn.execute(_DATA_KEY, {"user_id": user_id}).one_or_none()
    if row is None:
        if not create:
            return None
        fresh = cipher.new_data_key()
        wrapped = cipher.wrap(fresh, user_id)
        won = conn.execute(
            insert(_K)
            .values(
                user_id=user_id,
                key_id=wrapped.key_id,
                nonce=wrapped.nonce,
                wrapped=wrapped.ciphertext,
            )
            .on_conflict_do_nothing(index_elements=[_K.c.user_id])
            .returning(_K.c.user_id)
        ).first()
        if won is not None:
            return fresh
        row = conn.execute(_DATA_KEY, {"user_id": user_id}).one_or_none()
        if row is None:
            raise UserNotFound("no profile for this user")
    return cipher.unwrap(Sealed(row.key_id, bytes(row.nonce), bytes(row.wrapped)), user_id)


def fill_blind_mac(
    conn: Connection, entry_id: uuid.UUID, user_id: str, kind: str, mac: bytes
) -> bool:
    """Give a row written before 0004 its ``blind_mac`` unless another row of the user
    already holds it (a duplicate, merged by ``repair-vault``); returns whether it did."""
    other = _T.alias("other")
    taken = exists().where(
        other.c.user_id == user_id, other.c.kind == kind, other.c.blind_mac == mac
    )
    try:
        with conn.begin_nested():
            done = conn.execute(
                update(_T)
                .where(_T.c.id == entry_id, _T.c.user_id == user_id, _T.c.blind_mac.is_(None))
                .where(~taken)
                .values(blind_mac=mac)
            ).rowcount
    except sa_exc.IntegrityError:  # a concurrent insert took the index after the check
        return False
    return bool(done)


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

        Safe under concurrency: one row per (user, kind, normalised value)
        whoever stores it, with whichever ring. An entry already stored is
        returned locked (``FOR KEY SHARE``) until the transaction ends, so
        neither the release of unreferenced entries (``release_vault_entries``)
        nor ``repair-vault`` deletes it under a reference being written.
        ``join`` makes the write part of the caller's transaction. Raises
        :class:`InvalidField` for an unknown kind, :class:`InvalidText` for an
        empty or oversized value, :class:`UserNotFound` without a profile,
        :class:`DecryptionError` if the user's data key does not unwrap.
        """
        kind = vault_kind(kind)
        value = check_text(value, field="value", max_bytes=MAX_PII_BYTES)
        with self._db.transaction(join, owner=scope.user_id) as conn:
            found = self._find(conn, scope, kind, value, lock=True)
            if found is not None:
                return found
            key = data_key(conn, self._cipher, scope.user_id, create=True)
            assert key is not None
            entry_id = uuid.uuid4()
            sealed = self._cipher.seal(
                value, aad=aad_for(entry_id, scope.user_id, kind), data_key=key
            )
            stored = conn.execute(
                _STORE,
                {
                    "id": entry_id,
                    "user_id": scope.user_id,
                    "kind": kind,
                    "dek": True,
                    "key_id": None,
                    "nonce": sealed.nonce,
                    "ciphertext": sealed.ciphertext,
                    "blind_mac": self._cipher.blind_index(kind, value),
                    "blind_index": self._cipher.legacy_blind_index(kind, value),
                },
            ).scalar_one()
        return VaultRef(stored, kind)

    def lock_order(self, kind: str, value: str) -> tuple[str, bytes]:
        """Where ``value``'s entry sorts in the order transactions lock a user's entries:
        kind, then blind index (``release_vault_entries`` locks them so too). Storing
        several values in this order, a transaction does not deadlock with a release or
        another store."""
        kind = vault_kind(kind)
        return kind, self._cipher.blind_index(kind, value)

    def reveal(self, scope: UserScope, entry_id: uuid.UUID) -> str:
        """Decrypt one entry of the user; :class:`DecryptionError` if it was tampered with."""
        entry_id = check_uuid(entry_id, "entry_id")
        with self._db.transaction() as conn:
            row = conn.execute(
                select(
                    _T,
                    _K.c.key_id.label("wrapping_key_id"),
                    _K.c.nonce.label("wrapping_nonce"),
                    _K.c.wrapped,
                )
                .outerjoin(_K, _K.c.user_id == _T.c.user_id)
                .where(owned(_T, scope), _T.c.id == entry_id)
            ).one_or_none()
        if row is None:
            raise RecordNotFound("no such vault entry for this user")
        key = None
        if row.dek and row.wrapped is not None:
            wrapped = Sealed(row.wrapping_key_id, bytes(row.wrapping_nonce), bytes(row.wrapped))
            key = self._cipher.unwrap(wrapped, scope.user_id)
        sealed = Sealed(row.key_id, bytes(row.nonce), bytes(row.ciphertext))
        return self._cipher.open(sealed, aad=aad_for(row.id, row.user_id, row.kind), data_key=key)

    def find(
        self, scope: UserScope, kind: str, value: str, *, join: Connection | None = None
    ) -> VaultRef | None:
        """The user's entry holding ``value``, found by blind index without decrypting."""
        value = check_text(value, field="value", max_bytes=MAX_PII_BYTES)
        kind = vault_kind(kind)
        with self._db.transaction(join) as conn:
            return self._find(conn, scope, kind, value, lock=False)

    def _find(
        self, conn: Connection, scope: UserScope, kind: str, value: str, *, lock: bool
    ) -> VaultRef | None:
        # Before repair-vault has merged them, duplicates written before 0004 may
        # match: the indexed row wins, then the oldest. With ``lock`` the row is
        # held FOR KEY SHARE (a release or repair-vault deleting it waits for the
        # transaction); a row deleted meanwhile is not found, and the store inserts.
        found = conn.execute(
            _FIND_LOCKED if lock else _FIND,
            {"user_id": scope.user_id, **matching(self._cipher, kind, value)},
        ).first()
        return None if found is None else VaultRef(found.id, kind)

    def list(self, scope: UserScope) -> list[VaultRef]:
        """References to every vault entry of the user (no values)."""
        with self._db.transaction() as conn:
            rows = conn.execute(
                select(_T.c.id, _T.c.kind)
                .where(owned(_T, scope))
                .order_by(_T.c.created_at, _T.c.id)
            ).all()
        return [VaultRef(r.id, r.kind) for r in rows]

    def delete(self, scope: UserScope, entry_id: uuid.UUID) -> bool:
        """Delete one entry; returns whether it existed."""
        entry_id = check_uuid(entry_id, "entry_id")
        with self._db.transaction() as conn:
            n = conn.execute(delete(_T).where(owned(_T, scope), _T.c.id == entry_id)).rowcount
        return bool(n)
