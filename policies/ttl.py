"""How long a memory lives, decided once for writes and renewals alike.

Pure functions of their arguments and an explicit ``now``: repositories store
the decision (``expires_at`` and, for renewable memories, ``renew_days``) and
apply the renewal in the statement that reads a memory for use.

The rules, by policy first and kind second:

=========================  ====================  =========================
policy                     kind                  lifetime
=========================  ====================  =========================
EXPLICIT, SENSITIVE,       any                   never expires (the user said
BUSINESS                                         it, or a system of record
                                                 keeps it in sync)
IMPLICIT                   interaction_record    90 days from writing, fixed
                                                 retention (not renewed)
IMPLICIT                   session_summary       7 days (30 for a frequent
                                                 user), renewed on use
IMPLICIT                   note, fact            7 days (30 for a frequent
                                                 user), renewed on use
=========================  ====================  =========================

A renewal never shortens a lifetime: a used memory expires at the later of
its current expiry and ``now`` plus its own renewal period.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from policies.lifecycle import LifecyclePolicy

__all__ = [
    "DEFAULT_TTL",
    "FREQUENT_USER_WINDOW",
    "Lifetime",
    "MemoryKind",
    "TTLConfig",
    "is_frequent",
    "lifetime",
    "renewed",
]


class MemoryKind(StrEnum):
    """What a memory is, which with its policy decides how long it lives."""

    FACT = "fact"
    NOTE = "note"
    SESSION_SUMMARY = "session_summary"
    INTERACTION_RECORD = "interaction_record"


class TTLConfig(BaseModel):
    """TTL defaults in days."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    implicit_days: int = Field(default=7, ge=1)
    session_summary_days: int = Field(default=7, ge=1)
    frequent_user_days: int = Field(default=30, ge=1)
    interaction_record_days: int = Field(default=90, ge=1)
    frequent_user_sessions: int = Field(
        default=5, ge=1, description="Sessions in the last 30 days that make a user frequent."
    )


DEFAULT_TTL = TTLConfig()

FREQUENT_USER_WINDOW = timedelta(days=30)
"""How far back sessions are counted to decide whether a user is frequent."""


@dataclass(frozen=True, slots=True)
class Lifetime:
    """A memory's lifetime: ``days`` until it expires (``None``: never), renewed on use or not."""

    days: int | None
    renewable: bool

    def expires_at(self, now: datetime) -> datetime | None:
        """When a memory written at ``now`` expires."""
        return None if self.days is None else now + timedelta(days=self.days)

    @property
    def renew_days(self) -> int | None:
        """The renewal period stored beside the row (``None``: not renewed on use)."""
        return self.days if self.renewable else None


def renewed(expires_at: datetime | None, renew_days: int | None, now: datetime) -> datetime | None:
    """The expiry of a memory used at ``now``: never earlier than it was."""
    if expires_at is None or renew_days is None:
        return expires_at
    return max(expires_at, now + timedelta(days=renew_days))


def lifetime(
    policy: LifecyclePolicy,
    kind: MemoryKind = MemoryKind.NOTE,
    *,
    frequent_user: bool = False,
    config: TTLConfig = DEFAULT_TTL,
) -> Lifetime:
    """The lifetime of a memory of ``policy`` and ``kind``; see the module table."""
    if policy is not LifecyclePolicy.IMPLICIT:
        return Lifetime(None, renewable=False)
    if kind is MemoryKind.INTERACTION_RECORD:
        return Lifetime(config.interaction_record_days, renewable=False)
    if frequent_user:
        return Lifetime(config.frequent_user_days, renewable=True)
    if kind is MemoryKind.SESSION_SUMMARY:
        return Lifetime(config.session_summary_days, renewable=True)
    return Lifetime(config.implicit_days, renewable=True)


def is_frequent(sessions_in_window: int, config: TTLConfig = DEFAULT_TTL) -> bool:
    """Whether a user with this many sessions in the last 30 days is frequent."""
    return sessions_in_window >= config.frequent_user_sessions
