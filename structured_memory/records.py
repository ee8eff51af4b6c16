"""Immutable records the structured-track repositories return."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

from structured_memory.database import INFINITY

__all__ = ["BusinessLink", "Device", "Fact", "Profile"]


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

    @classmethod
    def from_row(cls, row: Any) -> BusinessLink:
        """Build from a row whose ``effective_to`` may be ``infinity``."""
        data = dict(row._mapping)
        if data["effective_to"] == INFINITY:
            data["effective_to"] = None
        return cls.model_validate(data)


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
