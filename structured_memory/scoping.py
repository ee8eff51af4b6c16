"""The one place a :class:`UserScope` becomes SQL: the user filter and visibility.

Every repository statement on a table holding a ``user_id`` goes through
:func:`owned` (the user predicate) and, for tables whose rows can be private
to an agent or written inside a sandbox, :func:`visible` (user, agent-private,
sandbox and live status together). The rule itself is
``policies.scope.UserScope``; this module only renders it. Statements that
span users on purpose are built in ``structured_memory.cross_user`` and carry
its execution option instead.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ColumnElement, Table, and_, false, or_
from sqlalchemy.sql.selectable import NamedFromClause

from policies.scope import UserScope

__all__ = ["live", "owned", "visible"]


def owned(table: Table | NamedFromClause, scope: UserScope) -> ColumnElement[bool]:
    """Rows of ``table`` that belong to the scope's user."""
    return table.c.user_id == scope.user_id


def live(
    table: Table | NamedFromClause, now: datetime | ColumnElement[datetime]
) -> ColumnElement[bool]:
    """Rows of ``table`` not expired at ``now``, a time or a column of times
    (``expires_at`` NULL: never expires)."""
    return or_(table.c.expires_at.is_(None), table.c.expires_at > now)


def visible(
    table: Table | NamedFromClause, scope: UserScope, now: datetime | None
) -> ColumnElement[bool]:
    """Rows the scope may see: its user's, private ones only to their agent, sandboxed
    ones only inside their sandbox, and (with ``now``) live ones only."""
    private = (
        table.c.private.is_(False)
        if scope.agent_id is None
        else or_(table.c.private.is_(False), table.c.agent_id == scope.agent_id)
    )
    sandbox = (
        table.c.sandbox_id.is_(None)
        if scope.sandbox_id is None
        else or_(table.c.sandbox_id.is_(None), table.c.sandbox_id == scope.sandbox_id)
    )
    parts = [owned(table, scope), private, sandbox]
    if now is not None:
        parts.append(live(table, now))
    return and_(*parts) if parts else false()
