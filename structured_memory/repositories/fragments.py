"""The fragment ledger: every unstructured memory as a PostgreSQL row.

The ledger is the system of record of the unstructured track; search indexes
are derived from it. Every statement is confined to a :class:`UserScope` and
its visibility (``structured_memory.scoping``): expired rows, another agent's
private rows and another sandbox's rows are never returned, whether or not the
sweeper has removed them yet. A search reads its hits with
:meth:`FragmentLedger.hydrate` and marks those it returns
:meth:`~FragmentLedger.used`: each is renewed by its own renewal period
(``renew_days``, decided by ``policies.ttl``), deferred and batched
(``structured_memory.renewals``) unless its expiry is near. Hydration also
names the hits whose index context holds a turn expired since (``stale``):
their index still carries the expired turn's words until they are re-indexed.

:class:`FragmentRecord` is ``values.records``'s, re-exported here for one release.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Any, Final

from sqlalchemy import (
    ColumnElement,
    Connection,
    DateTime,
    Select,
    String,
    Text,
    Uuid,
    any_,
    bindparam,
    cast,
    delete,
    func,
    literal,
    or_,
    select,
    true,
    update,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, JSONPATH

from policies.errors import UserNotFound
from policies.lifecycle import LifecyclePolicy
from policies.scope import UserScope
from policies.ttl import FREQUENT_USER_WINDOW, TTLConfig, is_frequent
from structured_memory.database import Database
from structured_memory.models import (
    AuditKey,
    MemoryFact,
    MemoryFragment,
    PiiVaultEntry,
    UserProfile,
    table_of,
)
from structured_memory.packed_vector import PACKED_VECTOR, PackedVector
from structured_memory.renewals import URGENT_WITHIN, Renewals, renewal
from structured_memory.scoping import (
    Shape,
    bound_values,
    owned,
    owned_by,
    owned_by_any,
    shape_of,
    visible,
    visible_bound,
    visible_per_row,
    visible_text,
)
from values.records import FragmentRecord

__all__ = [
    "FragmentLedger",
    "FragmentRecord",
    "Hydrated",
    "IndexRow",
    "Neighbour",
    "NewFragment",
    "frequent_user",
    "frequent_users",
    "hold_profiles",
    "index_rows",
    "release_vault_entries",
    "require_user",
    "vault_ids_of",
    "visible_in_ledger",
]

_T = table_of(MemoryFragment)

visible_in_ledger = visible_text(_T)
"""What a scope may see of the ledger at ``now``, as SQL text over ``memory_fragment`` and
its parameters (:func:`~structured_memory.scoping.visible_text`): what the runtime hands
an index backend that reads the ledger itself (``unstructured_memory.index.pgvector``)."""

_LATEST: Final = (
    select(_T.c.id, _T.c.text)
    .where(
        owned_by(_T, bindparam("scope_user", type_=String)),
        _T.c.kind.in_(bindparam("kinds", expanding=True)),
    )
    .order_by(_T.c.occurred_at.desc(), _T.c.id)
    .limit(bindparam("latest"))
)
"""The user's ``latest`` most recent fragments of ``kinds`` (built once: each changed
instruction reads them)."""

_ESCAPE: Final = "/"


def _escaped(value: str) -> str:
    """``value`` for a ``LIKE`` pattern with :data:`_ESCAPE` (as SQLAlchemy's
    ``autoescape`` writes it): its ``%`` and ``_`` stand for themselves."""
    return (
        value.replace(_ESCAPE, _ESCAPE * 2).replace("%", _ESCAPE + "%").replace("_", _ESCAPE + "_")
    )


@lru_cache(maxsize=64)
def _naming(values: int) -> Select[Any]:
    """:meth:`FragmentLedger.naming` for ``values`` values (``held_<i>``, escaped; built
    once per count: every session end with a correction runs one).

    The rows are found first (through the user's index) and locked in id order after: asked
    as one ``ORDER BY id ... FOR UPDATE``, a planner whose statistics say the table is empty
    walks the whole primary key instead, reading every user's rows
    (``tests/test_query_plans.py``)."""

    def holding(name: str) -> ColumnElement[bool]:
        return _T.c.text.icontains(bindparam(name, type_=_T.c.text.type), escape=_ESCAPE)

    mine = owned_by(_T, bindparam("scope_user", type_=String))
    chosen = select(_T.c.id).where(
        mine,
        _T.c.kind.in_(bindparam("kinds", expanding=True)),
        or_(*(holding(f"held_{i}") for i in range(values))),
    )
    found = func.array(chosen.scalar_subquery())
    return (
        select(_T.c.id, _T.c.text, _T.c.entities)
        .where(mine, _T.c.id == any_(found))
        .order_by(_T.c.id)
        .with_for_update()
    )


_PROFILE = table_of(UserProfile)
_AUDIT_KEY = table_of(AuditKey)
_VAULT = table_of(PiiVaultEntry)
_FACT = table_of(MemoryFact)


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
    renew_days: int | None = None
    context_ids: tuple[uuid.UUID, ...] = ()
    entities: list[dict[str, Any]] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    session_id: str | None = None
    sandbox_id: uuid.UUID | None = None
    agent_id: str | None = None
    private: bool = False
    confidence: float = 1.0
    id: uuid.UUID = field(default_factory=uuid.uuid4)


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


# The write path's statements are built once: building one costs more than running it.
_USERS = bindparam("users", type_=ARRAY(String))
_HOLD_PROFILES = (
    select(_PROFILE.c.user_id, _AUDIT_KEY.c.key)
    .outerjoin(_AUDIT_KEY, owned_by(_AUDIT_KEY, _PROFILE.c.user_id))
    .where(owned_by_any(_PROFILE, _USERS))
    .order_by(_PROFILE.c.user_id)
    .with_for_update(of=_PROFILE, read=True, key_share=True)
)
_SESSION_COUNTS = (
    select(_T.c.user_id, func.count(func.distinct(_T.c.session_id)))
    .where(owned_by_any(_T, _USERS), _T.c.occurred_at >= bindparam("since"))
    .group_by(_T.c.user_id)
)
# the vectors go binary: formatting them as text cost more than the rest of a row
_INSERT = _T.insert().values(embedding=bindparam("packed_embedding", type_=PACKED_VECTOR))


def _context_expired(context_ids: Any, rows: Any, now: Any) -> Any:
    """Whether ``context_ids`` (a row's index context) holds a turn expired at ``now``; the
    turns looked at are those of every row of ``rows`` (a CTE or subquery with a
    ``context_ids`` column, the row's included). One deleted since was re-indexed away
    at once, by ``WritePath.forget``.

    The turns of all the rows are read in one lookup by primary key, the expiry tested
    outside the index condition: a generic plan cannot turn it into a scan of the
    user's rows or of the expiry index. A context holds only its row's user's turns.
    """
    turn = _T.alias("context_turn")
    expired = (
        select(
            func.coalesce(
                func.array_agg(turn.c.id).filter(turn.c.expires_at <= now),
                cast(literal("{}"), ARRAY(Uuid)),
            )
        )
        .where(turn.c.id.in_(select(func.unnest(rows.c.context_ids))))
        .scalar_subquery()
    )
    return context_ids.overlap(expired)


def _hydrate(shape: Shape) -> Select[Any]:
    """Rows by primary key first, then the scope's visibility: the planner cannot pick a
    scan of the user's rows (for a user with many, estimated like a small one). Each
    with whether its context expired (:func:`_context_expired`)."""
    by_id = (
        select(*_RECORD_COLUMNS, _T.c.context_ids)
        .where(_T.c.id == any_(bindparam("ids", type_=ARRAY(Uuid))))
        .cte("by_id")
        .prefix_with("MATERIALIZED")
    )
    now = bindparam("now", type_=DateTime(timezone=True))
    stale = _context_expired(by_id.c.context_ids, by_id, now)
    return select(*[by_id.c[c.name] for c in _RECORD_COLUMNS], stale.label("stale")).where(
        visible_bound(by_id, shape)
    )


_HYDRATE = {
    (agent, box): _hydrate((agent, box)) for agent in (False, True) for box in (False, True)
}


def hold_profiles(conn: Connection, user_ids: Iterable[str]) -> dict[str, bytes]:
    """Lock the users' profiles ``FOR KEY SHARE`` until the transaction ends, in user order,
    and return the audit keys those users already have (``audit.record_batch(keys=)``: the
    audit of the write needs no statement of its own to read them).

    Writers of one user never block each other (the lock is shared); an
    erasure of the user waits for them, or finishes first, and then this
    raises :class:`UserNotFound`: a write never brings an erased user back.
    Users are created only by ``profiles.ensure``.
    """
    wanted = sorted(set(user_ids))
    if not wanted:
        return {}
    rows = conn.execute(_HOLD_PROFILES, {"users": wanted}).all()
    held = {r.user_id for r in rows}
    missing = [u for u in wanted if u not in held]
    if missing:
        raise UserNotFound("no profile for this user; create it with profiles.ensure")
    return {r.user_id: bytes(r.key) for r in rows if r.key is not None}


@dataclass(frozen=True)
class Neighbour:
    """A fragment indexed with another's words (contextual indexing), to re-index."""

    id: uuid.UUID
    user_id: str
    agent_id: str | None
    private: bool
    sandbox_id: uuid.UUID | None
    session_id: str | None
    text: str
    occurred_at: datetime
    created_at: datetime


_NEIGHBOUR_COLUMNS = [_T.c[name] for name in Neighbour.__dataclass_fields__]


@dataclass(frozen=True)
class Hydrated:
    """The visible, live records of a search's hits, and which of them are ``stale``:
    indexed with the words of a turn that has expired since."""

    records: dict[uuid.UUID, FragmentRecord]
    stale: frozenset[uuid.UUID]


def vault_ids_of(metadata: Any) -> list[uuid.UUID]:
    """The vault ids a fragment's ``metadata["pii"]`` references."""
    refs = metadata.get("pii", []) if isinstance(metadata, dict) else []
    out = []
    for ref in refs if isinstance(refs, list) else []:
        try:
            out.append(uuid.UUID(str(ref.get("vault_id"))))
        except (AttributeError, ValueError):
            continue
    return out


_ANY_REFERENCE = cast(literal("$.** ? (@.vault_id == $id)"), JSONPATH)
"""An object anywhere in a JSON value whose ``vault_id`` is the variable ``id``."""


def release_vault_entries(
    conn: Connection, scope: UserScope, vault_ids: Iterable[uuid.UUID]
) -> int:
    """Delete those of ``vault_ids`` that nothing of the user references any more;
    returns how many.

    References: items of a fragment's ``metadata["pii"]``, and
    ``{"vault_id", "kind"}`` objects at any depth of a fact's value or of the
    profile's attributes (a SENSITIVE fact's value, the items of a masked
    leaf's ``"pii"``, the profile summary's references).
    """
    wanted = sorted(set(vault_ids))
    if not wanted:
        return 0
    # Lock first, check later: a writer holding an entry (``PiiVault.store`` returns it
    # locked) commits before this lock is granted, and the DELETE below, a later
    # statement, sees the reference it wrote. Entries are locked in the order writers
    # lock them (``PiiVault.lock_order``: kind, blind index), so neither deadlocks.
    locked = (
        conn.execute(
            select(_VAULT.c.id)
            .where(owned(_VAULT, scope), _VAULT.c.id.in_(wanted))
            .order_by(_VAULT.c.kind.collate("C"), _VAULT.c.blind_mac, _VAULT.c.id)
            .with_for_update()
        )
        .scalars()
        .all()
    )
    if not locked:
        return 0
    id_var = func.jsonb_build_object("id", func.cast(_VAULT.c.id, Text))
    by_fragment = select(_T.c.id).where(
        owned(_T, scope),
        _T.c["metadata"].op("@>")(
            func.jsonb_build_object(
                "pii",
                func.jsonb_build_array(
                    func.jsonb_build_object("vault_id", func.cast(_VAULT.c.id, Text))
                ),
            )
        ),
    )
    by_fact = select(_FACT.c.id).where(
        owned(_FACT, scope), func.jsonb_path_exists(_FACT.c.value, _ANY_REFERENCE, id_var)
    )
    by_profile = select(_PROFILE.c.user_id).where(
        owned(_PROFILE, scope),
        func.jsonb_path_exists(_PROFILE.c.attributes, _ANY_REFERENCE, id_var),
    )
    return conn.execute(
        delete(_VAULT).where(
            owned(_VAULT, scope),
            _VAULT.c.id.in_(locked),
            ~by_fragment.exists(),
            ~by_fact.exists(),
            ~by_profile.exists(),
        )
    ).rowcount


def require_user(conn: Connection, scope: UserScope) -> None:
    """Raise :class:`UserNotFound` unless the scope's user has a profile (a read that
    found nothing asks this, so an unknown user is told apart from an empty one)."""
    found = conn.execute(select(_PROFILE.c.user_id).where(owned(_PROFILE, scope))).first()
    if found is None:
        raise UserNotFound("no profile for this user; create it with profiles.ensure")


def frequent_user(conn: Connection, scope: UserScope, now: datetime, config: TTLConfig) -> bool:
    """Whether the user had enough sessions in the last 30 days to count as frequent."""
    sessions = conn.execute(
        select(func.count(func.distinct(_T.c.session_id))).where(
            owned(_T, scope), _T.c.occurred_at >= now - FREQUENT_USER_WINDOW
        )
    ).scalar_one()
    return is_frequent(int(sessions), config)


def frequent_users(
    conn: Connection, user_ids: Iterable[str], now: datetime, config: TTLConfig
) -> set[str]:
    """The users among ``user_ids`` that :func:`frequent_user` counts as frequent, in one
    statement."""
    wanted = sorted(set(user_ids))
    if not wanted:
        return set()
    rows = conn.execute(
        _SESSION_COUNTS, {"users": wanted, "since": now - FREQUENT_USER_WINDOW}
    ).all()
    counts: dict[str, int] = dict(rows)
    return {u for u in wanted if is_frequent(int(counts.get(u, 0)), config)}


def _recent_turns_many() -> Select[Any]:
    """The last turns of many sessions, each seen by its own reader (a lookup row: user,
    agent, sandbox, session, until), numbered by lookup."""
    q = (
        func.unnest(
            bindparam("users", type_=ARRAY(String)),
            bindparam("agents", type_=ARRAY(String)),
            bindparam("sandboxes", type_=ARRAY(Uuid)),
            bindparam("sessions", type_=ARRAY(String)),
            bindparam("untils", type_=ARRAY(DateTime(timezone=True))),
        )
        .table_valued(
            "user_id", "agent_id", "sandbox_id", "session_id", "until", with_ordinality="n"
        )
        .render_derived("q")
    )
    m = _T.alias("m")
    f = (
        select(m.c.id, m.c.text, m.c.occurred_at, m.c.created_at)
        .where(
            visible_per_row(m, q.c.user_id, q.c.agent_id, q.c.sandbox_id, bindparam("now")),
            m.c.session_id == q.c.session_id,
            m.c.occurred_at <= q.c.until,
        )
        .order_by(m.c.occurred_at.desc(), m.c.created_at.desc())
        .limit(bindparam("limit"))
        .lateral("f")
    )
    return (
        select(q.c.n, f.c.id, f.c.text)
        .select_from(q.join(f, true()))
        .order_by(q.c.n, f.c.occurred_at.desc(), f.c.created_at.desc())
    )


_RECENT_TURNS_MANY = _recent_turns_many()


class FragmentLedger:
    """Writes and reads one user's fragments; cross-user sweeping lives in ``cross_user``."""

    def __init__(self, db: Database, renewals: Renewals | None = None) -> None:
        self._db = db
        self.renewals = renewals or Renewals(db)
        """Uses recorded by :meth:`hydrate`, written in batches (started by the runtime)."""

    def insert(self, conn: Connection, fragments: Sequence[NewFragment]) -> list[uuid.UUID]:
        """Store fragments in the caller's transaction and return their ids.

        ``created_at`` follows the order of ``fragments`` (a microsecond apart), so turns
        written in one call keep their order where their ``occurred_at`` ties (the
        contexts of later turns are the session's last turns in that order).
        """
        if not fragments:
            return []
        base = datetime.now(UTC)
        rows = [
            {
                "id": f.id,
                "created_at": base + timedelta(microseconds=position),
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
                "renew_days": f.renew_days,
                "context_ids": list(f.context_ids),
                "metadata": f.metadata,
                "packed_embedding": PackedVector(f.embedding),
                "embedding_model": f.embedding_model,
            }
            for position, f in enumerate(fragments)
        ]
        conn.execute(_INSERT, rows)
        return [f.id for f in fragments]

    def hydrate(self, scope: UserScope, ids: Sequence[uuid.UUID], *, now: datetime) -> Hydrated:
        """The fragments among ``ids`` visible in ``scope`` at ``now``, and the stale ones
        among them (a read; see :meth:`used` for what a caller that returns them must do)."""
        if not ids:
            return Hydrated({}, frozenset())
        with self._db.reading() as conn:
            rows = conn.execute(
                _HYDRATE[shape_of(scope)], {"ids": list(ids), **bound_values(scope, now)}
            ).all()
        return Hydrated({r.id: _record(r) for r in rows}, frozenset(r.id for r in rows if r.stale))

    def used(self, scope: UserScope, records: Iterable[FragmentRecord], *, now: datetime) -> None:
        """Mark ``records`` used at ``now``: ``last_used_at`` becomes ``now`` and each
        renewable fragment's expiry moves to ``now`` plus its own renewal period, if
        that is later.

        Recorded in :attr:`renewals` and written shortly after, in a batch. A
        fragment expiring within :data:`~structured_memory.renewals.URGENT_WITHIN`
        is renewed at once, so no pending renewal ever races the sweep; that
        renewal locks rows that deletes and erasures also lock, in another order:
        a deadlock is retried (:meth:`Database.retrying`).
        """
        urgent: list[uuid.UUID] = []
        later: list[uuid.UUID] = []
        for r in records:
            soon = r.expires_at is not None and r.expires_at < now + URGENT_WITHIN
            (urgent if soon else later).append(r.id)
        self.renewals.record("fragment", scope.user_id, later, now)
        if urgent:
            self._db.retrying(lambda: self._renew_now(scope, sorted(urgent), now))

    def _renew_now(self, scope: UserScope, ids: list[uuid.UUID], now: datetime) -> None:
        with self._db.transaction() as conn:
            conn.execute(
                update(_T)
                .where(visible(_T, scope, now), _T.c.id.in_(ids))
                .values(last_used_at=now, expires_at=renewal(_T, now))
            )

    def get(
        self, scope: UserScope, fragment_id: uuid.UUID, *, now: datetime
    ) -> FragmentRecord | None:
        """One fragment visible in ``scope``, or ``None`` (no TTL renewal)."""
        with self._db.reading() as conn:
            row = conn.execute(
                select(*_RECORD_COLUMNS).where(visible(_T, scope, now), _T.c.id == fragment_id)
            ).one_or_none()
        return None if row is None else _record(row)

    def require_user(self, scope: UserScope) -> None:
        """Raise :class:`UserNotFound` unless the scope's user has a profile."""
        with self._db.reading() as conn:
            require_user(conn, scope)

    def list(
        self, scope: UserScope, *, now: datetime, limit: int = 100, offset: int = 0
    ) -> list[FragmentRecord]:
        """Fragments visible in ``scope``, newest first."""
        with self._db.reading() as conn:
            rows = conn.execute(
                select(*_RECORD_COLUMNS)
                .where(visible(_T, scope, now))
                .order_by(_T.c.occurred_at.desc(), _T.c.id)
                .limit(limit)
                .offset(offset)
            ).all()
            if not rows and offset == 0:
                require_user(conn, scope)
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
        """Ids of fragments visible in ``scope`` matching the filters (a search pre-filter)."""
        query = select(_T.c.id).where(visible(_T, scope, now))
        if intents is not None:
            query = query.where(_T.c.intent.in_(sorted(intents)))
        if occurred_after is not None:
            query = query.where(_T.c.occurred_at >= occurred_after)
        if occurred_before is not None:
            query = query.where(_T.c.occurred_at < occurred_before)
        if session_id is not None:
            query = query.where(_T.c.session_id == session_id)
        with self._db.reading() as conn:
            return conn.execute(query.limit(limit)).scalars().all()

    def referencing_vault(
        self, scope: UserScope, vault_ids: Iterable[uuid.UUID], *, now: datetime, limit: int
    ) -> Sequence[uuid.UUID]:
        """Ids of visible fragments whose PII came from one of ``vault_ids``, newest first."""
        wanted = [str(v) for v in vault_ids]
        if not wanted:
            return []
        refs = or_(
            *(_T.c["metadata"].op("@>")(literal({"pii": [{"vault_id": v}]}, JSONB)) for v in wanted)
        )
        with self._db.reading() as conn:
            return (
                conn.execute(
                    select(_T.c.id)
                    .where(visible(_T, scope, now), refs)
                    .order_by(_T.c.occurred_at.desc())
                    .limit(limit)
                )
                .scalars()
                .all()
            )

    def recent_turns(
        self,
        scope: UserScope,
        session_id: str,
        *,
        until: datetime,
        now: datetime,
        limit: int,
        before: Neighbour | None = None,
        join: Connection | None = None,
    ) -> Sequence[tuple[uuid.UUID, str]]:
        """Ids and texts of the session's last ``limit`` fragments visible in ``scope``
        that occurred up to ``until`` (written before ``before``, if given), oldest
        first; fragments expired at ``now`` are excluded."""
        query = select(_T.c.id, _T.c.text).where(
            visible(_T, scope, now), _T.c.session_id == session_id, _T.c.occurred_at <= until
        )
        if before is not None:
            query = query.where(_T.c.id != before.id, _T.c.created_at <= before.created_at)
        with self._db.transaction(join) as conn:
            rows = conn.execute(
                query.order_by(_T.c.occurred_at.desc(), _T.c.created_at.desc()).limit(limit)
            ).all()
        return [(r.id, r.text) for r in rows[::-1]]

    def recent_turns_many(
        self,
        conn: Connection,
        lookups: Sequence[tuple[UserScope, str, datetime]],
        *,
        now: datetime,
        limit: int,
    ) -> Sequence[Sequence[tuple[uuid.UUID, str]]]:
        """:meth:`recent_turns` of many ``(scope, session_id, until)`` at once, in one
        statement: each lookup's turns, oldest first."""
        if not lookups:
            return []
        rows = conn.execute(
            _RECENT_TURNS_MANY,
            {
                "users": [scope.user_id for scope, _, _ in lookups],
                "agents": [scope.agent_id for scope, _, _ in lookups],
                "sandboxes": [scope.sandbox_id for scope, _, _ in lookups],
                "sessions": [session_id for _, session_id, _ in lookups],
                "untils": [until for _, _, until in lookups],
                "now": now,
                "limit": limit,
            },
        ).all()
        out: list[list[tuple[uuid.UUID, str]]] = [[] for _ in lookups]
        for r in rows:
            out[r.n - 1].append((r.id, r.text))
        return [turns[::-1] for turns in out]

    def neighbours(
        self, conn: Connection, scope: UserScope, gone: Sequence[uuid.UUID]
    ) -> Sequence[Neighbour]:
        """The user's fragments whose index context drew on a fragment of ``gone``, locked."""
        if not gone:
            return []
        return self._neighbours(conn, scope, _T.c.context_ids.overlap(list(gone)))

    def stale(
        self, conn: Connection, scope: UserScope, ids: Sequence[uuid.UUID], *, now: datetime
    ) -> Sequence[Neighbour]:
        """The user's fragments among ``ids`` whose context holds a turn expired at ``now``,
        locked (one another transaction re-indexed meanwhile is no longer among them)."""
        if not ids:
            return []
        candidates = (
            select(_T.c.context_ids).where(owned(_T, scope), _T.c.id.in_(list(ids))).subquery()
        )
        return self._neighbours(
            conn, scope, _T.c.id.in_(list(ids)), _context_expired(_T.c.context_ids, candidates, now)
        )

    def _neighbours(self, conn: Connection, scope: UserScope, *where: Any) -> Sequence[Neighbour]:
        rows = conn.execute(
            select(*_NEIGHBOUR_COLUMNS)
            .where(owned(_T, scope), *where)
            .order_by(_T.c.id)
            .with_for_update()
        ).all()
        return [Neighbour(**dict(r._mapping)) for r in rows]

    def naming(
        self, conn: Connection, scope: UserScope, values: Sequence[str], kinds: Sequence[str]
    ) -> Sequence[tuple[uuid.UUID, str, Sequence[Any]]]:
        """``(id, text, entities)`` of the user's fragments of ``kinds`` whose text holds
        one of ``values`` (case ignored), locked for update."""
        if not values:
            return []
        params: dict[str, Any] = {"scope_user": scope.user_id, "kinds": list(kinds)}
        params |= {f"held_{i}": _escaped(v) for i, v in enumerate(values)}
        rows = conn.execute(_naming(len(values)), params).all()
        return [(r.id, r.text, list(r.entities)) for r in rows]

    def latest(
        self, conn: Connection, scope: UserScope, kinds: Sequence[str], *, limit: int
    ) -> Sequence[tuple[uuid.UUID, str]]:
        """``(id, text)`` of the user's ``limit`` most recent fragments of ``kinds``, read
        without a lock (:meth:`locked` takes the few a caller will change)."""
        params = {"scope_user": scope.user_id, "kinds": list(kinds), "latest": limit}
        return [(r.id, r.text) for r in conn.execute(_LATEST, params)]

    def locked(
        self, conn: Connection, scope: UserScope, ids: Sequence[uuid.UUID]
    ) -> Sequence[tuple[uuid.UUID, str, Sequence[Any]]]:
        """``(id, text, entities)`` of the user's fragments ``ids`` that still exist, locked
        for update, in id order."""
        if not ids:
            return []
        rows = conn.execute(
            select(_T.c.id, _T.c.text, _T.c.entities)
            .where(owned(_T, scope), _T.c.id.in_(list(ids)))
            .order_by(_T.c.id)
            .with_for_update()
        ).all()
        return [(r.id, r.text, list(r.entities)) for r in rows]

    def rewrite(
        self,
        conn: Connection,
        scope: UserScope,
        fragment_id: uuid.UUID,
        *,
        text: str,
        entities: Sequence[Any],
        index_text: str,
        embedding: Sequence[float],
    ) -> None:
        """Replace a fragment's text, entities, index text and vector (an amendment: the
        user corrected a value it names)."""
        conn.execute(
            update(_T)
            .where(owned(_T, scope), _T.c.id == fragment_id)
            .values(
                text=text,
                entities=[*entities],
                index_text=index_text,
                token_count=len(index_text.split()),
                embedding=list(embedding),
            )
        )

    def reindex(
        self,
        conn: Connection,
        scope: UserScope,
        fragment_id: uuid.UUID,
        *,
        index_text: str,
        embedding: Sequence[float],
        context_ids: Sequence[uuid.UUID],
    ) -> None:
        """Replace a fragment's index text, vector and context (its text stays)."""
        conn.execute(
            update(_T)
            .where(owned(_T, scope), _T.c.id == fragment_id)
            .values(
                index_text=index_text,
                token_count=len(index_text.split()),
                embedding=list(embedding),
                context_ids=list(context_ids),
            )
        )

    def delete(
        self, conn: Connection, scope: UserScope, fragment_id: uuid.UUID
    ) -> Sequence[uuid.UUID] | None:
        """Delete one fragment visible in ``scope`` (in the caller's transaction).

        Returns the vault ids its masked PII referenced, or ``None`` if there
        was no such fragment.
        """
        row = conn.execute(
            delete(_T)
            .where(visible(_T, scope, None), _T.c.id == fragment_id)
            .returning(_T.c["metadata"])
        ).one_or_none()
        return None if row is None else vault_ids_of(row[0])
