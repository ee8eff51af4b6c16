"""Structured facts: one key, one JSON value, a policy, a confidence and a TTL.

Expired facts are never returned, before or after the sweep. A fact's
lifetime is decided by ``policies.ttl`` like a fragment's (policy, kind
``fact``, frequent user), and reading it renews it by its own period in the
same statement, exactly as a fragment is renewed. A SENSITIVE fact holds
only a reference to the PII vault (``{"vault_id": ..., "kind": ...}``), never
the value itself.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert

from policies.confidence import is_pending, update_confidence
from policies.errors import InvalidField, RecordNotFound
from policies.lifecycle import LifecyclePolicy, require_policy
from policies.scope import UserScope
from policies.ttl import DEFAULT_TTL, MemoryKind, TTLConfig, lifetime
from policies.validation import (
    check_field_length,
    check_json,
    check_json_depth,
    check_number,
    check_uuid,
)
from structured_memory.database import Database
from structured_memory.models import FactStatus, MemoryFact, table_of
from structured_memory.records import Fact
from structured_memory.repositories.fragments import frequent_user, renewal
from structured_memory.scoping import live, owned

__all__ = ["MAX_FACT_VALUE_BYTES", "FactRepository"]

MAX_FACT_VALUE_BYTES = 16 * 1024

_T = table_of(MemoryFact)


def _check_value(policy: LifecyclePolicy, value: Any) -> Any:
    check_json(check_json_depth(value, "value"), "value", max_bytes=MAX_FACT_VALUE_BYTES)
    if policy is LifecyclePolicy.SENSITIVE and not (
        isinstance(value, dict) and set(value) == {"vault_id", "kind"}
    ):
        raise InvalidField(
            "a SENSITIVE fact holds only a vault reference {'vault_id', 'kind'}; "
            "store the value in the PII vault",
            field="value",
        )
    return value


class FactRepository:
    """Writes and reads one user's structured facts."""

    def __init__(self, db: Database, ttl: TTLConfig = DEFAULT_TTL) -> None:
        self._db = db
        self._ttl = ttl

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

        Raises :class:`PolicyMissing` without a policy, :class:`InvalidField`
        for a bad key, value or confidence, :class:`UserNotFound` without a profile.
        """
        policy = require_policy(lifecycle_policy)
        key = check_field_length("key", key, 128)
        if not key.strip():
            raise InvalidField("fact key is empty", field="key")
        confidence = check_number(confidence, "confidence", low=0.0, high=1.0)
        value = _check_value(policy, value)
        now = now or datetime.now(UTC)
        values: dict[str, Any] = {
            "value": value,
            "policy": policy.value,
            "confidence": confidence,
            "status": (
                FactStatus.PENDING_CONFIRMATION if is_pending(confidence) else FactStatus.ACTIVE
            ).value,
            "last_used_at": now,
            "updated_at": now,
            "source": check_field_length("source", source, 64),
            "agent_id": scope.agent_id,
        }
        with self._db.transaction(owner=scope.user_id) as conn:
            frequent = policy is LifecyclePolicy.IMPLICIT and frequent_user(
                conn, scope, now, self._ttl
            )
            life = lifetime(policy, MemoryKind.FACT, frequent_user=frequent, config=self._ttl)
            values |= {"expires_at": life.expires_at(now), "renew_days": life.renew_days}
            row = conn.execute(
                pg_insert(_T)
                .values(user_id=scope.user_id, key=key, **values)
                .on_conflict_do_update(
                    index_elements=[_T.c.user_id, _T.c.key],
                    set_={**values, "version": _T.c.version + 1},
                )
                .returning(_T)
            ).one()
        return Fact.model_validate(row._mapping)

    def get(self, scope: UserScope, key: str, *, now: datetime | None = None) -> Fact | None:
        """The live fact ``key``, or ``None``; a renewable fact is renewed from ``now``."""
        key = check_field_length("key", key, 128)
        now = now or datetime.now(UTC)
        with self._db.transaction() as conn:
            row = conn.execute(
                update(_T)
                .where(owned(_T, scope), _T.c.key == key, live(_T, now))
                .values(last_used_at=now, expires_at=renewal(_T, now))
                .returning(_T)
            ).one_or_none()
        return None if row is None else Fact.model_validate(row._mapping)

    def list(self, scope: UserScope, *, now: datetime | None = None) -> list[Fact]:
        """Every live fact of the user, by key (a listing does not renew TTLs)."""
        now = now or datetime.now(UTC)
        with self._db.transaction() as conn:
            rows = conn.execute(
                select(_T).where(owned(_T, scope), live(_T, now)).order_by(_T.c.key)
            ).all()
        return [Fact.model_validate(r._mapping) for r in rows]

    def feedback(self, scope: UserScope, fact_id: uuid.UUID, weight: float) -> Fact:
        """Move the fact's confidence by one behaviour event of ``weight``.

        Below the pending threshold the fact becomes ``pending_confirmation``.
        Read and write happen in one transaction under the row lock.
        """
        fact_id = check_uuid(fact_id, "fact_id")
        with self._db.transaction() as conn:
            row = conn.execute(
                select(_T.c.confidence)
                .where(owned(_T, scope), _T.c.id == fact_id)
                .with_for_update()
            ).one_or_none()
            if row is None:
                raise RecordNotFound("no such fact for this user")
            new = update_confidence(row.confidence, weight)
            status = FactStatus.PENDING_CONFIRMATION if is_pending(new) else FactStatus.ACTIVE
            updated = conn.execute(
                update(_T)
                .where(owned(_T, scope), _T.c.id == fact_id)
                .values(confidence=new, status=status.value, version=_T.c.version + 1)
                .returning(_T)
            ).one()
        return Fact.model_validate(updated._mapping)

    def delete(self, scope: UserScope, key: str) -> bool:
        """Delete the fact ``key``; returns whether it existed."""
        key = check_field_length("key", key, 128)
        with self._db.transaction() as conn:
            n = conn.execute(delete(_T).where(owned(_T, scope), _T.c.key == key)).rowcount
        return bool(n)
