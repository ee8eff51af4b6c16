"""User profiles with optimistic locking.

``update`` changes a profile only if its ``version`` is still the one the
caller read, in a single ``UPDATE ... WHERE version = :expected`` statement
(a change of ``attributes`` or ``profile_summary`` compares the version under
the row lock in its one transaction, which also vaults their PII): no row lock
is held between the caller's read and the write. ``update_with_retry``
re-reads and re-applies a change function on conflict, with exponential
backoff and full jitter.

No PII is stored in clear (``structured_memory.pii.fields``): in
``attributes`` each string holding PII becomes a masked leaf
``{"masked": "137****7000", "pii": [{"vault_id": ..., "kind": "phone"}]}``;
``profile_summary`` is masked in place and its references are kept in
``attributes[SUMMARY_PII_KEY]``, which only the repository writes (a value a
caller passes there is replaced). Values are vaulted in the update's
transaction; entries the old attributes referenced and nothing references
any more are released. A key holding PII is refused.

The fields' checks are ``policies.profile_fields``'s; ``validate_changes``,
``NOTIFICATION_CHANNELS`` and ``MAX_ATTRIBUTES_BYTES`` are re-exported here for
one release.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, delete, func, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert

from policies.audit import AuditAction
from policies.errors import ConcurrentModificationError, InvalidField, UserNotFound
from policies.pii import PiiMatch, check_pii_values, mask_pii
from policies.profile_fields import MAX_ATTRIBUTES_BYTES, NOTIFICATION_CHANNELS, validate_changes
from policies.scope import UserScope
from policies.validation import (
    check_int,
    check_number,
)
from structured_memory.audit import record
from structured_memory.database import Database
from structured_memory.models import UserProfile, table_of
from structured_memory.pii.fields import (
    Ref,
    hold_references,
    is_reference,
    plan_json,
    references_in,
)
from structured_memory.pii.vault import PiiVault
from structured_memory.repositories.fragments import release_vault_entries
from structured_memory.scoping import owned
from values.records import Profile

__all__ = [
    "MAX_ATTRIBUTES_BYTES",
    "NOTIFICATION_CHANNELS",
    "SUMMARY_PII_KEY",
    "ProfileRepository",
    "RetryResult",
    "validate_changes",
]

SUMMARY_PII_KEY = "profile_summary_pii"
"""The key of ``attributes`` holding the vault references of ``profile_summary``'s PII."""
_ENSURE_ATTEMPTS = 3
"""How often ``ensure`` tries again when an erasure removes the row it found."""

_T = table_of(UserProfile)

_PERSONAL = frozenset({"attributes", "profile_summary"})
"""The fields whose PII is vaulted and masked."""


@dataclass(frozen=True)
class RetryResult:
    """The profile after a retried update and how many attempts it took."""

    profile: Profile
    attempts: int


class ProfileRepository:
    """Reads and writes ``user_profile`` rows, always for one user scope."""

    def __init__(self, db: Database, *, vault: PiiVault) -> None:
        self._db = db
        self._vault = vault

    def get(self, scope: UserScope) -> Profile:
        """The user's profile; raise :class:`UserNotFound` if there is none."""
        with self._db.transaction() as conn:
            row = conn.execute(select(_T).where(owned(_T, scope))).one_or_none()
        if row is None:
            raise UserNotFound("no profile for this user")
        return Profile.model_validate(row._mapping)

    def ensure(self, scope: UserScope) -> Profile:
        """The user's profile, created with defaults if it does not exist yet.

        An erasure of the user committing between the insert (which found the row)
        and the read is retried: the user is created again. Raises
        :class:`UserNotFound` only if erasures win every attempt.
        """
        create = pg_insert(_T).values(user_id=scope.user_id).on_conflict_do_nothing()
        with self._db.transaction() as conn:
            for _ in range(_ENSURE_ATTEMPTS):
                row = conn.execute(create.returning(_T)).one_or_none()
                if row is None:
                    row = conn.execute(select(_T).where(owned(_T, scope))).one_or_none()
                if row is not None:
                    return Profile.model_validate(row._mapping)
        raise UserNotFound("the user was erased while being created; retry")

    def create(self, scope: UserScope, **fields: object) -> Profile:
        """Create the profile with the given fields; raise if it exists or a field is bad."""
        values = validate_changes(fields)
        personal = {k: values.pop(k) for k in _PERSONAL if k in values}
        with self._db.transaction() as conn:
            row = conn.execute(
                pg_insert(_T)
                .values(user_id=scope.user_id, **values)
                .on_conflict_do_nothing()
                .returning(_T)
            ).one_or_none()
            if row is None:
                raise ConcurrentModificationError("a profile for this user already exists")
            if personal:
                row = conn.execute(
                    update(_T)
                    .where(owned(_T, scope))
                    .values(**self._sealed(conn, scope, personal, {}))
                    .returning(_T)
                ).one()
        return Profile.model_validate(row._mapping)

    def update(self, scope: UserScope, *, expected_version: int, **changes: object) -> Profile:
        """Apply ``changes`` if the stored version is ``expected_version``.

        Returns the new profile (version incremented). Raises
        :class:`ConcurrentModificationError` on a stale version,
        :class:`UserNotFound` for an unknown user and :class:`InvalidField` for
        a bad change; in every error case nothing is written.
        """
        check_int(expected_version, "expected_version", low=1, high=2**31 - 1)
        updated, profile = self._compare_and_set(scope, expected_version, changes)
        if not updated:
            raise ConcurrentModificationError(
                f"profile version is {profile.version}, not the expected {expected_version}",
                expected_version=expected_version,
                current_version=profile.version,
            )
        return profile

    def _compare_and_set(
        self, scope: UserScope, expected_version: int, changes: Mapping[str, object]
    ) -> tuple[bool, Profile]:
        """``(True, new profile)`` if the version matched, else ``(False, current profile)``.

        One transaction: the conditional UPDATE, and on a mismatch the read of
        the current row, so a retry needs no separate read. A change of
        attributes or summary reads the row locked first, and on a match
        vaults their PII, updates and releases the entries no longer referenced.
        """
        values = validate_changes(changes)
        if "notification_preference" in values:
            values["notification_preference"] = _T.c.notification_preference.op("||")(
                values["notification_preference"]
            )
        mine = owned(_T, scope)
        matching = (mine, _T.c.version == expected_version)
        with self._db.transaction() as conn:
            if _PERSONAL.isdisjoint(values):
                row = conn.execute(
                    update(_T)
                    .where(*matching)
                    .values(**values, version=_T.c.version + 1, updated_at=func.now())
                    .returning(_T)
                ).one_or_none()
                updated = row is not None
                if row is None:
                    row = conn.execute(select(_T).where(mine)).one_or_none()
            else:
                # PII to vault and references to release: compare under the row lock
                row = conn.execute(
                    select(_T).where(mine).with_for_update(key_share=True)
                ).one_or_none()
                updated = row is not None and row.version == expected_version
                if row is not None and updated:
                    old = row.attributes
                    values |= self._sealed(conn, scope, values, old)
                    row = conn.execute(
                        update(_T)
                        .where(*matching)
                        .values(**values, version=_T.c.version + 1, updated_at=func.now())
                        .returning(_T)
                    ).one()
                    kept = set(references_in(row.attributes))
                    gone = [i for i in references_in(old) if i not in kept]
                    release_vault_entries(conn, scope, gone)
            if updated and row is not None:
                record(
                    conn,
                    scope,
                    AuditAction.PROFILE_UPDATE,
                    details={"version": row.version, "fields": sorted(changes)},
                )
        if row is None:
            raise UserNotFound("no profile for this user")
        return updated, Profile.model_validate(row._mapping)

    def _sealed(
        self,
        conn: Connection,
        scope: UserScope,
        values: Mapping[str, Any],
        stored: Mapping[str, Any],
    ) -> dict[str, Any]:
        """``attributes`` and ``profile_summary`` of ``values`` with their PII vaulted and
        masked, the summary's references in ``attributes`` (``stored``: the attributes
        before the change)."""
        out: dict[str, Any] = {}
        attributes = None
        if "attributes" in values:
            given = {k: v for k, v in values["attributes"].items() if k != SUMMARY_PII_KEY}
            attributes = plan_json(given, "attributes")
            hold_references(conn, scope, references_in(given))
        summary: tuple[str, list[PiiMatch]] | None = None
        if "profile_summary" in values:
            summary = mask_pii(values["profile_summary"])
        refs: dict[tuple[str, str], Ref] = {}

        def store(m: PiiMatch) -> Ref:
            key = (m.kind.value, m.value)
            if key not in refs:
                ref = self._vault.store(scope, key[0], key[1], join=conn)
                refs[key] = {"vault_id": str(ref.id), "kind": ref.kind}
            return refs[key]

        wanted = [*(attributes.matches if attributes else ()), *(summary[1] if summary else ())]
        check_pii_values(wanted, "profile")
        for m in sorted(wanted, key=lambda m: (m.kind.value, m.value)):
            store(m)
        if summary is not None:
            out["profile_summary"] = summary[0]
            summary_refs: list[Ref] = []
            for ref in map(store, summary[1]):
                if ref not in summary_refs:
                    summary_refs.append(ref)
        else:
            held = stored.get(SUMMARY_PII_KEY)
            summary_refs = [r for r in held if is_reference(r)] if isinstance(held, list) else []
        if attributes is not None:
            base = attributes.seal(store)
        else:
            base = {k: v for k, v in stored.items() if k != SUMMARY_PII_KEY}
        out["attributes"] = {**base, SUMMARY_PII_KEY: summary_refs} if summary_refs else base
        return out

    def update_with_retry(
        self,
        scope: UserScope,
        change: Callable[[Profile], Mapping[str, object]],
        *,
        max_attempts: int = 50,
        base_delay_s: float = 0.001,
        max_delay_s: float = 0.05,
    ) -> RetryResult:
        """Read, compute ``change(profile)``, write; on a version conflict, repeat.

        ``change`` must be a pure function of the profile it is given: it may
        run several times. The first conflict is retried at once from the
        current row that the failed write returned; later ones back off
        (exponential, full jitter) and then re-read, so an attempt never
        starts from a row that went stale during the sleep. After
        ``max_attempts`` conflicts :class:`ConcurrentModificationError` is raised.
        """
        if not callable(change):
            raise InvalidField("change must be a function of the profile", field="change")
        check_int(max_attempts, "max_attempts", low=1, high=1000)
        check_number(base_delay_s, "base_delay_s", low=0.0, high=60.0)
        check_number(max_delay_s, "max_delay_s", low=0.0, high=60.0)
        current = self.get(scope)
        for attempt in range(1, max_attempts + 1):
            updated, profile = self._compare_and_set(scope, current.version, change(current))
            if updated:
                return RetryResult(profile, attempt)
            if attempt == max_attempts:
                current = profile
                break
            if attempt == 1:
                current = profile
            else:
                time.sleep(random.uniform(0, min(max_delay_s, base_delay_s * 2**attempt)))
                current = self.get(scope)
        raise ConcurrentModificationError(
            f"profile update still conflicted after {max_attempts} attempts",
            attempts=max_attempts,
            current_version=current.version,
        )

    def delete_user(self, scope: UserScope, *, join: Connection | None = None) -> bool:
        """Erase the user: profile, devices, links, facts, fragments and vault entries.

        Returns whether a profile existed. The other tables cascade from
        ``user_profile`` inside the same statement; ``join`` makes it part of
        the caller's transaction.
        """
        with self._db.transaction(join) as conn:
            deleted = conn.execute(delete(_T).where(owned(_T, scope))).rowcount
        return bool(deleted)
