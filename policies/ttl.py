"""Time-to-live rules per lifecycle policy and memory kind.

Pure functions of their arguments and an explicit ``now``: repositories store
the ``expires_at`` these return and refresh it in the same statement as a read.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from policies.lifecycle import LifecyclePolicy

__all__ = ["DEFAULT_TTL", "MemoryKind", "TTLConfig", "expires_at"]


class MemoryKind(StrEnum):
    """What a memory is, which with its policy decides how long it lives."""

    FACT = "fact"
    NOTE = "note"
    SESSION_SUMMARY = "session_summary"
    INTERACTION_RECORD = "interaction_record"


class TTLConfig(BaseModel):
    """TTL defaults in days; ``None`` would mean never."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    implicit_days: int = Field(default=7, ge=1)
    session_summary_days: int = Field(default=7, ge=1)
    frequent_user_days: int = Field(default=30, ge=1)
    interaction_record_days: int = Field(default=90, ge=1)
    frequent_user_sessions: int = Field(
        default=5, ge=1, description="Sessions in the last 30 days that make a user frequent."
    )


DEFAULT_TTL = TTLConfig()


def expires_at(
    policy: LifecyclePolicy,
    now: datetime,
    *,
    kind: MemoryKind = MemoryKind.NOTE,
    frequent_user: bool = False,
    config: TTLConfig = DEFAULT_TTL,
) -> datetime | None:
    """When a memory written (or used) at ``now`` expires; ``None`` for never.

    - interaction records: ``interaction_record_days`` (90), whatever the policy;
    - EXPLICIT, SENSITIVE and BUSINESS memories otherwise never expire
      (business ones are kept in sync with their system of record instead);
    - IMPLICIT memories and session summaries: ``implicit_days`` /
      ``session_summary_days`` (7), or ``frequent_user_days`` (30) for a
      frequent user.
    """
    if kind is MemoryKind.INTERACTION_RECORD:
        return now + timedelta(days=config.interaction_record_days)
    if kind is MemoryKind.SESSION_SUMMARY:
        days = config.frequent_user_days if frequent_user else config.session_summary_days
        return now + timedelta(days=days)
    if policy is LifecyclePolicy.IMPLICIT:
        days = config.frequent_user_days if frequent_user else config.implicit_days
        return now + timedelta(days=days)
    return None
