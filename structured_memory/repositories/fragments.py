"""The fragment ledger: every unstructured memory as a PostgreSQL row.

The ledger is the system of record of the unstructured track; search indexes
are derived from it. Expired rows are never returned, whether or not the
sweeper has removed them yet, and reading an IMPLICIT fragment through
:meth:`FragmentLedger.hydrate` renews its TTL in the same statement.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict
from sqlalchemy import Connection, and_, case, delete, func, or_, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert

from policies.errors import ConcurrentModificationError
from policies.lifecycle import LifecyclePolicy
from policies.scope import UserScope
from structured_memory.database import Database
from structured_memory.models import MemoryFragment, UserProfile, table_of

__all__ = ["FragmentLedger", "FragmentRecord", "IndexRow", "NewFragment", "index_rows"]

_T = table_of(MemoryFragment)
_PROFILE = table_of(UserProfile)


@dataclass(frozen=True)
class NewFragment:
    """A fragment ready to be stored: text already masked, tokens and vector computed."""

    user_id: str
    kind: str
    policy: LifecyclePolicy
    text: str
    index_text: str
    token_count: int
    intent: str
    occurred_at: datetime
    expires_at: datetime | None
    embedding: Sequence[float]
    embedding_model: str
    entities: list[dict[str, Any]] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    session_id: str | None = None
    sandbox_id: uuid.UUID | None = None
    agent_id: str | None = None
    private: bool = False
    confidence: float = 1.0
    id: uuid.UUID = field(default_factory=uuid.uuid4)


class FragmentRecord(BaseModel):
    """A stored fragment as the SDK returns it (no vector, no index text)."""

    model_config = ConfigDict(frozen=True)

    id: uuid.UUID
    user_id: str
    agent_id: str | None
    private: bool
    session_id: str | None
    sandbox_id: uuid.UUID | None
    kind: str
    policy: str
    text: str
    entities: list[dict[str, Any]]
    intent: str
    confidence: float
    status: str
    occurred_at: datetime
    created_at: datetime
    last_used_at: datetime
    expires_at: datetime | None
    metadata: dict[str, Any]


_RECORD_COLUMNS = [c for c in _T.c if c.name in FragmentRecord.model_fields]


@dataclass(frozen=True)
class IndexRow:
    """What a derived index needs of a ledger row (masked text, tokens, vector, filters)."""

    id: uuid.UUID
    user_id: str
    text: str
    index_text: str
    embedding: list[float]
    embedding_model: str
    intent: str
    occurred_at: datetime
    expires_at: datetime | None
    session_id: str | None
    sandbox_id: uuid.UUID | None
    agent_id: str | None
    private: bool
    entities: list[dict[str, Any]]


_INDEX_COLUMNS = [_T.c[name] for name in IndexRow.__dataclass_fields__]


def index_rows(conn: Connection, where: Any, *, limit: int | None = None) -> list[IndexRow]:
    """Ledger rows matching ``where`` in id order, shaped for an index (vectors as lists)."""
    query = select(*_INDEX_COLUMNS).where(where).order_by(_T.c.id)
    if limit is not None:
        query = query.limit(limit)
    out = []
    for row in conn.execute(query).all():
        data = dict(row._mapping)
        data["embedding"] = [float(x) for x in data["embedding"]]
        out.append(IndexRow(**data))
    return out


def _record(row: Any) -> FragmentRecord:
    return FragmentRecord.model_validate(dict(row._mapping))


def _live(now: datetime) -> Any:
    return or_(_T.c.expires_at.is_(None), _T.c.expires_at > now)


class FragmentLedger:
    """Writes and reads one user's fragments; cross-user sweeping lives in ``cross_user``."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def ensure_profiles(self, user_ids: Iterable[str], *, join: Connection | None = None) -> None:
        """Create a default profile for each user seen for the first time, and hold it.

        The profiles are locked ``FOR KEY SHARE`` until the caller's transaction
        ends, so an erasure running at the same moment either finishes first
        (the profile is then created anew) or waits for this write and erases
        it too; it never fails another user's write in the same batch.
        """
        wanted = sorted(set(user_ids))
        if not wanted:
            return
        with self._db.transaction(join) as conn:
            for _ in range(3):
                conn.execute(
                    pg_insert(_PROFILE).on_conflict_do_nothing(), [{"user_id": u} for u in wanted]
                )
                held = conn.execute(
                    select(_PROFILE.c.user_id)
                    .where(_PROFILE.c.user_id.in_(wanted))
                    .with_for_update(key_share=True)
                ).scalars()
                if set(held) == set(wanted):
                    return
        raise ConcurrentModificationError("profiles kept disappearing during a write; retry")

    def insert(
        self, fragments: Sequence[NewFragment], *, join: Connection | None = None
    ) -> list[uuid.UUID]:
        """Store fragments in one transaction and return their ids.

        Raises :class:`UserNotFound` if a user has no profile (see
        :meth:`ensure_profiles`).
        """
        if not fragments:
            return []
        rows = [
            {
                "id": f.id,
                "user_id": f.user_id,
                "agent_id": f.agent_id,
                "private": f.private,
                "session_id": f.session_id,
                "sandbox_id": f.sandbox_id,
                "kind": f.kind,
                "policy": f.policy.value,
                "text": f.text,
                "index_text": f.index_text,
                "token_count": f.token_count,
                "entities": f.entities,
                "intent": f.intent,
                "confidence": f.confidence,
                "occurred_at": f.occurred_at,
                "expires_at": f.expires_at,
                "metadata": f.metadata,
                "embedding": list(f.embedding),
                "embedding_model": f.embedding_model,
            }
            for f in fragments
        ]
        with self._db.transaction(join, owner=fragments[0].user_id) as conn:
            conn.execute(_T.insert(), rows)
        return [f.id for f in fragments]

    def hydrate(
        self,
        scope: UserScope,
        ids: Sequence[uuid.UUID],
        *,
        now: datetime,
        implicit_ttl: timedelta,
    ) -> dict[uuid.UUID, FragmentRecord]:
        """The live fragments among ``ids``, marking them used.

        In the same statement, ``last_used_at`` becomes ``now`` and each
        IMPLICIT fragment's expiry restarts at ``now + implicit_ttl``.
        """
        if not ids:
            return {}
        with self._db.transaction() as conn:
            rows = conn.execute(
                update(_T)
                .where(_T.c.user_id == scope.user_id, _T.c.id.in_(list(ids)), _live(now))
                .values(
                    last_used_at=now,
                    expires_at=case(
                        (
                            and_(
                                _T.c.policy == LifecyclePolicy.IMPLICIT.value,
                                _T.c.expires_at.is_not(None),
                            ),
                            func.greatest(_T.c.expires_at, now + implicit_ttl),
                        ),
                        else_=_T.c.expires_at,
                    ),
                )
                .returning(*_RECORD_COLUMNS)
            ).all()
        return {r.id: _record(r) for r in rows}

    def get(
        self, scope: UserScope, fragment_id: uuid.UUID, *, now: datetime
    ) -> FragmentRecord | None:
        """One live fragment of the user, or ``None`` (no TTL renewal)."""
        with self._db.transaction() as conn:
            row = conn.execute(
                select(*_RECORD_COLUMNS).where(
                    _T.c.user_id == scope.user_id, _T.c.id == fragment_id, _live(now)
                )
            ).one_or_none()
        return None if row is None else _record(row)

    def list(
        self, scope: UserScope, *, now: datetime, limit: int = 100, offset: int = 0
    ) -> list[FragmentRecord]:
        """Live fragments of the user, newest first."""
        with self._db.transaction() as conn:
            rows = conn.execute(
                select(*_RECORD_COLUMNS)
                .where(_T.c.user_id == scope.user_id, _live(now))
                .order_by(_T.c.occurred_at.desc(), _T.c.id)
                .limit(limit)
                .offset(offset)
            ).all()
        return [_record(r) for r in rows]

    def candidate_ids(
        self,
        scope: UserScope,
        *,
        now: datetime,
        intents: Iterable[str] | None = None,
        occurred_after: datetime | None = None,
        occurred_before: datetime | None = None,
        session_id: str | None = None,
        limit: int = 2000,
    ) -> Sequence[uuid.UUID]:
        """Ids of the user's live fragments matching the filters (the pre-filter of a search)."""
        query = select(_T.c.id).where(_T.c.user_id == scope.user_id, _live(now))
        if intents is not None:
            query = query.where(_T.c.intent.in_(sorted(intents)))
        if occurred_after is not None:
            query = query.where(_T.c.occurred_at >= occurred_after)
        if occurred_before is not None:
            query = query.where(_T.c.occurred_at < occurred_before)
        if session_id is not None:
            query = query.where(_T.c.session_id == session_id)
        with self._db.transaction() as conn:
            return conn.execute(query.limit(limit)).scalars().all()

    def recent_texts(
        self, scope: UserScope, session_id: str, *, until: datetime, limit: int
    ) -> Sequence[str]:
        """The texts of the session's last ``limit`` fragments up to ``until``, oldest first."""
        with self._db.transaction() as conn:
            rows = conn.execute(
                select(_T.c.text)
                .where(
                    _T.c.user_id == scope.user_id,
                    _T.c.session_id == session_id,
                    _T.c.occurred_at <= until,
                )
                .order_by(_T.c.occurred_at.desc(), _T.c.created_at.desc())
                .limit(limit)
            ).scalars()
            return rows.all()[::-1]

    def count_sessions_since(self, scope: UserScope, since: datetime) -> int:
        """Distinct sessions of the user with a fragment since ``since``."""
        with self._db.transaction() as conn:
            return int(
                conn.execute(
                    select(func.count(func.distinct(_T.c.session_id))).where(
                        _T.c.user_id == scope.user_id, _T.c.occurred_at >= since
                    )
                ).scalar_one()
            )

    def delete(
        self, scope: UserScope, fragment_id: uuid.UUID, *, join: Connection | None = None
    ) -> bool:
        """Delete one fragment; returns whether it existed."""
        with self._db.transaction(join) as conn:
            n = conn.execute(
                delete(_T).where(_T.c.user_id == scope.user_id, _T.c.id == fragment_id)
            ).rowcount
        return bool(n)
