"""The TTL sweep: delete expired fragments and facts across users (auditing each), and
the vacuum after it of every user table."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, text

from policies.audit import AuditAction
from policies.outbox import OutboxOp
from policies.scope import UserScope
from structured_memory.audit import record_many
from structured_memory.cross_user.decay import DecayReport
from structured_memory.cross_user.marking import cross_user_autocommit, cross_user_transaction
from structured_memory.database import Database
from structured_memory.models import Base
from structured_memory.repositories.confidence import MemoryTable
from structured_memory.repositories.fragments import vault_ids_of

__all__ = [
    "SWEPT",
    "USER_TABLES",
    "Forgotten",
    "SweepReport",
    "VacuumedTable",
    "count_expired",
    "sweep_expired",
    "vacuum_user_tables",
]


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
    """The confidence decay run with the sweep (``mem.admin.sweep``)."""
    sessions_ended: int = 0
    """Idle sessions the sweep ended (their turns summarised into records and merged into
    the profile) before removing anything (``mem.admin.sweep``)."""
    flagged: int = 0
    """Memories of large users the sweep flagged for the approximate index
    (:func:`~structured_memory.cross_user.ann_flags.flag_large_scopes`, run by
    ``mem.admin.sweep`` when the index asks)."""


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


USER_TABLES = [t.name for t in Base.metadata.sorted_tables if "user_id" in t.c]
"""The tables holding user data (those with a ``user_id`` column)."""


def vacuum_user_tables(db: Database) -> list[VacuumedTable]:
    """``VACUUM (ANALYZE)`` every user table; the tables, with their dead tuples before.

    Erasures, deletes and sweeps leave the old rows in the heap as dead
    tuples; VACUUM marks their space free for reuse (it does not overwrite it:
    see "Erasure" in the README) and removes their index entries. Every user
    table is vacuumed, not only those ``pg_stat_user_tables.n_dead_tup`` shows
    dead tuples in: an erasure's own vacuum
    (:mod:`structured_memory.cross_user.erasure_vacuum`) prunes the heap without the
    indexes and leaves that count at zero, and the count reaches the statistics
    up to a second after a commit. A table with nothing to remove costs a scan
    of its pages not yet all-visible. VACUUM cannot run in a transaction: this
    runs on an autocommit connection, without the statement timeout, and takes
    only locks that let reads and writes go on.
    """
    with cross_user_autocommit(db) as conn:
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
