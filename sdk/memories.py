"""Reading and deleting single unstructured memories (``mem.memories``).

Writing and searching have one public way each, on :class:`MemoryClient`
(``write``, ``write_many``, ``search``); this facade holds the rest. Every
call sees only what the client's scope may see: the user's memories, another
agent's private ones excluded, live ones only.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from policies.audit import AuditAction
from policies.errors import InvalidField
from policies.outbox import OutboxOp
from policies.scope import UserScope
from policies.validation import check_uuid
from sdk.feed import IndexFeed
from sdk.write_path import WritePath
from structured_memory.audit import record
from structured_memory.database import Database
from structured_memory.repositories.fragments import FragmentLedger
from values.records import FragmentRecord

__all__ = ["Memories"]


class Memories:
    """Get, list and delete the user's memories."""

    def __init__(
        self,
        db: Database,
        ledger: FragmentLedger,
        feed: IndexFeed,
        writes: WritePath,
        scope_for: Callable[[str], UserScope],
    ) -> None:
        self._db = db
        self._ledger = ledger
        self._feed = feed
        self._writes = writes
        self._scope = scope_for

    def get(self, user_id: str, memory_id: uuid.UUID | str) -> FragmentRecord | None:
        """One visible, live memory of the user, or ``None`` (reading does not renew it)."""
        fid = check_uuid(memory_id, "memory_id")
        return self._ledger.get(self._scope(user_id), fid, now=datetime.now(UTC))

    def list(self, user_id: str, *, limit: int = 100, offset: int = 0) -> list[FragmentRecord]:
        """The user's visible, live memories, newest first."""
        if not isinstance(limit, int) or not 1 <= limit <= 1000:
            raise InvalidField("limit must be an integer in 1..1000", field="limit")
        if not isinstance(offset, int) or not 0 <= offset <= 2**31:
            raise InvalidField("offset must be a non-negative integer", field="offset")
        return self._ledger.list(
            self._scope(user_id), now=datetime.now(UTC), limit=limit, offset=offset
        )

    def delete(self, user_id: str, memory_id: uuid.UUID | str) -> bool:
        """Delete one visible memory completely; returns whether it existed.

        In one transaction: the ledger row, its index copy (through the feed),
        the vault entries only it referenced, and its words in the index
        context of the session's later memories (they are re-indexed without it);
        the deletion is recorded in the audit log. A deadlock with a concurrent
        call is retried (:meth:`Database.retrying`).
        """
        scope = self._scope(user_id)
        fid = check_uuid(memory_id, "memory_id")

        def unit() -> Sequence[uuid.UUID] | None:
            with self._db.transaction() as conn:
                gone = self._ledger.delete(conn, scope, fid)
                if gone is not None:
                    self._feed.enqueue(conn, [(OutboxOp.DELETE, scope.user_id, fid)])
                    self._writes.forget(conn, scope, [fid], gone, datetime.now(UTC))
                    details = {"kind": "fragment"}
                    record(conn, scope, AuditAction.DELETE, memory_id=fid, details=details)
            return gone

        vault_ids = self._db.retrying(unit)
        if vault_ids is not None:
            self._feed.wake()
        return vault_ids is not None
