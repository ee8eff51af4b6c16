"""Operations that span users, on purpose: PII lookup, key rotation, the TTL sweep.

Everything else in dualtrack is confined to one :class:`UserScope`; the
functions here are for operators and identity resolution, and their callers
(the CLI, the ops API) check the ops role before calling them.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select, text, update

from structured_memory.database import Database
from structured_memory.models import MemoryFragment, PiiVaultEntry, table_of
from structured_memory.pii.cipher import PiiCipher, Sealed
from structured_memory.pii.vault import aad_for, vault_kind
from structured_memory.repositories.fragments import IndexRow, index_rows

__all__ = [
    "RotationReport",
    "SweepReport",
    "count_expired",
    "count_fragments",
    "find_user_ids_by_pii",
    "fragments_for_index",
    "idle_users",
    "iter_fragments_for_index",
    "pending_rotation",
    "rotate_keys",
    "sweep_expired",
]

_T = table_of(PiiVaultEntry)
_FRAGMENT = table_of(MemoryFragment)


def find_user_ids_by_pii(db: Database, cipher: PiiCipher, kind: str, value: str) -> list[str]:
    """Ids of the users holding ``value`` (e.g. a phone number), by blind index only."""
    kind = vault_kind(kind)
    with db.transaction() as conn:
        rows = conn.execute(
            select(_T.c.user_id)
            .where(_T.c.kind == kind, _T.c.blind_index.in_(cipher.blind_indexes(kind, value)))
            .distinct()
            .order_by(_T.c.user_id)
        ).all()
    return [r.user_id for r in rows]


def pending_rotation(db: Database, cipher: PiiCipher) -> int:
    """How many vault entries are sealed with a key other than the active one."""
    with db.transaction() as conn:
        return int(
            conn.execute(
                select(func.count()).where(_T.c.key_id != cipher.ring.active.key_id)
            ).scalar_one()
        )


@dataclass(frozen=True)
class RotationReport:
    """What a rotation run did."""

    reencrypted: int
    remaining: int


def rotate_keys(
    db: Database,
    cipher: PiiCipher,
    *,
    batch_size: int = 500,
    progress: Callable[[int], None] | None = None,
) -> RotationReport:
    """Re-encrypt every entry not sealed with the active key, in batches.

    Each batch is one transaction that locks its rows (``FOR UPDATE SKIP
    LOCKED``), so rotation can run beside live traffic and be interrupted and
    resumed. The blind index is recomputed under the active key. A row that
    fails to decrypt raises :class:`DecryptionError` and its batch rolls back.
    ``progress`` is called with the number of rows done in each batch.
    """
    active = cipher.ring.active.key_id
    done = 0
    while True:
        with db.transaction() as conn:
            rows = conn.execute(
                select(_T)
                .where(_T.c.key_id != active)
                .order_by(_T.c.id)
                .limit(batch_size)
                .with_for_update(skip_locked=True)
            ).all()
            for row in rows:
                aad = aad_for(row.id, row.user_id, row.kind)
                clear = cipher.open(
                    Sealed(row.key_id, bytes(row.nonce), bytes(row.ciphertext)), aad=aad
                )
                sealed = cipher.seal(clear, aad=aad)
                conn.execute(
                    update(_T)
                    .where(_T.c.id == row.id)
                    .values(
                        key_id=sealed.key_id,
                        nonce=sealed.nonce,
                        ciphertext=sealed.ciphertext,
                        blind_index=cipher.blind_index(row.kind, clear),
                        updated_at=func.now(),
                    )
                )
        if not rows:
            break
        done += len(rows)
        if progress is not None:
            progress(len(rows))
    return RotationReport(reencrypted=done, remaining=pending_rotation(db, cipher))


@dataclass(frozen=True)
class SweepReport:
    """What one sweep removed."""

    fragments: int
    facts: int


def sweep_expired(
    db: Database,
    now: datetime,
    *,
    batch_size: int = 1000,
    outbox: bool = False,
    progress: Callable[[int], None] | None = None,
) -> SweepReport:
    """Delete fragments and facts whose ``expires_at`` has passed, in batches.

    Each batch is one transaction over rows locked with ``SKIP LOCKED``, so
    several sweepers can run at once. Reads never return expired rows, so the
    sweep only reclaims space. With ``outbox``, each deleted fragment also
    queues its index delete in the same transaction. ``progress`` gets the
    rows removed per batch.
    """
    removed = {"memory_fragment": 0, "memory_fact": 0}
    for table in removed:
        returning = "RETURNING id, user_id" if outbox and table == "memory_fragment" else ""
        statement = (
            f"DELETE FROM {table} WHERE id IN (SELECT id FROM {table} "
            "WHERE expires_at <= :now ORDER BY expires_at LIMIT :n "
            f"FOR UPDATE SKIP LOCKED) {returning}"
        )
        if returning:
            statement = (
                f"WITH gone AS ({statement}) "
                "INSERT INTO fragment_outbox (op, user_id, fragment_id) "
                "SELECT 'delete', user_id, id FROM gone"
            )
        while True:
            with db.transaction() as conn:
                n = conn.execute(text(statement), {"now": now, "n": batch_size}).rowcount
            removed[table] += n
            if progress is not None and n:
                progress(n)
            if n < batch_size:
                break
    return SweepReport(fragments=removed["memory_fragment"], facts=removed["memory_fact"])


def count_expired(db: Database, now: datetime) -> int:
    """Fragments and facts past their expiry, not yet swept."""
    with db.transaction() as conn:
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
    with db.transaction() as conn:
        return {r.id: r for r in index_rows(conn, _FRAGMENT.c.id.in_(list(ids)))}


def iter_fragments_for_index(db: Database, *, batch_size: int = 500) -> Iterator[list[IndexRow]]:
    """Every ledger row, in id order, a batch per transaction (for ``dualtrack reindex``)."""
    last: uuid.UUID | None = None
    while True:
        with db.transaction() as conn:
            where = _FRAGMENT.c.id > last if last is not None else _FRAGMENT.c.id.is_not(None)
            rows = index_rows(conn, where, limit=batch_size)
        if not rows:
            return
        yield rows
        last = rows[-1].id


def count_fragments(db: Database) -> int:
    """How many fragments the ledger holds (all users)."""
    with db.transaction() as conn:
        return int(conn.execute(select(func.count()).select_from(_FRAGMENT)).scalar_one())


def idle_users(db: Database, since: datetime) -> list[str]:
    """Users whose fragments were all last written or used before ``since``."""
    last = func.max(func.greatest(_FRAGMENT.c.last_used_at, _FRAGMENT.c.created_at))
    with db.transaction() as conn:
        rows = conn.execute(
            select(_FRAGMENT.c.user_id).group_by(_FRAGMENT.c.user_id).having(last < since)
        ).scalars()
        return list(rows)
