"""Links between a user and business entities (supplier, warehouse, contract, order, ...).

A link is valid in ``[effective_from, effective_to)``; an open end is stored
as PostgreSQL ``infinity`` and returned as ``None``. Unknown entity types and
roles are refused here (:class:`InvalidField`) and by CHECK constraints.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import delete, func, select, update

from policies.errors import InvalidField, InvalidInput, RecordNotFound
from policies.scope import UserScope
from policies.validation import check_choice, check_field_length, check_timestamp, check_uuid
from structured_memory.database import INFINITY, Database
from structured_memory.models import BusinessEntityType, LinkRole, UserBusinessLink, table_of
from structured_memory.records import BusinessLink

__all__ = ["BusinessLinkRepository"]

_T = table_of(UserBusinessLink)


class BusinessLinkRepository:
    """Adds, ends, lists and removes a user's business links."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def add(
        self,
        scope: UserScope,
        *,
        entity_type: str,
        entity_id: str,
        role: str,
        effective_from: datetime | None = None,
        effective_to: datetime | None = None,
    ) -> BusinessLink:
        """Link the user to an entity. ``effective_from`` defaults to now, ``effective_to`` to open.

        Raises :class:`InvalidField` for an unknown type or role, naive
        datetimes or ones outside 1900-2200, or an empty range;
        :class:`UserNotFound` without a profile.
        """
        entity = check_field_length("entity_id", entity_id, 128)
        if not entity.strip():
            raise InvalidField("entity_id is empty", field="entity_id")
        values: dict[str, object] = {
            "user_id": scope.user_id,
            "entity_type": check_choice(BusinessEntityType, entity_type, "entity_type"),
            "entity_id": entity,
            "role": check_choice(LinkRole, role, "role"),
            "effective_to": check_timestamp(effective_to, "effective_to") or INFINITY,
        }
        start = check_timestamp(effective_from, "effective_from")
        if start is not None:
            values["effective_from"] = start
            if effective_to is not None and effective_to <= start:
                raise InvalidField(
                    "effective_to must be after effective_from", field="effective_to"
                )
        try:
            with self._db.transaction(owner=scope.user_id) as conn:
                row = conn.execute(_T.insert().values(**values).returning(_T)).one()
        except InvalidInput as exc:
            # the start defaulted to now() in the database and lies after the given end
            raise InvalidField(
                "effective_to must be after effective_from", field="effective_to"
            ) from exc
        return BusinessLink.from_row(row)

    def valid_at(
        self, scope: UserScope, when: datetime | None = None, *, entity_type: str | None = None
    ) -> list[BusinessLink]:
        """Links valid at ``when`` (default: now), optionally of one entity type."""
        at = check_timestamp(when, "when")
        moment = func.now() if at is None else at
        query = select(_T).where(
            _T.c.user_id == scope.user_id,
            _T.c.effective_from <= moment,
            _T.c.effective_to > moment,
        )
        if entity_type is not None:
            query = query.where(
                _T.c.entity_type == check_choice(BusinessEntityType, entity_type, "entity_type")
            )
        with self._db.transaction() as conn:
            rows = conn.execute(query.order_by(_T.c.effective_from)).all()
        return [BusinessLink.from_row(r) for r in rows]

    def list(self, scope: UserScope) -> list[BusinessLink]:
        """Every link of the user, past, present and future."""
        with self._db.transaction() as conn:
            rows = conn.execute(
                select(_T).where(_T.c.user_id == scope.user_id).order_by(_T.c.effective_from)
            ).all()
        return [BusinessLink.from_row(r) for r in rows]

    def end(self, scope: UserScope, link_id: uuid.UUID, at: datetime | None = None) -> BusinessLink:
        """Close a link at ``at`` (default: now)."""
        link_id = check_uuid(link_id, "link_id")
        moment = check_timestamp(at, "at")
        try:
            with self._db.transaction() as conn:
                row = conn.execute(
                    update(_T)
                    .where(_T.c.user_id == scope.user_id, _T.c.id == link_id)
                    .values(effective_to=func.now() if moment is None else moment)
                    .returning(_T)
                ).one_or_none()
        except InvalidInput as exc:
            raise InvalidField("a link cannot end before it starts", field="at") from exc
        if row is None:
            raise RecordNotFound("no such link for this user")
        return BusinessLink.from_row(row)

    def remove(self, scope: UserScope, link_id: uuid.UUID) -> bool:
        """Delete a link; returns whether it existed."""
        link_id = check_uuid(link_id, "link_id")
        with self._db.transaction() as conn:
            n = conn.execute(
                delete(_T).where(_T.c.user_id == scope.user_id, _T.c.id == link_id)
            ).rowcount
        return bool(n)
