"""Links between a user and business entities (supplier, warehouse, contract, order, ...).

A link is valid in ``[effective_from, effective_to)``; an open end is stored
as PostgreSQL ``infinity`` and returned as ``None``. Unknown entity types and
roles are refused here (:class:`InvalidField`) and by CHECK constraints.

Each link also keeps its last verification against the system of record
(:meth:`BusinessLinkRepository.record_checks`): the state reported, when, and
whether the latest check succeeded. A change is written to the audit log in
the same transaction, its states as codes or digests (never free text).

Entity types, roles and ``check_entity_id`` are ``policies.business``'s
(``check_entity_id`` re-exported here for one release).
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from sqlalchemy import (
    Connection,
    String,
    bindparam,
    delete,
    func,
    or_,
    select,
    tuple_,
    update,
)

from policies.audit import AuditAction, check_details
from policies.business import BusinessEntityType, LinkRole, check_entity_id
from policies.errors import InvalidField, InvalidInput, RecordNotFound
from policies.scope import UserScope
from policies.validation import (
    check_choice,
    check_field_length,
    check_timestamp,
    check_uuid,
)
from structured_memory.audit import record_many
from structured_memory.database import INFINITY, Database
from structured_memory.models import UserBusinessLink, table_of
from structured_memory.scoping import owned, owned_by
from values.records import BusinessLink

__all__ = ["BusinessLinkRepository", "PriorState", "StateCheck", "check_entity_id"]

_T = table_of(UserBusinessLink)

_VALID_NAMED: Final = select(_T.c.entity_type, _T.c.entity_id).where(
    owned_by(_T, bindparam("scope_user", type_=String)),
    or_(
        tuple_(_T.c.entity_type, _T.c.entity_id).in_(bindparam("wanted", expanding=True)),
        _T.c.entity_id.in_(bindparam("ending", expanding=True)),
    ),
    _T.c.effective_from <= func.now(),
    _T.c.effective_to > func.now(),
)
"""The user's links valid now to an entity of ``wanted`` (type, id) or to an id of
``ending`` (built once: every session end that names an id reads them)."""
_LINK: Final = (
    _T.insert()
    .values(
        user_id=bindparam("scope_user", type_=String),
        entity_type=bindparam("entity_type", type_=_T.c.entity_type.type),
        entity_id=bindparam("entity_id", type_=_T.c.entity_id.type),
        role=bindparam("role", type_=_T.c.role.type),
    )
    .returning(_T)
)
"""A link added (built once; bound with one parameter set per link)."""


def _link(row: Any) -> BusinessLink:
    """The link a row holds (an ``effective_to`` of ``infinity`` read as open-ended)."""
    data = dict(row._mapping)
    if data["effective_to"] == INFINITY:
        data["effective_to"] = None
    return BusinessLink.model_validate(data)


@dataclass(frozen=True)
class StateCheck:
    """One entity's verification, to be recorded on the user's links ``link_ids`` to it."""

    entity_type: str
    entity_id: str
    link_ids: tuple[uuid.UUID, ...]
    state: str | None
    """The state reported (PII already masked); ``None``: the check gave no state."""
    outcome: str
    """A code: ``verified``, ``unknown`` (not known to the system of record), or the
    error code of a failed check (``verifier_timeout``, ``verifier_unavailable``)."""


@dataclass(frozen=True)
class PriorState:
    """What a link held before a check: its last verified state, when, and whether
    the latest check succeeded (``None``: never checked)."""

    state: str | None
    verified_at: datetime | None
    ok: bool | None


def _audit_state(state: str | None) -> str | None:
    """A state as an audit detail: itself when it is a code, else a digest of it."""
    if state is None:
        return None
    try:
        code: str = check_details({"state": state})["state"]
    except InvalidField:
        return "sha256:" + hashlib.sha256(state.encode()).hexdigest()[:16]
    return code


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

        Raises :class:`InvalidField` for an unknown type or role, an id holding PII
        (:func:`check_entity_id`), naive datetimes or ones outside 1900-2200, or an empty range;
        :class:`UserNotFound` without a profile.
        """
        kind = check_choice(BusinessEntityType, entity_type, "entity_type")
        entity = check_entity_id(kind, check_field_length("entity_id", entity_id, 128))
        if not entity.strip():
            raise InvalidField("entity_id is empty", field="entity_id")
        values: dict[str, object] = {
            "user_id": scope.user_id,
            "entity_type": kind,
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
        return _link(row)

    def valid_at(
        self, scope: UserScope, when: datetime | None = None, *, entity_type: str | None = None
    ) -> list[BusinessLink]:
        """Links valid at ``when`` (default: now), optionally of one entity type."""
        at = check_timestamp(when, "when")
        moment = func.now() if at is None else at
        query = select(_T).where(
            owned(_T, scope),
            _T.c.effective_from <= moment,
            _T.c.effective_to > moment,
        )
        if entity_type is not None:
            query = query.where(
                _T.c.entity_type == check_choice(BusinessEntityType, entity_type, "entity_type")
            )
        with self._db.transaction() as conn:
            rows = conn.execute(query.order_by(_T.c.effective_from)).all()
        return [_link(r) for r in rows]

    def linked(self, scope: UserScope, keys: Collection[tuple[str, str]]) -> list[BusinessLink]:
        """The user's links valid now to any of the entities ``keys`` (type, id)."""
        if not keys:
            return []
        now = func.now()
        query = select(_T).where(
            owned(_T, scope),
            tuple_(_T.c.entity_type, _T.c.entity_id).in_(list(keys)),
            _T.c.effective_from <= now,
            _T.c.effective_to > now,
        )
        with self._db.transaction() as conn:
            rows = conn.execute(query.order_by(_T.c.effective_from)).all()
        return [_link(r) for r in rows]

    def add_missing(
        self,
        conn: Connection,
        scope: UserScope,
        keys: Collection[tuple[str, str]],
        *,
        role: str = LinkRole.OWNER.value,
        then_end: Collection[str] = (),
    ) -> list[BusinessLink]:
        """In the caller's transaction, link the user to each entity of ``keys`` (type, id)
        it has no link valid now to; returns the links added (each audited as a write).
        Then, as :meth:`end_named` of ``then_end`` would, end the links valid now to those
        ids: the one read that finds the links present also tells whether any is to end,
        so the update runs only then.

        Used by session end for the ids a session named (and those it corrected). The
        caller holds the user's profile row (``FOR NO KEY UPDATE``), so concurrent calls
        for one user add each link once. :class:`InvalidField` for an unknown type or an
        overlong id; an id holding PII for its type (:func:`check_entity_id`) is not linked.
        """
        wanted = set()
        for t, i in keys:
            kind = check_choice(BusinessEntityType, t, "entity_type")
            entity = check_field_length("entity_id", i, 128)
            try:
                wanted.add((kind, check_entity_id(kind, entity)))
            except InvalidField:
                continue
        ending = set(then_end)
        if not wanted and not ending:
            return []
        params = {"scope_user": scope.user_id, "wanted": sorted(wanted), "ending": sorted(ending)}
        valid = {(r.entity_type, r.entity_id) for r in conn.execute(_VALID_NAMED, params)}
        missing = sorted(wanted - valid)
        added = self._insert(conn, scope, missing, role) if missing else []
        if any(i in ending for _, i in [*valid, *missing]):
            self.end_named(conn, scope, ending)
        return added

    def _insert(
        self, conn: Connection, scope: UserScope, missing: list[tuple[str, str]], role: str
    ) -> list[BusinessLink]:
        role = check_choice(LinkRole, role, "role")
        rows = conn.execute(  # one INSERT of every row (SQLAlchemy's "insertmanyvalues")
            _LINK,
            [
                {"scope_user": scope.user_id, "entity_type": t, "entity_id": i, "role": role}
                for t, i in missing
            ],
        ).all()
        record_many(
            conn,
            scope,
            AuditAction.WRITE,
            [(None, {"kind": "link", "entity_type": r.entity_type, "link_id": r.id}) for r in rows],
        )
        return [_link(r) for r in rows]

    def end_named(
        self, conn: Connection, scope: UserScope, entity_ids: Collection[str]
    ) -> list[BusinessLink]:
        """In the caller's transaction, end now the links valid now to an entity of
        ``entity_ids`` (any type): identifiers the user corrected since ("订单号说错了"), so a
        wrong one is never shown again as one the system of record does not know. Returns
        the links ended (each audited as a write)."""
        if not entity_ids:
            return []
        now = func.now()
        rows = conn.execute(
            update(_T)
            .where(
                owned(_T, scope),
                _T.c.entity_id.in_(sorted(entity_ids)),
                _T.c.effective_from <= now,
                _T.c.effective_to > now,
            )
            .values(effective_to=now)
            .returning(_T)
        ).all()
        record_many(
            conn,
            scope,
            AuditAction.WRITE,
            [
                (
                    None,
                    {"kind": "link", "entity_type": r.entity_type, "link_id": r.id, "ended": True},
                )
                for r in rows
            ],
        )
        return [_link(r) for r in rows]

    def list(self, scope: UserScope) -> list[BusinessLink]:
        """Every link of the user, past, present and future."""
        with self._db.transaction() as conn:
            rows = conn.execute(
                select(_T).where(owned(_T, scope)).order_by(_T.c.effective_from)
            ).all()
        return [_link(r) for r in rows]

    def end(self, scope: UserScope, link_id: uuid.UUID, at: datetime | None = None) -> BusinessLink:
        """Close a link at ``at`` (default: now)."""
        link_id = check_uuid(link_id, "link_id")
        moment = check_timestamp(at, "at")
        try:
            with self._db.transaction() as conn:
                row = conn.execute(
                    update(_T)
                    .where(owned(_T, scope), _T.c.id == link_id)
                    .values(effective_to=func.now() if moment is None else moment)
                    .returning(_T)
                ).one_or_none()
        except InvalidInput as exc:
            raise InvalidField("a link cannot end before it starts", field="at") from exc
        if row is None:
            raise RecordNotFound("no such link for this user")
        return _link(row)

    def record_checks(
        self, scope: UserScope, checks: Sequence[StateCheck], at: datetime
    ) -> dict[tuple[str, str], PriorState]:
        """Record verifications on the links they name, in one transaction.

        A reported state becomes ``verified_state`` with ``verified_at = at``
        and ``verification_ok`` true; a check without a state only sets
        ``verification_ok`` false (the last verified state stays, as a lead).
        The links are locked first, so concurrent checks of one entity record
        each change once. Returns each entity's state before the checks (links
        removed meanwhile are left out).
        """
        ids = sorted({i for c in checks for i in c.link_ids})
        if not ids:
            return {}
        with self._db.transaction() as conn:
            rows = conn.execute(
                select(
                    _T.c.id,
                    _T.c.entity_type,
                    _T.c.entity_id,
                    _T.c.verified_state,
                    _T.c.verified_at,
                    _T.c.verification_ok,
                )
                .where(owned(_T, scope), _T.c.id.in_(ids))
                .order_by(_T.c.id)
                .with_for_update()
            ).all()
            present: dict[tuple[str, str], list[Any]] = {}
            for r in rows:
                present.setdefault((r.entity_type, r.entity_id), []).append(r)
            prior = {key: _latest(found) for key, found in present.items()}
            answered: list[dict[str, Any]] = []
            failed: list[dict[str, Any]] = []
            changes: list[dict[str, Any]] = []
            for check in checks:
                key = (check.entity_type, check.entity_id)
                if key not in present:
                    continue
                before = prior[key]
                link_ids = [r.id for r in present[key]]
                if check.state is not None:
                    answered += [{"b_id": i, "b_state": check.state} for i in link_ids]
                    changed = (before.state, before.ok) != (check.state, True)
                else:
                    failed += [
                        {"b_id": r.id} for r in present[key] if r.verification_ok is not False
                    ]
                    changed = before.ok is not False
                if changed:
                    changes.append(_change(check, before, link_ids))
            if answered:
                conn.execute(
                    update(_T)
                    .where(owned(_T, scope), _T.c.id == bindparam("b_id"))
                    .values(
                        verified_state=bindparam("b_state"), verified_at=at, verification_ok=True
                    ),
                    answered,
                )
            if failed:
                conn.execute(
                    update(_T)
                    .where(owned(_T, scope), _T.c.id == bindparam("b_id"))
                    .values(verification_ok=False),
                    failed,
                )
            record_many(conn, scope, AuditAction.VERIFICATION_CHANGE, [(None, c) for c in changes])
        return prior

    def remove(self, scope: UserScope, link_id: uuid.UUID) -> bool:
        """Delete a link; returns whether it existed."""
        link_id = check_uuid(link_id, "link_id")
        with self._db.transaction() as conn:
            n = conn.execute(delete(_T).where(owned(_T, scope), _T.c.id == link_id)).rowcount
        return bool(n)


def _latest(rows: Sequence[Any]) -> PriorState:
    """The prior state of an entity: that of its most recently verified link."""
    verified = [r for r in rows if r.verified_at is not None]
    if not verified:
        return PriorState(state=None, verified_at=None, ok=rows[0].verification_ok)
    row = max(verified, key=lambda r: r.verified_at)
    return PriorState(state=row.verified_state, verified_at=row.verified_at, ok=row.verification_ok)


def _change(check: StateCheck, before: PriorState, link_ids: list[uuid.UUID]) -> dict[str, Any]:
    """The audit details of a recorded change: ids, codes and state digests only
    (``policies.audit.check_details`` checks them when they are recorded)."""
    return {
        "entity_type": check.entity_type,
        "outcome": check.outcome,
        "previous_state": _audit_state(before.state),
        "previous_ok": before.ok,
        "state": _audit_state(check.state),
        "link_ids": link_ids[:16],
    }
