"""Per-session sandboxes in the SDK: ``with mem.sandbox(user_id, session_id) as sb``.

Inside the block every read and write of that user attaches the session's
sandbox without being passed (``sandbox.current``, a ContextVar: each thread
and asyncio task sees its own): writes land in the sandbox, visible there
only; reads see long-term memory plus the sandbox. ``sb.fork()`` ("忘了刚才
说的，重新来") archives the sandbox (kept, readable for audit, never searched)
and continues in a clean one; ``sb.merge(ids)`` promotes chosen memories into
long-term memory; ``sb.discard()`` deletes what was not merged. What is never
merged expires with the sandbox (``DUALTRACK_SANDBOX_HOURS``).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from contextvars import Token
from datetime import UTC, datetime
from types import TracebackType

from policies.audit import AuditAction
from policies.outbox import OutboxOp
from policies.scope import UserScope
from policies.validation import check_session_id, check_uuid
from sandbox.current import ActiveSandbox, enter, leave
from sandbox.repository import Sandbox, SandboxRepository
from sdk.feed import IndexFeed
from sdk.write_path import WritePath
from structured_memory.audit import record
from structured_memory.database import Database
from structured_memory.repositories.fragments import FragmentLedger
from values.records import FragmentRecord

__all__ = ["SandboxSession", "Sandboxes"]


class Sandboxes:
    """Open, fork, merge, discard and read the sandboxes of a user's sessions.

    A sandbox is the calling agent's own: naming another agent's (or user's)
    raises :class:`SandboxNotFound`. Each call is one transaction under the
    user, agent and session's advisory lock.
    """

    def __init__(
        self,
        *,
        db: Database,
        repo: SandboxRepository,
        ledger: FragmentLedger,
        feed: IndexFeed,
        writes: WritePath,
        scope_for: Callable[[str], UserScope],
    ) -> None:
        self._db = db
        self._repo = repo
        self._ledger = ledger
        self._feed = feed
        self._writes = writes
        self._scope = scope_for

    def _base(self, user_id: str, sandbox_id: uuid.UUID | None = None) -> UserScope:
        scope = self._scope(user_id)
        return scope.in_sandbox(sandbox_id)

    def open(self, user_id: str, session_id: str) -> Sandbox:
        """The session's active sandbox, created on first use."""
        scope, session = self._base(user_id), check_session_id(session_id)
        with self._db.transaction(owner=scope.user_id) as conn:
            return self._repo.open(conn, scope, session, datetime.now(UTC))

    def fork(self, user_id: str, session_id: str) -> Sandbox:
        """Archive the session's sandbox and start a clean one; returns the new one."""
        scope, session = self._base(user_id), check_session_id(session_id)
        with self._db.transaction(owner=scope.user_id) as conn:
            new = self._repo.fork(conn, scope, session, datetime.now(UTC))
            record(
                conn,
                scope,
                AuditAction.FORK,
                details={"sandbox": new.id, "archived": new.parent_id},
            )
        return new

    def merge(
        self,
        user_id: str,
        session_id: str,
        sandbox_id: uuid.UUID | str,
        memory_ids: Iterable[uuid.UUID | str],
    ) -> list[uuid.UUID]:
        """Promote chosen memories of the sandbox into long-term memory; the ids merged.

        Raises :class:`SandboxClosed` if the sandbox is no longer the session's
        active one (a fork won the race): nothing is lost, its memories stay
        archived with it.
        """
        scope = self._base(user_id, check_uuid(sandbox_id, "sandbox_id"))
        session = check_session_id(session_id)
        ids = [check_uuid(i, "memory_ids") for i in memory_ids]
        with self._db.transaction() as conn:
            merged = self._repo.merge(conn, scope, session, ids, now=datetime.now(UTC))
            self._feed.enqueue(conn, [(OutboxOp.UPSERT, scope.user_id, i) for i in merged])
            for memory_id in merged:
                record(
                    conn,
                    scope,
                    AuditAction.MERGE,
                    memory_id=memory_id,
                    details={"sandbox": scope.sandbox_id},
                )
        self._feed.wake()
        return merged

    def discard(self, user_id: str, session_id: str, sandbox_id: uuid.UUID | str) -> int:
        """Delete what the sandbox holds that was not merged, and close it; how many."""
        scope = self._base(user_id, check_uuid(sandbox_id, "sandbox_id"))
        session = check_session_id(session_id)
        now = datetime.now(UTC)
        with self._db.transaction() as conn:
            swept = self._repo.discard(conn, scope, session, now=now)
            self._feed.enqueue(
                conn, [(OutboxOp.DELETE, scope.user_id, i) for i in swept.fragment_ids]
            )
            self._writes.forget(conn, scope, swept.fragment_ids, swept.vault_ids, now)
            record(
                conn,
                scope,
                AuditAction.DISCARD,
                details={"sandbox": scope.sandbox_id, "dropped": len(swept.fragment_ids)},
            )
        self._feed.wake()
        return len(swept.fragment_ids)

    def get(self, user_id: str, sandbox_id: uuid.UUID | str) -> Sandbox:
        """One sandbox of this agent for the user, whatever its status;
        :class:`SandboxNotFound` if it is not theirs."""
        scope = self._base(user_id)
        box = check_uuid(sandbox_id, "sandbox_id")
        with self._db.reading() as conn:
            return self._repo.get(conn, scope, box)

    def history(self, user_id: str, session_id: str) -> list[Sandbox]:
        """This agent's every sandbox of the session, oldest first: the active one and the
        archived."""
        scope, session = self._base(user_id), check_session_id(session_id)
        with self._db.transaction() as conn:
            return list(self._repo.history(conn, scope, session))

    def memories(self, user_id: str, sandbox_id: uuid.UUID | str) -> list[FragmentRecord]:
        """What a sandbox holds, archived ones included (for audit; never searched)."""
        box = self.get(user_id, sandbox_id).id
        scope = self._base(user_id, box)
        records = self._ledger.list(scope, now=datetime.now(UTC), limit=1000, offset=0)
        return [r for r in records if r.sandbox_id == box]


class SandboxSession:
    """The block of ``with mem.sandbox(user_id, session_id) as sb``."""

    def __init__(self, sandboxes: Sandboxes, user_id: str, session_id: str) -> None:
        self._sandboxes = sandboxes
        self.user_id = user_id
        self.session_id = check_session_id(session_id)
        self._active: ActiveSandbox | None = None
        self._token: Token[ActiveSandbox | None] | None = None

    @property
    def id(self) -> uuid.UUID:
        """The sandbox the block works in now (it changes with :meth:`fork`)."""
        if self._active is None:
            raise RuntimeError("use the sandbox inside its with block")
        return self._active.sandbox_id

    def fork(self) -> uuid.UUID:
        """忘了刚才说的，重新来: archive this sandbox, continue in a clean one."""
        new = self._sandboxes.fork(self.user_id, self.session_id)
        assert self._active is not None
        self._active.sandbox_id = new.id
        return new.id

    def merge(self, memory_ids: Iterable[uuid.UUID | str]) -> list[uuid.UUID]:
        """Promote chosen memories of this sandbox into long-term memory."""
        return self._sandboxes.merge(self.user_id, self.session_id, self.id, memory_ids)

    def discard(self) -> int:
        """Delete what this sandbox holds that was not merged, and close it."""
        return self._sandboxes.discard(self.user_id, self.session_id, self.id)

    def __enter__(self) -> SandboxSession:
        opened = self._sandboxes.open(self.user_id, self.session_id)
        self._active = ActiveSandbox(opened.user_id, opened.agent_id, opened.session_id, opened.id)
        self._token = enter(self._active)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._token is not None:
            leave(self._token)
            self._token = None
