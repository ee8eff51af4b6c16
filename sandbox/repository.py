"""Sandboxes in PostgreSQL: open, fork, merge, discard, and the hold writers take.

A sandbox belongs to a user, an agent and a session: each agent of a user has at
most one ``active`` sandbox per session (a partial unique index), and a sandbox
of another agent or user is not found (:class:`SandboxNotFound`), whatever the
caller names. Opening, forking, merging and discarding serialise on
``pg_advisory_xact_lock`` of the user, agent and session, so concurrent forks
leave exactly one active sandbox. Merge and discard touch only the fragments
the caller may see (``scoping.visible``), never another agent's private ones. A
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
from sandbox.errors import SandboxClosed, SandboxNotFound
from structured_memory.models import MemoryFragment, SandboxStatus, SessionSandbox, table_of
from structured_memory.repositories.fragments import frequent_user, vault_ids_of
from structured_memory.scoping import owned_by_agent, visible

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
    key = "\x1f".join((scope.user_id, scope.agent_id or "", session_id))
    conn.execute(select(func.pg_advisory_xact_lock(func.hashtextextended(key, 0))))


class SandboxRepository:
    """Sandbox rows of one user and agent at a time; every statement carries both."""

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

        Each takes its policy's lifetime from ``now``. Ids not in the sandbox or not
        visible to the scope are ignored; a sandbox no longer active raises
        :class:`SandboxClosed`, one not the scope's :class:`SandboxNotFound`.
        """
        _lock(conn, scope, session_id)
        sandbox_id = self._require_active(conn, scope, session_id)
        wanted = sorted(set(memory_ids))
        if not wanted:
            return []
        rows = conn.execute(
            select(_F.c.id, _F.c.policy, _F.c.kind)
            .where(visible(_F, scope, None), _F.c.sandbox_id == sandbox_id, _F.c.id.in_(wanted))
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
                .where(visible(_F, scope, None), _F.c.id == row.id)
                .values(
                    sandbox_id=None, expires_at=life.expires_at(now), renew_days=life.renew_days
                )
            )
        return [r.id for r in rows]

    def discard(
        self, conn: Connection, scope: UserScope, session_id: str, *, now: datetime
    ) -> Swept:
        """Delete the scope's sandbox's unmerged fragments it may see and close it as
        discarded (what it may not see expires with the sandbox)."""
        _lock(conn, scope, session_id)
        sandbox_id = self._require_active(conn, scope, session_id)
        rows = conn.execute(
            _F.delete()
            .where(visible(_F, scope, None), _F.c.sandbox_id == sandbox_id)
            .returning(_F.c.id, _F.c["metadata"])
        ).all()
        self._close(conn, scope, sandbox_id, SandboxStatus.DISCARDED, now)
        vaults = [v for r in rows for v in vault_ids_of(r[1])]
        return Swept([r.id for r in rows], vaults)

    def hold(self, conn: Connection, scope: UserScope, now: datetime) -> datetime:
        """For a writer: hold the scope's sandbox ``FOR SHARE`` until commit; its expiry.

        Raises :class:`SandboxClosed` when it was forked, discarded or expired,
        :class:`SandboxNotFound` when it is not the scope's.
        """
        row = conn.execute(
            select(_T.c.status, _T.c.expires_at)
            .where(owned_by_agent(_T, scope), _T.c.id == scope.sandbox_id)
            .with_for_update(read=True)
        ).one_or_none()
        if row is None:
            raise _not_found()
        if row.status != SandboxStatus.ACTIVE.value or row.expires_at <= now:
            raise SandboxClosed("the session's sandbox was forked, discarded or expired")
        expires: datetime = row.expires_at
        return expires

    def get(self, conn: Connection, scope: UserScope, sandbox_id: uuid.UUID) -> Sandbox:
        """The scope's sandbox ``sandbox_id``, whatever its status; :class:`SandboxNotFound`
        if it is not the scope's user's and agent's."""
        row = conn.execute(
            select(*_COLUMNS).where(owned_by_agent(_T, scope), _T.c.id == sandbox_id)
        ).one_or_none()
        if row is None:
            raise _not_found()
        return Sandbox(**dict(row._mapping))

    def history(self, conn: Connection, scope: UserScope, session_id: str) -> Sequence[Sandbox]:
        """The agent's every sandbox of the session, oldest first (archived ones stay for
        audit)."""
        rows = conn.execute(
            select(*_COLUMNS)
            .where(owned_by_agent(_T, scope), _T.c.session_id == session_id)
            .order_by(_T.c.created_at, _T.c.id)
        ).all()
        return [Sandbox(**dict(r._mapping)) for r in rows]

    # -- helpers ---------------------------------------------------------------------------

    def _active(self, conn: Connection, scope: UserScope, session_id: str) -> Sandbox | None:
        row = conn.execute(
            select(*_COLUMNS).where(
                owned_by_agent(_T, scope),
                _T.c.session_id == session_id,
                _T.c.status == SandboxStatus.ACTIVE.value,
            )
        ).one_or_none()
        return None if row is None else Sandbox(**dict(row._mapping))

    def _require_active(self, conn: Connection, scope: UserScope, session_id: str) -> uuid.UUID:
        """The scope's sandbox id if it is still the session's active one."""
        if scope.sandbox_id is None:
            raise _not_found()
        named = self.get(conn, scope, scope.sandbox_id)
        active = self._active(conn, scope, session_id)
        if active is None or active.id != named.id:
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
            .where(owned_by_agent(_T, scope), _T.c.id == sandbox_id)
            .values(status=status.value, closed_at=now)
        )


def _not_found() -> SandboxNotFound:
    return SandboxNotFound("no such sandbox for this user and agent")
