"""The PII vault: encrypted values with a blind index, one user scope at a time.

Only this module and :mod:`structured_memory.cross_user` see PII in clear.
Values are sealed with the user's data key (envelope encryption, see
:mod:`structured_memory.pii.cipher`); associated data binds each ciphertext
to its vault id, user and kind.

An entry holds one exact value, revealed as it was stored: ``"+86 138-1234-5678"``
and ``"13812345678"`` are two entries. A unique upsert on the exact index
(``blind_mac``) stores each exact value once per user and kind, so concurrent
stores of one value, or stores from pods holding an older key ring, return the
same entry; the blind index of the normalised value (``match_mac``) finds every
spelling (:meth:`PiiVault.find`, :meth:`PiiVault.find_all`,
``cross_user.find_user_ids_by_pii``). Entries written before revision 0014 hold the
normalised index in ``blind_mac`` (``match_mac`` NULL): a store that meets one
decrypts it and indexes it exactly (:func:`index_exactly`), as ``repair-vault``
does for all. A value whose normalised form is empty (a phone or bank card
number without a digit: ``"n/a"``) has nothing to find it by and is refused.

:class:`VaultRef` is ``values.records``'s, re-exported here for one release.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy import (
    ARRAY,
    ColumnElement,
    Connection,
    LargeBinary,
    and_,
    any_,
    bindparam,
    case,
    delete,
    exists,
    or_,
    select,
    update,
)
from sqlalchemy import exc as sa_exc
from sqlalchemy.dialects.postgresql import insert

from policies.errors import (
    DecryptionError,
    InvalidField,
    RecordNotFound,
    TransientFailure,
    UserNotFound,
)
from policies.pii import PiiKind
from policies.scope import UserScope
from policies.validation import check_choice, check_text, check_uuid
from structured_memory.database import Database
from structured_memory.models import PiiDataKey, PiiVaultEntry, table_of
from structured_memory.pii.cipher import PiiCipher, Sealed, normalise
from structured_memory.scoping import owned, owned_by
from values.records import VaultRef

__all__ = [
    "MATCHING",
    "MAX_PII_BYTES",
    "PiiVault",
    "VaultRef",
    "aad_for",
    "check_value",
    "data_key",
    "index_exactly",
    "matching",
    "open_entry",
    "vault_kind",
]

MAX_PII_BYTES = 1024

_T = table_of(PiiVaultEntry)
_K = table_of(PiiDataKey)

_ATTEMPTS = 3


def aad_for(entry_id: uuid.UUID, user_id: str, kind: str) -> bytes:
    """Associated data binding a ciphertext to its row."""
    return b"\x1f".join([entry_id.bytes, user_id.encode(), kind.encode()])


def vault_kind(kind: str) -> str:
    """``kind`` if it is a known PII kind, else :class:`InvalidField`."""
    return check_choice(PiiKind, kind, "kind")


def check_value(kind: str, value: object) -> str:
    """``value`` if the vault can keep it as a ``kind``: text of at most
    :data:`MAX_PII_BYTES` (:class:`InvalidText` otherwise) whose normalised form is not
    empty (:class:`InvalidField`: a phone or bank card number needs a digit)."""
    checked = check_text(value, field="value", max_bytes=MAX_PII_BYTES)
    if not normalise(kind, checked):
        raise InvalidField(
            f"value is not a {kind.replace('_', ' ')}: nothing in it can be looked up",
            field="value",
        )
    return checked


MATCHING: ColumnElement[bool] = and_(
    _T.c.kind == bindparam("kind"),
    or_(
        _T.c.match_mac == bindparam("match_mac"),
        _T.c.blind_mac == bindparam("match_mac"),
        and_(
            _T.c.blind_mac.is_(None),
            _T.c.blind_index == any_(bindparam("blind_indexes", type_=ARRAY(LargeBinary))),
        ),
    ),
)
"""Vault rows holding a value in any spelling, with the parameters :func:`matching`
gives: by ``match_mac``; for rows written before revision 0014, by ``blind_mac`` (then
the normalised index); for rows written before 0004 and not yet repaired, by the
ring-format blind index under any ring key."""


def matching(cipher: PiiCipher, kind: str, value: str) -> dict[str, Any]:
    """The parameters of :data:`MATCHING` for ``value`` of ``kind``."""
    return {
        "kind": kind,
        "match_mac": cipher.blind_index(kind, value),
        "blind_indexes": cipher.legacy_blind_indexes(kind, value),
    }


_MINE = owned_by(_T, bindparam("user_id"))
_EXACT = and_(
    _MINE,
    _T.c.kind == bindparam("kind"),
    _T.c.blind_mac == bindparam("exact_mac"),
    _T.c.match_mac.is_not(None),
)
"""The user's entry of the exact value (written since 0014, or indexed exactly since)."""
# Built once: a write storing PII looks its values up first, in one statement: the entry
# of the exact value, or entries of the normal form written before 0014 to check (by
# blind_mac, or by blind_index before 0004).
_LOOKUP = (
    select(_T.c.id, _T.c.blind_mac, _T.c.match_mac)
    .where(
        _MINE,
        _T.c.kind == bindparam("kind"),
        or_(
            _T.c.blind_mac.in_([bindparam("exact_mac"), bindparam("match_mac")]),
            and_(
                _T.c.blind_mac.is_(None),
                _T.c.blind_index == any_(bindparam("blind_indexes", type_=ARRAY(LargeBinary))),
            ),
        ),
    )
    .with_for_update(read=True, key_share=True)
)
_FIND_ALL = select(_T.c.id).where(_MINE, MATCHING).order_by(_T.c.created_at, _T.c.id)
_FIND = (
    _FIND_ALL.order_by(None).order_by(case((_EXACT, 0), else_=1), _T.c.created_at, _T.c.id).limit(1)
)
_UNCHECKED = (
    select(_T)
    .where(_MINE, MATCHING, _T.c.match_mac.is_(None))
    .order_by(_T.c.created_at, _T.c.id)
    .with_for_update()
)
_DATA_KEY = select(_K.c.key_id, _K.c.nonce, _K.c.wrapped).where(owned_by(_K, bindparam("user_id")))
_ENTRY_COLUMNS = (
    "id",
    "user_id",
    "kind",
    "dek",
    "key_id",
    "nonce",
    "ciphertext",
    "blind_mac",
    "match_mac",
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
    .returning(_T.c.id, _T.c.match_mac)
)
"""An entry stored once per (user, kind, exact value): the row already there is returned
(with ``match_mac`` NULL if it is an entry of before 0014 holding the normal form)."""


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


def open_entry(cipher: PiiCipher, row: Any, key: bytes | None) -> str:
    """The clear value of a vault row (either format; ``key``: its user's data key);
    :class:`DecryptionError` if it does not authenticate."""
    sealed = Sealed(row.key_id, bytes(row.nonce), bytes(row.ciphertext))
    return cipher.open(sealed, aad=aad_for(row.id, row.user_id, row.kind), data_key=key)


def index_exactly(
    conn: Connection, cipher: PiiCipher, user_id: str, entries: Sequence[tuple[Any, str]]
) -> set[uuid.UUID]:
    """Give entries of the user written before revision 0014 (or 0004), each with its
    clear value, the indexes of their exact values: ``blind_mac`` of the value as stored,
    ``match_mac`` of its normal form. Returns the ids indexed.

    Their ``blind_mac`` is cleared first, so one cannot hold the exact index another
    needs. An entry whose exact value another entry of the user already holds (a
    duplicate: ``repair-vault`` merges it) keeps ``blind_mac`` NULL and is found by its
    ring-format ``blind_index`` meanwhile. The caller holds the rows locked.
    """
    if not entries:
        return set()
    mine = owned_by(_T, user_id)
    conn.execute(
        update(_T)
        .where(mine, _T.c.id.in_([row.id for row, _ in entries]), _T.c.match_mac.is_(None))
        .values(blind_mac=None)
    )
    other = _T.alias("other")
    indexed: set[uuid.UUID] = set()
    for row, clear in entries:
        mac = cipher.exact_index(row.kind, clear)
        taken = exists().where(
            owned_by(other, user_id), other.c.kind == row.kind, other.c.blind_mac == mac
        )
        try:
            with conn.begin_nested():
                done = conn.execute(
                    update(_T)
                    .where(mine, _T.c.id == row.id, _T.c.match_mac.is_(None), ~taken)
                    .values(blind_mac=mac, match_mac=cipher.blind_index(row.kind, clear))
                ).rowcount
        except sa_exc.IntegrityError:  # a concurrent insert took the index after the check
            done = 0
        if done:
            indexed.add(row.id)
    return indexed


class PiiVault:
    """Stores, reveals, lists and deletes one user's PII."""

    def __init__(self, db: Database, cipher: PiiCipher) -> None:
        self._db = db
        self._cipher = cipher

    def store(
        self, scope: UserScope, kind: str, value: str, *, join: Connection | None = None
    ) -> VaultRef:
        """Encrypt and store ``value``; the same exact value of the same kind is stored once
        (another spelling of it is an entry of its own, which :meth:`find` finds alike).

        Safe under concurrency: one row per (user, kind, exact value) whoever
        stores it, with whichever ring. An entry already stored is returned
        locked (``FOR KEY SHARE``) until the transaction ends, so neither the
        release of unreferenced entries (``release_vault_entries``) nor
        ``repair-vault`` deletes it under a reference being written. Entries of
        the value's normal form written before revision 0014 are decrypted and
        indexed exactly first (:func:`index_exactly`). ``join`` makes the write
        part of the caller's transaction. Raises :class:`InvalidField` for an
        unknown kind or a value with nothing to look it up by
        (:func:`check_value`), :class:`InvalidText` for an empty or oversized
        value, :class:`UserNotFound` without a profile, :class:`DecryptionError`
        if the user's data key does not unwrap.
        """
        kind = vault_kind(kind)
        value = check_value(kind, value)
        params = self._params(scope, kind, value)
        with self._db.transaction(join, owner=scope.user_id) as conn:
            for _ in range(_ATTEMPTS):
                found = conn.execute(_LOOKUP, params).all()
                exact = [r.id for r in found if r.match_mac and r.blind_mac == params["exact_mac"]]
                if exact:
                    return VaultRef(exact[0], kind)
                key = data_key(conn, self._cipher, scope.user_id, create=True)
                assert key is not None
                unchecked = any(r.match_mac is None for r in found)
                same = self._index_unchecked(conn, value, params, key) if unchecked else None
                if same is not None:
                    return same
                stored = conn.execute(_STORE, self._entry(scope, kind, value, params, key)).one()
                if stored.match_mac is not None:
                    return VaultRef(stored.id, kind)
                # a pod of the release before stored the normal form meanwhile: check it
        raise TransientFailure("the vault entry kept changing under concurrent stores; retry")

    def _params(self, scope: UserScope, kind: str, value: str) -> dict[str, Any]:
        return {
            "user_id": scope.user_id,
            "exact_mac": self._cipher.exact_index(kind, value),
            **matching(self._cipher, kind, value),
        }

    def _entry(
        self, scope: UserScope, kind: str, value: str, params: dict[str, Any], key: bytes
    ) -> dict[str, Any]:
        """The parameters of :data:`_STORE` for a new entry of ``value``."""
        entry_id = uuid.uuid4()
        sealed = self._cipher.seal(value, aad=aad_for(entry_id, scope.user_id, kind), data_key=key)
        return {
            "id": entry_id,
            "user_id": scope.user_id,
            "kind": kind,
            "dek": True,
            "key_id": None,
            "nonce": sealed.nonce,
            "ciphertext": sealed.ciphertext,
            "blind_mac": params["exact_mac"],
            "match_mac": params["match_mac"],
            "blind_index": self._cipher.legacy_blind_index(kind, value),
        }

    def _index_unchecked(
        self, conn: Connection, value: str, params: dict[str, Any], key: bytes
    ) -> VaultRef | None:
        """Index exactly the user's entries of ``value``'s normal form written before 0014
        (locked); the one holding ``value`` itself, if any. One that does not decrypt is
        left for ``repair-vault``, which marks it."""
        opened = []
        for row in conn.execute(_UNCHECKED, params).all():
            try:
                opened.append((row, open_entry(self._cipher, row, key)))
            except DecryptionError:
                continue
        indexed = index_exactly(conn, self._cipher, params["user_id"], opened)
        same = next((r.id for r, clear in opened if clear == value and r.id in indexed), None)
        return None if same is None else VaultRef(same, params["kind"])

    def lock_order(self, kind: str, value: str) -> tuple[str, bytes]:
        """Where ``value``'s entry sorts in the order transactions lock a user's entries:
        kind, then exact index (``release_vault_entries`` locks them so too). Storing
        several values in this order, a transaction does not deadlock with a release or
        another store."""
        kind = vault_kind(kind)
        return kind, self._cipher.exact_index(kind, value)

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
                .outerjoin(_K, owned_by(_K, _T.c.user_id))
                .where(owned(_T, scope), _T.c.id == entry_id)
            ).one_or_none()
        if row is None:
            raise RecordNotFound("no such vault entry for this user")
        key = None
        if row.dek and row.wrapped is not None:
            wrapped = Sealed(row.wrapping_key_id, bytes(row.wrapping_nonce), bytes(row.wrapped))
            key = self._cipher.unwrap(wrapped, scope.user_id)
        return open_entry(self._cipher, row, key)

    def reveal_all(self, scope: UserScope) -> list[tuple[VaultRef, str]]:
        """Every entry of the user decrypted, oldest first, in one query with the data key
        unwrapped once (an export); :class:`DecryptionError` as :meth:`reveal`."""
        with self._db.transaction() as conn:
            rows = conn.execute(
                select(_T).where(owned(_T, scope)).order_by(_T.c.created_at, _T.c.id)
            ).all()
            key = data_key(conn, self._cipher, scope.user_id, create=False) if rows else None
        return [
            (
                VaultRef(r.id, r.kind),
                self._cipher.open(
                    Sealed(r.key_id, bytes(r.nonce), bytes(r.ciphertext)),
                    aad=aad_for(r.id, r.user_id, r.kind),
                    data_key=key if r.dek else None,
                ),
            )
            for r in rows
        ]

    def find(
        self, scope: UserScope, kind: str, value: str, *, join: Connection | None = None
    ) -> VaultRef | None:
        """The user's entry holding ``value``, found by blind index without decrypting: the
        entry of that exact value, else the oldest of another spelling of it; a value
        with nothing to look it up by is refused (:func:`check_value`)."""
        kind = vault_kind(kind)
        value = check_value(kind, value)
        with self._db.transaction(join) as conn:
            found = conn.execute(_FIND, self._params(scope, kind, value)).first()
        return None if found is None else VaultRef(found.id, kind)

    def find_all(self, scope: UserScope, kind: str, value: str) -> list[VaultRef]:
        """Every entry of the user holding ``value`` in any spelling, oldest first."""
        kind = vault_kind(kind)
        value = check_value(kind, value)
        with self._db.transaction() as conn:
            rows = conn.execute(_FIND_ALL, self._params(scope, kind, value)).all()
        return [VaultRef(r.id, kind) for r in rows]

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
