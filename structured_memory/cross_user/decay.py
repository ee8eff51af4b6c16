"""The daily confidence decay of every user's inferred (IMPLICIT) memories
(``policies.confidence`` decides, this module persists and audits)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Connection, Table, and_, bindparam, func, select, update

from policies.audit import AuditAction
from policies.confidence import (
    DAY,
    ConfidenceConfig,
    MemoryStatus,
    Standing,
    after_decay,
    decay_steps,
    decayed_through,
)
from policies.lifecycle import LifecyclePolicy
from policies.scope import UserScope
from structured_memory.audit import record_many
from structured_memory.cross_user.marking import cross_user_transaction
from structured_memory.database import Database
from structured_memory.models import MemoryFact, MemoryFragment, table_of
from structured_memory.repositories.confidence import MemoryTable, status_entry
from structured_memory.scoping import live

__all__ = ["DecayReport", "count_decay_due", "decay_inferred"]

_FACT = table_of(MemoryFact)
_FRAGMENT = table_of(MemoryFragment)


@dataclass(frozen=True)
class DecayReport:
    """What one decay run did."""

    decayed: int
    """Inferred memories whose confidence decayed."""
    pending: int
    """Of those, how many fell below the threshold and became ``pending_confirmation``."""


def _decay_due(table: Table, now: datetime, config: ConfidenceConfig) -> ColumnElement[bool]:
    """Rows at least one decay step is due on (``policies.confidence.decay_steps`` >= 1)."""
    anchor = func.greatest(
        table.c.last_used_at + func.make_interval(0, 0, 0, config.decay_after_days),
        table.c.last_decayed_at,
    )
    due = [
        table.c.policy == LifecyclePolicy.IMPLICIT.value,
        table.c.status == MemoryStatus.ACTIVE.value,
        live(table, now),
        anchor <= now - DAY,
    ]
    if table is _FRAGMENT:
        due.append(table.c.renew_days >= config.decay_min_renew_days)
    return and_(*due)


def count_decay_due(db: Database, now: datetime, config: ConfidenceConfig) -> int:
    """Inferred memories (all users) a decay at ``now`` would lower."""
    with cross_user_transaction(db) as conn:
        return sum(
            int(conn.execute(select(func.count()).where(_decay_due(t, now, config))).scalar_one())
            for t in (_FRAGMENT, _FACT)
        )


def decay_inferred(
    db: Database,
    now: datetime,
    config: ConfidenceConfig,
    *,
    batch_size: int = 1000,
    progress: Callable[[int], None] | None = None,
) -> DecayReport:
    """Apply the daily decay (``policies.confidence``) to every user's inferred memories:
    IMPLICIT fragments renewed by at least ``decay_min_renew_days`` (a frequent user's) and
    IMPLICIT facts, active, live and unused for over ``decay_after_days``.

    Idempotent per day: each row's ``last_decayed_at`` watermark advances by the
    whole days applied. Batches of rows locked ``FOR UPDATE SKIP LOCKED``, one
    transaction each; each decayed memory gets a ``decay`` audit entry, each one
    moved to pending a ``status_change`` entry. ``progress`` gets the rows per batch.
    """
    decayed = pending = 0
    for kind, table in ((MemoryTable.FRAGMENT, _FRAGMENT), (MemoryTable.FACT, _FACT)):
        last: uuid.UUID | None = None
        while True:
            query = (
                select(
                    table.c.id,
                    table.c.user_id,
                    table.c.confidence,
                    table.c.status,
                    table.c.last_used_at,
                    table.c.last_decayed_at,
                )
                .where(_decay_due(table, now, config))
                .order_by(table.c.id)
                .limit(batch_size)
                .with_for_update(skip_locked=True)
            )
            if last is not None:
                query = query.where(table.c.id > last)
            with cross_user_transaction(db) as conn:
                rows = conn.execute(query).all()
                if rows:
                    last = rows[-1].id
                    n, moved = _decay_batch(conn, kind, rows, now, config)
                    decayed, pending = decayed + n, pending + moved
            if progress is not None and rows:
                progress(len(rows))
            if len(rows) < batch_size:
                break
    return DecayReport(decayed=decayed, pending=pending)


def _decay_batch(
    conn: Connection,
    kind: MemoryTable,
    rows: Sequence[Any],
    now: datetime,
    config: ConfidenceConfig,
) -> tuple[int, int]:
    """Decay one batch of locked rows and audit it; (decayed, moved to pending)."""
    table = _FRAGMENT if kind is MemoryTable.FRAGMENT else _FACT
    changes: list[dict[str, Any]] = []
    decays: dict[str, list[tuple[uuid.UUID | None, dict[str, Any] | None]]] = {}
    moves: dict[str, list[tuple[uuid.UUID | None, dict[str, Any] | None]]] = {}
    for r in rows:
        steps = decay_steps(r.last_used_at, r.last_decayed_at, now, config)
        before = Standing(float(r.confidence), MemoryStatus(r.status))
        after = after_decay(before, steps, config)
        if steps <= 0 or after == before:
            continue
        changes.append(
            {
                "b_id": r.id,
                "b_confidence": after.confidence,
                "b_status": after.status.value,
                "b_through": decayed_through(r.last_used_at, r.last_decayed_at, steps, config),
            }
        )
        decays.setdefault(r.user_id, []).append(
            (
                r.id,
                {
                    "kind": kind.value,
                    "steps": steps,
                    "before": round(before.confidence, 6),
                    "after": round(after.confidence, 6),
                },
            )
        )
        if after.status is not before.status:
            moves.setdefault(r.user_id, []).append(
                (r.id, status_entry(kind, before, after, AuditAction.DECAY.value))
            )
    if not changes:
        return 0, 0
    values: dict[str, Any] = {
        "confidence": bindparam("b_confidence"),
        "status": bindparam("b_status"),
        "last_decayed_at": bindparam("b_through"),
    }
    if kind is MemoryTable.FACT:
        values["version"] = table.c.version + 1
    conn.execute(update(table).where(table.c.id == bindparam("b_id")).values(**values), changes)
    for user_id in sorted(decays):
        scope = UserScope(user_id)
        record_many(conn, scope, AuditAction.DECAY, decays[user_id])
        if user_id in moves:
            record_many(conn, scope, AuditAction.STATUS_CHANGE, moves[user_id])
    return len(changes), sum(len(m) for m in moves.values())
