"""The structured-track part of the facade: profiles, devices, links, facts, PII.

Each accessor turns the caller's user id into a validated :class:`UserScope`
(carrying the client's agent id) and calls the repository; nothing else.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from policies.confidence import feedback_action
from policies.lifecycle import LifecyclePolicy
from policies.scope import UserScope
from structured_memory.pii.vault import PiiVault
from structured_memory.repositories.business_link import BusinessLinkRepository
from structured_memory.repositories.device import DeviceRepository
from structured_memory.repositories.facts import FactRepository
from structured_memory.repositories.profile import ProfileRepository, RetryResult
from values.records import BusinessLink, Device, Fact, Profile, VaultRef

__all__ = ["Devices", "Facts", "Links", "Pii", "Profiles"]

ScopeFor = Callable[[str], UserScope]


class Profiles:
    """``mem.profiles``: read and update profiles with optimistic locking.

    PII in ``attributes`` and ``profile_summary`` is vaulted and stored masked:
    an attribute string holding a phone reads back as
    ``{"masked": "137****7000", "pii": [{"vault_id": ..., "kind": "phone"}]}``
    (write it back as it is to keep it); a key holding PII is refused.
    """

    def __init__(self, repo: ProfileRepository, scope: ScopeFor) -> None:
        self._repo, self._scope = repo, scope

    def get(self, user_id: str) -> Profile:
        """The profile; :class:`UserNotFound` if the user has none."""
        return self._repo.get(self._scope(user_id))

    def ensure(self, user_id: str) -> Profile:
        """The profile, created with defaults on first sight of the user."""
        return self._repo.ensure(self._scope(user_id))

    def create(self, user_id: str, **fields: object) -> Profile:
        """Create a profile with the given fields."""
        return self._repo.create(self._scope(user_id), **fields)

    def update(self, user_id: str, *, expected_version: int, **changes: object) -> Profile:
        """Apply ``changes`` if the version is still ``expected_version``, else raise
        :class:`ConcurrentModificationError`."""
        return self._repo.update(self._scope(user_id), expected_version=expected_version, **changes)

    def update_with_retry(
        self,
        user_id: str,
        change: Callable[[Profile], Mapping[str, object]],
        *,
        max_attempts: int = 50,
        base_delay_s: float = 0.001,
        max_delay_s: float = 0.05,
    ) -> RetryResult:
        """Re-read and re-apply ``change`` until the optimistic update succeeds
        (at most ``max_attempts`` times, backing off between ``base_delay_s`` and
        ``max_delay_s``)."""
        return self._repo.update_with_retry(
            self._scope(user_id),
            change,
            max_attempts=max_attempts,
            base_delay_s=base_delay_s,
            max_delay_s=max_delay_s,
        )


class Devices:
    """``mem.devices``: device fingerprints and the trust flow."""

    def __init__(self, repo: DeviceRepository, scope: ScopeFor) -> None:
        self._repo, self._scope = repo, scope

    def register(self, user_id: str, *, device_id: str, os: str, browser: str) -> Device:
        """Record a sign-in from a device (untrusted until verified twice)."""
        return self._repo.register(
            self._scope(user_id), device_id=device_id, os=os, browser=browser
        )

    def verify(self, user_id: str, fingerprint: str, *, succeeded: bool) -> Device:
        """Count a verification of the device; trusted after the second success."""
        return self._repo.record_verification(
            self._scope(user_id), fingerprint, succeeded=succeeded
        )

    def revoke_trust(self, user_id: str, fingerprint: str) -> Device:
        """Make the device untrusted again."""
        return self._repo.revoke_trust(self._scope(user_id), fingerprint)

    def list(self, user_id: str) -> list[Device]:
        """The user's devices, most recently active first."""
        return self._repo.list(self._scope(user_id))

    def remove(self, user_id: str, fingerprint: str) -> bool:
        """Forget a device."""
        return self._repo.remove(self._scope(user_id), fingerprint)


class Links:
    """``mem.links``: business links with validity ranges.

    Types: supplier, warehouse, contract, order, refund, return, exchange,
    ticket, work_order. Each link also shows its last verification
    (``verified_state``, ``verified_at``, ``verification_ok``): a lead, not
    the live state; ``mem.verify_links`` asks the system of record.
    """

    def __init__(self, repo: BusinessLinkRepository, scope: ScopeFor) -> None:
        self._repo, self._scope = repo, scope

    def add(
        self,
        user_id: str,
        *,
        entity_type: str,
        entity_id: str,
        role: str,
        effective_from: datetime | None = None,
        effective_to: datetime | None = None,
    ) -> BusinessLink:
        """Link the user to an entity; ``effective_to=None`` is open-ended."""
        return self._repo.add(
            self._scope(user_id),
            entity_type=entity_type,
            entity_id=entity_id,
            role=role,
            effective_from=effective_from,
            effective_to=effective_to,
        )

    def valid_now(self, user_id: str, *, entity_type: str | None = None) -> list[BusinessLink]:
        """Links valid at this moment."""
        return self._repo.valid_at(self._scope(user_id), entity_type=entity_type)

    def valid_at(self, user_id: str, when: datetime) -> list[BusinessLink]:
        """Links valid at ``when``."""
        return self._repo.valid_at(self._scope(user_id), when)

    def list(self, user_id: str) -> list[BusinessLink]:
        """Every link, past, present and future."""
        return self._repo.list(self._scope(user_id))

    def end(self, user_id: str, link_id: uuid.UUID, at: datetime | None = None) -> BusinessLink:
        """Close a link at ``at`` (default now)."""
        return self._repo.end(self._scope(user_id), link_id, at)

    def remove(self, user_id: str, link_id: uuid.UUID) -> bool:
        """Delete a link."""
        return self._repo.remove(self._scope(user_id), link_id)


class Facts:
    """``mem.facts``: keyed structured memories with a lifecycle policy."""

    def __init__(self, repo: FactRepository, scope: ScopeFor) -> None:
        self._repo, self._scope = repo, scope

    def put(
        self,
        user_id: str,
        key: str,
        value: Any,
        *,
        lifecycle_policy: LifecyclePolicy,
        confidence: float = 1.0,
        source: str = "",
    ) -> Fact:
        """Create or replace a fact; ``lifecycle_policy`` is required.

        Strings of ``value`` holding PII are vaulted and stored as masked leaves
        ``{"masked": "收货电话 138****8000", "pii": [{"vault_id": ..., "kind": "phone"}]}``;
        a SENSITIVE fact takes only a vault reference (from ``pii.store``). The
        entries only the replaced value referenced are released.
        """
        return self._repo.put(
            self._scope(user_id),
            key,
            value,
            lifecycle_policy=lifecycle_policy,
            confidence=confidence,
            source=source,
        )

    def get(self, user_id: str, key: str) -> Fact | None:
        """The live fact, or ``None``; reading an IMPLICIT fact renews its TTL."""
        return self._repo.get(self._scope(user_id), key)

    def list(self, user_id: str) -> list[Fact]:
        """Every live fact of the user."""
        return self._repo.list(self._scope(user_id))

    def feedback(self, user_id: str, fact_id: uuid.UUID, action: str) -> Fact:
        """Apply a behaviour event (``click``, ``ignore``, ...) to the fact's confidence;
        ``mem.feedback`` does the same for any memory."""
        scope = self._scope(user_id)
        return self._repo.feedback(scope, fact_id, feedback_action(action))

    def delete(self, user_id: str, key: str) -> bool:
        """Delete a fact and the vault entries nothing else references."""
        return self._repo.delete(self._scope(user_id), key)


class Pii:
    """``mem.pii``: the encrypted vault (a data key per user, wrapped by the key ring)."""

    def __init__(self, vault: PiiVault, scope: ScopeFor) -> None:
        self._vault, self._scope = vault, scope

    def store(self, user_id: str, kind: str, value: str) -> VaultRef:
        """Encrypt and store a PII value (phone, email, id_card, bank_card, address).

        Idempotent and safe under concurrency: the same exact value of the same
        kind returns the entry already stored; another spelling
        (``+86 138-1234-5678`` after ``13812345678``) is an entry of its own, so
        ``reveal`` always gives the string stored under the id. A value with
        nothing to look it up by (a phone or bank card number without a digit)
        raises :class:`InvalidField`.
        """
        return self._vault.store(self._scope(user_id), kind, value)

    def reveal(self, user_id: str, entry_id: uuid.UUID) -> str:
        """Decrypt a vault entry of the user; :class:`DecryptionError` if it was tampered
        with or its key is unknown (a key file is re-read once first)."""
        return self._vault.reveal(self._scope(user_id), entry_id)

    def find(self, user_id: str, kind: str, value: str) -> VaultRef | None:
        """The user's entry holding ``value``, by blind index: the entry of that exact
        value, else the oldest entry of another spelling of it (``138 1234 5678``
        finds ``+86 138-1234-5678``)."""
        return self._vault.find(self._scope(user_id), kind, value)

    def list(self, user_id: str) -> list[VaultRef]:
        """References to the user's vault entries."""
        return self._vault.list(self._scope(user_id))

    def delete(self, user_id: str, entry_id: uuid.UUID) -> bool:
        """Delete a vault entry."""
        return self._vault.delete(self._scope(user_id), entry_id)
