"""The append-only audit log: record an entry in the caller's transaction, read entries back.

Inside :func:`trail` the entries of a unit of work are collected and appended in one
statement when it ends (a session's end records its links, facts, profile and record
together), the users' keys read once.

Entries name the user by a keyed pseudonym (``policies.audit.pseudonym``)
under a random key per user kept in ``audit_key``, which erasure deletes with
the user: the entries survive an erasure without identifying anyone. The log
itself refuses ``UPDATE``, ``DELETE`` and ``TRUNCATE`` (triggers of revision
0008, raising :class:`AuditLogImmutable` through ``Database.transaction``).
"""

from __future__ import annotations

import contextlib
import json
import secrets
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import (
    ARRAY,
    Connection,
    LargeBinary,
    String,
    Uuid,
    bindparam,
    cast,
    func,
    insert,
    select,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.dialects.postgresql import insert as pg_insert

from policies.audit import AUDIT_KEY_BYTES, AuditAction, check_details, pseudonym
from policies.errors import UserNotFound
from policies.scope import UserScope
from structured_memory.database import Database
from structured_memory.models import AuditKey, AuditLog, UserProfile, table_of
from structured_memory.scoping import owned, owned_by, owned_by_any

__all__ = [
    "AuditEntry",
    "DailyCount",
    "audit_key",
    "audit_keys",
    "daily_counts",
    "recent",
    "record",
    "record_batch",
    "record_erasure",
    "record_many",
    "subject_of",
    "trail",
]

_LOG = table_of(AuditLog)
_KEY = table_of(AuditKey)
_PROFILE = table_of(UserProfile)

# Built once: the write path appends on every write, and building these cost more than
# running them.
_USERS = bindparam("users", type_=ARRAY(String))
_HELD_KEYS = select(_KEY.c.user_id, _KEY.c.key).where(owned_by_any(_KEY, _USERS))
_FRESH = (
    func.unnest(_USERS, bindparam("keys", type_=ARRAY(LargeBinary)))
    .table_valued("user_id", "key")
    .render_derived("fresh")
)
_CREATED = (
    pg_insert(_KEY)
    .from_select(
        ["user_id", "key"],
        select(_FRESH.c.user_id, _FRESH.c.key)
        .join(_PROFILE, owned_by(_PROFILE, _FRESH.c.user_id))
        .where(owned_by_any(_PROFILE, _USERS))
        .order_by(_FRESH.c.user_id),
    )
    .on_conflict_do_nothing(index_elements=["user_id"])
    .returning(_KEY.c.user_id, _KEY.c.key)
    .cte("created")
)
_CREATE_KEYS = select(_CREATED).union_all(_HELD_KEYS)
"""New keys for the users that have a profile, and the keys that existed: ``held`` and
``created`` see one snapshot, so each key is in one of the two."""
_ENTRIES = (
    func.unnest(
        bindparam("actions", type_=ARRAY(String)),
        bindparam("agents", type_=ARRAY(String)),
        bindparam("subjects", type_=ARRAY(String)),
        bindparam("memories", type_=ARRAY(Uuid)),
        bindparam("details", type_=ARRAY(String)),
    )
    .table_valued("action", "agent_id", "subject", "memory_id", "details", with_ordinality="n")
    .render_derived("entry")
)
_APPEND = insert(_LOG).from_select(
    ["action", "agent_id", "subject", "memory_id", "details"],
    select(
        _ENTRIES.c.action,
        _ENTRIES.c.agent_id,
        _ENTRIES.c.subject,
        _ENTRIES.c.memory_id,
        cast(_ENTRIES.c.details, JSONB),
    ).order_by(_ENTRIES.c.n),
)


def audit_keys(
    conn: Connection, user_ids: Iterable[str], *, known: Mapping[str, bytes] | None = None
) -> dict[str, bytes]:
    """The users' audit keys by user id, created on first use, in user order: one read
    when every key exists (none when ``known``, keys read earlier in the transaction,
    holds them all), else one more statement for the missing (and a third only if
    another transaction created one of them meanwhile); :class:`UserNotFound` if a user
    has no profile (an erased user gets no new key)."""
    wanted = sorted(set(user_ids))
    given = {u: known[u] for u in wanted if known is not None and u in known}
    if len(given) == len(wanted):
        return given
    # Nearly always every key exists: one plain read, no insert attempted.
    unread = [u for u in wanted if u not in given]
    rows = conn.execute(_HELD_KEYS, {"users": unread})
    existing = {**given, **{u: bytes(k) for u, k in rows}}
    if len(existing) == len(wanted):
        return existing
    wanted = [u for u in wanted if u not in existing]
    fresh = [secrets.token_bytes(AUDIT_KEY_BYTES) for _ in wanted]
    rows = conn.execute(_CREATE_KEYS, {"users": wanted, "keys": fresh})
    found = {u: bytes(k) for u, k in rows}
    missing = [u for u in wanted if u not in found]
    if missing:  # created by a transaction that committed after this statement's snapshot
        rows = conn.execute(_HELD_KEYS, {"users": missing})
        found.update({u: bytes(k) for u, k in rows})
    for user_id in wanted:
        if user_id not in found:
            raise UserNotFound("no profile for this user")
    return {**existing, **found}


def _checked(details: Mapping[str, Any] | None, seen: dict[Any, str]) -> str:
    """``details`` checked (``check_details``) as JSON; a batch's repeated details
    (the write path's few kinds and policies) are checked once."""
    try:
        # the value's type too: True == 1 == 1.0 hash alike but are different JSON
        key = None if details is None else tuple((k, type(v), v) for k, v in details.items())
        hash(key)
    except TypeError:  # a list among the values: checked every time
        return json.dumps(check_details(details))
    if key not in seen:
        seen[key] = json.dumps(check_details(details))
    return seen[key]


def audit_key(conn: Connection, scope: UserScope) -> bytes:
    """The scope's user's audit key, created on first use; :class:`UserNotFound` if the user
    has no profile (an erased user gets no new key)."""
    return audit_keys(conn, [scope.user_id])[scope.user_id]


def record(
    conn: Connection,
    scope: UserScope,
    action: AuditAction,
    *,
    memory_id: uuid.UUID | None = None,
    details: Mapping[str, Any] | None = None,
) -> None:
    """Append one entry for the scope's user and agent, in the caller's transaction.

    ``details`` hold ids, codes and numbers only (``policies.audit.check_details``;
    :class:`InvalidField` otherwise). :class:`UserNotFound` if the user has no profile.
    """
    record_many(conn, scope, action, [(memory_id, details)])


def record_many(
    conn: Connection,
    scope: UserScope,
    action: AuditAction,
    entries: Sequence[tuple[uuid.UUID | None, Mapping[str, Any] | None]],
) -> None:
    """Append one entry per ``(memory_id, details)`` pair of one scope (:func:`record_batch`)."""
    record_batch(conn, action, [(scope, memory_id, details) for memory_id, details in entries])


def record_batch(
    conn: Connection,
    action: AuditAction,
    entries: Sequence[tuple[UserScope, uuid.UUID | None, Mapping[str, Any] | None]],
    *,
    keys: Mapping[str, bytes] | None = None,
) -> None:
    """Append one entry per ``(scope, memory_id, details)``, in that order, for any number of
    users in two statements (their keys, then the entries), in the caller's transaction;
    one when ``keys`` (read in this transaction, as ``hold_profiles`` returns them) holds
    every user's key; none inside a :func:`trail`, which appends them when it ends.

    Details as in :func:`record`; :class:`UserNotFound` if a user has no profile, and
    then nothing is appended.
    """
    if not entries:
        return
    seen: dict[Any, str] = {}
    code = AuditAction(action).value
    rows = [(code, scope, memory_id, _checked(d, seen)) for scope, memory_id, d in entries]
    pending = _TRAIL.get()
    if pending is not None and pending.conn is conn:
        pending.keys.update(keys or {})
        pending.rows += rows
        return
    _append(conn, rows, keys)


_Row = tuple[str, UserScope, uuid.UUID | None, str]
"""An entry to append: its action's code, scope, memory and details as JSON."""


@dataclass
class _Trail:
    conn: Connection
    keys: dict[str, bytes]
    rows: list[_Row] = field(default_factory=list)


_TRAIL: ContextVar[_Trail | None] = ContextVar("audit_trail", default=None)
"""The open :func:`trail` of this thread (or task), with its connection. Kept beside the
connection, not in ``Connection.info``: a connection the server dropped refuses even that
read, which would hide the error the caller translates."""


@contextlib.contextmanager
def trail(conn: Connection, keys: Mapping[str, bytes] | None = None) -> Iterator[None]:
    """Collect the entries recorded on ``conn`` in this block and append them, in order, in
    one statement when it ends without an error (``keys``: audit keys read in this
    transaction). A trail inside a trail joins it; an error leaves nothing appended (the
    transaction rolls back)."""
    outer = _TRAIL.get()
    if outer is not None and outer.conn is conn:
        yield
        return
    pending = _Trail(conn, dict(keys or {}))
    token = _TRAIL.set(pending)
    try:
        yield
    finally:
        _TRAIL.reset(token)
    _append(conn, pending.rows, pending.keys)


def _append(conn: Connection, rows: Sequence[_Row], keys: Mapping[str, bytes] | None) -> None:
    """Append ``rows`` in one statement, after the keys ``keys`` lacks (one more)."""
    if not rows:
        return
    found = audit_keys(conn, (scope.user_id for _, scope, _, _ in rows), known=keys)
    subjects = {user_id: pseudonym(key, user_id) for user_id, key in found.items()}
    conn.execute(
        _APPEND,
        {
            "actions": [a for a, _, _, _ in rows],
            "agents": [s.agent_id for _, s, _, _ in rows],
            "subjects": [subjects[s.user_id] for _, s, _, _ in rows],
            "memories": [m for _, _, m, _ in rows],
            "details": [d for _, _, _, d in rows],
        },
    )


def record_erasure(
    conn: Connection, scope: UserScope, details: Mapping[str, Any] | None = None
) -> bool:
    """Lock the user's profile ``FOR UPDATE`` and record the erasure about to happen in the
    caller's transaction, while the key still exists; ``False`` (nothing recorded) if the
    user has no profile. Concurrent erasures of one user record one entry."""
    held = conn.execute(
        select(_PROFILE.c.user_id).where(owned(_PROFILE, scope)).with_for_update()
    ).scalar()
    if held is None:
        return False
    record(conn, scope, AuditAction.ERASURE, details=details)
    return True


def subject_of(db: Database, scope: UserScope) -> str | None:
    """The user's pseudonym as the log spells it, or ``None`` once erasure destroyed the key
    (ops only: it re-identifies the user's entries)."""
    with db.transaction() as conn:
        key = conn.execute(select(_KEY.c.key).where(owned(_KEY, scope))).scalar()
    return None if key is None else pseudonym(bytes(key), scope.user_id)


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One audit entry as read back."""

    id: int
    at: datetime
    action: AuditAction
    agent_id: str | None
    subject: str | None
    memory_id: uuid.UUID | None
    details: dict[str, Any]


def recent(
    db: Database,
    *,
    limit: int = 50,
    subject: str | None = None,
    actions: Sequence[AuditAction] = (),
    memory_id: uuid.UUID | None = None,
) -> list[AuditEntry]:
    """The newest entries first, optionally for one pseudonym, some actions or one memory."""
    query = select(_LOG).order_by(_LOG.c.id.desc()).limit(limit)
    if subject is not None:
        query = query.where(_LOG.c.subject == subject)
    if actions:
        query = query.where(_LOG.c.action.in_([AuditAction(a).value for a in actions]))
    if memory_id is not None:
        query = query.where(_LOG.c.memory_id == memory_id)
    with db.transaction() as conn:
        rows = conn.execute(query).all()
    return [
        AuditEntry(
            id=r.id,
            at=r.at,
            action=AuditAction(r.action),
            agent_id=r.agent_id,
            subject=r.subject,
            memory_id=r.memory_id,
            details=dict(r.details),
        )
        for r in rows
    ]


@dataclass(frozen=True, slots=True)
class DailyCount:
    """How many entries of one action (and one detail ``kind``, if any) fell on one UTC day."""

    day: datetime
    action: AuditAction
    kind: str | None
    count: int


def daily_counts(
    db: Database, *, since: datetime, actions: Sequence[AuditAction] = ()
) -> list[DailyCount]:
    """Entries per UTC day, action and ``details.kind`` since ``since``, oldest day first:
    what the ops dashboard plots (decays, status changes, feedback)."""
    day = func.date_trunc("day", _LOG.c.at, "UTC").label("day")
    kind = _LOG.c.details["kind"].astext.label("kind")
    query = (
        select(day, _LOG.c.action, kind, func.count().label("n"))
        .where(_LOG.c.at >= since)
        .group_by(day, _LOG.c.action, kind)
        .order_by(day, _LOG.c.action, kind)
    )
    if actions:
        query = query.where(_LOG.c.action.in_([AuditAction(a).value for a in actions]))
    with db.transaction() as conn:
        rows = conn.execute(query).all()
    return [DailyCount(r.day, AuditAction(r.action), r.kind, int(r.n)) for r in rows]
