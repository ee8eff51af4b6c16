"""Session watermarks: how far each session's turns were turned into records.

A session's non-empty turns are numbered in the order they became known
(``append_turns``, or the transcript given to ``end_session``); ``digest``
chains their masked text, so a transcript given again is recognised without
storing it. ``processed`` is the watermark: the turns before it were
summarised and merged into the profile, and never are again. Every change
happens under the row's lock (``FOR UPDATE``), inside the caller's transaction,
and a change made from a stale reading is refused
(:class:`ConcurrentModificationError`), so two triggers never process the same
turns.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum
from functools import cache
from typing import Any, Final

from sqlalchemy import Connection, String, Update, bindparam, func, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert

from policies.errors import ConcurrentModificationError
from policies.scope import UserScope
from structured_memory.database import Database
from structured_memory.models import MemoryFragment, SessionWatermark, table_of
from structured_memory.scoping import owned, owned_by, visible

__all__ = [
    "TURN_SOURCE",
    "EndedBy",
    "SessionMark",
    "SessionRepository",
    "StoredTurn",
    "chain_digest",
]

TURN_SOURCE = "append_turns"
"""``metadata["source"]`` of a fragment holding a turn; ``metadata["turn"]`` numbers it."""

_T = table_of(SessionWatermark)
_F = table_of(MemoryFragment)

_ROW: Final = select(_T).where(
    owned_by(_T, bindparam("scope_user", type_=String)),
    _T.c.session_id == bindparam("session", type_=_T.c.session_id.type),
)
"""The session's row (statements built once: every session end reads and moves it)."""
_LOCKED: Final = _ROW.with_for_update()
_CREATE: Final = (
    pg_insert(_T)
    .values(
        user_id=bindparam("scope_user", type_=String),
        session_id=bindparam("session", type_=_T.c.session_id.type),
        agent_id=bindparam("agent", type_=_T.c.agent_id.type),
    )
    .on_conflict_do_nothing(index_elements=["user_id", "session_id"])
    .returning(_T)
)


@cache
def _advance(record: bool, ended: bool) -> Update:
    """The watermark moved (to ``turns``, ``digest``), with the record just written and
    the session ended when said."""
    values: dict[str, object] = {
        "turns": bindparam("turns"),
        "digest": bindparam("digest"),
        "processed": bindparam("turns"),
        "updated_at": func.now(),
    }
    if record:
        values["last_record_id"] = bindparam("record_id")
    if ended:
        values |= {"ended_at": func.now(), "ended_by": bindparam("ended_by")}
    return (
        update(_T)
        .where(
            owned_by(_T, bindparam("scope_user", type_=String)),
            _T.c.session_id == bindparam("session", type_=_T.c.session_id.type),
        )
        .values(**values)
    )


class EndedBy(StrEnum):
    """Why a session ended."""

    EXPLICIT = "explicit"
    IDLE = "idle"


def chain_digest(digest: str, turns: Iterable[tuple[str, str]]) -> str:
    """``digest`` extended by ``(role, masked text)`` turns: SHA-256, hex, chained."""
    for role, text in turns:
        digest = hashlib.sha256(f"{digest}\x1f{role}\x1f{text}".encode()).hexdigest()
    return digest


@dataclass(frozen=True)
class SessionMark:
    """A session's row: turns known, their digest, the watermark, and how it ended."""

    session_id: str
    agent_id: str | None
    turns: int
    digest: str
    processed: int
    last_record_id: uuid.UUID | None
    ended_at: datetime | None
    ended_by: str | None

    @property
    def position(self) -> tuple[int, str, int]:
        """What a change is checked against: turns, digest and watermark."""
        return (self.turns, self.digest, self.processed)


@dataclass(frozen=True)
class StoredTurn:
    """A turn kept in the ledger: its role, masked text and time, the masked addresses in
    it and the vault ids of their clear values (in order)."""

    role: str
    text: str
    occurred_at: datetime
    addresses: tuple[tuple[str, str], ...]


def _addresses(entities: Any, metadata: Any) -> tuple[tuple[str, str], ...]:
    masked = [
        e["text"] for e in entities or [] if isinstance(e, dict) and e.get("type") == "ADDRESS"
    ]
    refs = [
        r["vault_id"]
        for r in (metadata or {}).get("pii", [])
        if isinstance(r, dict) and r.get("kind") == "address"
    ]
    return tuple(zip(masked, refs, strict=False))


_EMPTY = SessionMark("", None, 0, "", 0, None, None, None)


def _mark(row: Any) -> SessionMark:
    return SessionMark(
        session_id=row.session_id,
        agent_id=row.agent_id,
        turns=row.turns,
        digest=row.digest,
        processed=row.processed,
        last_record_id=row.last_record_id,
        ended_at=row.ended_at,
        ended_by=row.ended_by,
    )


class SessionRepository:
    """Reads and moves a user's session watermarks."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def get(self, scope: UserScope, session_id: str) -> SessionMark:
        """The session's row; an unknown session reads as one with no turns (one statement:
        no transaction of its own)."""
        with self._db.reading() as conn:
            row = conn.execute(
                _ROW, {"scope_user": scope.user_id, "session": session_id}
            ).one_or_none()
        return _mark(row) if row is not None else replace(_EMPTY, session_id=session_id)

    def stored_turns(
        self, scope: UserScope, session_id: str, start: int, stop: int
    ) -> list[StoredTurn]:
        """The session's turns numbered ``start`` to ``stop - 1`` that the ledger still
        holds (a turn deleted or expired is left out), in order."""
        if stop <= start:
            return []
        number = _F.c["metadata"]["turn"].as_integer()
        with self._db.transaction() as conn:
            rows = conn.execute(
                select(_F.c.text, _F.c.occurred_at, _F.c.entities, _F.c["metadata"])
                .where(
                    visible(_F, scope, None),
                    _F.c.session_id == session_id,
                    _F.c["metadata"]["source"].as_string() == TURN_SOURCE,
                    number >= start,
                    number < stop,
                )
                .order_by(number)
            ).all()
        return [
            StoredTurn(
                role=str(r.metadata.get("role", "user")),
                text=r.text,
                occurred_at=r.occurred_at,
                addresses=_addresses(r.entities, r.metadata),
            )
            for r in rows
        ]

    def lock(self, conn: Connection, scope: UserScope, session_id: str) -> SessionMark:
        """The session's row under ``FOR UPDATE`` until the transaction ends (created empty
        if missing; :class:`UserNotFound` for a user without a profile). A row this call
        creates is its transaction's until it ends, so it needs no second read."""
        params = {"scope_user": scope.user_id, "session": session_id}
        created = conn.execute(_CREATE, {**params, "agent": scope.agent_id}).one_or_none()
        if created is not None:
            return _mark(created)
        return _mark(conn.execute(_LOCKED, params).one())

    def append(
        self, conn: Connection, scope: UserScope, session_id: str, turns: list[tuple[str, str]]
    ) -> SessionMark:
        """Count ``(role, masked text)`` turns into the session (reopening it if it had
        ended); returns the row as it was before, whose ``turns`` numbers the first."""
        before = self.lock(conn, scope, session_id)
        conn.execute(
            update(_T)
            .where(owned(_T, scope), _T.c.session_id == session_id)
            .values(
                turns=before.turns + len(turns),
                digest=chain_digest(before.digest, turns),
                agent_id=func.coalesce(scope.agent_id, _T.c.agent_id),
                ended_at=None,
                ended_by=None,
                updated_at=func.now(),
            )
        )
        return before

    def advance(
        self,
        conn: Connection,
        scope: UserScope,
        session_id: str,
        *,
        seen: tuple[int, str, int],
        turns: int,
        digest: str,
        record_id: uuid.UUID | None,
        ended_by: EndedBy | None,
    ) -> None:
        """Move the watermark to ``turns`` (all known turns processed), from the position
        ``seen`` read before the work; :class:`ConcurrentModificationError` if the row
        moved since. ``ended_by`` ends the session; ``record_id`` (when given) is the
        record just written."""
        current = self.lock(conn, scope, session_id)
        if current.position != seen:
            raise ConcurrentModificationError(
                "the session moved on while its turns were processed", session_moved=True
            )
        conn.execute(
            _advance(record_id is not None, ended_by is not None),
            {
                "scope_user": scope.user_id,
                "session": session_id,
                "turns": turns,
                "digest": digest,
                "record_id": record_id,
                "ended_by": None if ended_by is None else ended_by.value,
            },
        )
