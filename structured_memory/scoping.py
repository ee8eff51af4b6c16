"""The one place a :class:`UserScope` becomes SQL: the user filter and visibility.

Every repository statement on a table holding a ``user_id`` goes through
:func:`owned` (the user predicate; :func:`owned_by` and :func:`owned_by_any` for
a statement built once, a join on the user or cross-user work handling users one
at a time), :func:`owned_by_agent` for rows that belong to one agent of the user
(its sandboxes) and, for tables whose rows can be private to an agent or written
inside a sandbox, :func:`visible` (user, agent-private, sandbox and live status
together). The rule itself is ``policies.scope.UserScope``; this module only
renders it, for SQLAlchemy statements and, through :func:`visible_text`, for the
SQL text of the pgvector index (handed to it by the runtime: the tracks do not
import each other). Statements that span users on purpose are built in
``structured_memory.cross_user`` and carry its execution option instead.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any

from sqlalchemy import (
    ColumnElement,
    DateTime,
    String,
    Table,
    Uuid,
    and_,
    any_,
    bindparam,
    func,
    or_,
)
from sqlalchemy.dialects.postgresql.psycopg import PGDialect_psycopg
from sqlalchemy.engine.interfaces import BindTyping
from sqlalchemy.sql.selectable import NamedFromClause

from policies.scope import UserScope

__all__ = [
    "Shape",
    "bound_values",
    "live",
    "owned",
    "owned_by",
    "owned_by_agent",
    "owned_by_any",
    "shape_of",
    "visible",
    "visible_bound",
    "visible_per_row",
    "visible_text",
]


def owned(table: Table | NamedFromClause, scope: UserScope) -> ColumnElement[bool]:
    """Rows of ``table`` that belong to the scope's user."""
    return owned_by(table, scope.user_id)


def owned_by(table: Table | NamedFromClause, user: str | ColumnElement[str]) -> ColumnElement[bool]:
    """Rows of ``table`` that belong to ``user``: a user id (cross-user work handling one
    user at a time), a bind parameter (a statement built once) or a column of another
    relation (a join on the user, or a batch of per-row lookups)."""
    return table.c.user_id == user


def owned_by_any(table: Table | NamedFromClause, users: ColumnElement[Any]) -> ColumnElement[bool]:
    """Rows of ``table`` that belong to any user of the array ``users`` (a bind parameter):
    one statement for a batch of users, each row then handled for its own user."""
    return table.c.user_id == any_(users)


def owned_by_agent(table: Table | NamedFromClause, scope: UserScope) -> ColumnElement[bool]:
    """Rows of ``table`` that belong to the scope's user and agent (a scope without an
    agent: rows without one), as ``coalesce(agent_id, '')`` (an agent id is never empty)
    so an index on that expression serves it."""
    return and_(owned(table, scope), func.coalesce(table.c.agent_id, "") == (scope.agent_id or ""))


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
    return _visibility(table, scope.user_id, scope.agent_id, scope.sandbox_id, now)


Shape = tuple[bool, bool]
"""Whether a scope names an agent, and a sandbox: what :func:`visible` renders differently."""


def shape_of(scope: UserScope) -> Shape:
    """The scope's :data:`Shape`."""
    return scope.agent_id is not None, scope.sandbox_id is not None


def visible_bound(table: Table | NamedFromClause, shape: Shape) -> ColumnElement[bool]:
    """:func:`visible` for every live-at-``now`` scope of ``shape``, its values left as bind
    parameters (:func:`bound_values`): the clause of a statement built once, not per call."""
    agent, sandbox = shape
    return _visibility(
        table,
        bindparam("scope_user", type_=String),
        bindparam("scope_agent", type_=String) if agent else None,
        bindparam("scope_sandbox", type_=Uuid) if sandbox else None,
        bindparam("now", type_=DateTime(timezone=True)),
    )


def bound_values(scope: UserScope, now: datetime) -> dict[str, Any]:
    """The parameters of a :func:`visible_bound` clause for ``scope`` at ``now``."""
    values: dict[str, Any] = {"scope_user": scope.user_id, "now": now}
    if scope.agent_id is not None:
        values["scope_agent"] = scope.agent_id
    if scope.sandbox_id is not None:
        values["scope_sandbox"] = scope.sandbox_id
    return values


def visible_text(table: Table) -> Callable[[UserScope, datetime], tuple[str, dict[str, Any]]]:
    """:func:`visible` at ``now`` as SQL text over ``table`` and its parameters, for
    statements written as text (the pgvector index's): :func:`visible_bound` compiled once
    per :data:`Shape` for PostgreSQL, its columns qualified by the table's name and its
    parameters (:func:`bound_values`) bound by name and untyped, as a text statement's are."""
    dialect = PGDialect_psycopg(paramstyle="named")  # type: ignore[no-untyped-call]
    dialect.bind_typing = BindTyping.NONE
    shapes: list[Shape] = [(agent, sandbox) for agent in (False, True) for sandbox in (False, True)]
    clauses = {shape: str(visible_bound(table, shape).compile(dialect=dialect)) for shape in shapes}

    def render(scope: UserScope, now: datetime) -> tuple[str, dict[str, Any]]:
        return clauses[shape_of(scope)], bound_values(scope, now)

    return render


def visible_per_row(
    table: Table | NamedFromClause,
    user: ColumnElement[str],
    agent: ColumnElement[str],
    sandbox: ColumnElement[uuid.UUID],
    now: datetime | ColumnElement[datetime],
) -> ColumnElement[bool]:
    """:func:`visible` for a scope given as columns of another relation (one scope per
    row, as in a batch of lookups); a NULL agent or sandbox sees as a scope without one."""
    return _visibility(table, user, agent, sandbox, now)


def _visibility(
    table: Table | NamedFromClause,
    user: str | ColumnElement[str],
    agent: str | ColumnElement[str] | None,
    sandbox: uuid.UUID | ColumnElement[uuid.UUID] | None,
    now: datetime | ColumnElement[datetime] | None,
) -> ColumnElement[bool]:
    private = (
        table.c.private.is_(False)
        if agent is None
        else or_(table.c.private.is_(False), table.c.agent_id == agent)
    )
    sandboxed = (
        table.c.sandbox_id.is_(None)
        if sandbox is None
        else or_(table.c.sandbox_id.is_(None), table.c.sandbox_id == sandbox)
    )
    parts = [owned_by(table, user), private, sandboxed]
    if now is not None:
        parts.append(live(table, now))
    return and_(*parts)
