"""Sandboxes in PostgreSQL: open, fork, merge, discard, and the hold writers take.

A session has at most one ``active`` sandbox (a partial unique index). Opening,
forking, merging and discarding serialise on ``pg_advisory_xact_lock`` of the
user and session, so concurrent forks leave exactly one active sandbox. A
writer holds its sandbox row ``FOR SHARE`` until it commits: a fork or discard
(an ``UPDATE`` of the row) waits for it, and a write that starts after a fork
finds the sandbox closed and raises :class:`SandboxClosed` instead of writing
where nobody will look.

Fragments written in a sandbox expire with it (``expires_at`` of the sandbox,
not renewed). Merging promotes chosen fragments into long-term memory: no
sandbox id, and from then on the lifetime their policy gives them.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import Connection, func, select, update

from policies.lifecycle import LifecyclePolicy
from policies.scope import UserScope
from policies.ttl import MemoryKind, TTLConfig, lifetime
from sandbox.errors import SandboxClosed
from structured_memory.models import MemoryFragment, SandboxStatus, SessionSandbox, table_of
from structured_memory.repositories.fragments import frequent_user, vault_ids_of
from structured_memory.scoping import owned

__all__ = ["Sandbox", "SandboxRepository", "Swept"]

_T = table_of(SessionSandbox)
_F = table_of(MemoryFragment)


@dataclass(frozen=True)
class Sandbox:
    """One sandbox row."""

    id: uuid.UUID
    user_id: str
    session_id: str
    agent_id: str | None
    status: str
    parent_id: uuid.UUID | None
    created_at: datetime
    closed_at: datetime | None
    expires_at: datetime


@dataclass(frozen=True)
class Swept:
    """Fragments a discard deleted and the vault ids their PII referenced."""

    fragment_ids: list[uuid.UUID]
    vault_ids: list[uuid.UUID]


_COLUMNS = [_T.c[name] for name in Sandbox.__dataclass_fields__]


def _lock(conn: Connection, scope: UserScope, session_id: str) -> None:
    conn.execute(
        select(
            func.pg_advisory_xact_lock(func.hashtextextended(f"{scope.user_id}\x1f{session_id}", 0))
        )
    )


class SandboxRepository:
    """Sandbox rows of one user at a time; every statement carries the user predicate."""

    def __init__(self, ttl: timedelta, ttl_config: TTLConfig) -> None:
        self._ttl = ttl
        self._ttl_config = ttl_config

    def open(self, conn: Connection, scope: UserScope, session_id: str, now: datetime) -> Sandbox:
        """The session's active sandbox, created (or replaced, if expired) as needed."""
        _lock(conn, scope, session_id)
        active = self._active(conn, scope, session_id)
        if active is not None and active.expires_at > now:
            return active
        if active is not None:
            self._close(conn, scope, active.id, SandboxStatus.ARCHIVED, now)
        return self._create(conn, scope, session_id, now, parent=None)

    def fork(self, conn: Connection, scope: UserScope, session_id: str, now: datetime) -> Sandbox:
        """Archive the session's active sandbox (kept, readable, never searched) and
        start a clean one from long-term memory."""
        _lock(conn, scope, session_id)
        active = self._active(conn, scope, session_id)
        if active is not None:
            self._close(conn, scope, active.id, SandboxStatus.ARCHIVED, now)
        return self._create(
            conn, scope, session_id, now, parent=None if active is None else active.id
        )

    def merge(
        self,
        conn: Connection,
        scope: UserScope,
        session_id: str,
        memory_ids: Iterable[uuid.UUID],
        *,
        now: datetime,
    ) -> list[uuid.UUID]:
        """Promote the chosen fragments of the scope's sandbox into long-term memory.

        Each takes its policy's lifetime from ``now``. Ids not in the sandbox are
        ignored; a sandbox no longer active raises :class:`SandboxClosed`.
        """
        _lock(conn, scope, session_id)
        sandbox_id = self._require_active(conn, scope, session_id)
        wanted = sorted(set(memory_ids))
        if not wanted:
            return []
        rows = conn.execute(
            select(_F.c.id, _F.c.policy, _F.c.kind)
            .where(owned(_F, scope), _F.c.sandbox_id == sandbox_id, _F.c.id.in_(wanted))
            .order_by(_F.c.id)
            .with_for_update()
        ).all()
        frequent = frequent_user(conn, scope, now, self._ttl_config)
        for row in rows:
            life = lifetime(
                LifecyclePolicy(row.policy),
                MemoryKind(row.kind),
                frequent_user=frequent,
                config=self._ttl_config,
            )
            conn.execute(
                update(_F)
                .where(owned(_F, scope), _F.c.id == row.id)
                .values(
                    sandbox_id=None, expires_at=life.expires_at(now), renew_days=life.renew_days
                )
            )
        return [r.id for r in rows]

    def discard(
        self, conn: Connection, scope: UserScope, session_id: str, *, now: datetime
    ) -> Swept:
        """Delete the scope's sandbox's unmerged fragments and close it as discarded."""
        _lock(conn, scope, session_id)
        sandbox_id = self._require_active(conn, scope, session_id)
        rows = conn.execute(
            _F.delete()
            .where(owned(_F, scope), _F.c.sandbox_id == sandbox_id)
            .returning(_F.c.id, _F.c["metadata"])
        ).all()
        self._close(conn, scope, sandbox_id, SandboxStatus.DISCARDED, now)
        vaults = [v for r in rows for v in vault_ids_of(r[1])]
        return Swept([r.id for r in rows], vaults)

    def hold(self, conn: Connection, scope: UserScope, now: datetime) -> datetime:
        """For a writer: hold the scope's sandbox ``FOR SHARE`` until commit; its expiry.

        Raises :class:`SandboxClosed` when it was forked, discarded or expired.
        """
        row = conn.execute(
            select(_T.c.status, _T.c.expires_at)
            .where(owned(_T, scope), _T.c.id == scope.sandbox_id)
            .with_for_update(read=True)
        ).one_or_none()
        if row is None or row.status != SandboxStatus.ACTIVE.value or row.expires_at <= now:
            raise SandboxClosed("the session's sandbox was forked, discarded or expired")
        expires: datetime = row.expires_at
        return expires

    def history(self, conn: Connection, scope: UserScope, session_id: str) -> Sequence[Sandbox]:
        """Every sandbox of the session, oldest first (archived ones stay for audit)."""
        rows = conn.execute(
            select(*_COLUMNS)
            .where(owned(_T, scope), _T.c.session_id == session_id)
            .order_by(_T.c.created_at, _T.c.id)
        ).all()
        return [Sandbox(**dict(r._mapping)) for r in rows]

    # -- helpers ---------------------------------------------------------------------------

    def _active(self, conn: Connection, scope: UserScope, session_id: str) -> Sandbox | None:
        row = conn.execute(
            select(*_COLUMNS).where(
                owned(_T, scope),
                _T.c.session_id == session_id,
                _T.c.status == SandboxStatus.ACTIVE.value,
            )
        ).one_or_none()
        return None if row is None else Sandbox(**dict(row._mapping))

    def _require_active(self, conn: Connection, scope: UserScope, session_id: str) -> uuid.UUID:
        """The scope's sandbox id if it is still the session's active one."""
        active = self._active(conn, scope, session_id)
        if active is None or active.id != scope.sandbox_id:
            raise SandboxClosed("the sandbox is no longer the session's active one")
        return active.id

    def _create(
        self,
        conn: Connection,
        scope: UserScope,
        session_id: str,
        now: datetime,
        *,
        parent: uuid.UUID | None,
    ) -> Sandbox:
        row = conn.execute(
            _T.insert()
            .values(
                id=uuid.uuid4(),
                user_id=scope.user_id,
                session_id=session_id,
                agent_id=scope.agent_id,
                parent_id=parent,
                expires_at=now + self._ttl,
            )
            .returning(*_COLUMNS)
        ).one()
        return Sandbox(**dict(row._mapping))

    def _close(
        self,
        conn: Connection,
        scope: UserScope,
        sandbox_id: uuid.UUID,
        status: SandboxStatus,
        now: datetime,
    ) -> None:
        conn.execute(
            update(_T)
            .where(owned(_T, scope), _T.c.id == sandbox_id)
            .values(status=status.value, closed_at=now)
        )
