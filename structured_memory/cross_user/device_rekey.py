"""Cross-user: re-key the device fingerprints written before revision 0013.

``dualtrack rekey-devices`` (migrations have no key ring, so a command does it, as
``rotate-keys`` rotates). A row holding the plain SHA-256 (``fingerprint_keyed``
false) gets the fingerprint keyed for its user (``PiiCipher.device_fingerprint``
of that digest: no raw id is needed). Batches of rows locked ``FOR UPDATE SKIP
LOCKED``, one transaction each, so it runs beside traffic and resumes after an
interruption; a keyed row is never visited again, so a second run changes nothing.

A row whose keyed fingerprint its user already holds (a pod of the release before
registered the device again after a new pod had re-keyed it) is merged into that
row: the most verifications, trusted if either was, the earliest ``first_seen``
and the latest ``last_active``; the old row is deleted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, delete, func, select, update

from structured_memory.cross_user.marking import cross_user_transaction
from structured_memory.database import Database
from structured_memory.models import UserDevice, table_of
from structured_memory.pii.cipher import PiiCipher
from structured_memory.scoping import owned_by

__all__ = ["DeviceRekeyReport", "count_unkeyed_devices", "rekey_devices"]

_T = table_of(UserDevice)


@dataclass(frozen=True)
class DeviceRekeyReport:
    """What a re-key run did."""

    rekeyed: int
    """Rows that held the plain SHA-256 and now hold the keyed fingerprint, or were merged."""
    merged: int
    """Of those, rows merged into the re-keyed row of the same device and deleted."""


def count_unkeyed_devices(db: Database) -> int:
    """Device rows (all users) still holding the plain SHA-256."""
    with cross_user_transaction(db) as conn:
        return int(conn.execute(select(func.count()).where(~_T.c.fingerprint_keyed)).scalar_one())


def rekey_devices(
    db: Database,
    cipher: PiiCipher,
    *,
    batch_size: int = 500,
    progress: Callable[[int], None] | None = None,
) -> DeviceRekeyReport:
    """Re-key every device row holding the plain SHA-256 (see the module docstring);
    ``progress`` gets the rows per batch."""
    rekeyed = merged = 0
    while True:
        done, joined = db.retrying(lambda: _batch(db, cipher, batch_size))
        if not done:
            return DeviceRekeyReport(rekeyed=rekeyed, merged=merged)
        rekeyed, merged = rekeyed + done, merged + joined
        if progress is not None:
            progress(done)


def _batch(db: Database, cipher: PiiCipher, batch_size: int) -> tuple[int, int]:
    """Re-key one batch in one transaction; (rows re-keyed, of them merged)."""
    with cross_user_transaction(db) as conn:
        rows = conn.execute(
            select(_T)
            .where(~_T.c.fingerprint_keyed)
            .order_by(_T.c.id)
            .limit(batch_size)
            .with_for_update(skip_locked=True)
        ).all()
        merged = sum(_rekey(conn, cipher, row) for row in rows)
    return len(rows), merged


def _rekey(conn: Connection, cipher: PiiCipher, row: Any) -> bool:
    """Re-key one locked row; whether it was merged into the user's re-keyed row."""
    keyed = cipher.device_fingerprint(row.user_id, row.fingerprint)
    mine = owned_by(_T, row.user_id)
    twin = conn.execute(
        select(_T.c.id).where(mine, _T.c.fingerprint == keyed).with_for_update()
    ).first()
    if twin is None:
        conn.execute(
            update(_T)
            .where(mine, _T.c.id == row.id)
            .values(fingerprint=keyed, fingerprint_keyed=True)
        )
        return False
    conn.execute(
        update(_T)
        .where(mine, _T.c.id == twin.id)
        .values(
            verified_count=func.greatest(_T.c.verified_count, row.verified_count),
            is_trusted=_T.c.is_trusted | row.is_trusted,
            first_seen=func.least(_T.c.first_seen, row.first_seen),
            last_active=func.greatest(_T.c.last_active, row.last_active),
        )
    )
    conn.execute(delete(_T).where(mine, _T.c.id == row.id))
    return True
