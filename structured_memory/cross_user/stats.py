"""Read-only statistics across users for the ops dashboard: counts only, never texts."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from sqlalchemy import ColumnElement, Date, Text, cast, func, literal, select

from policies.audit import AuditAction
from policies.confidence import MemoryStatus
from structured_memory.cross_user.marking import cross_user_transaction
from structured_memory.database import Database
from structured_memory.models import (
    AuditLog,
    MemoryFact,
    MemoryFragment,
    UserBusinessLink,
    table_of,
)
from structured_memory.repositories.confidence import MemoryTable
from structured_memory.scoping import live

__all__ = [
    "DayCount",
    "ExpiringCount",
    "LevelCount",
    "PendingQueue",
    "confidence_levels",
    "daily_audit_counts",
    "expiring_per_day",
    "pending_confirmations",
    "renewals_per_day",
    "verification_states",
]

_FACT = table_of(MemoryFact)
_FRAGMENT = table_of(MemoryFragment)
_LOG = table_of(AuditLog)
_LINK = table_of(UserBusinessLink)


def _utc_day(column: ColumnElement[datetime]) -> ColumnElement[date]:
    """The UTC calendar day of a ``timestamptz`` column."""
    return cast(func.timezone("UTC", column), Date)


def _day_start(day: date) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


@dataclass(frozen=True)
class ExpiringCount:
    """How many live memories of one track (``fragment``, ``fact``) and policy expire on
    one UTC day."""

    day: date
    track: str
    policy: str
    count: int


def expiring_per_day(db: Database, now: datetime, days: int) -> list[ExpiringCount]:
    """Live memories of every user expiring after ``now`` and before the end of the UTC
    day ``days`` days from now, per day, track and policy (oldest day first)."""
    until = _day_start(now.astimezone(UTC).date() + timedelta(days=days + 1))
    out: list[ExpiringCount] = []
    with cross_user_transaction(db) as conn:
        for kind, table in ((MemoryTable.FRAGMENT, _FRAGMENT), (MemoryTable.FACT, _FACT)):
            day = _utc_day(table.c.expires_at).label("day")
            rows = conn.execute(
                select(day, table.c.policy, func.count().label("n"))
                .where(table.c.expires_at > now, table.c.expires_at < until)
                .group_by(day, table.c.policy)
            ).all()
            out += [ExpiringCount(r.day, kind.value, r.policy, int(r.n)) for r in rows]
    return sorted(out, key=lambda c: (c.day, c.track, c.policy))


@dataclass(frozen=True)
class LevelCount:
    """How many live memories of one track and status have a confidence in bucket
    ``bucket`` (``[bucket/n, (bucket+1)/n)``, the last one closed)."""

    bucket: int
    track: str
    status: str
    count: int


def confidence_levels(db: Database, now: datetime, buckets: int) -> list[LevelCount]:
    """The confidence of every user's live, not retired memories in ``buckets`` equal
    buckets over ``[0, 1]``, per track and status."""
    out: list[LevelCount] = []
    with cross_user_transaction(db) as conn:
        for kind, table in ((MemoryTable.FRAGMENT, _FRAGMENT), (MemoryTable.FACT, _FACT)):
            bucket = (
                func.least(func.width_bucket(table.c.confidence, 0.0, 1.0, buckets), buckets) - 1
            ).label("bucket")
            rows = conn.execute(
                select(bucket, table.c.status, func.count().label("n"))
                .where(live(table, now), table.c.status != MemoryStatus.RETIRED.value)
                .group_by(bucket, table.c.status)
            ).all()
            out += [LevelCount(max(0, int(r.bucket)), kind.value, r.status, int(r.n)) for r in rows]
    return sorted(out, key=lambda c: (c.bucket, c.track, c.status))


@dataclass(frozen=True)
class PendingQueue:
    """Live memories waiting for their user's confirmation (counts only, never texts)."""

    fragments: int
    facts: int
    oldest_since: datetime | None
    """When the longest-waiting one became pending (its ``status_change`` audit entry;
    without one, when it was written with a low confidence)."""


def pending_confirmations(db: Database, now: datetime) -> PendingQueue:
    """Every user's live ``pending_confirmation`` memories and the oldest one's wait."""
    counts: dict[MemoryTable, int] = {}
    oldest: list[datetime] = []
    with cross_user_transaction(db) as conn:
        for kind, table in ((MemoryTable.FRAGMENT, _FRAGMENT), (MemoryTable.FACT, _FACT)):
            went = (
                select(func.max(_LOG.c.at))
                .where(
                    _LOG.c.memory_id == table.c.id,
                    _LOG.c.action == AuditAction.STATUS_CHANGE.value,
                    _LOG.c.details["to"].astext == MemoryStatus.PENDING_CONFIRMATION.value,
                )
                .scalar_subquery()
            )
            written = table.c.updated_at if kind is MemoryTable.FACT else table.c.created_at
            row = conn.execute(
                select(func.count(), func.min(func.coalesce(went, written))).where(
                    table.c.status == MemoryStatus.PENDING_CONFIRMATION.value, live(table, now)
                )
            ).one()
            counts[kind] = int(row[0])
            if row[1] is not None:
                oldest.append(row[1])
    return PendingQueue(
        fragments=counts[MemoryTable.FRAGMENT],
        facts=counts[MemoryTable.FACT],
        oldest_since=min(oldest, default=None),
    )


@dataclass(frozen=True)
class DayCount:
    """How many of something (named by ``key``) fell on one UTC day."""

    day: date
    key: str
    count: int


def renewals_per_day(db: Database, since: datetime) -> list[DayCount]:
    """Memories of every user used (so renewed) since they were written, by the UTC day of
    their latest use since ``since``; ``key`` is the track. A memory used on several days
    counts on the last one only: the ledger keeps the latest use, not each."""
    out: list[DayCount] = []
    with cross_user_transaction(db) as conn:
        for kind, table in ((MemoryTable.FRAGMENT, _FRAGMENT), (MemoryTable.FACT, _FACT)):
            day = _utc_day(table.c.last_used_at).label("day")
            rows = conn.execute(
                select(day, func.count().label("n"))
                .where(table.c.last_used_at >= since, table.c.last_used_at > table.c.created_at)
                .group_by(day)
            ).all()
            out += [DayCount(r.day, kind.value, int(r.n)) for r in rows]
    return sorted(out, key=lambda c: (c.day, c.key))


def daily_audit_counts(
    db: Database,
    since: datetime,
    action: AuditAction,
    *,
    by: str,
    matching_details: dict[str, str] | None = None,
) -> list[DayCount]:
    """Audit entries of ``action`` since ``since`` per UTC day and value of ``details[by]``
    (``key``; ``"none"`` when absent), restricted to entries whose details hold
    ``matching_details``: e.g. the sweep's deletes
    (:data:`~structured_memory.cross_user.sweep.SWEPT`) by kind, or verification changes
    by outcome."""
    day = _utc_day(_LOG.c.at).label("day")
    key = func.coalesce(_LOG.c.details[by].astext, "none").label("key")
    query = (
        select(day, key, func.count().label("n"))
        .where(_LOG.c.at >= since, _LOG.c.action == AuditAction(action).value)
        .group_by(day, key)
        .order_by(day, key)
    )
    if matching_details:
        query = query.where(_LOG.c.details.contains(matching_details))
    with cross_user_transaction(db) as conn:
        rows = conn.execute(query).all()
    return [DayCount(r.day, r.key, int(r.n)) for r in rows]


def verification_states(db: Database) -> dict[str, int]:
    """Every user's business links by the outcome of their latest verification:
    ``ok``, ``failing`` or ``unchecked``."""
    state = func.coalesce(cast(_LINK.c.verification_ok, Text), literal("unchecked", Text)).label(
        "state"
    )
    with cross_user_transaction(db) as conn:
        rows = conn.execute(select(state, func.count().label("n")).group_by(state)).all()
    names = {"true": "ok", "false": "failing", "unchecked": "unchecked"}
    found = {names[r.state]: int(r.n) for r in rows}
    return {name: found.get(name, 0) for name in ("ok", "failing", "unchecked")}
