"""What the stores return by id: a profile, a device, a business link, a fact, a memory.

Plain frozen pydantic models, read from a row's attributes in process and from
the REST service's JSON by the remote client alike.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

__all__ = ["BusinessLink", "Device", "Fact", "FragmentRecord", "Profile", "VaultRef"]


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, from_attributes=True)


class Profile(_Record):
    """A user's profile row; ``version`` is the optimistic-lock token."""

    user_id: str
    created_at: datetime
    updated_at: datetime
    timezone: str
    language: str
    notification_preference: dict[str, bool]
    attributes: dict[str, Any]
    profile_summary: str
    version: int


class Device(_Record):
    """A device seen for a user."""

    id: uuid.UUID
    user_id: str
    fingerprint: str
    os: str
    browser: str
    first_seen: datetime
    last_active: datetime
    verified_count: int
    is_trusted: bool


class BusinessLink(_Record):
    """A user's role on a business entity; ``effective_to`` ``None`` means open-ended.

    ``verified_state`` is the state the system of record last reported (a lead,
    not the live state), ``verified_at`` when, and ``verification_ok`` whether
    the latest verification succeeded (``None``: never verified).
    """

    id: uuid.UUID
    user_id: str
    entity_type: str
    entity_id: str
    role: str
    effective_from: datetime
    effective_to: datetime | None
    created_at: datetime
    verified_state: str | None = None
    verified_at: datetime | None = None
    verification_ok: bool | None = None

    def is_valid_at(self, when: datetime) -> bool:
        """Whether ``when`` falls in ``[effective_from, effective_to)``."""
        return self.effective_from <= when and (
            self.effective_to is None or when < self.effective_to
        )


class Fact(_Record):
    """An explicit or implicit structured memory."""

    id: uuid.UUID
    user_id: str
    key: str
    value: Any
    policy: str
    confidence: float
    status: str
    expires_at: datetime | None
    last_used_at: datetime
    source: str
    agent_id: str | None
    created_at: datetime
    updated_at: datetime
    version: int


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


@dataclass(frozen=True)
class VaultRef:
    """Where a PII value lives: its vault id and kind (never the value)."""

    id: uuid.UUID
    kind: str
