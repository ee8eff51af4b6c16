"""Vault repair: merge duplicate PII vault entries of one exact value, rewrite the
references to them, and index every readable entry written before revision 0014 exactly."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from sqlalchemy import (
    ARRAY,
    Connection,
    Row,
    Text,
    and_,
    cast,
    delete,
    func,
    literal,
    select,
    update,
)
from sqlalchemy.dialects.postgresql import JSONB, JSONPATH

from policies.errors import DecryptionError
from structured_memory.cross_user.marking import cross_user_transaction
from structured_memory.cross_user.rotation import first_unreadable
from structured_memory.database import Database
from structured_memory.models import (
    MemoryFact,
    MemoryFragment,
    PiiDataKey,
    PiiVaultEntry,
    UserProfile,
    table_of,
)
from structured_memory.pii.cipher import PiiCipher
from structured_memory.pii.fields import rewrite_references
from structured_memory.pii.vault import data_key, index_exactly, open_entry
from structured_memory.scoping import owned_by

__all__ = ["VaultRepairReport", "count_vault_repairs", "repair_vault"]

_T = table_of(PiiVaultEntry)
_KEY = table_of(PiiDataKey)
_FACT = table_of(MemoryFact)
_FRAGMENT = table_of(MemoryFragment)
_PROFILE = table_of(UserProfile)


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
                .values(unreadable_since=first_unreadable(_KEY))
            )
    groups: dict[tuple[str, str], list[Row[Any]]] = {}
    failed: list[uuid.UUID] = []
    for row in rows:
        mine = and_(_T.c.id == row.id, owned_by(_T, user_id))
        try:
            clear = open_entry(cipher, row, key)
        except DecryptionError:
            conn.execute(update(_T).where(mine).values(unreadable_since=first_unreadable(_T)))
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
