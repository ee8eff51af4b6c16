"""What sessions taught about a user: stable values in the profile, candidates beside it.

The merge itself is :func:`policies.profile_merge.merge`; this repository
loads its input and stores its decision, inside the caller's transaction:

- stable facts and preferences live in ``user_profile.attributes["learned"]``::

      {"facts": {"address": {"value": {"masked": "北京市朝阳区****",
                                       "pii": [{"vault_id": "…", "kind": "address"}]},
                             "at": "2026-07-01T10:00:00+00:00", "session": "s-1",
                             "sessions": 1}, ...},
       "preferences": {"budget@parents": {"value": "500元", ...}, ...}}

  A value holding PII is a masked leaf whose clear value is in the vault
  (``structured_memory.pii.fields``); the clear value never reaches the row.
  A change of a stable value bumps the profile's ``version`` (the optimistic
  lock of ``mem.profiles.update``); a stable notification channel also sets
  ``notification_preference`` to that channel alone, and a channel the user
  refused ("别再发邮件了") is switched off there.
- candidates are rows of ``profile_candidate``.

Every merge that changed something is audited (``profile_update``: the kinds of
change counted, the new version; no values).

The profile row is locked ``FOR NO KEY UPDATE`` while the merge runs, so two
sessions of one user merge one after the other.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any, Final

from sqlalchemy import Connection, String, bindparam, delete, func, select, tuple_, update
from sqlalchemy.dialects.postgresql import insert as pg_insert

from policies.audit import AuditAction
from policies.errors import UserNotFound
from policies.pii import PiiMatch, mask_pii
from policies.profile_fields import NOTIFICATION_CHANNELS
from policies.profile_merge import (
    DEFAULT_CONFIRMATIONS,
    Candidate,
    Merged,
    Observation,
    ProfileState,
    Stable,
    merge,
)
from policies.scope import UserScope
from structured_memory.audit import record
from structured_memory.models import ProfileCandidate, UserProfile, table_of
from structured_memory.pii.fields import Ref, is_reference, plan_json, references_in
from structured_memory.pii.vault import PiiVault
from structured_memory.repositories.fragments import release_vault_entries
from structured_memory.scoping import owned, owned_by

__all__ = ["LEARNED_KEY", "LearnedProfileRepository"]

LEARNED_KEY: Final = "learned"
"""The key of ``user_profile.attributes`` holding what sessions taught."""

CHANNEL_SLOT: Final = "notification_channel"
"""The learned slot mirrored in ``notification_preference``."""

_P = table_of(UserProfile)
_C = table_of(ProfileCandidate)

_HELD: Final = (
    select(_P.c.attributes, _P.c.notification_preference)
    .where(owned_by(_P, bindparam("scope_user", type_=String)))
    .with_for_update(key_share=True)
)
"""The user's profile row held for the merge (statements built once: every session end
merges)."""
_CANDIDATES: Final = select(_C).where(owned_by(_C, bindparam("scope_user", type_=String)))
_SAVE: Final = (
    update(_P)
    .where(owned_by(_P, bindparam("scope_user", type_=String)))
    .values(
        attributes=bindparam("attributes", type_=_P.c.attributes.type),
        version=_P.c.version + 1,
        updated_at=func.now(),
    )
    .returning(_P.c.version)
)
_SAVE_CHANNELS: Final = _SAVE.values(
    notification_preference=bindparam("channels", type_=_P.c.notification_preference.type)
)


def _ref(ref: Ref) -> str:
    """An opaque reference for ``policies.profile_merge``: ``kind:vault_id``."""
    return f"{ref['kind']}:{ref['vault_id']}"


def _decode_value(raw: Any) -> tuple[str, str | None]:
    if isinstance(raw, dict) and isinstance(raw.get("masked"), str):
        refs = [r for r in raw.get("pii", []) if is_reference(r)]
        return raw["masked"], _ref(refs[0]) if refs else None
    return str(raw), None


def _decode_stable(raw: Mapping[str, Any]) -> Stable | None:
    try:
        value, ref = _decode_value(raw["value"])
        return Stable(
            value=value,
            observed_at=datetime.fromisoformat(raw["at"]),
            session_id=str(raw["session"]),
            ref=ref,
            sessions=int(raw.get("sessions", 1)),
            formerly=tuple(v for v in raw.get("formerly", ()) if isinstance(v, str)),
        )
    except (KeyError, TypeError, ValueError):
        return None  # a hand-edited entry: left out, replaced by the next value said


def _decode(learned: Any, candidates: Iterable[Any]) -> ProfileState:
    learned = learned if isinstance(learned, dict) else {}

    def section(name: str) -> dict[str, Stable]:
        raw = learned.get(name)
        items = raw.items() if isinstance(raw, dict) else ()
        decoded = {slot: _decode_stable(v) for slot, v in items if isinstance(v, dict)}
        return {slot: v for slot, v in decoded.items() if v is not None}

    return ProfileState(
        facts=section("facts"),
        preferences=section("preferences"),
        candidates={
            (c.slot, c.value): Candidate(
                c.slot, c.value, tuple(c.sessions), c.first_seen, c.last_seen
            )
            for c in candidates
        },
    )


def _encode_stable(s: Stable) -> dict[str, Any]:
    value: Any = s.value
    if s.ref is not None:
        kind, _, vault_id = s.ref.partition(":")
        value = {"masked": s.value, "pii": [{"vault_id": vault_id, "kind": kind}]}
    return {
        "value": value,
        "at": s.observed_at.isoformat(),
        "session": s.session_id,
        "sessions": s.sessions,
        **({"formerly": list(s.formerly)} if s.formerly else {}),
    }


def _encode(state: ProfileState) -> dict[str, Any]:
    return {
        "facts": {slot: _encode_stable(s) for slot, s in sorted(state.facts.items())},
        "preferences": {slot: _encode_stable(s) for slot, s in sorted(state.preferences.items())},
    }


class LearnedProfileRepository:
    """Merges a session's observations into the user's profile, in the caller's transaction."""

    def __init__(self, vault: PiiVault) -> None:
        self._vault = vault

    def load(self, conn: Connection, scope: UserScope) -> ProfileState:
        """The user's learned profile (no lock); :class:`UserNotFound` without a profile."""
        attributes = conn.execute(select(_P.c.attributes).where(owned(_P, scope))).scalar()
        if attributes is None:
            raise UserNotFound("no profile for this user")
        rows = conn.execute(select(_C).where(owned(_C, scope))).all()
        return _decode(attributes.get(LEARNED_KEY), rows)

    def merge(
        self,
        conn: Connection,
        scope: UserScope,
        observations: Iterable[Observation],
        *,
        confirmations: int = DEFAULT_CONFIRMATIONS,
    ) -> Merged:
        """Merge ``observations`` into the profile and store the result.

        Clear values the observations carry (``Observation.clear``) are vaulted
        first and referenced. Raises :class:`UserNotFound` without a profile.
        """
        mine = {"scope_user": scope.user_id}
        row = conn.execute(_HELD, mine).one_or_none()
        if row is None:
            raise UserNotFound("no profile for this user")
        candidates = conn.execute(_CANDIDATES, mine).all()
        before = _decode(row.attributes.get(LEARNED_KEY), candidates)
        merged = merge(
            before,
            [self._vaulted(conn, scope, o) for o in observations],
            confirmations=confirmations,
        )
        after = merged.state
        refused = {
            value
            for slot, value in merged.refused
            if slot == CHANNEL_SLOT and row.notification_preference.get(value)
        }
        if after == before and not refused:
            return merged
        version = None
        if (after.facts, after.preferences) != (before.facts, before.preferences) or refused:
            version = self._save_profile(conn, scope, row, before, after, refused=refused)
        self._save_candidates(conn, scope, before.candidates, after.candidates)
        counts = Counter(c.kind.value for c in merged.changes)
        record(
            conn,
            scope,
            AuditAction.PROFILE_UPDATE,
            details={"source": "session", "version": version, **dict(sorted(counts.items()))},
        )
        return merged

    def _save_profile(
        self,
        conn: Connection,
        scope: UserScope,
        row: Any,
        before: ProfileState,
        after: ProfileState,
        *,
        refused: set[str],
    ) -> int:
        """Write the stable values into ``attributes`` (and a new stable notification
        channel into ``notification_preference``, the ``refused`` channels switched
        off), release the vault entries no longer referenced; the new version."""
        old_learned = row.attributes.get(LEARNED_KEY)
        learned = plan_json(_encode(after), "attributes").seal(
            lambda m: self._store(conn, scope, m)
        )
        values: dict[str, Any] = {
            "scope_user": scope.user_id,
            "attributes": {**row.attributes, LEARNED_KEY: learned},
        }
        channel = after.preferences.get(CHANNEL_SLOT)
        if (
            channel is not None
            and channel != before.preferences.get(CHANNEL_SLOT)
            and channel.value in NOTIFICATION_CHANNELS
        ):
            values["channels"] = {c: c == channel.value for c in sorted(NOTIFICATION_CHANNELS)}
        elif refused:
            values["channels"] = {
                **row.notification_preference,
                **dict.fromkeys(sorted(refused), False),
            }
        statement = _SAVE_CHANNELS if "channels" in values else _SAVE
        version: int = conn.execute(statement, values).scalar_one()
        kept = set(references_in(learned))
        release_vault_entries(
            conn, scope, [i for i in references_in(old_learned or {}) if i not in kept]
        )
        return version

    def _store(self, conn: Connection, scope: UserScope, m: PiiMatch) -> Ref:
        ref = self._vault.store(scope, m.kind.value, m.value, join=conn)
        return {"vault_id": str(ref.id), "kind": ref.kind}

    def _vaulted(self, conn: Connection, scope: UserScope, o: Observation) -> Observation:
        """``o`` with its clear value replaced by a vault reference (and its value masked)."""
        if o.clear is None:
            masked, found = mask_pii(o.value)
            if not found:
                return o
            ref = self._store(conn, scope, found[0])
            return replace(o, value=masked, ref=_ref(ref))
        found = mask_pii(o.clear)[1]
        if not found:
            return replace(o, clear=None)
        return replace(o, ref=_ref(self._store(conn, scope, found[0])), clear=None)

    def _save_candidates(
        self,
        conn: Connection,
        scope: UserScope,
        before: Mapping[tuple[str, str], Candidate],
        after: Mapping[tuple[str, str], Candidate],
    ) -> None:
        gone = sorted(set(before) - set(after))
        if gone:
            conn.execute(
                delete(_C).where(owned(_C, scope), tuple_(_C.c.slot, _C.c.value).in_(gone))
            )
        changed = [c for key, c in sorted(after.items()) if before.get(key) != c]
        if not changed:
            return
        insert = pg_insert(_C).values(
            [
                {
                    "id": uuid.uuid4(),
                    "user_id": scope.user_id,
                    "slot": c.slot,
                    "value": c.value,
                    "sessions": list(c.sessions),
                    "first_seen": c.first_seen,
                    "last_seen": c.last_seen,
                }
                for c in changed
            ]
        )
        conn.execute(
            insert.on_conflict_do_update(
                index_elements=["user_id", "slot", "value"],
                set_={
                    "sessions": insert.excluded.sessions,
                    "first_seen": insert.excluded.first_seen,
                    "last_seen": insert.excluded.last_seen,
                },
            )
        )
