"""Devices a user signs in from, identified by a SHA-256 fingerprint.

The raw device id is never stored: only ``sha256(device_id, os, browser)``.
A device becomes trusted once :data:`TRUST_AFTER_VERIFICATIONS` verifications
(OTP, SMS code, ...) have succeeded on it; a failed verification changes
nothing, and trust can be revoked.
"""

from __future__ import annotations

import hashlib
import string

from sqlalchemy import delete, func, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert

from policies.errors import InvalidField, RecordNotFound
from policies.scope import UserScope
from policies.validation import check_bool, check_field_length, check_no_pii
from structured_memory.database import Database
from structured_memory.models import UserDevice, table_of
from structured_memory.records import Device

__all__ = ["TRUST_AFTER_VERIFICATIONS", "DeviceRepository", "check_device_field", "fingerprint"]

TRUST_AFTER_VERIFICATIONS = 2

_T = table_of(UserDevice)

_HEX = frozenset(string.hexdigits)


def _check_fingerprint(fp: object) -> str:
    """``fp`` as stored (64 lowercase hex digits), else :class:`InvalidField`."""
    if not isinstance(fp, str) or len(fp) != 64 or not set(fp) <= _HEX:
        raise InvalidField("fingerprint must be 64 hex digits (SHA-256)", field="fingerprint")
    return fp.lower()


def check_device_field(field: str, value: str) -> str:
    """``os`` or ``browser`` if it is at most 64 characters holding no PII (they are stored
    and listed in clear), else :class:`InvalidField`."""
    return check_no_pii(check_field_length(field, value, 64), field)


def fingerprint(device_id: str, os: str, browser: str) -> str:
    """SHA-256 hex of device id, OS and browser, separated by a unit separator."""
    parts = [
        check_field_length("device_id", device_id, 256),
        check_device_field("os", os),
        check_device_field("browser", browser),
    ]
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()


class DeviceRepository:
    """Registers, verifies, lists and removes a user's devices."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def register(self, scope: UserScope, *, device_id: str, os: str, browser: str) -> Device:
        """Record a sign-in from a device: create it untrusted, or refresh ``last_active``.

        Raises :class:`UserNotFound` if the user has no profile.
        """
        fp = fingerprint(device_id, os, browser)
        stmt = (
            pg_insert(_T)
            .values(user_id=scope.user_id, fingerprint=fp, os=os, browser=browser)
            .on_conflict_do_update(
                index_elements=[_T.c.user_id, _T.c.fingerprint],
                set_={"last_active": func.now()},
            )
            .returning(_T)
        )
        with self._db.transaction(owner=scope.user_id) as conn:
            row = conn.execute(stmt).one()
        return Device.model_validate(row._mapping)

    def record_verification(self, scope: UserScope, fp: str, *, succeeded: bool) -> Device:
        """Count a verification on the device; trusted after the second success."""
        fp = _check_fingerprint(fp)
        check_bool(succeeded, "succeeded")
        with self._db.transaction() as conn:
            if succeeded:
                count = _T.c.verified_count + 1
                row = conn.execute(
                    update(_T)
                    .where(_T.c.user_id == scope.user_id, _T.c.fingerprint == fp)
                    .values(
                        verified_count=count,
                        is_trusted=count >= TRUST_AFTER_VERIFICATIONS,
                        last_active=func.now(),
                    )
                    .returning(_T)
                ).one_or_none()
            else:
                row = conn.execute(
                    select(_T).where(_T.c.user_id == scope.user_id, _T.c.fingerprint == fp)
                ).one_or_none()
        if row is None:
            raise RecordNotFound("no such device for this user")
        return Device.model_validate(row._mapping)

    def revoke_trust(self, scope: UserScope, fp: str) -> Device:
        """Mark the device untrusted and reset its verification count."""
        fp = _check_fingerprint(fp)
        with self._db.transaction() as conn:
            row = conn.execute(
                update(_T)
                .where(_T.c.user_id == scope.user_id, _T.c.fingerprint == fp)
                .values(verified_count=0, is_trusted=False)
                .returning(_T)
            ).one_or_none()
        if row is None:
            raise RecordNotFound("no such device for this user")
        return Device.model_validate(row._mapping)

    def list(self, scope: UserScope) -> list[Device]:
        """The user's devices, most recently active first."""
        with self._db.transaction() as conn:
            rows = conn.execute(
                select(_T).where(_T.c.user_id == scope.user_id).order_by(_T.c.last_active.desc())
            ).all()
        return [Device.model_validate(r._mapping) for r in rows]

    def remove(self, scope: UserScope, fp: str) -> bool:
        """Forget a device; returns whether it existed."""
        fp = _check_fingerprint(fp)
        with self._db.transaction() as conn:
            n = conn.execute(
                delete(_T).where(_T.c.user_id == scope.user_id, _T.c.fingerprint == fp)
            ).rowcount
        return bool(n)
