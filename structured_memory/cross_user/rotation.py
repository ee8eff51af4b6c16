"""Key rotation: re-wrap every user's data key under the active ring key and move vault
entries of the ring format (before revision 0004) to envelope encryption; what is left
to rotate, and what rotation or repair found unreadable."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any

from sqlalchemy import ColumnElement, Connection, Row, Table, and_, func, or_, select, update

from policies.errors import DecryptionError
from structured_memory.cross_user.marking import Progress, cross_user_transaction
from structured_memory.database import Database
from structured_memory.models import PiiDataKey, PiiVaultEntry, table_of
from structured_memory.pii.cipher import PiiCipher, Sealed
from structured_memory.pii.vault import aad_for, data_key, index_exactly
from structured_memory.scoping import owned_by

__all__ = [
    "RotationReport",
    "count_unreadable",
    "first_unreadable",
    "pending_rotation",
    "rotate_keys",
]

_T = table_of(PiiVaultEntry)
_KEY = table_of(PiiDataKey)


def pending_rotation(db: Database, cipher: PiiCipher) -> int:
    """Data keys wrapped by a ring key other than the active one, plus vault entries
    still in the ring format (written before revision 0004)."""
    stale_keys = select(func.count()).where(_KEY.c.key_id != cipher.ring.active.key_id)
    ring_format = select(func.count()).where(_T.c.dek.is_(False))
    with cross_user_transaction(db) as conn:
        return int(
            conn.execute(
                select(stale_keys.scalar_subquery() + ring_format.scalar_subquery())
            ).scalar_one()
        )


def count_unreadable(db: Database) -> int:
    """Vault entries that rotation or repair found unreadable (tampered, or under a key
    the ring no longer holds): marked themselves, or their user's data key."""
    key_unreadable = (
        select(_KEY.c.user_id)
        .where(owned_by(_KEY, _T.c.user_id), _KEY.c.unreadable_since.is_not(None))
        .exists()
    )
    with cross_user_transaction(db) as conn:
        return int(
            conn.execute(
                select(func.count()).where(
                    or_(_T.c.unreadable_since.is_not(None), and_(_T.c.dek, key_unreadable))
                )
            ).scalar_one()
        )


@dataclass(frozen=True)
class RotationReport:
    """What a rotation run did; what it could not read is named by id, never by value."""

    rewrapped: int
    """Data keys re-wrapped under the active ring key."""
    migrated: int
    """Entries moved from the ring format to the envelope format."""
    failed: tuple[uuid.UUID, ...]
    """Vault entries that did not decrypt (or whose user's data key did not), left as they were."""
    failed_data_keys: tuple[str, ...]
    """Users whose data key did not unwrap, left as it was."""
    remaining: int
    """Still pending after the run: the failures, and rows other transactions held locked."""


def first_unreadable(table: Table) -> ColumnElement[datetime]:
    """The ``unreadable_since`` of a row found unreadable: the first time it was found so."""
    return func.coalesce(table.c.unreadable_since, func.now())


def rotate_keys(
    db: Database,
    cipher: PiiCipher,
    *,
    batch_size: int = 500,
    progress: Callable[[int], None] | None = None,
) -> RotationReport:
    """Re-wrap every data key under the active ring key, then move the vault entries of
    the ring format to the envelope format. Values already in the envelope format are
    not touched.

    Each batch is one transaction over rows locked ``FOR UPDATE SKIP LOCKED``,
    so rotation runs beside live traffic and can be interrupted and resumed.
    Each row is visited once per run: one that cannot be read (tampered, or
    under a key the ring no longer holds, after one re-read of a key file) is
    skipped, marked ``unreadable_since`` (which the health check counts) and
    named in the report; the others rotate. ``progress`` gets the rows visited
    per batch.
    """
    rewrapped, failed_keys = _rewrap_data_keys(db, cipher, batch_size, progress)
    migrated, failed = _move_to_envelope(db, cipher, batch_size, progress)
    return RotationReport(
        rewrapped=rewrapped,
        migrated=migrated,
        failed=tuple(failed),
        failed_data_keys=tuple(failed_keys),
        remaining=pending_rotation(db, cipher),
    )


def _rewrap_data_keys(
    db: Database, cipher: PiiCipher, batch_size: int, progress: Progress
) -> tuple[int, list[str]]:
    active = cipher.ring.active.key_id
    rewrapped, failed_keys = 0, list[str]()
    last_user: str | None = None
    while True:
        visited, failed = db.retrying(
            partial(_rewrap_batch, db, cipher, active, last_user, batch_size)
        )
        if not visited:
            return rewrapped, failed_keys
        rewrapped += len(visited) - len(failed)
        failed_keys += failed
        last_user = visited[-1]
        if progress is not None:
            progress(len(visited))


def _rewrap_batch(
    db: Database, cipher: PiiCipher, active: str, after: str | None, batch_size: int
) -> tuple[list[str], list[str]]:
    """Re-wrap one batch of data keys in one transaction; the users visited and those
    whose key failed to unwrap."""
    query = select(_KEY).where(_KEY.c.key_id != active)
    if after is not None:
        query = query.where(_KEY.c.user_id > after)
    failed = []
    with cross_user_transaction(db) as conn:
        rows = conn.execute(
            query.order_by(_KEY.c.user_id).limit(batch_size).with_for_update(skip_locked=True)
        ).all()
        for row in rows:
            mine = owned_by(_KEY, row.user_id)
            try:
                key = cipher.unwrap(
                    Sealed(row.key_id, bytes(row.nonce), bytes(row.wrapped)), row.user_id
                )
            except DecryptionError:
                conn.execute(
                    update(_KEY).where(mine).values(unreadable_since=first_unreadable(_KEY))
                )
                failed.append(row.user_id)
                continue
            wrapped = cipher.wrap(key, row.user_id)
            conn.execute(
                update(_KEY)
                .where(mine)
                .values(
                    key_id=wrapped.key_id,
                    nonce=wrapped.nonce,
                    wrapped=wrapped.ciphertext,
                    unreadable_since=None,
                    updated_at=func.now(),
                )
            )
    return [r.user_id for r in rows], failed


def _move_to_envelope(
    db: Database, cipher: PiiCipher, batch_size: int, progress: Progress
) -> tuple[int, list[uuid.UUID]]:
    migrated, failed_entries = 0, list[uuid.UUID]()
    last_id: uuid.UUID | None = None
    while True:
        visited, failed = db.retrying(partial(_envelope_batch, db, cipher, last_id, batch_size))
        if not visited:
            return migrated, failed_entries
        migrated += len(visited) - len(failed)
        failed_entries += failed
        last_id = visited[-1]
        if progress is not None:
            progress(len(visited))


def _envelope_batch(
    db: Database, cipher: PiiCipher, after: uuid.UUID | None, batch_size: int
) -> tuple[list[uuid.UUID], list[uuid.UUID]]:
    """Move one batch of ring-format entries in one transaction; the entries visited
    and those that failed."""
    query = select(_T).where(_T.c.dek.is_(False))
    if after is not None:
        query = query.where(_T.c.id > after)
    data_keys: dict[str, bytes | None] = {}
    with cross_user_transaction(db) as conn:
        rows = conn.execute(
            query.order_by(_T.c.id).limit(batch_size).with_for_update(skip_locked=True)
        ).all()
        failed = [r.id for r in rows if not _to_envelope(conn, cipher, r, data_keys)]
    return [r.id for r in rows], failed


def _to_envelope(
    conn: Connection, cipher: PiiCipher, row: Row[Any], data_keys: dict[str, bytes | None]
) -> bool:
    """Re-encrypt one ring-format entry with its user's data key; False if unreadable."""
    aad = aad_for(row.id, row.user_id, row.kind)
    mine = and_(_T.c.id == row.id, owned_by(_T, row.user_id))
    try:
        clear = cipher.open(Sealed(row.key_id, bytes(row.nonce), bytes(row.ciphertext)), aad=aad)
        if row.user_id not in data_keys:
            data_keys[row.user_id] = None  # stays None if the data key fails to unwrap
            data_keys[row.user_id] = data_key(conn, cipher, row.user_id, create=True)
        key = data_keys[row.user_id]
        if key is None:
            raise DecryptionError("the user's PII data key did not unwrap")
    except DecryptionError:
        conn.execute(update(_T).where(mine).values(unreadable_since=first_unreadable(_T)))
        return False
    sealed = cipher.seal(clear, aad=aad, data_key=key)
    conn.execute(
        update(_T)
        .where(mine)
        .values(
            dek=True,
            key_id=None,
            nonce=sealed.nonce,
            ciphertext=sealed.ciphertext,
            unreadable_since=None,
            updated_at=func.now(),
        )
    )
    if row.match_mac is None:
        index_exactly(conn, cipher, row.user_id, [(row, clear)])
    return True
