"""``mem.feedback``: a behaviour event on any memory, fragment or fact, by id.

The memory is found under the caller's scope (its user, the agent's private
memories, its sandbox; live and not retired), its confidence and status move
by ``policies.confidence.after_feedback``, and the event (and a change of
status) is recorded in the audit log, all in one transaction. A retired
fragment's index copy is refreshed through the outbox in the same transaction.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from policies.confidence import ConfidenceConfig, MemoryStatus, feedback_action
from policies.outbox import OutboxOp
from policies.scope import UserScope
from policies.validation import check_uuid
from sdk.feed import IndexFeed
from structured_memory.database import Database
from structured_memory.repositories.confidence import MemoryTable, apply_feedback
from values.feedback import FeedbackResult

__all__ = ["give_feedback"]


def give_feedback(
    db: Database,
    feed: IndexFeed,
    scope: UserScope,
    memory_id: uuid.UUID | str,
    *,
    action: str,
    config: ConfidenceConfig,
) -> FeedbackResult:
    """Apply ``action`` to the memory ``memory_id`` of the scope's user.

    :class:`InvalidField` for an unknown action or a malformed id,
    :class:`RecordNotFound` when no visible, live memory has that id.
    """
    act = feedback_action(action)
    mid = check_uuid(memory_id, "memory_id")
    with db.transaction(owner=scope.user_id) as conn:
        out = apply_feedback(conn, scope, mid, act, config=config, now=datetime.now(UTC))
        retired = out.after.status is MemoryStatus.RETIRED
        if out.table is MemoryTable.FRAGMENT and retired:
            feed.enqueue(conn, [(OutboxOp.UPSERT, scope.user_id, mid)])
    if out.table is MemoryTable.FRAGMENT and retired:
        feed.wake()
    return FeedbackResult(
        memory_id=mid,
        kind=out.table.value,
        action=act.value,
        confidence=out.after.confidence,
        status=out.after.status.value,
        previous_confidence=out.before.confidence,
        previous_status=out.before.status.value,
    )
