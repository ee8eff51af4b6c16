"""Feedback on one memory, fragment or fact, found by id under the scope's visibility.

The rule is ``policies.confidence.after_feedback``; this module finds the row,
locks it, persists the decision and records it in the audit log (one
``feedback`` entry, plus a ``status_change`` entry when the status moved), all
in the caller's transaction. A retired memory is also expired at once, so no
read (of this release or the previous one) serves it, and the sweep deletes it.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import ColumnElement, Connection, Table, and_, select, update

from policies.audit import AuditAction
from policies.confidence import (
    ConfidenceConfig,
    FeedbackAction,
    MemoryStatus,
    Standing,
    after_feedback,
    renews,
)
from policies.errors import RecordNotFound
from policies.scope import UserScope
from structured_memory.audit import record
from structured_memory.models import MemoryFact, MemoryFragment, table_of
from structured_memory.renewals import renewal
from structured_memory.scoping import live, owned, visible

__all__ = ["FeedbackOutcome", "MemoryTable", "apply_feedback", "status_entry"]

_FRAGMENT = table_of(MemoryFragment)
_FACT = table_of(MemoryFact)


class MemoryTable(StrEnum):
    """Which track holds a memory (the ``kind`` of its audit entries)."""

    FRAGMENT = "fragment"
    FACT = "fact"


@dataclass(frozen=True, slots=True)
class FeedbackOutcome:
    """What one feedback event did to a memory."""

    memory_id: uuid.UUID
    table: MemoryTable
    action: FeedbackAction
    before: Standing
    after: Standing


def _visible(table: MemoryTable, scope: UserScope, now: datetime) -> ColumnElement[bool]:
    if table is MemoryTable.FRAGMENT:
        return visible(_FRAGMENT, scope, now)
    return and_(owned(_FACT, scope), live(_FACT, now))


def _table(table: MemoryTable) -> Table:
    return _FRAGMENT if table is MemoryTable.FRAGMENT else _FACT


def status_entry(
    table: MemoryTable, before: Standing, after: Standing, cause: str
) -> dict[str, Any]:
    """The details of a ``status_change`` audit entry."""
    return {
        "kind": table.value,
        "from": before.status,
        "to": after.status,
        "confidence": round(after.confidence, 6),
        "cause": cause,
    }


def apply_feedback(
    conn: Connection,
    scope: UserScope,
    memory_id: uuid.UUID,
    action: FeedbackAction,
    *,
    config: ConfidenceConfig,
    now: datetime,
    tables: tuple[MemoryTable, ...] = (MemoryTable.FRAGMENT, MemoryTable.FACT),
) -> FeedbackOutcome:
    """Apply one event to the memory ``memory_id`` visible in ``scope`` (in ``tables``).

    :class:`RecordNotFound` if no visible, live memory of the user has that id
    (another user's, another agent's private one, an expired or retired one).
    A click or confirm is also a use: the memory is renewed as a read renews it.
    """
    for kind in tables:
        t = _table(kind)
        row = conn.execute(
            select(t.c.confidence, t.c.status)
            .where(_visible(kind, scope, now), t.c.id == memory_id)
            .with_for_update()
        ).one_or_none()
        if row is not None:
            break
    else:
        raise RecordNotFound("no such memory for this user", memory_id=str(memory_id))
    before = Standing(float(row.confidence), MemoryStatus(row.status))
    after = after_feedback(before, action, config)
    values: dict[str, Any] = {"confidence": after.confidence, "status": after.status.value}
    if renews(action):
        values |= {"last_used_at": now, "expires_at": renewal(t, now)}
    if after.status is MemoryStatus.RETIRED:
        values["expires_at"] = now
    if kind is MemoryTable.FACT:
        values |= {"version": t.c.version + 1, "updated_at": now}
    conn.execute(update(t).where(owned(t, scope), t.c.id == memory_id).values(**values))
    record(
        conn,
        scope,
        AuditAction.FEEDBACK,
        memory_id=memory_id,
        details={
            "kind": kind.value,
            "action": action,
            "before": round(before.confidence, 6),
            "after": round(after.confidence, 6),
        },
    )
    if after.status is not before.status:
        record(
            conn,
            scope,
            AuditAction.STATUS_CHANGE,
            memory_id=memory_id,
            details=status_entry(kind, before, after, action),
        )
    return FeedbackOutcome(memory_id, kind, action, before, after)
