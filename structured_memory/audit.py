"""The append-only audit log: record an entry in the caller's transaction, read entries back.

Entries name the user by a keyed pseudonym (``policies.audit.pseudonym``)
under a random key per user kept in ``audit_key``, which erasure deletes with
the user: the entries survive an erasure without identifying anyone. The log
itself refuses ``UPDATE``, ``DELETE`` and ``TRUNCATE`` (triggers of revision
0008, raising :class:`AuditLogImmutable` through ``Database.transaction``).
"""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, func, insert, literal, select
from sqlalchemy.dialects.postgresql import insert as pg_insert

from policies.audit import AUDIT_KEY_BYTES, AuditAction, check_details, pseudonym
from policies.errors import UserNotFound
from policies.scope import UserScope
from structured_memory.database import Database
from structured_memory.models import AuditKey, AuditLog, UserProfile, table_of
from structured_memory.scoping import owned

__all__ = [
    "AuditEntry",
    "DailyCount",
    "audit_key",
    "daily_counts",
    "recent",
    "record",
    "record_erasure",
    "record_many",
    "subject_of",
]

_LOG = table_of(AuditLog)
_KEY = table_of(AuditKey)
_PROFILE = table_of(UserProfile)


def audit_key(conn: Connection, scope: UserScope) -> bytes:
    """The scope's user's audit key, created on first use; :class:`UserNotFound` if the user
    has no profile (an erased user gets no new key)."""
    found = conn.execute(select(_KEY.c.key).where(owned(_KEY, scope))).scalar()
    if found is None:
        exists = select(_PROFILE.c.user_id).where(owned(_PROFILE, scope)).exists()
        conn.execute(
            pg_insert(_KEY)
            .from_select(
                ["user_id", "key"],
                select(literal(scope.user_id), literal(secrets.token_bytes(AUDIT_KEY_BYTES))).where(
                    exists
                ),
            )
            .on_conflict_do_nothing(index_elements=["user_id"])
        )
        found = conn.execute(select(_KEY.c.key).where(owned(_KEY, scope))).scalar()
    if found is None:
        raise UserNotFound("no profile for this user", user_id=scope.user_id)
    return bytes(found)


def record(
    conn: Connection,
    scope: UserScope,
    action: AuditAction,
    *,
    memory_id: uuid.UUID | None = None,
    details: Mapping[str, Any] | None = None,
) -> None:
    """Append one entry for the scope's user and agent, in the caller's transaction.

    ``details`` hold ids, codes and numbers only (``policies.audit.check_details``;
    :class:`InvalidField` otherwise). :class:`UserNotFound` if the user has no profile.
    """
    record_many(conn, scope, action, [(memory_id, details)])


def record_many(
    conn: Connection,
    scope: UserScope,
    action: AuditAction,
    entries: Sequence[tuple[uuid.UUID | None, Mapping[str, Any] | None]],
) -> None:
    """Append one entry per ``(memory_id, details)`` pair in one statement (see :func:`record`)."""
    if not entries:
        return
    rows = [
        {"memory_id": memory_id, "details": check_details(details)}
        for memory_id, details in entries
    ]
    subject = pseudonym(audit_key(conn, scope), scope.user_id)
    conn.execute(
        insert(_LOG),
        [
            {
                "action": AuditAction(action).value,
                "agent_id": scope.agent_id,
                "subject": subject,
                **row,
            }
            for row in rows
        ],
    )


def record_erasure(
    conn: Connection, scope: UserScope, details: Mapping[str, Any] | None = None
) -> bool:
    """Lock the user's profile ``FOR UPDATE`` and record the erasure about to happen in the
    caller's transaction, while the key still exists; ``False`` (nothing recorded) if the
    user has no profile. Concurrent erasures of one user record one entry."""
    held = conn.execute(
        select(_PROFILE.c.user_id).where(owned(_PROFILE, scope)).with_for_update()
    ).scalar()
    if held is None:
        return False
    record(conn, scope, AuditAction.ERASURE, details=details)
    return True


def subject_of(db: Database, scope: UserScope) -> str | None:
    """The user's pseudonym as the log spells it, or ``None`` once erasure destroyed the key
    (ops only: it re-identifies the user's entries)."""
    with db.transaction() as conn:
        key = conn.execute(select(_KEY.c.key).where(owned(_KEY, scope))).scalar()
    return None if key is None else pseudonym(bytes(key), scope.user_id)


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One audit entry as read back."""

    id: int
    at: datetime
    action: AuditAction
    agent_id: str | None
    subject: str | None
    memory_id: uuid.UUID | None
    details: dict[str, Any]


def recent(
    db: Database,
    *,
    limit: int = 50,
    subject: str | None = None,
    actions: Sequence[AuditAction] = (),
    memory_id: uuid.UUID | None = None,
) -> list[AuditEntry]:
    """The newest entries first, optionally for one pseudonym, some actions or one memory."""
    query = select(_LOG).order_by(_LOG.c.id.desc()).limit(limit)
    if subject is not None:
        query = query.where(_LOG.c.subject == subject)
    if actions:
        query = query.where(_LOG.c.action.in_([AuditAction(a).value for a in actions]))
    if memory_id is not None:
        query = query.where(_LOG.c.memory_id == memory_id)
    with db.transaction() as conn:
        rows = conn.execute(query).all()
    return [
        AuditEntry(
            id=r.id,
            at=r.at,
            action=AuditAction(r.action),
            agent_id=r.agent_id,
            subject=r.subject,
            memory_id=r.memory_id,
            details=dict(r.details),
        )
        for r in rows
    ]


@dataclass(frozen=True, slots=True)
class DailyCount:
    """How many entries of one action (and one detail ``kind``, if any) fell on one UTC day."""

    day: datetime
    action: AuditAction
    kind: str | None
    count: int


def daily_counts(
    db: Database, *, since: datetime, actions: Sequence[AuditAction] = ()
) -> list[DailyCount]:
    """Entries per UTC day, action and ``details.kind`` since ``since``, oldest day first:
    what the ops dashboard plots (decays, status changes, feedback)."""
    day = func.date_trunc("day", _LOG.c.at, "UTC").label("day")
    kind = _LOG.c.details["kind"].astext.label("kind")
    query = (
        select(day, _LOG.c.action, kind, func.count().label("n"))
        .where(_LOG.c.at >= since)
        .group_by(day, _LOG.c.action, kind)
        .order_by(day, _LOG.c.action, kind)
    )
    if actions:
        query = query.where(_LOG.c.action.in_([AuditAction(a).value for a in actions]))
    with db.transaction() as conn:
        rows = conn.execute(query).all()
    return [DailyCount(r.day, AuditAction(r.action), r.kind, int(r.n)) for r in rows]
