"""Idleness across users: sessions to end after the idle timeout, and users whose index
tenants can be set cold."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select

from structured_memory.cross_user.marking import cross_user_transaction
from structured_memory.database import Database
from structured_memory.models import MemoryFragment, SessionWatermark, table_of
from structured_memory.scoping import owned_by

__all__ = ["IdleSession", "idle_sessions", "idle_users"]

_FRAGMENT = table_of(MemoryFragment)
_WATERMARK = table_of(SessionWatermark)


@dataclass(frozen=True)
class IdleSession:
    """A session not ended whose last fragment (or, with none left, last change) is older
    than the idle timeout; ``agent_id`` is the agent that last added turns to it."""

    user_id: str
    session_id: str
    agent_id: str | None


def idle_sessions(db: Database, cutoff: datetime, *, limit: int = 1000) -> list[IdleSession]:
    """Sessions not ended whose last activity is before ``cutoff``, the longest idle first.

    Activity: the newest fragment of the session (a turn, a record), else the session
    row's last change.
    """
    last = (
        select(func.max(_FRAGMENT.c.created_at))
        .where(
            owned_by(_FRAGMENT, _WATERMARK.c.user_id),
            _FRAGMENT.c.session_id == _WATERMARK.c.session_id,
        )
        .scalar_subquery()
    )
    active = func.coalesce(last, _WATERMARK.c.updated_at)
    with cross_user_transaction(db) as conn:
        rows = conn.execute(
            select(_WATERMARK.c.user_id, _WATERMARK.c.session_id, _WATERMARK.c.agent_id)
            .where(_WATERMARK.c.ended_at.is_(None), _WATERMARK.c.updated_at < cutoff)
            .where(active < cutoff)
            .order_by(active)
            .limit(limit)
        ).all()
    return [IdleSession(r.user_id, r.session_id, r.agent_id) for r in rows]


def idle_users(db: Database, since: datetime) -> list[str]:
    """Users whose fragments were all last written or used before ``since``."""
    last = func.max(func.greatest(_FRAGMENT.c.last_used_at, _FRAGMENT.c.created_at))
    with cross_user_transaction(db) as conn:
        rows = conn.execute(
            select(_FRAGMENT.c.user_id).group_by(_FRAGMENT.c.user_id).having(last < since)
        ).scalars()
        return list(rows)
