"""Structured facts: one key, one JSON value, a policy, a confidence and a TTL.

Expired facts are never returned, before or after the sweep. A fact's
lifetime is decided by ``policies.ttl`` like a fragment's (policy, kind
``fact``, frequent user), and reading it by its key renews it by its own period,
exactly as a search renews a fragment: the read writes nothing, the use is
written shortly after (``structured_memory.renewals``), and a fact expiring
within a day is renewed at once.

No PII is stored in clear (``structured_memory.pii.fields``): each string of
a value holding PII becomes a masked leaf ``{"masked": "收货电话 138****8000",
"pii": [{"vault_id": ..., "kind": "phone"}]}``, its clear values vaulted in
the same transaction. A SENSITIVE fact holds only a vault reference
``{"vault_id": ..., "kind": ...}`` (from ``PiiVault.store``), kept as it is.
Replacing or deleting a fact releases the vault entries nothing else
references; a key holding PII is refused.

``check_source`` is ``policies.validation``'s, re-exported here for one release.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from sqlalchemy import Connection, String, and_, bindparam, delete, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert

from policies.audit import AuditAction
from policies.confidence import DEFAULT_CONFIDENCE, ConfidenceConfig, FeedbackAction, is_pending
from policies.errors import InvalidField, TransientFailure
from policies.lifecycle import LifecyclePolicy, require_policy
from policies.scope import UserScope
from policies.ttl import DEFAULT_TTL, MemoryKind, TTLConfig, lifetime, renewed
from policies.validation import (
    check_field_length,
    check_json,
    check_json_depth,
    check_number,
    check_source,
    check_uuid,
)
from structured_memory.audit import record
from structured_memory.database import Database
from structured_memory.models import FactStatus, MemoryFact, table_of
from structured_memory.pii.fields import (
    JsonPlan,
    Ref,
    check_key,
    hold_references,
    is_reference,
    plan_json,
    references_in,
)
from structured_memory.pii.vault import PiiVault
from structured_memory.renewals import URGENT_WITHIN, Renewals, renewal
from structured_memory.repositories.confidence import MemoryTable, apply_feedback
from structured_memory.repositories.fragments import (
    frequent_user,
    release_vault_entries,
    require_user,
)
from structured_memory.scoping import live, owned, owned_by
from values.records import Fact

__all__ = ["MAX_FACT_VALUE_BYTES", "FactRepository", "Former", "check_source"]

MAX_FACT_VALUE_BYTES = 16 * 1024

_T = table_of(MemoryFact)

_PUT_FIELDS: Final = (
    *("policy", "confidence", "status", "last_used_at", "updated_at", "source"),
    *("agent_id", "expires_at", "renew_days", "value"),
)
"""The columns :meth:`FactRepository._put` sets, bound as ``v_<column>``."""
_PUT_VALUES: Final = {c: bindparam(f"v_{c}", type_=_T.c[c].type) for c in _PUT_FIELDS}
_MINE: Final = and_(
    owned_by(_T, bindparam("scope_user", type_=String)),
    _T.c.key == bindparam("fact_key", type_=_T.c.key.type),
)
_OLD: Final = select(_T.c.id, _T.c.value).where(_MINE).with_for_update().subquery("old")
_REPLACE: Final = (
    update(_T)
    .where(_T.c.id == _OLD.c.id)
    .values(**_PUT_VALUES, version=_T.c.version + 1)
    .returning(*_T.c, _OLD.c.value.label("replaced"))
)
"""The fact of ``scope_user`` and ``fact_key`` replaced, its old value read under its lock
(built once: a session's end puts a fact each time)."""
_INSERT: Final = (
    pg_insert(_T)
    .values(
        user_id=bindparam("scope_user", type_=String),
        key=bindparam("fact_key", type_=_T.c.key.type),
        **_PUT_VALUES,
    )
    .on_conflict_do_nothing(index_elements=[_T.c.user_id, _T.c.key])
    .returning(_T)
)


def _check_value(policy: LifecyclePolicy, value: Any) -> JsonPlan:
    """The value, checked and masked (its PII not yet vaulted)."""
    check_json(check_json_depth(value, "value"), "value", max_bytes=MAX_FACT_VALUE_BYTES)
    if policy is LifecyclePolicy.SENSITIVE and not is_reference(value):
        raise InvalidField(
            "a SENSITIVE fact holds only a vault reference {'vault_id', 'kind'}; "
            "store the value in the PII vault",
            field="value",
        )
    return plan_json(value, "value")


@dataclass(frozen=True, slots=True)
class Former:
    """The value a fact held before a write replaced or deleted it (as stored: masked)."""

    value: Any


class FactRepository:
    """Writes and reads one user's structured facts."""

    def __init__(
        self,
        db: Database,
        ttl: TTLConfig = DEFAULT_TTL,
        *,
        vault: PiiVault,
        renewals: Renewals,
        confidence: ConfidenceConfig = DEFAULT_CONFIDENCE,
    ) -> None:
        self._db = db
        self._ttl = ttl
        self._vault = vault
        self._renewals = renewals
        self._confidence = confidence

    def put(
        self,
        scope: UserScope,
        key: str,
        value: Any,
        *,
        lifecycle_policy: LifecyclePolicy,
        confidence: float = 1.0,
        source: str = "",
        now: datetime | None = None,
    ) -> Fact:
        """Create or replace the fact ``key``; its TTL follows the policy.

        PII in ``value`` is vaulted and masked (see the module docstring); the
        entries only the replaced value referenced are released. Raises
        :class:`PolicyMissing` without a policy, :class:`InvalidField` for a
        bad key, value or confidence, :class:`UserNotFound` without a profile,
        :class:`RecordNotFound` if a vault reference in ``value`` names no
        entry of the user.
        """
        policy = require_policy(lifecycle_policy)
        _check_value(policy, value)  # bad input fails before any transaction

        def unit() -> Any:
            with self._db.transaction(owner=scope.user_id) as conn:
                return self._put(
                    conn,
                    scope,
                    key,
                    value,
                    lifecycle_policy=policy,
                    confidence=confidence,
                    source=source,
                    now=now,
                )

        row, _ = self._db.retrying(unit)  # two puts of one key may deadlock on the vault
        return Fact.model_validate(row._mapping)

    def replace_within(
        self,
        conn: Connection,
        scope: UserScope,
        key: str,
        value: Any,
        *,
        lifecycle_policy: LifecyclePolicy,
        source: str = "",
        now: datetime | None = None,
    ) -> Former | None:
        """:meth:`put` inside the caller's transaction (a session's end writes the user's
        instructions with its record); the value it replaced (``None`` for a new key).
        Raises as :meth:`put` does."""
        _, replaced = self._put(
            conn,
            scope,
            key,
            value,
            lifecycle_policy=lifecycle_policy,
            confidence=1.0,
            source=source,
            now=now,
        )
        return None if replaced is None else Former(replaced)

    def _put(
        self,
        conn: Connection,
        scope: UserScope,
        key: str,
        value: Any,
        *,
        lifecycle_policy: LifecyclePolicy,
        confidence: float,
        source: str,
        now: datetime | None,
    ) -> tuple[Any, Any]:
        """The new row and the value it replaced (``None`` for a new key)."""
        policy = require_policy(lifecycle_policy)
        key = check_key(check_field_length("key", key, 128), "key")
        if not key.strip():
            raise InvalidField("fact key is empty", field="key")
        confidence = check_number(confidence, "confidence", low=0.0, high=1.0)
        plan = _check_value(policy, value)
        now = now or datetime.now(UTC)
        frequent = policy is LifecyclePolicy.IMPLICIT and frequent_user(conn, scope, now, self._ttl)
        life = lifetime(policy, MemoryKind.FACT, frequent_user=frequent, config=self._ttl)
        fields: dict[str, Any] = {
            "policy": policy.value,
            "confidence": confidence,
            "status": (
                FactStatus.PENDING_CONFIRMATION
                if is_pending(confidence, self._confidence)
                else FactStatus.ACTIVE
            ).value,
            "last_used_at": now,
            "updated_at": now,
            "source": check_source(source),
            "agent_id": scope.agent_id,
            "expires_at": life.expires_at(now),
            "renew_days": life.renew_days,
        }
        hold_references(conn, scope, references_in(value))
        fields["value"] = plan.seal(lambda m: self._store(conn, scope, m.kind.value, m.value))
        row, replaced = self._upsert(conn, scope, key, fields)
        if replaced is not None:
            release_vault_entries(conn, scope, references_in(replaced))
        record(
            conn,
            scope,
            AuditAction.WRITE,
            memory_id=row.id,
            details={"kind": "fact", "policy": policy, "replaced": replaced is not None},
        )
        return row, replaced

    def _store(self, conn: Connection, scope: UserScope, kind: str, value: str) -> Ref:
        ref = self._vault.store(scope, kind, value, join=conn)
        return {"vault_id": str(ref.id), "kind": ref.kind}

    @staticmethod
    def _upsert(
        conn: Connection, scope: UserScope, key: str, values: dict[str, Any]
    ) -> tuple[Any, Any]:
        """Insert or replace the fact; the new row and the replaced value (``None``
        if there was none). The replaced row is read under its lock, in the statement
        that replaces it, so the value a concurrent put wrote is never replaced unseen."""
        params = {"scope_user": scope.user_id, "fact_key": key}
        params |= {f"v_{name}": value for name, value in values.items()}
        for _ in range(3):
            replaced = conn.execute(_REPLACE, params).one_or_none()
            if replaced is not None:
                return replaced, replaced.replaced
            row = conn.execute(_INSERT, params).one_or_none()
            if row is not None:
                return row, None
        raise TransientFailure("the fact changed under a concurrent put and delete; retry it")

    def get(self, scope: UserScope, key: str, *, now: datetime | None = None) -> Fact | None:
        """The live fact ``key``, or ``None``; a renewable fact is renewed from ``now``
        (returned as the renewal leaves it, written shortly after unless it expires
        within :data:`~structured_memory.renewals.URGENT_WITHIN`)."""
        key = check_field_length("key", key, 128)
        now = now or datetime.now(UTC)
        with self._db.reading() as conn:
            row = conn.execute(
                select(_T).where(owned(_T, scope), _T.c.key == key, live(_T, now))
            ).one_or_none()
        if row is None:
            return None
        if row.expires_at is not None and row.expires_at < now + URGENT_WITHIN:
            return self._db.retrying(lambda: self._renew_now(scope, row.id, now))
        self._renewals.record("fact", scope.user_id, [row.id], now)
        fact = Fact.model_validate(row._mapping)
        return fact.model_copy(
            update={
                "last_used_at": max(fact.last_used_at, now),
                "expires_at": renewed(row.expires_at, row.renew_days, now),
            }
        )

    def _renew_now(self, scope: UserScope, fact_id: uuid.UUID, now: datetime) -> Fact | None:
        with self._db.transaction() as conn:
            row = conn.execute(
                update(_T)
                .where(owned(_T, scope), _T.c.id == fact_id, live(_T, now))
                .values(last_used_at=now, expires_at=renewal(_T, now))
                .returning(_T)
            ).one_or_none()
        return None if row is None else Fact.model_validate(row._mapping)

    def live_within(
        self, conn: Connection, scope: UserScope, *, now: datetime | None = None
    ) -> list[Fact]:
        """Every live fact of the user, by key, read inside the caller's transaction (a
        session's end looks for the notes naming a value it replaced)."""
        now = now or datetime.now(UTC)
        rows = conn.execute(
            select(_T).where(owned(_T, scope), live(_T, now)).order_by(_T.c.key)
        ).all()
        return [Fact.model_validate(r._mapping) for r in rows]

    def list(self, scope: UserScope, *, now: datetime | None = None) -> list[Fact]:
        """Every live fact of the user, by key (a listing does not renew TTLs)."""
        now = now or datetime.now(UTC)
        with self._db.transaction() as conn:
            rows = conn.execute(
                select(_T).where(owned(_T, scope), live(_T, now)).order_by(_T.c.key)
            ).all()
            if not rows:
                require_user(conn, scope)
        return [Fact.model_validate(r._mapping) for r in rows]

    def feedback(
        self,
        scope: UserScope,
        fact_id: uuid.UUID,
        action: FeedbackAction,
        *,
        now: datetime | None = None,
    ) -> Fact:
        """Apply one feedback event to the live fact ``fact_id`` (rule:
        ``policies.confidence.after_feedback``; audited); :class:`RecordNotFound` if the
        user has no such live fact."""
        fact_id = check_uuid(fact_id, "fact_id")
        now = now or datetime.now(UTC)
        with self._db.transaction() as conn:
            apply_feedback(
                conn,
                scope,
                fact_id,
                action,
                config=self._confidence,
                now=now,
                tables=(MemoryTable.FACT,),
            )
            updated = conn.execute(select(_T).where(owned(_T, scope), _T.c.id == fact_id)).one()
        return Fact.model_validate(updated._mapping)

    def delete(self, scope: UserScope, key: str) -> bool:
        """Delete the fact ``key`` and release the vault entries only it referenced;
        returns whether it existed."""
        key = check_field_length("key", key, 128)

        def unit() -> bool:
            with self._db.transaction() as conn:
                return self.delete_within(conn, scope, key) is not None

        return self._db.retrying(unit)

    def delete_within(self, conn: Connection, scope: UserScope, key: str) -> Former | None:
        """:meth:`delete` inside the caller's transaction (a session's end takes back an
        instruction the user withdrew); the value deleted, ``None`` when there was none."""
        gone = conn.execute(
            delete(_T).where(owned(_T, scope), _T.c.key == key).returning(_T.c.id, _T.c.value)
        ).one_or_none()
        if gone is not None:
            release_vault_entries(conn, scope, references_in(gone.value))
            record(conn, scope, AuditAction.DELETE, memory_id=gone.id, details={"kind": "fact"})
        return None if gone is None else Former(gone.value)
