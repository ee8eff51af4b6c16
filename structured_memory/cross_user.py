"""Operations that span users, on purpose: PII lookup, key rotation, vault repair, the TTL
sweep and the vacuum after it, flagging large users' memories for the approximate index,
the daily confidence decay, and the read-only statistics of the ops dashboard (counts only).

Everything else in dualtrack is confined to one :class:`UserScope`; the
functions here are for operators, workers and identity resolution, and their
callers (the CLI, the ops API, the outbox worker) check the ops role before
calling them. Their statements run in :func:`cross_user_transaction`, which
marks them with the ``dualtrack_cross_user`` execution option: the only
statements on user tables allowed to lack the user predicate (a test checks).
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from functools import partial
from typing import Any

from sqlalchemy import (
    ARRAY,
    ColumnElement,
    Connection,
    Date,
    Row,
    Table,
    Text,
    and_,
    bindparam,
    cast,
    delete,
    func,
    literal,
    or_,
    select,
    text,
    update,
)
from sqlalchemy.dialects.postgresql import JSONB, JSONPATH

from policies.audit import AuditAction
from policies.confidence import (
    DAY,
    ConfidenceConfig,
    MemoryStatus,
    Standing,
    after_decay,
    decay_steps,
    decayed_through,
)
from policies.errors import DecryptionError
from policies.lifecycle import LifecyclePolicy
from policies.outbox import OutboxOp
from policies.scope import UserScope
from structured_memory.audit import record_many
from structured_memory.database import Database
from structured_memory.models import (
    AuditLog,
    Base,
    MemoryFact,
    MemoryFragment,
    PiiDataKey,
    PiiVaultEntry,
    SessionWatermark,
    UserBusinessLink,
    UserProfile,
    table_of,
)
from structured_memory.pii.cipher import PiiCipher, Sealed
from structured_memory.pii.fields import rewrite_references
from structured_memory.pii.vault import (
    MATCHING,
    aad_for,
    check_value,
    data_key,
    index_exactly,
    matching,
    open_entry,
    vault_kind,
)
from structured_memory.repositories.confidence import MemoryTable, status_entry
from structured_memory.repositories.fragments import IndexRow, index_rows, vault_ids_of
from structured_memory.scoping import live, owned_by

__all__ = [
    "CROSS_USER",
    "SWEPT",
    "USER_TABLES",
    "DayCount",
    "DecayReport",
    "ExpiringCount",
    "Forgotten",
    "IdleSession",
    "LevelCount",
    "PendingQueue",
    "RotationReport",
    "SweepReport",
    "VacuumedTable",
    "VaultRepairReport",
    "confidence_levels",
    "count_decay_due",
    "count_expired",
    "count_fragments",
    "count_unreadable",
    "count_vault_repairs",
    "cross_user_transaction",
    "daily_audit_counts",
    "decay_inferred",
    "expiring_per_day",
    "find_user_ids_by_pii",
    "flag_large_scopes",
    "fragments_for_index",
    "idle_sessions",
    "idle_users",
    "iter_fragment_users",
    "iter_fragments_for_index",
    "pending_confirmations",
    "pending_rotation",
    "renewals_per_day",
    "repair_vault",
    "rotate_keys",
    "sweep_expired",
    "vacuum_user_tables",
    "verification_states",
]

_T = table_of(PiiVaultEntry)
_KEY = table_of(PiiDataKey)
_FACT = table_of(MemoryFact)
_FRAGMENT = table_of(MemoryFragment)
_WATERMARK = table_of(SessionWatermark)
_PROFILE = table_of(UserProfile)
_LOG = table_of(AuditLog)
_LINK = table_of(UserBusinessLink)

CROSS_USER = "dualtrack_cross_user"
"""The execution option marking a statement as cross-user work."""


@contextlib.contextmanager
def cross_user_transaction(db: Database) -> Iterator[Connection]:
    """A transaction whose statements are marked as spanning users on purpose."""
    with db.transaction() as conn:
        yield conn.execution_options(**{CROSS_USER: True})


def find_user_ids_by_pii(db: Database, cipher: PiiCipher, kind: str, value: str) -> list[str]:
    """Ids of the users holding ``value`` (e.g. a phone number) in any spelling, by blind
    index only; :class:`InvalidField` for a value with nothing to look it up by."""
    kind = vault_kind(kind)
    value = check_value(kind, value)
    with cross_user_transaction(db) as conn:
        rows = conn.execute(
            select(_T.c.user_id).where(MATCHING).distinct().order_by(_T.c.user_id),
            matching(cipher, kind, value),
        ).all()
    return [r.user_id for r in rows]


def pending_rotation(db: Database, cipher: PiiCipher) -> int:
    """Data keys wrapped by a ring key other than the active one, plus vault entries
    still in the ring format (written before revision 0004)."""
    stale_keys = select(func.count()).where(_KEY.c.key_id != cipher.ring.active.key_id)
    ring_format = select(func.count()).where(_T.c.dek.is_(False))
    with cross_user_transaction(db) as conn:
        return int(
            conn.execute(
                select(stale_keys.scalar_subquery() + ring_format.scalar_subquery())
            ).scalar_one()
        )


def count_unreadable(db: Database) -> int:
    """Vault entries that rotation or repair found unreadable (tampered, or under a key
    the ring no longer holds): marked themselves, or their user's data key."""
    key_unreadable = (
        select(_KEY.c.user_id)
        .where(owned_by(_KEY, _T.c.user_id), _KEY.c.unreadable_since.is_not(None))
        .exists()
    )
    with cross_user_transaction(db) as conn:
        return int(
            conn.execute(
                select(func.count()).where(
                    or_(_T.c.unreadable_since.is_not(None), and_(_T.c.dek, key_unreadable))
                )
            ).scalar_one()
        )


@dataclass(frozen=True)
class RotationReport:
    """What a rotation run did; what it could not read is named by id, never by value."""

    rewrapped: int
    """Data keys re-wrapped under the active ring key."""
    migrated: int
    """Entries moved from the ring format to the envelope format."""
    failed: tuple[uuid.UUID, ...]
    """Vault entries that did not decrypt (or whose user's data key did not), left as they were."""
    failed_data_keys: tuple[str, ...]
    """Users whose data key did not unwrap, left as it was."""
    remaining: int
    """Still pending after the run: the failures, and rows other transactions held locked."""


def _unreadable(table: Table) -> ColumnElement[datetime]:
    return func.coalesce(table.c.unreadable_since, func.now())


def rotate_keys(
    db: Database,
    cipher: PiiCipher,
    *,
    batch_size: int = 500,
    progress: Callable[[int], None] | None = None,
) -> RotationReport:
    """Re-wrap every data key under the active ring key, then move the vault entries of
    the ring format to the envelope format. Values already in the envelope format are
    not touched.

    Each batch is one transaction over rows locked ``FOR UPDATE SKIP LOCKED``,
    so rotation runs beside live traffic and can be interrupted and resumed.
    Each row is visited once per run: one that cannot be read (tampered, or
    under a key the ring no longer holds, after one re-read of a key file) is
    skipped, marked ``unreadable_since`` (which the health check counts) and
    named in the report; the others rotate. ``progress`` gets the rows visited
    per batch.
    """
    rewrapped, failed_keys = _rewrap_data_keys(db, cipher, batch_size, progress)
    migrated, failed = _move_to_envelope(db, cipher, batch_size, progress)
    return RotationReport(
        rewrapped=rewrapped,
        migrated=migrated,
        failed=tuple(failed),
        failed_data_keys=tuple(failed_keys),
        remaining=pending_rotation(db, cipher),
    )


_Progress = Callable[[int], None] | None


def _rewrap_data_keys(
    db: Database, cipher: PiiCipher, batch_size: int, progress: _Progress
) -> tuple[int, list[str]]:
    active = cipher.ring.active.key_id
    rewrapped, failed_keys = 0, list[str]()
    last_user: str | None = None
    while True:
        visited, failed = db.retrying(
            partial(_rewrap_batch, db, cipher, active, last_user, batch_size)
        )
        if not visited:
            return rewrapped, failed_keys
        rewrapped += len(visited) - len(failed)
        failed_keys += failed
        last_user = visited[-1]
        if progress is not None:
            progress(len(visited))


def _rewrap_batch(
    db: Database, cipher: PiiCipher, active: str, after: str | None, batch_size: int
) -> tuple[list[str], list[str]]:
    """Re-wrap one batch of data keys in one transaction; the users visited and those
    whose key failed to unwrap."""
    query = select(_KEY).where(_KEY.c.key_id != active)
    if after is not None:
        query = query.where(_KEY.c.user_id > after)
    failed = []
    with cross_user_transaction(db) as conn:
        rows = conn.execute(
            query.order_by(_KEY.c.user_id).limit(batch_size).with_for_update(skip_locked=True)
        ).all()
        for row in rows:
            mine = owned_by(_KEY, row.user_id)
            try:
                key = cipher.unwrap(
                    Sealed(row.key_id, bytes(row.nonce), bytes(row.wrapped)), row.user_id
                )
            except DecryptionError:
                conn.execute(update(_KEY).where(mine).values(unreadable_since=_unreadable(_KEY)))
                failed.append(row.user_id)
                continue
            wrapped = cipher.wrap(key, row.user_id)
            conn.execute(
                update(_KEY)
                .where(mine)
                .values(
                    key_id=wrapped.key_id,
                    nonce=wrapped.nonce,
                    wrapped=wrapped.ciphertext,
                    unreadable_since=None,
                    updated_at=func.now(),
                )
            )
    return [r.user_id for r in rows], failed


def _move_to_envelope(
    db: Database, cipher: PiiCipher, batch_size: int, progress: _Progress
) -> tuple[int, list[uuid.UUID]]:
    migrated, failed_entries = 0, list[uuid.UUID]()
    last_id: uuid.UUID | None = None
    while True:
        visited, failed = db.retrying(partial(_envelope_batch, db, cipher, last_id, batch_size))
        if not visited:
            return migrated, failed_entries
        migrated += len(visited) - len(failed)
        failed_entries += failed
        last_id = visited[-1]
        if progress is not None:
            progress(len(visited))


def _envelope_batch(
    db: Database, cipher: PiiCipher, after: uuid.UUID | None, batch_size: int
) -> tuple[list[uuid.UUID], list[uuid.UUID]]:
    """Move one batch of ring-format entries in one transaction; the entries visited
    and those that failed."""
    query = select(_T).where(_T.c.dek.is_(False))
    if after is not None:
        query = query.where(_T.c.id > after)
    data_keys: dict[str, bytes | None] = {}
    with cross_user_transaction(db) as conn:
        rows = conn.execute(
            query.order_by(_T.c.id).limit(batch_size).with_for_update(skip_locked=True)
        ).all()
        failed = [r.id for r in rows if not _to_envelope(conn, cipher, r, data_keys)]
    return [r.id for r in rows], failed


def _to_envelope(
    conn: Connection, cipher: PiiCipher, row: Row[Any], data_keys: dict[str, bytes | None]
) -> bool:
    """Re-encrypt one ring-format entry with its user's data key; False if unreadable."""
    aad = aad_for(row.id, row.user_id, row.kind)
    mine = and_(_T.c.id == row.id, owned_by(_T, row.user_id))
    try:
        clear = cipher.open(Sealed(row.key_id, bytes(row.nonce), bytes(row.ciphertext)), aad=aad)
        if row.user_id not in data_keys:
            data_keys[row.user_id] = None  # stays None if the data key fails to unwrap
            data_keys[row.user_id] = data_key(conn, cipher, row.user_id, create=True)
        key = data_keys[row.user_id]
        if key is None:
            raise DecryptionError("the user's PII data key did not unwrap")
    except DecryptionError:
        conn.execute(update(_T).where(mine).values(unreadable_since=_unreadable(_T)))
        return False
    sealed = cipher.seal(clear, aad=aad, data_key=key)
    conn.execute(
        update(_T)
        .where(mine)
        .values(
            dek=True,
            key_id=None,
            nonce=sealed.nonce,
            ciphertext=sealed.ciphertext,
            unreadable_since=None,
            updated_at=func.now(),
        )
    )
    if row.match_mac is None:
        index_exactly(conn, cipher, row.user_id, [(row, clear)])
    return True


@dataclass(frozen=True)
class VaultRepairReport:
    """What ``repair_vault`` did, in counts and entry ids (never values)."""

    users: int
    """Users whose entries were examined (those with entries not indexed exactly)."""
    merged: int
    """Duplicate entries (of one exact value) deleted, their references moved to the entry
    kept."""
    references: int
    """Fragments and facts whose vault references were rewritten."""
    indexed: int
    """Entries indexed exactly (``blind_mac`` of the value, ``match_mac`` of its normal
    form)."""
    failed: tuple[uuid.UUID, ...]
    """Entries that did not decrypt, left as they were (and marked unreadable)."""


def count_vault_repairs(db: Database) -> int:
    """Users holding vault entries not indexed exactly (``match_mac`` NULL: written before
    revision 0014), what ``repair_vault`` visits."""
    with cross_user_transaction(db) as conn:
        return int(
            conn.execute(
                select(func.count(_T.c.user_id.distinct())).where(_T.c.match_mac.is_(None))
            ).scalar_one()
        )


def repair_vault(
    db: Database, cipher: PiiCipher, *, progress: Callable[[int], None] | None = None
) -> VaultRepairReport:
    """Merge duplicate vault entries and index every readable entry exactly.

    Visits each user holding entries not indexed exactly (written before
    revision 0014, or before 0004, when concurrent stores could duplicate a
    value), one transaction per user: decrypts the user's entries, groups them
    by kind and exact value (two spellings of one number stay two entries),
    keeps one per group (the one already indexed exactly, else one with a
    ``blind_mac``, else the oldest), rewrites references to the others (items
    of ``memory_fragment.metadata["pii"]`` and SENSITIVE fact values
    ``{"vault_id", "kind"}``) to it, deletes the others and indexes the one
    kept (:func:`~structured_memory.pii.vault.index_exactly`). Entries that do
    not decrypt are marked unreadable and left.
    Idempotent, and safe beside live traffic: the user's entries are locked
    first, and a store keeps the entry it returns locked until its reference
    is committed. ``progress`` gets 1 per user.
    """
    users = merged = references = indexed = 0
    failed: list[uuid.UUID] = []
    last: str | None = None
    while True:
        query = select(_T.c.user_id).where(_T.c.match_mac.is_(None)).distinct()
        if last is not None:
            query = query.where(_T.c.user_id > last)
        with cross_user_transaction(db) as conn:
            batch = list(conn.execute(query.order_by(_T.c.user_id).limit(100)).scalars())
        if not batch:
            break
        for user_id in batch:
            result = db.retrying(partial(_repair_user, db, cipher, user_id))
            users += 1
            merged += result.merged
            references += result.references
            indexed += result.indexed
            failed += result.failed
            if progress is not None:
                progress(1)
        last = batch[-1]
    return VaultRepairReport(users, merged, references, indexed, tuple(failed))


def _repair_user(db: Database, cipher: PiiCipher, user_id: str) -> VaultRepairReport:
    """Repair one user's entries in one transaction."""
    with cross_user_transaction(db) as conn:
        return _repair_user_in(conn, cipher, user_id)


def _repair_user_in(conn: Connection, cipher: PiiCipher, user_id: str) -> VaultRepairReport:
    rows = conn.execute(
        select(_T).where(owned_by(_T, user_id)).order_by(_T.c.created_at, _T.c.id).with_for_update()
    ).all()
    key: bytes | None = None
    if any(r.dek for r in rows):
        try:
            key = data_key(conn, cipher, user_id, create=False)
        except DecryptionError:
            conn.execute(
                update(_KEY)
                .where(owned_by(_KEY, user_id))
                .values(unreadable_since=_unreadable(_KEY))
            )
    groups: dict[tuple[str, str], list[Row[Any]]] = {}
    failed: list[uuid.UUID] = []
    for row in rows:
        mine = and_(_T.c.id == row.id, owned_by(_T, user_id))
        try:
            clear = open_entry(cipher, row, key)
        except DecryptionError:
            conn.execute(update(_T).where(mine).values(unreadable_since=_unreadable(_T)))
            failed.append(row.id)
            continue
        if row.unreadable_since is not None:
            conn.execute(update(_T).where(mine).values(unreadable_since=None))
        groups.setdefault((row.kind, clear), []).append(row)
    moved: dict[str, str] = {}
    unindexed: list[tuple[Any, str]] = []
    for (_, clear), members in groups.items():
        keep = next(
            (m for m in members if m.match_mac is not None),
            next((m for m in members if m.blind_mac is not None), members[0]),
        )
        drop = [m.id for m in members if m is not keep]
        if drop:
            conn.execute(delete(_T).where(owned_by(_T, user_id), _T.c.id.in_(drop)))
            moved.update({str(d): str(keep.id) for d in drop})
        if keep.match_mac is None:
            unindexed.append((keep, clear))
    indexed = len(index_exactly(conn, cipher, user_id, unindexed))
    references = _move_references(conn, user_id, moved) if moved else 0
    return VaultRepairReport(1, len(moved), references, indexed, tuple(failed))


def _move_references(conn: Connection, user_id: str, moved: dict[str, str]) -> int:
    """Point the user's references at the entries kept; how many rows changed.

    References: items of fragments' ``metadata["pii"]``, and ``{"vault_id",
    "kind"}`` objects at any depth of fact values and profile attributes (a
    rewritten fact or profile gets a new ``version``).
    """
    changed = 0
    fragments = conn.execute(
        select(_FRAGMENT.c.id, _FRAGMENT.c["metadata"]["pii"].label("pii")).where(
            owned_by(_FRAGMENT, user_id),
            func.jsonb_typeof(_FRAGMENT.c["metadata"]["pii"]) == "array",
        )
    ).all()
    for fragment in fragments:
        refs: list[Any] = []
        for item in fragment.pii:
            ref = item
            if isinstance(item, dict) and item.get("vault_id") in moved:
                ref = {**item, "vault_id": moved[item["vault_id"]]}
            if ref not in refs:
                refs.append(ref)
        if refs != fragment.pii:
            conn.execute(
                update(_FRAGMENT)
                .where(_FRAGMENT.c.id == fragment.id, owned_by(_FRAGMENT, user_id))
                .values(
                    {
                        _FRAGMENT.c["metadata"]: func.jsonb_set(
                            _FRAGMENT.c["metadata"],
                            literal(["pii"], ARRAY(Text)),
                            cast(refs, JSONB),
                        )
                    }
                )
            )
            changed += 1
    holds_reference = cast(literal("$.**.vault_id"), JSONPATH)
    for table, column, row_id in (
        (_FACT, _FACT.c.value, _FACT.c.id),
        (_PROFILE, _PROFILE.c.attributes, _PROFILE.c.user_id),
    ):
        rows = conn.execute(
            select(row_id.label("row_id"), column.label("doc"))
            .where(owned_by(table, user_id), func.jsonb_path_exists(column, holds_reference))
            .with_for_update()
        ).all()
        for row in rows:
            doc = rewrite_references(row.doc, moved)
            if doc != row.doc:
                conn.execute(
                    update(table)
                    .where(row_id == row.row_id, owned_by(table, user_id))
                    .values(
                        {
                            column: doc,
                            table.c.version: table.c.version + 1,
                            table.c.updated_at: func.now(),
                        }
                    )
                )
                changed += 1
    return changed


@dataclass(frozen=True)
class VacuumedTable:
    """A user table :func:`vacuum_user_tables` vacuumed."""

    table: str
    dead_tuples: int
    """Its ``pg_stat_user_tables.n_dead_tup`` before the vacuum."""


@dataclass(frozen=True)
class SweepReport:
    """What one sweep removed, the tables it vacuumed afterwards and what it decayed."""

    fragments: int
    facts: int
    vacuumed: tuple[VacuumedTable, ...] = field(default=())
    decay: DecayReport | None = None
    """The confidence decay run with the sweep (``MemoryClient.sweep``)."""
    sessions_ended: int = 0
    """Idle sessions the sweep ended (their turns summarised into records and merged into
    the profile) before removing anything (``MemoryClient.sweep``)."""
    flagged: int = 0
    """Memories of large users the sweep flagged for the approximate index
    (:func:`flag_large_scopes`, run by ``MemoryClient.sweep`` when the index asks)."""


Forgotten = Callable[[str, list[uuid.UUID], list[uuid.UUID]], None]
"""Called per user and batch with the fragment ids a sweep deleted and the vault ids
their PII referenced, in the sweep's transaction's aftermath."""


def sweep_expired(
    db: Database,
    now: datetime,
    *,
    batch_size: int = 1000,
    outbox: bool = False,
    progress: Callable[[int], None] | None = None,
    forgotten: Forgotten | None = None,
) -> SweepReport:
    """Delete fragments and facts whose ``expires_at`` has passed, in batches.

    Each batch is one transaction over rows locked with ``SKIP LOCKED``, so
    several sweepers can run at once. Reads never return expired rows; the
    sweep reclaims space and, through ``forgotten``, lets the caller release
    the swept fragments' vault entries and re-index the fragments that
    borrowed their words. With ``outbox``, each deleted fragment also queues
    its index delete in the same transaction, as each swept row gets a
    ``delete`` audit entry with :data:`SWEPT` details. ``progress`` gets the
    rows removed per batch.
    """
    removed = {"memory_fragment": 0, "memory_fact": 0}
    for table in removed:
        statement = (
            f"DELETE FROM {table} WHERE id IN (SELECT id FROM {table} "
            "WHERE expires_at <= :now ORDER BY expires_at LIMIT :n "
            "FOR UPDATE SKIP LOCKED) RETURNING id, user_id"
        )
        if table == "memory_fragment":
            statement = f"WITH gone AS ({statement}, metadata) "
            if outbox:
                statement += (
                    ", queued AS (INSERT INTO fragment_outbox (op, user_id, fragment_id) "
                    f"SELECT '{OutboxOp.DELETE.value}', user_id, id FROM gone) "
                )
            statement += "SELECT id, user_id, metadata FROM gone"
        while True:
            with cross_user_transaction(db) as conn:
                rows = conn.execute(text(statement), {"now": now, "n": batch_size}).all()
                _audit_swept(conn, MemoryTable(table.removeprefix("memory_")), rows)
            n = len(rows)
            removed[table] += n
            if forgotten is not None and table == "memory_fragment":
                by_user: dict[str, tuple[list[uuid.UUID], list[uuid.UUID]]] = {}
                for row in rows:
                    ids, vaults = by_user.setdefault(row.user_id, ([], []))
                    ids.append(row.id)
                    vaults += vault_ids_of(row.metadata)
                for user, (ids, vaults) in by_user.items():
                    forgotten(user, ids, vaults)
            if progress is not None and n:
                progress(n)
            if n < batch_size:
                break
    return SweepReport(fragments=removed["memory_fragment"], facts=removed["memory_fact"])


SWEPT = {"cause": "expired"}
"""The details that mark a ``delete`` audit entry as the sweep's."""


def _audit_swept(conn: Connection, kind: MemoryTable, rows: Sequence[Any]) -> None:
    """One ``delete`` entry per swept row, ``cause: expired`` (what the dashboard counts)."""
    by_user: dict[str, list[tuple[uuid.UUID | None, dict[str, Any] | None]]] = {}
    for row in rows:
        by_user.setdefault(row.user_id, []).append((row.id, {"kind": kind.value, **SWEPT}))
    for user_id in sorted(by_user):
        record_many(conn, UserScope(user_id), AuditAction.DELETE, by_user[user_id])


def flag_large_scopes(
    db: Database, *, threshold: int, batch_size: int = 1000, progress: _Progress = None
) -> int:
    """Flag ``ann`` the memories of every user holding more than ``threshold`` of them
    (every row: expired, private or in a sandbox too); returns how many were flagged.

    A flagged row enters the pgvector HNSW index (partial on ``ann``), which is
    thus maintained here, off the write path. Each batch is one transaction
    over up to ``batch_size`` of one user's rows not flagged yet, locked with
    ``SKIP LOCKED`` (a row busy now waits for the next run): idempotent, and
    safe beside writes and other sweepers. Rows written afterwards stay
    unflagged until the next run; a large scope's search reads those exactly,
    so nothing is missed meanwhile. ``progress`` gets the rows per batch.
    """
    with cross_user_transaction(db) as conn:
        users = list(
            conn.execute(
                text(
                    "SELECT user_id FROM memory_fragment GROUP BY user_id "
                    "HAVING count(*) > :threshold AND bool_or(NOT ann) ORDER BY user_id"
                ),
                {"threshold": threshold},
            ).scalars()
        )
    flagged = 0
    for user_id in users:
        while True:
            with cross_user_transaction(db) as conn:
                n = conn.execute(
                    text(
                        "UPDATE memory_fragment SET ann = true WHERE user_id = :user_id "
                        "AND id IN (SELECT id FROM memory_fragment WHERE user_id = :user_id "
                        "AND NOT ann LIMIT :n FOR UPDATE SKIP LOCKED)"
                    ),
                    {"user_id": user_id, "n": batch_size},
                ).rowcount
            flagged += n
            if progress is not None and n:
                progress(n)
            if n < batch_size:
                break
    return flagged


USER_TABLES = [t.name for t in Base.metadata.sorted_tables if "user_id" in t.c]
"""The tables holding user data (those with a ``user_id`` column)."""


def vacuum_user_tables(db: Database) -> list[VacuumedTable]:
    """``VACUUM (ANALYZE)`` every user table; the tables, with their dead tuples before.

    Erasures, deletes and sweeps leave the old rows in the heap as dead
    tuples; VACUUM marks their space free for reuse (it does not overwrite it:
    see "Erasure" in the README) and removes their index entries. Every user
    table is vacuumed, not only those ``pg_stat_user_tables.n_dead_tup`` shows
    dead tuples in: an erasure's own vacuum
    (:mod:`structured_memory.erasure_vacuum`) prunes the heap without the
    indexes and leaves that count at zero, and the count reaches the statistics
    up to a second after a commit. A table with nothing to remove costs a scan
    of its pages not yet all-visible. VACUUM cannot run in a transaction: this
    runs on an autocommit connection, without the statement timeout, and takes
    only locks that let reads and writes go on.
    """
    options = {"isolation_level": "AUTOCOMMIT", CROSS_USER: True}
    with Database(db.engine.execution_options(**options)).transaction() as conn:
        rows = conn.execute(
            text(
                "SELECT relname, n_dead_tup FROM pg_stat_user_tables "
                "WHERE schemaname = current_schema() AND relname = ANY(:tables) "
                "ORDER BY relname"
            ),
            {"tables": USER_TABLES},
        ).all()
        conn.execute(text("SET statement_timeout = 0"))
        try:
            for row in rows:
                name = conn.dialect.identifier_preparer.quote(row.relname)
                conn.execute(text(f"VACUUM (ANALYZE) {name}"))
        finally:
            conn.execute(text("RESET statement_timeout"))
    return [VacuumedTable(r.relname, int(r.n_dead_tup)) for r in rows]


def count_expired(db: Database, now: datetime) -> int:
    """Fragments and facts past their expiry, not yet swept."""
    with cross_user_transaction(db) as conn:
        return int(
            conn.execute(
                text(
                    "SELECT (SELECT count(*) FROM memory_fragment WHERE expires_at <= :now) + "
                    "(SELECT count(*) FROM memory_fact WHERE expires_at <= :now)"
                ),
                {"now": now},
            ).scalar_one()
        )


def fragments_for_index(db: Database, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, IndexRow]:
    """The ledger rows among ``ids`` that still exist (the ids of one outbox batch)."""
    if not ids:
        return {}
    with cross_user_transaction(db) as conn:
        return {r.id: r for r in index_rows(conn, _FRAGMENT.c.id.in_(list(ids)))}


def iter_fragments_for_index(db: Database, *, batch_size: int = 500) -> Iterator[list[IndexRow]]:
    """Every ledger row, in id order, a batch per transaction (for ``dualtrack reindex``)."""
    last: uuid.UUID | None = None
    while True:
        with cross_user_transaction(db) as conn:
            where = _FRAGMENT.c.id > last if last is not None else _FRAGMENT.c.id.is_not(None)
            rows = index_rows(conn, where, limit=batch_size)
        if not rows:
            return
        yield rows
        last = rows[-1].id


def iter_fragment_users(db: Database, *, batch_size: int = 1000) -> Iterator[list[str]]:
    """Every user holding fragments, in user id order, a batch per transaction (for
    ``dualtrack retokenise``, which then works on each user in that user's scope)."""
    last: str | None = None
    while True:
        query = select(_FRAGMENT.c.user_id).distinct()
        if last is not None:
            query = query.where(_FRAGMENT.c.user_id > last)
        with cross_user_transaction(db) as conn:
            users = list(
                conn.execute(query.order_by(_FRAGMENT.c.user_id).limit(batch_size)).scalars()
            )
        if not users:
            return
        yield users
        last = users[-1]


def count_fragments(db: Database) -> int:
    """How many fragments the ledger holds (all users)."""
    with cross_user_transaction(db) as conn:
        return int(conn.execute(select(func.count()).select_from(_FRAGMENT)).scalar_one())


@dataclass(frozen=True)
class IdleSession:
    """A session not ended whose last fragment (or, with none left, last change) is older
    than the idle timeout; ``agent_id`` is the agent that last added turns to it."""

    user_id: str
    session_id: str
    agent_id: str | None


def idle_sessions(db: Database, cutoff: datetime, *, limit: int = 1000) -> list[IdleSession]:
    """Sessions not ended whose last activity is before ``cutoff``, the longest idle first.

    Activity: the newest fragment of the session (a turn, a record), else the session
    row's last change.
    """
    last = (
        select(func.max(_FRAGMENT.c.created_at))
        .where(
            owned_by(_FRAGMENT, _WATERMARK.c.user_id),
            _FRAGMENT.c.session_id == _WATERMARK.c.session_id,
        )
        .scalar_subquery()
    )
    active = func.coalesce(last, _WATERMARK.c.updated_at)
    with cross_user_transaction(db) as conn:
        rows = conn.execute(
            select(_WATERMARK.c.user_id, _WATERMARK.c.session_id, _WATERMARK.c.agent_id)
            .where(_WATERMARK.c.ended_at.is_(None), _WATERMARK.c.updated_at < cutoff)
            .where(active < cutoff)
            .order_by(active)
            .limit(limit)
        ).all()
    return [IdleSession(r.user_id, r.session_id, r.agent_id) for r in rows]


def idle_users(db: Database, since: datetime) -> list[str]:
    """Users whose fragments were all last written or used before ``since``."""
    last = func.max(func.greatest(_FRAGMENT.c.last_used_at, _FRAGMENT.c.created_at))
    with cross_user_transaction(db) as conn:
        rows = conn.execute(
            select(_FRAGMENT.c.user_id).group_by(_FRAGMENT.c.user_id).having(last < since)
        ).scalars()
        return list(rows)


@dataclass(frozen=True)
class DecayReport:
    """What one decay run did."""

    decayed: int
    """Inferred memories whose confidence decayed."""
    pending: int
    """Of those, how many fell below the threshold and became ``pending_confirmation``."""


def _decay_due(table: Table, now: datetime, config: ConfidenceConfig) -> ColumnElement[bool]:
    """Rows at least one decay step is due on (``policies.confidence.decay_steps`` >= 1)."""
    anchor = func.greatest(
        table.c.last_used_at + func.make_interval(0, 0, 0, config.decay_after_days),
        table.c.last_decayed_at,
    )
    due = [
        table.c.policy == LifecyclePolicy.IMPLICIT.value,
        table.c.status == MemoryStatus.ACTIVE.value,
        live(table, now),
        anchor <= now - DAY,
    ]
    if table is _FRAGMENT:
        due.append(table.c.renew_days >= config.decay_min_renew_days)
    return and_(*due)


def count_decay_due(db: Database, now: datetime, config: ConfidenceConfig) -> int:
    """Inferred memories (all users) a decay at ``now`` would lower."""
    with cross_user_transaction(db) as conn:
        return sum(
            int(conn.execute(select(func.count()).where(_decay_due(t, now, config))).scalar_one())
            for t in (_FRAGMENT, _FACT)
        )


def decay_inferred(
    db: Database,
    now: datetime,
    config: ConfidenceConfig,
    *,
    batch_size: int = 1000,
    progress: Callable[[int], None] | None = None,
) -> DecayReport:
    """Apply the daily decay (``policies.confidence``) to every user's inferred memories:
    IMPLICIT fragments renewed by at least ``decay_min_renew_days`` (a frequent user's) and
    IMPLICIT facts, active, live and unused for over ``decay_after_days``.

    Idempotent per day: each row's ``last_decayed_at`` watermark advances by the
    whole days applied. Batches of rows locked ``FOR UPDATE SKIP LOCKED``, one
    transaction each; each decayed memory gets a ``decay`` audit entry, each one
    moved to pending a ``status_change`` entry. ``progress`` gets the rows per batch.
    """
    decayed = pending = 0
    for kind, table in ((MemoryTable.FRAGMENT, _FRAGMENT), (MemoryTable.FACT, _FACT)):
        last: uuid.UUID | None = None
        while True:
            query = (
                select(
                    table.c.id,
                    table.c.user_id,
                    table.c.confidence,
                    table.c.status,
                    table.c.last_used_at,
                    table.c.last_decayed_at,
                )
                .where(_decay_due(table, now, config))
                .order_by(table.c.id)
                .limit(batch_size)
                .with_for_update(skip_locked=True)
            )
            if last is not None:
                query = query.where(table.c.id > last)
            with cross_user_transaction(db) as conn:
                rows = conn.execute(query).all()
                if rows:
                    last = rows[-1].id
                    n, moved = _decay_batch(conn, kind, rows, now, config)
                    decayed, pending = decayed + n, pending + moved
            if progress is not None and rows:
                progress(len(rows))
            if len(rows) < batch_size:
                break
    return DecayReport(decayed=decayed, pending=pending)


def _decay_batch(
    conn: Connection,
    kind: MemoryTable,
    rows: Sequence[Any],
    now: datetime,
    config: ConfidenceConfig,
) -> tuple[int, int]:
    """Decay one batch of locked rows and audit it; (decayed, moved to pending)."""
    table = _FRAGMENT if kind is MemoryTable.FRAGMENT else _FACT
    changes: list[dict[str, Any]] = []
    decays: dict[str, list[tuple[uuid.UUID | None, dict[str, Any] | None]]] = {}
    moves: dict[str, list[tuple[uuid.UUID | None, dict[str, Any] | None]]] = {}
    for r in rows:
        steps = decay_steps(r.last_used_at, r.last_decayed_at, now, config)
        before = Standing(float(r.confidence), MemoryStatus(r.status))
        after = after_decay(before, steps, config)
        if steps <= 0 or after == before:
            continue
        changes.append(
            {
                "b_id": r.id,
                "b_confidence": after.confidence,
                "b_status": after.status.value,
                "b_through": decayed_through(r.last_used_at, r.last_decayed_at, steps, config),
            }
        )
        decays.setdefault(r.user_id, []).append(
            (
                r.id,
                {
                    "kind": kind.value,
                    "steps": steps,
                    "before": round(before.confidence, 6),
                    "after": round(after.confidence, 6),
                },
            )
        )
        if after.status is not before.status:
            moves.setdefault(r.user_id, []).append(
                (r.id, status_entry(kind, before, after, AuditAction.DECAY.value))
            )
    if not changes:
        return 0, 0
    values: dict[str, Any] = {
        "confidence": bindparam("b_confidence"),
        "status": bindparam("b_status"),
        "last_decayed_at": bindparam("b_through"),
    }
    if kind is MemoryTable.FACT:
        values["version"] = table.c.version + 1
    conn.execute(update(table).where(table.c.id == bindparam("b_id")).values(**values), changes)
    for user_id in sorted(decays):
        scope = UserScope(user_id)
        record_many(conn, scope, AuditAction.DECAY, decays[user_id])
        if user_id in moves:
            record_many(conn, scope, AuditAction.STATUS_CHANGE, moves[user_id])
    return len(changes), sum(len(m) for m in moves.values())


# -- statistics for the ops dashboard (read-only, across users) ---------------------------


def _utc_day(column: ColumnElement[datetime]) -> ColumnElement[date]:
    """The UTC calendar day of a ``timestamptz`` column."""
    return cast(func.timezone("UTC", column), Date)


def _day_start(day: date) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


@dataclass(frozen=True)
class ExpiringCount:
    """How many live memories of one track (``fragment``, ``fact``) and policy expire on
    one UTC day."""

    day: date
    track: str
    policy: str
    count: int


def expiring_per_day(db: Database, now: datetime, days: int) -> list[ExpiringCount]:
    """Live memories of every user expiring after ``now`` and before the end of the UTC
    day ``days`` days from now, per day, track and policy (oldest day first)."""
    until = _day_start(now.astimezone(UTC).date() + timedelta(days=days + 1))
    out: list[ExpiringCount] = []
    with cross_user_transaction(db) as conn:
        for kind, table in ((MemoryTable.FRAGMENT, _FRAGMENT), (MemoryTable.FACT, _FACT)):
            day = _utc_day(table.c.expires_at).label("day")
            rows = conn.execute(
                select(day, table.c.policy, func.count().label("n"))
                .where(table.c.expires_at > now, table.c.expires_at < until)
                .group_by(day, table.c.policy)
            ).all()
            out += [ExpiringCount(r.day, kind.value, r.policy, int(r.n)) for r in rows]
    return sorted(out, key=lambda c: (c.day, c.track, c.policy))


@dataclass(frozen=True)
class LevelCount:
    """How many live memories of one track and status have a confidence in bucket
    ``bucket`` (``[bucket/n, (bucket+1)/n)``, the last one closed)."""

    bucket: int
    track: str
    status: str
    count: int


def confidence_levels(db: Database, now: datetime, buckets: int) -> list[LevelCount]:
    """The confidence of every user's live, not retired memories in ``buckets`` equal
    buckets over ``[0, 1]``, per track and status."""
    out: list[LevelCount] = []
    with cross_user_transaction(db) as conn:
        for kind, table in ((MemoryTable.FRAGMENT, _FRAGMENT), (MemoryTable.FACT, _FACT)):
            bucket = (
                func.least(func.width_bucket(table.c.confidence, 0.0, 1.0, buckets), buckets) - 1
            ).label("bucket")
            rows = conn.execute(
                select(bucket, table.c.status, func.count().label("n"))
                .where(live(table, now), table.c.status != MemoryStatus.RETIRED.value)
                .group_by(bucket, table.c.status)
            ).all()
            out += [LevelCount(max(0, int(r.bucket)), kind.value, r.status, int(r.n)) for r in rows]
    return sorted(out, key=lambda c: (c.bucket, c.track, c.status))


@dataclass(frozen=True)
class PendingQueue:
    """Live memories waiting for their user's confirmation (counts only, never texts)."""

    fragments: int
    facts: int
    oldest_since: datetime | None
    """When the longest-waiting one became pending (its ``status_change`` audit entry;
    without one, when it was written with a low confidence)."""


def pending_confirmations(db: Database, now: datetime) -> PendingQueue:
    """Every user's live ``pending_confirmation`` memories and the oldest one's wait."""
    counts: dict[MemoryTable, int] = {}
    oldest: list[datetime] = []
    with cross_user_transaction(db) as conn:
        for kind, table in ((MemoryTable.FRAGMENT, _FRAGMENT), (MemoryTable.FACT, _FACT)):
            went = (
                select(func.max(_LOG.c.at))
                .where(
                    _LOG.c.memory_id == table.c.id,
                    _LOG.c.action == AuditAction.STATUS_CHANGE.value,
                    _LOG.c.details["to"].astext == MemoryStatus.PENDING_CONFIRMATION.value,
                )
                .scalar_subquery()
            )
            written = table.c.updated_at if kind is MemoryTable.FACT else table.c.created_at
            row = conn.execute(
                select(func.count(), func.min(func.coalesce(went, written))).where(
                    table.c.status == MemoryStatus.PENDING_CONFIRMATION.value, live(table, now)
                )
            ).one()
            counts[kind] = int(row[0])
            if row[1] is not None:
                oldest.append(row[1])
    return PendingQueue(
        fragments=counts[MemoryTable.FRAGMENT],
        facts=counts[MemoryTable.FACT],
        oldest_since=min(oldest, default=None),
    )


@dataclass(frozen=True)
class DayCount:
    """How many of something (named by ``key``) fell on one UTC day."""

    day: date
    key: str
    count: int


def renewals_per_day(db: Database, since: datetime) -> list[DayCount]:
    """Memories of every user used (so renewed) since they were written, by the UTC day of
    their latest use since ``since``; ``key`` is the track. A memory used on several days
    counts on the last one only: the ledger keeps the latest use, not each."""
    out: list[DayCount] = []
    with cross_user_transaction(db) as conn:
        for kind, table in ((MemoryTable.FRAGMENT, _FRAGMENT), (MemoryTable.FACT, _FACT)):
            day = _utc_day(table.c.last_used_at).label("day")
            rows = conn.execute(
                select(day, func.count().label("n"))
                .where(table.c.last_used_at >= since, table.c.last_used_at > table.c.created_at)
                .group_by(day)
            ).all()
            out += [DayCount(r.day, kind.value, int(r.n)) for r in rows]
    return sorted(out, key=lambda c: (c.day, c.key))


def daily_audit_counts(
    db: Database,
    since: datetime,
    action: AuditAction,
    *,
    by: str,
    matching_details: dict[str, str] | None = None,
) -> list[DayCount]:
    """Audit entries of ``action`` since ``since`` per UTC day and value of ``details[by]``
    (``key``; ``"none"`` when absent), restricted to entries whose details hold
    ``matching_details``: e.g. the sweep's deletes (:data:`SWEPT`) by kind, or
    verification changes by outcome."""
    day = _utc_day(_LOG.c.at).label("day")
    key = func.coalesce(_LOG.c.details[by].astext, "none").label("key")
    query = (
        select(day, key, func.count().label("n"))
        .where(_LOG.c.at >= since, _LOG.c.action == AuditAction(action).value)
        .group_by(day, key)
        .order_by(day, key)
    )
    if matching_details:
        query = query.where(_LOG.c.details.contains(matching_details))
    with cross_user_transaction(db) as conn:
        rows = conn.execute(query).all()
    return [DayCount(r.day, r.key, int(r.n)) for r in rows]


def verification_states(db: Database) -> dict[str, int]:
    """Every user's business links by the outcome of their latest verification:
    ``ok``, ``failing`` or ``unchecked``."""
    state = func.coalesce(cast(_LINK.c.verification_ok, Text), literal("unchecked", Text)).label(
        "state"
    )
    with cross_user_transaction(db) as conn:
        rows = conn.execute(select(state, func.count().label("n")).group_by(state)).all()
    names = {"true": "ok", "false": "failing", "unchecked": "unchecked"}
    found = {names[r.state]: int(r.n) for r in rows}
    return {name: found.get(name, 0) for name in ("ok", "failing", "unchecked")}
