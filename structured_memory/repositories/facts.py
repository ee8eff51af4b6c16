"""Structured facts: one key, one JSON value, a policy, a confidence and a TTL.

Expired facts are never returned, before or after the sweep. Reading an
IMPLICIT fact refreshes its TTL in the same statement. A SENSITIVE fact holds
only a reference to the PII vault (``{"vault_id": ..., "kind": ...}``), never
the value itself.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import ColumnElement, case, delete, or_, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert

from policies.confidence import is_pending, update_confidence
from policies.errors import InvalidField, RecordNotFound
from policies.lifecycle import LifecyclePolicy, require_policy
from policies.scope import UserScope
from policies.ttl import DEFAULT_TTL, TTLConfig, expires_at
from policies.validation import check_field_length, check_text
from structured_memory.database import Database
from structured_memory.models import FactStatus, MemoryFact, table_of
from structured_memory.records import Fact

__all__ = ["MAX_FACT_VALUE_BYTES", "FactRepository"]

MAX_FACT_VALUE_BYTES = 16 * 1024

_T = table_of(MemoryFact)


def _live(now: datetime) -> ColumnElement[bool]:
    return or_(_T.c.expires_at.is_(None), _T.c.expires_at > now)


def _check_value(policy: LifecyclePolicy, value: Any) -> Any:
    try:
        encoded = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise InvalidField(f"fact value is not JSON: {exc}", field="value") from None
    check_text(encoded, field="value", max_bytes=MAX_FACT_VALUE_BYTES)
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
        if not 0.0 <= confidence <= 1.0:
            raise InvalidField("confidence must lie in [0, 1]", field="confidence")
        value = _check_value(policy, value)
        now = now or datetime.now(UTC)
        values = {
            "value": value,
            "policy": policy.value,
            "confidence": confidence,
            "status": (
                FactStatus.PENDING_CONFIRMATION if is_pending(confidence) else FactStatus.ACTIVE
            ).value,
            "expires_at": expires_at(policy, now, config=self._ttl),
            "last_used_at": now,
            "updated_at": now,
            "source": check_field_length("source", source, 64),
            "agent_id": scope.agent_id,
        }
        stmt = (
            pg_insert(_T)
            .values(user_id=scope.user_id, key=key, **values)
            .on_conflict_do_update(
                index_elements=[_T.c.user_id, _T.c.key],
                set_={**values, "version": _T.c.version + 1},
            )
            .returning(_T)
        )
        with self._db.transaction(owner=scope.user_id) as conn:
            row = conn.execute(stmt).one()
        return Fact.model_validate(row._mapping)

    def get(self, scope: UserScope, key: str, *, now: datetime | None = None) -> Fact | None:
        """The live fact ``key``, or ``None``; an IMPLICIT fact's TTL restarts from ``now``."""
        now = now or datetime.now(UTC)
        renewed = expires_at(LifecyclePolicy.IMPLICIT, now, config=self._ttl)
        with self._db.transaction() as conn:
            row = conn.execute(
                update(_T)
                .where(_T.c.user_id == scope.user_id, _T.c.key == key, _live(now))
                .values(
                    last_used_at=now,
                    expires_at=case(
                        (_T.c.policy == LifecyclePolicy.IMPLICIT.value, renewed),
                        else_=_T.c.expires_at,
                    ),
                )
                .returning(_T)
            ).one_or_none()
        return None if row is None else Fact.model_validate(row._mapping)

    def list(self, scope: UserScope, *, now: datetime | None = None) -> list[Fact]:
        """Every live fact of the user, by key (a listing does not renew TTLs)."""
        now = now or datetime.now(UTC)
        with self._db.transaction() as conn:
            rows = conn.execute(
                select(_T).where(_T.c.user_id == scope.user_id, _live(now)).order_by(_T.c.key)
            ).all()
        return [Fact.model_validate(r._mapping) for r in rows]

    def feedback(self, scope: UserScope, fact_id: uuid.UUID, weight: float) -> Fact:
        """Move the fact's confidence by one behaviour event of ``weight``.

        Below the pending threshold the fact becomes ``pending_confirmation``.
        Read and write happen in one transaction under the row lock.
        """
        with self._db.transaction() as conn:
            row = conn.execute(
                select(_T.c.confidence)
                .where(_T.c.user_id == scope.user_id, _T.c.id == fact_id)
                .with_for_update()
            ).one_or_none()
            if row is None:
                raise RecordNotFound("no such fact for this user")
            new = update_confidence(row.confidence, weight)
            status = FactStatus.PENDING_CONFIRMATION if is_pending(new) else FactStatus.ACTIVE
            updated = conn.execute(
                update(_T)
                .where(_T.c.id == fact_id)
                .values(confidence=new, status=status.value, version=_T.c.version + 1)
                .returning(_T)
            ).one()
        return Fact.model_validate(updated._mapping)

    def delete(self, scope: UserScope, key: str) -> bool:
        """Delete the fact ``key``; returns whether it existed."""
        with self._db.transaction() as conn:
            n = conn.execute(
                delete(_T).where(_T.c.user_id == scope.user_id, _T.c.key == key)
            ).rowcount
        return bool(n)
