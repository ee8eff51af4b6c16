"""Devices a user signs in from, identified by a fingerprint keyed for the user.

The raw device id is never stored. The fingerprint is an HMAC, under a key derived
from the key ring for the user (``PiiCipher.device_fingerprint``), of
:func:`device_digest` (the SHA-256 of device id, OS and browser): the same device
has another fingerprint in every account, and the serials under a public IMEI
prefix cannot be tried against it without the key. Rows written before revision
0013 hold the plain digest (``fingerprint_keyed`` false) until ``dualtrack
rekey-devices`` (:mod:`structured_memory.cross_user.device_rekey`) or the device's next
registration re-keys them; for one release every lookup accepts either form.

A device becomes trusted once :data:`TRUST_AFTER_VERIFICATIONS` verifications
(OTP, SMS code, ...) have succeeded on it; a failed verification changes
nothing, and trust can be revoked.

``check_device_field`` is ``policies.validation``'s, re-exported here for one release.
"""

from __future__ import annotations

import hashlib
import string
from collections.abc import Sequence
from typing import Any

from sqlalchemy import ColumnElement, delete, func, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert

from policies.errors import InvalidField, RecordNotFound
from policies.scope import UserScope
from policies.validation import check_bool, check_device_field, check_field_length
from structured_memory.database import Database
from structured_memory.models import UserDevice, table_of
from structured_memory.pii.cipher import PiiCipher
from structured_memory.scoping import owned
from values.records import Device

__all__ = ["TRUST_AFTER_VERIFICATIONS", "DeviceRepository", "check_device_field", "device_digest"]

TRUST_AFTER_VERIFICATIONS = 2

_T = table_of(UserDevice)

_HEX = frozenset(string.hexdigits)


def _check_fingerprint(fp: object) -> str:
    """``fp`` as stored (64 lowercase hex digits), else :class:`InvalidField`."""
    if not isinstance(fp, str) or len(fp) != 64 or not set(fp) <= _HEX:
        raise InvalidField("fingerprint must be 64 hex digits (SHA-256)", field="fingerprint")
    return fp.lower()


def device_digest(device_id: str, os: str, browser: str) -> str:
    """SHA-256 hex of device id, OS and browser, separated by a unit separator: what the
    keyed fingerprint is computed over (and the fingerprint of rows before 0013)."""
    parts = [
        check_field_length("device_id", device_id, 256),
        check_device_field("os", os),
        check_device_field("browser", browser),
    ]
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()


def _one(rows: Sequence[Any]) -> Device:
    """The device a lookup found (a re-keyed row before a not yet merged old one)."""
    if not rows:
        raise RecordNotFound("no such device for this user")
    return Device.model_validate(max(rows, key=lambda r: r.fingerprint_keyed)._mapping)


class DeviceRepository:
    """Registers, verifies, lists and removes a user's devices."""

    def __init__(self, db: Database, cipher: PiiCipher) -> None:
        self._db = db
        self._cipher = cipher

    def _named(self, scope: UserScope, fp: object) -> ColumnElement[bool]:
        """The user's rows a fingerprint names: keyed, or (one release) the plain digest
        of a row not re-keyed yet, or a re-keyed row by its old digest."""
        digest = _check_fingerprint(fp)
        keyed = self._cipher.device_fingerprint(scope.user_id, digest)
        return owned(_T, scope) & _T.c.fingerprint.in_([digest, keyed])

    def register(self, scope: UserScope, *, device_id: str, os: str, browser: str) -> Device:
        """Record a sign-in from a device: create it untrusted, or refresh ``last_active``
        (re-keying the row of the device written before 0013, if any).

        Raises :class:`UserNotFound` if the user has no profile.
        """
        digest = device_digest(device_id, os, browser)
        fp = self._cipher.device_fingerprint(scope.user_id, digest)
        stmt = (
            pg_insert(_T)
            .values(
                user_id=scope.user_id,
                fingerprint=fp,
                fingerprint_keyed=True,
                os=os,
                browser=browser,
            )
            .on_conflict_do_update(
                index_elements=[_T.c.user_id, _T.c.fingerprint],
                set_={"last_active": func.now()},
            )
            .returning(_T)
        )
        with self._db.transaction(owner=scope.user_id) as conn:
            old = owned(_T, scope) & (_T.c.fingerprint == digest) & ~_T.c.fingerprint_keyed
            keyed = owned(_T, scope) & (_T.c.fingerprint == fp)
            if conn.execute(select(_T.c.id).where(keyed)).first() is None:
                conn.execute(update(_T).where(old).values(fingerprint=fp, fingerprint_keyed=True))
            row = conn.execute(stmt).one()
        return Device.model_validate(row._mapping)

    def record_verification(self, scope: UserScope, fp: str, *, succeeded: bool) -> Device:
        """Count a verification on the device; trusted after the second success."""
        named = self._named(scope, fp)
        check_bool(succeeded, "succeeded")
        with self._db.transaction() as conn:
            if succeeded:
                count = _T.c.verified_count + 1
                rows = conn.execute(
                    update(_T)
                    .where(named)
                    .values(
                        verified_count=count,
                        is_trusted=count >= TRUST_AFTER_VERIFICATIONS,
                        last_active=func.now(),
                    )
                    .returning(_T)
                ).all()
            else:
                rows = conn.execute(select(_T).where(named)).all()
        return _one(rows)

    def revoke_trust(self, scope: UserScope, fp: str) -> Device:
        """Mark the device untrusted and reset its verification count."""
        named = self._named(scope, fp)
        with self._db.transaction() as conn:
            rows = conn.execute(
                update(_T).where(named).values(verified_count=0, is_trusted=False).returning(_T)
            ).all()
        return _one(rows)

    def list(self, scope: UserScope) -> list[Device]:
        """The user's devices, most recently active first."""
        with self._db.transaction() as conn:
            rows = conn.execute(
                select(_T).where(owned(_T, scope)).order_by(_T.c.last_active.desc())
            ).all()
        return [Device.model_validate(r._mapping) for r in rows]

    def remove(self, scope: UserScope, fp: str) -> bool:
        """Forget a device; returns whether it existed."""
        named = self._named(scope, fp)
        with self._db.transaction() as conn:
            n = conn.execute(delete(_T).where(named)).rowcount
        return bool(n)
